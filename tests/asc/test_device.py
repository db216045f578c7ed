"""asc.device: device/dtype choice, memory estimates and fit checks (free memory is faked)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from asc import device as dev
from asc.errors import InputError, ModelLoadError

GIB = 2**30


def test_auto_is_cpu_float32_without_a_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert dev.resolve() == (torch.device("cpu"), torch.float32)
    assert dev.resolve("cpu", "bfloat16") == (torch.device("cpu"), torch.bfloat16)


def test_auto_prefers_cuda_in_bfloat16_then_mps_in_float16(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert dev.resolve() == (torch.device("cuda:0"), torch.bfloat16)
    assert dev.resolve("cuda:1", "float32") == (torch.device("cuda:1"), torch.float32)
    assert dev.resolve("cuda")[0] == torch.device("cuda:0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert dev.resolve() == (torch.device("mps"), torch.float16)


@pytest.mark.parametrize("device, dtype, words", [
    ("gpu", "auto", ["unknown device", "cpu", "cuda:N", "mps"]),
    ("cuda:x", "auto", ["unknown device"]),
    ("cpu", "fp8", ["unknown dtype", "float32", "bfloat16", "float16"]),
])
def test_invalid_values_list_the_valid_options(device, dtype, words):
    with pytest.raises(InputError) as err:
        dev.resolve(device, dtype)
    assert all(w in str(err.value) for w in words)


def test_missing_accelerator_names_the_fix(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    with pytest.raises(InputError, match="--device cpu"):
        dev.resolve("cuda")
    with pytest.raises(InputError, match="MPS"):
        dev.resolve("mps")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(InputError, match="only 1 GPU"):
        dev.resolve("cuda:3")


def test_estimate_follows_the_documented_formula():
    assert dev.estimate_bytes(1000, "float32", 0, 8, 2, 10) == 4000
    assert dev.estimate_bytes(1000, torch.bfloat16, 0, 8, 2, 10) == 2000
    # 10 tokens x (2 x 8 x 2 x 2 bytes + 10 x (2 + 12) bytes) on top of the weights
    assert dev.estimate_bytes(1000, "bfloat16", 10, 8, 2, 10) == 2000 + 10 * (64 + 140)


def test_free_bytes_reads_meminfo_on_linux_cpu(tmp_path, monkeypatch):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       16384 kB\nMemFree:         1024 kB\nMemAvailable:    2048 kB\n")
    assert dev._meminfo_available(meminfo) == 2048 * 1024  # MemAvailable, in bytes (the file says kB)
    meminfo.write_text("MemTotal:       16384 kB\n")
    assert dev._meminfo_available(meminfo) is None  # an old kernel without the line: no check
    assert dev._meminfo_available(tmp_path / "missing") is None
    assert dev.free_bytes("mps") is None
    monkeypatch.setattr(dev.sys, "platform", "darwin")
    assert dev.free_bytes(torch.device("cpu")) is None  # no /proc/meminfo: unknown, not a guess
    monkeypatch.undo()
    if not Path("/proc/meminfo").exists():
        pytest.skip("this machine has no /proc/meminfo")
    total = next(int(line.split()[1]) * 1024 for line in Path("/proc/meminfo").read_text().splitlines()
                 if line.startswith("MemTotal:"))
    free = dev.free_bytes(torch.device("cpu"))
    assert free is not None and 0 < free <= total  # this machine's available memory, in bytes


def test_check_fits_raises_naming_the_fix():
    size = dict(hidden=576, layers=30, vocab=49152)
    need = dev.check_fits("m", 135_000_000, "cpu", "float32", free=lambda d: 64 * GIB, **size)
    assert need == dev.estimate_bytes(135_000_000, "float32", 2048, 576, 30, 49152)
    with pytest.raises(ModelLoadError) as err:
        dev.check_fits("big", 7_000_000_000, torch.device("cuda:0"), torch.float32, free=lambda d: 8 * GIB, **size)
    msg = str(err.value)
    assert "big" in msg and "--dtype bfloat16" in msg and "another device" in msg and "8.0 GiB" in msg
    with pytest.raises(ModelLoadError) as err:
        dev.check_fits("big", 7_000_000_000, "cpu", "bfloat16", free=lambda d: 1 * GIB)
    assert "--dtype" not in str(err.value) and "--device cuda" in str(err.value)
    assert dev.check_fits("unknown", 10**12, "mps", "float16", free=lambda d: None) > 0  # unknown: no check


def test_logit_budget_grows_with_gpu_memory():
    assert dev.logit_budget(torch.device("cpu")) == dev.CPU_LOGIT_BUDGET
    assert dev.logit_budget(torch.device("cuda:0"), free=lambda d: 40 * GIB) == 5 * GIB
    assert dev.logit_budget(torch.device("cuda:0"), free=lambda d: 512 * 2**20) == dev.CPU_LOGIT_BUDGET
    assert dev.logit_budget(torch.device("cuda:0"), free=lambda d: 400 * GIB) == 8 * GIB


def test_config_size_estimates_parameters(tiny):
    params, hidden, layers, vocab = dev.config_size(tiny.model.config)
    assert (hidden, layers, vocab) == (32, 2, len(tiny.tokenizer))
    real = tiny.n_params
    assert 0.7 * real < params < 1.3 * real


def test_placement_spreads_over_gpus_only_when_one_is_too_small():
    size = (7_000_000_000, 4096, 32, 32000)
    cuda0 = torch.device("cuda:0")
    assert dev.plan_placement("m", size, cuda0, torch.bfloat16, free=lambda d: 80 * GIB, n_gpus=2) is None
    assert dev.plan_placement("m", size, cuda0, torch.bfloat16, free=lambda d: 10 * GIB, n_gpus=2) == "auto"
    with pytest.raises(ModelLoadError):
        dev.plan_placement("m", size, cuda0, torch.bfloat16, free=lambda d: 10 * GIB, n_gpus=1)
    with pytest.raises(ModelLoadError):
        dev.plan_placement("m", size, cuda0, torch.bfloat16, free=lambda d: 2 * GIB, n_gpus=2)
    assert dev.plan_placement("m", (0, 0, 0, 0), cuda0, torch.bfloat16, free=lambda d: 1) is None


def test_is_oom():
    assert dev.is_oom(RuntimeError("CUDA out of memory. Tried to allocate"))
    assert dev.is_oom(torch.cuda.OutOfMemoryError("x"))
    assert not dev.is_oom(RuntimeError("shape mismatch"))


def test_model_device(tiny):
    assert dev.model_device(tiny.model) == torch.device("cpu")
    assert dev.model_device(object()) == torch.device("cpu")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_resolve_and_free_memory():
    device, dtype = dev.resolve("auto")
    assert device.type == "cuda" and dtype == torch.bfloat16
    assert dev.free_bytes(device) > 0
    assert dev.logit_budget(device) >= dev.CPU_LOGIT_BUDGET


# ---------------------------------------------------------------------------------------------- half precision

# Tolerances of bfloat16 against float32 on the CPU (docs/models.md, "Half precision"). SmolLM2 on 8 HumanEval
# functions (1190 predicted tokens) measured max / mean absolute differences of 0.090 / 0.0068 per token
# probability, 0.090 / 0.0089 per node value and 0.026 / 0.0094 per category value; the bounds keep a margin.
PROB_ATOL, NODE_ATOL, CATEGORY_ATOL = 0.15, 0.15, 0.05
TINY_ATOL = 1e-3  # the tiny random model predicts near-uniform probabilities (~1/320): differences ~5e-6

COUNT = ("def count_chars(string, character):\n    count = 0\n    for letter in string:\n"
         "        if letter == character:\n            count = count + 1\n    return count\n")


def assert_half_matches_full(full, half, prob_atol, node_atol, category_atol):
    """Same tree and alignment; probabilities, node and category values within the stated tolerances."""
    import numpy as np

    from tests.helpers import binding_pairs

    assert full.tree.type == half.tree.type
    assert np.array_equal(full.tree.start, half.tree.start) and np.array_equal(full.tree.end, half.tree.end)
    for got, want in zip(binding_pairs(full.alignment), binding_pairs(half.alignment), strict=True):
        assert np.array_equal(got, want)
    assert np.array_equal(full.scores.has_prediction, half.scores.has_prediction)
    assert np.allclose(full.scores.prob, half.scores.prob, atol=prob_atol, rtol=0, equal_nan=True)
    assert np.allclose(full.values, half.values, atol=node_atol, rtol=0, equal_nan=True)
    assert full.category_values.keys() == half.category_values.keys()
    for key, value in full.category_values.items():
        assert np.allclose(value, half.category_values[key], atol=category_atol, rtol=0, equal_nan=True), key


def test_bfloat16_matches_float32_on_the_tiny_model():
    from asc import explain, load_model

    full, half = (explain(load_model("tiny-random", dtype=d), COUNT) for d in ("float32", "bfloat16"))
    assert (half.model["dtype"], full.model["dtype"]) == ("bfloat16", "float32")
    assert_half_matches_full(full, half, TINY_ATOL, TINY_ATOL, TINY_ATOL)


@pytest.mark.real
@pytest.mark.slow
def test_bfloat16_matches_float32_on_smollm2():
    from asc import explain, load_model
    from asc.corpus.sources import load_corpus

    snippets = [s.source for s in load_corpus("humaneval", limit=3)]
    full, half = load_model("smollm2-135m"), load_model("smollm2-135m", dtype="bfloat16")
    for source in snippets:
        assert_half_matches_full(explain(full, source), explain(half, source), PROB_ATOL, NODE_ATOL, CATEGORY_ATOL)


# ------------------------------------------------------------------------------- where bfloat16 products pay off

def test_fast_bfloat16_reads_the_cpus_flags(tmp_path):
    intel = tmp_path / "intel"
    intel.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16 amx_tile\n")
    old = tmp_path / "old"
    old.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2\n")
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd bf16\n")
    assert dev.fast_bfloat16("cpu", dev.cpu_flags(intel))
    assert not dev.fast_bfloat16("cpu", dev.cpu_flags(old))
    assert not dev.fast_bfloat16("cpu", dev.cpu_flags(arm))  # Arm's bf16 is not measured here: float32 stays
    assert dev.cpu_flags(tmp_path / "missing") == frozenset()
    assert dev.fast_bfloat16(torch.device("cuda")) and not dev.fast_bfloat16("mps")


def test_the_lens_unembeds_in_bfloat16_only_where_the_device_is_fast(monkeypatch, tiny):
    from asc.lens import lens_scores

    text = "def f(x):\n    return x + 1\n"
    exact = lens_scores(tiny, text, exact=True)
    monkeypatch.setattr("asc.lens.fast_bfloat16", lambda device: False)
    slow_cpu = lens_scores(tiny, text)
    monkeypatch.setattr("asc.lens.fast_bfloat16", lambda device: True)
    fast_cpu = lens_scores(tiny, text)
    assert np.array_equal(slow_cpu.logprob, exact.logprob, equal_nan=True)
    assert not np.array_equal(fast_cpu.logprob[:-1], exact.logprob[:-1], equal_nan=True)
    assert np.array_equal(fast_cpu.logprob[-1], exact.logprob[-1], equal_nan=True)  # the output stays exact
