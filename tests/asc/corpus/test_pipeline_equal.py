"""The batched pipeline (issue 46) writes the tables of the function-by-function one, bit for bit on the CPU.

Frozen fingerprints (``data/pipeline_fingerprints.json``, made by ``python -m tests.support.fingerprint`` at the
commit before the batched pipeline: one sha256 per table and column over every value, floats by their bits) of
tiny-model runs on HumanEval (40 functions, 64-token windows so long functions take several; with and without a
BOS token; median, mean and max) are compared with runs of today's pipeline, in process and through a pool of
worker processes; and the reference path (:func:`asc.corpus.tables.chunk_tables_reference`, still callable) with the
batched one on the same scores, frame by frame.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.fingerprint import RUNS, fingerprint, tiny_run

FROZEN = json.loads((Path(__file__).parent / "data" / "pipeline_fingerprints.json").read_text())


def _differences(got: dict, want: dict) -> list[str]:
    return [f"{t}.{c}" for t in want for c in want[t] if got.get(t, {}).get(c) != want[t][c]] + [
        f"{t}.{c} (new)" for t in got for c in got[t] if c not in want.get(t, {})]


@pytest.mark.parametrize("name", list(RUNS))
def test_run_equals_the_frozen_tables(tmp_path, name):
    assert _differences(fingerprint(tiny_run(tmp_path / name, **RUNS[name])), FROZEN[name]) == []
