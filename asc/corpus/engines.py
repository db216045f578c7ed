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

Ray is imported only when a run starts (``import asc`` does not import it). ``address`` None (or ``local``)
starts a local Ray instance on this machine (and shuts it down after) without looking for a running one;
``HOST:PORT`` (the head's GCS port, 6379 by default) or ``ray://HOST:10001`` joins that cluster, and ``auto``
the cluster Ray finds on this machine (see docs/ray.md, "Running on a Ray cluster"). Every node needs this repository
importable (the same checkout, or ``pip install`` of it) and the model weights.

**Joining a cluster** (:func:`resolve_address`, :func:`probe_address`, before the run folder is touched): ``auto``
is looked up once (``RAY_ADDRESS``, else the file ``<tmp>/ray/ray_current_cluster``, else a running GCS), so the
address checked is the address joined. The address must answer within :data:`CONNECT_TIMEOUT_S`: a TCP
connection, then the HTTP/2 SETTINGS frame every gRPC server (Ray's GCS, the Ray Client server) sends first. A
port where nothing listens, a host that drops packets or a socket that never answers fail the run with one line
in that time, where ``ray.init`` would retry for minutes. A shared app refuses ``auto``
(:func:`check_shared_address`): ``/tmp/ray`` is writable by every user of the machine, so whoever writes that file
would choose the cluster, and the queue runs one job at a time for everybody.
"""

from __future__ import annotations

import json
import logging
import math
import re
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from asc.align import AlignOptions
from asc.branching.forks import ForkSettings
from asc.corpus.depth import LAYERS_TABLE, chunk_layers, layer_bytes, write_layers
from asc.corpus.forks import FORKS_TABLE
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
from asc.errors import AscError, CorpusError, InputError
from asc.extras import require
from asc.lens import lens_scores
from asc.paths import ray_uses_tls

__all__ = ["CONNECT_TIMEOUT_S", "ChunkScorer", "check_gpu_share", "check_shared_address", "probe_address",
           "resolve_address", "run_corpus_ray"]

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 20.0  # seconds a cluster's address may take to answer (ray.init's own retries take minutes)
_ADDRESS = re.compile(r"(?:ray://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>\d{1,5})")
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])  # and an empty SETTINGS
_FIX = "HOST:6379 (the head's GCS port) or ray://HOST:10001 (Ray Client)"


def check_shared_address(address: str) -> None:
    """CorpusError for ``auto`` or ``local`` on a shared server: ``auto`` joins the cluster named by a file any local
    user can write, and ``local`` starts a Ray whose temporary folder (``/tmp/ray``) another user can make first.
    (An explicit address is trusted: a Ray cluster trusts whoever reaches its ports, so run it where other users
    cannot take them; docs/sharing.md, "Sharing the app".)"""
    if address.strip().lower() == "auto":
        raise CorpusError("ASC_RAY_ADDRESS=auto is refused on a shared server: Ray would join the cluster named in "
                          "<tmp>/ray/ray_current_cluster, a file every user of this machine can write. Set "
                          f"ASC_RAY_ADDRESS to the cluster's own address, {_FIX}, and restart the app")
    if address.strip().lower() == "local":
        raise CorpusError("ASC_RAY_ADDRESS=local is refused on a shared server: a Ray started here keeps its files "
                          "in /tmp/ray, where another user of this machine can plant them first. Unset "
                          f"ASC_RAY_ADDRESS (runs stay in the app's process), or give a cluster's address, {_FIX}")


def resolve_address(address: str | None) -> str:
    """What ``ray.init`` is given: ``local`` for None, "" or ``local`` (a new Ray on this machine; nothing is looked
    up), the address Ray finds for ``auto``, else ``HOST:PORT`` or ``ray://HOST:PORT`` as given. CorpusError for
    other text, or when ``auto`` finds no cluster."""
    text = (address or "").strip()
    if text.lower() in ("", "local"):
        return "local"
    if text.lower() == "auto":
        try:
            from ray._private.services import canonicalize_bootstrap_address
        except ImportError:  # moved in another Ray version: ray.init looks it up (and is not probed)
            return "auto"
        try:
            found = canonicalize_bootstrap_address("auto")
        except (ConnectionError, ValueError) as err:
            raise CorpusError(f"address auto found no usable Ray cluster on this machine ({str(err)[:200]}): start one "
                              f"with `ray start --head`, or give its address, {_FIX}") from None
        return found or "auto"
    match = _ADDRESS.fullmatch(text)
    if match is None or not 0 < int(match["port"]) < 65536:
        raise CorpusError(f"Ray address {text[:100]!r} is not an address: give {_FIX}, or auto (a cluster started "
                          "on this machine)")
    return text


def probe_address(address: str, timeout: float | None = None) -> None:
    """CorpusError unless the cluster at ``address`` (``HOST:PORT`` or ``ray://HOST:PORT``; others are left to Ray)
    answers within ``timeout`` seconds (:data:`CONNECT_TIMEOUT_S`): a TCP connection, then an HTTP/2 SETTINGS frame
    (with ``RAY_USE_TLS=1``, the connection only)."""
    match = _ADDRESS.fullmatch(address)
    if match is None:
        return
    limit = CONNECT_TIMEOUT_S if timeout is None else timeout
    deadline = time.monotonic() + limit
    check = "check that it runs (`ray status` on its head) and that ASC_RAY_ADDRESS or --address names it"
    try:
        with socket.create_connection((match["host"].strip("[]"), int(match["port"])), timeout=limit) as sock:
            if ray_uses_tls():
                return
            sock.sendall(_HTTP2_PREFACE)
            header = b""
            while len(header) < 9:
                sock.settimeout(max(0.01, deadline - time.monotonic()))
                chunk = sock.recv(9 - len(header))
                if not chunk:
                    raise CorpusError(f"the Ray cluster at {address} closed the connection without answering: {check}")
                header += chunk
    except TimeoutError:
        raise CorpusError(f"the Ray cluster at {address} did not answer within {limit:g} s: {check}") from None
    except OSError as err:
        raise CorpusError(f"the Ray cluster at {address} cannot be reached ({err.strerror or err}): {check}") from None
    if header[3] != 4:
        raise CorpusError(f"{address} answered, but not as a Ray cluster (no gRPC server): give {_FIX}")


class ChunkScorer:
    """A Ray Data actor: loads the model once, then turns batches of chunks into their tables as Parquet bytes, by
    the local engine's pipeline (:mod:`asc.batch`: prepared snippets, one copy of the statistics per batch, one
    aggregation per chunk, :func:`asc.corpus.tables.prepared_parts`); ``--per-layer`` and ``--forks`` chunks
    snippet by snippet, as the local engine does them."""

    def __init__(self, spec: str, trust_remote_code: bool, device: str, dtype: str, aggregate: str, options: dict,
                 max_window: int | None, threads: int, layers: bool = False, forks: dict | None = None) -> None:
        from asc.models import check_spec, load_model

        check_spec(spec)  # a spec of no known form fails before the seconds of importing torch
        import torch

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

        from asc.batch import prepare, score_prepared
        from asc.corpus.tables import prepared_parts
        from asc.scores import model_vocab, score_texts, vocab_array

        rows = []
        for part, text in zip(batch["part"], batch["chunk"], strict=True):
            chunk = [Snippet(**d) for d in json.loads(str(text))]
            extra = {}
            if self.layers:
                lenses = [lens_scores(self.bundle, s.source, max_window=self.max_window) for s in chunk]
                scored = [lens.output for lens in lenses]
                extra[LAYERS_TABLE] = layer_bytes(chunk_layers(self.info, chunk, lenses, aggregate=self.aggregate,
                                                               options=self.options, cmaps=self.cmaps))
                tables = chunk_tables(self.info, chunk, scored, aggregate=self.aggregate, options=self.options,
                                      cmaps=self.cmaps, forks=self.forks)
                parts = {t: parquet_bytes(df) for t, df in tables.items()}
            elif self.forks:
                scored = score_texts(self.bundle, [s.source for s in chunk], max_window=self.max_window)
                parts = {t: parquet_bytes(df) for t, df in chunk_tables(
                    self.info, chunk, scored, aggregate=self.aggregate, options=self.options, cmaps=self.cmaps,
                    forks=self.forks).items()}
            else:  # the local engine's pipeline: prepared, scored with one copy per batch, aggregated at once
                prepared = [prepare(self.bundle.tokenizer, s.source, s.language, self.options) for s in chunk]
                scored = score_prepared(self.bundle, prepared, self.max_window)
                parts = prepared_parts(self.info, chunk, prepared, scored,
                                       vocab_array(self.bundle.tokenizer, model_vocab(self.bundle)),
                                       aggregate=self.aggregate, cmaps=self.cmaps)
            rows.append({"part": int(part), "n": len(chunk), "model": self.model} | parts | extra)
        return pd.DataFrame(rows)


def _start_ray(address: str, progress: bool) -> bool:
    """Connect to ``address`` (``local``: start a Ray here); True when this call did (then shut it down after)."""
    import ray

    if ray.is_initialized():
        return False
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    except ConnectionError as err:  # an OSError without a file name: said as the cluster's, not as a file's
        raise CorpusError(f"the Ray cluster at {address} cannot be reached ({str(err)[:200]}): check that it runs "
                          "(`ray status` on its head) and that ASC_RAY_ADDRESS or --address names it") from None
    import ray.data

    ray.data.DataContext.get_current().enable_progress_bars = progress
    for name in ("ray", "ray.data"):  # Ray Data logs every execution at INFO
        logging.getLogger(name).setLevel(logging.WARNING)
    return True


def check_gpu_share(gpus: float | None) -> None:
    """An :class:`InputError` unless ``gpus`` (GPUs one actor asks for; None: the default) is what Ray takes: a
    finite fraction of one GPU from 0 to 1, or a whole number of GPUs."""
    if gpus is None:
        return
    if not math.isfinite(gpus) or gpus < 0 or (gpus > 1 and not float(gpus).is_integer()):
        raise InputError(f"--gpus-per-worker {gpus:g}: Ray takes a fraction of one GPU from 0 to 1 or a whole number "
                         "of GPUs: give e.g. 0.5, 1 or 2")


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
    ``address``: the Ray cluster to join (None: a local Ray on this machine; a cluster's address must answer within
    :data:`CONNECT_TIMEOUT_S`, see the module doc); ``device``/``dtype``: where each
    actor puts its model (:func:`asc.models.load_model`). The other arguments are
    :func:`~asc.corpus.runs.run_corpus`'s; ``should_stop`` is asked after every chunk written. The model's
    description in meta.json (and the settings check of a resumed folder) comes from the first actor's model,
    so the driver loads no model.
    """
    require("ray", extra="ray", feature="--engine ray (corpus runs on a Ray cluster)")
    check_gpu_share(gpus_per_worker)  # a negative count made Ray's start-up time out
    options = options or AlignOptions()
    target = resolve_address(address)
    probe_address(target)  # before the run folder is touched: an address that does not answer fails in seconds
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

        started = _start_ray(target, bool(progress))
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
    if gpus_per_worker > gpus:  # Ray would wait for them forever
        raise InputError(f"--gpus-per-worker {gpus_per_worker:g}: the Ray cluster has {gpus:g} GPUs: give at most "
                         "that (0 on a cluster without GPUs), or leave it out")
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
                bar = progress_bar(progress, plan, plan.run_meta.model_name)
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
