"""What the Benchmark tasks (glueCode) page shows beside the accuracy table: one item with its answer in place,
its candidates with their scores, per-class confusion, the most frequent mistakes, accuracy by context level.

Everything here is computed from items and predictions (:mod:`probes.gluecode.items`,
:class:`~probes.gluecode.zeroshot.Prediction`); the figures are :mod:`probes.gluecode.figures`.

- :func:`answered` puts the answer where the item masks it, so the function can be explained with AsC-Eval and
  drawn with AsC-Viz like any snippet, and says where the answer stands (character spans). NPATH masks nothing
  (the span is the whole function); NULL shows the function without its question line, the span being the
  flagged token (none for a "no warning" item).
- :func:`candidate_table`: a ranked item's candidates with their log-likelihoods and their share of the
  probability mass among the candidates (a softmax over the log-likelihoods; the model never saw them as a
  choice, so this is a reading aid, not a calibrated probability).
- :func:`confusion`: counts of (true class, predicted class) for the classification tasks. NULL is read as
  "is there a warning, and which token": true class *a token* or *no warning*; predicted *the flagged token*,
  *another token* or *no warning*.
- :func:`mistakes`: the most frequent wrong (label, prediction) pairs, for every task (NAME and CALL have too
  many classes for a matrix).
- :func:`context_frame`: the long table behind "accuracy by context level": the main metric of every model,
  task and level with its interval, beside the trivial baseline of the task.
- :func:`levels_answered`, :func:`scored_answers`, :func:`item_answers`: the predictions the page's pickers
  offer (the levels a model answered a task at; the answers a confusion matrix counts; an item list filtered by
  right and wrong).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from asc.errors import InputError
from probes.gluecode.items import CONTEXTS, MASK, NO_WARNING, NPATH_BUCKETS, OPERATORS, TASKS, Item
from probes.gluecode.nulltoken import NULL_PROMPT

__all__ = ["CONFUSION_TASKS", "MAIN_METRIC", "SHOWN", "Answered", "answered", "candidate_table", "confusion",
           "context_frame", "item_answers", "levels_answered", "mistakes", "scored_answers"]

CONFUSION_TASKS = ("NPATH", "OPS", "NULL")  # tasks with a small fixed set of classes
MAIN_METRIC = {"NPATH": "accuracy", "OPS": "accuracy", "NAME": "char-BLEU", "CALL": "accuracy", "NULL": "accuracy"}
SHOWN = ("all", "wrong", "right")  # the item list's filter
_NULL_TRUE = ("a token", NO_WARNING)
_NULL_PRED = ("the flagged token", "another token", NO_WARNING)


@dataclass(frozen=True)
class Answered:
    """An item's function with the answer where the mask was: ``text``, and ``spans`` (character offsets
    ``(start, end)`` of every place the answer stands, in text order; empty when there is none)."""

    text: str
    spans: tuple[tuple[int, int], ...]


def _fill(text: str, answer: str) -> Answered:
    parts = text.split(MASK)
    out, spans, pos = [parts[0]], [], len(parts[0])
    for part in parts[1:]:
        spans.append((pos, pos + len(answer)))
        out += [answer, part]
        pos += len(answer) + len(part)
    return Answered("".join(out), tuple(spans))


def answered(item: Item) -> Answered:
    """The item's function with its label in place of :data:`~probes.gluecode.items.MASK` (see the module
    docstring for NPATH and NULL)."""
    if item.task == "NPATH":
        body = len(item.function.rstrip())  # the function's own node, not the module around it
        return Answered(item.function, ((0, body),) if body else ())
    if item.task == "NULL":
        cut = item.function.rfind(NULL_PROMPT)
        text = item.function[:cut] if cut >= 0 else item.function.replace(MASK, "")
        start, end = item.meta.get("start"), item.meta.get("end")
        if item.label == NO_WARNING or not isinstance(start, int) or not isinstance(end, int):
            return Answered(text, ())
        if not (0 <= start < end <= len(text) and text[start:end] == item.label):
            raise InputError(f"{item.id}: meta start/end ({start}, {end}) do not point at {item.label!r} in the "
                             "function; rebuild the task set")
        return Answered(text, ((start, end),))
    return _fill(item.function, item.label)


def candidate_table(candidates: Sequence[str], logliks: Sequence[float], label: str, prediction: str) -> pd.DataFrame:
    """One row per candidate, best first: ``candidate``, ``loglik`` (nats), ``share`` (softmax over the
    candidates), ``is_label``, ``is_prediction``. Empty for generated answers (no candidates)."""
    if len(candidates) != len(logliks):
        raise InputError(f"{len(candidates)} candidates but {len(logliks)} log-likelihoods")
    ll = np.asarray(logliks, dtype=np.float64)
    share = np.exp(ll - ll.max()) if len(ll) else ll
    share = share / share.sum() if len(ll) else share
    frame = pd.DataFrame({"candidate": list(candidates), "loglik": ll, "share": share,
                          "is_label": [c == label for c in candidates],
                          "is_prediction": [c == prediction for c in candidates]})
    return frame.sort_values("loglik", ascending=False, kind="stable").reset_index(drop=True)


def _classes(task: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if task == "NPATH":
        return NPATH_BUCKETS, NPATH_BUCKETS
    if task == "OPS":
        return OPERATORS, OPERATORS
    if task == "NULL":
        return _NULL_TRUE, _NULL_PRED
    raise InputError(f"confusion: task {task!r} has no fixed classes; choose one of {', '.join(CONFUSION_TASKS)}")


def _null_classes(label: str, prediction: str) -> tuple[str, str]:
    true = NO_WARNING if label == NO_WARNING else "a token"
    if prediction == NO_WARNING:
        return true, NO_WARNING
    return true, "the flagged token" if prediction == label else "another token"


def confusion(predictions: Iterable, task: str, parses: bool = False) -> pd.DataFrame:
    """Counts of (true class, predicted class) of ``predictions`` of one ``task`` (rows: true, columns:
    predicted, every class shown even when empty). ``parses``: OPS's answer among the operators that keep the
    function parseable (``parses_prediction``) instead of its answer among all 12."""
    rows, cols = _classes(task)
    table = pd.DataFrame(0, index=pd.Index(rows, name="true"), columns=pd.Index(cols, name="predicted"))
    for p in predictions:
        if p.task != task:
            continue
        guess = p.parses_prediction if parses and task == "OPS" else p.prediction
        true, pred = _null_classes(p.label, guess) if task == "NULL" else (p.label, guess)
        if true in table.index and pred in table.columns:
            table.loc[true, pred] += 1
    return table


def mistakes(predictions: Iterable, k: int = 15) -> pd.DataFrame:
    """The ``k`` most frequent wrong answers: ``label``, ``prediction``, ``count`` (ties by label, prediction)."""
    counts = Counter((p.label, p.prediction) for p in predictions if not p.correct)
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
    return pd.DataFrame([{"label": a, "prediction": b, "count": n} for (a, b), n in top],
                        columns=["label", "prediction", "count"])


def context_frame(accuracy: pd.DataFrame, baselines: pd.DataFrame | None = None) -> pd.DataFrame:
    """The main metric (:data:`MAIN_METRIC`; NAME: char-BLEU of the generated name) per model, task and context
    level, in task and level order, with ``baseline``: the task's trivial baseline (NaN without one)."""
    keep = accuracy[accuracy.apply(lambda r: r["metric"] == MAIN_METRIC.get(r["task"]) and (
        r["task"] != "NAME" or r["mode"] == "generate"), axis=1)] if len(accuracy) else accuracy
    frame = keep[["model", "task", "context", "n", "value", "ci_low", "ci_high"]].copy()
    base = {}
    if baselines is not None and len(baselines):
        for task, metric in MAIN_METRIC.items():
            row = baselines[(baselines["task"] == task) & (baselines["metric"] == metric)]
            if len(row):
                base[task] = float(row["value"].iloc[0])
    frame["baseline"] = [base.get(t, float("nan")) for t in frame["task"]]
    frame["_t"] = [TASKS.index(t) if t in TASKS else 99 for t in frame["task"]]
    frame["_c"] = [CONTEXTS.index(c) if c in CONTEXTS else 99 for c in frame["context"]]
    return frame.sort_values(["model", "_t", "_c"], kind="stable").drop(columns=["_t", "_c"]).reset_index(drop=True)


