"""Zero-shot evaluation of glueCode items with a decoder: predictions, the accuracy table, trivial baselines.

:func:`predict` answers every item at one context level (:meth:`Item.context`) with a causal LM:

- **Ranked tasks** (likelihood of each candidate in place, :func:`probes.gluecode.likelihood.rank_texts`;
  the shared prefix runs once):

  - OPS: :data:`MASK` replaced by each operator; the log-likelihood of the whole text. Also the best operator
    among those that keep the function parseable (``meta["parses"]``, else checked with :mod:`ast`), since in
    Python ``=`` cannot stand where a comparison stands.
  - NAME (mode ``rank``): every :data:`MASK` replaced by each candidate name; the whole text.
  - NULL: each candidate (the function's tokens, and :data:`NO_WARNING`, shown to the model as
    :data:`NULL_NONE_TEXT`) in place of :data:`MASK`, scored up to the end of the MASK's line (the question
    line the item builder writes).
  - NPATH: ``prompt + bucket + "\\n"`` for each of the 12 buckets, the prompt being the function followed by
    :data:`NPATH_QUESTION` (the newline stops a short label from winning as a prefix of a longer one). This is a
    weak zero-shot formulation: a small LM has rarely seen NPath values next to code, and labels of more tokens
    start with a likelihood handicap. The other formulation, a linear probe over layer features, is run by the
    probes pipeline.

- **Generated tasks** (greedy, the leading identifier, :func:`probes.gluecode.likelihood.generate_identifiers`):

  - NAME (mode ``generate``): a body-first prompt, the text with the name replaced by :data:`NAME_PLACEHOLDER`
    followed by :data:`NAME_QUESTION`; scored by character-level BLEU against the label
    (:func:`probes.gluecode.bleu.char_bleu`), exact match reported beside it.
  - CALL: the text before :data:`MASK` (the left context), exact match of the generated name.

  Above the function level the NPATH and NAME prompts repeat the function after the context, right before the
  question, so that "the function above" is the item's. The NAME question does not name the placeholder: on 11
  hand-made functions SmolLM2 copied ``___`` when it did (mean char-BLEU 0.27 against 0.51 without).

Long contexts are cut to the window from the far end (the start of prompts) and the cut is recorded per
prediction. :func:`accuracy_table` gives per task, mode and context the metric with a seeded bootstrap 95%
interval; :func:`baselines` the trivial predictors (majority class, most frequent operator / name / call,
always :data:`NO_WARNING`) fitted on the dev split and scored on test.

Cost (SmolLM2-135M, CPU, 2 cores, algorithms items at the function level, measured with the machine quiet; a bare
forward pass of a ~170-token function takes ~0.25 s): NPATH 0.56 s per item (260 tokens run, 2x a bare pass of the
text), OPS 1.2 s (717 tokens, 4.1x the text's tokens: every candidate runs from the mask to the end), NAME
generation 0.48 s, NAME ranking 2.9 s (1,621 tokens: the mask is on the first line, so nothing is shared), CALL
0.33 s, NULL 0.54 s. Without the prefix cache OPS runs 2,082 tokens in 3.3 s. The ``line`` scope brings OPS to
204 tokens, 0.42 s (about one forward pass), and on 60 items it was as accurate (68% vs 62% for the whole text, a
difference well inside the +-12-point 95% intervals); the whole text stays the default because it is the issue's
definition. At the file
level (contexts up to the 2,048-token window) the costs grow with the context: OPS 1,929 tokens per item, NAME
ranking 3,351.

Departures from the paper: the paper fine-tunes its models (MLP ... CodeBERTa) on a train split; here decoder
LMs answer zero-shot, by likelihood ranking or greedy generation, so nothing is trained. Completion is
left-to-right (the paper's masked formulation also sees the right context). NAME is scored both by generation
(the paper's metric) and by ranking given candidates (an easier, multiple-choice variant).
"""

from __future__ import annotations

import ast
import textwrap
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from asc.errors import InputError
from asc.models import ModelBundle
from asc.resampling import percentile_bootstrap
from probes.gluecode.items import CONTEXTS, MASK, NO_WARNING, NPATH_BUCKETS, OPERATORS, TASKS, Item, by_split
from probes.gluecode.likelihood import (
    DEFAULT_BATCH_TOKENS,
    DEFAULT_MAX_WINDOW,
    generate_identifiers,
    rank_texts,
)

