"""The one-pass next-token statistics kernel (asc/kernels.py) against the eager torch path: equal where it runs
(Triton's CPU interpreter here when Triton is installed, CUDA under ``pytest -m gpu``), never used elsewhere, and
replaced by the eager path for good when it fails."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from asc import kernels
from asc.scores import eager_stats, token_stats

K = 5


def random_logits(n: int, vocab: int, dtype, device="cpu", seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    logits = (torch.randn(n, vocab, generator=gen) * 4).to(dtype)
    logits[1, :10] = float("-inf")  # a masked vocabulary slice, as some models emit
    targets = torch.randint(0, vocab, (n,), generator=gen)
    targets[1] = 20
    targets[2] = int(logits[2].float().argmax())  # rank 1
    return logits.to(device), targets.to(device)


def assert_equal_stats(fused, eager):
    logprob, entropy, rank, top_i, top_p = fused
    np.testing.assert_allclose(logprob, eager[0], atol=2e-5)
    np.testing.assert_allclose(entropy, eager[1], atol=2e-5)
    assert np.array_equal(rank, eager[2]) and rank.dtype == eager[2].dtype
    np.testing.assert_allclose(top_p, eager[4], rtol=1e-5, atol=1e-6)  # float32 sums in another order (GPU: 2e-6)
    assert top_i.shape == eager[3].shape and top_i.dtype == eager[3].dtype


def test_cpu_tensors_take_the_eager_path(monkeypatch):
    monkeypatch.setattr("asc.paths.triton_interpreter", lambda: False)
    logits, targets = random_logits(6, 300, torch.float32)
    assert not kernels.available(logits)
    for got, want in zip(token_stats(logits.clone(), targets, K, 2**20), eager_stats(logits.clone(), targets, K, 2**20),
                         strict=True):
        assert np.array_equal(got, want)


def test_a_failing_kernel_falls_back_to_eager_for_good(monkeypatch, caplog):
    monkeypatch.setitem(kernels._state, "failed", False)
    monkeypatch.setattr(kernels, "available", lambda logits: not kernels._state["failed"])
    calls = []

    def broken(logits, targets):
        calls.append(1)
        raise RuntimeError("PTX compile error")

    monkeypatch.setattr(kernels, "row_stats", broken)
    logits, targets = random_logits(6, 300, torch.float32)
    want = eager_stats(logits.clone(), targets, K, 2**20)
    for _ in range(2):
        got = token_stats(logits.clone(), targets, K, 2**20)
        assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))
    assert calls == [1] and kernels._state["failed"]
    assert "fused next-token statistics kernel failed (RuntimeError: PTX compile error)" in caplog.text


INTERPRETED = """
import json, sys, torch
sys.path.insert(0, ".")
from tests.asc.test_kernels import random_logits
from asc import kernels
from asc.scores import _fused_stats, eager_stats
out = []
for dtype in (torch.float32, torch.bfloat16):
    for vocab in (50, 3000):
        logits, targets = random_logits(5, vocab, dtype)
        assert kernels.available(logits)
        fused = _fused_stats(logits.clone(), targets, 5)
        eager = eager_stats(logits.clone(), targets, 5, 2**20)
        out.append([[a.tolist() for a in fused], [b.tolist() for b in eager]])
print(json.dumps(out))
"""


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="Triton is not installed (CUDA machines have it)")
def test_kernel_equals_eager_in_tritons_interpreter():
    """Vocabularies smaller than one block and not a multiple of it, float32 and bfloat16, a masked slice."""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, "-c", INTERPRETED], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for fused, eager in json.loads(proc.stdout.splitlines()[-1]):
        assert_equal_stats([np.asarray(a) for a in fused], [np.asarray(b) for b in eager])


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("vocab", [49152, 262144])
def test_kernel_equals_eager_on_cuda(vocab):
    logits, targets = random_logits(512, vocab, torch.bfloat16, device="cuda")
    assert kernels.available(logits)
    fused = token_stats(logits.clone(), targets, K, 2**28)
    assert not kernels._state["failed"]
    assert_equal_stats(fused, eager_stats(logits.clone(), targets, K, 2**28))


@pytest.mark.parametrize("vocab", [1000, 16384, 16384 + 37, 49152])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_two_stage_top_k_finds_the_same_values(vocab, dtype):
    logits, _ = random_logits(9, vocab, dtype)
    rows = logits[2:7]  # a view with a storage offset, as the scorer's per-sequence slices
    want_v, _ = rows.topk(K, dim=-1)
    got_v, got_i = kernels.top_k(rows, K)
    assert torch.equal(got_v, want_v)
    assert torch.equal(rows.gather(1, got_i), got_v) and got_i.dtype == torch.int64
