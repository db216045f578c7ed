"""Fixtures of the study tests: the four-group test study and a fresh SQLite store of it."""

from __future__ import annotations

import pytest

from asc.study.definition import parse_study
from asc.study.store import StudyStore, default_url
from tests.helpers import STORE_STUDY


@pytest.fixture()
def study():
    return parse_study(STORE_STUDY, "store-test.yaml")


@pytest.fixture()
def store(tmp_path, study):
    s = StudyStore(default_url(tmp_path), study)
    yield s
    s.close()
