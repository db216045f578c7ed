"""Comparisons: corpus-level AsC-Eval per model (paper Table I, Fig. 3, Fig. 6) and one snippet across models.

Corpus level (from run folders, :mod:`asc.runs`):

* :func:`summary_table`: one row per (model, category) with the bootstrapped median of node
  values, its 95% interval and the node/snippet counts; ``Global`` covers every categorized node.
  :func:`wide_table` pivots it to one row per model (Table I), sorted by the global value.
* :func:`type_table`: the node types behind each category with their counts, so no category hides a
  sparse type.
* :func:`difference_table`: model A minus model B per category and per node type (medians of node
  values; a difference of a model with itself is exactly 0).

Snippet level: every model's tokens map onto the same tree (the tree depends on the text, not on
the tokenizer), so :func:`compare_snippet` can subtract node values of two models node by node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .concepts import GLOBAL, bootstrap_median
from .errors import InputError
from .explain import Explanation
from .runs import RunData

__all__ = ["summary_table", "wide_table", "type_table", "difference_table", "SnippetComparison", "compare_snippet",
           "run_label", "run_labels"]


def run_label(run: RunData) -> str:
    """A run's name in tables: its model's name."""
    return str(run.meta["settings"]["model"]["name"])


def run_labels(runs: Sequence[RunData]) -> list[str]:
    """Unique names: the model's, plus the run folder's name where two runs share model and corpus."""
    keys = [(run_label(r), r.meta["settings"].get("corpus", "")) for r in runs]
    return [f"{k[0]} ({r.path.name})" if keys.count(k) > 1 else k[0] for k, r in zip(keys, runs)]


def _valued(run: RunData):
    nodes = run.nodes
    return nodes[nodes["value"].notna()]


def summary_table(runs: Sequence[RunData], categories: Sequence[str], n_boot: int = 500, seed: int = 0,
                  ci: float = 0.95):
    """Long Table I: model, corpus, category, median, ci_low, ci_high, boot_std, n_nodes, n_snippets."""
    import pandas as pd

    rows = []
    for run, label in zip(runs, run_labels(runs)):
        valued = _valued(run)
        valued = valued[valued["category"].notna()]
        for name in [GLOBAL, *categories]:
            sub = valued if name == GLOBAL else valued[valued["category"] == name]
            med, lo, hi, std = bootstrap_median(sub["value"].to_numpy(), n_boot=n_boot, seed=seed, ci=ci)
            rows.append({"model": label, "corpus": run.meta["settings"].get("corpus", ""), "category": name,
                         "median": med, "ci_low": lo, "ci_high": hi, "boot_std": std, "n_nodes": len(sub),
                         "n_snippets": int(sub["snippet_id"].nunique())})
    return pd.DataFrame(rows)


def wide_table(summary):
    """One row per (model, corpus), a column per category (median), sorted by the global value."""
    wide = summary.pivot_table(index=["model", "corpus"], columns="category", values="median", sort=False)
    order = [c for c in summary["category"].drop_duplicates()]
    wide = wide.reindex(columns=order).sort_values(GLOBAL, ascending=False)  # keep absent categories (NaN)
    snippets = summary[summary["category"] == GLOBAL].set_index(["model", "corpus"])["n_snippets"]
    wide.insert(0, "snippets", snippets.reindex(wide.index))
    return wide.reset_index()


def type_table(run: RunData, label: str | None = None):
    """Per category and node type: nodes, snippets, median value, and the share of the category's nodes."""
    valued = _valued(run)
    valued = valued[valued["category"].notna()]
    g = valued.groupby(["category", "type"])
    table = g["value"].agg(nodes="size", median="median", mean="mean").reset_index()
    table["snippets"] = g["snippet_id"].nunique().to_numpy()
    table["share"] = table["nodes"] / table.groupby("category")["nodes"].transform("sum")
    table.insert(0, "model", label or run_label(run))
    return table.sort_values(["category", "nodes"], ascending=[True, False]).reset_index(drop=True)


def difference_table(run_a: RunData, run_b: RunData, level: str = "category"):
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


@dataclass(frozen=True)
class SnippetComparison:
    """Several models' AsC-Eval of one snippet on the shared tree. ``values`` has shape (M, N)."""

    models: tuple[str, ...]
    explanations: tuple[Explanation, ...]
    values: np.ndarray

    def difference(self, a: int = 0, b: int = 1) -> np.ndarray:
        """(N,) node values of model ``a`` minus model ``b`` (NaN where either has none)."""
        return self.values[a] - self.values[b]

    def disagreements(self, a: int = 0, b: int = 1, k: int = 15, named_only: bool = True):
        """The ``k`` nodes with the largest |A - B|, with both values and the node's text."""
        import pandas as pd

        ex = self.explanations[0]
        t = ex.tree
        diff = self.difference(a, b)
        rows = [{"id": i, "type": t.type[i], "category": ex.node_category[i], self.models[a]: self.values[a, i],
                 self.models[b]: self.values[b, i], "difference": diff[i], "text": t.text(i)[:60]}
                for i in range(t.n_nodes) if not np.isnan(diff[i]) and (t.named[i] or not named_only)]
        table = pd.DataFrame(rows)
        if table.empty:
            return table
        return table.reindex(table["difference"].abs().sort_values(ascending=False).index).head(k).reset_index(drop=True)


def compare_snippet(explanations: Sequence[Explanation], models: Sequence[str] | None = None) -> SnippetComparison:
    """Stack several models' explanations of the same source (same text, language) node by node."""
    if len(explanations) < 2:
        raise InputError("compare at least two models")
    first = explanations[0]
    for ex in explanations[1:]:
        if ex.source != first.source or ex.tree.language != first.tree.language:
            raise InputError("every model must explain the same text in the same language")
    names = tuple(models or (ex.model.get("name", f"model {i}") for i, ex in enumerate(explanations)))
    if len(set(names)) != len(names):
        names = tuple(f"{n} ({i + 1})" for i, n in enumerate(names))
    return SnippetComparison(models=names, explanations=tuple(explanations),
                             values=np.stack([ex.values for ex in explanations]))
