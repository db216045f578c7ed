"""Syntax-aware occlusion: remove one AST node at a time from a target's prompt and read the change in the target.

For each node with tokens in the prompt (:func:`asc.why.targets.Target`: the tokens before the target), the
**variant** replaces those tokens and runs the model again; the node's attribution is ``value - variant value``
(positive: the node raised the target). Each category's is the same with every prompt token bound to one of its
nodes replaced at once, and its share that value's absolute size over the categories' absolute sum.

How a node is removed:

- by a **valid corruption** (a text edit that keeps the code parsing, :mod:`asc.why.corrupt`) where
  ``corruptions(tree, node)`` gives one (:func:`asc.why.attribute.attribute` passes
  :func:`asc.why.corrupt.node_corruptions`: a fresh name at one identifier, another operator or literal, a
  statement as ``pass``, a compound expression as ``None``, a docstring or comment removed); the corrupted text is tokenized again, runs from the first token where it differs
  from the snippet (the KV cache before it is the clean run's), and the target is read at the target token's
  shifted position (a corruption that changes the target's own token falls back to the baseline);
- else by the **baseline embedding** (``"zero"`` or ``"pad"``, as :func:`asc.why.attribute.attribute`) at the
  node's token positions: the same length, so a variant runs only from the node's first token on, reusing the
  clean run's KV cache of the text before it.

Variants with the same token set (a leaf and a parent with the same tokens, nested expressions) run once.
Baseline variants are sorted by their first token and batched (rows x new tokens under a budget): a batch runs from
its first row's first token, so rows pay for at most a few tokens more than their own. Corrupted texts are batched
the same way (rows right-padded after their own target, their logits read at their own target's positions, under a
budget of logits): a forward pass over a few tokens costs about the reading of every weight, so one at a time they
took about half of an occlusion on SmolLM2 (measured: known-answer snippets 20-30% faster batched, the same values
to 1e-6). Each variant costs its new tokens' forward pass plus attention to the cached prefix: on average about half a full pass for nodes spread over
the prompt (``benchmarks/bench_why.py`` measures it).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from asc.arch import input_embeddings, keep_logits, vocab_size
from asc.device import model_device
from asc.explain import Explanation
from asc.kvcache import continue_from, prefix_rows, run_prefix
from asc.models import ModelBundle
from asc.scores import encode
from asc.syntax import SyntaxTree
from asc.why.targets import Target, baseline_embeddings, embed, prompt_mask, read_target

__all__ = ["Occlusion", "occlude"]

_OCCLUSION_TOKENS = 2048  # new tokens per batched variant pass (rows x tokens from the batch's first token)
_LOGIT_FLOATS = 1 << 25  # logits per batch of corrupted texts (128 MB of float32: 682 tokens of SmolLM2's vocabulary)


@dataclass(frozen=True)
class Occlusion:
    """``node_attr`` (N,): value - the target with the node removed (NaN: no token in the prompt);
    ``category_attr``/``category_share`` per category; ``value`` the clean target; ``variants`` the distinct
    variants run; ``corrupted`` (N,) bool: the node was removed by a valid corruption, not the baseline."""

    value: float
    node_attr: np.ndarray
    category_attr: dict[str, float]
    category_share: dict[str, float]
    variants: int
    corrupted: np.ndarray


def _forward(bundle: ModelBundle, past: Any, start: int, embeds: Any, extra: dict[str, Any]) -> Any:
    """Logits of rows of input embeddings ``embeds`` (B, n, H) at positions ``start...start + n - 1``, after the
    clean cache's first ``start`` positions (views of its cache)."""
    import torch

    rows, n = embeds.shape[:2]
    pos = torch.arange(start, start + n, device=embeds.device)[None].expand(rows, -1)
    if start:
        return continue_from(bundle.model, prefix_rows(past, start, rows), inputs_embeds=embeds, position_ids=pos,
                             **extra)[0]
    return bundle.model(inputs_embeds=embeds, position_ids=pos, use_cache=False, **extra).logits


