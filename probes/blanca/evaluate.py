"""BLANCA scores: cosine distances of each item's texts under one model, and the paper's metrics over them.

:func:`score_task` turns a task's items into the **scores table**, one row per scored pair, columns
:data:`SCORE_COLUMNS`:

- ``model``, ``task``, ``id``, ``split``; ``row``: the answer's index within an R question (0 otherwise);
- ``distance``: ``1 - cos`` of the two embeddings (R: the question and that answer);
- ``target``: R the answer's grade; L, F 1.0 for a positive pair and 0.0 for a negative; H, U the item's target
  (MRO distance; usage similarity unless the task file's header says ``distance``);
- ``name_a``, ``name_b``, ``group`` as in the items (empty where the task has none).

:func:`summarize` computes from it the long **summary table** (``model, task, metric, value, low, high, p_value,
n``), every metric with a seeded 95% percentile bootstrap interval (the paper gives standard errors for R and
p-values only):

- R: ``MRR`` and ``NDCG`` (questions resampled);
- L, F: ``t``, Student's t of the negatives' minus the positives' mean distance (the paper's ``ttest_ind``; positive
  when related pairs are closer), ``d``, the same difference over the pooled standard deviation (Cohen's d, which
  equals ``t * sqrt(1/n+ + 1/n-)``: t grows with the square root of the sample size and our test sets are
  hundreds of pairs where the paper's are thousands, so **compare d, not t**), and ``distance+``/``distance-``,
  the mean distances of Tables 4 and 5;
- H, U: ``r``, Pearson's r between the target *read as a distance* and the embedding distance (a similarity
  target is negated, so r > 0 means "closer in the code, closer in the embedding" for both tasks, the paper's sign).

:data:`PAPER_BLANCA` holds the paper's numbers for two reference rows (Tables 3-7): USE, its strongest encoder
without fine-tuning, and the best fine-tuned model of each task; their ``d`` is derived from the printed t and
the test sizes of Table 2.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from asc.errors import InputError
from probes.blanca.embed import cosine_distance, embed_texts
from probes.blanca.items import BLANCA_TASKS, DEFAULT_TARGET, BlancaItem, PairItem, RankItem, ScoredPairItem
from probes.blanca.metrics import bootstrap_interval, ndcg, pearson, reciprocal_rank, t_test

if TYPE_CHECKING:
    from asc.models import ModelBundle

__all__ = ["PAPER_BLANCA", "SCORE_COLUMNS", "SUMMARY_COLUMNS", "blanca_table", "item_texts", "score_task",
           "summarize"]

SCORE_COLUMNS = ("model", "task", "id", "split", "row", "distance", "target", "name_a", "name_b", "group")
SUMMARY_COLUMNS = ("model", "task", "metric", "value", "low", "high", "p_value", "n")
_TABLE_METRICS = (("R", "MRR"), ("R", "NDCG"), ("L", "distance+"), ("L", "distance-"), ("L", "t"), ("L", "d"),
                  ("F", "distance+"), ("F", "distance-"), ("F", "t"), ("F", "d"), ("H", "r"), ("U", "r"))

_L_D, _F_D = math.sqrt(2 / 2727), math.sqrt(1 / 295 + 1 / 980)  # Table 2's test sizes: t -> d
PAPER_BLANCA: dict[str, dict[tuple[str, str], float]] = {
    "paper: USE": {("R", "MRR"): 0.6114, ("R", "NDCG"): 0.8483, ("L", "distance+"): 0.34, ("L", "distance-"): 0.74,
                   ("L", "t"): 142.04, ("L", "d"): 142.04 * _L_D, ("F", "distance+"): 0.53, ("F", "distance-"): 0.74,
                   ("F", "t"): 20.67, ("F", "d"): 20.67 * _F_D, ("H", "r"): 0.28, ("U", "r"): 0.41},
    "paper: best fine-tuned": {("R", "MRR"): 0.6879, ("R", "NDCG"): 0.8893, ("L", "distance+"): 0.08,
                               ("L", "distance-"): 0.58, ("L", "t"): 198.10, ("L", "d"): 198.10 * _L_D,
                               ("F", "distance+"): 0.11, ("F", "distance-"): 0.66, ("F", "t"): 53.98,
                               ("F", "d"): 53.98 * _F_D, ("H", "r"): 0.34, ("U", "r"): 0.61},
}


def item_texts(items: Sequence[BlancaItem]) -> list[str]:
    """Every distinct text of ``items``, in first-seen order (what one embedding pass needs)."""
    seen: dict[str, None] = {}
    for it in items:
        for text in ((it.question, *it.answers) if isinstance(it, RankItem) else (it.text_a, it.text_b)):
            seen.setdefault(text, None)
    return list(seen)


def score_task(bundle: ModelBundle, task: str, items: Sequence[BlancaItem], *, model: str | None = None,
               cache: str | None = None, on_progress: Callable[[int, int], None] | None = None,
               should_stop: Callable[[], bool] | None = None) -> pd.DataFrame:
    """The scores table of one task under ``bundle`` (labelled ``model``, the bundle's name by default)."""
    if not items:
        raise InputError(f"task {task} has no items: build the task set or check its file")
    texts = item_texts(items)
    vectors = embed_texts(bundle, texts, cache, on_progress=on_progress, should_stop=should_stop)
    return score_with(vectors, texts, task, items, model or bundle.name)


def score_with(vectors: np.ndarray, texts: Sequence[str], task: str, items: Sequence[BlancaItem],
               model: str) -> pd.DataFrame:
    """The scores table from precomputed ``vectors`` (row i embeds ``texts[i]``)."""
    index = {t: i for i, t in enumerate(texts)}
    left, right, rows = [], [], []
    for it in items:
        if it.task != task:
            raise InputError(f"item {it.id!r} is a {it.task} item in the {task} task")
        if isinstance(it, RankItem):
            for k, (answer, grade) in enumerate(zip(it.answers, it.grades)):
                left.append(index[it.question])
                right.append(index[answer])
                rows.append((it.id, it.split, k, float(grade), "", "", ""))
        elif isinstance(it, PairItem):
            left.append(index[it.text_a])
            right.append(index[it.text_b])
            rows.append((it.id, it.split, 0, 1.0 if it.positive else 0.0, it.name_a, it.name_b, it.group))
        elif isinstance(it, ScoredPairItem):
            left.append(index[it.text_a])
            right.append(index[it.text_b])
            rows.append((it.id, it.split, 0, float(it.target), it.name_a, it.name_b, ""))
    distance = cosine_distance(vectors[left], vectors[right])
    frame = pd.DataFrame(rows, columns=["id", "split", "row", "target", "name_a", "name_b", "group"])
    frame.insert(0, "task", task)
    frame.insert(0, "model", model)
    frame.insert(5, "distance", distance)
    return frame[list(SCORE_COLUMNS)]


def _row(model: str, task: str, metric: str, value: float, low: float, high: float, p: float, n: int) -> dict:
    return dict(zip(SUMMARY_COLUMNS, (model, task, metric, float(value), float(low), float(high), float(p), int(n))))


def _cohen_d(pos: np.ndarray, neg: np.ndarray) -> float:
    n1, n2 = len(pos), len(neg)
    pooled = math.sqrt(((n1 - 1) * pos.var(ddof=1) + (n2 - 1) * neg.var(ddof=1)) / (n1 + n2 - 2))
    return float((neg.mean() - pos.mean()) / pooled) if pooled > 0 else math.nan


def _summarize_one(model: str, task: str, frame: pd.DataFrame, kind: str, seed: int, n_boot: int,
                   equal_var: bool) -> list[dict]:
    if task == "R":
        groups = [g for _, g in frame.sort_values(["id", "row"]).groupby("id", sort=True)]
        rr = np.array([reciprocal_rank(-g["distance"].to_numpy(), g["target"].to_numpy()) for g in groups])
        nd = np.array([ndcg(-g["distance"].to_numpy(), g["target"].to_numpy()) for g in groups])
        out = []
        for name, values in (("MRR", rr), ("NDCG", nd)):
            iv = bootstrap_interval(np.mean, [values.tolist()], n_boot=n_boot, seed=seed)
            out.append(_row(model, task, name, iv.estimate, iv.low, iv.high, math.nan, len(values)))
        return out
    if task in ("L", "F"):
        pos = frame.loc[frame["target"] > 0, "distance"].to_numpy()
        neg = frame.loc[frame["target"] <= 0, "distance"].to_numpy()
        test = t_test(pos, neg, equal_var=equal_var)
        n = len(pos) + len(neg)
        samples = [pos.tolist(), neg.tolist()]
        t_iv = bootstrap_interval(lambda a, b: t_test(a, b, equal_var).t, samples, n_boot=n_boot, seed=seed)
        d_iv = bootstrap_interval(_cohen_d, samples, n_boot=n_boot, seed=seed)
        p_iv = bootstrap_interval(np.mean, samples[:1], n_boot=n_boot, seed=seed)
        n_iv = bootstrap_interval(np.mean, samples[1:], n_boot=n_boot, seed=seed)
        return [_row(model, task, "t", test.t, t_iv.low, t_iv.high, test.p, n),
                _row(model, task, "d", d_iv.estimate, d_iv.low, d_iv.high, test.p, n),
                _row(model, task, "distance+", p_iv.estimate, p_iv.low, p_iv.high, math.nan, len(pos)),
                _row(model, task, "distance-", n_iv.estimate, n_iv.low, n_iv.high, math.nan, len(neg))]
    x = frame["target"].to_numpy(dtype=float)
    x = -x if kind == "similarity" else x
    y = frame["distance"].to_numpy()
    corr = pearson(x, y)
    iv = bootstrap_interval(lambda a, b: pearson(a, b).r, [x.tolist(), y.tolist()], n_boot=n_boot, seed=seed,
                            paired=True)
    return [_row(model, task, "r", corr.r, iv.low, iv.high, corr.p, corr.n)]


def summarize(scores: pd.DataFrame, split: str = "test", *, targets: Mapping[str, str] | None = None, seed: int = 0,
              n_boot: int = 1000, equal_var: bool = True) -> pd.DataFrame:
    """The summary table (:data:`SUMMARY_COLUMNS`) of every (model, task) in ``scores`` on ``split`` (``test``,
    ``train`` or ``all``). ``targets`` maps H/U to ``distance`` or ``similarity`` (the task files' headers)."""
    if split not in ("test", "train", "all"):
        raise InputError(f"split {split!r}: choose test, train or all")
    kinds = {**DEFAULT_TARGET, **(targets or {})}
    chosen = scores if split == "all" else scores[scores["split"] == split]
    out: list[dict] = []
    for (model, task), frame in chosen.groupby(["model", "task"], sort=False):
        try:
            out += _summarize_one(str(model), str(task), frame, kinds.get(str(task), ""), seed, n_boot, equal_var)
        except InputError:  # too few items on this split for the statistic: leave the cell empty
            continue
    frame = pd.DataFrame(out, columns=list(SUMMARY_COLUMNS))
    order = {t: i for i, t in enumerate(BLANCA_TASKS)}
    return frame.sort_values(["model", "task"], key=lambda s: s.map(order) if s.name == "task" else s,
                             kind="stable").reset_index(drop=True)


def blanca_table(summary: pd.DataFrame, paper: bool = True) -> pd.DataFrame:
    """Models x metrics in the paper's layout (R MRR, R NDCG, L/F distances, t and d, H r, U r), the paper's two
    reference rows under ours when ``paper``; empty cells where a task was not run."""
    wide = summary.pivot_table(index="model", columns=["task", "metric"], values="value", aggfunc="first", sort=False)
    columns = [c for c in _TABLE_METRICS if c in wide.columns or paper]
    rows = [{"model": m, **{f"{t} {k}": wide.loc[m, (t, k)] if (t, k) in wide.columns else math.nan
                            for t, k in columns}} for m in wide.index]
    if paper:
        rows += [{"model": name, **{f"{t} {k}": values.get((t, k), math.nan) for t, k in columns}}
                 for name, values in PAPER_BLANCA.items()]
    return pd.DataFrame(rows, columns=["model", *[f"{t} {k}" for t, k in columns]])
