"""asc.explain with the tiny model: the JSON layout of ``to_dict``, input checks, syntax errors."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from asc.align import AlignOptions
from asc.errors import InputError
from asc.explain import compare_snippet, explain, explain_many

COUNT = "def countChars(string, character):\n    count = 0\n    for letter in string:\n        count += 1\n    return count\n"
NON_ASCII = 'def größe(x):\n    s = "héllo ✓"\n    return s\n'
BROKEN = "def f(x:\n  return (1\n"
JAVA = "class A { int f() { return 1; } }"
LONG = "def long_function(values):\n" + "".join(
    f"    total_{i} = values[{i}] * {i} + {i * 7}\n" for i in range(7)) + "    return total_0\n"

TOKEN_KEYS = {"index", "text", "start", "end", "prob", "logprob", "entropy", "rank", "top"}
NODE_KEYS = {"id", "type", "named", "start", "end", "parent", "depth", "category", "is_error", "token_slice", "value"}


def _check_dict(ex):
    d = ex.to_dict()
    assert {"model", "tokens", "bindings", "nodes", "snippet"} <= set(d)
    src = ex.source
    s, t = ex.scores, ex.tree
    assert len(d["tokens"]) == s.n_tokens and len(d["nodes"]) == t.n_nodes
    for i, tok in enumerate(d["tokens"]):
        assert TOKEN_KEYS <= set(tok)
        assert tok["index"] == i
        assert src[tok["start"] : tok["end"]] == tok["text"]
        if math.isnan(s.prob[i]):
            assert tok["prob"] is None and tok["logprob"] is None and tok["entropy"] is None
            assert tok["rank"] is None and tok["top"] == []
        else:
            assert tok["prob"] == pytest.approx(float(s.prob[i]))
            assert tok["rank"] == int(s.rank[i]) >= 1
            assert len(tok["top"]) == len(s.top_text[i]) > 0
            assert all({"text", "prob"} <= set(alt) for alt in tok["top"])
    for i, nd in enumerate(d["nodes"]):
        assert NODE_KEYS <= set(nd)
        assert nd["id"] == i and nd["type"] == t.type[i]
        assert src[nd["start"] : nd["end"]] == t.text(i)
        assert nd["parent"] == (None if i == 0 else int(t.parent[i]))
        lo, hi = nd["token_slice"]
        assert d["bindings"][lo:hi] == ex.alignment.tokens_of(i).tolist()
        # the value is theta (median) over the node's tokens that have a prediction
        probs = [s.prob[k] for k in d["bindings"][lo:hi] if not math.isnan(s.prob[k])]
        if probs:
            assert nd["value"] == pytest.approx(float(np.median(probs)))
        else:
            assert nd["value"] is None
    text = json.dumps(d, allow_nan=False)  # no NaN anywhere: missing values are null
    assert json.loads(text)["snippet"]["n_tokens"] == s.n_tokens
    return d


@pytest.mark.parametrize("source", [COUNT, NON_ASCII, LONG])
def test_to_dict_layout(tiny, source):
    ex = explain(tiny, source)
    d = _check_dict(ex)
    assert d["model"]["name"] == "tiny-random"
    assert d["tokens"][0]["prob"] is None  # no BOS: the first token has no prediction
    assert all(tok["prob"] is not None for tok in d["tokens"][1:])
    snippet = d["snippet"]
    assert snippet["n_nodes"] == ex.tree.n_nodes
    assert snippet["has_error"] is False
    assert snippet["loss"] == pytest.approx(ex.scores.loss)
    assert snippet["perplexity"] == pytest.approx(math.exp(ex.scores.loss))
    assert snippet["n_windows"] == ex.scores.n_windows
    cats = snippet["categories"]
    assert cats["Natural Language"] is not None  # identifiers are everywhere
    assert cats["Testing"] is None  # no assert statement: missing, not 0
    assert math.isnan(ex.category_values["Testing"])


def test_long_snippet_has_windows(tiny):
    ex = explain(tiny, LONG)
    assert ex.to_dict()["snippet"]["n_windows"] > 1


def test_categories_of_nodes(tiny):
    ex = explain(tiny, COUNT)
    d = ex.to_dict()
    seen = set()
    for nd in d["nodes"]:
        if nd["type"] == "identifier":
            assert nd["category"] == "Natural Language"
        if nd["type"] == "for_statement":
            assert nd["category"] == "Iteration"
        if nd["type"] == "block":
            assert nd["category"] == "uncategorized"  # a label, not a missing value (asc.concepts.UNCATEGORIZED)
        seen.add(nd["type"])
    assert {"identifier", "for_statement", "block"} <= seen  # each check above ran
    assert ex.category_values["Iteration"] == pytest.approx(
        [nd["value"] for nd in d["nodes"] if nd["type"] == "for_statement"][0])


def test_bos_model(tiny_bos):
    ex = explain(tiny_bos, COUNT)
    d = _check_dict(ex)
    assert d["tokens"][0]["special"] is True and d["tokens"][0]["prob"] is None
    assert d["tokens"][1]["prob"] is not None
    assert 0 not in d["bindings"]  # no node holds the BOS token


@pytest.mark.parametrize("aggregate", ["mean", "max"])
def test_other_aggregates(tiny, aggregate):
    ex = explain(tiny, COUNT, aggregate=aggregate)
    fn = np.mean if aggregate == "mean" else np.max
    s = ex.scores
    for i in range(ex.tree.n_nodes):
        probs = [s.prob[k] for k in ex.alignment.tokens_of(i) if not math.isnan(s.prob[k])]
        if probs:
            assert ex.values[i] == pytest.approx(float(fn(probs)))
        else:
            assert math.isnan(ex.values[i])
    assert np.isfinite(ex.values).sum() > ex.tree.n_nodes // 2  # most nodes have a value to check
    assert ex.to_dict()["aggregate"] == aggregate


def test_explain_many_equals_explain(tiny):
    sources = [COUNT, NON_ASCII, "x = 1\n"]
    many = explain_many(tiny, sources)
    for src, ex in zip(sources, many, strict=True):
        one = explain(tiny, src)
        assert np.allclose(ex.values, one.values, atol=1e-5, equal_nan=True)


@pytest.mark.parametrize("source", ["", "   ", "\n\n\t \n"])
def test_empty_source_raises(tiny, source):
    with pytest.raises(InputError):
        explain(tiny, source)


def test_non_text_source_raises(tiny):
    with pytest.raises(InputError):
        explain(tiny, b"x = 1\n")  # type: ignore[arg-type]


def test_unknown_aggregate_raises(tiny):
    with pytest.raises(InputError) as err:
        explain(tiny, COUNT, aggregate="mode")
    msg = str(err.value)
    assert "median" in msg and "mean" in msg and "max" in msg


def test_unknown_language_raises(tiny):
    with pytest.raises(InputError):
        explain(tiny, COUNT, language="cobol")


def test_syntax_error_snippet(tiny):
    ex = explain(tiny, BROKEN)
    d = _check_dict(ex)
    assert d["snippet"]["has_error"] is True
    errors = [nd for nd in d["nodes"] if nd["type"] == "ERROR"]
    assert errors
    assert all(nd["is_error"] for nd in errors)
    assert all(not nd["is_error"] for nd in d["nodes"] if nd["type"] != "ERROR")


def test_missing_node_with_next_token_option(tiny):
    source = "def f(:\n  pass\n"
    plain = explain(tiny, source).to_dict()
    missing = [nd for nd in plain["nodes"] if nd["is_missing"]]
    assert missing and all(nd["token_slice"][0] == nd["token_slice"][1] and nd["value"] is None for nd in missing)
    nxt = explain(tiny, source, options=AlignOptions(zero_width="next_token")).to_dict()
    missing_next = [nd for nd in nxt["nodes"] if nd["is_missing"]]
    assert [nd["id"] for nd in missing_next] == [nd["id"] for nd in missing]  # the same tree either way
    for nd in missing_next:
        assert nd["token_slice"][1] - nd["token_slice"][0] == 1 and nd["value"] is not None
    json.dumps(nxt, allow_nan=False)


def test_java_snippet(tiny):
    ex = explain(tiny, JAVA, language="java")
    d = _check_dict(ex)
    assert d["language"] == "java"
    assert any(nd["type"] == "method_declaration" for nd in d["nodes"])
    types = {nd["type"]: nd["category"] for nd in d["nodes"]}
    assert types["return_statement"] == "Scope"
    assert types["decimal_integer_literal"] == "Types"


def test_frames(tiny):
    pytest.importorskip("pandas")
    ex = explain(tiny, COUNT)
    tf, nf = ex.token_frame(), ex.node_frame()
    assert len(tf) == ex.scores.n_tokens and len(nf) == ex.tree.n_nodes
    assert nf["n_tokens"].tolist() == ex.alignment.counts().tolist()


def test_leading_blank_lines_count_for_the_module(tiny):
    ex = explain(tiny, "\n\n\ndef f(x):\n    return x\n")
    bound = set(ex.alignment.tokens_of(0).tolist())
    assert bound == {i for i in range(ex.scores.n_tokens) if not ex.scores.special[i]}


def test_concurrent_sessions_do_not_mix_results(tiny):
    """Threads sharing one model (as Streamlit sessions do) get exactly the sequential results."""
    from concurrent.futures import ThreadPoolExecutor

    sources = [f"def f{i}(x):\n    return x * {i} + {i % 3}\n" for i in range(12)]
    expected = [explain(tiny, s).scores.logprob for s in sources]
    with ThreadPoolExecutor(max_workers=6) as pool:
        got = list(pool.map(lambda s: explain(tiny, s).scores.logprob, sources))
    for e, g in zip(expected, got):
        np.testing.assert_array_equal(e, g)


def test_compare_snippet_on_shared_tree(tiny):
    src = "def f(x):\n    return [x, x + 1]\n"
    ex = explain(tiny, src)
    comp = compare_snippet([ex, ex], ["a", "b"])
    assert comp.values.shape == (2, ex.tree.n_nodes)
    assert np.nansum(np.abs(comp.difference())) == 0
    assert (comp.disagreements()["difference"] == 0).all()
    with pytest.raises(InputError, match="same text"):
        compare_snippet([ex, explain(tiny, src + "\n# other\n")])
    with pytest.raises(InputError, match="two models"):
        compare_snippet([ex])
    assert compare_snippet([ex, ex]).models == ("tiny-random (1)", "tiny-random (2)")


def test_a_checked_tree_is_not_parsed_again(tiny, monkeypatch):
    """``explain`` (the CLI) checks the snippet before loading the model: that parse is the explanation's."""
    import sys

    from asc.explain import checked_tree

    explain_module = sys.modules["asc.explain"]  # asc.explain, the package attribute, is the function
    tree = checked_tree("def f(x):\n    return x + 1\n")
    monkeypatch.setattr(explain_module, "parse", lambda *a, **k: pytest.fail("parsed again"))
    ex = explain(tiny, tree.source, tree=tree)
    assert ex.tree is tree
    with pytest.raises(InputError, match="not the snippet's"):
        explain(tiny, tree.source + "\n", tree=tree)
