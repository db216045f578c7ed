"""Shared fixtures: the in-process tiny random model, with and without a BOS token.

Every test runs offline (``HF_HUB_OFFLINE=1`` is set before transformers is imported).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from anywhere, not only from the repository root
    sys.path.insert(0, str(ROOT))

import pytest  # noqa: E402

from asc.models import tiny_random_model  # noqa: E402


@pytest.fixture(scope="session")
def tiny():
    """2-layer GPT-2 with random weights, 64-token context, no BOS token."""
    return tiny_random_model()


@pytest.fixture(scope="session")
def tiny_bos():
    """The same tiny model whose tokenizer puts ``<|endoftext|>`` first (offset (0, 0))."""
    return tiny_random_model(add_bos=True)


@pytest.fixture(scope="session")
def runs_dir(tmp_path_factory):
    """Run folders ``smol`` (the real SmolLM2) and ``tiny`` on the same 5 HumanEval problems."""
    from asc import load_corpus, load_model, run_corpus

    root = tmp_path_factory.mktemp("runs")
    snippets = load_corpus("humaneval", limit=5)
    run_corpus(load_model("smollm2-135m"), snippets, root / "smol", corpus="humaneval", progress=False)
    run_corpus(tiny_random_model(), snippets, root / "tiny", corpus="humaneval", progress=False)
    return root
