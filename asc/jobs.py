"""Background runs: a queue that evaluates corpora (or runs any model-bound work) in one worker thread.

The app submits runs here so they go on while the user switches pages or closes the tab; the
queue is shared by every session of the app process. Runs execute one at a time (the CPU is the
bottleneck: two runs in parallel would only slow each other down) and write resumable run folders
(:func:`asc.corpus.runs.run_corpus`), so a run cancelled or cut by a restart continues where it stopped
when submitted again. Corpus runs read only inside ``ASC_DATA_ROOTS`` when it is set
(:func:`asc.paths.data_roots`), and each (model, corpus, limit) has its own :func:`run_folder`.
:meth:`JobQueue.submit_call` queues other long work that needs a model (the layer probes, the attention
heads) under the same one-at-a-time rule; it reports a ``stage``
besides done/total. Each job has a :class:`JobKind`. User mistakes (:class:`asc.errors.AscError`) end a
job as ``failed`` with their message; anything else is logged with its traceback as a crash.

A job may name the ``device`` and ``dtype`` of its model (the app passes its sidebar's *Hardware* choice),
checked when submitted as the CLI's ``--device``/``--dtype`` are (:func:`asc.device.check_names`) and
passed to the queue's loader. When ``ASC_RAY_ADDRESS`` is set (:func:`asc.paths.ray_address`, read when
a job starts), corpus runs are scored on that Ray cluster (:func:`asc.corpus.engines.run_corpus_ray`: the
actors load the model, in ``auto`` placement unless the job names one) instead of in this process; either
way the job's progress counts the snippets written into its run folder. A shared server's queue (``shared``)
refuses ``auto`` before connecting (:func:`asc.corpus.engines.check_shared_address`), and an address that does
not answer fails its job within :data:`asc.corpus.engines.CONNECT_TIMEOUT_S`: the next job then runs.

Corpus paths are checked when submitted (no NUL, not too long: :func:`asc.files.check_path_text`). An
``OSError`` met by a job anyway (a file gone, a full disk) fails it with one line
(:func:`asc.files.os_error_message`), logged without a traceback: it is about files, not a bug.
"""

from __future__ import annotations

import hashlib
import json
import logging
import queue
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from asc.corpus import engines
from asc.corpus.runs import run_corpus
from asc.corpus.sources import load_corpus
from asc.device import check_names
from asc.errors import AscError
from asc.files import check_path_text, os_error_message
from asc.models import ModelBundle
from asc.paths import data_roots, ray_address

__all__ = ["Job", "JobKind", "JobQueue", "run_folder"]

log = logging.getLogger(__name__)


def run_folder(root: str | Path, model: str, corpus: str, limit: int | None) -> Path:
    """The conventional folder of a run: ``<root>/<model>__<corpus>__<limit|all>__<hash>``.

    The readable part shortens the model and corpus (last path part, safe characters, 60 at most); the hash
    (8 hex digits of sha256 over the full model spec, corpus spec and limit) keeps two runs apart whose
    shortened names agree (``a/b`` and ``a-b``, long names, two folders named ``code``)."""
    def slug(text: str) -> str:
        short = Path(text).name if ("/" in text or "\\" in text) else text
        return re.sub(r"[^A-Za-z0-9_.-]+", "-", short).lstrip(".")[:60] or "-"

    key = json.dumps([model, corpus, limit or None])
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return Path(root) / f"{slug(model)}__{slug(corpus)}__{limit if limit else 'all'}__{digest}"


def _placement(device: str | None, dtype: str | None) -> dict[str, str | None]:
    """``{"device", "dtype"}`` of a job, each checked and lower-cased as ``--device``/``--dtype`` (None stays
    None: the loader's default)."""
    dev, dt = check_names(device or "auto", dtype or "auto")
    return {"device": None if device is None else dev, "dtype": None if dtype is None else dt}


