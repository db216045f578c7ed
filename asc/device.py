"""Where a model runs and in which precision: device and dtype choice, memory estimates, fit checks.

:func:`resolve` turns the user's ``--device``/``--dtype`` (``auto`` by default in the CLI) into a
``torch.device`` and ``torch.dtype``: ``auto`` picks the first CUDA GPU in bfloat16, else Apple's
``mps`` in float16, else the CPU in float32. The library keeps ``cpu``/``float32`` as its default so
results stay identical to earlier versions.

:func:`estimate_bytes` is the memory a model needs to score a batch, in bytes::

    parameters x bytes(dtype)                                     the weights
  + batch_tokens x (2 x hidden x layers x bytes(dtype)            hidden states kept per layer
                    + vocab x (bytes(dtype) + 3 x 4))             logits, their fp32 copy and the
                                                                  log-softmax temporaries

:func:`check_fits` compares it with :func:`free_bytes` (``/proc/meminfo`` MemAvailable on a Linux
CPU, ``torch.cuda.mem_get_info`` on CUDA; unknown elsewhere, then nothing is checked) and raises
:class:`ModelLoadError` naming the fix (a smaller dtype, another device, a shorter window).
:func:`logit_budget` is the bytes of fp32 logits one scoring batch may hold: today's measured
256 MiB on the CPU, and an eighth of the free memory (at least that, at most 8 GiB) on a GPU.

:func:`fast_bfloat16` says where the logit lens unembeds its inner layers in bfloat16 by default
(:mod:`asc.lens`, precision): CUDA GPUs (tensor cores), and CPUs whose flags in ``/proc/cpuinfo`` list
``avx512_bf16`` or ``amx_bf16`` (Intel Cooper Lake, Sapphire Rapids and later; AMD Zen 4 and later). Other
CPUs (AVX2-only x86, Arm, and any system without ``/proc/cpuinfo``) and Apple's ``mps`` keep float32 there:
without those instructions bfloat16 products are emulated and slower than float32.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from asc.arch import config_shape
from asc.errors import InputError, ModelLoadError

__all__ = ["DEVICES", "DTYPES", "CPU_LOGIT_BUDGET", "check_fits", "check_names", "config_size", "dtype_bytes",
           "estimate_bytes",
           "free_bytes", "plan_placement",
           "BF16_FLAGS", "cpu_flags", "fast_bfloat16", "is_oom", "logit_budget", "model_device", "resolve"]

DEVICES = ("auto", "cpu", "cuda", "cuda:N", "mps")
DTYPES = ("auto", "float32", "bfloat16", "float16")
CPU_LOGIT_BUDGET = 256 * 2**20  # bytes of fp32 logits held at once on the CPU (measured, `make bench`)
_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def dtype_bytes(dtype: Any) -> int:
    """Bytes per value of a dtype given by name (``"bfloat16"``) or as a ``torch.dtype``."""
    name = str(dtype).replace("torch.", "")
    if name not in _BYTES:
        raise InputError(f"unknown dtype {dtype!r}: choose one of {', '.join(DTYPES)}")
    return _BYTES[name]


def _parse_device(device: str) -> str:
    text = (device or "auto").strip().lower()
    if text in ("auto", "cpu", "cuda", "mps"):
        return text
    if text.startswith("cuda:") and text[5:].isdigit():
        return text
    raise InputError(f"unknown device {device!r}: choose one of {', '.join(DEVICES)} (N: a GPU number such as cuda:1)")


def check_names(device: str = "auto", dtype: str = "auto") -> tuple[str, str]:
    """``(device, dtype)`` as the CLI's ``--device``/``--dtype`` accept them (:data:`DEVICES`, :data:`DTYPES`),
    lower-cased, without importing torch; :class:`InputError` naming the choices otherwise. Whether the device
    is present here is checked when the model is loaded (:func:`resolve`)."""
    dt = (dtype or "auto").strip().lower()
    if dt not in DTYPES:
        raise InputError(f"unknown dtype {dtype!r}: choose one of {', '.join(DTYPES)}")
    return _parse_device(device), dt


def resolve(device: str = "auto", dtype: str = "auto") -> tuple[Any, Any]:
    """``(torch.device, torch.dtype)`` for the requested names; ``auto`` picks the best available (module doc)."""
    import torch

    dev = _parse_device(device)
    dt = (dtype or "auto").strip().lower()
    if dt not in DTYPES:
        raise InputError(f"unknown dtype {dtype!r}: choose one of {', '.join(DTYPES)}")
    mps = getattr(torch.backends, "mps", None)
    has_mps = bool(mps is not None and mps.is_available())
    if dev == "auto":
        dev = "cuda:0" if torch.cuda.is_available() else "mps" if has_mps else "cpu"
    if dev.startswith("cuda"):
        if not torch.cuda.is_available():
            raise InputError(f"device {device!r} asked for, but this machine has no CUDA GPU visible to torch "
                             "(or torch was built without CUDA): use --device cpu (or auto), or install a CUDA build "
                             "of torch")
        index = int(dev.split(":")[1]) if ":" in dev else 0
        if index >= torch.cuda.device_count():
            raise InputError(f"device {device!r} asked for, but only {torch.cuda.device_count()} GPU(s) are "
                             f"visible: use cuda:0..cuda:{torch.cuda.device_count() - 1} or check CUDA_VISIBLE_DEVICES")
        dev = f"cuda:{index}"
    if dev == "mps" and not has_mps:
        raise InputError(f"device {device!r} asked for, but Apple's MPS backend is not available here: use --device "
                         "cpu (or auto)")
    if dt == "auto":
        dt = "bfloat16" if dev.startswith("cuda") else "float16" if dev == "mps" else "float32"
    return torch.device(dev), getattr(torch, dt)


def estimate_bytes(n_params: int, dtype: Any, batch_tokens: int, hidden: int, layers: int, vocab: int) -> int:
    """Bytes to hold the weights and one scoring batch of ``batch_tokens`` tokens (formula in the module doc)."""
    b = dtype_bytes(dtype)
    return int(n_params * b + batch_tokens * (2 * hidden * layers * b + vocab * (b + 3 * 4)))


def _meminfo_available(path: Path = Path("/proc/meminfo")) -> int | None:
    try:
        for line in path.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


BF16_FLAGS = ("avx512_bf16", "amx_bf16")  # CPU flags of native bfloat16 products (module doc)


def cpu_flags(path: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The CPU's feature flags from ``/proc/cpuinfo`` (empty where there is none, e.g. macOS, Windows)."""
    try:
        for line in path.read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return frozenset(line.split(":", 1)[1].split())
    except (OSError, IndexError):
        return frozenset()
    return frozenset()


