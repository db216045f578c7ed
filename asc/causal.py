"""AsC-Causal (paper section IV, VII-B, Table II): do syntax concepts drive the model's loss?

Unit: a snippet of a corpus run. Outcome Y: the snippet's mean cross-entropy (nats/token).
Treatments T: the snippet-level AsC-Eval value of a concept (the mapping's ``causal_concepts``, the
paper's 14 node types), of each category, and the global value. Confounders Z: sequence size (model
tokens), AST levels, number of AST nodes, cyclomatic complexity (lizard's count, as the authors used: the run's
``complexity`` column when it has one, else :func:`asc.complexity.complexity_of_source`, equal to lizard).

For each treatment: Pearson r (with p-values) against the outcome and each confounder, and the
average treatment effect p(Y | do(T)) estimated with dowhy from an explicit graph (Z -> T, Z -> Y,
T -> Y), backdoor identification and linear regression (the effect is per unit of T, i.e. from a
concept value of 0 to 1), with its confidence interval and three refuters, run the way that makes
them informative (dowhy 0.14 behaviour, checked here):

* placebo: the treatment is *permuted* (a constant placebo makes the fit degenerate);
* random common cause: a random confounder is added;
* data subset: 80% subsets drawn from a ``RandomState`` so that every simulation differs.

Scale. The estimate, its interval and the correlations use every row. The refuters cost about
10 ms per simulation whatever the size of the data up to a few thousand rows (dowhy's own overhead),
rising to 33 ms at 100,000 rows, and 3 refuters x 50 simulations x 25 treatments make 3,750 of them.
So on more than ``refute_sample`` rows (default :data:`REFUTE_SAMPLE`) the refuters run on a seeded
subsample: ``refute_sample`` rows drawn without replacement by ``numpy.random.default_rng(seed)``
from the rows of that treatment, with the effect re-estimated there (``refute_ate``, on
``refute_n`` rows); the verdicts compare the refuters' effects with that estimate. On data no
larger than the subsample nothing changes: the refuters run on every row, as before. ``jobs``
runs the treatments in that many worker processes, with the same results as one process (every
treatment draws from its own seeded generators). How the estimates and verdicts move with the
subsample size is measured by ``benchmarks/bench_causal.py`` (docs/corpora.md, AsC-Causal at scale).

:func:`run_causal` does it all for a run read with its snippets and concepts (the treatments of the run's
language), returning a :class:`CausalResult`: what the CLI's ``causal`` and the app's Causal page both call.

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
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from asc.complexity import complexity_column
from asc.concepts import GLOBAL, CategoryMap, load_categories
from asc.corpus.runs import RunData
from asc.errors import InputError
from asc.extras import require

if TYPE_CHECKING:
    import networkx as nx
    import pandas as pd

__all__ = ["CONFOUNDERS", "OUTCOME", "CausalResult", "snippet_table", "treatments_of", "causal_graph",
           "estimate", "causal_table", "chosen_treatments", "run_causal", "run_treatments", "MIN_SNIPPETS",
           "REFUTE_SAMPLE", "MIN_REFUTE_SAMPLE", "MAX_SIMULATIONS"]

log = logging.getLogger(__name__)
OUTCOME = "loss"
CONFOUNDERS = ("seq_size", "ast_levels", "n_nodes", "complexity")
MIN_SNIPPETS = 30
#: Rows the refuters use when a treatment has more (docs/corpora.md, "AsC-Causal at scale": chosen by measurement).
REFUTE_SAMPLE = 5000
#: The smallest refuter subsample accepted: below it the refuters' verdicts are mostly noise.
MIN_REFUTE_SAMPLE = 100
#: Simulations per refuter at most (``causal --simulations``): a refuter's p-value resolves 1/simulations, and 0.001
#: is far finer than the 0.05 it is read against; each simulation refits the estimate (a few ms to 33 ms).
MAX_SIMULATIONS = 1000


def _wide_concepts(concepts: pd.DataFrame, index: pd.Index) -> pd.DataFrame:
    """The snippet x treatment matrix of concept values (first value of each pair; columns sorted; a column only
    for a treatment with at least one value): ``pivot_table(aggfunc="first")`` without its cost on millions of rows."""
    import pandas as pd

    concepts = concepts[concepts["value"].notna()]
    rows = index.get_indexer(concepts["snippet_id"])
    keep = rows >= 0
    kind_codes, kinds = pd.factorize(concepts["kind"])
    name_codes, names = pd.factorize(concepts["name"])
    pair_codes, pairs = pd.factorize(kind_codes.astype(np.int64) * max(len(names), 1) + name_codes)

    def label(pair: int) -> str:
        kind, name = kinds[pair // max(len(names), 1)], names[pair % max(len(names), 1)]
        return f"type: {name}" if kind == "type" else f"category: {name}" if kind == "category" else GLOBAL

    labels = [label(int(p)) for p in pairs]
    columns = sorted(set(labels))
    position = {c: k for k, c in enumerate(columns)}
    col_of_pair = np.array([position[lab] for lab in labels], dtype=np.int64)
    matrix = np.full((len(index), len(columns)), np.nan)
    flat = rows[keep] * len(columns) + col_of_pair[pair_codes[keep]]
    cells, first = np.unique(flat, return_index=True)  # the first value of each (snippet, treatment) cell
    matrix.flat[cells] = concepts["value"].to_numpy(float)[keep][first]
    used = ~np.isnan(matrix).all(axis=0)
    return pd.DataFrame(matrix[:, used], index=index, columns=[c for c, u in zip(columns, used) if u])


def snippet_table(run: RunData) -> pd.DataFrame:
    """One row per snippet: outcome, confounders, and one column per treatment (NaN when absent).

    The complexity comes from the run's ``complexity`` column when it has one (runs record it while they
    evaluate), else from the sources (older runs; each distinct source computed once); a missing value in the
    column is computed too."""
    snippets = run.snippets.set_index("id")
    table = snippets[["loss"]].copy()
    table["seq_size"] = snippets["n_tokens"].astype(float)
    table["ast_levels"] = snippets["ast_levels"].astype(float)
    table["n_nodes"] = snippets["n_nodes"].astype(float)
    complexity = (snippets["complexity"].to_numpy(float, na_value=np.nan).copy() if "complexity" in snippets
                  else np.full(len(snippets), np.nan))
    todo = np.flatnonzero(np.isnan(complexity))
    if len(todo):
        complexity[todo] = complexity_column(snippets["source"].to_numpy(object)[todo].tolist(),
                                             snippets["language"].to_numpy(object)[todo].tolist())
    table["complexity"] = complexity
    return table.join(_wide_concepts(run.concepts, table.index), how="left")


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

    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:  # constant: undefined (scipy would warn and say NaN)
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


def _check_refute_sample(refute_sample: int | None) -> None:
    if refute_sample is not None and (isinstance(refute_sample, bool) or not isinstance(refute_sample, int | np.integer)
                                      or refute_sample < MIN_REFUTE_SAMPLE):
        raise InputError(f"the refuter subsample must be a whole number of at least {MIN_REFUTE_SAMPLE} snippets, "
                         f"or None for every row (--refute-sample all); got {refute_sample!r}")


def _fit(d: pd.DataFrame) -> tuple:
    """dowhy's model, identified estimand and linear-regression estimate (with its 95% interval) on ``d``."""
    from dowhy import CausalModel

    zs = [c for c in d.columns if c not in ("T", "Y")]
    model = CausalModel(data=d, treatment="T", outcome="Y", graph=causal_graph("T", "Y", zs))
    ident = model.identify_effect(proceed_when_unidentifiable=True)
    est = model.estimate_effect(ident, method_name="backdoor.linear_regression", confidence_intervals=True)
    lo, hi = np.asarray(est.get_confidence_intervals(), dtype=float).ravel()[:2]
    return model, ident, est, float(lo), float(hi)


