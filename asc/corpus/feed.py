"""A corpus run's CPU side kept off the model's path: work ahead in worker processes, parts written by a thread.

:func:`asc.corpus.runs.run_corpus` feeds the model through a :class:`ChunkFeed`. Per chunk of snippets:

1. **prepare** (tokenize, parse, align: :func:`asc.batch.prepare`), which needs no model: done for the next
   chunks while the model runs the current one;
2. **forward**: the model's passes and next-token statistics (one transfer per batch,
   :func:`asc.tokenstats.batch_stats`), in the run's process, which holds the model;
3. **finish**: the token scores, the chunk's aggregation in a few vectorized calls and its tables
   (:func:`asc.corpus.tables.prepared_tables`), as Parquet bytes;
4. **write**: the parts of every table, atomically, the snippets part last (:func:`asc.corpus.runs.write_chunk`), by
   a :class:`PartWriter` thread while the next chunk is scored.

With ``workers`` > 0, steps 1 and 3 run in a pool of that many worker processes (started with ``spawn``, so safe
beside CUDA and threads; each gets the tokenizer once), at most ``2 x workers`` chunks ahead of the model and as
many finished chunks waiting to be written, so memory stays flat however long the corpus. With 0 they run in the
run's process, in order. The parts, their contents and their order are the same either way; resuming, atomic
parts and the one writer per folder (the lock the run holds while the writer thread works) do not change.

:func:`default_workers` chooses: a pool of ``cores - 1`` (at most :data:`MAX_WORKERS`) when the model runs on an
accelerator and the machine has more than two cores; else none. A model on the CPU uses every core for its own
forward passes (torch's threads), and on two cores there is no core to spare: there the in-process path is the
fast one (measured in docs/bench/pipeline_cpu.txt: the pool's speed-up per worker count).
"""

from __future__ import annotations

import os
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing import get_context
from typing import Any

from asc.align import AlignOptions
from asc.batch import Prepared, prepare
from asc.concepts import CategoryMap
from asc.corpus.sources import Snippet
from asc.errors import InputError
from asc.models import ModelBundle

__all__ = ["MAX_WORKERS", "ChunkFeed", "PartWriter", "default_workers"]

MAX_WORKERS = 8  # more processes than this cost more to start than they save on a few hundred functions per second


def default_workers(device_type: str, cores: int | None = None) -> int:
    """Worker processes for a run on ``device_type`` (the model's device, ``cpu``/``cuda``/...): see the module doc."""
    cores = cores or os.cpu_count() or 1
    if device_type == "cpu" or cores <= 2:
        return 0
    return min(MAX_WORKERS, cores - 1)


