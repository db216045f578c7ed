"""Bad input to the commands: one clear line on stderr, exit status 2, nothing half-written.

Each case runs ``python -m asc`` in a subprocess (offline, a private cache folder) as a user would.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # subprocesses: a second or more each (make test runs them)

ROOT = Path(__file__).resolve().parents[2]
SNIPPET = "def add(a, b):\n    return a + b\n"


def _asc(*args: str, cache: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ASC_CACHE_DIR": str(cache), "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.run([sys.executable, "-m", "asc", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def _one_line(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ") and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


FAKE_GGUFS = {
    "random bytes": os.urandom(100),
    "text": b"this is not a model at all\n" * 4,
    # the right magic and version, then the header stops: a download cut short
    "truncated header": b"GGUF" + struct.pack("<I", 3) + struct.pack("<Q", 12)[:5],
    "truncated metadata": b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 40) + b"general.arch",
}


@pytest.mark.parametrize("content", FAKE_GGUFS.values(), ids=FAKE_GGUFS.keys())
def test_a_fake_or_truncated_gguf_names_the_file_and_the_fix(tmp_path, content):
    folder = tmp_path / "x"
    folder.mkdir()
    model = folder / "model.gguf"
    model.write_bytes(content)
    source = tmp_path / "f.py"
    source.write_text(SNIPPET)
    cache = tmp_path / "cache"
    proc = _asc("explain", str(source), "--model", str(model), cache=cache)
    assert proc.returncode == 2, proc.stderr
    line = _one_line(proc)
    assert str(model) in line and "GGUF" in line and "download" in line, line
    assert proc.stdout == ""
    assert not list(cache.rglob("*")) or not any(p.is_file() for p in cache.rglob("*"))  # nothing half-written
    assert sorted(p.name for p in folder.iterdir()) == ["model.gguf"]


def test_a_file_that_is_no_gguf_is_refused_before_torch_is_imported(tmp_path):
    """``check_spec`` (what ``load_model`` and the Ray actors call first) reads the file's first bytes: a .gguf that is
    no GGUF at all costs no seconds of imports."""
    model = tmp_path / "model.gguf"
    model.write_bytes(FAKE_GGUFS["text"])
    code = ("import sys\nfrom asc.errors import ModelLoadError\nfrom asc.models import check_spec\n"
            f"try:\n    check_spec({str(model)!r})\nexcept ModelLoadError as err:\n    print(err)\n"
            "sys.exit(2 if 'torch' in sys.modules else 0)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert str(model) in proc.stdout and "not a GGUF file" in proc.stdout


def test_a_fake_gguf_raises_model_load_error_in_process(tmp_path):
    from asc.errors import ModelLoadError
    from asc.models import load_model

    model = tmp_path / "model.gguf"
    model.write_bytes(os.urandom(100))
    with pytest.raises(ModelLoadError, match="not a GGUF file"):
        load_model(str(model))
    with pytest.raises(ModelLoadError, match="model.gguf"):
        load_model(str(tmp_path))  # a folder holding that one .gguf file


def test_a_source_over_the_limit_is_refused_with_one_line(tmp_path):
    big = tmp_path / "big.py"
    big.write_text(SNIPPET * (2_000_000 // len(SNIPPET)))  # 2 MB
    proc = _asc("explain", str(big), "--model", "tiny-random", "--json", cache=tmp_path / "cache", timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    line = _one_line(proc)
    assert "200,000" in line and "function" in line, line
    assert proc.stdout == ""


def test_the_source_limit_in_process(tiny):
    from asc.errors import InputError
    from asc.explain import MAX_SOURCE_CHARS, check_source, explain

    assert MAX_SOURCE_CHARS == 200_000
    at_limit = "x = 1\n" * (MAX_SOURCE_CHARS // 6)
    assert check_source(at_limit) is at_limit
    with pytest.raises(InputError, match="200,000"):
        explain(tiny, at_limit + "y = 2\n" * 10)


def test_the_browser_limit_still_applies():
    from asc.errors import InputError
    from ui.guards import MAX_CHARS, check_length

    assert MAX_CHARS == 60_000
    check_length("x" * MAX_CHARS)
    with pytest.raises(InputError, match="60,000"):
        check_length("x" * (MAX_CHARS + 1))
