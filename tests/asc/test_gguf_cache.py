"""asc.gguf_cache: the de-quantized weights of a GGUF file, one sealed entry per file content, checked before each
load. The file is the tiny 1-block Llama of tests/support/gguf.py (a load takes about a second)."""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pytest
import torch

from asc import gguf_cache
from asc.caches import MANIFEST, verify_manifest
from asc.models import load_model
from tests.support.gguf import write_tiny_gguf

pytest.importorskip("gguf")


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    monkeypatch.setenv("ASC_CACHE_DIR", str(tmp_path / "cache"))
    return write_tiny_gguf(tmp_path / "tiny.gguf")


def _weights(bundle) -> dict[str, np.ndarray]:
    return {k: v.detach().numpy().copy() for k, v in bundle.model.state_dict().items()}


def test_copies_of_one_gguf_share_a_cache_entry_and_other_files_do_not(tmp_path):
    """Each clone's virtual environment holds its own copy of the embedded GGUFs: the de-quantized cache is keyed on
    the file's size and bytes, not its path or time, so the copies share one entry (0.5-1.1 GB each)."""
    data = bytes(range(256)) * 12_000  # 3 MB: both ends and a middle
    first, second = tmp_path / "a" / "m.gguf", tmp_path / "b" / "m.gguf"
    for path, stamp in ((first, 1_000_000_000), (second, 1_700_000_000)):
        path.parent.mkdir()
        path.write_bytes(data)
        os.utime(path, (stamp, stamp))
    assert gguf_cache.entry_key(first) == gguf_cache.entry_key(second)
    longer, changed_end = tmp_path / "c.gguf", tmp_path / "d.gguf"
    longer.write_bytes(data + b"x")
    changed_end.write_bytes(data[:-1] + b"x")
    keys = {gguf_cache.entry_key(p).split("-")[-1] for p in (first, longer, changed_end)}
    assert len(keys) == 3


def test_an_entry_is_private_sealed_and_reloads_the_same_weights(tiny, tmp_path):
    old = os.umask(0o002)  # a user-private-group umask: the entry must be private all the same
    try:
        first = load_model(str(tiny))
    finally:
        os.umask(old)
    entry = gguf_cache.entry_for(tiny)
    assert entry is not None and (entry / "model.safetensors").is_file()
    for path in [tmp_path / "cache", tmp_path / "cache" / "models", entry, *entry.rglob("*")]:
        assert stat.S_IMODE(path.stat().st_mode) in (0o700, 0o600), path
    listed = json.loads((entry / MANIFEST).read_text())["files"]
    assert "model.safetensors" in listed and "config.json" in listed and verify_manifest(entry) == ""
    second = load_model(str(tiny))
    a, b = _weights(first), _weights(second)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("damage", ["flip", "cut", "extra", "no-manifest"])
def test_a_damaged_entry_is_set_aside_and_made_again(tiny, damage):
    reference = _weights(load_model(str(tiny)))
    entry = gguf_cache.entry_for(tiny)
    weights = entry / "model.safetensors"
    data = bytearray(weights.read_bytes())
    if damage == "flip":
        data[-5] ^= 0xFF  # a weight's byte: the same size, other bytes
        weights.write_bytes(bytes(data))
    elif damage == "cut":
        weights.write_bytes(bytes(data[: len(data) // 2]))
    elif damage == "extra":
        (entry / "added.txt").write_text("x")
    else:
        (entry / MANIFEST).unlink()
    assert verify_manifest(entry) != ""
    again = _weights(load_model(str(tiny)))
    assert all(np.array_equal(reference[k], again[k]) for k in reference)
    assert verify_manifest(entry) == ""


def test_a_read_only_cache_loads_uncached(tiny, tmp_path, monkeypatch):
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    blocked = tmp_path / "ro"
    blocked.mkdir(mode=0o500)
    monkeypatch.setenv("ASC_CACHE_DIR", str(blocked / "cache"))
    bundle = load_model(str(tiny))
    assert isinstance(bundle.model(torch.tensor([[2, 3]])).logits, torch.Tensor)
