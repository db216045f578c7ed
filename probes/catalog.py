"""The catalogue of layer-probe tasks: INSPECT's 15 and glueCode's NPATH and NULL.

:data:`LAYER_TASKS` lists them in the order the figures and the "Layer heatmaps" page show them (INSPECT's
order, then NPATH, NULL) and :data:`LAYER_TASK_INFO` describes each. :func:`build_tasks` builds any mix of them from
one corpus (INSPECT's through :func:`probes.inspect.tasks.build_task`, glueCode's through
:func:`probes.gluecode.probing.probe_task`), plus external INSPECT TSV files and tasks parsed already;
:func:`layer_job` wraps that and :func:`probes.inspect.runs.run_layers` for the background job queue.

``"all"`` means INSPECT's 15 tasks, as it always did: glueCode's NULL runs mypy over the corpus and needs a
corpus of files (not ``humaneval`` or ``.jsonl``), so it is only built when named (``all,NPATH,NULL`` gives the
17). This module sits beside :mod:`probes.inspect` and :mod:`probes.gluecode` because it needs both, and
:mod:`probes.gluecode` already imports :mod:`probes.inspect` (sibling packages must not import in a cycle).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from asc.errors import InputError
from probes.features import PROBE_MAX_TOKENS
from probes.gluecode.probing import PROBE_INFO, PROBE_TASKS
from probes.inspect.runs import run_layers
from probes.inspect.tasks import TASK_INFO as INSPECT_INFO
from probes.inspect.tasks import TASK_NAMES as INSPECT_TASKS
from probes.pyast import gc_paused

if TYPE_CHECKING:
    from asc.models import ModelBundle
    from probes.inspect.taskfile import Task

__all__ = ["GLUECODE_TASKS", "INSPECT_TASKS", "LAYER_TASK_INFO", "LAYER_TASKS", "build_tasks", "layer_job"]

GLUECODE_TASKS: tuple[str, ...] = PROBE_TASKS
LAYER_TASKS: tuple[str, ...] = (*INSPECT_TASKS, *GLUECODE_TASKS)
LAYER_TASK_INFO: dict[str, str] = {**INSPECT_INFO, **PROBE_INFO}


def _task_names(names: Sequence[str]) -> list[str]:
    """Upper-cased names, ``all`` expanded to INSPECT's 15, duplicates dropped; unknown names raise."""
    out: list[str] = []
    for name in (n.strip().upper() for n in names if n.strip()):
        out += list(INSPECT_TASKS) if name == "ALL" else [name]
    unknown = [n for n in dict.fromkeys(out) if n not in LAYER_TASKS]
    if unknown:
        raise InputError(f"unknown task(s) {', '.join(unknown)}: choose from {', '.join(LAYER_TASKS)} or 'all' "
                         "(INSPECT's 15)")
    return list(dict.fromkeys(out))


def build_tasks(names: Sequence[str], corpus: str = "stdlib", size: int = 1000, seed: int = 0,
                task_files: Sequence[str | Path] = (), extra: Sequence[Task] = (),
                roots: Sequence[Path] | None = None) -> list[Task]:
    """Tasks by name (INSPECT's, glueCode's NPATH and NULL; ``"all"``: INSPECT's 15) built from ``corpus`` in the
    order named, then external TSV task files, then the tasks of ``extra`` (parsed already, e.g. uploads:
    :func:`probes.inspect.taskfile.store_upload`). ``roots`` confines a corpus path
    (:func:`asc.corpus.sources.check_corpus_spec`; the shared app passes its policy's). The corpus is loaded, and each
    of its functions parsed, once.

    Raises :class:`~asc.errors.InputError` listing the valid names for an unknown task, and for an empty selection.
    """
    from asc.corpus.sources import load_corpus
    from probes.gluecode.probing import probe_task
    from probes.inspect.tasks import build_task, load_tsv

    wanted = _task_names(names)
    tasks: list[Task] = []
    if wanted:
        snippets = load_corpus(corpus, roots=roots)
        parsed: dict[int, Any] = {}  # each snippet's function node, parsed once for all the tasks
        with gc_paused():  # the trees stay alive between the tasks (probes.pyast)
            for name in wanted:
                if name in GLUECODE_TASKS:
                    tasks.append(probe_task(name, corpus, size=size, seed=seed, roots=roots, snippets=snippets,
                                            parsed=parsed))
                else:
                    task = build_task(name, snippets, size=size, seed=seed, parsed=parsed)
                    tasks.append(replace(task, meta={**task.meta, "corpus": corpus}))  # meta is not hashed
    for path in task_files:
        tasks.append(load_tsv(path))  # says what a path that is no file is (a folder, a FIFO, a device)
    tasks += list(extra)
    if not tasks:
        raise InputError("no task: choose INSPECT tasks (e.g. KTX, IDN or all), glueCode's NPATH or NULL, and/or "
                         "give INSPECT TSV task files")
    return tasks


def layer_job(names: Sequence[str], out: str | Path, *, corpus: str = "stdlib", size: int = 1000, seed: int = 0,
              task_files: Sequence[str | Path] = (), pooling: str | None = None, max_tokens: int = PROBE_MAX_TOKENS,
              extra: Sequence[Task] = (), roots: Sequence[Path] | None = None,
              ) -> Callable[[ModelBundle, Callable[[str, int, int], None], Callable[[], bool]], None]:
    """A ``call(bundle, on_progress, should_stop)`` for :meth:`asc.jobs.JobQueue.submit_call`: builds the
    tasks (:func:`build_tasks`; ``extra``: tasks parsed already), then :func:`probes.inspect.runs.run_layers`
    into ``out``."""
    names, task_files, extra = tuple(names), tuple(task_files), tuple(extra)

    def call(bundle: ModelBundle, on_progress: Callable[[str, int, int], None], should_stop: Callable[[], bool]) -> None:
        on_progress("building tasks", 0, 1)
        tasks = build_tasks(names, corpus, size, seed, task_files, extra, roots)
        run_layers(bundle, tasks, out, pooling=pooling, seed=seed, max_tokens=max_tokens, corpus=corpus,
                   on_progress=on_progress, should_stop=should_stop)

    return call
