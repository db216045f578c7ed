"""Integration tests on the real embedded models (SmolLM2-135M default, Gemma-3-270M).

The first run de-quantizes the GGUF weights (about 10 CPU-s for SmolLM2, 30 for Gemma: asc.gguf_once) into the
user cache; later runs load the cached safetensors in seconds.
"""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from asc.corpus import category_table, load_run
from asc.corpus.sources import load_corpus
from asc.explain import explain
from asc.models import load_model
from asc.scores import _plan_windows, score_text
from tests.helpers import ROOT, binding_pairs

pytestmark = pytest.mark.real
COUNT = ("def count_chars(string, character):\n    count = 0\n    for letter in string:\n"
         "        if letter == character:\n            count = count + 1\n    return count\n")


def _raw_logprobs(bundle, ids):
    with torch.inference_mode():
        logits = bundle.model(torch.tensor([ids])).logits[0].double()
    return torch.log_softmax(logits, -1).numpy()


def test_smollm2_probabilities_equal_raw_logits(smol):
    s = score_text(smol, COUNT)
    lsm = _raw_logprobs(smol, s.ids.tolist())
    assert np.isnan(s.prob[0])  # SmolLM2 adds no BOS: the first token has no prediction
    for i in range(1, s.n_tokens):
        row = lsm[i - 1]
        assert s.logprob[i] == pytest.approx(row[s.ids[i]], abs=1e-5)
        assert s.rank[i] == 1 + int((row > row[s.ids[i]]).sum())
        p = np.exp(row)
        assert s.entropy[i] == pytest.approx(-(p * row).sum(), abs=1e-4)
        assert list(s.top_ids[i]) == list(np.argsort(-row)[:5])
    assert s.loss == pytest.approx(-np.mean([lsm[i - 1][s.ids[i]] for i in range(1, s.n_tokens)]), abs=1e-5)


def test_smollm2_shape_matches_paper(smol):
    """Keywords and punctuation well predicted, fresh identifiers poorly (reference.md section 1)."""
    ex = explain(smol, COUNT)
    first = {}
    for text, p in zip(ex.scores.text, ex.scores.prob):
        first.setdefault(text, p)  # the first occurrence: a fresh name is unpredictable, a reuse is not
    assert first[" in"] > 0.9 and first[" return"] > 0.9
    assert first[" letter"] < 0.1
    assert ex.category_values["Scope"] > ex.category_values["Natural Language"]


def test_smollm2_windows_match_independent_windows(smol):
    src = load_corpus("algorithms", min_lines=40, max_lines=60, limit=1)[0].source
    s = score_text(smol, src, max_window=96)
    assert s.n_windows > 1 and np.isfinite(s.prob[1:]).all()
    for begin, first, end in _plan_windows(s.n_tokens, 96):
        lsm = _raw_logprobs(smol, s.ids[begin:end].tolist())
        for i in range(first, end):
            assert s.logprob[i] == pytest.approx(lsm[i - begin - 1][s.ids[i]], abs=1e-4)


def test_smollm2_non_ascii_tabs_crlf_and_errors(smol):
    src = "def größe(x):\r\n\ts = 'naïve ✓'\r\n\treturn s +\r\n"
    ex = explain(smol, src)
    assert ex.tree.has_error
    t = ex.tree
    for node in range(t.n_nodes):
        for tok in ex.alignment.tokens_of(node):
            assert ex.scores.start[tok] < t.end[node] and t.start[node] < ex.scores.end[tok]
    ident = [i for i in range(t.n_nodes) if t.type[i] == "identifier" and t.text(i) == "größe"][0]
    covered = "".join(ex.scores.text[k] for k in ex.alignment.tokens_of(ident))
    assert "größe" in covered
    string = [i for i in range(t.n_nodes) if t.type[i] == "string"][0]
    assert not np.isnan(ex.values[string])


def test_gguf_cache_reloads_identically(tmp_path, monkeypatch):
    monkeypatch.setenv("ASC_CACHE_DIR", str(tmp_path))
    first = load_model("smollm2-135m")
    cached = list((tmp_path / "models").glob("*/model.safetensors"))
    assert len(cached) == 1
    second = load_model("smollm2-135m")
    assert second.source == first.source
    a, b = score_text(first, COUNT), score_text(second, COUNT)
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_allclose(a.logprob, b.logprob, atol=1e-5)


def test_gemma_bos_gets_no_prediction_and_first_token_does(gemma):
    assert gemma.adds_bos and gemma.n_layers == 18
    s = score_text(gemma, COUNT)
    assert s.special[0] and np.isnan(s.prob[0]) and s.start[0] == s.end[0] == 0
    assert np.isfinite(s.prob[1])  # predicted from BOS
    lsm = _raw_logprobs(gemma, s.ids.tolist())
    for i in range(1, s.n_tokens):
        assert s.logprob[i] == pytest.approx(lsm[i - 1][s.ids[i]], abs=1e-4)
    ex = explain(gemma, COUNT)
    assert 0 not in set(binding_pairs(ex.alignment)[1].tolist())  # BOS is never bound to a node


def test_humaneval_scope_above_natural_language(humaneval30):
    run = load_run(humaneval30)  # SmolLM2 on the first 30 HumanEval problems (tests/conftest.py)
    from asc.corpus.runs import load_digest

    assert len(run.snippets) == 30
    table = category_table(load_digest(run.path), ["Scope", "Natural Language"], n_boot=300).set_index("category")
    assert table.loc["Scope", "median"] > table.loc["Natural Language", "median"]
    assert table.loc["Scope", "ci_low"] > table.loc["Natural Language", "ci_high"]


def test_cli_default_model_end_to_end(tmp_path):
    f = tmp_path / "a.py"
    f.write_text(COUNT)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "asc", "explain", str(f), "--json"], capture_output=True,
                         env=env, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    import json

    doc = json.loads(out.stdout)
    assert doc["model"]["name"] == "smollm2-135m" and doc["model"]["layers"] == 30
