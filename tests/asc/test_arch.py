"""The model adapter (asc.arch): layers, final norm, head and soft-cap found on tiny random GPT-2, Llama, OPT,
Gemma 2/3 and GPT-NeoX built in process; the lens's last layer equals the output on OPT; unknown layouts are refused
in one line naming the feature, the architecture and the supported names; a type outside the matrix is served where
its first-use checks pass and refused in one line where they fail; the config readers and the token rules. Every
feature on every family: ``tests/asc/test_arch_matrix.py``."""

from __future__ import annotations

import dataclasses
import types

import numpy as np
import pytest
import torch

from asc.arch import (
    FINAL_NORMS,
    LAYER_PATHS,
    FinalNorm,
    apply_softcap,
    decoder_layers,
    logit_softcap,
    model_insides,
)
from asc.errors import AscError, InputError, UnsupportedArchitectureError
from asc.lens import lens_parts, lens_scores
from asc.models import make_bundle
from asc.scores import score_text

SOURCE = "def add(a, b):\n    '''Sum.'''\n    return a + b\n\nprint(add(1, 2))\n"
SMALL = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
             max_position_embeddings=64)


def _config(kind: str, vocab: int):
    import transformers as t

    if kind == "gpt2":
        return t.GPT2Config(vocab_size=vocab, n_positions=64, n_embd=16, n_layer=2, n_head=2)
    if kind == "llama":
        return t.LlamaConfig(vocab_size=vocab, num_key_value_heads=2, **SMALL)
    if kind == "opt":  # word_embed_proj_dim != hidden_size: the final norm is followed by project_out
        return t.OPTConfig(vocab_size=vocab, hidden_size=16, ffn_dim=32, num_hidden_layers=2, num_attention_heads=2,
                           max_position_embeddings=64, word_embed_proj_dim=8)
    if kind == "gemma2":
        return t.Gemma2Config(vocab_size=vocab, num_key_value_heads=2, head_dim=8, final_logit_softcapping=30.0,
                              **SMALL)
    if kind == "gemma3":
        return t.Gemma3TextConfig(vocab_size=vocab, num_key_value_heads=2, head_dim=8, final_logit_softcapping=30.0,
                                  **SMALL)
    if kind == "gpt_neox":
        return t.GPTNeoXConfig(vocab_size=vocab, **SMALL)
    raise AssertionError(kind)


KINDS = ["gpt2", "llama", "opt", "gemma2", "gemma3", "gpt_neox"]


@pytest.fixture(scope="module")
def bundles(tiny):
    """One tiny random model per architecture, sharing the test tokenizer."""
    from transformers import AutoModelForCausalLM

    out = {}
    with torch.random.fork_rng():
        torch.manual_seed(0)
        for kind in KINDS:
            model = AutoModelForCausalLM.from_config(_config(kind, len(tiny.tokenizer)))
            out[kind] = make_bundle(f"tiny-{kind}", model, tiny.tokenizer, "in-process")
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_the_adapter_finds_layers_norm_and_head(bundles, kind):
    bundle = bundles[kind]
    parts = model_insides(bundle, "a test")
    assert parts.kind == bundle.model.config.model_type
    assert isinstance(parts.layers, torch.nn.ModuleList) and parts.n_layers == bundle.n_layers == 2
    assert parts.head is bundle.model.get_output_embeddings()
    assert parts.embeddings is bundle.model.get_input_embeddings()
    assert parts.base is bundle.model.base_model
    assert decoder_layers(bundle.model)[1] is parts.layers
    assert callable(parts.norm)
    assert parts.head(parts.norm(torch.randn(3, 16))).shape == (3, len(bundle.tokenizer))  # hidden size 16


def test_opt_norm_includes_its_output_projection(bundles):
    parts = model_insides(bundles["opt"])
    owner = bundles["opt"].model.base_model.decoder
    assert isinstance(parts.norm, FinalNorm)
    assert parts.norm.norm is owner.final_layer_norm and parts.norm.projections == (owner.project_out,)
    assert parts.norm(torch.randn(2, 16)).shape == (2, 8)


@pytest.mark.parametrize("kind, cap", [("gemma2", 30.0), ("gemma3", 30.0), ("llama", None), ("opt", None)])
def test_the_softcap_is_found_where_the_config_sets_one(bundles, kind, cap):
    assert model_insides(bundles[kind]).softcap == cap
    assert lens_parts(bundles[kind]).softcap == cap


