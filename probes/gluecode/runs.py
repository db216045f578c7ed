"""Resumable glueCode runs: task sets built once, predictions per model x task x context on disk.

A run folder (``--out``, e.g. ``runs/gluecode``) holds, per *task set* (a corpus, a size and a seed, named
``<corpus>-<size>-seed<seed>`` by :func:`set_name`, e.g. ``stdlib-1000-seed0``):

``tasks/<set>/<TASK>.jsonl``               the task set (:mod:`probes.gluecode.items` format), built once (the
                                           header's provenance says how)
``<model>/<set>/<TASK>-<context>.jsonl``   one :class:`~probes.gluecode.zeroshot.Prediction` per line
``<model>/<set>/settings.json``            the settings that change answers (the window), checked on resume

A set is never rebuilt in place, so predictions always answer the items next to them, and sets of several
sizes or seeds live side by side. Predictions are written after every chunk of items, atomically (the whole file rewritten: at most a few
thousand lines); running again skips the items already answered, so a stopped run resumes where it
stopped. :func:`load_predictions` reads every prediction under a folder; :func:`table2` pivots the accuracy
table (:func:`probes.gluecode.zeroshot.accuracy_table`) to the paper's Table 2 layout, one row per model and
context level, with the paper's five trained baselines (:data:`PAPER_TABLE2`) and our trivial ones beside it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from asc.atomic import write_atomic
from asc.errors import InputError
from asc.models import ModelBundle
from probes.gluecode.items import CONTEXTS, TASKS, Item, by_split, load_items, save_items

__all__ = ["PAPER_TABLE2", "build_or_load", "build_task", "gluecode_job", "load_predictions",
           "load_task_sets", "prediction_file", "run_gluecode", "set_name", "settings_file", "table2", "task_file"]

# glueCode Table 2 (Java, models fine-tuned on each task): NPath, Operators, Naming (char-BLEU), Completion,
# NullToken
PAPER_TABLE2 = {
    "MLP": (0.326, 0.357, 0.169, 0.288, 0.344),
    "BiLSTM": (0.372, 0.465, 0.221, 0.480, 0.316),
    "CNN": (0.331, 0.297, 0.194, 0.451, 0.296),
    "Seq2Seq/Seq2Tok": (0.543, 0.368, 0.262, 0.524, 0.228),
    "Transformer (CodeBERTa)": (0.747, 0.782, 0.389, 0.534, 0.239),
}
_CHUNK = 32  # items answered between two writes


def _safe(name: str) -> str:
    """A model or corpus name as a folder name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "unnamed"


def set_name(corpus: str, size: int, seed: int) -> str:
    """The folder name of the task set of ``corpus`` with ``size`` items per task and ``seed``."""
    return f"{_safe(corpus)}-{size}-seed{seed}"


def task_file(out: str | Path, task_set: str, task: str) -> Path:
    return Path(out) / "tasks" / _safe(task_set) / f"{task}.jsonl"


def prediction_file(out: str | Path, model: str, task_set: str, task: str, context: str) -> Path:
    return Path(out) / _safe(model) / _safe(task_set) / f"{task}-{context}.jsonl"


def settings_file(out: str | Path, model: str, task_set: str) -> Path:
    return Path(out) / _safe(model) / _safe(task_set) / "settings.json"


def _check_settings(path: Path, predict_args: dict[str, Any]) -> None:
    """Write the answer-changing settings of a run, or refuse to resume a run made with other ones."""
    from probes.gluecode.likelihood import DEFAULT_MAX_WINDOW

    wanted = {"max_window": int(predict_args.get("max_window", DEFAULT_MAX_WINDOW)),
              "scope": dict(sorted((predict_args.get("scope") or {}).items()))}
    if path.is_file():
        try:
            have = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            have = None
        if have is not None and have != wanted:
            raise InputError(f"{path.parent} holds predictions made with {have}, not {wanted}: use those settings "
                             "(e.g. the same --max-window) or another --out")
        if have == wanted:
            return
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, lambda tmp: tmp.write_text(json.dumps(wanted), encoding="utf-8"))


def _read_predictions(path: Path) -> list[Any]:
    from probes.gluecode.zeroshot import Prediction

    if not path.is_file():
        return []
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            row = json.loads(line)
            row["candidates"], row["logliks"] = tuple(row.get("candidates", ())), tuple(row.get("logliks", ()))
            out.append(Prediction(**row))
        except (json.JSONDecodeError, TypeError) as err:
            raise InputError(f"{path}, line {n}: not a prediction ({err}); delete the file to answer its items "
                             "again") from None
    return out


