"""Fixtures of the attribution tests: the counting function, its explanation under the tiny model, and the target
``count`` in its return statement (6:12, a token with 40-odd tokens of prompt)."""

from __future__ import annotations

import pytest

from asc.explain import explain
from asc.why.targets import target_at

COUNT_CHARS = ("def count_chars(string, character):\n    count = 0\n    for letter in string:\n"
               "        if letter == character:\n            count += 1\n    return count\n")


@pytest.fixture(scope="module")
def ex(tiny):
    return explain(tiny, COUNT_CHARS)


@pytest.fixture(scope="module")
def at_return(tiny, ex):
    return target_at(tiny, ex, 6, 12)
