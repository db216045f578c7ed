"""The residual stream after one block, read from the model adapter, and streamed from a corpus in bounded batches.

* :func:`resid_post` runs the model's base (:func:`asc.arch.model_insides`) with a forward hook on decoder block
  ``L`` and stops the pass there (SAELens's ``stop_at_layer``): the blocks after ``L`` and the LM head are never
  run, so reading layer 9 of SmolLM2's 30 costs a third of a forward pass. The block's output is read before any
  final norm (transformers' last hidden state has it applied; TransformerLens's ``hook_resid_post`` has not).
* :func:`splice` replaces block ``L``'s output by a function of it for every forward pass inside the ``with``
  (the SAE's reconstruction, zeros): the quality measure's spliced and ablated runs.
* :func:`encode_snippets` tokenizes with AsC-Eval's one tokenization (:func:`asc.scores.encode`: ids, character
  spans, special flags), truncated to ``max_tokens``; :func:`usable` is the tokens an SAE is trained on and read at:
  those that get a next-token prediction (:func:`asc.arch.predicted`: not special, not the first). The first token
  of a snippet is the attention sink of a model without BOS (SmolLM2), with a norm far above the others'; SAELens
  excludes special tokens for the same reason.
* :func:`stream_activations` yields shuffled batches of activations from snippets read in a seeded order, through
  a bounded buffer (at most ``buffer_tokens`` rows): snippets are run in micro-batches under a token budget,
  their usable rows go into the buffer, and once full it is shuffled and half of it is handed out in batches, the
  rest mixed with the next rows (the field's activation store, at a small scale). Each batch comes with the count of
  snippets read, where a resumed run starts again (the rows still in the buffer then are not trained on).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from asc.arch import model_insides, predicted
from asc.device import model_device
from asc.scores import encode

if TYPE_CHECKING:
    from asc.models import ModelBundle

__all__ = ["EncodedSnippet", "encode_snippets", "padded", "resid_post", "splice", "stream_activations", "usable"]

FEATURE = "SAE features"  # how the model adapter names us in an unsupported-architecture message


class _Stop(Exception):
    """Raised by the reading hook once block L ran: the rest of the pass is not needed."""


@dataclass(frozen=True)
class EncodedSnippet:
    """One snippet's tokens (AsC-Eval's tokenization, truncated): ids, character spans and special flags (T,)."""

    source: str
    ids: np.ndarray
    start: np.ndarray
    end: np.ndarray
    special: np.ndarray

    @property
    def n_tokens(self) -> int:
        """The number of tokens kept."""
        return len(self.ids)


def usable(special: np.ndarray) -> np.ndarray:
    """bool (T,): the tokens an SAE is trained on and read at (module doc): :func:`asc.arch.predicted`."""
    return predicted(special)


def encode_snippets(bundle: ModelBundle, sources: Sequence[str], max_tokens: int) -> list[EncodedSnippet]:
    """Each source's tokens, the first ``max_tokens`` (at most the model's context) kept."""
    limit = max(2, min(max_tokens, bundle.context_length))
    out = []
    for src in sources:
        ids, start, end, special = encode(bundle, src)
        out.append(EncodedSnippet(src, ids[:limit], start[:limit], end[:limit], special[:limit]))
    return out


def padded(bundle: ModelBundle, rows: Sequence[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-padded ``(ids, mask)`` (B, T) on the model's device."""
    pad = bundle.tokenizer.pad_token_id if bundle.tokenizer.pad_token_id is not None else 0
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), int(pad), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.as_tensor(row, dtype=torch.long)
        mask[i, : len(row)] = 1
    device = model_device(bundle.model)
    return ids.to(device), mask.to(device)


def _block_output(output: Any) -> torch.Tensor:
    out: torch.Tensor = output[0] if isinstance(output, tuple) else output
    return out


