"""asc.gguf_once: within ``parse_once`` transformers' first load of a GGUF file parses it once (not once each for the
tokenizer, the config and the weights) and builds gguf's tensor-name map once, and the tokenizer, config and
weights come out the same as without it; the ``gguf`` names are restored after, also when the load fails.

The file is a 1-block Llama with random F32 weights written here (milliseconds); the real SmolLM2 GGUF goes
through the same path in tests/asc/test_real_models.py::test_gguf_cache_reloads_identically."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from asc.gguf_once import parse_once
from tests.support.gguf import write_tiny_gguf

gguf = pytest.importorskip("gguf")


def _load(path: Path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    return tokenizer, AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32)


@pytest.fixture
def counted(monkeypatch):
    """``gguf.GGUFReader`` and ``gguf.get_tensor_name_map`` wrapped to count the parses and the maps built."""
    counts = {"parses": 0, "maps": 0}
    reader, name_map = gguf.GGUFReader, gguf.get_tensor_name_map

    def counting_reader(*args, **kwargs):
        counts["parses"] += 1
        return reader(*args, **kwargs)

    def counting_map(*args, **kwargs):
        counts["maps"] += 1
        return name_map(*args, **kwargs)

    monkeypatch.setattr(gguf, "GGUFReader", counting_reader)
    monkeypatch.setattr(gguf, "get_tensor_name_map", counting_map)
    return counts


def test_a_first_load_parses_once_and_comes_out_the_same(tmp_path, counted):
    path = write_tiny_gguf(tmp_path / "tiny.gguf")
    plain_tok, plain = _load(path)
    assert counted["parses"] > 1 and counted["maps"] > 1  # what parse_once is for
    counted.update(parses=0, maps=0)
    with parse_once():
        tok, model = _load(path)
    assert counted == {"parses": 1, "maps": 1}
    assert tok.get_vocab() == plain_tok.get_vocab() and tok("a+b\n")["input_ids"] == plain_tok("a+b\n")["input_ids"]
    assert model.config.to_dict() == plain.config.to_dict()
    state, expected = model.state_dict(), plain.state_dict()
    assert state.keys() == expected.keys() and all(torch.equal(state[k], expected[k]) for k in expected)


def test_the_gguf_names_are_restored_also_after_a_failure(tmp_path, counted):
    before = gguf.GGUFReader, gguf.get_tensor_name_map
    path = write_tiny_gguf(tmp_path / "tiny.gguf")
    with pytest.raises(RuntimeError, match="stop"), parse_once():
        assert gguf.GGUFReader(path) is gguf.GGUFReader(str(path))  # one reader per file
        raise RuntimeError("stop")
    assert (gguf.GGUFReader, gguf.get_tensor_name_map) == before and counted["parses"] == 1
    with parse_once():
        gguf.GGUFReader(path)
    assert counted["parses"] == 2  # a new block parses again (the readers are not kept)


def test_load_model_caches_a_gguf_file_it_parsed_once(tmp_path, monkeypatch, counted):
    from asc.models import load_model
    from asc.scores import score_text

    monkeypatch.setenv("ASC_CACHE_DIR", str(tmp_path / "cache"))
    path = write_tiny_gguf(tmp_path / "tiny.gguf")
    first = load_model(str(path))
    assert counted["parses"] == 1 and len(list((tmp_path / "cache" / "models").glob("*/model.safetensors"))) == 1
    second = load_model(str(path))  # from the cache: no parse
    assert counted["parses"] == 1 and second.source == first.source == str(path)
    a, b = score_text(first, "a = b + 1\n"), score_text(second, "a = b + 1\n")
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_allclose(a.logprob, b.logprob, atol=1e-6)