def estimate(data: pd.DataFrame, treatment: str, outcome: str = OUTCOME, confounders: Sequence[str] = CONFOUNDERS,
             seed: int = 0, simulations: int = 50, refute: bool = True,
             refute_sample: int | None = REFUTE_SAMPLE) -> dict:
    """ATE of ``treatment`` on ``outcome`` given ``confounders`` (rows with any of them missing dropped).

    The estimate uses every row; the refuters use at most ``refute_sample`` of them (None: every row), drawn
    with ``numpy.random.default_rng(seed)``, where the effect is estimated again (``refute_ate``) for them to
    check (module docstring)."""
    _check_refute_sample(refute_sample)
    cols = [treatment, outcome, *confounders]
    missing = [c for c in cols if c not in data.columns]
    if missing:
        raise InputError(f"columns missing from the snippet table: {', '.join(missing)}")
    d = data[cols].dropna().astype(float).reset_index(drop=True)  # a plain index: dowhy copies and takes it often
    d.columns = ["T", "Y", *[f"Z{i}" for i in range(len(confounders))]]  # dowhy needs plain names
    with _quiet_dowhy():
        model, ident, est, lo, hi = _fit(d)
        out = {"n": len(d), "ate": float(est.value), "ci_low": lo, "ci_high": hi}
        if refute:
            if refute_sample is None or len(d) <= refute_sample:  # every row: the estimate above is refuted
                rn, rate, rlo, rhi = len(d), out["ate"], lo, hi
            else:
                rows = np.sort(np.random.default_rng(seed).choice(len(d), size=int(refute_sample), replace=False))
                model, ident, est, rlo, rhi = _fit(d.iloc[rows].reset_index(drop=True))
                rn, rate = len(rows), float(est.value)
            out.update(refute_n=rn, refute_ate=rate)
            placebo = model.refute_estimate(ident, est, method_name="placebo_treatment_refuter",
                                            placebo_type="permute", num_simulations=simulations,
                                            random_state=np.random.RandomState(seed))
            rcc = model.refute_estimate(ident, est, method_name="random_common_cause", num_simulations=simulations,
                                        random_state=np.random.RandomState(seed), n_jobs=1)
            subset = model.refute_estimate(ident, est, method_name="data_subset_refuter", subset_fraction=0.8,
                                           num_simulations=simulations, random_state=np.random.RandomState(seed),
                                           n_jobs=1)
            out.update(_verdicts(rate, (rhi - rlo) / 2, placebo, rcc, subset))
    return out


