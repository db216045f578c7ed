"""Per-layer summary vectors: shapes, pooling against a direct forward pass, batching, truncation, cache."""

import numpy as np
import pytest
import torch

from asc.models import ModelBundle
from probes import features as F
from probes.features import cached_features, default_pooling, extract_features, model_key
from probes.inspect.tasks import Task

TEXTS = ["def f(x):\n    return x + 1\n", "import os\n", "for i in range(3):\n    print(i)\n", "x = [1, 2]\n"]


def _direct(bundle, text):
    ids = bundle.tokenizer(text, return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        out = bundle.model.base_model(input_ids=ids, output_hidden_states=True)
    return torch.stack(out.hidden_states)[:, 0].numpy()  # (layers + 1, seq, dim)


@pytest.fixture(scope="module")
def tiny_encoder(tiny):
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(tiny.tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64)
    model = BertModel(cfg).eval()
    return ModelBundle(name="tiny-bert", model=model, tokenizer=tiny.tokenizer, source="in-process",
                       context_length=64, causal=False)


@pytest.mark.parametrize("pooling", ["last", "mean", "first"])
def test_pooling_equals_direct_forward_pass(tiny, pooling):
    x, truncated = extract_features(tiny, TEXTS, pooling)
    assert x.shape == (len(TEXTS), tiny.n_layers + 1, 32) and x.dtype == np.float32 and truncated == 0
    for i, text in enumerate(TEXTS):
        h = _direct(tiny, text)
        want = {"last": h[:, -1], "mean": h.mean(axis=1), "first": h[:, 0]}[pooling]
        assert np.allclose(x[i], want, atol=1e-5)


def test_batches_do_not_change_results(tiny, monkeypatch):
    together, _ = extract_features(tiny, TEXTS, "mean")
    monkeypatch.setattr(F, "_TOKEN_BUDGET", 1)  # one text per micro-batch
    alone, _ = extract_features(tiny, TEXTS, "mean")
    assert np.allclose(together, alone, atol=1e-5)


def test_truncation_keeps_the_tail_for_last_token_pooling(tiny):
    long = "x = 1\n" * 40
    x, truncated = extract_features(tiny, [long], "last", max_tokens=16)
    assert truncated == 1
    tail_ids = tiny.tokenizer(long)["input_ids"][-16:]
    with torch.inference_mode():
        h = tiny.model.base_model(input_ids=torch.tensor([tail_ids]), output_hidden_states=True).hidden_states
    assert np.allclose(x[0, -1], h[-1][0, -1].numpy(), atol=1e-5)


def test_encoder_defaults_to_first_token(tiny_encoder, tiny):
    assert default_pooling(tiny_encoder) == "first" and default_pooling(tiny) == "last"
    x, _ = extract_features(tiny_encoder, TEXTS)
    assert x.shape == (len(TEXTS), 3, 32)
    with pytest.raises(ValueError, match="choose one of"):
        extract_features(tiny, TEXTS, "cls")


def test_progress_and_stop(tiny):
    seen = []
    extract_features(tiny, TEXTS, on_progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (len(TEXTS), len(TEXTS))
    with pytest.raises(InterruptedError):
        extract_features(tiny, TEXTS, should_stop=lambda: True)


def test_cache_skips_the_model_on_second_call(tiny, tmp_path, monkeypatch):
    task = Task("T", ("a", "b"), tuple(TEXTS), np.array([0, 1, 0, 1]), np.array(["tr", "tr", "va", "te"]))
    x1, meta = cached_features(tiny, task, None, tmp_path)
    assert meta["pooling"] == "last" and meta["task_digest"] == task.digest
    assert (tmp_path / model_key(tiny)).is_dir()

    def boom(*a, **k):
        raise AssertionError("the model ran again")

    monkeypatch.setattr(F, "extract_features", boom)
    x2, _ = cached_features(tiny, task, "last", tmp_path)
    assert np.array_equal(x1, x2)
    with pytest.raises(AssertionError, match="ran again"):  # another pooling is another cache entry
        cached_features(tiny, task, "mean", tmp_path)


@pytest.mark.real
def test_real_models_give_every_layer():
    from asc.models import load_model

    for name, layers, dim in (("smollm2-135m", 31, 576), ("minilm-l6", 7, 384)):
        bundle = load_model(name)
        x, _ = extract_features(bundle, TEXTS)
        assert x.shape == (len(TEXTS), layers, dim)
        assert np.isfinite(x).all()
        h = _direct(bundle, TEXTS[0])
        pick = h[:, -1] if bundle.causal else h[:, 0]
        assert np.allclose(x[0], pick, rtol=1e-3, atol=1e-3 * np.abs(pick).max())
