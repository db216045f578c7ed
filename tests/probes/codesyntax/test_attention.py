"""probes.codesyntax.attention: word-level attention, corpus runs of head scores and the relation table.

The command line (``python -m probes attention``) is tested in tests/probes/test_main.py."""


import numpy as np
import pytest

from asc.errors import InputError
from probes.codesyntax.attention import (
    load_attention_run,
    relation_table,
    run_attention,
    snippet_attention,
    sub_to_word,
)
from probes.codesyntax.relations import extract
from tests.helpers import ATTENTION_CODES
from tests.support.models import tiny_random_model

CODES = ATTENTION_CODES


@pytest.fixture(scope="module")
def tiny512():
    return tiny_random_model(context_length=512)


def test_sub_tokens_map_to_the_words_they_overlap(tiny512):
    sample = extract(CODES[0])
    enc = tiny512.tokenizer(sample.code, return_offsets_mapping=True)
    off = np.asarray(enc["offset_mapping"])
    words = sub_to_word(sample, off[:, 0], off[:, 1], np.zeros(len(off), bool))
    for i, w in enumerate(words):
        piece = sample.code[off[i, 0]:off[i, 1]]
        if w >= 0 and piece.strip():
            assert piece.strip() in sample.tokens[w] or sample.tokens[w] in piece
    assert sample.tokens.index("return") in set(words.tolist())
    special = np.ones(len(off), bool)
    assert (sub_to_word(sample, off[:, 0], off[:, 1], special) == -1).all()


def test_word_attention_of_a_causal_model_never_looks_ahead(tiny512):
    sample = extract(CODES[1])
    before = tiny512.model.config._attn_implementation
    wa = snippet_attention(tiny512, sample)
    assert tiny512.model.config._attn_implementation == before  # the shared model is left as it was
    n = len(sample.tokens)
    assert wa.shape == (2, 2, n, n)
    assert np.allclose(np.triu(wa, k=1), 0)  # a word attends only to itself (zeroed) and earlier words
    assert np.all(np.diagonal(wa, axis1=2, axis2=3) == 0)
    assert np.all(wa.sum(-1) <= 1 + 1e-5)


def test_too_long_snippets_are_refused(tiny):
    with pytest.raises(InputError, match="at most 64"):
        snippet_attention(tiny, extract("def f(x):\n" + "    x = x + 1\n" * 40 + "    return x\n"))


def test_run_writes_scores_and_reads_them_back(tiny512, tmp_path):
    stages = []
    run = run_attention(tiny512, CODES + ["def broken(:\n"], tmp_path, corpus="toy", ks=(1, 2, 3),
                        on_progress=lambda *a: stages.append(a))
    assert run.meta["n_labelled"] == 4 and run.meta["n_scored"] == 4 and run.meta["direction"] == "dependent -> head"
    assert stages[-1] == ("attention", 4, 4)
    back = load_attention_run(run.folder)
    for split in ("val", "test"):
        assert np.array_equal(back.scores.hits[split], run.scores.hits[split])
    assert [s.code for s in back.samples] == [s.code for s in run.samples] and back.splits == run.splits
    table = relation_table(back, "first", 2)
    assert table.iloc[-1]["relation"] == "mean"
    body = table.iloc[:-1]
    assert np.allclose(body["difference"], body["model"] - body["combined"])
    assert table.iloc[-1]["model"] == pytest.approx(back.scores.model_score("first", 2))


def test_progress_counts_snippets_skipped_as_too_long(tiny, tmp_path):
    """Regression: a snippet over the token limit used to `continue` past on_progress (the bar stopped short)."""
    long = "def f(x):\n    if x:\n        y = x + 1\n" + "    x = x + 1\n" * 40 + "    return x\n"
    stages = []
    run = run_attention(tiny, CODES[:2] + [long], tmp_path, corpus="toy", ks=(1,),
                        on_progress=lambda *a: stages.append(a))
    assert run.meta["too_long"] == 1
    assert [s for s in stages if s[0] == "attention"][-1] == ("attention", 3, 3)


@pytest.mark.real
def test_real_models_heads_track_syntax(tmp_path):
    """SmolLM2 (decoder) and MiniLM (encoder) on 16 HumanEval functions: some head follows If:if->test."""
    from asc.corpus.sources import load_corpus
    from asc.models import load_model

    codes = [s.source for s in load_corpus("humaneval", limit=16, max_lines=30)]
    for name, direction in (("smollm2-135m", "dependent -> head"), ("minilm-l6", "head -> dependent")):
        run = run_attention(load_model(name), codes, tmp_path, ks=(1, 5))
        assert run.meta["direction"] == direction
        table = relation_table(run, "first", 5).set_index("relation")
        assert table.loc["If:if->test", "model"] >= 0.5
        assert 0 < table.loc["mean", "model"] <= 1
