"""Logit lens: each layer's next-token prediction, from the model's own final norm and unembedding.

For a causal LM with ``L`` blocks, ``hidden_states`` has ``L + 1`` entries: the embeddings (layer 0) and the
output of each block. Layer ``l``'s distribution over the next token is ``softmax(head(norm(h_l)))`` with the
model's final norm and its output embeddings (tied or not), then what the model's forward does to its logits
(Gemma's soft-cap, Cohere's and Granite's logit scales: :meth:`asc.arch.ModelInsides.finish_logits`). Layer ``L``'s
state is already normalised in transformers 5 (it *is* ``last_hidden_state``), so the norm is applied to layers
``0 .. L-1`` only, and the last layer reproduces the model's output probabilities (tested to 1e-5 on SmolLM2, Gemma 3
and every family of the architecture matrix, ``docs/bench/arch_matrix.md``). Gemma's ``(1 + w)`` RMSNorm needs
nothing special: the model's own norm module is called. The parts are found by :mod:`asc.arch` (OPT's final norm
includes its ``project_out``).

Cost: one forward pass of the base model with hidden states (no LM head), then per layer one unembedding of the
scored positions, in row chunks under the device's logit budget (:func:`asc.device.logit_budget`), each chunk
reduced at once to the statistics :mod:`asc.scores` keeps (probability of the actual token, its rank, the entropy,
the top-k): full per-layer logits are never stored (512 tokens x 30 layers x 49k vocabulary would be 3 GB).

Precision: the layers before the last are unembedded in **bfloat16** (inputs rounded to bfloat16, products
accumulated in float32) when the head is float32 and the device multiplies bfloat16 natively
(:func:`asc.device.fast_bfloat16`: CUDA, and CPUs with AVX-512 BF16 or AMX, as this machine's): there that
multiplication is about 4x faster, and it is most of the lens's cost (31 unembeddings of a 49k vocabulary for
SmolLM2 against one in a forward pass). The probabilities of those layers then differ from the exact ones by
a few hundredths at most (SmolLM2 on a 682-token file: 0.06 for the worst token, 0.0005 on average; its category
values moved by 0.013 at most and no crossing of 0.6 moved); ``exact=True`` keeps
float32. The last layer is always computed exactly (it must equal the output). Half-precision models unembed in
their own dtype either way.

Long inputs use the same overlapping windows as :func:`asc.scores.score_texts`, so every layer sees the same
context as the output. Departure from ecco / tuned-lens: we keep statistics of the actual next token for syntax
aggregation, not the decoded top token only; the tuned lens (trained affine maps) is not implemented.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from asc.arch import ModelInsides, hidden_states, model_insides, predicted
from asc.device import fast_bfloat16, logit_budget, model_device
from asc.errors import InputError
from asc.models import ModelBundle
from asc.scores import (
    TOP_K,
    TokenScores,
    encode,
    micro_batches,
    model_vocab,
    token_stats,
    vocab_text,
    window_rows,
    window_size,
)

__all__ = ["LayerScores", "LensParts", "lens_ids", "lens_parts", "lens_scores"]

_FEATURE = "the logit lens"


#: What the lens applies to a hidden state: the adapter's parts (the final ``norm``, the unembedding ``head`` and
#: :meth:`~asc.arch.ModelInsides.finish_logits`), found by :func:`asc.arch.model_insides`.
LensParts = ModelInsides


@dataclass(frozen=True)
class LayerScores:
    """Next-token statistics of one sequence at every layer; arrays have shape ``(L + 1, T)`` (layer 0 = the
    embeddings, layer ``L`` = the output) unless noted, NaN/0 where a token has no prediction.

    ``top_ids``/``top_probs``: ``(L + 1, T, K)``. ``output`` is the last layer as :class:`~asc.scores.TokenScores`
    (equal to :func:`~asc.scores.score_text` of the same source)."""

    output: TokenScores
    prob: np.ndarray  # float64
    logprob: np.ndarray  # float64
    entropy: np.ndarray  # float64, nats
    rank: np.ndarray  # int64, 1-based; 0 = no prediction
    top_ids: np.ndarray  # int64
    top_probs: np.ndarray  # float64

    @property
    def n_layers(self) -> int:
        """Rows: the blocks plus the embeddings."""
        return int(self.prob.shape[0])


def lens_parts(bundle: ModelBundle) -> LensParts:
    """The parts of ``bundle`` the lens applies, as :func:`asc.arch.model_insides` finds them; an
    :class:`~asc.errors.UnsupportedArchitectureError` naming the supported names when one is missing."""
    if not bundle.causal:
        raise InputError(f"{bundle.name} is an encoder: the logit lens needs a causal language model")
    return model_insides(bundle, _FEATURE)


_FAST_HEADS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _fast_head(parts: LensParts) -> Any:
    """A bfloat16 copy of a float32 head without bias (made once per head), or None where it does not apply."""
    head = parts.head
    weight = getattr(head, "weight", None)
    if weight is None or getattr(head, "bias", None) is not None or str(weight.dtype) != "torch.float32":
        return None
    found = _FAST_HEADS.get(head)
    if found is None:
        import torch

        found = weight.detach().to(torch.bfloat16)
        _FAST_HEADS[head] = found
    return found


def _layer_stats(parts: LensParts, hidden: Any, targets: Any, normalize: bool, k: int, budget: int,
                 fast: bool = False) -> list:
    """Statistics of one layer's ``(n, D)`` states predicting ``targets``: row chunks unembedded and reduced.
    ``fast``: the unembedding multiplies in bfloat16 (accumulating in float32) when the head is float32."""
    import torch

    vocab = parts.head.weight.shape[0]
    rows = max(1, budget // max(1, 4 * vocab * 4))  # logits in the model dtype + the fp32 copy and temporaries
    weight = _fast_head(parts) if fast else None
    parts_out = []
    for i in range(0, hidden.shape[0], rows):
        h = parts.norm(hidden[i : i + rows]) if normalize else hidden[i : i + rows]
        if weight is not None:
            logits = torch.nn.functional.linear(h.to(torch.bfloat16), weight)
        else:
            logits = parts.head(h)
        logits = parts.finish_logits(logits)
        parts_out.append(token_stats(logits, targets[i : i + rows], k, budget))
    return [np.concatenate([p[j] for p in parts_out]) for j in range(5)]


def lens_scores(bundle: ModelBundle, source: str, *, max_window: int | None = None, exact: bool = False,
                on_layer: Callable[[int, int], None] | None = None) -> LayerScores:
    """The logit lens of every layer over ``source`` (tokenized as :func:`asc.scores.encode` does). The last layer
    is always exact; the others are unembedded in bfloat16 unless ``exact`` (module doc: precision)."""
    return lens_ids(bundle, source, *encode(bundle, source), max_window=max_window, exact=exact, on_layer=on_layer)


def lens_ids(bundle: ModelBundle, source: str, ids: Sequence[int] | np.ndarray, start: Sequence[int] | np.ndarray,
             end: Sequence[int] | np.ndarray, special: Sequence[bool] | np.ndarray | None = None, *,
             max_window: int | None = None, exact: bool = False,
             on_layer: Callable[[int, int], None] | None = None) -> LayerScores:
    """The logit lens of every layer over an exact id sequence (e.g. a completion's generated tokens, which
    re-tokenizing the text may split otherwise) whose character offsets into ``source`` are known, as
    :func:`asc.scores.score_ids` scores the output; ``special`` defaults to the tokenizer's special ids."""
    import torch

    parts = lens_parts(bundle)
    ids = np.asarray(ids, dtype=np.int64)
    start, end = np.asarray(start, dtype=np.int64), np.asarray(end, dtype=np.int64)
    if special is None:
        special = np.isin(ids, np.asarray(bundle.tokenizer.all_special_ids, dtype=np.int64))
    special = np.asarray(special, dtype=bool)
    if not len(ids) == len(start) == len(end) == len(special):
        raise InputError(f"ids, start, end and special must have one entry per token (got {len(ids)}, "
                         f"{len(start)}, {len(end)}, {len(special)})")
    n, k = len(ids), min(TOP_K, len(bundle.tokenizer))
    n_rows = parts.n_layers + 1
    logprob = np.full((n_rows, n), np.nan)
    entropy = np.full((n_rows, n), np.nan)
    rank = np.zeros((n_rows, n), dtype=np.int64)
    top_ids = np.full((n_rows, n, k), -1, dtype=np.int64)
    top_probs = np.full((n_rows, n, k), np.nan)
    rows, plans = window_rows([ids], window_size(bundle, max_window))
    budget = logit_budget(model_device(bundle.model))
    where = [(plan[1], plan[2]) for plan in (plans[0] if plans else [])]  # (first scored, end) per window
    fast = not exact and fast_bfloat16(model_device(bundle.model))
    with bundle.lock, torch.inference_mode():
        for chunk, input_ids, mask in micro_batches(bundle, rows):
            states = hidden_states(bundle.model, input_ids, mask, use_cache=False)
            if len(states) != n_rows:
                raise InputError(f"{bundle.name} returned {len(states)} hidden states for {parts.n_layers} layers; "
                                 "the logit lens needs one hidden state per layer plus the embeddings")
            for j, r in enumerate(chunk):
                seq, first = rows[r]
                if len(seq) <= first:
                    continue
                lo, hi = where[r]
                targets = input_ids[j, first : len(seq)]
                for layer in range(n_rows):
                    h = states[layer][j, first - 1 : len(seq) - 1]
                    inner = layer < n_rows - 1
                    lp, ent, rk, ti, tp = _layer_stats(parts, h, targets, inner, k, budget, fast=inner and fast)
                    logprob[layer, lo:hi], entropy[layer, lo:hi], rank[layer, lo:hi] = lp, ent, rk
                    top_ids[layer, lo:hi], top_probs[layer, lo:hi] = ti, tp
                    if on_layer:
                        on_layer(layer + 1, n_rows)
    no_pred = ~predicted(special)
    logprob[:, no_pred], entropy[:, no_pred], rank[:, no_pred] = np.nan, np.nan, 0
    top_ids[:, no_pred], top_probs[:, no_pred] = -1, np.nan
    texts = vocab_text(bundle.tokenizer, model_vocab(bundle))
    last = n_rows - 1
    output = TokenScores(source=source, ids=ids, start=start, end=end, special=special, prob=np.exp(logprob[last]),
                         logprob=logprob[last].copy(), entropy=entropy[last].copy(), rank=rank[last].copy(),
                         top_ids=top_ids[last].copy(), top_probs=top_probs[last].copy(),
                         top_text=tuple(tuple(texts[t] for t in r if t >= 0) for r in top_ids[last].tolist()),
                         n_windows=max(1, len(rows)))
    return LayerScores(output, np.exp(logprob), logprob, entropy, rank, top_ids, top_probs)
