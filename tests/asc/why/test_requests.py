"""asc/why/requests.py: attribution and patching requests check themselves and run as the functions they name;
the default target's policy."""

import numpy as np
import pytest

from asc.errors import InputError
from asc.explain import explain
from asc.why.attribute import DEFAULT_STEPS, attribute
from asc.why.corrupt import corrupt
from asc.why.patching import patch
from asc.why.requests import (
    AttributionRequest,
    PatchingRequest,
    default_target_token,
    explainable_tokens,
)

SRC = "def count_chars(string, character):\n    count = 0\n    for letter in string:\n        count += 1\n"


@pytest.fixture(scope="module")
def ex(tiny):
    return explain(tiny, SRC)


def test_explainable_tokens_are_those_with_a_prediction(ex):
    tokens = explainable_tokens(ex)
    assert tokens[0] >= 1 and all(not np.isnan(ex.scores.prob[i]) for i in tokens)
    assert len(tokens) == int((~np.isnan(ex.scores.prob[1:])).sum())


def test_the_default_target_is_the_least_confident_token_or_the_selected_nodes_last(ex):
    tokens = explainable_tokens(ex)
    least = default_target_token(ex)
    assert least == min(tokens, key=lambda i: (ex.scores.prob[i], i))
    node = int(np.flatnonzero(np.array(ex.tree.type) == "for_statement")[0])
    mine = [int(i) for i in ex.alignment.tokens_of(node) if int(i) in set(tokens)]
    assert default_target_token(ex, node) == mine[-1]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({}, "one of the two"), ({"index": 3, "node": 2}, "one of the two"),
    ({"index": 3, "method": "lime"}, "not one of grad, ig, occlusion"),
    ({"node": 2, "contrast": "x"}, "a contrast compares two tokens"),
    ({"index": 3, "method": "ig", "steps": 0}, "from 1 to"),
])
def test_a_bad_attribution_request_names_the_fix(kwargs, message):
    with pytest.raises(InputError, match=message):
        AttributionRequest(**kwargs)


def test_only_integrated_gradients_keep_their_points():
    assert AttributionRequest(index=3, method="grad", steps=64).steps == DEFAULT_STEPS
    ig = AttributionRequest(index=3, method="ig", steps=64)
    assert ig.steps == 64 and ig.with_method("occlusion").steps == DEFAULT_STEPS
    assert ig.with_method("grad").with_method("ig").steps == DEFAULT_STEPS and ig.with_method("ig") == ig


def test_requests_run_as_the_functions_they_name(tiny, ex):
    index = default_target_token(ex)
    got = AttributionRequest(index=index, method="ig", steps=4).run(tiny, ex)
    want = attribute(tiny, SRC, index, "ig", 4, explanation=ex)
    assert np.array_equal(got.token_attr, want.token_attr, equal_nan=True) and got.value == want.value
    spec = "rename:count:total"
    patched = PatchingRequest(index, spec).run(tiny, ex)
    direct = patch(tiny, corrupt(SRC, spec), index)
    assert np.array_equal(patched.restored, direct.restored, equal_nan=True) and patched.clean_value == direct.clean_value
    with pytest.raises(InputError, match="spans 'all' is not one of changed, after"):
        PatchingRequest(index, spec, "all")
