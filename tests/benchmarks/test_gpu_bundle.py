"""The GPU report's bundle (benchmarks/gpu/bundle.py) finds the SmolLM2 tokenizer on a machine whose cache is
empty: there the first load de-quantizes the GGUF and names the GGUF's own folder, which holds no tokenizer.json
(session 41 found `make gpu-bundle` failing on a fresh checkout for that reason)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks.gpu import bundle


def _loads(monkeypatch: pytest.MonkeyPatch, folders: list[Path]) -> list[str]:
    calls: list[str] = []

    def load_model(name: str) -> SimpleNamespace:
        folder = folders[min(len(calls), len(folders) - 1)]
        calls.append(name)
        return SimpleNamespace(source=str(folder / "model.gguf"), tokenizer=SimpleNamespace(name_or_path=str(folder)))

    monkeypatch.setattr("asc.models.load_model", load_model)
    return calls


def test_the_tokenizer_is_found_after_the_first_load_de_quantized(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    gguf_dir, cached = tmp_path / "gguf", tmp_path / "cache"
    gguf_dir.mkdir()
    cached.mkdir()
    (cached / "tokenizer.json").write_text("{}")
    calls = _loads(monkeypatch, [gguf_dir, cached])
    assert bundle.tokenizer_folder() == cached
    assert calls == ["smollm2-135m", "smollm2-135m"]


def test_a_tokenizer_that_never_appears_is_a_clear_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    _loads(monkeypatch, [tmp_path])
    with pytest.raises(SystemExit, match="no tokenizer.json next to the SmolLM2 model"):
        bundle.tokenizer_folder()
