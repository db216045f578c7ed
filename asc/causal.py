"""AsC-Causal (paper section IV, VII-B, Table II): do syntax concepts drive the model's loss?

Unit: a snippet of a corpus run. Outcome Y: the snippet's mean cross-entropy (nats/token).
Treatments T: the snippet-level AsC-Eval value of a concept (the mapping's ``causal_concepts``, the
paper's 14 node types), of each category, and the global value. Confounders Z: sequence size (model
tokens), AST levels, number of AST nodes, cyclomatic complexity (lizard, as the authors used).

For each treatment: Pearson r (with p-values) against the outcome and each confounder, and the
average treatment effect p(Y | do(T)) estimated with dowhy from an explicit graph (Z -> T, Z -> Y,
T -> Y), backdoor identification and linear regression (the effect is per unit of T, i.e. from a
concept value of 0 to 1), with its confidence interval and three refuters, run the way that makes
them informative (dowhy 0.14 behaviour, checked here):

* placebo: the treatment is *permuted* (a constant placebo makes the fit degenerate);
* random common cause: a random confounder is added;
* data subset: 80% subsets drawn from a ``RandomState`` so that every simulation differs.

An absent concept is missing, not 0 (the authors coded it 0, a bias): each estimate uses the
snippets where its treatment exists and reports that count; below ``min_snippets`` it says
"not enough data" instead of estimating.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np

from asc.concepts import GLOBAL, CategoryMap
from asc.corpus.runs import RunData
from asc.errors import InputError

if TYPE_CHECKING:
    import networkx as nx
    import pandas as pd

__all__ = ["CONFOUNDERS", "OUTCOME", "cyclomatic_complexity", "snippet_table", "treatments_of", "causal_graph",
           "estimate", "causal_table", "MIN_SNIPPETS"]

log = logging.getLogger(__name__)
OUTCOME = "loss"
CONFOUNDERS = ("seq_size", "ast_levels", "n_nodes", "complexity")
MIN_SNIPPETS = 30


def cyclomatic_complexity(source: str, language: str = "python") -> float:
    """McCabe complexity of the snippet's (first) function by lizard; NaN when lizard finds none."""
    import lizard

    name = "snippet.java" if language == "java" else "snippet.py"
    info = lizard.analyze_file.analyze_source_code(name, source)
    if not info.function_list:
        return math.nan
    return float(info.function_list[0].cyclomatic_complexity)


def snippet_table(run: RunData) -> pd.DataFrame:
    """One row per snippet: outcome, confounders, and one column per treatment (NaN when absent)."""
    snippets = run.snippets.set_index("id")
    table = snippets[["loss"]].copy()
    table["seq_size"] = snippets["n_tokens"].astype(float)
    table["ast_levels"] = snippets["ast_levels"].astype(float)
    table["n_nodes"] = snippets["n_nodes"].astype(float)
    table["complexity"] = [cyclomatic_complexity(src, lang) for src, lang in zip(snippets["source"],
                                                                               snippets["language"])]
    concepts = run.concepts.copy()
    concepts["column"] = np.where(concepts["kind"] == "type", "type: " + concepts["name"],
                                  np.where(concepts["kind"] == "category", "category: " + concepts["name"], GLOBAL))
    wide = concepts.pivot_table(index="snippet_id", columns="column", values="value", aggfunc="first")
    return table.join(wide, how="left")


def treatments_of(cmap: CategoryMap) -> list[str]:
    """Treatment columns in Table II order: the global value, then per category its concepts and itself."""
    out = [GLOBAL]
    for cat in cmap.categories:
        out += [f"type: {t}" for t in cmap.causal_concepts if cmap.category_of(t) == cat]
        out.append(f"category: {cat}")
    return out


def causal_graph(treatment: str = "T", outcome: str = "Y", confounders: Sequence[str] = CONFOUNDERS) -> nx.DiGraph:
    """The structural causal model: every confounder -> treatment and -> outcome, treatment -> outcome."""
    import networkx as nx

    edges = [(z, treatment) for z in confounders] + [(z, outcome) for z in confounders] + [(treatment, outcome)]
    return nx.DiGraph(edges)


