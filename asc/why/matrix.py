"""The corpus attribution matrix: per target category, the mean share of attribution on each source category and
on each AST distance, with snippet-bootstrap intervals, from a run's ``attribution/`` table
(:mod:`asc.why.corpus_run`).

**Share.** For one target, a source category's share is the absolute attribution on the prompt tokens bound to its
nodes over the absolute attribution of the whole prompt (:mod:`asc.why.corpus`); a category with no token in the
prompt holds none of it (0). Categories overlap where nodes nest (an identifier inside a return statement counts for
Natural Language and for Scope), so a row's shares need not add up to 1. A cell is the **mean over the target nodes
of the row's category** (every sampled target weighs the same). Distance shares are the same over the bins of
:data:`DISTANCE_BINS` (tree path length, :mod:`asc.why.corpus`), and do add up to 1 per target.

**Intervals.** Targets of one snippet share its text, so whole snippets are resampled (the cluster bootstrap of
Table I: :func:`asc.corpus.bootstrap.snippet_weights`, the same resamples for a given seed): in each resample a
cell is ``sum of weighted share sums / sum of weighted target counts``; the interval is the percentile interval of
the resamples where the row has a target. What the per-snippet sample size ``k`` does: a cell's variance is the
between-snippet variance of the snippet means plus the within-snippet (between-target) variance divided by the
targets a snippet gives the row; stratified sampling gives a category ``min(its nodes, about k / categories
present)`` targets per snippet, so a larger ``k`` narrows the intervals of common target categories only until the
between-snippet part dominates, and of rare categories hardly at all (they had all their nodes drawn already): more
snippets, not a larger ``k``, is what narrows those. ``n_targets`` and ``n_snippets`` per row say how much each row
rests on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from asc.concepts import GLOBAL, load_categories
from asc.corpus.bootstrap import snippet_weights
from asc.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DISTANCE_BINS", "AttributionMatrix", "attribution_matrix", "distance_bin", "run_matrix"]

#: tree path lengths grouped for display: (first, last) inclusive, None = no upper end
DISTANCE_BINS: tuple[tuple[int, int | None], ...] = ((0, 2), (3, 4), (5, 6), (7, 8), (9, 12), (13, None))


def _bin_label(lo: int, hi: int | None) -> str:
    return f"{lo}+" if hi is None else (f"{lo}" if lo == hi else f"{lo}-{hi}")


def distance_bin(distance: np.ndarray) -> np.ndarray:
    """int64: the bin of :data:`DISTANCE_BINS` of each distance."""
    edges = np.array([lo for lo, _ in DISTANCE_BINS[1:]])
    return np.searchsorted(edges, np.asarray(distance, dtype=np.int64), side="right").astype(np.int64)


@dataclass(frozen=True)
class AttributionMatrix:
    """Target category x source category mean shares and shares by AST distance (module doc).

    ``share``, ``ci_low``, ``ci_high``, ``signed`` (mean signed attribution): (R, C) over ``targets`` (rows, the
    target categories with a target) and ``sources`` (columns, the mapping's categories); ``n_targets`` and
    ``n_snippets`` (R,); ``n_snippets_all``: the snippets with a target. ``distance*``: (R + 1, B) over
    :data:`GLOBAL` (every target) then ``targets``, and ``distance_bins`` (B,) labels."""

    model: str
    k: int
    targets: tuple[str, ...]
    sources: tuple[str, ...]
    share: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    signed: np.ndarray
    n_targets: np.ndarray
    n_snippets: np.ndarray
    n_snippets_all: int
    distance_bins: tuple[str, ...]
    distance: np.ndarray
    distance_low: np.ndarray
    distance_high: np.ndarray
    n_boot: int
    seed: int
    ci: float

    def frame(self) -> pd.DataFrame:
        """The matrix as a long table: ``model, target_category, source_category, share, ci_low, ci_high, signed,
        n_targets, n_snippets`` (the CSV/JSON export)."""
        import pandas as pd

        rows = [{"model": self.model, "target_category": t, "source_category": s, "share": self.share[i, j],
                 "ci_low": self.ci_low[i, j], "ci_high": self.ci_high[i, j], "signed": self.signed[i, j],
                 "n_targets": int(self.n_targets[i]), "n_snippets": int(self.n_snippets[i])}
                for i, t in enumerate(self.targets) for j, s in enumerate(self.sources)]
        return pd.DataFrame(rows)

    def distance_frame(self) -> pd.DataFrame:
        """Shares by distance as a long table: ``model, target_category, distance, share, ci_low, ci_high,
        n_targets, n_snippets`` (:data:`GLOBAL` first: every target)."""
        import pandas as pd

        names = (GLOBAL, *self.targets)
        n_t = [int(self.n_targets.sum()), *self.n_targets.tolist()]
        n_s = [self.n_snippets_all, *self.n_snippets.tolist()]
        return pd.DataFrame([{"model": self.model, "target_category": t, "distance": b, "share": self.distance[i, j],
                              "ci_low": self.distance_low[i, j], "ci_high": self.distance_high[i, j],
                              "n_targets": n_t[i], "n_snippets": n_s[i]}
                             for i, t in enumerate(names) for j, b in enumerate(self.distance_bins)])


def _bootstrap(sums: np.ndarray, counts: np.ndarray, n_boot: int, seed: int,
               ci: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of ``sum_s w_s sums[s, r, c] / sum_s w_s counts[s, r]`` over snippet resamples.
    sums (S, R, C), counts (S, R)."""
    n, r, c = sums.shape
    draws = []
    for weights in snippet_weights(n, n_boot, seed):
        with np.errstate(invalid="ignore", divide="ignore"):
            draws.append(np.einsum("sb,src->brc", weights, sums) / (weights.T @ counts)[:, :, None])
    boot = np.concatenate(draws) if draws else np.full((0, r, c), math.nan)
    alpha = (1 - ci) / 2
    lo, hi = np.full((r, c), math.nan), np.full((r, c), math.nan)
    for i in range(r):
        rows = boot[:, i, :][~np.isnan(boot[:, i, 0])]
        if len(rows):
            lo[i], hi[i] = np.quantile(rows, [alpha, 1 - alpha], axis=0)
    return lo, hi


def attribution_matrix(rows: Any, categories: tuple[str, ...] | list[str], *, model: str = "", k: int = 0,
                       n_boot: int = 500, seed: int = 0, ci: float = 0.95) -> AttributionMatrix:
    """The matrix (module doc) of ``attribution/`` rows (:func:`asc.why.corpus_run.load_attribution`) over the
    source ``categories`` (the run's mapping, in its order). Rows of target categories outside it are left out."""
    import pandas as pd

    if n_boot < 1 or not 0 < ci < 1:
        raise InputError(f"n_boot={n_boot}, ci={ci}: give at least 1 resample and a coverage between 0 and 1")
    sources = tuple(categories)
    rows = rows[rows["target_category"].isin(sources)]
    targets = tuple(c for c in sources if c in set(rows["target_category"]))
    snippets = pd.Index(rows["snippet_id"].astype(str).unique())
    first = rows.drop_duplicates(["snippet_id", "target"])
    t_row = pd.Index(targets).get_indexer(first["target_category"])
    s_of = snippets.get_indexer(first["snippet_id"].astype(str))
    counts = np.zeros((len(snippets), len(targets)))
    np.add.at(counts, (s_of, t_row), 1.0)

    def sums(part: pd.DataFrame, width: int, col_of: np.ndarray, value: str) -> np.ndarray:
        out = np.zeros((len(snippets), len(targets), width))
        np.add.at(out, (snippets.get_indexer(part["snippet_id"].astype(str)),
                        pd.Index(targets).get_indexer(part["target_category"]), col_of),
                  np.nan_to_num(part[value].to_numpy(np.float64)))
        return out

    cats = rows[rows["kind"] == "category"]
    col = pd.Index(sources).get_indexer(cats["source"])
    share_sums, signed_sums = sums(cats, len(sources), col, "share"), sums(cats, len(sources), col, "attribution")
    dist = rows[rows["kind"] == "distance"]
    labels = tuple(_bin_label(lo, hi) for lo, hi in DISTANCE_BINS)
    dist_sums = sums(dist, len(labels), distance_bin(dist["source"].astype(int).to_numpy()), "share")
    dist_sums = np.concatenate([dist_sums.sum(axis=1, keepdims=True), dist_sums], axis=1)  # Global first
    dist_counts = np.concatenate([counts.sum(axis=1, keepdims=True), counts], axis=1)
    n_t = counts.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = share_sums.sum(axis=0) / n_t[:, None]
        signed = signed_sums.sum(axis=0) / n_t[:, None]
        distance = dist_sums.sum(axis=0) / dist_counts.sum(axis=0)[:, None]
    lo, hi = _bootstrap(share_sums, counts, n_boot, seed, ci)
    d_lo, d_hi = _bootstrap(dist_sums, dist_counts, n_boot, seed, ci)
    return AttributionMatrix(model=model, k=int(k), targets=targets, sources=sources, share=share, ci_low=lo,
                             ci_high=hi, signed=signed, n_targets=n_t.astype(np.int64),
                             n_snippets=(counts > 0).sum(axis=0).astype(np.int64),
                             n_snippets_all=len(snippets), distance_bins=labels,
                             distance=distance, distance_low=d_lo, distance_high=d_hi, n_boot=int(n_boot),
                             seed=int(seed), ci=float(ci))


def run_matrix(path: str | Path, *, n_boot: int = 500, seed: int = 0, ci: float = 0.95,
               label: str | None = None) -> AttributionMatrix:
    """:func:`attribution_matrix` of a run folder's ``attribution/`` table over its language's categories, labelled
    ``label`` (default: the run's model); a CorpusError naming the fix when it has none."""

    from asc.corpus.folder import read_run_meta, run_language
    from asc.why.corpus_run import load_attribution

    path = Path(path)
    rows, settings = load_attribution(path)
    categories = load_categories(run_language(path)).categories
    model = label or read_run_meta(path).model_name
    return attribution_matrix(rows, categories, model=model, k=int(settings.get("k", 0)), n_boot=n_boot, seed=seed,
                              ci=ci)