def _run(bundle: ModelBundle, target: Target, past: Any, start: int, embeds: Any) -> np.ndarray:
    """Target values (B,) of rows of input embeddings ``embeds`` (B, L - start, H) after the clean cache's first
    ``start`` positions."""
    logits = _forward(bundle, past, start, embeds, keep_logits(bundle.model, target.n_logits))
    return read_target(logits, target).double().cpu().numpy()


def _corrupted_row(bundle: ModelBundle, ids: np.ndarray, target: Target, first_char: int,
                   corruption: Any) -> tuple[np.ndarray, int, Target] | None:
    """``(ids, start, target)`` of a corrupted text (``corruption.corrupted``, ``corruption.edits`` with
    ``start``/``end``/``old``/``new`` in the original's characters): its token ids, the first position where they
    differ from the snippet's (before it, the clean run's cache serves) and the target moved to its shifted
    position; None when the target's own tokens change (the caller falls back to the baseline). ``first_char``:
    where the target token starts."""
    text = corruption.corrupted
    c_ids, c_start, _, _ = encode(bundle, text)
    if any(e.end > first_char for e in corruption.edits):
        return None
    shift = sum(len(e.new) - len(e.old) for e in corruption.edits)
    at = np.flatnonzero(c_start == first_char + shift)
    if not len(at):
        return None
    new_index = int(at[0])
    moved = tuple(p - target.index + new_index for p in target.positions)
    if moved[-1] >= len(c_ids) or tuple(int(c_ids[p]) for p in moved) != target.ids:
        return None
    moved_target = Target(positions=moved, ids=target.ids, text=target.text, logprob=target.logprob,
                          contrast=target.contrast, contrast_id=target.contrast_id)
    same = np.flatnonzero(c_ids[: min(len(c_ids), len(ids))] != ids[: min(len(c_ids), len(ids))])
    start = min(int(same[0]) if len(same) else min(len(c_ids), len(ids)), new_index - 1, target.index - 1)
    return c_ids, max(start, 0), moved_target


