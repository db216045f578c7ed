"""Shared pieces of the SAE tests: a small corpus of Python functions, hand-built SAEs for the tiny model."""

from __future__ import annotations

import pytest
import torch

from probes.sae import SaeConfig, SparseAutoencoder

FUNCTIONS = [
    'def count_chars(string, character):\n    """Count how often character occurs in string."""\n    count = 0\n'
    "    for letter in string:\n        if letter == character:\n            count = count + 1\n    return count\n",
    'def mean(values):\n    """The arithmetic mean of values."""\n    total = 0.0\n    for v in values:\n'
    "        total += v\n    return total / len(values)\n",
    "def first_even(numbers):\n    # the first even number, or None\n    for n in numbers:\n        if n % 2 == 0:\n"
    "            return n\n    return None\n",
    'def squares(limit):\n    """Squares below limit."""\n    out = [i * i for i in range(limit) if i * i < limit]\n'
    '    try:\n        out.append(int("3"))\n    except ValueError:\n        raise\n    return {"squares": out}\n',
]


@pytest.fixture
def corpus_file(tmp_path):
    """A .py corpus of the four functions (python -m probes sae --corpus FILE)."""
    path = tmp_path / "funcs.py"
    path.write_text("\n\n".join(FUNCTIONS))
    return path


def identity_sae(d: int, layer: int = 1, model: str = "tiny-random") -> SparseAutoencoder:
    """An SAE whose reconstruction is its input exactly, through a real TopK with ReLU.

    Latents come in pairs (2d of them): ``W_enc = [I, -I]`` gives pre-activations ``[x, -x]``; of each pair one is
    >= 0 and the other <= 0, so the d largest of the 2d are exactly ``max(x_i, -x_i)`` per coordinate (ties at 0
    give 0 either way), ReLU keeps them, and ``W_dec = [I; -I]`` gives ``relu(x) - relu(-x) = x``. k = d makes
    the TopK choose (k = 2d would not test it); both biases are 0."""
    eye = torch.eye(d)
    cfg = SaeConfig(d_in=d, d_sae=2 * d, architecture="topk", k=d, model_name=model,
                    hook_name=f"blocks.{layer}.hook_resid_post")
    return SparseAutoencoder(cfg, {"W_enc": torch.cat([eye, -eye], dim=1), "W_dec": torch.cat([eye, -eye], dim=0),
                                   "b_enc": torch.zeros(2 * d), "b_dec": torch.zeros(d)}).eval()


def zero_sae(d: int, layer: int = 1, model: str = "tiny-random") -> SparseAutoencoder:
    """An SAE whose reconstruction is 0 (all weights 0): splicing it in is zero-ablating the layer."""
    cfg = SaeConfig(d_in=d, d_sae=4, architecture="topk", k=2, model_name=model,
                    hook_name=f"blocks.{layer}.hook_resid_post")
    return SparseAutoencoder(cfg).eval()


def random_sae(d: int, width: int = 16, k: int = 3, layer: int = 1, seed: int = 0,
               model: str = "tiny-random") -> SparseAutoencoder:
    """A TopK SAE with seeded random weights."""
    g = torch.Generator().manual_seed(seed)
    cfg = SaeConfig(d_in=d, d_sae=width, architecture="topk", k=k, model_name=model,
                    hook_name=f"blocks.{layer}.hook_resid_post")
    return SparseAutoencoder(cfg, {"W_enc": torch.randn(d, width, generator=g), "W_dec": torch.randn(width, d, generator=g),
                                   "b_enc": torch.randn(width, generator=g) * 0.1,
                                   "b_dec": torch.randn(d, generator=g) * 0.1}).eval()
