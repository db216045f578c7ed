"""Prefix KV caches, the model adapter's second half (:mod:`asc.arch`): the one place that builds a model's cache
of keys and values, cuts it, batches it and continues from it.

A feature that runs a model again from a point of a sequence (occlusion's variants, branches, glueCode's ranking of
candidate texts) runs the prefix once and continues from its cache:

- :func:`run_prefix`: one forward pass over the prefix, returning its logits and its cache: by default a fresh
  ``DynamicCache`` of full-attention layers, also for sliding-window models, so that any prefix can be cut from it
  (``full=False``: the cache the model makes itself);
- :func:`prefix_rows`: the cache's first positions for a batch of rows, as views (a cache's update concatenates
  into new tensors, so the prefix's own is never written);
- :func:`padded_rows`: row ``r`` holds the first ``lengths[r]`` positions, left-padded with zeros to the longest
  (copies), with the matching attention mask: rows of different prefix lengths decode together;
- :func:`repeated_rows`: a copy with the one row repeated; :func:`keep_rows`: drops finished rows in place;
- :func:`continue_from`: a forward pass after a cache, returning the logits and the cache extended.

The architecture matrix (``tests/asc/test_arch_matrix.py``) checks, for every family the adapter knows, that a
continuation from a cut cache gives the logits of the uncached pass and a branch the tokens of an uncached decode.
"""

from __future__ import annotations

import copy
from typing import Any

from asc.arch import architecture
from asc.errors import UnsupportedArchitectureError

__all__ = ["continue_from", "keep_rows", "padded_rows", "prefix_rows", "repeated_rows", "run_prefix"]


def run_prefix(model: Any, input_ids: Any, *, full: bool = True, feature: str = "this feature",
               **inputs: Any) -> tuple[Any, Any]:
    """``(logits, cache)`` of one pass over ``input_ids`` (B, T); ``inputs``: more forward arguments (an
    attention mask, :func:`asc.arch.keep_logits`); ``full``: a fresh cache of full-attention layers (module doc),
    refused for ``feature`` with an :class:`~asc.errors.UnsupportedArchitectureError` when the model keeps
    another kind of state (a recurrent model's), which cannot be cut at a position."""
    if full:
        from transformers import DynamicCache

        inputs["past_key_values"] = DynamicCache()
    out = model(input_ids=input_ids, use_cache=True, **inputs)
    cache = out.past_key_values
    if full and not all(getattr(layer, "keys", None) is not None for layer in getattr(cache, "layers", None) or [None]):
        raise UnsupportedArchitectureError(
            f"{feature} needs a cache of keys and values per layer, which {architecture(model)} "
            f"({type(model).__name__}) does not keep ({type(cache).__name__}): choose a transformer decoder")
    return out.logits, cache


def continue_from(model: Any, cache: Any, **inputs: Any) -> tuple[Any, Any]:
    """``(logits, cache)`` of a forward pass after ``cache`` (``inputs``: ``input_ids`` or ``inputs_embeds`` of the
    new positions, and ``position_ids``, ``attention_mask`` where needed); the cache returned holds them too."""
    out = model(past_key_values=cache, use_cache=True, **inputs)
    return out.logits, out.past_key_values


def prefix_rows(cache: Any, length: int, rows: int) -> Any:
    """A cache of ``cache``'s first ``length`` positions (of its one row) for ``rows`` rows, as views."""
    from transformers import DynamicCache

    return DynamicCache([(layer.keys[:, :, :length].expand(rows, -1, -1, -1),
                          layer.values[:, :, :length].expand(rows, -1, -1, -1)) for layer in cache.layers])


def padded_rows(cache: Any, lengths: list[int]) -> tuple[Any, Any]:
    """``(batch cache, attention mask)``: row ``r`` holds the first ``lengths[r]`` positions of ``cache`` (one
    row), left-padded with zeros to the longest (copies); the mask is 0 on the padding."""
    import torch
    from transformers import DynamicCache

    width = max(lengths)

    def rows(kv: Any) -> Any:
        return torch.cat([torch.cat([kv.new_zeros((*kv.shape[:2], width - c, kv.shape[3])), kv[:, :, :c]], 2)
                          for c in lengths])

    data = [(rows(layer.keys), rows(layer.values)) for layer in cache.layers]
    device = cache.layers[0].keys.device
    mask = torch.tensor([[0] * (width - c) + [1] * c for c in lengths], dtype=torch.long, device=device)
    return DynamicCache(data), mask


def repeated_rows(cache: Any, rows: int) -> Any:
    """A deep copy of ``cache`` (one row) with that row repeated ``rows`` times (``cache`` is left as it is)."""
    past = copy.deepcopy(cache)
    if rows > 1:
        past.batch_repeat_interleave(rows)
    return past


def keep_rows(cache: Any, index: Any) -> None:
    """Keep only the rows ``index`` (a long tensor on the cache's device) of a batch cache, in place."""
    cache.batch_select_indices(index)
