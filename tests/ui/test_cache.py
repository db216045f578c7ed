"""ui/cache.py: one model at a time in the app process; choosing another frees the previous one; cached results
are re-read when a run writes more."""


def test_switching_models_frees_the_previous_one(tmp_path):
    import gc
    import weakref

    from asc import tiny_random_model
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