def _write_predictions(path: Path, predictions: Sequence[Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(asdict(p), ensure_ascii=False) + "\n" for p in predictions)
    write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def run_gluecode(bundle: ModelBundle, items: dict[str, list[Item]], out: str | Path, *, task_set: str,
                 contexts: Sequence[str] = CONTEXTS, split: str = "test",
                 on_progress: Callable[[str, int, int], None] | None = None,
                 should_stop: Callable[[], bool] | None = None, chunk: int | None = None,
                 **predict_args: Any) -> Path:
    """Answer the ``split`` items of every task in ``items`` at every level in ``contexts`` with ``bundle``,
    extending the prediction files under ``out`` (items already answered are skipped). ``on_progress(stage,
    done, total)`` counts the items of each stage (``"OPS file"``: a task at a level), as the other probes'
    runs do; ``should_stop()`` ends the run between chunks of ``chunk`` items (default 32; a GPU answers bigger
    ones faster: generation runs a chunk's prompts as one batch). The settings that change answers (``max_window``,
    ``scope``, ``batch_tokens`` does not) are kept in ``<model>/<task_set>/settings.json``: resuming with others
    is refused, so one prediction file never mixes two windows. ``task_set``: the set's folder name
    (:func:`set_name`; what :func:`build_or_load` returns it under)."""
    from probes.gluecode.zeroshot import predict

    step = _CHUNK if chunk is None else chunk
    if step < 1:
        raise InputError(f"chunk={chunk}: give at least 1 item per chunk (default {_CHUNK})")
    bad = [c for c in contexts if c not in CONTEXTS]
    if bad or not contexts:
        raise InputError(f"contexts {list(contexts)!r}: choose among {', '.join(CONTEXTS)}")
    _check_settings(settings_file(out, bundle.name, task_set), predict_args)
    plan = []  # level by level, local first: a run stopped early has every task at the smaller levels
    for level in contexts:
        for task, task_items in items.items():
            chosen = by_split(task_items, split)
            path = prediction_file(out, bundle.name, task_set, task, level)
            have = _read_predictions(path)
            answered = {p.item_id for p in have}
            plan.append((task, level, path, have, [it for it in chosen if it.id not in answered]))
    for task, level, path, have, todo in plan:
        for lo in range(0, len(todo), step):
            if should_stop is not None and should_stop():
                return Path(out)
            part = todo[lo : lo + step]

            def within(done: int, total: int, lo: int = lo, n: int = len(part), stage: str = f"{task} {level}",
                       of: int = len(todo)) -> None:  # progress inside a chunk (a file-level chunk takes minutes)
                if on_progress is not None and total:
                    on_progress(stage, lo + done * n // total, of)

            have = have + predict(bundle, part, level, on_progress=within, **predict_args)
            _write_predictions(path, have)
            if on_progress is not None:
                on_progress(f"{task} {level}", min(lo + step, len(todo)), len(todo))
    return Path(out)


def load_predictions(out: str | Path, task_set: str | None = None) -> list[Any]:
    """Every prediction under ``out`` (all models, tasks and levels) of one task set (None: of every set; item
    ids do not say their set, so tables should take one at a time)."""
    root = Path(out)
    files = [p for p in root.glob(f"*/{_safe(task_set) if task_set else '*'}/*-*.jsonl") if p.parts[-3] != "tasks"]
    return [p for f in sorted(files) for p in _read_predictions(f)]


def build_task(task: str, corpus: str, size: int, seed: int) -> tuple[list[Item], dict]:
    """Build one task set and its provenance: NULL from the type checker (:mod:`probes.gluecode.nulltoken`),
    the others from the corpus's functions (:mod:`probes.gluecode.build`)."""
    if task == "NULL":
        from probes.gluecode.nulltoken import null_items

        return null_items(corpus, size=size, seed=seed)
    from probes.gluecode.build import build_items, build_provenance

    report: dict = {}
    items = build_items(task, corpus, size=size, seed=seed, report=report)
    return items, build_provenance(task, corpus, items, size=size, seed=seed, report=report)


def build_or_load(out: str | Path, corpus: str, tasks: Sequence[str], size: int, seed: int,
                  builder: Callable[[str, str, int, int], tuple[list[Item], dict]] | None = None
                  ) -> dict[str, list[Item]]:
    """The tasks of the set (``corpus``, ``size``, ``seed``) under ``out`` (``tasks/<set_name>/``): read when
    built, else built with ``builder(task, corpus, size, seed) -> (items, provenance)`` and written. ``builder``
    None: :func:`build_task`, and the missing NPATH, OPS, NAME and CALL are built together from one load of the
    corpus, its files and functions parsed once (:func:`probes.gluecode.build.build_task_sets`: the same items).
    A file whose provenance names another corpus, size or seed (written by hand into the folder) is an error, never
    replaced."""
    from probes.gluecode.build import BUILDABLE, build_task_sets

    wrong = [t for t in tasks if t not in TASKS]
    if wrong:
        raise InputError(f"tasks {', '.join(wrong)}: choose among {', '.join(TASKS)} (or all)")
    out_items = {}
    name = set_name(corpus, size, seed)
    together = [t for t in dict.fromkeys(tasks) if t in BUILDABLE and not task_file(out, name, t).is_file()]
    built = build_task_sets(together, corpus, size, seed) if builder is None and len(together) > 1 else {}
    for task in tasks:
        path = task_file(out, name, task)
        if path.is_file():
            header, items = load_items(path)
            prov = header.get("provenance", {})
            if (prov.get("corpus"), prov.get("size"), prov.get("seed")) != (corpus, size, seed):
                raise InputError(f"{path} was built from corpus {prov.get('corpus')!r}, size {prov.get('size')}, seed "
                                 f"{prov.get('seed')}, not {corpus!r}, {size}, {seed}: move it out of {path.parent}")
            out_items[task] = items
            continue
        items, provenance = built[task] if task in built else (builder or build_task)(task, corpus, size, seed)
        save_items(path, task, items, {**provenance, "corpus": corpus, "size": size, "seed": seed})
        out_items[task] = items
    return out_items


def load_task_sets(out: str | Path) -> dict[str, dict[str, list[Item]]]:
    """Every task set under ``out``: ``{set name: {task: items}}`` (what the predictions answered)."""
    sets: dict[str, dict[str, list[Item]]] = {}
    for path in sorted((Path(out) / "tasks").glob("*/*.jsonl")):
        if path.stem in TASKS:
            sets.setdefault(path.parent.name, {})[path.stem] = load_items(path)[1]
    return sets


def gluecode_job(tasks: Sequence[str], corpus: str, out: str | Path, *, contexts: Sequence[str] = CONTEXTS,
                 size: int = 1000, seed: int = 0, **predict_args: Any
                 ) -> Callable[[ModelBundle, Callable[[str, int, int], None], Callable[[], bool]], None]:
    """A ``call(bundle, on_progress, should_stop)`` for :meth:`asc.jobs.JobQueue.submit_call` (the app's
    background queue): builds or reads the task sets of ``corpus`` under ``out`` (:func:`build_or_load`), then
    answers them (:func:`run_gluecode`), as ``python -m probes gluecode`` does."""
    tasks, contexts = tuple(tasks), tuple(contexts)

    def call(bundle: ModelBundle, on_progress: Callable[[str, int, int], None], should_stop: Callable[[], bool]) -> None:
        on_progress("building tasks", 0, 1)
        items = build_or_load(out, corpus, tasks, size, seed)
        run_gluecode(bundle, items, out, task_set=set_name(corpus, size, seed), contexts=contexts, on_progress=on_progress,
                     should_stop=should_stop, **predict_args)

    return call


def table2(accuracy: Any) -> Any:
    """Table 2's layout from :func:`probes.gluecode.zeroshot.accuracy_table` rows: one row per (model, context),
    a column per task (NAME: the generated name's char-BLEU; OPS: all 12 candidates), then the paper's rows."""
    import pandas as pd

    main = accuracy[(accuracy["metric"].isin(["accuracy", "char-BLEU", "exact match"]))
                    & ((accuracy["task"] != "NAME") | (accuracy["mode"] == "generate"))]
    wide = main.pivot_table(index=["model", "context"], columns="task", values="value", aggfunc="first")
    wide = wide.reindex(columns=[t for t in TASKS if t in wide.columns]).reset_index()
    level = {c: i for i, c in enumerate(CONTEXTS)}  # the paper's order, local to global (not alphabetical)
    wide = wide.sort_values(["model", "context"], key=lambda col: col.map(level) if col.name == "context" else col,
                            kind="stable")
    paper = pd.DataFrame([{"model": f"paper: {name}", "context": "function (Java, fine-tuned)",
                           **dict(zip(TASKS, values))} for name, values in PAPER_TABLE2.items()])
    table = pd.concat([wide, paper], ignore_index=True)
    return table[["model", "context", *[t for t in TASKS if t in table.columns]]]
