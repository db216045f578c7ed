"""asc.missing: the four words for a missing value, their meanings, and how CSV and JSON exports carry them."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pandas as pd
import pytest

from asc.concepts import UNCATEGORIZED, category_label
from asc.export import csv_text
from asc.missing import ABSENT, CONSTANT, MEANINGS, MISSING_WORDS, TOO_FEW, UNDEFINED, is_missing, json_records


def test_four_words_each_with_its_meaning():
    assert MISSING_WORDS == (ABSENT, TOO_FEW, CONSTANT, UNDEFINED) == ("absent", "too few", "constant", "undefined")
    assert set(MEANINGS) == set(MISSING_WORDS) and all(len(m) > 20 for m in MEANINGS.values())
    assert UNCATEGORIZED not in MISSING_WORDS  # a category label, not a missing value


@pytest.mark.parametrize("value", [None, math.nan, np.float32("nan"), np.float64("nan"), pd.NA, pd.NaT])
def test_is_missing(value):
    assert is_missing(value)


@pytest.mark.parametrize("value", [0, 0.0, "", "absent", False, np.int64(0)])
def test_zero_and_text_are_values(value):
    assert not is_missing(value)


def test_category_label():
    assert category_label(None) == category_label(math.nan) == UNCATEGORIZED == "uncategorized"
    assert category_label("Scope") == "Scope"


FRAME = pd.DataFrame({"category": ["Global", "Exceptions"], "median": [0.61, np.nan],
                      "n_nodes": pd.array([10, None], dtype="Int64")})


def test_csv_cells_carry_the_word():
    text = csv_text(FRAME)
    assert text.splitlines()[2] == "Exceptions,absent,absent"
    back = pd.read_csv(io.StringIO(text), na_values=list(MISSING_WORDS))
    assert math.isnan(back["median"].iloc[1]) and back["median"].iloc[0] == pytest.approx(0.61)
    assert csv_text(FRAME, missing=TOO_FEW).splitlines()[2] == "Exceptions,too few,too few"


def test_json_records_carry_null_and_the_reason():
    records = json_records(FRAME)
    assert records[0] == {"category": "Global", "median": 0.61, "n_nodes": 10}  # no gap: no reason field
    assert records[1] == {"category": "Exceptions", "median": None, "n_nodes": None,
                          "missing": {"median": "absent", "n_nodes": "absent"}}
    json.dumps(records, allow_nan=False)  # valid JSON: no NaN
    per_row = json_records(FRAME, [ABSENT, CONSTANT])
    assert per_row[1]["missing"] == {"median": "constant", "n_nodes": "constant"}
    assert isinstance(records[0]["n_nodes"], int)  # numpy scalars as plain numbers
