"""Per-layer summary vectors: one batched forward pass per sample gives every layer at once.

:func:`extract_features` runs the model's base (no LM head: the vocabulary projection is not needed) for
every layer's states (:func:`asc.arch.hidden_states`) and pools each layer's token states into one vector per
sample:

- ``last``: the last real token (the decoders' default: in a causal model only the last token has
  seen the whole input, and for the token-tagging tasks KTX the text ends with the target token);
- ``mean``: the mean over the sample's tokens (special tokens included, as sentence encoders do);
- ``first``: the first token, i.e. ``[CLS]`` for BERT-style encoders (the encoders' default). The
  tokenizer's own special tokens are used; unlike INSPECT's extractor we never prefix a literal
  ``"[CLS]"`` string (as the INSPECT authors' code does).

The result has shape ``(n_samples, n_layers + 1, hidden)`` with layer 0 the embeddings. Samples
longer than ``max_tokens`` are truncated: ``last`` keeps the tail (the summarised token stays the
text's last), the other poolings keep the head (as INSPECT does); leading/trailing special tokens are
kept. :func:`cached_features` stores the array on disk per (model, task hash, pooling, max_tokens),
so a second run never touches the model. ``read`` replaces the states pooled (every layer's by default): the SAE
comparison (:mod:`probes.sae.versus`) pools one block's output, read where the SAE reads it, with the same
tokenization, truncation and pooling.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from asc.arch import hidden_states
from asc.atomic import write_atomic
from asc.device import model_device
from asc.errors import InputError

if TYPE_CHECKING:
    from asc.models import ModelBundle

__all__ = ["POOLINGS", "cached_features", "default_pooling", "extract_features", "model_key"]

log = logging.getLogger(__name__)

POOLINGS = ("last", "mean", "first")
PROBE_MAX_TOKENS = 512  # the papers' limit (BERT-era inputs): longer samples are truncated or skipped
_TOKEN_BUDGET = 1024  # padded tokens per micro-batch: 1024 measured fastest on 2 CPU cores (make bench)


class _TextTask(Protocol):
    """What :func:`cached_features` reads of a task (a :class:`probes.inspect.taskfile.Task`)."""

    @property
    def name(self) -> str: ...
    @property
    def digest(self) -> str: ...
    @property
    def n(self) -> int: ...
    @property
    def texts(self) -> tuple[str, ...]: ...


def default_pooling(bundle: ModelBundle) -> str:
    """``last`` for decoders (causal LMs), ``first`` (CLS) for encoders."""
    return "last" if bundle.causal else "first"


def model_key(bundle: ModelBundle) -> str:
    """A folder-safe key naming the weights: the model name plus a hash of where they came from."""
    digest = hashlib.sha1(f"{bundle.name}|{bundle.source}".encode()).hexdigest()[:8]
    return f"{re.sub(r'[^A-Za-z0-9_.-]+', '-', bundle.name)[:60]}-{digest}"


def _encode(tokenizer, text: str, max_tokens: int, keep_tail: bool) -> tuple[list[int], bool]:
    enc = tokenizer(text, add_special_tokens=True, return_special_tokens_mask=True, verbose=False)
    ids, special = list(enc["input_ids"]), list(enc["special_tokens_mask"])
    if len(ids) <= max_tokens:
        return ids, False
    head = 0
    while head < len(ids) and special[head]:
        head += 1
    tail = len(ids)
    while tail > head and special[tail - 1]:
        tail -= 1
    room = max(1, max_tokens - head - (len(ids) - tail))
    body = ids[head:tail]
    body = body[-room:] if keep_tail else body[:room]
    return ids[:head] + body + ids[tail:], True


def _pool(hidden_states, mask, pooling: str):
    """hidden_states: one (batch, seq, dim) tensor per layer; mask: (batch, seq) -> (batch, layers, dim)."""
    import torch

    rows = torch.arange(mask.shape[0], device=mask.device)
    last = mask.sum(dim=1) - 1  # right padding: the last real token
    m = mask[:, :, None].float()
    out = []
    for h in hidden_states:  # no stacking: pooling each layer avoids a copy of every state
        h = h.float()
        if pooling == "first":
            out.append(h[:, 0, :])
        elif pooling == "last":
            out.append(h[rows, last, :])
        else:
            out.append((h * m).sum(dim=1) / m.sum(dim=1).clamp(min=1))
    return torch.stack(out, dim=1)


def extract_features(bundle: ModelBundle, texts: Sequence[str], pooling: str | None = None, *,
                     max_tokens: int = PROBE_MAX_TOKENS,
                     on_progress: Callable[[int, int], None] | None = None,
                     should_stop: Callable[[], bool] | None = None,
                     read: Callable[[Any, Any], Sequence[Any]] | None = None) -> tuple[np.ndarray, int]:
    """Summary vectors of every layer for each text: ``(n, layers + 1, hidden)`` float32, and how many were truncated.

    Texts are sorted by length into right-padded micro-batches under a token budget; one forward pass
    per micro-batch returns all layers. Raises ``InterruptedError`` when ``should_stop()`` turns true.
    ``read(ids, mask)``, when given, returns the ``(batch, seq, hidden)`` states to pool instead of every layer's
    (the result then has one entry per state returned).
    """
    import torch

    pooling = pooling or default_pooling(bundle)
    if pooling not in POOLINGS:
        raise InputError(f"unknown pooling {pooling!r}: choose one of {', '.join(POOLINGS)}")
    limit = min(max_tokens, bundle.context_length)
    encoded = [_encode(bundle.tokenizer, t, limit, keep_tail=pooling == "last") for t in texts]
    if any(len(ids) == 0 for ids, _ in encoded):
        raise InputError("a text encodes to no token: drop empty samples first")
    truncated = sum(cut for _, cut in encoded)
    if truncated:
        log.info("%d of %d texts were longer than %d tokens and were truncated", truncated, len(texts), limit)
    order = np.argsort([len(ids) for ids, _ in encoded], kind="stable")
    pad = bundle.tokenizer.pad_token_id if bundle.tokenizer.pad_token_id is not None else 0
    out: np.ndarray | None = None
    done, i = 0, 0
    device = model_device(bundle.model)
    with bundle.lock, torch.inference_mode():
        while i < len(order):
            j = i + 1
            while j < len(order) and len(encoded[order[j]][0]) * (j - i + 1) <= _TOKEN_BUDGET:
                j += 1
            batch = [encoded[k][0] for k in order[i:j]]
            width = max(len(ids) for ids in batch)
            ids = torch.full((len(batch), width), pad, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for r, row in enumerate(batch):
                ids[r, : len(row)] = torch.tensor(row)
                mask[r, : len(row)] = 1
            ids, mask = ids.to(device), mask.to(device)  # the model's device; pooled vectors come back to the CPU
            states = read(ids, mask) if read else hidden_states(bundle.model, ids, mask)
            pooled = _pool(states, mask, pooling).cpu().numpy()  # (batch, layers + 1, dim)
            if out is None:
                out = np.empty((len(texts), *pooled.shape[1:]), dtype=np.float32)
            out[order[i:j]] = pooled
            done += j - i
            i = j
            if on_progress:
                on_progress(done, len(texts))
            if should_stop and should_stop():
                raise InterruptedError("feature extraction stopped")
    if out is None:
        raise InputError("no text to extract features from")
    return out, truncated


def cached_features(bundle: ModelBundle, task: _TextTask, pooling: str | None, cache_root: str | Path, *,
                    max_tokens: int = PROBE_MAX_TOKENS, on_progress: Callable[[int, int], None] | None = None,
                    should_stop: Callable[[], bool] | None = None) -> tuple[np.ndarray, dict]:
    """Features of ``task.texts`` from ``<cache_root>/<model_key>/<task>-<digest>-<pooling>-<max_tokens>.npy``,
    computed and written atomically on the first call. Returns the array and its metadata."""
    pooling = pooling or default_pooling(bundle)
    folder = Path(cache_root) / model_key(bundle)
    stem = f"{task.name}-{task.digest}-{pooling}-{max_tokens}"
    path, meta_path = folder / f"{stem}.npy", folder / f"{stem}.json"
    if path.exists() and meta_path.exists():
        x = np.load(path)
        if x.shape[0] == task.n:
            log.info("features from cache %s", path)
            if on_progress:
                on_progress(task.n, task.n)
            return x, json.loads(meta_path.read_text())
    x, truncated = extract_features(bundle, task.texts, pooling, max_tokens=max_tokens, on_progress=on_progress,
                                    should_stop=should_stop)
    meta = {"model": bundle.name, "source": bundle.source, "task": task.name, "task_digest": task.digest,
            "pooling": pooling, "max_tokens": max_tokens, "truncated": truncated, "shape": list(x.shape)}
    write_atomic(path, lambda tmp: np.save(tmp, x))
    write_atomic(meta_path, lambda tmp: tmp.write_text(json.dumps(meta, indent=1)))
    return x, meta
