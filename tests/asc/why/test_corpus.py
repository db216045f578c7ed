"""asc.why.corpus and asc.why.corpus_run: the stratified, seeded sample of target nodes, the stored masses against a
direct attribute() call, tree distances against a hand count, the run folder's attribution/ table (resumable, one
set of settings), and the real SmolLM2 on HumanEval snippets."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from asc.corpus.runs import run_corpus
from asc.corpus.sources import load_corpus
from asc.errors import CorpusError, InputError
from asc.explain import explain
from asc.why.attribute import attribute
from asc.why.corpus import (
    attribute_snippet,
    candidate_targets,
    node_distances,
    sample_targets,
    snippet_rng,
    token_nodes,
)
from asc.why.corpus_run import attribute_run, has_attribution, load_attribution, pending_parts
from asc.why.targets import node_target
from tests.asc.why.conftest import COUNT_CHARS


def _snippet(i: int) -> str:
    return f"def f{i}(x, y):\n    '''add'''\n    if x > {i}:\n        return [x, y + {i}]\n    return x\n"


@pytest.fixture(scope="module")
def run(tiny, tmp_path_factory):
    """A tiny-model run of 5 short snippets in 3 parts, attributed with k = 3."""
    folder = tmp_path_factory.mktemp("attr") / "run"
    corpus = folder.parent / "c.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": f"s{i}", "code": _snippet(i)}) for i in range(5)))
    run_corpus(tiny, load_corpus(str(corpus)), folder, corpus="c", progress=False, batch_size=2)
    attribute_run(folder, tiny, k=3)
    return folder


def test_the_stored_masses_equal_a_direct_attribute_call(tiny, run):
    rows, settings = load_attribution(run)
    assert settings["k"] == 3 and settings["model"]["name"] == "tiny-random"
    snippet = rows[rows["snippet_id"] == "s2"]
    ex = explain(tiny, _snippet(2))
    for node in snippet["target"].unique().tolist():
        got = attribute(tiny, ex.source, node_target(tiny, ex, node), "grad", explanation=ex)
        mine = snippet[(snippet["target"] == node) & (snippet["kind"] == "category")].set_index("source")
        assert mine["target_category"].iloc[0] == ex.node_category[node]
        assert mine["target_value"].iloc[0] == pytest.approx(got.value, rel=1e-5)
        for cat in ex.categories:
            for stored, direct in ((mine.loc[cat, "attribution"], got.category_attr[cat]),
                                   (mine.loc[cat, "share"], got.category_share[cat])):
                assert (math.isnan(stored) and math.isnan(direct)) or stored == pytest.approx(direct, rel=1e-5, abs=1e-9)
        dist = snippet[(snippet["target"] == node) & (snippet["kind"] == "distance")]
        assert dist["attribution"].sum() == pytest.approx(np.nansum(got.token_attr), rel=1e-5, abs=1e-9)
        assert dist["share"].sum() == pytest.approx(1.0)  # every prompt token has a node: the bins hold it all


def test_sampling_is_seeded_per_snippet_and_stratified_by_category(tiny):
    ex = explain(tiny, COUNT_CHARS)
    cands = candidate_targets(tiny, ex)
    assert len(cands) >= 4 and all(ex.node_category[n] == c for c, nodes in cands.items() for n in nodes)
    picks = [sample_targets(cands, 8, snippet_rng(0, "a")) for _ in range(2)]
    assert picks[0] == picks[1] and len(set(picks[0])) == 8
    assert sample_targets(cands, 8, snippet_rng(1, "a")) != picks[0]
    assert sample_targets(cands, 8, snippet_rng(0, "b")) != picks[0]
    # one node of every category before any category gets a second one
    first = [ex.node_category[n] for n in picks[0][: len(cands)]]
    assert sorted(first) == sorted(cands)
    # drawn in order: the sample of a smaller k is the start of the larger one's
    assert sample_targets(cands, 3, snippet_rng(0, "a")) == picks[0][:3]
    # k larger than the candidates: every candidate once
    every = sample_targets(cands, 10_000, snippet_rng(0, "a"))
    assert sorted(every) == sorted(n for nodes in cands.values() for n in nodes)
    with pytest.raises(InputError, match="at least 1"):
        sample_targets(cands, 0, snippet_rng(0, "a"))


def test_k_larger_than_the_nodes_attributes_every_candidate(tiny):
    ex = explain(tiny, "x = 1\n")
    rows = attribute_snippet(tiny, ex, "one", k=50)
    assert set(rows["target"]) == {n for nodes in candidate_targets(tiny, ex).values() for n in nodes}


def test_distances_count_tree_edges_and_tokens_take_their_deepest_node(tiny):
    ex = explain(tiny, COUNT_CHARS)
    t = ex.tree
    target = next(i for i in range(t.n_nodes) if t.type[i] == "integer")  # the 0 in count = 0
    d = node_distances(t, target)
    assert d[target] == 0 and d[t.parent[target]] == 1 and d[0] == t.depth[target]
    sibling = next(i for i in range(t.n_nodes) if t.parent[i] == t.parent[target] and i != target)
    assert d[sibling] == 2
    for n in range(t.n_nodes):  # the path through the lowest common ancestor, counted by walking up
        up = {}
        a, steps = target, 0
        while a >= 0:
            up[a], a, steps = steps, int(t.parent[a]), steps + 1
        b, steps = n, 0
        while b not in up:
            b, steps = int(t.parent[b]), steps + 1
        assert d[n] == steps + up[b]
    owner = token_nodes(ex)
    for tok in range(ex.scores.n_tokens):
        bound = [n for n in range(t.n_nodes) if tok in ex.alignment.tokens_of(n)]
        if bound:
            deepest = max(t.depth[n] for n in bound)
            assert owner[tok] == min(n for n in bound if t.depth[n] == deepest)


def test_a_run_is_attributed_part_by_part_and_resumed(tiny, run, tmp_path):
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    whole, _ = load_attribution(run)
    parts = sorted((copy / "attribution").glob("part-*.parquet"))
    assert len(parts) == 3 and has_attribution(copy) and not pending_parts(copy)
    parts[1].unlink()
    assert pending_parts(copy) == [parts[1].name]
    seen = []
    attribute_run(copy, tiny, k=3, on_progress=lambda done, total: seen.append((done, total)))
    assert seen == [(4, 5), (5, 5)]  # the two snippets of the missing part, after the three done
    again, _ = load_attribution(copy)
    key = ["snippet_id", "target", "kind", "source"]
    pd.testing.assert_frame_equal(again.sort_values(key).reset_index(drop=True),
                                  whole.sort_values(key).reset_index(drop=True))
    with pytest.raises(CorpusError, match="other settings.*k: 3 there, 4 here"):
        attribute_run(copy, tiny, k=4)


def test_a_stopped_or_killed_command_keeps_its_finished_snippets(tiny, run, tmp_path):
    """A stop between two snippets of a part keeps the first (a kill loses at most the snippet it was on); running
    again attributes only the rest, and the table comes out as a run in one go made it."""
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    whole, _ = load_attribution(run)
    shutil.rmtree(copy / "attribution")
    asked = []

    def stop_after_three() -> bool:
        asked.append(1)
        return len(asked) > 3  # asked before each snippet: three are done, the fourth (in the second part) is not

    attribute_run(copy, tiny, k=3, should_stop=stop_after_three)
    kept = sorted(p.name for p in (copy / "attribution").glob(".pending-*/*.parquet"))
    assert kept == ["000000.parquet"]  # the second part's first snippet (the first part is whole)
    assert len(pending_parts(copy)) == 2
    seen = []
    attribute_run(copy, tiny, k=3, on_progress=lambda done, total: seen.append((done, total)))
    assert seen == [(3, 5), (4, 5), (5, 5)]  # two done and one kept count as done; two snippets left
    assert not list((copy / "attribution").glob(".pending-*"))
    again, _ = load_attribution(copy)
    key = ["snippet_id", "target", "kind", "source"]
    pd.testing.assert_frame_equal(again.sort_values(key).reset_index(drop=True),
                                  whole.sort_values(key).reset_index(drop=True))


def test_a_folder_without_attribution_says_how_to_make_it(tmp_path, run):
    with pytest.raises(CorpusError, match="attribute-corpus"):
        load_attribution(tmp_path)
    assert not has_attribution(tmp_path)


def test_the_command_prints_the_matrix_and_refuses_other_settings(run, tmp_path, capsys):
    import shutil

    from asc.cli import main

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    out = tmp_path / "m.csv"
    assert main(["attribute-corpus", str(copy), "--k", "3", "--n-boot", "50", "--quiet", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "target nodes of 5 snippets (k = 3 per snippet)" in printed and "share by AST distance" in printed
    table = pd.read_csv(out)
    assert set(table["kind"]) == {"source", "distance"}
    assert main(["attribute-corpus", str(copy), "--k", "4", "--quiet"]) == 2
    assert "made with --k 3 --seed 0" in capsys.readouterr().err
    assert main(["attribute-corpus", str(tmp_path), "--quiet"]) == 2


@pytest.mark.real
def test_smollm2_on_humaneval_snippets(tmp_path):
    from asc.models import load_model

    smol = load_model("smollm2-135m")
    snippets = sorted(load_corpus("humaneval", limit=12), key=lambda s: len(s.source))[:2]  # the two shortest
    run_corpus(smol, snippets, tmp_path / "run", corpus="humaneval", progress=False)
    attribute_run(tmp_path / "run", smol, k=2)
    rows, _ = load_attribution(tmp_path / "run")
    assert rows.groupby("snippet_id")["target"].nunique().tolist() == [2, 2]
    assert rows["target_value"].lt(0).all()
    ex = explain(smol, snippets[1].source)
    mine = rows[(rows["snippet_id"] == snippets[1].id) & (rows["kind"] == "category")]
    node = int(mine["target"].iloc[0])
    got = attribute(smol, ex.source, node_target(smol, ex, node), "grad", explanation=ex)
    stored = mine[mine["target"] == node].set_index("source")["share"]
    direct = pd.Series(got.category_share)
    pd.testing.assert_series_equal(stored.reindex(direct.index), direct, check_names=False, rtol=1e-4)
