"""asc.viz.forks: fork-rate bars per category and model, with the bootstrap intervals as error bars."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from asc.viz.forks import fork_bars


def _table() -> pd.DataFrame:
    rows = [("m<b>", "Scope", 0.2, 0.1, 0.3), ("m<b>", "Global", 0.4, 0.35, 0.45), ("n", "Global", 0.5, 0.4, 0.6),
            ("n", "Scope", math.nan, math.nan, math.nan)]
    return pd.DataFrame([{"model": m, "corpus": "c", "category": c, "rate": r, "ci_low": lo, "ci_high": hi,
                          "boot_std": 0.01, "n_forks": 1, "n_tokens": 2, "n_snippets": 1} for m, c, r, lo, hi in rows])


def test_bars_put_global_first_with_intervals_per_model():
    fig = fork_bars(_table())
    assert [t.name for t in fig.data] == ["m&lt;b&gt;", "n"]  # names escaped
    first = fig.data[0]
    assert list(first.x) == ["Global", "Scope"] and list(first.y) == [0.4, 0.2]
    assert list(first.error_y.array) == pytest.approx([0.05, 0.1])  # ci_high - rate
    assert list(first.error_y.arrayminus) == pytest.approx([0.05, 0.1])  # rate - ci_low
    assert math.isnan(fig.data[1].y[1])  # no token of that category: no bar
    assert fig.layout.yaxis.range[1] == pytest.approx(0.66)  # 10% above the highest interval


def test_an_empty_table_draws_an_empty_figure():
    fig = fork_bars(_table().iloc[0:0])
    assert len(fig.data) == 0 and fig.layout.yaxis.range[1] == 1.0