__all__ = ["NAME_MODES", "NAME_PLACEHOLDER", "NAME_QUESTION", "NPATH_QUESTION", "NULL_NONE_TEXT", "SCOPES",
           "Prediction", "accuracy_table", "baselines", "predict", "predictions_frame"]

NPATH_QUESTION = "\n# NPath complexity (number of acyclic execution paths): "
NAME_PLACEHOLDER = "___"  # the masked name as the model sees it in a NAME prompt
NAME_QUESTION = "\n\n# A descriptive name for the function above:\ndef "
NULL_NONE_TEXT = "nothing"  # how NO_WARNING reads in a NULL text
NAME_MODES = ("generate", "rank")
SCOPES = ("text", "line")  # ranked text scored to its end, or to the end of the MASK's line
DEFAULT_SCOPE = {"OPS": "text", "NAME": "text", "NULL": "line", "NPATH": "text"}
TABLE_COLUMNS = ["model", "task", "mode", "context", "metric", "n", "skipped", "value", "ci_low", "ci_high"]


@dataclass(frozen=True)
class Prediction:
    """A model's answer to one item at one context level.

    ``score`` is 1.0/0.0 (exact match) except for NAME generation, where it is the char-BLEU. ``logliks`` holds a
    log-likelihood per candidate (nats; only differences between candidates mean something) and is empty for
    generated answers. ``cut_tokens`` were cut from the far end to fit the window of ``n_context_tokens``;
    ``forward_tokens`` is what the model ran (the cost). ``parses_prediction``: OPS only, the best operator among
    those that keep the function parseable. ``kind``: CALL only, ``api`` or ``local``. For generated answers
    ``forward_tokens`` counts the prompt's tokens (generation adds at most ``max_new_tokens`` cached steps) and
    ``seconds`` is the time of the batch the item ran in divided by its size. ``skipped``: why the item could not
    be answered at this level (e.g. its candidates differ over more tokens than the window holds: a name masked
    at both ends of a long file); such predictions are kept, so a resumed run does not retry them, and left out of
    every metric (:func:`accuracy_table` counts them).
    """

    item_id: str
    task: str
    mode: str  # "rank" | "generate"
    context: str
    model: str
    label: str
    prediction: str
    correct: bool
    score: float
    candidates: tuple[str, ...] = ()
    logliks: tuple[float, ...] = ()
    n_context_tokens: int = 0
    cut_tokens: int = 0
    forward_tokens: int = 0
    seconds: float = 0.0
    parses_prediction: str = ""
    kind: str = ""
    skipped: str = ""


# ------------------------------------------------------------------------------------------------- texts


def _text(item: Item, level: str, need_mask: bool = True) -> str:
    text = item.context(level)
    if need_mask and MASK not in text:
        raise InputError(f"item {item.id} ({item.task}): its {level} text has no {MASK}; rebuild the task file "
                         "so that every context level masks the target")
    return text


def _line_end(text: str, at: int) -> int:
    """The index just past the newline that ends the line holding character ``at`` (``len(text)`` at the end)."""
    end = text.find("\n", at)
    return len(text) if end < 0 else end + 1


def _with_function_last(item: Item, level: str, need_mask: bool) -> str:
    """The context text; above the function level the function follows it again, right before the question
    (so that "the function above" is the item's function)."""
    text = _text(item, level, need_mask)
    if text != item.function:
        text = f"{text.rstrip()}\n\n\n{item.function}"
    return text.rstrip()


def _npath_prompt(item: Item, level: str) -> str:
    return _with_function_last(item, level, need_mask=False) + NPATH_QUESTION


def _name_prompt(item: Item, level: str) -> str:
    return _with_function_last(item, level, need_mask=True).replace(MASK, NAME_PLACEHOLDER) + NAME_QUESTION


def _call_prompt(item: Item, level: str) -> str:
    return _text(item, level).split(MASK, 1)[0]


def _head(item: Item, level: str) -> int:
    """Characters at the start of the item's text at ``level`` that a cut to the window keeps: the call-graph
    stubs (and the blank lines after them) of a ``callgraph`` context, which opens with them."""
    return len(item.callgraph) + 2 if level == "callgraph" and item.callgraph else 0