def _treatment_row(data: pd.DataFrame, treatment: str, min_snippets: int, seed: int, simulations: int,
                   refute_sample: int | None = REFUTE_SAMPLE) -> dict:
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
    if len(complete) < min_snippets:
        row["status"] = f"not enough data ({len(complete)} snippets; at least {min_snippets} needed)"
    elif np.ptp(complete[treatment].to_numpy(float)) == 0:  # not std() == 0: rounding leaves ~1e-17 of a constant
        row["status"] = f"not enough data (one value in all {len(complete)} snippets: nothing to compare)"
    else:
        row.update(estimate(complete, treatment, seed=seed, simulations=simulations, refute_sample=refute_sample))
        row["status"] = "estimated"
    return row


def _numbered_row(k: int, data: pd.DataFrame, treatment: str, min_snippets: int, seed: int, simulations: int,
                  refute_sample: int | None) -> tuple[int, dict]:
    """:func:`_treatment_row` in a worker process, with its place in the table."""
    return k, _treatment_row(data, treatment, min_snippets, seed, simulations, refute_sample)


def causal_table(data: pd.DataFrame, treatments: Sequence[str], min_snippets: int = MIN_SNIPPETS, seed: int = 0,
                 simulations: int = 50, on_progress: Callable[[int, int], None] | None = None,
                 refute_sample: int | None = REFUTE_SAMPLE, jobs: int = 1) -> pd.DataFrame:
    """Table II: per treatment, Pearson r with each confounder and the loss, and the refuted ATE.

    ``refute_sample``: rows the refuters use at most (None: all; module docstring). ``jobs``: worker processes
    (1: this process; more: joblib's loky workers, kept for the next call); the table is the same whatever their
    number."""
    import pandas as pd

    require("dowhy", "joblib", "threadpoolctl", extra="causal", feature="AsC-Causal (Table II)")
    _check_refute_sample(refute_sample)
    if isinstance(jobs, bool) or not isinstance(jobs, int | np.integer) or jobs < 1:
        raise InputError(f"jobs must be a whole number of at least 1 (1: no worker processes); got {jobs!r}")
    rows: list[dict | None] = [None] * len(treatments)
    done = 0

    def finished(k: int, row: dict) -> None:
        nonlocal done
        rows[k] = row
        done += 1
        if on_progress is not None:  # every treatment counts, absent ones too
            on_progress(done, len(treatments))

    todo = [k for k, t in enumerate(treatments) if t in data.columns]
    if jobs == 1 or len(todo) < 2:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1):  # regressions on ~6 columns: BLAS threads only add overhead, much of it when busy
            for k, treatment in enumerate(treatments):
                finished(k, _treatment_row(data, treatment, min_snippets, seed, simulations, refute_sample))
        return pd.DataFrame(rows)
    from joblib import Parallel, delayed

    for k, treatment in enumerate(treatments):
        if k not in todo:
            finished(k, _treatment_row(data, treatment, min_snippets, seed, simulations, refute_sample))
    columns = [OUTCOME, *CONFOUNDERS]
    # loky workers: started fresh (never forked from a threaded server), the caller's __main__ not re-run (a
    # Streamlit page or an unguarded script), kept for the next call, BLAS threads shared out among them
    parallel = Parallel(n_jobs=min(jobs, len(todo)), backend="loky", return_as="generator_unordered")
    for k, row in parallel(delayed(_numbered_row)(k, data[[treatments[k], *columns]], treatments[k], min_snippets,
                                                  seed, simulations, refute_sample) for k in todo):
        finished(k, row)
    return pd.DataFrame(rows)


