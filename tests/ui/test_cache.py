"""ui/cache.py: one model at a time in the app process; choosing another frees the previous one."""


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