def _pearson(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    from scipy.stats import pearsonr

    if len(x) < 3 or np.std(x) == 0 or np.std(y) == 0:
        return math.nan, math.nan
    r = pearsonr(x, y)
    return float(r.statistic), float(r.pvalue)


def _verdicts(ate: float, half_width: float, placebo, rcc, subset) -> dict:
    """Plain-words verdicts: placebo ~ 0, random common cause and subsets ~ unchanged (p > 0.05).

    "Near" is relative to the larger of |ATE| and the confidence interval's half-width, so an
    effect close to 0 is not failed for moving by a hair."""
    scale = max(abs(ate), half_width, 1e-9)

    def p(res) -> float:
        return float(res.refutation_result.get("p_value", math.nan)) if res.refutation_result else math.nan

    pl_new, rc_new, su_new = float(placebo.new_effect), float(rcc.new_effect), float(subset.new_effect)
    pl_ok = abs(pl_new) < 0.25 * scale or p(placebo) > 0.05
    rc_ok = abs(rc_new - ate) < 0.1 * scale and p(rcc) > 0.05
    su_ok = abs(su_new - ate) < 0.25 * scale and p(subset) > 0.05
    return {
        "placebo_effect": pl_new, "placebo_p": p(placebo),
        "placebo": ("passed: the placebo effect is near zero" if pl_ok else
                    "failed: a permuted treatment still shows an effect"),
        "random_cause_effect": rc_new, "random_cause_p": p(rcc),
        "random_cause": ("passed: a random common cause leaves the effect unchanged" if rc_ok else
                         "failed: adding a random common cause moves the effect"),
        "subset_effect": su_new, "subset_p": p(subset),
        "subset": ("passed: the effect holds on random 80% subsets" if su_ok else
                   "failed: the effect changes on random 80% subsets"),
    }


@contextmanager
def _quiet_dowhy() -> Iterator[None]:
    """Silence dowhy's warnings and info logs for the block, then restore the logger's previous level."""
    logger = logging.getLogger("dowhy")
    previous = logger.level
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logger.setLevel(logging.ERROR)
        try:
            yield
        finally:
            logger.setLevel(previous)


def estimate(data: pd.DataFrame, treatment: str, outcome: str = OUTCOME, confounders: Sequence[str] = CONFOUNDERS,
             seed: int = 0, simulations: int = 50, refute: bool = True) -> dict:
    """ATE of ``treatment`` on ``outcome`` given ``confounders`` (rows with any of them missing dropped)."""
    from dowhy import CausalModel

    cols = [treatment, outcome, *confounders]
    missing = [c for c in cols if c not in data.columns]
    if missing:
        raise InputError(f"columns missing from the snippet table: {', '.join(missing)}")
    d = data[cols].dropna().astype(float)
    d.columns = ["T", "Y", *[f"Z{i}" for i in range(len(confounders))]]  # dowhy needs plain names
    zs = [f"Z{i}" for i in range(len(confounders))]
    with _quiet_dowhy():
        model = CausalModel(data=d, treatment="T", outcome="Y", graph=causal_graph("T", "Y", zs))
        ident = model.identify_effect(proceed_when_unidentifiable=True)
        est = model.estimate_effect(ident, method_name="backdoor.linear_regression", confidence_intervals=True)
        lo, hi = np.asarray(est.get_confidence_intervals(), dtype=float).ravel()[:2]
        out = {"n": len(d), "ate": float(est.value), "ci_low": float(lo), "ci_high": float(hi)}
        if refute:
            placebo = model.refute_estimate(ident, est, method_name="placebo_treatment_refuter",
                                            placebo_type="permute", num_simulations=simulations,
                                            random_state=np.random.RandomState(seed))
            rcc = model.refute_estimate(ident, est, method_name="random_common_cause", num_simulations=simulations,
                                        random_state=np.random.RandomState(seed), n_jobs=1)
            subset = model.refute_estimate(ident, est, method_name="data_subset_refuter", subset_fraction=0.8,
                                           num_simulations=simulations, random_state=np.random.RandomState(seed),
                                           n_jobs=1)
            out.update(_verdicts(out["ate"], (out["ci_high"] - out["ci_low"]) / 2, placebo, rcc, subset))
    return out


def _treatment_row(data: pd.DataFrame, treatment: str, min_snippets: int, seed: int, simulations: int) -> dict:
    """One row of Table II: correlations, and the refuted effect when there is enough data."""
    row: dict = {"treatment": treatment}
    if treatment not in data.columns:
        row.update(n=0, status="not enough data (absent from every snippet)")
        return row
    present = data.dropna(subset=[treatment, OUTCOME])
    row["n"] = len(present)
    for z in CONFOUNDERS:
        sub = present.dropna(subset=[z])
        row[f"r_{z}"], row[f"p_{z}"] = _pearson(sub[treatment].to_numpy(float), sub[z].to_numpy(float))
    row["r_loss"], row["p_loss"] = _pearson(present[treatment].to_numpy(float), present[OUTCOME].to_numpy(float))
    complete = present.dropna(subset=list(CONFOUNDERS))
    if len(complete) < min_snippets or complete[treatment].std() == 0:
        row["status"] = f"not enough data ({len(complete)} snippets; at least {min_snippets} needed)"
    else:
        row.update(estimate(complete, treatment, seed=seed, simulations=simulations))
        row["status"] = "estimated"
    return row


def causal_table(data: pd.DataFrame, treatments: Sequence[str], min_snippets: int = MIN_SNIPPETS, seed: int = 0,
                 simulations: int = 50, on_progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
    """Table II: per treatment, Pearson r with each confounder and the loss, and the refuted ATE."""
    import pandas as pd

    rows = []
    for k, treatment in enumerate(treatments):
        rows.append(_treatment_row(data, treatment, min_snippets, seed, simulations))
        if on_progress is not None:  # every treatment counts, absent ones too
            on_progress(k + 1, len(treatments))
    return pd.DataFrame(rows)
