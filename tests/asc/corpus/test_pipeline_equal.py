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


@pytest.mark.parametrize("aggregate", ["median", "mean", "max"])
def test_batched_tables_equal_the_reference_frames(tiny_bos, aggregate):
    import pandas as pd

    from asc.align import AlignOptions
    from asc.corpus.sources import load_corpus
    from asc.corpus.tables import chunk_tables, chunk_tables_reference
    from asc.scores import score_texts

    chunk = load_corpus("humaneval", limit=10)
    scored = score_texts(tiny_bos, [s.source for s in chunk])
    info, options = tiny_bos.summary(), AlignOptions()
    want = chunk_tables_reference(info, chunk, scored, aggregate=aggregate, options=options)
    got = chunk_tables(info, chunk, scored, aggregate=aggregate, options=options)
    assert list(got) == list(want)
    for table in want:
        pd.testing.assert_frame_equal(got[table], want[table], check_exact=True)


def test_parts_are_the_bytes_pandas_writes(tiny_bos):
    from asc.batch import prepare, score_prepared
    from asc.corpus.runs import parquet_bytes
    from asc.corpus.sources import load_corpus
    from asc.corpus.tables import prepared_parts, prepared_tables
    from asc.scores import model_vocab, vocab_array

    chunk = load_corpus("humaneval", limit=6)
    prepared = [prepare(tiny_bos.tokenizer, s.source) for s in chunk]
    scored = score_prepared(tiny_bos, prepared)
    frames = prepared_tables(tiny_bos.summary(), chunk, prepared, scored, aggregate="median")
    parts = prepared_parts(tiny_bos.summary(), chunk, prepared, scored,
                           vocab_array(tiny_bos.tokenizer, model_vocab(tiny_bos)), aggregate="median")
    assert {t: parquet_bytes(df) for t, df in frames.items()} == parts


def test_a_pool_of_worker_processes_writes_the_same_tables(tmp_path):
    """Two spawned workers prepare and finish the chunks (a few seconds: their start); parts come back in order."""
    run = tiny_run(tmp_path / "pool", **RUNS["mean"], cpu_workers=2)
    assert _differences(fingerprint(run), FROZEN["mean"]) == []
    assert len(list((run / "snippets").glob("part-*.parquet"))) == 2  # 12 functions in chunks of 8


def test_default_workers_spare_the_cores_a_cpu_model_uses():
    from asc.corpus.feed import MAX_WORKERS, default_workers

    assert default_workers("cpu", 64) == 0 and default_workers("cuda", 2) == 0
    assert default_workers("cuda", 4) == 3 and default_workers("cuda", 64) == MAX_WORKERS


def test_a_failing_write_stops_the_run_with_its_error(tmp_path):
    from asc.corpus.feed import PartWriter

    def write(part, tables):
        raise OSError("disk full")

    writer = PartWriter(write, depth=1)
    writer.put(0, {}, 1)
    with pytest.raises(OSError, match="disk full"):
        for part in range(1, 5):
            writer.put(part, {}, 1)
        writer.close()
    assert writer.written == []