def fast_bfloat16(device: Any, flags: frozenset[str] | None = None) -> bool:
    """Whether bfloat16 products beat float32 on ``device``: CUDA, or a CPU with one of :data:`BF16_FLAGS`."""
    kind = getattr(device, "type", str(device).split(":")[0])
    if kind == "cuda":
        return True
    if kind != "cpu":
        return False
    return bool(set(BF16_FLAGS) & (cpu_flags() if flags is None else flags))


def free_bytes(device: Any) -> int | None:
    """Free memory on ``device`` in bytes, or None when it cannot be known (then no check is made)."""
    kind = getattr(device, "type", str(device).split(":")[0])
    if kind == "cuda":
        import torch

        return int(torch.cuda.mem_get_info(device)[0])
    if kind == "cpu" and sys.platform.startswith("linux"):
        return _meminfo_available()
    return None


def check_fits(name: str, n_params: int, device: Any, dtype: Any, *, batch_tokens: int = 2048, hidden: int = 0,
               layers: int = 0, vocab: int = 0, free: Callable[[Any], int | None] | None = None) -> int:
    """The estimate in bytes; :class:`ModelLoadError` naming the fix when it exceeds ``free(device)``
    (default :func:`free_bytes`; tests pass fake values)."""
    need = estimate_bytes(n_params, dtype, batch_tokens, hidden, layers, vocab)
    have = (free or free_bytes)(device)
    if have is not None and need > have:
        dt = str(dtype).replace("torch.", "")
        fixes = ["--dtype bfloat16 (half the memory)"] if dt == "float32" else []
        fixes.append("another device (--device cpu or a larger GPU)" if str(device) != "cpu"
                     else "a GPU (--device cuda) or closing other programs")
        fixes.append("a smaller model")
        raise ModelLoadError(f"{name} does not fit on {device} in {dt}: it needs about {need / 2**30:.1f} GiB "
                             f"({n_params / 1e6:.0f}M parameters plus a batch of {batch_tokens} tokens) but "
                             f"{have / 2**30:.1f} GiB are free; try {', or '.join(fixes)}")
    return need


