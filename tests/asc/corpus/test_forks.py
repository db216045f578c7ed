"""Fork points in corpus runs (asc.corpus.forks): what ``--forks`` stores, the fork table and its bootstrap, the
thresholds as settings, and the CLI (Ray writes the same tables: tests/asc/corpus/test_engines.py)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from asc.align import AlignOptions
from asc.branching.forks import ForkSettings, category_fork_rate, fork_points
from asc.concepts import GLOBAL
from asc.corpus import load_run, run_corpus
from asc.corpus.bootstrap import snippet_weights
from asc.corpus.forks import FORK_COLUMNS, cli_settings, fork_report, fork_summary, fork_table, has_forks
from asc.corpus.runs import finish_run, open_run, plan_run, write_chunk
from asc.corpus.sources import Snippet, load_corpus
from asc.corpus.tables import chunk_tables
from asc.errors import CorpusError, InputError
from asc.explain import explain_scored
from asc.scores import TOP_K, TokenScores

SRC = "def f(x):\n    return x + 1\n"
PIECES = ["def", " f", "(", "x", "):", "\n   ", " return", " x", " +", " 1", "\n"]
NAN = math.nan
#       tokens:  def   f     (     x     ):    \n    ret   x     +     1     \n
TOP1 = [NAN, 0.90, 0.95, 0.45, 0.90, 0.90, 0.90, 0.50, 0.90, 0.30, 0.90]
TOP2 = [NAN, 0.05, 0.01, 0.40, 0.05, 0.05, 0.05, 0.45, 0.05, 0.25, 0.05]
ENT = [NAN, 0.50, 0.20, 1.00, 0.30, 0.30, 0.40, 1.20, 2.50, 2.60, 0.10]
# default thresholds: forks at 3 (margin .05), 7 (margin .05), 8 (entropy), 9 (both); token 0 has no prediction
CALM_TOP2 = [NAN] + [0.01] * 10  # every margin far above 0.1 and ...
CALM_ENT = [NAN] + [0.1] * 10  # ... every entropy far below 2: no fork at all


def _scores(top1, top2, entropy) -> TokenScores:
    start, end, pos = [], [], 0
    for p in PIECES:
        start.append(pos)
        pos += len(p)
        end.append(pos)
    n = len(PIECES)
    top1, top2 = np.asarray(top1, float), np.asarray(top2, float)
    has = ~np.isnan(top1)
    rest = np.where(has, 0.0, np.nan)[:, None] * np.ones((1, TOP_K - 2))
    return TokenScores(
        source=SRC, ids=np.arange(n, dtype=np.int64), start=np.array(start), end=np.array(end),
        special=np.zeros(n, dtype=bool), prob=top1.copy(), logprob=np.log(top1), entropy=np.asarray(entropy, float),
        rank=np.where(has, 1, 0).astype(np.int64), top_probs=np.column_stack([top1, top2, rest]),
        top_ids=np.where(has[:, None], np.arange(TOP_K)[None, :], -1).astype(np.int64),
        top_text=tuple(tuple("x" for _ in range(TOP_K)) if h else () for h in has))


DEFAULT = ForkSettings()


def _hand_run(out: Path, settings: ForkSettings | None = DEFAULT) -> Path:
    """A run of two hand-scored snippets through the real writer: ``a`` with 4 fork points, ``b`` with none."""
    snippets = [Snippet("a", SRC), Snippet("b", SRC)]
    scored = [_scores(TOP1, TOP2, ENT), _scores(TOP1, CALM_TOP2, CALM_ENT)]
    with open_run(out) as folder:
        plan = plan_run({"name": "hand"}, snippets, folder, corpus="hand", aggregate="median", options=AlignOptions(),
                        max_window=None, forks=settings)
        for part, k in enumerate((0, 1)):  # one snippet per part
            write_chunk(folder, part, chunk_tables({"name": "hand"}, snippets[k : k + 1], scored[k : k + 1],
                                                   aggregate="median", options=AlignOptions(), forks=settings))
        return finish_run(plan)


@pytest.fixture(scope="module")
def hand(tmp_path_factory) -> Path:
    return _hand_run(tmp_path_factory.mktemp("hand") / "run")


def test_the_tables_of_a_hand_made_run_hold_the_forks(hand):
    run = load_run(hand)
    a = run.tokens[run.tokens["snippet_id"] == "a"]
    assert a["is_fork"].tolist() == [False, False, False, True, False, False, False, True, True, True, False]
    assert math.isnan(a["margin"].iloc[0]) and a["margin"].iloc[3] == pytest.approx(0.05)
    assert not run.tokens[run.tokens["snippet_id"] == "b"]["is_fork"].any()
    nodes = run.nodes[run.nodes["snippet_id"] == "a"].set_index("type")
    assert nodes.loc["module", "n_forks"] == 4 and nodes.loc["return_statement", "n_forks"] == 3
    assert nodes.loc["return_statement", "fork_rate"] == pytest.approx(3 / 4)  # return, x, +, 1: return is calm
    assert nodes.loc["def", "n_forks"] == 0 and math.isnan(nodes.loc["def", "fork_rate"])  # token 0: no prediction
    rows = pd.read_parquet(hand / "forks").set_index(["snippet_id", "category"])
    # categorized tokens: f 1, x 3 (Natural Language), ): 4 (Scope twice: one token), return x + 1: 6-9
    assert tuple(rows.loc[("a", GLOBAL)]) == (7, 4)
    assert tuple(rows.loc[("a", "Natural Language")]) == (3, 2)  # f, x, x: the two x are forks
    assert tuple(rows.loc[("a", "Scope")]) == (5, 3)  # ")" and ":" share token 4, counted once
    assert tuple(rows.loc[("a", "Operator")]) == (3, 3) and tuple(rows.loc[("a", "Types")]) == (1, 1)
    assert tuple(rows.loc[("b", GLOBAL)]) == (7, 0)
    assert ("a", "Iteration") not in rows.index  # absent categories have no row
    assert run.meta.settings.forks == {"max_margin": 0.1, "min_entropy": 2.0} and has_forks(hand)


def test_forks_rows_are_the_category_fork_rates_of_asc_forks():
    scores = _scores(TOP1, TOP2, ENT)
    ex = explain_scored({"name": "hand"}, scores, "python")
    tables = chunk_tables({"name": "hand"}, [Snippet("a", SRC)], [scores], aggregate="median",
                          options=AlignOptions(), forks=ForkSettings())
    rates = category_fork_rate(ex, fork_points(scores))
    for row in tables["forks"].itertuples():
        if row.category != GLOBAL:
            assert row.n_forks / row.n_tokens == pytest.approx(rates[row.category])
    assert {c for c, v in rates.items() if not math.isnan(v)} == set(tables["forks"]["category"]) - {GLOBAL}


def test_fork_table_pools_tokens_and_resamples_snippets(hand):
    table = fork_table(hand, n_boot=200, seed=3).set_index("category")
    assert list(table.columns) == FORK_COLUMNS[:2] + FORK_COLUMNS[3:] and table.index[0] == GLOBAL
    assert table.loc[GLOBAL, "rate"] == pytest.approx(4 / 14)  # pooled: (4 + 0) / (7 + 7), not a mean of rates
    assert (table.loc[GLOBAL, "n_forks"], table.loc[GLOBAL, "n_tokens"], table.loc[GLOBAL, "n_snippets"]) == (4, 14, 2)
    assert table.loc["Operator", "rate"] == pytest.approx(3 / 6)
    assert math.isnan(table.loc["Iteration", "rate"]) and table.loc["Iteration", "n_tokens"] == 0
    # the interval: the same resamples as Table I's snippet bootstrap, each a pooled share
    hits, total = np.array([4.0, 0.0]), np.array([7.0, 7.0])
    draws = np.concatenate([(w.T @ hits) / (w.T @ total) for w in snippet_weights(2, 200, 3)])
    assert set(np.round(draws, 6)) <= {0.0, round(4 / 14, 6), round(4 / 7, 6)}
    lo, hi = np.quantile(draws, [0.025, 0.975])
    assert (table.loc[GLOBAL, "ci_low"], table.loc[GLOBAL, "ci_high"]) == pytest.approx((lo, hi))
    assert table.loc[GLOBAL, "boot_std"] == pytest.approx(draws.std())
    assert fork_table(hand, n_boot=200, seed=3).equals(fork_table(hand, n_boot=200, seed=3))  # seeded


def test_thresholds_are_settings(hand, tmp_path):
    snippets = [Snippet("a", SRC), Snippet("b", SRC)]
    for other in (ForkSettings(max_margin=0.2), None):
        with pytest.raises(CorpusError, match="other settings .*forks"):
            with open_run(hand) as folder:
                plan_run({"name": "hand"}, snippets, folder, corpus="hand", aggregate="median",
                         options=AlignOptions(), max_window=None, forks=other)
    plain = _hand_run(tmp_path / "plain", None)
    assert load_run(plain).meta.settings.forks is None and not has_forks(plain)
    assert "n_forks" not in load_run(plain).nodes and not (plain / "forks").exists()
    with pytest.raises(CorpusError, match=r"without --forks: run `python -m asc eval \.\.\. --forks`"):
        fork_table(plain)


def test_broken_thresholds_in_meta_json_name_the_fix(hand, tmp_path):
    import json
    import shutil

    copy = Path(shutil.copytree(hand, tmp_path / "copy"))
    meta = json.loads((copy / "meta.json").read_text())
    meta["settings"]["forks"] = {"max_margin": 5}
    (copy / "meta.json").write_text(json.dumps(meta))
    assert not has_forks(copy) and not has_forks(tmp_path / "nothing")
    with pytest.raises(CorpusError, match="broken fork thresholds .*delete the folder"):
        fork_table(copy)


def test_cli_settings_refuse_a_threshold_without_forks():
    assert cli_settings(False, None, None) is None
    assert cli_settings(True, None, None) == ForkSettings()
    assert cli_settings(True, 0.05, None) == ForkSettings(max_margin=0.05)
    with pytest.raises(InputError, match="add --forks"):
        cli_settings(False, 0.2, None)
    with pytest.raises(InputError, match="not a probability margin"):
        cli_settings(True, 2.0, None)


def test_summary_and_report_of_several_runs(hand, tmp_path):
    plain = _hand_run(tmp_path / "plain", None)
    summary = fork_summary([hand, plain], ["A", "B"], n_boot=50)
    assert set(summary["model"]) == {"A"}  # the run without fork data is left out
    assert fork_summary([plain], ["B"]).columns.tolist() == FORK_COLUMNS
    text = fork_report(pd.concat([summary, summary.assign(model="C", rate=np.nan)]), ForkSettings(), 50, 0)
    assert "top-2 margin below 0.1 or entropy above 2 nats" in text
    line = next(x for x in text.splitlines() if x.strip().startswith("Operator"))
    assert "0.500 [" in line and line.rstrip().endswith("-")


# ------------------------------------------------------------------------------ real runs of the tiny model

N = 6
MID = ForkSettings(max_margin=0.0004, min_entropy=100.0)  # about half the tiny model's tokens (margins ~ 1e-4..2e-3)


@pytest.fixture(scope="module")
def snippets():
    return load_corpus("humaneval", limit=N)


@pytest.fixture(scope="module")
def forked(tiny, snippets, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("forks") / "run"
    run_corpus(tiny, snippets, out, corpus="humaneval", batch_size=4, progress=False, forks=MID)
    return out


def test_a_tiny_run_stores_what_asc_forks_computes(forked, tiny, snippets):
    from asc.explain import explain

    run = load_run(forked)
    assert sorted(p.name for p in (forked / "forks").iterdir()) == ["part-00000.parquet", "part-00001.parquet"]
    assert 0.1 < run.tokens["is_fork"].mean() < 0.9  # the thresholds split the tokens
    ex = explain(tiny, snippets[0].source)
    forks = fork_points(ex.scores, MID)
    tok = run.tokens[run.tokens["snippet_id"] == snippets[0].id]
    assert tok["is_fork"].tolist() == forks.is_fork.tolist()
    np.testing.assert_allclose(tok["margin"], forks.margin, atol=1e-6)
    table = fork_table(forked, n_boot=50).set_index("category")
    rows = pd.read_parquet(forked / "forks")
    glob = rows[rows["category"] == GLOBAL]
    assert table.loc[GLOBAL, "rate"] == pytest.approx(glob["n_forks"].sum() / glob["n_tokens"].sum())
    assert table.loc[GLOBAL, "n_snippets"] == N and table.loc[GLOBAL, "ci_low"] <= table.loc[GLOBAL, "rate"]


def test_a_stopped_run_resumes_to_the_same_forks(forked, tiny, snippets, tmp_path):
    out = tmp_path / "resumed"
    calls = iter([False, True])
    run_corpus(tiny, snippets, out, corpus="humaneval", batch_size=4, progress=False, forks=MID,
               should_stop=lambda: next(calls, True))
    assert len(list((out / "forks").iterdir())) == 1
    with pytest.raises(CorpusError, match="forks.max_margin: 0.0004 there, 0.1 here"):
        run_corpus(tiny, snippets, out, corpus="humaneval", batch_size=4, progress=False, forks=ForkSettings())
    run_corpus(tiny, snippets, out, corpus="humaneval", batch_size=4, progress=False, forks=MID)
    pd.testing.assert_frame_equal(pd.read_parquet(out / "forks"), pd.read_parquet(forked / "forks"))


def test_cli_eval_forks_prints_the_fork_table(tmp_path, capsys):
    from asc.__main__ import main

    out = tmp_path / "cli"
    assert main(["eval", "--model", "tiny-random", "--corpus", "humaneval", "--limit", "3", "--out", str(out),
                 "--forks", "--fork-margin", "0.0004", "--fork-entropy", "100", "--quiet", "--n-boot", "20"]) == 0
    printed = capsys.readouterr().out
    assert "fork points (top-2 margin below 0.0004 or entropy above 100 nats)" in printed
    assert "20 snippet-level resamples" in printed and "  Global " in printed.split("fork points")[1]
    assert (out / "forks.csv").is_file() and load_run(out).meta.settings.forks["min_entropy"] == 100.0
    assert main(["eval", "--model", "tiny-random", "--corpus", "humaneval", "--limit", "3", "--out",
                 str(tmp_path / "x"), "--fork-margin", "0.2"]) == 2
    assert "add --forks" in capsys.readouterr().err and not (tmp_path / "x").exists()


def test_cli_compare_adds_fork_rates_of_fork_runs(forked, tiny, snippets, tmp_path, capsys):
    from asc.__main__ import main

    plain = tmp_path / "plain"
    run_corpus(tiny, snippets[:3], plain, corpus="humaneval", progress=False)
    assert main(["compare", str(forked), str(plain), "--n-boot", "20"]) == 0
    printed = capsys.readouterr().out
    assert "fork points (each run's thresholds)" in printed
    assert main(["compare", str(plain), "--n-boot", "20"]) == 0
    assert "fork points" not in capsys.readouterr().out
