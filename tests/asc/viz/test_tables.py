"""asc.viz.tables, Table I (asc.viz.corpus.styled_table) and Table II (asc.viz.causal.table2_views) as shown: every
value or the word that says why it is missing, never None or a blank; source text in the least confident nodes."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from asc.explain import explain
from asc.viz.causal import EFFECT_COLUMNS, missing_reason, table2_views
from asc.viz.corpus import styled_table
from asc.viz.html import visible_whitespace
from asc.viz.tables import UNCATEGORIZED, shown, token_table, weakest_table

SRC = "def count(s, c):\n    n = 0\n    for x in s:\n        if x == c:\n            n += 1\n    return n\n"


def _no_blanks(frame: pd.DataFrame) -> None:
    cells = frame.to_numpy().ravel().tolist()
    assert not any(v is None or v == "" or (isinstance(v, float) and math.isnan(v)) or str(v) in ("None", "nan", "<NA>")
                   for v in cells), frame


def test_shown_writes_numbers_and_one_word_per_missing_cell():
    frame = pd.DataFrame({"name": ["a", None, "c"], "x": [0.12345, np.nan, None], "n": pd.array([3, None, 5], "Int64")})
    out = shown(frame, ["x", "n"], missing="absent", words=["name"])
    assert out["x"].tolist() == ["0.123", "absent", "absent"] and out["n"].tolist() == ["3", "absent", "5"]
    assert out["name"].tolist() == ["a", "absent", "c"]
    per_row = shown(frame, ["x"], missing=["-", "too few", "constant"])
    assert per_row["x"].tolist() == ["0.123", "too few", "constant"]
    assert frame["x"].isna().sum() == 2  # the input is left as it was


def test_the_least_confident_nodes_show_their_source_text(tiny):
    ex = explain(tiny, SRC)
    table = weakest_table(ex, 6)
    weakest = ex.weakest_nodes(6)
    assert table["node"].tolist() == weakest["id"].tolist() and len(table) == 6
    for node, text in zip(table["node"], table["text"], strict=True):
        want = " ⏎ ".join(line.strip() for line in ex.tree.text(int(node)).split("\n") if line.strip())
        assert text == (want if len(want) <= 40 else want[:40] + "…")
    assert table["value"].tolist() == [f"{v:.3f}" for v in weakest["value"]]
    assert set(table["category"]) <= set(c for c in ex.node_category if c) | {UNCATEGORIZED}
    _no_blanks(table)


def test_the_token_table_draws_whitespace_and_names_a_missing_prediction(tiny):
    ex = explain(tiny, SRC)
    table = token_table(ex, 0)  # the root: every token, the first one without a prediction (no BOS)
    s = ex.scores
    assert table["token"].tolist() == [visible_whitespace(t) for t in s.text]
    assert table["p"].iloc[0] == "absent" and table["rank"].iloc[0] == "absent"  # asc.missing's word, not a dash
    assert table["entropy"].iloc[0] == "absent" and table["top 3"].iloc[0] == "absent"
    assert table["p"].iloc[1] == f"{s.prob[1]:.3f}" and table["rank"].iloc[1] == str(int(s.rank[1]))
    assert table["top 3"].iloc[1].count(",") == 2
    _no_blanks(table)


def test_table1_has_a_row_per_category_and_says_absent():
    wide = pd.DataFrame({"model": ["m1", "m2"], "corpus": ["he", "he"], "snippets": [40, 12],
                         "Global": [0.70, 0.40], "Exceptions": [np.nan, 0.61]})
    styler = styled_table(wide, 0.6)
    table = styler.data
    assert table.columns.tolist() == ["category", "m1 · he", "m2 · he"]
    assert table["category"].tolist() == ["snippets", "Global", "Exceptions"]
    assert table.set_index("category").loc["Exceptions"].tolist() == ["absent", "0.610"]
    assert table.set_index("category").loc["snippets"].tolist() == ["40", "12"]
    html = styler.to_html()
    assert "absent" in html and "None" not in html and "background-color" in html
    _no_blanks(table)


def test_table1_cells_are_text_so_arrow_takes_them():
    """A column mixing ``absent`` and numbers fails Arrow's conversion (Streamlit logs ArrowInvalid and patches the
    column): every column of the shown Table I is text."""
    import pyarrow as pa

    wide = pd.DataFrame({"model": ["m1", "m2"], "corpus": ["he", "he"], "snippets": [40_000, 12],
                         "Global": [0.70, 0.40], "Exceptions": [np.nan, 0.61]})
    table = styled_table(wide, 0.6).data
    assert all(isinstance(v, str) for v in table.to_numpy().ravel())
    pa.Table.from_pandas(table)  # no ArrowInvalid ('absent' ... to double)
    assert table.set_index("category").loc["snippets"].tolist() == ["40,000", "12"]


def test_table1_colours_match_its_caption():
    """Red below the line, blue at or above it (paler within 0.1): never the amber of the confidence scale's middle."""
    from asc.viz.colors import ABOVE_LINE, BELOW_LINE, blend, rgb_channels

    wide = pd.DataFrame({"model": ["m"], "corpus": ["he"], "snippets": [3], "Global": [0.55], "Scope": [0.2],
                         "Iteration": [0.65], "Exceptions": [0.95]})
    html = styled_table(wide, 0.6).to_html()
    backgrounds = dict(re.findall(r"#T_\w+_row(\d)_col1 \{\s*background-color: ([^;]+);", html))
    for row, want in (("1", blend(BELOW_LINE, 0.5)), ("2", BELOW_LINE), ("3", blend(ABOVE_LINE, 0.5)),
                      ("4", ABOVE_LINE)):
        r, g, b = rgb_channels(backgrounds[row])
        assert (r, g, b) == rgb_channels(want)
        assert (r > b) == (row in ("1", "2"))  # red below the line, blue at or above