def logit_budget(device: Any, free: Callable[[Any], int | None] | None = None) -> int:
    """Bytes of fp32 logits one scoring batch may hold on ``device`` (grows with a GPU's free memory)."""
    kind = getattr(device, "type", str(device).split(":")[0])
    if kind == "cpu":
        return CPU_LOGIT_BUDGET
    have = (free or free_bytes)(device)
    if have is None:
        return CPU_LOGIT_BUDGET
    return int(min(8 * 2**30, max(CPU_LOGIT_BUDGET, have // 8)))


def model_device(model: Any) -> Any:
    """The device of a model's inputs: its ``device`` attribute, else its first parameter's, else the CPU."""
    import torch

    dev = getattr(model, "device", None)
    if isinstance(dev, torch.device):
        return dev
    try:
        return next(model.parameters()).device
    except (AttributeError, StopIteration, TypeError):
        return torch.device("cpu")


def is_oom(err: BaseException) -> bool:
    """Whether ``err`` is an out-of-memory error (CUDA's own, or a RuntimeError that says so)."""
    import torch

    oom = getattr(torch.cuda, "OutOfMemoryError", None)
    return (oom is not None and isinstance(err, oom)) or (isinstance(err, RuntimeError) and "out of memory" in str(err))


def config_size(config: Any) -> tuple[int, int, int, int]:
    """``(parameters, hidden, layers, vocab)`` estimated from a transformers config before any weight is read:
    ``layers x (4 h^2 + 3 h i) + vocab x h x (1 if tied else 2)`` (h: hidden size, i: the MLP's inner size,
    4 h when the config names none)."""
    hidden, layers, vocab, inner, tied = config_shape(config)
    params = layers * (4 * hidden * hidden + 3 * hidden * inner) + vocab * hidden * (1 if tied else 2)
    return params, hidden, layers, vocab


def plan_placement(name: str, size: tuple[int, int, int, int], device: Any, dtype: Any, *,
                   free: Callable[[Any], int | None] | None = None, n_gpus: int | None = None) -> str | None:
    """Check that a model of ``size`` (:func:`config_size`) fits; ``"auto"`` when it only fits spread over
    several CUDA GPUs (transformers' ``device_map="auto"``), else None. :class:`ModelLoadError` when it cannot fit."""
    params, hidden, layers, vocab = size
    free = free or free_bytes
    if not params:
        return None
    kind = getattr(device, "type", str(device).split(":")[0])
    if kind == "cuda":
        if n_gpus is None:
            import torch

            n_gpus = torch.cuda.device_count()
        need = estimate_bytes(params, dtype, 2048, hidden, layers, vocab)
        have = free(device)
        if n_gpus > 1 and have is not None and need > have:
            import torch

            total = sum(free(torch.device(f"cuda:{i}")) or 0 for i in range(n_gpus))
            if need <= total:
                return "auto"
    check_fits(name, params, device, dtype, hidden=hidden, layers=layers, vocab=vocab, free=free)
    return None