def test_a_nested_text_config_softcap_is_read_through_get_text_config():
    text = types.SimpleNamespace(final_logit_softcapping=50.0)
    outer = types.SimpleNamespace(get_text_config=lambda: text, final_logit_softcapping=None)
    assert logit_softcap(types.SimpleNamespace(config=outer)) == 50.0
    logits = torch.tensor([[1000.0, -1000.0, 0.0]])
    assert torch.allclose(apply_softcap(logits, 50.0), torch.tensor([[50.0, -50.0, 0.0]]))
    assert apply_softcap(logits, None) is logits


@pytest.mark.parametrize("kind", ["opt", "gpt_neox", "gemma3"])
def test_the_lens_last_layer_equals_the_output(bundles, kind):
    bundle = bundles[kind]
    lens = lens_scores(bundle, SOURCE, exact=True)
    scores = score_text(bundle, SOURCE)
    has = scores.has_prediction
    assert has.sum() > 5
    assert np.abs(lens.logprob[-1][has] - scores.logprob[has]).max() < 1e-5
    assert np.array_equal(lens.rank[-1], scores.rank)


def test_an_unknown_layout_is_refused_in_one_line_naming_the_supported_names(tiny):
    odd = types.SimpleNamespace(base_model=torch.nn.Module(), get_output_embeddings=lambda: object(),
                                config=types.SimpleNamespace(model_type="mystery"))
    with pytest.raises(UnsupportedArchitectureError) as caught:
        lens_parts(dataclasses.replace(tiny, model=odd))
    message = str(caught.value)
    assert "\n" not in message and isinstance(caught.value, AscError) and isinstance(caught.value, InputError)
    assert message.startswith("the logit lens cannot find the decoder layers of mystery")
    assert message.endswith("supported decoder layers names: " + ", ".join(LAYER_PATHS))

    no_norm = torch.nn.Module()
    no_norm.layers = torch.nn.ModuleList([torch.nn.Identity()])
    odd = types.SimpleNamespace(base_model=no_norm, get_output_embeddings=lambda: object(),
                                config=types.SimpleNamespace(model_type="mystery"))
    with pytest.raises(UnsupportedArchitectureError, match="supported final norm names: " + ", ".join(FINAL_NORMS)):
        model_insides(odd, "activation patching")


# ------------------------------------------------------------------ types outside the matrix, checked on first use

def _unknown(tiny, kind: str, logit_factor: float = 1.0, embeds_factor: float = 1.0):
    """A tiny Llama whose config says ``kind`` (a type the adapter has not verified), its forward multiplying its
    logits by ``logit_factor`` and the input embeddings it is given by ``embeds_factor``."""
    import transformers as t

    class Odd(t.LlamaForCausalLM):
        def forward(self, input_ids=None, inputs_embeds=None, **kwargs):
            if inputs_embeds is not None:
                inputs_embeds = inputs_embeds * embeds_factor
            out = super().forward(input_ids=input_ids, inputs_embeds=inputs_embeds, **kwargs)
            out.logits = out.logits * logit_factor
            return out

    config = _config("llama", len(tiny.tokenizer))
    config.model_type = kind
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = Odd(config)
    return make_bundle(f"tiny-{kind}", model, tiny.tokenizer, "in-process")


def test_an_unverified_type_whose_checks_pass_is_served(tiny):
    from asc.arch import VERIFIED_TYPES, embed

    bundle = _unknown(tiny, "llama-like")
    assert "llama-like" not in VERIFIED_TYPES
    parts = model_insides(bundle, "the logit lens")
    assert not parts.replayable  # activation patching takes the hooks
    lens, scores = lens_scores(bundle, SOURCE, exact=True), score_text(bundle, SOURCE)
    has = scores.has_prediction
    assert np.abs(lens.logprob[-1][has] - scores.logprob[has]).max() < 1e-5
    assert embed(bundle, torch.tensor([[1, 2]]), "attribution").shape == (1, 2, 16)