@pytest.mark.parametrize("status,word", [
    ("estimated", "undefined"), ("not enough data (absent from every snippet)", "absent"),
    ("not enough data (8 snippets; at least 30 needed)", "too few"),
    ("not enough data (one value in all 12 snippets: nothing to compare)", "constant")])
def test_missing_reason_reads_the_status(status, word):
    assert missing_reason(status) == word


def test_table2_views_fit_in_two_tables_and_leave_no_blank():
    result = pd.DataFrame([
        {"treatment": "Global", "n": 40, "r_seq_size": 0.2, "r_ast_levels": 0.3, "r_n_nodes": 0.1,
         "r_complexity": np.nan, "r_loss": -0.5, "p_loss": 0.0, "ate": -0.9, "ci_low": -1.5, "ci_high": -0.3,
         "placebo": "passed: the placebo effect is near zero", "random_cause": "failed: it moves",
         "subset": "passed: it holds", "status": "estimated"},
        {"treatment": "category: Exceptions", "n": 0, "status": "not enough data (absent from every snippet)"}])
    correlations, effects = table2_views({"m": result})
    assert len(correlations.columns) <= 9 and len(effects.columns) <= 10  # each fits a 940 px panel
    assert effects.columns.tolist() == ["treatment", *EFFECT_COLUMNS]
    glob = effects.set_index("treatment").loc["Global"]
    assert glob[["ate", "placebo", "random_cause", "status"]].tolist() == ["-0.900", "passed", "failed", "estimated"]
    assert correlations.set_index("treatment").loc["Global", "r_complexity"] == "undefined"
    assert set(effects.set_index("treatment").loc["category: Exceptions"].drop("n")) == {"absent"}
    _no_blanks(correlations)
    _no_blanks(effects)
    # two models: their rows next to each other, marked
    _, both = table2_views({"A": result, "B": result})
    assert both["model"].tolist() == ["A", "B", "A", "B"] and both["treatment"].tolist()[:2] == ["Global"] * 2


def test_nodes_and_tokens_exports_name_every_missing_value(tiny):
    """nodes.csv: an uncategorized node reads ``uncategorized`` (41 of 75 category cells were empty), a node with no
    predicted token ``absent``; tokens.csv: a token without a prediction ``absent`` in every score, rank included
    (it was 0)."""
    import csv
    import io

    from asc.export import csv_text
    from asc.viz.tables import node_export, token_export

    ex = explain(tiny, SRC)
    nodes = list(csv.DictReader(io.StringIO(csv_text(node_export(ex)))))
    assert all(row["category"] for row in nodes) and "uncategorized" in {row["category"] for row in nodes}
    assert {row["value"] for row in nodes if row["type"] == "def"} == {"absent"}  # token 0: no prediction
    assert all(row["value"] == "absent" or 0 <= float(row["value"]) <= 1 for row in nodes)
    tokens = list(csv.DictReader(io.StringIO(csv_text(token_export(ex)))))
    assert [tokens[0][k] for k in ("prob", "logprob", "entropy", "rank")] == ["absent"] * 4
    assert tokens[1]["rank"] == str(int(ex.scores.rank[1])) and "" not in tokens[1].values()
    assert node_export(ex)["value"].dtype == float  # numbers stay numbers for the writer
