"""Exact fingerprints of a run folder's tables: one sha256 per (table, column) over every value, bit for bit.

The pipeline equality test (tests/asc/corpus/test_pipeline_equal.py) compares a run of the batched pipeline with
frozen fingerprints made from the function-by-function pipeline before it was replaced (``python -m
tests.support.fingerprint``, run at the commit before; the JSON beside the test). Floats are hashed by their
``float.hex`` (NaN as ``nan``), so any difference in the last bit changes the fingerprint; the column's dtype is
part of it.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

TABLES = ("snippets", "tokens", "nodes", "concepts", "digest")
#: the frozen runs: name -> tiny_run's arguments
RUNS: dict[str, dict[str, Any]] = {"plain": {}, "bos": {"add_bos": True}, "mean": {"limit": 12, "aggregate": "mean"},
                                   "max": {"limit": 12, "aggregate": "max"}}


def _canon(value: Any) -> Any:
    import numpy as np

    if isinstance(value, float | np.floating):
        return "nan" if math.isnan(value) else float(value).hex()
    if isinstance(value, np.ndarray | list | tuple):
        return [_canon(v) for v in list(value)]
    if isinstance(value, np.integer | np.bool_):
        return value.item()
    if value is None:
        return None
    return value if isinstance(value, int | str | bool) else repr(value)


def column_digest(series: Any) -> str:
    """sha256 of a column's dtype and values (floats bit for bit)."""
    body = json.dumps([str(series.dtype), [_canon(v) for v in series.tolist()]])
    return hashlib.sha256(body.encode("utf-8")).hexdigest()[:16]


def fingerprint(folder: str | Path) -> dict[str, dict[str, str]]:
    """{table: {column: digest}} over the folder's finished parts, each table read whole."""
    import pandas as pd

    folder = Path(folder)
    out = {}
    for table in TABLES:
        parts = sorted((folder / table).glob("part-*.parquet"))
        df = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)
        out[table] = {c: column_digest(df[c]) for c in df.columns} | {"__rows__": str(len(df))}
    return out


def tiny_run(out: Path, limit: int = 40, add_bos: bool = False, **kwargs: Any) -> Path:
    """The test's run: the tiny random model (64-token windows) on the first ``limit`` HumanEval problems."""
    from asc.corpus.runs import run_corpus
    from asc.corpus.sources import load_corpus
    from tests.support.models import tiny_random_model

    return run_corpus(tiny_random_model(add_bos=add_bos), load_corpus("humaneval", limit=limit), out,
                      corpus="humaneval", progress=False, **kwargs)


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        found = {}
        for name, kwargs in RUNS.items():
            found[name] = fingerprint(tiny_run(Path(tmp) / name, **kwargs))
        print(json.dumps(found, indent=1, sort_keys=True))