def test_an_unverified_type_with_an_unknown_logit_transform_is_refused_not_misread(tiny):
    bundle = _unknown(tiny, "scaled-llama", logit_factor=3.0)
    with pytest.raises(UnsupportedArchitectureError) as caught:
        lens_scores(bundle, SOURCE)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("the logit lens does not support scaled-llama (Odd): the final "
                                                      "norm, head, logit scale and softcap found do not reproduce")
    assert "the architectures checked are " in message and "llama" in message
    from asc.why.residual import record

    assert record(bundle, np.arange(1, 6)).method == "hooks"  # full passes: the model's own logits, still served


def test_an_unverified_type_that_treats_input_embeddings_otherwise_is_refused_by_attribution(tiny):
    from asc.explain import explain
    from asc.why.attribute import attribute

    bundle = _unknown(tiny, "embeds-llama", embeds_factor=2.0)
    ex = explain(bundle, SOURCE)
    with pytest.raises(UnsupportedArchitectureError, match=r"^attribution does not support embeds-llama \(Odd\): its "
                                                           r"logits from input embeddings differ"):
        attribute(bundle, SOURCE, ex.scores.n_tokens - 2, "grad", explanation=ex)


# ------------------------------------------------------------------ the one rule each

def test_the_config_readers_see_through_a_multimodal_config():
    from asc.arch import config_shape, context_lengths, layer_count, text_config, vocab_size

    text = types.SimpleNamespace(num_hidden_layers=3, vocab_size=100, hidden_size=8, max_position_embeddings=64,
                                 tie_word_embeddings=False)
    outer = types.SimpleNamespace(get_text_config=lambda: text)
    model = types.SimpleNamespace(config=outer)
    assert text_config(model) is text and text_config(outer) is text
    assert (layer_count(model), vocab_size(model), context_lengths(model)) == (3, 100, [64])
    assert config_shape(outer) == (8, 3, 100, 32, False)
    gpt = types.SimpleNamespace(n_layer=2, n_embd=4, n_positions=16, n_ctx=8, vocab_size=10)
    assert layer_count(gpt) == 2 and context_lengths(gpt) == [16, 8] and config_shape(gpt)[:3] == (4, 2, 10)


def test_the_prediction_and_sink_rules():
    from asc.arch import first_token_is_sink, log_probs, predicted

    assert predicted(np.array([False, False, True, False])).tolist() == [False, True, False, True]
    assert predicted(np.array([True, False])).tolist() == [False, True] and predicted(np.zeros(0, bool)).size == 0
    assert first_token_is_sink(np.array([False, True])) and not first_token_is_sink(np.array([True, False]))
    logits = torch.tensor([[0.0, 1.0, 2.0]], dtype=torch.bfloat16)
    lp = log_probs(logits)
    assert lp.dtype == torch.float32 and torch.allclose(lp.exp().sum(-1), torch.ones(1))


def test_keep_logits_asks_the_forward_and_hidden_states_come_from_the_base(bundles):
    from asc.arch import hidden_states, keep_logits

    model = bundles["llama"].model
    assert keep_logits(model, 3) == {"logits_to_keep": 3}
    assert keep_logits(types.SimpleNamespace(forward=lambda x: x), 3) == {}
    states = hidden_states(model, torch.tensor([[1, 2, 3]]), torch.ones(1, 3, dtype=torch.long))
    assert len(states) == 3 and states[0].shape == (1, 3, 16)


def test_the_layout_is_found_once_per_model_and_config_values_read_each_time(bundles, monkeypatch):
    bundle = bundles["llama"]
    first = model_insides(bundle)
    monkeypatch.setattr(bundle.model.config, "final_logit_softcapping", 5.0, raising=False)
    again = model_insides(bundle)
    assert again.layers is first.layers and again.norm is first.norm
    assert first.softcap is None and again.softcap == 5.0


def test_a_model_without_a_key_value_cache_is_refused_where_a_prefix_is_cut():
    from asc.kvcache import run_prefix

    class Recurrent(torch.nn.Module):
        config = types.SimpleNamespace(model_type="recurrent")

        def forward(self, input_ids, use_cache, past_key_values=None):
            state = types.SimpleNamespace(conv_states=[torch.zeros(1)])  # a state per layer, no keys and values
            return types.SimpleNamespace(logits=torch.zeros(1, input_ids.shape[1], 4), past_key_values=state)

    with pytest.raises(UnsupportedArchitectureError, match=r"^branching needs a cache of keys and values per layer, "
                                                           r"which recurrent \(Recurrent\) does not keep"):
        run_prefix(Recurrent(), torch.tensor([[1, 2]]), feature="branching")
