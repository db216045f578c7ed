"""probes.sae.enrichment against a table computed by hand on a crafted activation matrix."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import sparse

from asc.errors import InputError
from probes.sae import LABEL_MIN_TOKENS, enrich

# 6 tokens of 2 snippets, 4 latents (latent 3 never fires); categories A, B (-1: none); node types x, y, z
ACTS = np.array([[1.0, 0.0, 0.0, 0.0],
                 [2.0, 0.0, 0.5, 0.0],
                 [0.0, 3.0, 0.0, 0.0],
                 [0.0, 1.0, 0.0, 0.0],
                 [0.0, 0.0, 1.0, 0.0],
                 [1.0, 0.0, 0.0, 0.0]])
SNIPPET = np.array([0, 0, 0, 1, 1, 1])
CATEGORY = np.array([0, 0, 1, 1, -1, 0])
TYPE = np.array([0, 1, 1, 2, 2, 0])
NAN = np.nan


@pytest.fixture(scope="module")
def result():
    return enrich(ACTS, SNIPPET, CATEGORY, TYPE, ("A", "B"), ("x", "y", "z"), n_boot=300, seed=1)


def test_counts_rates_and_means_per_category_and_type(result):
    assert result.n_tokens == 6 and result.n_snippets == 2 and result.n_latents == 4
    assert result.tokens_category.tolist() == [3, 2] and result.tokens_type.tolist() == [2, 2, 2]
    assert result.fires.tolist() == [3, 2, 2, 0]
    # firing rate = fires in the category / its tokens (A: t0 t1 t5; B: t2 t3)
    np.testing.assert_allclose(result.rate_category, [[1, 0], [0, 1], [1 / 3, 0], [0, 0]])
    # mean activation over all the category's tokens (zeros included)
    np.testing.assert_allclose(result.mean_category, [[4 / 3, 0], [0, 2], [0.5 / 3, 0], [0, 0]])
    np.testing.assert_allclose(result.rate_type, [[1, 0.5, 0], [0, 0.5, 0.5], [0, 0.5, 0.5], [0, 0, 0]])
    # precision = fires in it / all fires (latent 2's fire on the uncategorized t4 counts against it)
    np.testing.assert_allclose(result.precision_category, [[1, 0], [0, 1], [0.5, 0], [NAN, NAN]])
    np.testing.assert_allclose(result.precision_type, [[2 / 3, 1 / 3, 0], [0, 0.5, 0.5], [0, 0.5, 0.5], [NAN] * 3])
    np.testing.assert_allclose(result.f1_category, [[1, 0], [0, 1], [0.4, 0], [0, 0]])
    np.testing.assert_allclose(result.f1_type[0], [0.8, 0.4, 0])


def test_best_category_and_type_with_their_precision_and_recall(result):
    assert result.best_category.tolist() == [0, 1, 0, -1]
    np.testing.assert_allclose(result.best_category_precision, [1, 1, 0.5, NAN])
    np.testing.assert_allclose(result.best_category_recall, [1, 1, 1 / 3, NAN])
    assert result.best_type.tolist() == [0, 1, 1, -1]  # ties (latents 1 and 2: y and z at F1 0.5) go to the first
    np.testing.assert_allclose(result.best_type_precision, [2 / 3, 0.5, 0.5, NAN])
    np.testing.assert_allclose(result.best_type_recall, [1, 0.5, 0.5, NAN])
    # with 3 fires at most, no type has LABEL_MIN_TOKENS of them: the labels say so; without the minimum, F1 names them
    assert result.label(0) == "rare: fires on 3 tokens" and result.label(3) == "never fires on this corpus"
    assert result.label(0, min_tokens=1) == "mostly x tokens (A)" and result.label(1, min_tokens=1) == "mostly y tokens (B)"


def test_bootstrap_intervals_over_snippets(result):
    ci = result.best_category_precision_ci
    assert ci[0].tolist() == [1, 1] and ci[1].tolist() == [1, 1]  # every resample: all fires in the category
    # latent 2 fires once per snippet, in A only in snippet 0: precision w0 / (w0 + w1) over the snippet weights
    # (2,0), (1,1), (0,2) (probabilities 1/4, 1/2, 1/4) is 1, 0.5 or 0: the 95% interval spans [0, 1]
    assert ci[2].tolist() == [0, 1]
    assert np.isnan(ci[3]).all()
    rc = result.best_category_recall_ci
    # its recall of A: 1 hit of snippet 0's 2 A tokens, snippet 1's 1 A token missed: 2/4, 1/3 or 0/2
    assert rc[0].tolist() == [1, 1] and rc[2].tolist() == [0, 0.5]


def test_ranking_per_category_and_exports(result, tmp_path):
    assert result.ranking[0].tolist()[:2] == [0, 2] and result.ranking[1][0] == 1
    assert [r["latent"] for r in result.ranked("A")] == [0, 2] and [r["latent"] for r in result.ranked("B")] == [1]
    d = result.to_dict()
    json.dumps(d)
    assert d["latents"][2]["best_category"] == "A" and d["latents"][3]["best_category"] is None
    frame = result.to_frame()
    assert len(frame) == 4 + 5  # (latent, category) pairs with fires + (latent, node type) pairs with fires
    assert result.export(tmp_path / "e.csv").read_text().startswith("latent,kind,name")
    assert json.loads(result.export(tmp_path / "e.json").read_text())["n_tokens"] == 6
    assert "<table>" in result._repr_html_()
    with pytest.raises(InputError, match="unknown category"):
        result.ranked("C")


def test_sparse_input_gives_the_same_result(result):
    again = enrich(sparse.csr_matrix(ACTS), SNIPPET, CATEGORY, TYPE, ("A", "B"), ("x", "y", "z"), n_boot=300, seed=1)
    np.testing.assert_array_equal(again.best_category_precision_ci, result.best_category_precision_ci)
    np.testing.assert_array_equal(again.f1_type, result.f1_type)


def test_mismatched_lengths_are_refused():
    with pytest.raises(InputError, match="one of each per token"):
        enrich(ACTS, SNIPPET[:5], CATEGORY, TYPE, ("A", "B"), ("x", "y", "z"))


def test_a_rare_node_type_with_a_high_f1_does_not_name_a_latent():
    """Latent 0 fires on both tokens of the rare type r (recall 1) and on 5 of the 200 tokens of the frequent type f:
    F1 prefers r (4/9 against 10/207), but only f has LABEL_MIN_TOKENS fires."""
    n_f, n_o = 200, 100  # tokens of f (category A) and of other (category B); r: 2 tokens (category B)
    node_type = np.array([0] * 2 + [1] * n_f + [2] * n_o)
    category = np.array([1] * 2 + [0] * n_f + [1] * n_o)
    acts = np.zeros((len(node_type), 2))
    acts[:2, 0] = 1.0  # both r tokens
    acts[2:7, 0] = 1.0  # 5 of the f tokens
    acts[2 + n_f :, 1] = 1.0  # latent 1: every token of other
    result = enrich(acts, np.arange(len(node_type)) % 4, category, node_type, ("A", "B"), ("r", "f", "other"),
                    n_boot=20)
    np.testing.assert_allclose(result.f1_type[0, :2], [4 / 9, 10 / 207])
    assert result.best_type[0] == 0 and 2 < LABEL_MIN_TOKENS <= 5  # plain F1 still says r; r has 2 fires, f 5
    assert result.label(0) == "mostly f tokens (A)"  # precision 5/7 on f; A has 5 fires, B 2
    assert result.label(0, min_tokens=2) == "partly r tokens (A)"  # with a support of 2 the rare type wins again
    assert result.label(1) == "other tokens (B)"


def test_latents_without_support_are_rare_or_scattered():
    node_type = np.arange(12) % 6  # six types, two tokens each
    acts = np.zeros((12, 2))
    acts[:2, 0] = 1.0  # latent 0 fires twice
    acts[:, 1] = 1.0  # latent 1 fires on all 12, two of each type
    result = enrich(acts, np.zeros(12, int), np.zeros(12, int), node_type, ("A",), tuple("abcdef"), n_boot=10)
    assert result.label(0) == "rare: fires on 2 tokens"
    assert result.label(1) == f"scattered: 12 tokens, under {LABEL_MIN_TOKENS} of any node type (A)"