def _still_parses(item: Item, candidates: Sequence[str]) -> tuple[str, ...]:
    """The operators of ``meta["parses"]``, else those with which the dedented function parses (all when even the
    label does not: the function is a fragment :mod:`ast` cannot judge)."""
    given = item.meta.get("parses")
    if isinstance(given, list | tuple) and given:
        return tuple(c for c in candidates if c in given)
    base = textwrap.dedent(item.function)

    def ok(op: str) -> bool:
        try:
            ast.parse(base.replace(MASK, op))
            return True
        except SyntaxError:
            return False

    keep = tuple(c for c in candidates if ok(c))
    return keep if item.label in keep else tuple(candidates)


def _ranked_texts(item: Item, level: str, scope: str) -> tuple[tuple[str, ...], list[str], list[int] | None]:
    """The candidates of a ranked item, the text to score for each and, for the ``line`` scope, where scoring ends
    in each text (the end of the line that holds the candidate)."""
    if item.task == "NPATH":
        cands = item.candidates or NPATH_BUCKETS
        prompt = _npath_prompt(item, level)
        return tuple(cands), [f"{prompt}{c}\n" for c in cands], None
    cands = item.candidates or (OPERATORS if item.task == "OPS" else ())
    if not cands:
        raise InputError(f"item {item.id} ({item.task}) has no candidates to rank: build {item.task} items with "
                         "candidates" + (", or pass name_modes=('generate',)" if item.task == "NAME" else ""))
    text = _text(item, level)
    shown = [NULL_NONE_TEXT if c == NO_WARNING else c for c in cands]
    texts = [text.replace(MASK, c) for c in shown]
    at = text.index(MASK)
    ends = [_line_end(t, at + len(c)) for t, c in zip(texts, shown)] if scope == "line" else None
    return tuple(cands), texts, ends


# ------------------------------------------------------------------------------------------------- predict


def _jobs(items: Sequence[Item], name_modes: Sequence[str]) -> list[tuple[Item, str]]:
    jobs = []
    for item in items:
        if item.task == "NAME":
            jobs += [(item, m) for m in NAME_MODES if m in name_modes]
        elif item.task == "CALL":
            jobs.append((item, "generate"))
        else:
            jobs.append((item, "rank"))
    return jobs


def _char_bleu(prediction: str, label: str) -> float:
    from probes.gluecode.bleu import char_bleu  # written beside this module; imported when first needed

    return float(char_bleu(prediction, label))


