"""asc.corpus.resume: which settings must match to resume a run folder (a device may change, a dtype not)."""

import dataclasses
import json

import pytest

from asc.corpus import load_run, run_corpus
from asc.corpus.resume import settings_differences
from asc.errors import CorpusError
from tests.helpers import corpus_snippets

MODEL = {"name": "m", "layers": 2, "parameters": 10, "device": "cuda:0", "dtype": "bfloat16", "source": "m",
         "context_length": 64, "kind": "decoder"}
SETTINGS = {"format": 1, "model": MODEL, "aggregate": "median", "align": {"whitespace": "enclosing"},
            "max_window": None}


def _with_model(**changes) -> dict:
    return SETTINGS | {"model": MODEL | changes}


def test_another_device_in_the_same_dtype_resumes():
    for device in ("cpu", "cuda:1", "auto-map", "mps"):
        assert settings_differences(SETTINGS, _with_model(device=device)) == []


def test_another_dtype_is_a_difference_that_names_the_fix():
    [difference] = settings_differences(SETTINGS, _with_model(device="cpu", dtype="float32"))
    assert difference.startswith("model.dtype: 'bfloat16' there, 'float32' here")
    assert "--dtype bfloat16" in difference and "--out" in difference


def test_other_differences_are_still_listed_next_to_the_device():
    differences = settings_differences(SETTINGS, _with_model(name="other", device="cpu") | {"aggregate": "mean"})
    assert differences == ["model.name: 'm' there, 'other' here", "aggregate: 'median' there, 'mean' here"]
    assert settings_differences(None, SETTINGS) == [f"{k}: None there, {SETTINGS[k]!r} here" for k in SETTINGS
                                                    if SETTINGS[k] is not None]


def test_a_description_from_before_dtypes_were_recorded_is_float32():
    old = SETTINGS | {"model": {k: v for k, v in MODEL.items() if k not in ("device", "dtype")}}
    assert settings_differences(old, _with_model(device="cpu", dtype="float32")) == []
    [difference] = settings_differences(old, _with_model(dtype="bfloat16"))
    assert difference.startswith("model.dtype: 'float32' there, 'bfloat16' here") and "--dtype float32" in difference


def _recorded_as(out, **model) -> None:
    meta = json.loads((out / "meta.json").read_text())
    meta["settings"]["model"].update(model)
    (out / "meta.json").write_text(json.dumps(meta))


def test_a_run_started_on_a_gpu_resumes_on_the_cpu_in_the_same_dtype(tiny, tmp_path):
    out = tmp_path / "run"
    run_corpus(tiny, corpus_snippets(2), out, progress=False)
    _recorded_as(out, device="cuda:0")  # as if the first part had been scored on a GPU
    run_corpus(tiny, corpus_snippets(4), out, progress=False)
    run = load_run(out)
    assert sorted(run.snippets["id"]) == ["s0", "s1", "s2", "s3"]
    assert run.meta.model.device == "cuda:0"  # the folder keeps its first description


def test_a_run_in_another_dtype_is_refused_naming_the_fix(tiny, tmp_path):
    out = tmp_path / "run"
    run_corpus(dataclasses.replace(tiny, dtype="bfloat16"), corpus_snippets(2), out, progress=False)
    with pytest.raises(CorpusError, match="other settings") as err:
        run_corpus(tiny, corpus_snippets(4), out, progress=False)
    assert "model.dtype: 'bfloat16' there, 'float32' here" in str(err.value)
    assert "--dtype bfloat16" in str(err.value) and "--out" in str(err.value)
    assert len(load_run(out).snippets) == 2  # nothing was written
