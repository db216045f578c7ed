"""Bootstrapped medians of node values for whole corpora, from fine histograms instead of sorted resamples.

Node values lie in [0, 1]. Each value falls in one of :data:`N_BINS` bins of width :data:`RESOLUTION`
(1e-4; bin ``j`` holds values rounding to ``j * 1e-4``), so the median of any multiset of node values is
read off its histogram's cumulative counts, and is the exact median's bin: **error bound 0.5e-4** (half a bin)
for every median this module returns, bootstrap medians and intervals included. Two bootstraps:

* ``"snippet"`` (cluster bootstrap, the default): the units resampled are snippets, since nodes of one
  snippet are not independent (they share the snippet's difficulty, and a parent's value is built from its
  children's tokens). A resample gives each snippet a weight, how often it is drawn; every category's median
  comes from the same resample (one weight matrix per run, shared by the categories), so the categories of one
  Table I agree. The weighted histograms near each median of ``B`` resamples are one sparse (bin x snippet)
  matrix product, the counts below and in total one dense product, in float32 (exact: see
  :func:`_cluster_draws`).

  **Weights.** Below :data:`POISSON_FROM` (10,000) snippets, the classical bootstrap: ``n`` snippets drawn
  with replacement, multinomial weights summing to ``n``. From 10,000 snippets on, the **Poisson bootstrap**
  (Hanley & MacGibbon 2006; Chamandy et al. 2012, for large data): every snippet's weight an independent
  Poisson(1) count, read from 16 random bits (each P(k) rounded to a multiple of 2^-16, at most 8e-6 off;
  weights 0..8). Multinomial weights are independent Poisson(1) weights conditioned on summing to ``n``. A
  median's target is half of each resample's own total, so the total's randomness (relative sd 1/sqrt(n)) does
  not shift it; what remains is the dependence the conditioning adds, of order 1/n (each multinomial weight is
  Binomial(n, 1/n), within 1/n of Poisson(1) in total variation, Le Cam). From 10,000 snippets that is far
  below the Monte Carlo error of 500 resamples (several percent of an interval's width); tests hold the two
  methods' intervals within 15% of the width on a clustered corpus of 20,000 snippets (their Monte Carlo error
  alone is about 5%). The gain: 16 random bits and a table look-up per (snippet, resample) instead of a random
  index and a scattered count, which were most of a 100,000-snippet bootstrap's time; and independent weights
  would let the parts of a run be resampled apart (on a cluster). Below 10,000 snippets exact multinomial draws
  cost little, and keep every resample at ``n`` snippets where a Poisson resample of a few snippets could be
  empty.
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

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from asc.errors import InputError

__all__ = ["MAX_N_BOOT", "METHODS", "N_BINS", "POISSON_FROM", "RESOLUTION", "WEIGHT_KINDS", "BootstrapResult", "bin_of",
           "cluster_bootstrap", "histograms", "node_bootstrap", "snippet_weights", "weight_kind"]

RESOLUTION = 1e-4
N_BINS = 10_001
METHODS = ("snippet", "node")
WEIGHT_KINDS = ("auto", "multinomial", "poisson")
# resamples a command takes at most: the draws hold n_boot x categories medians (8 MB at 100,000 x 10) and a 95%
# interval's ends move by less than its resolution (1e-4) past a few thousand; the paper's 500 is the default
MAX_N_BOOT = 100_000
POISSON_FROM = 10_000  # snippets from which the snippet bootstrap draws Poisson weights (module docstring)
_BLOCK_CELLS = 4_000_000  # resamples per block x snippets: bounds the weight matrix (16 MB of float32)
_EXACT_F32 = 2**24  # float32 holds every integer below it
_WINDOW = 4.0  # half-width of the first window, in cumulative share times sqrt(snippets)


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


def _poisson_table() -> np.ndarray:
    """uint8 (65536,): Poisson(1) by inversion of a 16-bit uniform, each P(k) rounded to a multiple of 2^-16."""
    p = np.array([math.exp(-1) / math.factorial(k) for k in range(12)])
    counts = np.rint(p * 65536).astype(np.int64)
    counts[0] += 65536 - counts.sum()  # the rounding leaves the total at 65536 already; keep it so regardless
    return np.repeat(np.arange(len(counts), dtype=np.uint8), counts)


_POISSON = _poisson_table()


def weight_kind(n_snippets: int, kind: str = "auto") -> str:
    """The weights a cluster bootstrap of ``n_snippets`` snippets draws: ``kind``, or for ``"auto"`` multinomial
    below :data:`POISSON_FROM` snippets and Poisson from there on (see the module docstring)."""
    if kind not in WEIGHT_KINDS:
        raise InputError(f"weights={kind!r}; choose one of {', '.join(WEIGHT_KINDS)}")
    if kind == "auto":
        return "poisson" if n_snippets >= POISSON_FROM else "multinomial"
    return kind


def snippet_weights(n_snippets: int, n_boot: int, seed: int = 0, block: int | None = None, kind: str = "auto",
                    dtype: type = np.float64) -> Iterator[np.ndarray]:
    """Yield blocks of cluster-bootstrap weights: (n_snippets, b) arrays of ``dtype``, column r = how often each
    snippet is drawn in resample r, at most ``block`` columns at a time. ``kind`` (:func:`weight_kind`):
    ``"multinomial"``, ``n_snippets`` draws with replacement; ``"poisson"``, an independent Poisson(1) count per
    snippet. The resamples of one seed are the same whatever the block size (drawn one resample at a time), so
    exact and histogram computations can share them (tests do)."""
    kind = weight_kind(n_snippets, kind)
    rng = np.random.default_rng(seed)
    per_block = max(1, min(n_boot, block or n_boot, _BLOCK_CELLS // max(n_snippets, 1)))
    done = 0
    while done < n_boot:
        b = min(per_block, n_boot - done)
        if kind == "poisson":  # (b, n) uniforms, one resample per call, looked up, then snippet-major
            u = np.stack([rng.integers(0, 65536, size=n_snippets, dtype=np.uint16) for _ in range(b)])
            yield np.ascontiguousarray(_POISSON[u].T).astype(dtype)
        else:
            idx = rng.integers(0, n_snippets, size=(b, n_snippets))  # the same stream as b draws of n_snippets
            flat = idx * b + np.arange(b)[:, None]  # snippet-major: the counts come out as (n_snippets, b) directly
            yield np.bincount(flat.ravel(), minlength=n_snippets * b).reshape(n_snippets, b).astype(dtype)
        done += b


def cluster_bootstrap(snippet: np.ndarray, bins: np.ndarray, groups: np.ndarray, n_groups: int, n_snippets: int,
                      n_boot: int = 500, seed: int = 0, ci: float = 0.95, total: bool = True,
                      weights: str = "auto") -> BootstrapResult:
    """Snippet-level bootstrap of the median per group. ``snippet``/``bins``/``groups``: int arrays (n,) per node
    (snippet position in 0..n_snippets-1, value bin, group in 0..n_groups-1). With ``total`` a last group
    pools every node (Table I's Global). Returns n_groups (+1) columns. ``weights``: see :func:`weight_kind`.

    Only the bins near each group's median are resolved: the nodes whose bin lies inside a window (cumulative
    share 0.5 +- ``delta``) form a sparse (bin, snippet) matrix; per snippet, the nodes below the window and
    all nodes are dense columns (one BLAS product). A resample whose median falls outside its window would
    be wrong, so then that ``delta`` doubles and the resamples are drawn again (same seed): the result is
    exact in every case."""
    _check(n_boot, ci)
    n_snippets = max(n_snippets, 1)
    kind = weight_kind(n_snippets, weights)
    nodes = _Nodes(np.asarray(snippet), np.asarray(bins, dtype=np.int32), np.asarray(groups), n_groups, total)
    k = n_groups + (1 if total else 0)
    hist = histograms(nodes.bins, nodes.groups, n_groups)
    per_snippet = np.zeros((n_snippets, k))
    per_snippet[:, :n_groups] = np.bincount(nodes.key, minlength=n_snippets * n_groups).reshape(n_snippets, n_groups)
    if total:
        hist = np.vstack([hist, hist.sum(axis=0, keepdims=True)])
        per_snippet[:, -1] = per_snippet[:, :-1].sum(axis=1)
    # the resample medians' cumulative shares stay within about 2/sqrt(snippets) of 0.5 on clustered data
    delta = np.minimum(0.5, _WINDOW / np.sqrt(np.maximum((per_snippet > 0).sum(axis=0), 1)))
    while True:
        draws, outside = _cluster_draws(nodes, hist, per_snippet, delta, n_boot, seed, kind)
        if not outside.any():
            return _summarize(draws, ci)
        delta = np.where(outside, np.minimum(0.5, delta * 2), delta)


@dataclass(frozen=True)
class _Nodes:
    """The nodes of a cluster bootstrap (see :func:`cluster_bootstrap`); ``total``: a last group pools them all."""

    snippet: np.ndarray
    bins: np.ndarray
    groups: np.ndarray
    n_groups: int
    total: bool

    @property
    def key(self) -> np.ndarray:
        """(snippet, group) of each node as one int64: ``snippet * n_groups + group``."""
        return self.snippet.astype(np.int64) * self.n_groups + self.groups


def _window(nodes: _Nodes, lo: np.ndarray, hi: np.ndarray, n_snippets: int) -> tuple[Any, np.ndarray, np.ndarray]:
    """The window matrix (sparse (bins inside the windows, snippets): node counts; group g's rows start at
    ``start[g]``), the counts below each window per (snippet, group), and ``start``."""
    import scipy.sparse as sp

    width = (hi - lo + 1).astype(np.int32)
    start = np.concatenate([[0], np.cumsum(width)[:-1]]).astype(np.int32)
    lo = lo.astype(np.int32)
    n = nodes.n_groups
    below = np.zeros((n_snippets, len(lo)))
    pos = nodes.bins - lo[nodes.groups]  # the node's bin within its group's window (negative: below it)
    under = pos < 0
    below[:, :n] = np.bincount(nodes.key[under], minlength=n_snippets * n).reshape(n_snippets, n)
    inside = ~under & (pos < width[nodes.groups])
    rows, cols = [start[nodes.groups[inside]] + pos[inside]], [nodes.snippet[inside]]
    if nodes.total:  # every node again, in the last group
        pos = nodes.bins - lo[-1]
        under = pos < 0
        below[:, -1] = np.bincount(nodes.snippet[under], minlength=n_snippets)
        inside = ~under & (pos < width[-1])
        rows.append(start[-1] + pos[inside])
        cols.append(nodes.snippet[inside])
    row, col = np.concatenate(rows), np.concatenate(cols)
    window = sp.csr_matrix((np.ones(len(row), dtype=np.float32), (row, col)), shape=(int(width.sum()), n_snippets))
    return window, below, start


def _cluster_draws(nodes: _Nodes, hist: np.ndarray, per_snippet: np.ndarray, delta: np.ndarray, n_boot: int,
                   seed: int, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Median bins (n_boot, k) of the resamples with windows 0.5 +- delta, and which groups' medians fell
    outside their window.

    Sums are taken in float32 (exact for integers below 2^24) and the block is redone in float64 when the
    weighted node counts of a resample, all groups together, reach 2^24 (a corpus of millions of nodes)."""
    n_snippets, k = per_snippet.shape
    share = np.cumsum(hist, axis=1) / np.maximum(hist.sum(axis=1), 1)[:, None]
    full = delta >= 0.5
    lo = np.where(full, 0, np.argmax(share >= (0.5 - delta)[:, None], axis=1))
    hi = np.where(full, N_BINS - 1, np.argmax(share >= (0.5 + delta)[:, None], axis=1))
    width = hi - lo + 1
    window, below, start = _window(nodes, lo, hi, n_snippets)
    row_group = np.repeat(np.arange(k), width)
    dense = np.hstack([below, per_snippet])
    dense32 = dense.astype(np.float32)
    per_block = max(1, _BLOCK_CELLS // int(width.sum()))
    parts, outside = [], np.zeros(k, dtype=bool)
    for weights in snippet_weights(n_snippets, n_boot, seed, per_block, kind, np.float32):
        inside_w, sums = window @ weights, weights.T @ dense32  # (window bins, b), (b, 2k)
        if sums[:, k:].sum(axis=1).max() >= _EXACT_F32:  # float32 no longer exact: the same block in float64
            inside_w, sums = window.astype(np.float64) @ weights.astype(np.float64), weights.T.astype(np.float64) @ dense
        below_w, total_w = sums[:, :k].T, sums[:, k:].T  # (k, b) each
        target = np.ceil(total_w / 2)
        cum = np.cumsum(inside_w, axis=0)  # running over every window; a group's own runs from start[g]
        before = np.vstack([np.zeros((1, cum.shape[1]), cum.dtype), cum])[start]  # (k, b)
        need = target - below_w + before  # the running sum at which the group reaches its target
        short = np.add.reduceat(cum < need[row_group], start, axis=0, dtype=np.int64)  # (k, b): bins before the median
        has = total_w > 0
        outside |= (has & ((below_w >= target) | (short >= width[:, None]))).any(axis=1)
        parts.append(np.where(has, lo[:, None] + short, -1).T)
    return np.concatenate(parts).astype(np.int64), outside
