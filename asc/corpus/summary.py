"""Corpus-level AsC-Eval per model from run folders (:mod:`asc.corpus.runs`): paper Table I, Fig. 3, Fig. 6.


* :func:`summary_table`: one row per (model, category) with the bootstrapped median of node
  values, its 95% interval and the node/snippet counts; ``Global`` covers every categorized node.
  :func:`wide_table` pivots it to one row per model (Table I), sorted by the global value.
* :func:`type_table`: the node types behind each category with their counts, so no category hides a
  sparse type.
* :func:`difference_table`: model A minus model B per category and per node type (medians of node
  values; a difference of a model with itself is exactly 0).

The bootstrap of Table I lives in :func:`category_table` only; :func:`summary_table` stacks it per run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from asc.concepts import GLOBAL, bootstrap_median
from asc.corpus.runs import RunData
from asc.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["category_table", "summary_table", "wide_table", "type_table", "difference_table", "run_label",
           "run_labels"]


def run_label(run: RunData) -> str:
    """A run's name in tables: its model's name."""
    return str(run.meta["settings"]["model"]["name"])


def run_labels(runs: Sequence[RunData]) -> list[str]:
    """Unique names: the model's, plus the run folder's name where two runs share model and corpus."""
    keys = [(run_label(r), r.meta["settings"].get("corpus", "")) for r in runs]
    return [f"{k[0]} ({r.path.name})" if keys.count(k) > 1 else k[0] for k, r in zip(keys, runs)]


def _valued(run: RunData) -> pd.DataFrame:
    nodes = run.nodes
    return nodes[nodes["value"].notna()]


def category_table(nodes: pd.DataFrame, categories: Sequence[str], n_boot: int = 500, seed: int = 0,
                   ci: float = 0.95) -> pd.DataFrame:
    """Paper Table I for one run: per category (and ``Global`` over every categorized node) the
    bootstrapped median of node values, its interval, and how many nodes/snippets it rests on."""
    import pandas as pd

    valued = nodes[nodes["category"].notna() & nodes["value"].notna()]
    rows = []
    for name in [GLOBAL, *categories]:
        sub = valued if name == GLOBAL else valued[valued["category"] == name]
        med, lo, hi, std = bootstrap_median(sub["value"].to_numpy(), n_boot=n_boot, seed=seed, ci=ci)
        rows.append({"category": name, "median": med, "ci_low": lo, "ci_high": hi, "boot_std": std,
                     "n_nodes": len(sub), "n_snippets": int(sub["snippet_id"].nunique())})
    return pd.DataFrame(rows)


def summary_table(runs: Sequence[RunData], categories: Sequence[str], n_boot: int = 500, seed: int = 0,
                  ci: float = 0.95) -> pd.DataFrame:
    """Long Table I: model, corpus, category, median, ci_low, ci_high, boot_std, n_nodes, n_snippets."""
    import pandas as pd

    frames = []
    for run, label in zip(runs, run_labels(runs)):
        table = category_table(run.nodes, categories, n_boot=n_boot, seed=seed, ci=ci)
        table.insert(0, "corpus", run.meta["settings"].get("corpus", ""))
        table.insert(0, "model", label)
        frames.append(table)
    columns = ["model", "corpus", "category", "median", "ci_low", "ci_high", "boot_std", "n_nodes", "n_snippets"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def wide_table(summary: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, corpus), a column per category (median), sorted by the global value."""
    wide = summary.pivot_table(index=["model", "corpus"], columns="category", values="median", sort=False)
    order = [c for c in summary["category"].drop_duplicates()]
    wide = wide.reindex(columns=order).sort_values(GLOBAL, ascending=False)  # keep absent categories (NaN)
    snippets = summary[summary["category"] == GLOBAL].set_index(["model", "corpus"])["n_snippets"]
    wide.insert(0, "snippets", snippets.reindex(wide.index))
    return wide.reset_index()


def type_table(run: RunData, label: str | None = None) -> pd.DataFrame:
    """Per category and node type: nodes, snippets, median value, and the share of the category's nodes."""
    valued = _valued(run)
    valued = valued[valued["category"].notna()]
    g = valued.groupby(["category", "type"])
    table = g["value"].agg(nodes="size", median="median", mean="mean").reset_index()
    table["snippets"] = g["snippet_id"].nunique().to_numpy()
    table["share"] = table["nodes"] / table.groupby("category")["nodes"].transform("sum")
    table.insert(0, "model", label or run_label(run))
    return table.sort_values(["category", "nodes"], ascending=[True, False]).reset_index(drop=True)


def difference_table(run_a: RunData, run_b: RunData, level: str = "category") -> pd.DataFrame:
    """Median node value of A minus B per ``level`` ("category" or "type"), with both medians and counts."""
    if level not in ("category", "type"):
        raise InputError(f"level={level!r}; choose 'category' or 'type'")

    def medians(run):
        valued = _valued(run)
        valued = valued[valued["category"].notna()]
        keys = ["category"] if level == "category" else ["category", "type"]
        out = valued.groupby(keys)["value"].agg(median="median", nodes="size")
        if level == "category":
            out.loc[GLOBAL] = [valued["value"].median(), len(valued)]
        return out

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