def resid_post(bundle: ModelBundle, layer: int, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B, T, d) float32: block ``layer``'s output for ``ids`` (the pass stops after it: module doc)."""
    insides = model_insides(bundle, FEATURE)
    kept: list[torch.Tensor] = []

    def read(module: Any, args: Any, output: Any) -> None:
        kept.append(_block_output(output).detach().float())
        raise _Stop

    hook = insides.layers[layer].register_forward_hook(read)
    try:
        with bundle.lock, torch.inference_mode(), contextlib.suppress(_Stop):
            insides.base(input_ids=ids, attention_mask=mask, use_cache=False)
    finally:
        hook.remove()
    return kept[0]


@contextlib.contextmanager
def splice(bundle: ModelBundle, layer: int, replace: Callable[[torch.Tensor], torch.Tensor]) -> Iterator[None]:
    """Within the ``with``, block ``layer``'s output ``h`` becomes ``replace(h)`` (same shape and dtype)."""
    insides = model_insides(bundle, FEATURE)

    def swap(module: Any, args: Any, output: Any) -> Any:
        h = _block_output(output)
        new = replace(h).to(h.dtype)
        return (new, *output[1:]) if isinstance(output, tuple) else new

    hook = insides.layers[layer].register_forward_hook(swap)
    try:
        yield
    finally:
        hook.remove()


def _micro_batches(snippets: Sequence[EncodedSnippet], budget: int) -> Iterator[list[int]]:
    """Consecutive snippet indices whose padded size stays under ``budget`` tokens (one at least)."""
    i = 0
    while i < len(snippets):
        j, width = i + 1, snippets[i].n_tokens
        while j < len(snippets) and max(width, snippets[j].n_tokens) * (j - i + 1) <= budget:
            width = max(width, snippets[j].n_tokens)
            j += 1
        yield list(range(i, j))
        i = j


def stream_activations(bundle: ModelBundle, layer: int, sources: Sequence[str], *, batch_size: int,
                       buffer_tokens: int, seed: int = 0, start: int = 0, max_tokens: int = 256,
                       forward_budget: int = 2048) -> Iterator[tuple[torch.Tensor, int]]:
    """Shuffled ``(batch_size, d)`` float32 batches of block ``layer``'s output at usable tokens of ``sources``,
    read in a seeded order, cycling (a new order each pass), from the ``start``-th snippet read on; each with how
    many snippets had been read (module doc). Never ends: the caller stops."""
    rng = np.random.default_rng(seed)
    n = len(sources)
    orders: dict[int, np.ndarray] = {}

    def order(epoch: int) -> np.ndarray:
        if epoch not in orders:
            orders.clear()
            orders[epoch] = np.random.default_rng([seed, epoch]).permutation(n)
        return orders[epoch]

    buffer: list[torch.Tensor] = []
    held, read = 0, start
    capacity = max(buffer_tokens, 2 * batch_size)
    while True:
        chunk: list[str] = []
        while len(chunk) < 32:
            epoch, pos = divmod(read + len(chunk), n)
            chunk.append(sources[int(order(epoch)[pos])])
        encoded = encode_snippets(bundle, chunk, max_tokens)
        for group in _micro_batches(encoded, forward_budget):
            rows = [encoded[g] for g in group]
            ids, mask = padded(bundle, [r.ids for r in rows])
            states = resid_post(bundle, layer, ids, mask).cpu()
            for r, snip in enumerate(rows):
                keep = torch.from_numpy(np.flatnonzero(usable(snip.special)))
                if len(keep):
                    buffer.append(states[r, keep])
                    held += len(keep)
            read += len(group)
            if held < capacity:
                continue
            pool = torch.cat(buffer)
            pool = pool[torch.from_numpy(rng.permutation(len(pool)))]
            out = len(pool) // 2 // batch_size * batch_size
            for b in range(0, out, batch_size):
                yield pool[b : b + batch_size], read
            buffer, held = [pool[out:]], len(pool) - out
