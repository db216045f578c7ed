"""Fixtures of the INSPECT tests: the built-in algorithms corpus, loaded once."""

import pytest


@pytest.fixture(scope="session")
def algorithms():
    from asc.corpus.sources import load_corpus

    return load_corpus("algorithms")
