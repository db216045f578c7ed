"""ui/cache.py: one model at a time in the app process; choosing another frees the previous one; cached results
are re-read when a run writes more."""


def test_switching_models_frees_the_previous_one(tmp_path):
    import gc
    import weakref

    from tests.support.models import tiny_random_model
    from ui import cache

    other = tmp_path / "tiny-folder"
    tiny = tiny_random_model()
    tiny.model.save_pretrained(other)
    tiny.tokenizer.save_pretrained(other)
    del tiny
    cache.get_bundle.clear()
    first = weakref.ref(cache.get_bundle("tiny-random", False))
    assert cache.get_bundle("tiny-random", False) is first()  # cached: loaded once
    second = cache.get_bundle(str(other), False)
    gc.collect()
    assert first() is None and second.name == "tiny-folder"
    cache.get_bundle.clear()


def test_blanca_loaders_see_what_a_run_writes_next(tiny, tmp_path):
    """The BLANCA page's task sets, scores and summaries are cached, and re-read once a run adds a task file or
    scores another task (what a finished job does), so the page shows its results at the next rerun."""

    from probes.blanca.build import load_task_set
    from probes.blanca.runs import run_blanca
    from tests.helpers import write_blanca_set
    from ui import cache

    out = tmp_path / "blanca"
    assert cache.blanca_task_sets(out) == ({}, {})
    folder = write_blanca_set(out, skipped={"U": "not yet"})
    sets, broken = cache.blanca_task_sets(out)
    assert list(sets) == ["stdlib-seed0"] and not broken and sets["stdlib-seed0"].skipped == {"U": "not yet"}
    assert not len(cache.blanca_scores(out, "stdlib-seed0"))
    task_set = load_task_set(folder)
    run_blanca(tiny, task_set.only(["H"]), out)  # H first
    assert set(cache.blanca_scores(out, "stdlib-seed0")["task"]) == {"H"}
    assert set(cache.blanca_summary(out, "stdlib-seed0", "test", {})["task"]) == {"H"}
    run_blanca(tiny, task_set, out)  # R, L, F added (new score files: the stamps change at once); H read back
    assert set(cache.blanca_scores(out, "stdlib-seed0")["task"]) == {"R", "L", "F", "H"}
    assert set(cache.blanca_summary(out, "stdlib-seed0", "test", {})["task"]) == {"R", "L", "F", "H"}
    assert cache.blanca_finetuned(out, "stdlib-seed0") == []


def test_the_inspected_models_slot_is_one_entry_whatever_the_call_form(monkeypatch):
    """Streamlit keys a cache by the arguments as given: ``get_bundle(spec)`` (the study page, the attention
    snippet) and ``get_bundle(spec, trust)`` were two entries of the one-model slot, each evicting the other."""
    from ui.cache import get_bundle, get_job_bundle, models

    loads: list[tuple] = []
    monkeypatch.setattr(models, "load_model", lambda spec, **kw: loads.append((spec, *kw.values())) or object())
    get_bundle.clear()
    get_job_bundle.clear()
    try:
        first = get_bundle("x/y")
        assert get_bundle("x/y", False) is first
        assert get_bundle("x/y", trust_remote_code=False, device="auto", dtype="auto") is first
        assert models.bundle_for("x/y", False, "auto", "auto") is first
        assert loads == [("x/y", False, "auto", "auto")]
        assert get_job_bundle("x/y") is not first  # the jobs' slot is another cache
        assert get_bundle("x/y", False, "cpu") is not first and len(loads) == 3  # another placement: reloaded
    finally:
        get_bundle.clear()
        get_job_bundle.clear()


def test_the_change_stamp_moves_when_a_file_is_added_removed_or_rewritten(tmp_path):
    import os

    from ui.cache.stamp import change_stamp, run_stamp

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text("1")
    one = change_stamp([a])
    assert change_stamp([a]) == one and change_stamp([a, tmp_path / "gone"]) == one  # a missing file is left out
    b.write_text("2")
    two = change_stamp([a, b])
    assert two != one and change_stamp([b, a]) == two  # added; the order of the list does not matter
    os.utime(b, ns=(b.stat().st_atime_ns, b.stat().st_mtime_ns + 1))
    assert change_stamp([a, b]) != two  # rewritten with the same size: a newer modification time
    b.unlink()
    assert change_stamp([a, b]) == one  # removed
    run = tmp_path / "run"
    (run / "snippets").mkdir(parents=True)
    (run / "meta.json").write_text("{}")
    empty = run_stamp(run)
    (run / "snippets" / "part-00000.parquet").write_bytes(b"x")
    assert run_stamp(run) != empty  # a growing run's new chunk refreshes its tables


def test_the_gluecode_accuracy_is_bootstrapped_once_per_change_of_the_predictions(monkeypatch, tmp_path):
    """The page asked for the accuracy table (1,000 bootstrap resamples) on every rerun; now once per change."""
    import os
    from types import SimpleNamespace

    import probes.gluecode as gluecode  # the facade ui.cache imports them from, when called
    from ui import cache

    calls: list[list[str]] = []
    monkeypatch.setattr(gluecode, "load_predictions", lambda path, task_set: [SimpleNamespace(task="OPS"),
                                                                              SimpleNamespace(task="CALL")])
    monkeypatch.setattr(gluecode, "accuracy_table", lambda predictions: calls.append([p.task for p in predictions]))
    file = tmp_path / "smollm2" / "algorithms-100-seed0" / "OPS-function.jsonl"
    file.parent.mkdir(parents=True)
    file.write_text("{}\n")
    for _ in range(3):  # three reruns of the page
        cache.gluecode_accuracy(tmp_path, "algorithms-100-seed0", ("OPS",))
    assert calls == [["OPS"]]  # once, and only the shown tasks
    file.write_text("{}\n{}\n")  # the run wrote another chunk
    os.utime(file, ns=(1, 1))
    cache.gluecode_accuracy(tmp_path, "algorithms-100-seed0", ("OPS",))
    assert len(calls) == 2
