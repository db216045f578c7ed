"""Corpus runs on a Ray cluster: a pool of model actors scores the chunks, the driver writes the run folder.

:func:`run_corpus_ray` writes the same run folder as :func:`asc.corpus.runs.run_corpus` (four Parquet tables
in numbered parts, meta.json, corpus.json), value for value: the driver plans the run exactly as the local
engine does (same checks, same chunks of ``batch_size`` snippets, chunk ``i`` becomes part ``next_part + i``),
Ray Data (``map_batches`` over an ``ActorPoolStrategy`` pool) sends each chunk to an actor that loaded the
model once with :func:`asc.models.load_model` and returns the chunk's tables as Parquet bytes, and the
driver writes each part as it arrives (it alone holds the folder's lock, so ``--out`` needs to be on the
driver's machine only). The driver loads no model: meta.json describes the model as the first actor loaded it
(device and dtype included), and a resumed folder's settings are checked against it before anything is written. Parts are named by chunk, so results arriving out of order never collide; an
interrupted run resumes under either engine, skipping the snippets either wrote.

Ray is imported only when a run starts (``import asc`` does not import it). ``address`` None starts a
local Ray instance on this machine (and shuts it down after); ``"auto"`` or ``"ray://host:10001"`` joins a
cluster (see README, "Running on a Ray cluster"). Every node needs this repository importable (the same
checkout, or ``pip install`` of it) and the model weights.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from asc.align import AlignOptions
from asc.corpus.forks import FORKS_TABLE
from asc.corpus.layers import LAYERS_TABLE, chunk_layers, layer_bytes, write_layers
from asc.corpus.resume import check_corpus
from asc.corpus.runs import (
    TABLES,
    chunk_tables,
    done_ids,
    finish_run,
    open_run,
    parquet_bytes,
    plan_run,
    progress_bar,
    write_chunk,
)
from asc.corpus.sources import Snippet
from asc.errors import AscError, CorpusError
from asc.forks import ForkSettings
from asc.lens import lens_scores

__all__ = ["ChunkScorer", "run_corpus_ray"]

log = logging.getLogger(__name__)


class ChunkScorer:
    """A Ray Data actor: loads the model once, then turns batches of chunks into their tables as Parquet bytes."""

    def __init__(self, spec: str, trust_remote_code: bool, device: str, dtype: str, aggregate: str, options: dict,
                 max_window: int | None, threads: int, layers: bool = False, forks: dict | None = None) -> None:
        import torch

        from asc.models import load_model

        torch.set_num_threads(max(1, threads))
        self.bundle = load_model(spec, trust_remote_code=trust_remote_code, device=device, dtype=dtype)
        self.model = json.dumps(self.bundle.describe())
        self.info = self.bundle.summary()
        self.aggregate = aggregate
        self.options = AlignOptions(**options)
        self.max_window = max_window
        self.layers = layers
        self.forks = ForkSettings(**forks) if forks else None
        self.cmaps: dict = {}

    def __call__(self, batch: dict[str, Any]) -> Any:
        """``{"part", "chunk"}`` rows (chunk: JSON list of snippets) to ``{"part", "n", "model", <table>: bytes}``
        rows (model: the JSON of :meth:`ModelBundle.describe`)."""
        import pandas as pd

        from asc.scores import score_texts

        rows = []
        for part, text in zip(batch["part"], batch["chunk"], strict=True):
            chunk = [Snippet(**d) for d in json.loads(str(text))]
            extra = {}
            if self.layers:
                lenses = [lens_scores(self.bundle, s.source, max_window=self.max_window) for s in chunk]
                scored = [lens.output for lens in lenses]
                extra[LAYERS_TABLE] = layer_bytes(chunk_layers(self.info, chunk, lenses, aggregate=self.aggregate,
                                                               options=self.options, cmaps=self.cmaps))
            else:
                scored = score_texts(self.bundle, [s.source for s in chunk], max_window=self.max_window)
            tables = chunk_tables(self.info, chunk, scored, aggregate=self.aggregate, options=self.options,
                                  cmaps=self.cmaps, forks=self.forks)
            rows.append({"part": int(part), "n": len(chunk), "model": self.model}
                        | {t: parquet_bytes(df) for t, df in tables.items()} | extra)
        return pd.DataFrame(rows)


def _start_ray(address: str | None, progress: bool) -> bool:
    """Connect to (``address``) or start a local Ray; True when this call started it (then shut it down after)."""
    import ray

    if ray.is_initialized():
        return False
    ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    import ray.data

    ray.data.DataContext.get_current().enable_progress_bars = progress
    for name in ("ray", "ray.data"):  # Ray Data logs every execution at INFO
        logging.getLogger(name).setLevel(logging.WARNING)
    return True


def run_corpus_ray(model_spec: str, snippets: Sequence[Snippet], out: str | Path, *, workers: int | None = None,
                   address: str | None = None, gpus_per_worker: float | None = None, trust_remote_code: bool = False,
                   device: str = "cpu", dtype: str = "float32", corpus: str = "", aggregate: str = "median",
                   options: AlignOptions | None = None, batch_size: int = 8, max_window: int | None = None,
                   progress: bool | None = None, on_progress: Callable[[int, int], None] | None = None,
                   should_stop: Callable[[], bool] | None = None, layers: bool = False,
                   forks: ForkSettings | None = None) -> Path:
    """:func:`asc.corpus.runs.run_corpus` with the scoring spread over a pool of Ray actors. Returns the folder.

    ``workers``: actors in the pool (default: one per GPU of the cluster, or 2 without GPUs);
    ``gpus_per_worker``: GPUs each actor asks for (default: 1 when the cluster has GPUs, else 0);
    ``address``: the Ray cluster to join (None: a local Ray on this machine); ``device``/``dtype``: where each
    actor puts its model (:func:`asc.models.load_model`). The other arguments are
    :func:`~asc.corpus.runs.run_corpus`'s; ``should_stop`` is asked after every chunk written. The model's
    description in meta.json (and the settings check of a resumed folder) comes from the first actor's model,
    so the driver loads no model.
    """
    options = options or AlignOptions()
    plan_args: dict[str, Any] = {"corpus": corpus, "aggregate": aggregate, "options": options,
                                 "max_window": max_window, "layers": layers, "forks": forks}
    with open_run(out) as folder:
        done, first_part = done_ids(folder)
        check_corpus(folder, done, snippets)  # a corpus mismatch is refused before Ray starts
        todo = [s for s in snippets if s.id not in done]
        if not todo:
            from asc.models import load_model

            bundle = load_model(model_spec, trust_remote_code=trust_remote_code, device=device, dtype=dtype)
            return finish_run(plan_run(bundle.describe(), snippets, folder, **plan_args))
        import ray

        started = _start_ray(address, bool(progress))
        try:
            return _score(ray, first_part, [todo[i : i + batch_size] for i in range(0, len(todo), batch_size)],
                          folder, snippets, plan_args, progress=progress, on_progress=on_progress,
                          should_stop=should_stop, workers=workers, gpus_per_worker=gpus_per_worker,
                          constructor={"spec": model_spec, "trust_remote_code": trust_remote_code, "device": device,
                                       "dtype": dtype, "aggregate": aggregate, "options": asdict(options),
                                       "max_window": max_window, "layers": layers,
                                       "forks": asdict(forks) if forks else None})
        finally:
            if started:
                ray.shutdown()


def _score(ray: Any, first_part: int, chunks: list[list[Snippet]], folder: Path, snippets: Sequence[Snippet],
           plan_args: dict[str, Any], *, progress: bool | None, on_progress: Callable[[int, int], None] | None,
           should_stop: Callable[[], bool] | None, workers: int | None, gpus_per_worker: float | None,
           constructor: dict[str, Any]) -> Path:
    """Run the actor pool over ``chunks``, write each returned part; plan the folder on the first result."""
    resources = ray.cluster_resources()
    gpus, cpus = float(resources.get("GPU", 0)), float(resources.get("CPU", 1))
    if workers is None:
        workers = int(gpus) if gpus >= 1 else 2
    if gpus_per_worker is None:
        gpus_per_worker = 1.0 if gpus >= 1 else 0.0
    workers = max(1, min(workers, len(chunks)))
    threads = max(1, int(cpus // workers))
    items = [{"part": first_part + i, "chunk": json.dumps([asdict(s) for s in chunk])} for i, chunk in enumerate(chunks)]
    ds = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
        ChunkScorer, batch_size=1, batch_format="numpy", fn_constructor_kwargs=constructor | {"threads": threads},
        compute=ray.data.ActorPoolStrategy(size=workers),
        num_cpus=max(0.5, threads - 0.5),  # leaves Ray Data's own tasks room on small machines
        **({"num_gpus": gpus_per_worker} if gpus_per_worker else {}))
    log.info("scoring %d chunks on %d Ray actors (%d threads, %.2g GPUs each)", len(chunks), workers, threads,
             gpus_per_worker)
    plan, bar = None, None
    try:
        for row in _rows(ds):
            if plan is None:  # the settings check needs the model as the actors loaded it
                plan = plan_run(json.loads(str(row["model"])), snippets, folder, **plan_args)
                bar = progress_bar(progress, plan, plan.meta["settings"]["model"]["name"])
            if LAYERS_TABLE in row:  # before the chunk: its snippets part marks the chunk done
                write_layers(folder, int(row["part"]), bytes(row[LAYERS_TABLE]))
            write_chunk(folder, int(row["part"]), {t: bytes(row[t]) for t in (*TABLES, FORKS_TABLE) if t in row})
            plan.n_done += int(row["n"])
            if bar is not None:
                bar.update(int(row["n"]))
            if on_progress is not None:
                on_progress(plan.n_done, plan.n_planned)
            if should_stop is not None and should_stop() and plan.n_done < plan.n_planned:
                log.info("stopped on request after %d of %d snippets", plan.n_done, plan.n_planned)
                return folder
    finally:
        if bar is not None:
            bar.close()
    assert plan is not None
    return finish_run(plan)


def _rows(ds: Any) -> Iterator[dict]:
    """The dataset's rows; a failure in an actor is re-raised as the :class:`AscError` behind it when there is one
    (e.g. a model that cannot be loaded), else as a CorpusError with its first line."""
    try:
        yield from ds.iter_rows()
    except AscError:
        raise
    except Exception as err:
        cause: BaseException | None = err
        while cause is not None:
            if isinstance(cause, AscError):
                raise cause from None
            cause = cause.__cause__ or cause.__context__
        import asc.errors

        found = re.findall(r"^asc\.errors\.(\w+): (.+)$", str(err), flags=re.MULTILINE)  # an actor's creation error
        kind = getattr(asc.errors, found[-1][0], None) if found else None
        if isinstance(kind, type) and issubclass(kind, AscError):
            raise kind(found[-1][1]) from None
        first = next((line for line in str(err).splitlines() if line.strip()), type(err).__name__)
        raise CorpusError(f"the Ray actors failed: {first[:300]}; run with --debug for the traceback") from err
