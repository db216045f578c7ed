"""The logit lens (asc.lens): the last layer reproduces the model's output, layer 0 is the embeddings through the
final norm and head, windows match the output's, soft-capping is applied, unsupported models are refused."""

from __future__ import annotations

import dataclasses
import types

import numpy as np
import pytest
import torch

from asc.errors import InputError
from asc.lens import lens_ids, lens_parts, lens_scores
from asc.scores import encode, score_ids, score_text

SOURCE = "def add(a, b):\n    '''Sum.'''\n    return a + b\n\nprint(add(1, 2))\n"


def _same_as_output(lens, scores, tol: float) -> None:
    has = scores.has_prediction
    assert np.array_equal(np.isnan(lens.prob[-1]), ~has)
    assert np.abs(lens.prob[-1][has] - scores.prob[has]).max() < tol
    assert np.abs(lens.entropy[-1][has] - scores.entropy[has]).max() < max(tol, 1e-4)
    assert np.array_equal(lens.rank[-1], scores.rank)
    assert np.array_equal(lens.output.top_ids, scores.top_ids)


def test_last_layer_is_the_output_and_shapes_follow_the_layers(tiny):
    lens = lens_scores(tiny, SOURCE)
    scores = score_text(tiny, SOURCE)
    assert lens.prob.shape == (tiny.n_layers + 1, scores.n_tokens) and lens.n_layers == 3
    assert lens.top_ids.shape == (3, scores.n_tokens, scores.top_ids.shape[1])
    _same_as_output(lens, scores, 1e-7)
    assert lens.output.top_text == scores.top_text


def split_tokens(bundle, text: str, chars: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ids, start, end)`` of ``text`` with its first ``chars`` characters one token each and the rest tokenized
    on its own: exact ids that tokenizing the whole text would not give (as a completion's may be)."""
    ids, start, end = [], [], []
    for i in range(chars):
        (one,) = bundle.tokenizer(text[i], add_special_tokens=False)["input_ids"]
        ids.append(one), start.append(i), end.append(i + 1)
    rest = bundle.tokenizer(text[chars:], add_special_tokens=False, return_offsets_mapping=True)
    ids += rest["input_ids"]
    start += [chars + a for a, _ in rest["offset_mapping"]]
    end += [chars + b for _, b in rest["offset_mapping"]]
    return np.asarray(ids), np.asarray(start), np.asarray(end)


def test_exact_ids_are_kept_and_their_last_layer_is_score_ids(tiny):
    ids, start, end = split_tokens(tiny, SOURCE, 9)
    assert not np.array_equal(ids, encode(tiny, SOURCE)[0])  # not what tokenizing the text gives
    lens = lens_ids(tiny, SOURCE, ids, start, end)
    assert np.array_equal(lens.output.ids, ids) and np.array_equal(lens.output.start, start)
    assert lens.prob.shape == (tiny.n_layers + 1, len(ids))
    _same_as_output(lens, score_ids(tiny, SOURCE, ids, start, end), 1e-7)
    with pytest.raises(InputError, match="one entry per token"):
        lens_ids(tiny, SOURCE, ids, start[:-1], end)


def test_windows_give_every_layer_the_outputs_context(tiny):
    long = SOURCE * 12
    lens = lens_scores(tiny, long, max_window=32)
    scores = score_text(tiny, long, max_window=32)
    assert scores.n_windows > 2 and lens.output.n_windows == scores.n_windows
    _same_as_output(lens, scores, 1e-7)
    assert not np.isnan(lens.prob[0][scores.has_prediction]).any()


def test_layer_zero_is_the_embeddings_through_norm_and_head(tiny):
    lens = lens_scores(tiny, SOURCE, exact=True)
    ids = tiny.tokenizer(SOURCE, return_tensors="pt")["input_ids"]
    gpt = tiny.model.transformer
    with torch.no_grad():
        h0 = gpt.wte(ids) + gpt.wpe(torch.arange(ids.shape[1]))[None]
        probs = torch.softmax(tiny.model.lm_head(gpt.ln_f(h0))[0].float(), -1).numpy()
    expected = probs[np.arange(ids.shape[1] - 1), ids[0, 1:].numpy()]
    assert np.allclose(lens.prob[0][1:], expected, atol=1e-6)
    with torch.no_grad():
        h1 = gpt(ids, output_hidden_states=True).hidden_states[1]
        probs1 = torch.softmax(tiny.model.lm_head(gpt.ln_f(h1))[0].float(), -1).numpy()
    assert np.allclose(lens.prob[1][1:], probs1[np.arange(ids.shape[1] - 1), ids[0, 1:].numpy()], atol=1e-6)


def test_bfloat16_layers_stay_close_to_the_exact_ones_and_the_last_is_exact(tiny):
    fast, exact = lens_scores(tiny, SOURCE), lens_scores(tiny, SOURCE, exact=True)
    has = ~np.isnan(exact.prob[0])
    assert np.array_equal(fast.prob[-1], exact.prob[-1], equal_nan=True)  # the output layer is never approximated
    assert not np.array_equal(fast.prob[:-1][:, has], exact.prob[:-1][:, has])  # bfloat16 did run
    assert np.abs(fast.prob[:-1][:, has] - exact.prob[:-1][:, has]).max() < 0.02 * exact.prob[:-1][:, has].max() + 1e-6


def test_soft_capping_squeezes_every_layer(tiny, monkeypatch):
    monkeypatch.setattr(tiny.model.config, "final_logit_softcapping", 1e-4, raising=False)
    assert lens_parts(tiny).softcap == pytest.approx(1e-4)
    lens = lens_scores(tiny, SOURCE)
    vocab = tiny.model.config.vocab_size
    has = ~np.isnan(lens.prob[0])
    assert np.allclose(lens.prob[:, has], 1 / vocab, rtol=1e-3)  # |logits| <= 1e-4: all but uniform


def test_encoders_and_unknown_architectures_are_refused(tiny):
    with pytest.raises(InputError, match="encoder: the logit lens needs a causal"):
        lens_parts(dataclasses.replace(tiny, causal=False))
    odd = types.SimpleNamespace(base_model=types.SimpleNamespace(), get_output_embeddings=lambda: object(),
                                config=types.SimpleNamespace(model_type="mystery"))
    with pytest.raises(InputError, match=r"of mystery \(SimpleNamespace\); supported decoder layers names: layers, h"):
        lens_parts(dataclasses.replace(tiny, model=odd))


@pytest.mark.real
@pytest.mark.parametrize("name", ["smol", "gemma"])  # tests/conftest.py's shared SmolLM2 and Gemma 3 270M
def test_real_models_last_layer_equals_the_output(name, request):
    bundle = request.getfixturevalue(name)
    lens = lens_scores(bundle, SOURCE)
    scores = score_text(bundle, SOURCE)
    _same_as_output(lens, scores, 1e-5)
    mean = np.nanmean(lens.prob, axis=1)
    assert mean[-1] > mean[0] + 0.2  # the output is far surer than the embeddings
    exact = lens_scores(bundle, SOURCE, exact=True)
    gap = np.abs(lens.prob - exact.prob)  # bfloat16 unembeddings of the inner layers
    assert np.nanmax(gap) < 0.04 and np.nanmean(gap) < 0.002