@dataclass(frozen=True, eq=False)
class CausalResult:
    """AsC-Causal of one run: ``snippets``, the estimation's input (:func:`snippet_table`, one row per snippet), and
    ``table``, Table II (:func:`causal_table`, one row per treatment of the run's language)."""

    snippets: pd.DataFrame
    table: pd.DataFrame

    @property
    def estimated(self) -> list[str]:
        """The treatments with an estimated effect, in Table II order; every treatment when none has one."""
        done = self.table[self.table["status"] == "estimated"]["treatment"].tolist() if "status" in self.table else []
        return done or self.table["treatment"].tolist()


def run_treatments(run: RunData) -> list[str]:
    """The treatments of Table II for ``run``: :func:`treatments_of` the category mapping of its language."""
    return treatments_of(load_categories(run.language))


def chosen_treatments(run: RunData, names: Sequence[str] | None) -> list[str]:
    """``names`` checked against :func:`run_treatments` (in Table II's order; None: all of them); an unknown or empty
    choice is an :class:`InputError` that lists the valid names."""
    valid = run_treatments(run)
    if names is None:
        return valid
    wanted = [n.strip() for n in names if n.strip()]
    unknown = [n for n in wanted if n not in valid]
    if unknown or not wanted:
        what = f"unknown treatment(s) {', '.join(repr(n) for n in unknown)}" if unknown else "no treatment given"
        raise InputError(f"{what}: choose from {', '.join(valid)}")
    return [n for n in valid if n in wanted]


def run_causal(run: RunData, min_snippets: int = MIN_SNIPPETS, seed: int = 0, simulations: int = 50,
               on_progress: Callable[[int, int], None] | None = None, refute_sample: int | None = REFUTE_SAMPLE,
               jobs: int = 1, treatments: Sequence[str] | None = None) -> CausalResult:
    """AsC-Causal of a run read with its snippets and concepts (``load_run(path, tables=("snippets",
    "concepts"))``): the snippet table and Table II over the treatments of the run's language
    (:attr:`RunData.language`), what the CLI's ``causal`` and the app's page both compute; ``treatments``: only
    these rows (:func:`chosen_treatments`; each row is computed on its own with the same seed, so a row is the same
    alone or in the whole table). The other arguments are :func:`causal_table`'s."""
    chosen = chosen_treatments(run, treatments)
    data = snippet_table(run)
    return CausalResult(data, causal_table(data, chosen, min_snippets=min_snippets, seed=seed,
                                           simulations=simulations, on_progress=on_progress,
                                           refute_sample=refute_sample, jobs=jobs))
