"""Embeddings (probes.blanca.embed): the pooling a sentence-transformers folder declares, cached vectors, cosine
distances on hand-made vectors, and the embedded MiniLM equal to sentence-transformers' own encode."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from asc.errors import InputError
from probes.blanca.embed import cosine_distance, embed_texts, embedding_settings

TEXTS = ["How do I sort a dict by value?", "Use sorted(d.items(), key=lambda kv: kv[1]).", "Tabs or spaces?"]


def _st_folder(tmp_path: Path, pooling: dict, max_len: int | None = 128) -> Path:
    (tmp_path / "1_Pooling").mkdir(parents=True)
    (tmp_path / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    if max_len:
        (tmp_path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": max_len}))
    return tmp_path


def test_plain_models_are_mean_pooled(tiny):
    settings = embedding_settings(tiny)
    assert (settings.pooling, settings.origin) == ("mean", "default")


@pytest.mark.parametrize(("pooling", "expected"), [({"pooling_mode_cls_token": True}, "first"),
                                                   ({"pooling_mode_mean_tokens": True}, "mean"),
                                                   ({"pooling_mode_lasttoken": True}, "last"),
                                                   ({"pooling_mode": "cls", "include_prompt": True}, "first")])
def test_a_sentence_transformers_folder_sets_pooling_and_length(tiny, tmp_path, pooling, expected):
    bundle = dataclasses.replace(tiny, source=str(_st_folder(tmp_path, pooling)))
    settings = embedding_settings(bundle)
    assert (settings.pooling, settings.max_tokens, settings.origin) == (expected, 128, "sentence-transformers config")


def test_unsupported_pooling_is_refused_with_the_supported_ones(tiny, tmp_path):
    bundle = dataclasses.replace(tiny, source=str(_st_folder(tmp_path, {"pooling_mode_max_tokens": True})))
    with pytest.raises(InputError, match="pooling_mode_max_tokens is not supported.*mean, cls and lasttoken"):
        embedding_settings(bundle)
    bundle = dataclasses.replace(tiny, source=str(_st_folder(tmp_path / "v6", {"pooling_mode": "max"})))
    with pytest.raises(InputError, match="pooling max is not supported"):
        embedding_settings(bundle)


def test_version_6_folders_keep_the_length_in_the_tokenizer_config(tiny, tmp_path):
    folder = _st_folder(tmp_path, {"pooling_mode": "mean"}, max_len=None)
    (folder / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 96}))
    settings = embedding_settings(dataclasses.replace(tiny, source=str(folder)))
    assert (settings.pooling, settings.max_tokens) == ("mean", 96)


def test_vectors_are_cached_per_model_and_texts(tiny, tmp_path, monkeypatch):
    first = embed_texts(tiny, TEXTS, tmp_path)
    assert first.shape == (3, tiny.model.config.n_embd) and first.dtype == np.float32
    assert len(list(tmp_path.rglob("blanca-*.npy"))) == 1

    def refuse(*args, **kwargs):
        raise AssertionError("the model ran again")

    monkeypatch.setattr("probes.blanca.embed.extract_features", refuse)
    assert np.array_equal(embed_texts(tiny, TEXTS, tmp_path), first)
    with pytest.raises(AssertionError, match="ran again"):
        embed_texts(tiny, TEXTS[:2], tmp_path)  # other texts: another cache entry


def test_empty_texts_are_refused(tiny):
    with pytest.raises(InputError, match="empty text"):
        embed_texts(tiny, ["fine", "  "])
    with pytest.raises(InputError, match="no text"):
        embed_texts(tiny, [])


def test_cosine_distance_on_hand_vectors():
    a = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 0.0], [3.0, 4.0]])
    b = np.array([[2.0, 0.0], [0.0, 5.0], [-1.0, 0.0], [1.0, 1.0], [4.0, 3.0]])
    assert np.allclose(cosine_distance(a, b), [0.0, 1.0, 2.0, 1.0, 1 - 24 / 25])


@pytest.mark.real
def test_minilm_equals_sentence_transformers_encode():
    from sentence_transformers import SentenceTransformer

    from asc.models import load_model

    bundle = load_model("minilm-l6")
    assert embedding_settings(bundle).pooling == "mean" and embedding_settings(bundle).max_tokens == 256
    texts = [*TEXTS, "word " * 400]  # the last one is cut at the folder's 256 tokens, as sentence-transformers cuts it
    ours = embed_texts(bundle, texts)
    theirs = SentenceTransformer(bundle.source, device="cpu").encode(texts, convert_to_numpy=True)
    ours = ours / np.linalg.norm(ours, axis=1, keepdims=True)
    assert np.abs(ours - theirs).max() < 1e-5
