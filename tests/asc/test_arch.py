"""The model adapter (asc.arch): layers, final norm, head and soft-cap found on tiny random GPT-2, Llama, OPT,
Gemma 2/3 and GPT-NeoX built in process; the lens's last layer equals the output on OPT; unknown layouts are refused
in one line naming the feature, the architecture and the supported names."""

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