def _corrupted_values(bundle: ModelBundle, past: Any, rows: list[tuple[np.ndarray, int, Target]]) -> np.ndarray:
    """The target values (R,) of corrupted texts (:func:`_corrupted_row`), in batches: sorted by their first new
    position, a batch runs from its first row's (the clean tokens before a row's own start are the snippet's, whose
    cache the rows' batch recomputes), each row right-padded to the longest (causal attention: the padding after a
    row's target never reaches it), its logits read at its own target's positions. A forward pass over a few
    tokens costs about the reading of every weight, so a batch of variants costs little more than one."""
    import torch

    values = np.full(len(rows), np.nan)
    order = sorted(range(len(rows)), key=lambda r: rows[r][1])
    budget = max(1, _LOGIT_FLOATS // max(1, vocab_size(bundle.model)))  # rows x tokens of logits per batch
    device = model_device(bundle.model)
    i = 0
    while i < len(order):
        start = rows[order[i]][1]
        j = i + 1
        while j < len(order) and (j - i + 1) * (max(rows[r][2].last for r in order[i:j + 1]) - start) <= budget:
            j += 1
        batch = order[i:j]
        width = max(rows[r][2].last for r in batch) - start
        tokens = np.zeros((len(batch), width), dtype=np.int64)
        for k, r in enumerate(batch):
            c_ids, _, moved = rows[r]
            tokens[k, : moved.last - start] = c_ids[start: moved.last]
        embeds = input_embeddings(bundle, "occlusion")(torch.from_numpy(tokens).to(device))  # scaled as the model does
        logits = _forward(bundle, past, start, embeds, {})
        for k, r in enumerate(batch):
            moved = rows[r][2]
            end = moved.last - start
            values[r] = float(read_target(logits[k: k + 1, end - moved.n_logits: end], moved)[0])
        i = j
    return values


def occlude(bundle: ModelBundle, explanation: Explanation, target: Target, baseline: str = "pad",
            corruptions: Callable[[SyntaxTree, int], Any | None] | None = None,
            on_progress: Callable[[str, int, int], None] | None = None) -> Occlusion:
    """Occlude every node with tokens in ``target``'s prompt, one at a time, and every category (module doc).
    ``corruptions``: the hook giving a node's valid corruption (or None); without it, every node is removed by the
    baseline embedding. ``on_progress(stage, done, total)`` after each batch of baseline variants."""
    import torch

    ex, tree, al = explanation, explanation.tree, explanation.alignment
    ids = ex.scores.ids
    prompt = prompt_mask(ex, target)
    n_len = target.last
    keys: dict[bytes, int] = {}
    sets: list[np.ndarray] = []

    def variant(tokens: np.ndarray) -> int:
        tokens = tokens[(tokens < n_len)]
        tokens = np.unique(tokens[prompt[tokens]]) if len(tokens) else tokens
        if not len(tokens):
            return -1
        key = tokens.tobytes()
        if key not in keys:
            keys[key] = len(sets)
            sets.append(tokens)
        return keys[key]

    node_var = np.array([variant(al.tokens_of(i)) for i in range(tree.n_nodes)], dtype=np.int64)
    cat_var = {}
    for cat in ex.categories:
        nodes = np.array([c == cat for c in ex.node_category], dtype=bool)
        cat_var[cat] = variant(np.flatnonzero(al.covered_tokens(nodes, len(ids)))) if nodes.any() else -1
    corrupted = np.zeros(tree.n_nodes, dtype=bool)
    values = np.full(len(sets), np.nan)
    device = model_device(bundle.model)
    with bundle.lock, torch.no_grad():
        x = torch.from_numpy(ids[:n_len])[None].to(device)
        logits, past = run_prefix(bundle.model, x, feature="occlusion", **keep_logits(bundle.model, target.n_logits))
        value = float(read_target(logits, target)[0])
        node_value = np.full(tree.n_nodes, np.nan)
        if corruptions is not None:  # the hook (module doc): valid corruptions first, the baseline for the rest
            first_char = int(ex.scores.start[target.index])
            found: dict[int, tuple[np.ndarray, int, Target]] = {}
            for node in range(tree.n_nodes):
                corruption = corruptions(tree, node) if node_var[node] >= 0 else None
                row = None if corruption is None else _corrupted_row(bundle, ids, target, first_char, corruption)
                if row is not None:
                    found[node] = row
            if found:
                hit = np.fromiter(found, dtype=np.int64)
                node_value[hit] = _corrupted_values(bundle, past, list(found.values()))
                corrupted[hit] = True
        emb = embed(bundle, ids[:n_len])
        base = baseline_embeddings(bundle, emb, baseline)
        needed = np.zeros(len(sets), dtype=bool)
        needed[node_var[(node_var >= 0) & ~corrupted]] = True
        needed[[v for v in cat_var.values() if v >= 0]] = True
        order = sorted(np.flatnonzero(needed).tolist(), key=lambda v: int(sets[v][0]))
        i = 0
        while i < len(order):
            start = max(0, int(sets[order[i]][0]))
            rows = max(1, _OCCLUSION_TOKENS // max(1, n_len - start))
            batch = order[i: i + rows]
            embeds = emb[:, start:].expand(len(batch), -1, -1).clone()
            for r, v in enumerate(batch):
                at = torch.from_numpy(sets[v]).to(device)
                embeds[r, at - start] = base[0, at]
            values[batch] = _run(bundle, target, past, start, embeds)
            i += rows
            if on_progress is not None:
                on_progress("occlusion, variants with a node removed", min(i, len(order)), len(order))
    node_value = np.where(corrupted, node_value, np.where(node_var >= 0, values[np.maximum(node_var, 0)], np.nan))
    cats = {c: value - float(values[v]) if v >= 0 else math.nan for c, v in cat_var.items()}
    total = sum(abs(v) for v in cats.values() if not math.isnan(v))
    shares = {c: abs(v) / total if total > 0 and not math.isnan(v) else math.nan for c, v in cats.items()}
    return Occlusion(value=value, node_attr=value - node_value, category_attr=cats, category_share=shares,
                     variants=int(needed.sum() + corrupted.sum()), corrupted=corrupted)
