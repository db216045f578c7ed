"""asc/branching/requests.py: branch requests check themselves and run; the default branch point's policy."""

from types import SimpleNamespace

import numpy as np
import pytest

from asc.branching.branches import branch
from asc.branching.forks import ForkPoints
from asc.branching.requests import BranchRequest, ExploreRequest, default_fork_token
from asc.errors import InputError
from asc.generate import Decoding, complete


def _node(texts: list[str], n_prompt: int = 1) -> SimpleNamespace:
    completion = SimpleNamespace(ids=np.arange(len(texts)), n_prompt=n_prompt)
    scores = SimpleNamespace(text=texts)
    return SimpleNamespace(completion=completion, fork_index=n_prompt, branch=None,
                           explanation=SimpleNamespace(scores=scores))


def test_the_default_branch_point_skips_whitespace_forks():
    # token 2 (a newline and indentation) is the most uncertain fork point, token 4 ("for") the next
    texts = ["def f(x):", "\n   ", "\n    ", " y", " for", " x"]
    margin = np.array([np.nan, 0.5, 0.01, 0.5, 0.05, 0.5])
    forks = ForkPoints(margin=margin, entropy=np.full(6, 1.0), is_fork=margin < 0.1)
    assert default_fork_token(_node(texts), forks) == 4
    # only whitespace forks: the most uncertain of them
    texts[4] = "  "
    assert default_fork_token(_node(texts), forks) == 2
    # no fork point: the first generated token that is not whitespace (tokens 1 and 2 are)
    none = ForkPoints(margin=margin, entropy=np.full(6, 1.0), is_fork=np.zeros(6, bool))
    assert default_fork_token(_node(texts), none) == 3
    assert default_fork_token(_node(["def f(x):", "\n", " "]), None) == 1  # all whitespace: the first


def test_a_branch_of_a_branch_starts_after_its_forced_token():
    texts = ["def f(x):", " a", " b", " c"]
    node = _node(texts)
    node.branch, node.fork_index = object(), 1  # forced token 1: the default starts at 2
    assert default_fork_token(node, None) == 2


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"at": 2}, "choose an alternative or type a replacement"),
    ({"at": 2, "choose": 1, "token": "x"}, "one of the two"),
    ({"at": 2, "choose": 0}, "count from 1"),
    ({"at": 0, "choose": 1}, "from 1"),
])
def test_a_bad_branch_request_names_the_fix(kwargs, message):
    with pytest.raises(InputError, match=message):
        BranchRequest(**kwargs)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"max_new_tokens": 0}, "at least 1"), ({"temperature": -1.0}, "0 \\(greedy\\)"), ({"top_p": 0.0}, "above 0"),
])
def test_one_decoding_type_refuses_bad_settings(kwargs, message):
    with pytest.raises(InputError, match=message):
        Decoding(**kwargs)


def test_decoding_round_trips_through_json():
    d = Decoding(12, 0.7, 0.9, 3, "java", False)
    assert Decoding.from_dict(d.to_dict() | {"unknown": 1}) == d and Decoding.from_dict({}) == Decoding()


def test_requests_run_as_the_functions_they_name(tiny):
    trunk = complete(tiny, "def f(x):\n    return", 6)
    decoding = Decoding(max_new_tokens=4)
    got = BranchRequest(3, choose=2, decoding=decoding).run(tiny, trunk)
    want = branch(tiny, trunk, 3, choose=2, max_new_tokens=4)
    assert np.array_equal(got.completion.ids, want.completion.ids) and got.settings == decoding
    margin = np.linspace(0.0, 0.09, len(trunk.ids))
    forks = ForkPoints(margin=margin, entropy=np.full(len(margin), 3.0), is_fork=np.ones(len(margin), bool))
    explored = ExploreRequest(2, decoding, generated_only=False).run(tiny, trunk, forks)
    assert [b.fork_index for b in explored] == [1, 2]