class PartWriter:
    """A thread that writes the chunks given to :meth:`put` (``write(part, tables)``) in order, at most ``depth``
    waiting; an error in the thread is raised by the next :meth:`put` or by :meth:`close`. ``written`` lists the
    snippet counts of the chunks on disk, in order."""

    def __init__(self, write: Callable[[int, dict[str, Any]], None], depth: int = 2) -> None:
        self._write = write
        self._queue: queue.Queue = queue.Queue(maxsize=max(1, depth))
        self._error: BaseException | None = None
        self.written: list[int] = []
        self._thread = threading.Thread(target=self._loop, name="asc-part-writer", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if self._error is None:
                try:
                    self._write(item[0], item[1])
                    self.written.append(item[2])
                except BaseException as err:  # raised again in the run's thread
                    self._error = err

    def _check(self) -> None:
        if self._error is not None:
            raise self._error

    def put(self, part: int, tables: dict[str, Any], n_snippets: int) -> None:
        self._check()
        self._queue.put((part, tables, n_snippets))

    def close(self) -> None:
        """Write what is queued, stop the thread, raise its error if it had one."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        self._check()


# ---------------------------------------------------------------------------------------------- worker side

_WORKER: dict[str, Any] = {}


def _start_worker(tokenizer: Any, options: AlignOptions, aggregate: str, info: dict, vocab: int) -> None:
    """A worker's state, set once when it starts (the tokenizer is pickled once per worker, not per chunk)."""
    _WORKER.update(tokenizer=tokenizer, options=options, aggregate=aggregate, info=info, vocab=vocab, cmaps={})


def _prepare_chunk(chunk: Sequence[Snippet], tokenizer: Any = None, options: AlignOptions | None = None) -> list[Prepared]:
    tokenizer = tokenizer if tokenizer is not None else _WORKER["tokenizer"]
    options = options if options is not None else _WORKER["options"]
    return [prepare(tokenizer, s.source, s.language, options) for s in chunk]


def _finish_chunk(chunk: Sequence[Snippet], prepared: Sequence[Prepared], plans: list, stats: list, k: int,
                  state: dict[str, Any] | None = None) -> dict[str, bytes]:
    """A chunk's tables, as Parquet bytes, from its window rows' statistics."""
    from asc.corpus.tables import prepared_parts
    from asc.scores import fill_scores, vocab_array

    state = state if state is not None else _WORKER
    texts = vocab_array(state["tokenizer"], state["vocab"])
    scored = fill_scores([p.item for p in prepared], plans, stats, k, texts)
    return prepared_parts(state["info"], chunk, prepared, scored, texts, aggregate=state["aggregate"],
                          cmaps=state["cmaps"])


# ---------------------------------------------------------------------------------------------- the feed

class ChunkFeed:
    """The chunks of a run turned into their tables, in order (module doc): ``for i, tables in feed.tables(chunks)``.
    A context manager: leaving it stops the worker processes."""

    def __init__(self, bundle: ModelBundle, *, options: AlignOptions, aggregate: str, max_window: int | None,
                 cmaps: dict[str, CategoryMap], workers: int = 0) -> None:
        from asc.scores import TOP_K, model_vocab, window_size

        if workers < 0:
            raise InputError(f"cpu_workers={workers}: give 0 (in the run's process) or more worker processes")
        self.bundle, self.options, self.workers = bundle, options, workers
        self.window = window_size(bundle, max_window)
        self.k = min(TOP_K, len(bundle.tokenizer))
        self.state = {"tokenizer": bundle.tokenizer, "options": options, "aggregate": aggregate,
                      "info": bundle.summary(), "vocab": model_vocab(bundle), "cmaps": cmaps}
        self.pool: ProcessPoolExecutor | None = None
        if workers:
            self.pool = ProcessPoolExecutor(
                max_workers=workers, mp_context=get_context("spawn"), initializer=_start_worker,
                initargs=(bundle.tokenizer, options, aggregate, self.state["info"], self.state["vocab"]))

    def __enter__(self) -> ChunkFeed:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)

    def _forward(self, prepared: Sequence[Prepared]) -> tuple[list, list]:
        """The window plans of the chunk's snippets and their rows' statistics (the model's work)."""
        import asc.scores as scores  # the module, so a benchmark's stand-in for the forward passes is seen
        from asc.scores import window_rows

        self.bundle.require_causal()
        rows, plans = window_rows([p.ids for p in prepared], self.window)
        with self.bundle.lock:
            stats = scores._forward_rows(self.bundle, rows, self.k) if rows else []
        return plans, stats

    def tables(self, chunks: Sequence[Sequence[Snippet]],
               should_stop: Callable[[], bool] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
        """``(chunk number, tables as Parquet bytes)`` per chunk, in order.
        ``should_stop()`` is asked before each chunk's forward passes; chunks already scored are still given."""
        if self.pool is None:
            for i, chunk in enumerate(chunks):
                if should_stop is not None and should_stop():
                    return
                prepared = _prepare_chunk(chunk, self.state["tokenizer"], self.options)
                yield i, _finish_chunk(chunk, prepared, *self._forward(prepared), self.k, self.state)
            return
        pool, ahead = self.pool, 2 * self.workers
        preparing: deque[Future] = deque()
        finishing: deque[tuple[int, Future]] = deque()
        submitted = 0
        for i, chunk in enumerate(chunks):
            while submitted < len(chunks) and submitted <= i + ahead:
                preparing.append(pool.submit(_prepare_chunk, chunks[submitted]))
                submitted += 1
            if should_stop is not None and should_stop():
                break
            prepared = preparing.popleft().result()
            finishing.append((i, pool.submit(_finish_chunk, chunk, prepared, *self._forward(prepared), self.k)))
            while len(finishing) > self.workers or (finishing and finishing[0][1].done()):
                j, done = finishing.popleft()
                yield j, done.result()
        for fut in preparing:
            fut.cancel()
        while finishing:
            j, done = finishing.popleft()
            yield j, done.result()

