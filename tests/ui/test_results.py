"""ui/results.py: the inspector's result is a frozen, typed object (no dict keyed by strings)."""

import dataclasses
import json

import pytest

from asc import explain
from asc.generate import Decoding, complete
from ui.results import InspectorResult
from ui.widgets import Settings


def _settings() -> Settings:
    fields = {f.name: None for f in dataclasses.fields(Settings)}
    return Settings(**{**fields, "model": "tiny-random", "trust_remote_code": False, "device": "cpu",
                       "dtype": "float32"})


def test_explain_has_no_prompt_and_complete_knows_where_and_why_it_stopped(tiny):
    code = "def f(x):\n    return x\n"
    shown = InspectorResult(explain(tiny, code), "tiny-random", _settings())
    assert shown.n_prompt is None and shown.stop is None and shown.decoding is None
    comp = complete(tiny, "def f(x):\n", max_new_tokens=8)
    done = InspectorResult(explain(tiny, comp.text), "tiny-random", _settings(), comp, Decoding(8, 0.0, 0.95, 0))
    assert done.n_prompt == comp.n_prompt > 0 and done.stop == comp.stop_reason
    assert json.loads(json.dumps(done.decoding.to_dict())) == {"max_new_tokens": 8, "temperature": 0.0,
                                                               "top_p": 0.95, "seed": 0, "language": "python",
                                                               "stop_at_function_end": True}
    with pytest.raises(dataclasses.FrozenInstanceError):
        done.model = "other"  # type: ignore[misc]
