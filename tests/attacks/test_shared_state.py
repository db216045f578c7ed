"""Shared state of the app process: one user's work must not change what another user sees.

* background jobs load their model in their own cache slot: a job on model B leaves the model an
  inspector user is looking at (model A) loaded, and the job's ``trust_remote_code`` reaches its loader;
* the causal results store is mutated under a lock (inserts and evictions never overlap);
* estimating effects leaves dowhy's log level as it was;
* a category mapping, shared by every caller of the cached loader, cannot be mutated.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

SOURCE = "def add(a, b):\n    return a + b\n"


@pytest.fixture
def second_model(tmp_path) -> str:
    """A second tiny model (a local Hugging Face folder), so model A and model B differ."""
    from tests.support.models import tiny_random_model

    folder = tmp_path / "tiny-b"
    bundle = tiny_random_model(seed=1)
    bundle.model.save_pretrained(folder)
    bundle.tokenizer.save_pretrained(folder)
    return str(folder)


def test_a_job_on_another_model_keeps_the_inspectors_model(second_model, tmp_path):
    from ui import cache, jobs

    cache.get_bundle.clear()
    cache.cached_explain.clear()
    try:
        inspected = cache.get_bundle("tiny-random", False)
        before = cache.cached_explain("tiny-random", False, SOURCE, "python", "median").to_dict()
        seen: list[str] = []
        job = jobs.job_queue().submit_call("layers", second_model, "other model", tmp_path / "out",
                                           lambda bundle, progress, stop: seen.append(bundle.name))
        assert jobs.job_queue().wait(120)
        assert job.status == "done", job.error
        assert seen == ["tiny-b"]
        assert cache.get_bundle("tiny-random", False) is inspected  # not evicted by the job's model
        cache.cached_explain.clear()  # recompute: the inspector's model still gives the same explanation
        assert cache.cached_explain("tiny-random", False, SOURCE, "python", "median").to_dict() == before
    finally:
        cache.get_bundle.clear()
        cache.cached_explain.clear()


def test_a_job_passes_its_trust_remote_code_to_the_loader(tmp_path):
    from asc.jobs import JobKind, JobQueue
    from tests.support.models import tiny_random_model

    calls: list[tuple[str, bool]] = []

    def load(spec: str, trust_remote_code: bool = False):
        calls.append((spec, trust_remote_code))
        return tiny_random_model()

    queue = JobQueue(load)
    trusted = queue.submit_call(JobKind.LAYERS, "some/model", "trusted", tmp_path / "a", lambda b, p, s: None,
                                trust_remote_code=True)
    plain = queue.submit_call(JobKind.LAYERS, "other/model", "plain", tmp_path / "b", lambda b, p, s: None)
    assert queue.wait(60)
    assert trusted.trust_remote_code and not plain.trust_remote_code
    assert calls == [("some/model", True), ("other/model", False)]
    job = queue.submit("tiny-random", str(tmp_path / "missing"), None, tmp_path / "runs", trust_remote_code=True)
    assert queue.wait(60) and job.trust_remote_code and job.status == "failed"


def test_the_job_queue_loads_through_its_own_cache_slot(monkeypatch, tmp_path):
    from ui import cache, jobs
    from ui.cache import models

    loads: list[tuple[str, bool]] = []
    model = object()
    monkeypatch.setattr(models, "load_model",
                        lambda spec, trust_remote_code=False, **placement: loads.append((spec, trust_remote_code))
                        or model)
    cache.get_job_bundle.clear()
    try:
        seen: list[object] = []
        for _ in range(2):
            jobs.job_queue().submit_call("layers", "x/y", "slot", tmp_path / "o",
                                         lambda bundle, progress, stop: seen.append(bundle), trust_remote_code=True)
        assert jobs.job_queue().wait(60)
        assert seen == [model, model] and loads == [("x/y", True)]  # loaded once, with the job's setting
        assert cache.get_job_bundle("x/y", True) is model
    finally:
        cache.get_job_bundle.clear()


class _Watched(dict):
    """A dict that records when two threads mutate it at the same time."""

    def __init__(self) -> None:
        super().__init__()
        self.inside = 0
        self.overlaps = 0
        self._count = threading.Lock()

    def _enter(self) -> None:
        with self._count:
            self.inside += 1
            if self.inside > 1:
                self.overlaps += 1
        time.sleep(0.005)

    def _leave(self) -> None:
        with self._count:
            self.inside -= 1

    def __setitem__(self, key, value) -> None:
        self._enter()
        try:
            super().__setitem__(key, value)
        finally:
            self._leave()

    def pop(self, key, *default):
        self._enter()
        try:
            return super().pop(key, *default)
        finally:
            self._leave()


def test_the_causal_store_is_mutated_under_a_lock(monkeypatch):
    import streamlit as st

    import asc.causal
    from asc.corpus.runs import RunData
    from ui import cache
    from ui.cache import runs

    store = _Watched()
    monkeypatch.setattr(runs, "_causal_store", lambda: store)
    monkeypatch.setattr(runs, "CAUSAL_KEEP", 3)
    monkeypatch.setattr(runs, "run_stamp", lambda path: "1")
    run = RunData(Path("run"), {}, pd.DataFrame({"language": ["python"]}), None, None, None)
    monkeypatch.setattr(runs, "_run", lambda path, stamp: run)
    monkeypatch.setattr(runs, "run_title", lambda path: str(path))
    monkeypatch.setattr(st, "progress", lambda *a, **k: type("Bar", (), {"progress": lambda *a, **k: None,
                                                                          "empty": lambda self: None})())
    monkeypatch.setattr(asc.causal, "snippet_table", lambda run: "table")
    monkeypatch.setattr(asc.causal, "causal_table", lambda table, treatments, **k: f"result {k['seed']}")

    results: dict[int, asc.causal.CausalResult] = {}
    errors: list[BaseException] = []

    def user(seed: int) -> None:
        try:
            for _ in range(5):
                results[seed] = cache.causal_result(Path("run"), 30, 10, seed)
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=user, args=(seed,)) for seed in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert {seed: (r.snippets, r.table) for seed, r in results.items()} == {seed: ("table", f"result {seed}")
                                                                           for seed in range(8)}
    assert store.overlaps == 0, f"{store.overlaps} overlapping mutations of the shared causal store"
    assert len(store) <= 3


def _confounded(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 4))
    t = z[:, 0] * 0.3 + rng.uniform(size=n)
    return pd.DataFrame({"T": t, "loss": 2 * t + z.sum(1) + rng.normal(size=n) * 0.1,
                         "seq_size": z[:, 0], "ast_levels": z[:, 1], "n_nodes": z[:, 2], "complexity": z[:, 3]})


@pytest.mark.parametrize("level", [logging.NOTSET, logging.DEBUG, logging.WARNING])
def test_estimating_leaves_dowhys_log_level_as_it_was(level):
    import dowhy  # noqa: F401 - imported first, so its own set-up is not what we measure

    from asc.causal import causal_table, estimate

    logger = logging.getLogger("dowhy")
    old = logger.level
    logger.setLevel(level)
    try:
        estimate(_confounded(), "T", refute=False)
        assert logger.level == level
        causal_table(_confounded(), ["T"], min_snippets=10, simulations=2)
        assert logger.level == level
    finally:
        logger.setLevel(old)


def test_a_category_mapping_cannot_be_mutated():
    import pickle

    from asc.concepts import load_categories

    cmap = load_categories("python")
    with pytest.raises(TypeError):
        cmap.type_to_category["identifier"] = "Nope"  # type: ignore[index]
    with pytest.raises(TypeError):
        del cmap.type_to_category[next(iter(cmap.type_to_category))]  # type: ignore[attr-defined]
    assert load_categories("python").type_to_category == cmap.type_to_category
    copy = pickle.loads(pickle.dumps(cmap))  # results that hold a mapping still cross processes
    assert copy == cmap and copy.category_of("if_statement") == cmap.category_of("if_statement")
