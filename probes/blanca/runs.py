"""BLANCA runs: score a task set with one model after another, resumably, and read the results back.

Layout of a run folder ``<out>`` (what ``python -m probes blanca`` and the page write):

- ``tasks/<set>/R.jsonl`` ... ``U.jsonl``: the task set (:mod:`probes.blanca.build`);
- ``scores/<set>/<model_key>/<task>.parquet``: the scores table of one model on one task
  (:data:`probes.blanca.evaluate.SCORE_COLUMNS`), written atomically, so a stopped run resumes at the next task;
- ``scores/<set>/<model_key>/model.json``: the model's label, name, source, pooling and length limit, and the
  fine-tuning provenance when the model is one of ours;
- ``embeddings/``: cached text embeddings (:mod:`probes.blanca.embed`);
- ``finetuned/<name>/``: fine-tuned encoders (:mod:`probes.blanca.finetune`).

A task's parquet records the digest of the task file it scored; a changed file (a user's own data replaced under
the same set name) is scored again rather than mixed with old rows.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from asc.atomic import write_atomic
from asc.errors import InputError
from probes.blanca.build import BlancaTaskSet, build_task_set
from probes.blanca.embed import embedding_settings
from probes.blanca.evaluate import SCORE_COLUMNS, item_texts, score_task
from probes.blanca.finetune import FINETUNE_MANIFEST
from probes.blanca.items import BLANCA_TASKS, target_kind
from probes.features import model_key

if TYPE_CHECKING:
    from asc.models import ModelBundle
    from probes.blanca.finetune import FinetuneResult

__all__ = ["blanca_job", "finetune_task_set", "finetuned_labels", "load_scores", "model_label", "run_blanca",
           "score_folder", "target_kinds"]


def score_folder(out: str | Path, set_name: str) -> Path:
    """Where the scores of task set ``set_name`` live in run folder ``out``."""
    return Path(out) / "scores" / set_name


def model_label(bundle: ModelBundle) -> str:
    """The row label of a model: its name, or ``FT-<tasks> (<base>)`` style names for our fine-tuned folders."""
    provenance = Path(bundle.source) / FINETUNE_MANIFEST
    if provenance.is_file():
        try:
            found = json.loads(provenance.read_text())
        except ValueError:
            return bundle.name
        base = str(found.get("base", {}).get("spec", ""))
        return f"{found.get('name') or bundle.name} ({Path(base).name or base})" if base else bundle.name
    return bundle.name


def _file_digest(task_set: BlancaTaskSet, task: str) -> str:
    return hashlib.sha256((task_set.folder / f"{task}.jsonl").read_bytes()).hexdigest()[:16]


def target_kinds(task_set: BlancaTaskSet) -> dict[str, str]:
    """``{"H": "distance", "U": "similarity"}`` as the set's task files declare them."""
    return {t: target_kind(h) for t, h in task_set.headers.items() if t in ("H", "U")}


def run_blanca(bundle: ModelBundle, task_set: BlancaTaskSet, out: str | Path, *, label: str | None = None,
               on_progress: Callable[[str, int, int], None] | None = None,
               should_stop: Callable[[], bool] | None = None) -> pd.DataFrame:
    """Score every task of ``task_set`` with ``bundle`` (tasks already scored are read back) and return the scores
    table of this model. ``on_progress(stage, done, total)`` counts texts embedded over all tasks."""
    label = label or model_label(bundle)
    folder = score_folder(out, task_set.name) / model_key(bundle)
    settings = embedding_settings(bundle)
    meta: dict[str, Any] = {"label": label, "name": bundle.name, "source": bundle.source, "pooling": settings.pooling,
                            "max_tokens": settings.max_tokens, "settings_from": settings.origin, "dtype": bundle.dtype}
    provenance = Path(bundle.source) / FINETUNE_MANIFEST
    if provenance.is_file():
        meta["finetune"] = json.loads(provenance.read_text())
    write_atomic(folder / "model.json", lambda tmp: tmp.write_text(json.dumps(meta, indent=1)))
    todo, frames = [], []
    for task in task_set.items:
        path = folder / f"{task}.parquet"
        digest = _file_digest(task_set, task)
        if path.exists():
            if _stored_digest(path) == digest:
                frames.append(pd.read_parquet(path).assign(model=label))
                continue
        todo.append((task, path, digest))
    sizes = {task: len(item_texts(task_set.items[task])) for task, _, _ in todo}
    total, done = sum(sizes.values()), 0
    for task, path, digest in todo:
        def progress(k: int, n: int, task: str = task, base: int = done) -> None:
            if on_progress:
                on_progress(f"{label}: embedding {task} texts", base + k, max(total, 1))
        frame = score_task(bundle, task, task_set.items[task], model=label, cache=str(Path(out) / "embeddings"),
                           on_progress=progress, should_stop=should_stop)
        _write(path, frame, digest)
        frames.append(frame)
        done += sizes[task]
    if not frames:
        raise InputError(f"task set {task_set.name} has no task to score: {'; '.join(task_set.skipped.values())}")
    return pd.concat(frames, ignore_index=True)[list(SCORE_COLUMNS)]


