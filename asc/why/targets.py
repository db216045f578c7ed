"""What an attribution explains, a :class:`Target` (one number the model computes from the prompt), and the inputs
it is read from: the prompt's embeddings, their baselines and the forward pass that keeps only the logits needed.

Three kinds, all read from the next-token log-probabilities of the snippet's own tokens:

- a **token**: ``log p(token_i | tokens_<i)``;
- a **node**: the mean of that log-probability over the node's predicted tokens (those with a prediction, as
  AsC-Eval scores them; the first token and special tokens have none);
- a **contrast**: ``log p(actual) - log p(alternative)`` for one token, the alternative being another vocabulary
  entry: one of the token's top-k (its text as the explanation lists it), any text that is one token, or a
  token id (such as a branch's forced token).

The **prompt** of a target is every token before its first predicted token: only those get attributions. A node
target's own tokens (between its first and last predicted token) are read by the model but held fixed.
:func:`read_target` computes the value from the logits of a forward pass over ``ids[:target.last]`` (the last
``target.last - target.index + 1`` positions of logits, all a model needs to keep). Constructors
(:func:`token_target`, :func:`node_target`, :func:`target_at`) check everything against an
:class:`~asc.explain.Explanation` of the snippet and raise :class:`~asc.errors.InputError` naming the fix.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from asc.arch import input_embeddings, keep_logits, log_probs
from asc.device import model_device
from asc.errors import InputError
from asc.explain import Explanation
from asc.models import ModelBundle
from asc.scores import model_vocab, vocab_text

__all__ = ["BASELINES", "Target", "baseline_embeddings", "embed", "line_col_offset", "node_target", "prompt_mask",
           "read_target", "target_at", "target_forward", "token_at", "token_target"]

BASELINES = ("pad", "zero")
_FEATURE = "attribution"


@dataclass(frozen=True)
class Target:
    """One token's (or one node's) log-probability, or a contrast, in a snippet's tokenization (module doc).

    ``positions`` are the predicted token indices (one for a token target; a node's predicted tokens, sorted);
    ``ids`` the token ids there. ``index`` is the first of them (the prompt is ``tokens[:index]``), ``last`` the
    last (the forward pass reads ``tokens[:last]``). ``logprob`` is the clean log-probability (mean over a node's
    tokens) as AsC-Eval scored it; ``contrast``/``contrast_id`` the alternative (None: no contrast), and
    ``contrast_logprob`` its clean log-probability. ``node`` is the node's id for a node target."""

    positions: tuple[int, ...]
    ids: tuple[int, ...]
    text: str
    logprob: float
    contrast: str | None = None
    contrast_id: int | None = None
    contrast_logprob: float = math.nan
    node: int | None = None

    @property
    def index(self) -> int:
        return self.positions[0]

    @property
    def last(self) -> int:
        return self.positions[-1]

    @property
    def n_logits(self) -> int:
        """Rows of logits :func:`read_target` needs: the last ``last - index + 1`` positions of the input."""
        return self.last - self.index + 1

    @property
    def value(self) -> float:
        """The target's clean value: ``logprob``, minus ``contrast_logprob`` for a contrast."""
        return self.logprob - self.contrast_logprob if self.contrast_id is not None else self.logprob

    def describe(self) -> str:
        """One line for tables: what is explained."""
        what = f"node {self.node} {self.text!r}" if self.node is not None else f"token {self.index} {self.text!r}"
        return what + (f" against {self.contrast!r}" if self.contrast_id is not None else "")


def read_target(logits: Any, target: Target) -> Any:
    """The target's value (a float32 tensor (B,)) from logits (B, K, V) of the input's last K >= ``n_logits``
    positions (a forward pass over ``ids[:target.last]``): differentiable, any dtype (log-softmax in float32)."""
    import torch

    rows = log_probs(logits[:, logits.shape[1] - target.n_logits:])
    picks = torch.tensor([p - target.index for p in target.positions], device=rows.device)
    ids = torch.tensor(target.ids, device=rows.device)
    value = rows[:, picks, ids].mean(-1)
    if target.contrast_id is not None:
        value = value - rows[:, 0, target.contrast_id]
    return value


def _check_predicted(ex: Explanation, index: int, bundle: ModelBundle) -> None:
    n = ex.scores.n_tokens
    if not 0 <= index < n:
        raise InputError(f"token {index} is outside the snippet's {n} tokens: give an index from 1 to {n - 1}")
    if math.isnan(ex.scores.logprob[index]):
        why = "a special token" if ex.scores.special[index] else "the first token (nothing comes before it)"
        raise InputError(f"token {index} ({ex.scores.text[index]!r}) has no prediction, it is {why}: pick a later "
                         "token")
    if index >= bundle.context_length:
        raise InputError(f"token {index} lies past the model's context of {bundle.context_length} tokens: explain a "
                         "shorter snippet, or a token nearer its start")


def _alternative(bundle: ModelBundle, ex: Explanation, index: int, contrast: str | int) -> tuple[str, int]:
    """The alternative token's (text, id): a top-k text, a one-token text or an id (module doc)."""
    vocab = model_vocab(bundle)
    texts = vocab_text(bundle.tokenizer, vocab)
    top = [(t, int(i)) for t, i in zip(ex.scores.top_text[index], ex.scores.top_ids[index].tolist(), strict=False)]
    if isinstance(contrast, (int, np.integer)) and not isinstance(contrast, bool):
        if not 0 <= int(contrast) < vocab:
            raise InputError(f"contrast id {contrast} is not in the model's {vocab}-token vocabulary: give an id "
                             f"from 0 to {vocab - 1}")
        alt = int(contrast)
    elif isinstance(contrast, str) and contrast:
        hit = [i for t, i in top if t == contrast]
        ids = hit[:1] or bundle.tokenizer(contrast, add_special_tokens=False)["input_ids"]
        if len(ids) != 1:
            shown = ", ".join(repr(t) for t, _ in top[:5])
            raise InputError(f"the contrast {contrast!r} is {len(ids)} tokens for this model; give one token, such as "
                             f"one of the model's top choices here: {shown}")
        alt = int(ids[0])
    else:
        raise InputError("the contrast is empty: give a token text (such as one of the top choices) or a token id")
    if alt == int(ex.scores.ids[index]):
        raise InputError(f"the contrast {texts[alt]!r} is the token itself: give another token to contrast it with")
    return texts[alt], alt


def token_target(bundle: ModelBundle, explanation: Explanation, index: int,
                 contrast: str | int | None = None) -> Target:
    """Token ``index``'s log-probability, or with ``contrast`` its log-probability minus the alternative's
    (module doc). The alternative's clean log-probability is read from the explanation's top-k when it is there,
    else left NaN (the attribution computes both values anyway)."""
    ex = explanation
    _check_predicted(ex, int(index), bundle)
    index = int(index)
    text = ex.scores.text[index]
    base = Target(positions=(index,), ids=(int(ex.scores.ids[index]),), text=text,
                  logprob=float(ex.scores.logprob[index]))
    if contrast is None:
        return base
    alt_text, alt = _alternative(bundle, ex, index, contrast)
    top = ex.scores.top_ids[index].tolist()
    alt_lp = float(np.log(ex.scores.top_probs[index][top.index(alt)])) if alt in top else math.nan
    return Target(positions=base.positions, ids=base.ids, text=text, logprob=base.logprob, contrast=alt_text,
                  contrast_id=alt, contrast_logprob=alt_lp)


def node_target(bundle: ModelBundle, explanation: Explanation, node: int) -> Target:
    """Node ``node``'s mean log-probability over its predicted tokens (module doc)."""
    ex = explanation
    if not 0 <= node < ex.tree.n_nodes:
        raise InputError(f"node {node} is not in the snippet's tree of {ex.tree.n_nodes} nodes: give an id from 0 to "
                         f"{ex.tree.n_nodes - 1}")
    tokens = ex.alignment.tokens_of(node)
    predicted = [int(t) for t in tokens if not math.isnan(ex.scores.logprob[t])]
    if not predicted:
        raise InputError(f"node {node} ({ex.tree.type[node]} {ex.tree.text(node, 30)!r}) has no predicted token: "
                         "pick a node after the snippet's first token")
    _check_predicted(ex, predicted[-1], bundle)
    return Target(positions=tuple(predicted), ids=tuple(int(ex.scores.ids[t]) for t in predicted),
                  text=ex.tree.text(node), logprob=float(np.mean(ex.scores.logprob[predicted])), node=node)


def line_col_offset(source: str, line: int, col: int) -> int:
    """The character offset of LINE:COL (both from 1, the column in characters), or an InputError
    (:func:`asc.positions.offset_at`)."""
    from asc.positions import offset_at

    return offset_at(source, line, col)


def token_at(texts: Sequence[str], start: np.ndarray, end: np.ndarray, special: np.ndarray, offset: int) -> int | None:
    """The token at character ``offset`` (the rule of ``--at LINE:COL`` for ``attribute`` and ``intervene``): the
    token that starts there, or the first one starting after it. A token's start is its first visible character
    (``" return"`` starts at its ``r``); a whitespace-only token starts where it starts. None: no such token."""
    visible = np.array([st + (len(t) - len(t.lstrip()) if t.strip() else 0)
                        for st, t in zip(np.asarray(start).tolist(), texts, strict=True)], dtype=np.int64)
    picks = np.flatnonzero(~np.asarray(special, dtype=bool) & (np.asarray(end) > np.asarray(start)) & (visible >= offset))
    return int(picks[0]) if len(picks) else None


def target_at(bundle: ModelBundle, explanation: Explanation, line: int, col: int,
              contrast: str | int | None = None) -> Target:
    """The target token at LINE:COL (:func:`token_at`)."""
    ex = explanation
    s = ex.scores
    index = token_at(s.text, s.start, s.end, s.special, line_col_offset(ex.source, line, col))
    if index is None:
        raise InputError(f"no token starts at or after {line}:{col}: give a position before the snippet's end")
    return token_target(bundle, ex, index, contrast)


def embed(bundle: ModelBundle, ids: np.ndarray) -> Any:
    """The input embeddings (1, L, H) of ``ids`` as the model computes them (scaled ones included, as Gemma's)."""
    import torch

    with torch.no_grad():
        return input_embeddings(bundle, _FEATURE)(torch.from_numpy(ids)[None].to(model_device(bundle.model)))


def baseline_embeddings(bundle: ModelBundle, x: Any, baseline: str) -> Any:
    """The baseline (like ``x``, (1, L, H)) at every position: zeros, or the pad (else end-of-sequence) token's
    embedding."""
    import torch

    if baseline == "zero":
        return torch.zeros_like(x)
    if baseline == "pad":
        tok = bundle.tokenizer
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        if pad is None:
            raise InputError(f"{bundle.name}'s tokenizer has no pad or end-of-sequence token: use baseline 'zero'")
        return embed(bundle, np.full(x.shape[1], pad, dtype=np.int64)).to(x.dtype)
    raise InputError(f"baseline {baseline!r} is not one of {', '.join(BASELINES)}")


def target_forward(bundle: ModelBundle, target: Target) -> Any:
    """``f(embeds) -> values``: the target (B,) from input embeddings (B, L, H) of ``ids[:target.last]``, in any
    float dtype (cast to the model's), keeping only the logits the target needs."""
    model = bundle.model
    dtype = input_embeddings(bundle, _FEATURE).weight.dtype
    extra = keep_logits(model, target.n_logits)

    def forward(embeds: Any) -> Any:
        out = model(inputs_embeds=embeds.to(dtype), use_cache=False, **extra)
        return read_target(out.logits, target)

    return forward


def prompt_mask(explanation: Explanation, target: Target) -> np.ndarray:
    """bool (L,) over ``ids[:target.last]``: the prompt tokens that get attributions (before the target, not
    special)."""
    mask = ~explanation.scores.special[: target.last].copy()
    mask[target.index:] = False
    return mask