class JobKind(StrEnum):
    """What a job computes; pages show the jobs of their own kind (no parsing of labels)."""

    EVAL = "eval"  # AsC-Eval of a corpus into a run folder (Global AsC-Eval page)
    LAYERS = "layers"  # layer probes (Layer heatmaps page)
    ATTENTION = "attention"  # attention heads (Attention maps page)
    GLUECODE = "gluecode"  # glueCode tasks answered zero-shot (Benchmark tasks page)
    BLANCA = "blanca"  # BLANCA task sets embedded and scored (Text about code page)
    SAE = "sae"  # a sparse autoencoder trained, measured and enriched (Syntax features page)


@dataclass
class Job:
    """One corpus run. Mutable fields are updated by the worker thread; read them, do not write."""

    id: int
    kind: JobKind
    model: str
    corpus: str  # the corpus spec of an eval run; a human-readable label of other work
    limit: int | None
    out: Path
    batch_size: int = 8
    trust_remote_code: bool = False  # passed to the queue's loader (off unless the user turned it on)
    device: str | None = None  # passed to the loader when set ("auto", "cpu", "cuda:0", ...; None: its default)
    dtype: str | None = None  # likewise ("auto", "float32", "bfloat16", "float16")
    engine: str = ""  # where a corpus run was scored: "local" or "ray" (set when it starts)
    owner: str = ""  # who submitted it (the app: a browser tab's token); its progress panel shows only its own
    status: str = "queued"  # queued | running | done | failed | cancelled
    done: int = 0
    total: int = 0
    error: str = ""
    stage: str = ""  # what the worker is doing now (calls report it; corpus runs leave it empty)
    call: Callable | None = field(default=None, repr=False)  # call(bundle, on_progress, should_stop)
    submitted: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    cancel: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def elapsed(self) -> float:
        if self.started is None:
            return 0.0
        return (self.finished or time.time()) - self.started

    @property
    def active(self) -> bool:
        return self.status in ("queued", "running")