def _write(path: Path, frame: pd.DataFrame, digest: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from asc.corpus.tables import ONE_THREAD

    table = pa.Table.from_pandas(frame, preserve_index=False, nthreads=ONE_THREAD)  # in the job's thread
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), b"asc-blanca-digest": digest.encode()})
    write_atomic(path, lambda tmp: pq.write_table(table, tmp))


def _stored_digest(path: Path) -> str:
    import pyarrow.parquet as pq

    metadata = pq.read_schema(path).metadata or {}
    return metadata.get(b"asc-blanca-digest", b"").decode()


def load_scores(out: str | Path, set_name: str, tasks: Sequence[str] = BLANCA_TASKS) -> pd.DataFrame:
    """Every model's scores on task set ``set_name`` in ``out`` (empty table with the columns when none)."""
    frames = []
    for meta_path in sorted(score_folder(out, set_name).glob("*/model.json")):
        label = json.loads(meta_path.read_text()).get("label") or meta_path.parent.name
        for task in tasks:
            path = meta_path.parent / f"{task}.parquet"
            if path.exists():
                frames.append(pd.read_parquet(path).assign(model=label))
    if not frames:
        return pd.DataFrame(columns=list(SCORE_COLUMNS))
    return pd.concat(frames, ignore_index=True)[list(SCORE_COLUMNS)]


def finetuned_labels(out: str | Path, set_name: str) -> set[str]:
    """The labels of the fine-tuned models scored on ``set_name`` (``--split all`` leaves them out: they saw the
    train split)."""
    labels = set()
    for meta_path in score_folder(out, set_name).glob("*/model.json"):
        meta = json.loads(meta_path.read_text())
        if "finetune" in meta:
            labels.add(str(meta.get("label")))
    return labels


def finetune_task_set(base: str, task_set: BlancaTaskSet, tasks: Sequence[str], out: str | Path, *,
                      epochs: int = 1, max_pairs: int | None = 2000, seed: int = 0, device: str = "cpu",
                      on_progress: Callable[[int, int], None] | None = None,
                      should_stop: Callable[[], bool] | None = None) -> FinetuneResult:
    """Fine-tune ``base`` on the train split of ``tasks`` of ``task_set`` into
    ``<out>/finetuned/<set>/<FT-R or RFLHU>-<base>`` (reused when it is already there)."""
    from probes.blanca.finetune import default_finetune_name, finetune

    missing = [t for t in tasks if t not in task_set.items]
    if missing:
        raise InputError(f"cannot fine-tune on {', '.join(missing)}: not in task set {task_set.name} "
                         f"({'; '.join(task_set.skipped.get(t, 'not built') for t in missing)})")
    name = f"{default_finetune_name(tasks)}-{Path(base).name}"
    folder = Path(out) / "finetuned" / task_set.name / name
    return finetune(base, {t: task_set.items[t] for t in tasks}, folder, targets=target_kinds(task_set),
                    epochs=epochs, max_pairs=max_pairs, seed=seed, device=device, on_progress=on_progress,
                    should_stop=should_stop)


def blanca_job(tasks: Sequence[str], out: str | Path, *, seed: int = 0, docs: str | Path | None = None
               ) -> Callable[[ModelBundle, Callable[[str, int, int], None], Callable[[], bool]], None]:
    """A ``call(bundle, on_progress, should_stop)`` for :meth:`asc.jobs.JobQueue.submit_call` (the app's
    background queue): builds or reads the standard-library task set under ``out``, then scores it with the
    bundle, as ``python -m probes blanca`` does. Packages are not offered here (importing them runs their code)."""
    tasks = tuple(tasks)

    def call(bundle: ModelBundle, on_progress: Callable[[str, int, int], None], should_stop: Callable[[], bool]) -> None:
        on_progress("building BLANCA tasks", 0, 1)
        task_set = build_task_set(out, tasks, seed=seed, docs=docs)
        run_blanca(bundle, task_set, out, on_progress=on_progress, should_stop=should_stop)

    return call
