"""ui/branches_view.py without a model: the default branch point and how tokens read in its labels."""

from types import SimpleNamespace

import numpy as np

from asc.branching.forks import ForkPoints
from ui import branches_view


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
    assert branches_view._default_at(_node(texts), forks) == 4
    # only whitespace forks: the most uncertain of them
    texts[4] = "  "
    assert branches_view._default_at(_node(texts), forks) == 2
    # no fork point: the first generated token that is not whitespace (tokens 1 and 2 are)
    none = ForkPoints(margin=margin, entropy=np.full(6, 1.0), is_fork=np.zeros(6, bool))
    assert branches_view._default_at(_node(texts), none) == 3
    assert branches_view._default_at(_node(["def f(x):", "\n", " "]), None) == 1  # all whitespace: the first


def test_token_labels_draw_whitespace():
    assert branches_view._shown("\n        ") == "'⏎········'"
    assert branches_view._shown("\n    ") != branches_view._shown("\n        ")
    assert branches_view._shown(" for") == "'·for'" and branches_view._shown("\t") == "'→'"