class JobQueue:
    """Corpus runs executed one at a time by a daemon thread started on the first submit."""

    def __init__(self, load: Callable[..., ModelBundle],
                 roots: Callable[[], Sequence[Path] | None] | None = None,
                 shared: Callable[[], bool] | None = None) -> None:
        # load(spec) -> ModelBundle, called with trust_remote_code=<the job's choice> for jobs that allow remote
        # code (the app passes its cached loader of jobs, apart from the model users inspect)
        self._load = load
        # roots() (asked when a job starts): the folders corpus paths of eval jobs must lie in (None: any folder
        # unless ASC_DATA_ROOTS is set); the shared app passes its policy's roots, () = built-in corpora only
        self._roots = roots
        # shared() (asked when a Ray job starts): whether this is a shared server (ASC_RAY_ADDRESS=auto is refused)
        self._shared = shared
        self._queue: queue.Queue[Job] = queue.Queue()
        self._jobs: list[Job] = []
        self._lock = threading.Lock()
        self._worker: threading.Thread | None = None

    def submit(self, model: str, corpus: str, limit: int | None, root: str | Path, batch_size: int = 8, *,
               trust_remote_code: bool = False, owner: str = "", device: str | None = None,
               dtype: str | None = None) -> Job:
        """Queue an AsC-Eval run of ``corpus`` (at most ``limit`` snippets) into :func:`run_folder`, its model on
        ``device`` in ``dtype`` (:class:`asc.errors.InputError` for names ``--device``/``--dtype`` refuse, or a
        corpus path no file system takes)."""
        check_path_text(corpus, "corpus")
        return self._enqueue(kind=JobKind.EVAL, model=model, corpus=corpus, limit=limit,
                             out=run_folder(root, model, corpus, limit), batch_size=batch_size,
                             trust_remote_code=trust_remote_code, owner=owner, **_placement(device, dtype))

    def submit_call(self, kind: JobKind, model: str, label: str, out: str | Path,
                    call: Callable[[ModelBundle, Callable[[str, int, int], None], Callable[[], bool]], None], *,
                    trust_remote_code: bool = False, owner: str = "", device: str | None = None,
                    dtype: str | None = None) -> Job:
        """Queue ``call(bundle, on_progress(stage, done, total), should_stop)`` for the model ``model`` (on
        ``device`` in ``dtype``, checked as in :meth:`submit`)."""
        return self._enqueue(kind=JobKind(kind), model=model, corpus=label, limit=None, out=Path(out), call=call,
                             trust_remote_code=trust_remote_code, owner=owner, **_placement(device, dtype))

    def _enqueue(self, **fields) -> Job:
        with self._lock:
            job = Job(id=len(self._jobs) + 1, **fields)
            self._jobs.append(job)
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._work, name="asc-corpus-runs", daemon=True)
                self._worker.start()
        self._queue.put(job)
        return job

    def _corpus_roots(self) -> Sequence[Path] | None:
        roots = self._roots() if self._roots is not None else None
        return data_roots() if roots is None else roots

    def jobs(self, kind: JobKind | None = None, owner: str | None = None) -> list[Job]:
        """Every job so far (oldest first), or only those of ``kind`` and/or submitted by ``owner``."""
        with self._lock:
            return [j for j in self._jobs if (kind is None or j.kind == kind) and (owner is None or j.owner == owner)]

    def wait(self, timeout: float | None = None) -> bool:
        """Block until no job is queued or running (tests, CLI); False on timeout."""
        end = None if timeout is None else time.time() + timeout
        while any(j.active for j in self.jobs()):
            if end is not None and time.time() > end:
                return False
            time.sleep(0.05)
        return True

    def stop(self, timeout: float = 10.0) -> bool:
        """Cancel every queued and running job and wait up to ``timeout`` seconds for the worker to finish the one
        it runs (a corpus run stops after its current batch, its finished snippets kept: resumable). True when no job
        is left queued or running. The app calls it when its server stops (Ctrl-C, SIGTERM), so the process does not end
        with a thread inside torch (``terminate called without an active exception``)."""
        for job in self.jobs():
            if job.active:
                job.cancel.set()
        return self.wait(timeout)  # the worker marks each queued job cancelled as it takes it

    def _load_model(self, job: Job) -> ModelBundle:
        # one-argument loaders (tests, the CLI) keep working for jobs that trust no remote code and name no placement
        extra: dict[str, object] = {"trust_remote_code": True} if job.trust_remote_code else {}
        extra |= {k: v for k, v in (("device", job.device), ("dtype", job.dtype)) if v is not None}
        return self._load(job.model, **extra)

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            if job.cancel.is_set():
                job.status, job.finished = "cancelled", time.time()
                continue
            job.status, job.started = "running", time.time()
            try:
                if job.call is not None:
                    bundle = self._load_model(job)

                    def staged(stage: str, done: int, total: int, job: Job = job) -> None:
                        job.stage, job.done, job.total = stage, done, total

                    job.call(bundle, staged, job.cancel.is_set)
                    job.status = "cancelled" if job.cancel.is_set() else "done"
                    continue
                snippets = load_corpus(job.corpus, limit=job.limit, roots=self._corpus_roots())
                job.total = len(snippets)

                def progress(done: int, total: int, job: Job = job) -> None:
                    job.done, job.total = done, total

                settings: dict[str, Any] = {"corpus": job.corpus, "progress": False, "on_progress": progress,
                                            "batch_size": job.batch_size, "should_stop": job.cancel.is_set}
                address = ray_address()
                job.engine = "ray" if address else "local"
                if address:  # the cluster's actors load the model; this process loads none
                    if self._shared is not None and self._shared():
                        engines.check_shared_address(address)  # before any connection
                    engines.run_corpus_ray(job.model, snippets, job.out, address=address,
                                           trust_remote_code=job.trust_remote_code, device=job.device or "auto",
                                           dtype=job.dtype or "auto", **settings)
                else:
                    run_corpus(self._load_model(job), snippets, job.out, **settings)
                job.status = "cancelled" if job.cancel.is_set() else "done"
            except AscError as err:
                job.status, job.error = "failed", str(err)
            except OSError as err:  # a path or a disk, not a bug: one line, no traceback in the log
                job.status, job.error = "failed", os_error_message(err)
                log.warning("run %s failed: %s", job.id, job.error)
            except Exception as err:  # keep the worker alive; report the failure in the UI
                log.exception("corpus run %s failed", job.id)
                job.status, job.error = "failed", f"{type(err).__name__}: {err}"
            finally:
                job.finished = time.time()
