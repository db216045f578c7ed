"""Corpus-level AsC-Eval per model from run digests (:mod:`asc.corpus.digest`): paper Table I, Fig. 3, Fig. 6.

* :func:`category_table`: per category (and ``Global`` over every categorized node) the bootstrapped median
  of node values, its interval and the node/snippet counts (paper Table I for one run).
  :func:`summary_table` stacks it per run; :func:`wide_table` pivots it to one row per model, sorted by the
  global value.
* :func:`type_table`: the node types behind each category with their counts, so no category hides a
  sparse type.
* :func:`difference_table`: model A minus model B per category and per node type (medians of node
  values; a difference of a model with itself is exactly 0).
* :func:`box_table`: box-plot statistics of node values per model (paper Fig. 6), from histograms.
* :func:`compare`: Table I of several runs (folders, loaded runs or digests) as the *Global AsC-Eval* page shows it,
  in one call (``asc.compare``).

Everything is computed from fine histograms of the node values (:mod:`asc.corpus.bootstrap`): every median
here is within **0.5e-4** of the exact one (the point medians follow ``numpy.median``: the mean of the two
middle values), means and counts are exact. The bootstrap is ``"snippet"`` (resample snippets, the default:
nodes of one snippet are not independent) or ``"node"`` (the paper's Table I); see docs/corpora.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from asc.concepts import GLOBAL, language_of, load_categories
from asc.corpus.bootstrap import METHODS, N_BINS, RESOLUTION, cluster_bootstrap, histograms, node_bootstrap
from asc.corpus.digest import RunDigest
from asc.corpus.runs import RunData, load_digest
from asc.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["box_table", "category_table", "compare", "difference_table", "hist_median", "run_label", "run_labels",
           "summary_categories", "summary_table", "type_table", "wide_table"]

SUMMARY_COLUMNS = ["model", "corpus", "category", "median", "ci_low", "ci_high", "boot_std", "n_nodes", "n_snippets"]


def run_label(run: Any) -> str:
    """A run's name in tables: its model's name (``run``: anything with the run's ``meta``)."""
    return str(run.meta.model_name)


def run_labels(runs: Sequence[Any]) -> list[str]:
    """Unique names: the model's, plus the run folder's name where two runs share model and corpus."""
    keys = [(run_label(r), r.meta.settings.corpus) for r in runs]
    return [f"{k[0]} ({r.path.name})" if keys.count(k) > 1 else k[0] for k, r in zip(keys, runs)]


def summary_categories(runs: Sequence[RunDigest]) -> tuple[str, ...]:
    """The categories a summary of ``runs`` shown together lists: those of their language
    (:func:`asc.concepts.language_of` every run's snippets' languages)."""
    return load_categories(language_of(lang for run in runs for lang in run.languages)).categories


def hist_median(hist: np.ndarray) -> np.ndarray:
    """``numpy.median`` of the values behind each histogram row (bins on the last axis), to 0.5e-4: the mean
    of the bins of the two middle order statistics. NaN for an empty row."""
    hist = np.atleast_2d(hist)
    cum = np.cumsum(hist, axis=1)
    n = cum[:, -1]
    lower = np.argmax(cum >= np.maximum((n + 1) // 2, 1)[:, None], axis=1)
    upper = np.argmax(cum >= (n // 2 + 1)[:, None], axis=1)
    return np.where(n > 0, (lower + upper) / 2 * RESOLUTION, np.nan)


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise InputError(f"bootstrap={method!r}; choose one of {', '.join(METHODS)} ('snippet' resamples snippets, "
                         "'node' resamples nodes as the paper's Table I)")


def category_table(digest: RunDigest, categories: Sequence[str], n_boot: int = 500, seed: int = 0,
                   ci: float = 0.95, method: str = "snippet") -> pd.DataFrame:
    """Paper Table I for one run: per category (and ``Global`` over every categorized node) the bootstrapped
    median of node values, its interval, and how many nodes/snippets it rests on (absent category: NaN, 0)."""
    import pandas as pd

    _check_method(method)
    k = len(digest.categories)
    bins = digest.bins
    if method == "node":
        hist = histograms(bins, digest.category, k)
        boot = node_bootstrap(np.vstack([hist, hist.sum(axis=0, keepdims=True)]), n_boot=n_boot, seed=seed, ci=ci)
    else:
        boot = cluster_bootstrap(digest.snippet, bins, digest.category, k, digest.n_snippets, n_boot=n_boot,
                                 seed=seed, ci=ci)
    nodes = np.append(np.bincount(digest.category, minlength=k), digest.n_nodes)
    snippets = np.append(np.bincount(digest.category, weights=digest.first_category, minlength=k),
                         digest.first_snippet.sum())
    rows = []
    for name in [GLOBAL, *categories]:
        g = k if name == GLOBAL else digest.category_code(name)
        if g < 0:
            rows.append({"category": name, "median": np.nan, "ci_low": np.nan, "ci_high": np.nan, "boot_std": np.nan,
                         "n_nodes": 0, "n_snippets": 0})
            continue
        rows.append({"category": name, "median": float(boot.median[g]), "ci_low": float(boot.ci_low[g]),
                     "ci_high": float(boot.ci_high[g]), "boot_std": float(boot.boot_std[g]),
                     "n_nodes": int(nodes[g]), "n_snippets": int(snippets[g])})
    return pd.DataFrame(rows)


def summary_table(digests: Sequence[RunDigest], categories: Sequence[str], n_boot: int = 500, seed: int = 0,
                  ci: float = 0.95, method: str = "snippet") -> pd.DataFrame:
    """Long Table I: model, corpus, category, median, ci_low, ci_high, boot_std, n_nodes, n_snippets."""
    import pandas as pd

    frames = []
    for digest, label in zip(digests, run_labels(digests)):
        table = category_table(digest, categories, n_boot=n_boot, seed=seed, ci=ci, method=method)
        table.insert(0, "corpus", digest.meta.settings.corpus)
        table.insert(0, "model", label)
        frames.append(table)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=SUMMARY_COLUMNS)


def wide_table(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, corpus), a column per category (median), sorted by the global value."""
    wide = summary.pivot_table(index=["model", "corpus"], columns="category", values="median", sort=False)
    order = [c for c in summary["category"].drop_duplicates()]
    wide = wide.reindex(columns=order).sort_values(GLOBAL, ascending=False)  # keep absent categories (NaN)
    snippets = summary[summary["category"] == GLOBAL].set_index(["model", "corpus"])["n_snippets"]
    wide.insert(0, "snippets", snippets.reindex(wide.index))
    return wide.reset_index()


def compare(runs: Sequence[str | Path | RunData | RunDigest], n_boot: int = 500, seed: int = 0,
            method: str = "snippet", long: bool = False) -> pd.DataFrame:
    """Table I of ``runs`` as the *Global AsC-Eval* page shows it: one row per run (model, corpus, snippets), a
    column per category of their language (``Global`` first), the bootstrapped median of node values, sorted by the
    global value (:func:`wide_table` of :func:`summary_table`). ``long=True``: the long table with the intervals
    and counts instead. A run is a folder (``run_corpus``'s ``out``), a :class:`~asc.corpus.runs.RunData`
    (``load_run``) or a :class:`~asc.corpus.digest.RunDigest` (``load_digest``)."""
    if not runs:
        raise InputError("compare at least one run: give run folders (run_corpus's out) or load_run's results")
    digests = [run if isinstance(run, RunDigest) else load_digest(run.path if isinstance(run, RunData) else run)
               for run in runs]
    summary = summary_table(digests, summary_categories(digests), n_boot=n_boot, seed=seed, method=method)
    return summary if long else wide_table(summary)


def _by_type(digest: RunDigest) -> pd.DataFrame:
    """Per node type present: category, nodes, snippets, median, mean (unsorted)."""
    import pandas as pd

    t = len(digest.types)
    hist = histograms(digest.bins, digest.type, t)
    nodes = hist.sum(axis=1)
    present = np.flatnonzero(nodes)
    cat_of = np.zeros(t, dtype=np.int64)
    cat_of[digest.type] = digest.category  # a node type belongs to one category
    sums = np.bincount(digest.type, weights=digest.value, minlength=t)
    return pd.DataFrame({
        "category": [digest.categories[cat_of[i]] for i in present], "type": [digest.types[i] for i in present],
        "nodes": nodes[present], "median": hist_median(hist[present]), "mean": sums[present] / nodes[present],
        "snippets": np.bincount(digest.type, weights=digest.first_type, minlength=t)[present].astype(np.int64)})


def type_table(digest: RunDigest, label: str | None = None) -> pd.DataFrame:
    """Per category and node type: nodes, median value, mean, snippets, and the share of the category's nodes."""
    table = _by_type(digest)
    table = table[["category", "type", "nodes", "median", "mean", "snippets"]]
    table["share"] = table["nodes"] / table.groupby("category")["nodes"].transform("sum")
    table.insert(0, "model", label or run_label(digest))
    return table.sort_values(["category", "nodes"], ascending=[True, False]).reset_index(drop=True)


def _category_medians(digest: RunDigest) -> pd.DataFrame:
    import pandas as pd

    k = len(digest.categories)
    hist = histograms(digest.bins, digest.category, k)
    hist = np.vstack([hist, hist.sum(axis=0, keepdims=True)])
    present = np.flatnonzero(hist.sum(axis=1))
    names = [*digest.categories, GLOBAL]
    return pd.DataFrame({"category": [names[i] for i in present], "median": hist_median(hist[present]),
                         "nodes": hist.sum(axis=1)[present]}).set_index("category")


def difference_table(run_a: RunDigest, run_b: RunDigest, level: str = "category") -> pd.DataFrame:
    """Median node value of A minus B per ``level`` ("category" or "type"), with both medians and counts."""
    if level not in ("category", "type"):
        raise InputError(f"level={level!r}; choose 'category' or 'type'")

    def medians(run: RunDigest) -> pd.DataFrame:
        if level == "category":
            return _category_medians(run)
        return _by_type(run).set_index(["category", "type"])[["median", "nodes"]]

    a, b = medians(run_a), medians(run_b)
    label_a, label_b = run_labels([run_a, run_b])
    table = a.join(b, how="outer", lsuffix="_a", rsuffix="_b")
    table["difference"] = table["median_a"] - table["median_b"]
    table = table.reset_index().astype({"nodes_a": "Int64", "nodes_b": "Int64"})
    table.insert(0, "model_b", label_b)
    table.insert(0, "model_a", label_a)
    if level == "type":  # largest disagreements first
        table = table.sort_values("difference", key=lambda d: -d.abs(), na_position="last")
    else:  # Global first, then the categories
        table = table.sort_values("category", key=lambda c: c != GLOBAL, kind="stable")
    return table.reset_index(drop=True)


def box_table(digests: Sequence[RunDigest], category: str = GLOBAL) -> pd.DataFrame:
    """Box-plot statistics of node values per run (categorized nodes, or one ``category``), from histograms:
    model, n, mean, min, q1, median, q3, max, lowerfence, upperfence (Tukey: the furthest values within 1.5
    IQR of the box), each within 0.5e-4 of the exact quantile (``numpy.quantile``'s default, linear)."""
    import pandas as pd

    rows = []
    for digest, label in zip(digests, run_labels(digests)):
        keep = slice(None) if category == GLOBAL else digest.category == digest.category_code(category)
        values = digest.value[keep]
        hist = np.bincount(digest.bins[keep], minlength=N_BINS)
        rows.append({"model": label, "n": len(values), "mean": float(values.mean()) if len(values) else np.nan,
                     **_box(hist)})
    return pd.DataFrame(rows)


def _box(hist: np.ndarray) -> dict[str, float]:
    n = int(hist.sum())
    if n == 0:
        return dict.fromkeys(("min", "q1", "median", "q3", "max", "lowerfence", "upperfence"), np.nan)
    cum = np.cumsum(hist)
    occupied = np.flatnonzero(hist)

    def order(k: int) -> float:  # the k-th smallest value (0-based), as its bin
        return float(np.searchsorted(cum, k + 1)) * RESOLUTION

    def quantile(q: float) -> float:  # numpy's linear interpolation between order statistics
        pos = q * (n - 1)
        lo = int(np.floor(pos))
        return order(lo) + (pos - lo) * (order(min(lo + 1, n - 1)) - order(lo))

    q1, med, q3 = quantile(0.25), quantile(0.5), quantile(0.75)
    iqr = q3 - q1
    values = occupied * RESOLUTION
    inside = values[(values >= q1 - 1.5 * iqr - 1e-12) & (values <= q3 + 1.5 * iqr + 1e-12)]
    return {"min": float(values[0]), "q1": q1, "median": med, "q3": q3, "max": float(values[-1]),
            "lowerfence": float(inside.min()), "upperfence": float(inside.max())}