def predict(bundle: ModelBundle, items: Sequence[Item], context: str = "function", *,
            batch_tokens: int = DEFAULT_BATCH_TOKENS, max_window: int = DEFAULT_MAX_WINDOW,
            name_modes: Sequence[str] = NAME_MODES, scope: Mapping[str, str] | None = None,
            prefix_cache: bool = True, max_new_tokens: int = 16,
            on_progress: Callable[[int, int], None] | None = None) -> list[Prediction]:
    """Answer ``items`` zero-shot with ``bundle`` at context level ``context`` (see module doc).

    NAME items give one prediction per mode in ``name_modes``; every other item one. Predictions come in item
    order. ``batch_tokens`` bounds one forward call (rows x (cached prefix + longest row)); ``max_window`` caps
    the model's context; ``scope`` overrides :data:`DEFAULT_SCOPE` per ranked task (``"text"``: score to the end
    of the text, ``"line"``: to the end of the MASK's line, cheaper); ``prefix_cache=False`` runs every
    candidate's whole text (same numbers, slower). ``on_progress(done, total)`` is called as predictions finish.
    Forward passes run under ``bundle.lock`` in ``torch.inference_mode`` on the model's device.
    """
    import torch

    bundle.require_causal("next-token probabilities to rank and generate answers with")
    if context not in CONTEXTS:
        raise InputError(f"context {context!r}: choose one of {', '.join(CONTEXTS)}")
    if batch_tokens < 1:
        raise InputError(f"batch_tokens={batch_tokens}: give at least 1 (default {DEFAULT_BATCH_TOKENS})")
    bad = [m for m in name_modes if m not in NAME_MODES]
    if bad or not name_modes:
        raise InputError(f"name_modes {list(name_modes)!r}: choose among {', '.join(NAME_MODES)}")
    scopes = {**DEFAULT_SCOPE, **(scope or {})}
    wrong = {k: v for k, v in scopes.items() if k not in DEFAULT_SCOPE or v not in SCOPES}
    if wrong:
        raise InputError(f"scope {wrong}: give {{task: 'text' | 'line'}} for tasks {', '.join(DEFAULT_SCOPE)}")
    for item in items:
        if item.task not in TASKS:
            raise InputError(f"item {item.id}: task {item.task!r} is not one of {', '.join(TASKS)}")
    jobs = _jobs(items, name_modes)
    total, done = len(jobs), 0
    out: dict[int, Prediction] = {}
    model = bundle.name

    def tick() -> None:
        nonlocal done
        done += 1
        if on_progress is not None:
            on_progress(done, total)

    gen_jobs = [(j, item) for j, (item, mode) in enumerate(jobs) if mode == "generate"]
    for j, (item, mode) in enumerate(jobs):
        if mode != "rank":
            continue
        cands, texts, ends = _ranked_texts(item, context, scopes.get(item.task, "text"))
        start = time.perf_counter()
        try:
            with bundle.lock, torch.inference_mode():
                ranked = rank_texts(bundle, texts, ends=ends, max_window=max_window, batch_tokens=batch_tokens,
                                    prefix_cache=prefix_cache, head_chars=_head(item, context))
        except InputError as err:  # this item does not fit the window: recorded, left out of the metrics
            out[j] = Prediction(item.id, item.task, "rank", context, model, item.label, "", False, 0.0, cands,
                                skipped=str(err))
            tick()
            continue
        seconds = time.perf_counter() - start
        best = cands[int(np.argmax(ranked.logliks))]
        parses = ""
        if item.task == "OPS":
            allowed = set(_still_parses(item, cands))
            parses = max((c for c in cands if c in allowed), key=lambda c: ranked.logliks[cands.index(c)])
        out[j] = Prediction(item.id, item.task, "rank", context, model, item.label, best, best == item.label,
                            float(best == item.label), cands, ranked.logliks, ranked.n_tokens, ranked.cut_tokens,
                            ranked.forward_tokens, seconds, parses_prediction=parses)
        tick()
    if gen_jobs:
        prompts = [_name_prompt(item, context) if item.task == "NAME" else _call_prompt(item, context)
                   for _, item in gen_jobs]
        step = max(1, batch_tokens // 64)  # chunks of prompts, so that progress moves on long runs
        for lo in range(0, len(prompts), step):
            start = time.perf_counter()
            with bundle.lock, torch.inference_mode():
                got = generate_identifiers(bundle, prompts[lo: lo + step], max_new_tokens=max_new_tokens,
                                           max_window=max_window, batch_tokens=batch_tokens,
                                           head_chars=[_head(item, context) for _, item in gen_jobs[lo: lo + step]])
            seconds = (time.perf_counter() - start) / max(1, len(got))
            for (j, item), gen in zip(gen_jobs[lo: lo + step], got):
                pred = gen.identifier
                exact = pred == item.label
                score = _char_bleu(pred, item.label) if item.task == "NAME" else float(exact)
                out[j] = Prediction(item.id, item.task, "generate", context, model, item.label, pred, exact, score,
                                    n_context_tokens=gen.n_tokens, cut_tokens=gen.cut_tokens,
                                    forward_tokens=gen.n_tokens - gen.cut_tokens, seconds=seconds,
                                    kind=str(item.meta.get("kind", "")) if item.task == "CALL" else "")
                tick()
    return [out[j] for j in range(total)]


def predictions_frame(predictions: Iterable[Prediction]) -> pd.DataFrame:
    """One row per prediction, the fields of :class:`Prediction` as columns."""
    from dataclasses import asdict

    rows = [asdict(p) for p in predictions]
    return pd.DataFrame(rows, columns=list(Prediction.__dataclass_fields__))


# ------------------------------------------------------------------------------------------------- tables


def _interval(values: np.ndarray, n_boot: int, seed: int) -> tuple[float, float]:
    """Seeded percentile bootstrap 95% interval of the mean of ``values``."""
    if len(values) == 0:
        return float("nan"), float("nan")
    boot = percentile_bootstrap(lambda x: x.mean(axis=1), [values], n_boot=n_boot, seed=seed, batched=True)
    return boot.low, boot.high


def _row(keys: dict, metric: str, values: Sequence[float], n_boot: int, seed: int, skipped: int = 0) -> dict:
    arr = np.asarray(values, dtype=np.float64)
    lo, hi = _interval(arr, n_boot, seed)
    return {**keys, "metric": metric, "n": int(len(arr)), "skipped": skipped,
            "value": float(arr.mean()) if len(arr) else float("nan"), "ci_low": lo, "ci_high": hi}


def accuracy_table(predictions: Iterable[Prediction], *, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Per model, task, mode and context: ``metric``, ``n``, ``value`` and a seeded bootstrap 95% interval
    (``ci_low``, ``ci_high``). Metrics: ``accuracy``; for NAME generation ``char-BLEU`` and ``exact match``; for
    OPS also ``accuracy (still parses)``; for CALL also ``accuracy (api)`` and ``accuracy (local)`` (where the
    predictions hold that kind). Skipped predictions (:attr:`Prediction.skipped`) are counted in ``skipped`` and
    left out of ``n`` and of the value."""
    groups: dict[tuple[str, str, str, str], list[Prediction]] = {}
    for p in predictions:
        groups.setdefault((p.model, p.task, p.mode, p.context), []).append(p)
    rows = []
    order = {t: i for i, t in enumerate(TASKS)}
    for key in sorted(groups, key=lambda k: (k[0], order.get(k[1], 99), k[2], CONTEXTS.index(k[3])
                                                  if k[3] in CONTEXTS else 99)):
        preds = [p for p in groups[key] if not p.skipped]
        skipped = len(groups[key]) - len(preds)
        keys = dict(zip(("model", "task", "mode", "context"), key))
        exact = [float(p.correct) for p in preds]
        if key[1] == "NAME" and key[2] == "generate":
            rows.append(_row(keys, "char-BLEU", [p.score for p in preds], n_boot, seed, skipped))
            rows.append(_row(keys, "exact match", exact, n_boot, seed, skipped))
            continue
        rows.append(_row(keys, "accuracy", exact, n_boot, seed, skipped))
        if key[1] == "OPS":
            rows.append(_row(keys, "accuracy (still parses)",
                             [float(p.parses_prediction == p.label) for p in preds], n_boot, seed, skipped))
        if key[1] == "CALL":
            for kind in ("api", "local"):
                of_kind = [float(p.correct) for p in preds if p.kind == kind]
                if of_kind:  # a kind with no item gets no row
                    rows.append(_row(keys, f"accuracy ({kind})", of_kind, n_boot, seed))
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


BASELINE_COLUMNS = ["task", "baseline", "prediction", "metric", "n", "value", "ci_low", "ci_high"]
_BASELINE_NAMES = {"NPATH": "majority class", "OPS": "most frequent operator", "NAME": "most frequent name",
                   "CALL": "most frequent call", "NULL": f"always {NO_WARNING}"}


def _most_frequent(labels: Sequence[str]) -> str:
    """The most frequent label, ties broken by the label's text (independent of item order)."""
    counts = Counter(labels)
    return min(counts, key=lambda k: (-counts[k], k))


def baselines(items: Sequence[Item], *, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Trivial baselines per task: the answer that is most frequent on the dev split (always :data:`NO_WARNING`
    for NULL) given to every test item, with the task's metric and a seeded bootstrap 95% interval. A task needs
    items in both splits."""
    rows = []
    for task in TASKS:
        of_task = [it for it in items if it.task == task]
        if not of_task:
            continue
        dev = [it.label for it in by_split(of_task, "dev")]
        test = by_split(of_task, "test")
        if not test or (not dev and task != "NULL"):
            missing = "test" if not test else "dev"
            raise InputError(f"{task}: no {missing} items; the baselines are fitted on dev and scored on test, "
                             "build the task set with both splits")
        guess = NO_WARNING if task == "NULL" else _most_frequent(dev)
        keys = {"task": task, "baseline": _BASELINE_NAMES[task], "prediction": guess}
        exact = [float(it.label == guess) for it in test]
        if task == "NAME":
            rows.append(_row(keys, "char-BLEU", [_char_bleu(guess, it.label) for it in test], n_boot, seed))
            rows.append(_row(keys, "exact match", exact, n_boot, seed))
            continue
        rows.append(_row(keys, "accuracy", exact, n_boot, seed))
        if task == "CALL":
            for kind in ("api", "local"):
                rows.append(_row(keys, f"accuracy ({kind})",
                                 [float(it.label == guess) for it in test if it.meta.get("kind") == kind], n_boot, seed))
    return pd.DataFrame(rows, columns=BASELINE_COLUMNS)
