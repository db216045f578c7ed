"""Bootstrapped medians of node values for whole corpora, from fine histograms instead of sorted resamples.

Node values lie in [0, 1]. Each value falls in one of :data:`N_BINS` bins of width :data:`RESOLUTION`
(1e-4; bin ``j`` holds values rounding to ``j * 1e-4``), so the median of any multiset of node values is
read off its histogram's cumulative counts, and is the exact median's bin: **error bound 0.5e-4** (half a bin)
for every median this module returns, bootstrap medians and intervals included. Two bootstraps:

* ``"snippet"`` (cluster bootstrap, the default): the units resampled are snippets, since nodes of one
  snippet are not independent (they share the snippet's difficulty, and a parent's value is built from its
  children's tokens). A resample draws ``n_snippets`` snippets with replacement (a multinomial weight per
  snippet); every category's median comes from the same resample, so the categories of one Table I agree.
  The weighted histograms of ``B`` resamples are one sparse (snippet x bin) matrix product.
* ``"node"`` (the paper's Table I): each category's nodes are resampled independently. The median of ``N``
  values drawn with replacement from a histogram with cumulative share ``F_j`` is at most bin ``j`` exactly
  when at least ``m = ceil(N/2)`` draws fall at or below it: ``P = P(Binomial(N, F_j) >= m)``. That is the
  exact distribution of the bootstrap median (Maritz & Jarrett 1978); drawing ``n_boot`` medians from it
  by inversion is resampling ``n_boot`` times, in distribution, at O(bins) cost instead of O(N * n_boot).

Departures from :func:`asc.concepts.bootstrap_median` (the per-snippet bootstrap, kept for small data): the
median of a resample is its *lower* median (order statistic ``ceil(N/2)``), not the mean of the two middle
values for even ``N``; for the thousands of nodes behind a corpus category the two differ by less than the
bin width. As there, ``median`` is the median of the bootstrap medians and the interval is the percentile
interval; results are seeded and do not depend on how the run is split into parts.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from asc.errors import InputError

__all__ = ["METHODS", "N_BINS", "RESOLUTION", "BootstrapResult", "bin_of", "cluster_bootstrap", "histograms",
           "node_bootstrap", "snippet_weights"]

RESOLUTION = 1e-4
N_BINS = 10_001
METHODS = ("snippet", "node")
_BLOCK_CELLS = 4_000_000  # resamples per block x snippets: bounds the weight matrix (32 MB of float64)


@dataclass(frozen=True)
class BootstrapResult:
    """Per group (``G`` groups, e.g. categories then Global): float64 arrays of shape (G,) — ``median`` (median
    of the bootstrap medians), ``ci_low``/``ci_high`` (percentile interval), ``boot_std``; NaN for a group
    without nodes. ``draws``: (n_boot, G) bootstrap medians, the values the rest summarizes."""

    median: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    boot_std: np.ndarray
    draws: np.ndarray


def bin_of(values: np.ndarray) -> np.ndarray:
    """The bin (int32) of each value: ``round(v / 1e-4)``, values clipped to [0, 1]."""
    return np.clip(np.rint(np.asarray(values, dtype=np.float64) / RESOLUTION), 0, N_BINS - 1).astype(np.int32)


def histograms(bins: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """Counts per (group, bin): int64 (n_groups, N_BINS)."""
    flat = groups.astype(np.int64) * N_BINS + bins
    return np.bincount(flat, minlength=n_groups * N_BINS).reshape(n_groups, N_BINS)


def _summarize(draws: np.ndarray, ci: float) -> BootstrapResult:
    """draws: (n_boot, G) bin indices (-1: the resample has no node of the group, which a snippet resample of
    a rare category can have; such resamples are left out of that group's summary)."""
    values = np.where(draws >= 0, draws * RESOLUTION, np.nan)
    alpha = (1 - ci) / 2
    empty = np.asarray(np.isnan(values).all(axis=0))
    safe = np.where(empty[None, :], 0.0, values)
    med = np.nanmedian(safe, axis=0)
    lo, hi = np.nanquantile(safe, [alpha, 1 - alpha], axis=0)
    std = np.nanstd(safe, axis=0)
    nan = np.where(empty, np.nan, 0.0)
    return BootstrapResult(median=med + nan, ci_low=lo + nan, ci_high=hi + nan, boot_std=std + nan, draws=values)


def _check(n_boot: int, ci: float) -> None:
    if n_boot < 1:
        raise InputError(f"n_boot={n_boot}: give at least 1 bootstrap resample (500 is the paper's)")
    if not 0 < ci < 1:
        raise InputError(f"ci={ci}: give the interval's coverage as a fraction between 0 and 1, e.g. 0.95")


def node_bootstrap(hist: np.ndarray, n_boot: int = 500, seed: int = 0, ci: float = 0.95) -> BootstrapResult:
    """The paper's node-level bootstrap of each row of ``hist`` ((G, N_BINS) counts), drawn from the exact
    bootstrap distribution of the lower median (see the module docstring). Group ``g`` uses the random stream
    ``(seed, g)``: adding a group does not change the others."""
    from scipy.stats import binom

    _check(n_boot, ci)
    hist = np.atleast_2d(hist)
    draws = np.full((n_boot, len(hist)), -1, dtype=np.int64)
    for g, counts in enumerate(hist):
        n = int(counts.sum())
        if n == 0:
            continue
        share = np.minimum(np.cumsum(counts) / n, 1.0)
        share[-1] = 1.0
        cdf = binom.sf(-(-n // 2) - 1, n, share)  # P(at least ceil(n/2) draws at or below bin j)
        cdf = np.maximum.accumulate(cdf)
        cdf[-1] = 1.0
        u = np.random.default_rng([seed, g]).random(n_boot)
        draws[:, g] = np.minimum(np.searchsorted(cdf, u, side="left"), N_BINS - 1)
    return _summarize(draws, ci)


def snippet_weights(n_snippets: int, n_boot: int, seed: int = 0, block: int | None = None) -> Iterator[np.ndarray]:
    """Yield blocks of cluster-bootstrap weights: float64 (n_snippets, b) arrays, column r = how often each
    snippet is drawn in resample r (a multinomial with ``n_snippets`` draws), at most ``block`` columns at a
    time. The resamples of one seed are the same whatever the block size (drawn one resample at a time), so
    exact and histogram computations can share them (tests do)."""
    rng = np.random.default_rng(seed)
    per_block = max(1, min(n_boot, block or n_boot, _BLOCK_CELLS // max(n_snippets, 1)))
    done = 0
    while done < n_boot:
        b = min(per_block, n_boot - done)
        idx = rng.integers(0, n_snippets, size=(b, n_snippets))  # the same stream as b draws of n_snippets
        flat = idx * b + np.arange(b)[:, None]  # snippet-major: the counts come out as (n_snippets, b) directly
        yield np.bincount(flat.ravel(), minlength=n_snippets * b).reshape(n_snippets, b).astype(np.float64)
        done += b


def cluster_bootstrap(snippet: np.ndarray, bins: np.ndarray, groups: np.ndarray, n_groups: int, n_snippets: int,
                      n_boot: int = 500, seed: int = 0, ci: float = 0.95, total: bool = True) -> BootstrapResult:
    """Snippet-level bootstrap of the median per group. ``snippet``/``bins``/``groups``: int arrays (n,) per node
    (snippet position in 0..n_snippets-1, value bin, group in 0..n_groups-1). With ``total`` a last group
    pools every node (Table I's Global). Returns n_groups (+1) columns.

    Only the bins near each group's median are resolved: the nodes whose bin lies inside a window (cumulative
    share 0.5 +- ``delta``) form a sparse (bin, snippet) matrix; per snippet, the nodes below the window and
    all nodes are two dense columns (a BLAS product). A resample whose median falls outside its window would
    be wrong, so then that ``delta`` doubles and the resamples are drawn again (same seed): the result is
    exact in every case."""
    _check(n_boot, ci)
    snippet = snippet.astype(np.int64)
    groups = groups.astype(np.int64)
    n_snippets = max(n_snippets, 1)
    k = n_groups + (1 if total else 0)
    hist = histograms(bins, groups, n_groups)
    per_snippet = np.bincount(snippet * k + groups, minlength=n_snippets * k).reshape(n_snippets, k).astype(float)
    if total:
        hist = np.vstack([hist, hist.sum(axis=0, keepdims=True)])
        per_snippet[:, -1] = per_snippet[:, :-1].sum(axis=1)
    delta = np.minimum(0.5, 8 / np.sqrt(np.maximum((per_snippet > 0).sum(axis=0), 1)))
    while True:
        draws, outside = _cluster_draws(snippet, bins, groups, hist, per_snippet, delta, n_boot, seed, total)
        if not outside.any():
            return _summarize(draws, ci)
        delta = np.where(outside, np.minimum(0.5, delta * 2), delta)


def _cluster_draws(snippet: np.ndarray, bins: np.ndarray, groups: np.ndarray, hist: np.ndarray,
                   per_snippet: np.ndarray, delta: np.ndarray, n_boot: int, seed: int,
                   total: bool) -> tuple[np.ndarray, np.ndarray]:
    """Median bins (n_boot, k) of the resamples with windows 0.5 +- delta, and which groups' medians fell
    outside their window."""
    import scipy.sparse as sp

    n_snippets, k = per_snippet.shape
    share = np.cumsum(hist, axis=1) / np.maximum(hist.sum(axis=1), 1)[:, None]
    full = delta >= 0.5
    lo = np.where(full, 0, np.argmax(share >= (0.5 - delta)[:, None], axis=1))
    hi = np.where(full, N_BINS - 1, np.argmax(share >= (0.5 + delta)[:, None], axis=1))
    width = hi - lo + 1
    start = np.concatenate([[0], np.cumsum(width)[:-1]])
    below = np.zeros((n_snippets, k))
    rows, cols = [], []
    for g in range(k):  # the last group (total) takes every node
        sel = slice(None) if total and g == k - 1 else groups == g
        s, b = snippet[sel], bins[sel]
        below[:, g] = np.bincount(s[b < lo[g]], minlength=n_snippets)
        inside = (b >= lo[g]) & (b <= hi[g])
        rows.append(start[g] + b[inside] - lo[g])
        cols.append(s[inside])
    row, col = np.concatenate(rows), np.concatenate(cols)
    window = sp.csr_matrix((np.ones(len(row)), (row, col)), shape=(int(width.sum()), n_snippets))
    per_block = max(1, _BLOCK_CELLS // int(width.sum()))
    parts, outside = [], np.zeros(k, dtype=bool)
    for weights in snippet_weights(n_snippets, n_boot, seed, per_block):
        inside_w = np.asarray(window @ weights)  # (window bins, b)
        below_w, total_w = weights.T @ below, weights.T @ per_snippet  # (b, k) each
        target = np.ceil(total_w / 2)
        block = np.full((weights.shape[1], k), -1, dtype=np.int64)
        for g in range(k):
            cum = below_w[:, g] + np.cumsum(inside_w[start[g] : start[g] + width[g]], axis=0)  # (width, b)
            reached = cum >= np.maximum(target[:, g], 1e-300)
            found = reached.any(axis=0)
            has = total_w[:, g] > 0
            outside[g] |= bool((has & ((below_w[:, g] >= target[:, g]) | ~found)).any())
            block[:, g] = np.where(has, lo[g] + np.argmax(reached, axis=0), -1)
        parts.append(block)
    return np.concatenate(parts), outside