def levels_answered(predictions: Iterable, model: str, task: str) -> list[str]:
    """The context levels (in :data:`CONTEXTS` order) at which ``model`` answered ``task``."""
    found = {p.context for p in predictions if p.model == model and p.task == task}
    return [c for c in CONTEXTS if c in found]


def scored_answers(predictions: Iterable, model: str, task: str, level: str) -> list:
    """The answers of ``model`` to ``task`` at ``level`` that the metrics count (a confusion matrix, the most
    frequent mistakes): answered (not skipped) and, for NAME, generated (its ranked answers are another mode)."""
    return [p for p in predictions if p.model == model and p.task == task and p.context == level
            and (task != "NAME" or p.mode == "generate") and not p.skipped]


def item_answers(predictions: Iterable, model: str, task: str, level: str, item_ids: Iterable[str],
                 which: str = "all") -> list:
    """The answers of ``model`` to ``task`` at ``level`` for the items ``item_ids`` (every mode, skipped ones too),
    ``which`` (:data:`SHOWN`): all of them, the wrong ones or the right ones."""
    if which not in SHOWN:
        raise InputError(f"show {which!r}? choose one of {', '.join(SHOWN)}")
    ids = set(item_ids)
    return [p for p in predictions if p.model == model and p.task == task and p.context == level
            and p.item_id in ids and (which == "all" or p.correct == (which == "right"))]
