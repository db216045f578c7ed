"""Branches: counterfactual completions that force another token at one position of a trunk, from its KV cache.

A **trunk** is a :class:`~asc.generate.Completion` (or a text taken as it is). :func:`branch` keeps its ids
before token ``at``, forces the model's K-th choice there (``choose``) or the ids of a typed text (``token``),
and continues like :func:`asc.generate.complete`: greedy, or sampled with the same seeding (temperature, top-p,
one multinomial draw per step); it stops at an end-of-sequence token, at the function's end (forced tokens are
always kept) or after ``max_new_tokens`` counted from the fork, forced ones included (so ``choose=1`` at a
greedy trunk's first generated token, same settings, reproduces it token for token).

The prompt is never re-read: :func:`prefix_cache` runs one forward pass over the trunk and keeps the model's
KV cache (:func:`asc.kvcache.run_prefix`: full-attention layers, also for sliding-window models, so any prefix
can be cut from it). A branch copies those tensors cut at the fork (the trunk's are never written), feeds the
token before the fork to read the model's choices, then the forced ids, then one token per step. The last
:data:`PREFIX_SLOTS` trunk caches are kept per model: a trunk's first branch pays one pass over it, later ones
(anywhere in it) their new tokens only.

:func:`explore_forks` branches at the N most uncertain fork points, each with the best choice other than the
trunk's token, **in one batched decode**: each row's cache is the trunk's cut at its fork, left-padded with
zeros to the longest and masked, with explicit position ids, so rows of different prefix lengths step together;
finished rows leave the batch. Greedy rows equal branching one at a time (up to float rounding); sampled rows
share one seeded generator, so they differ from a branch made alone. A :class:`Branch`'s ``completion`` has
exact ids and spans for ``explain_completion``; its prompt is the trunk's when the fork is in the generated
part, else the text before the fork. :func:`asc.branching.treediff.ast_diff` compares two
branches' trees node by node.
"""

from __future__ import annotations

import math
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from asc.arch import keep_logits, vocab_size
from asc.branching.forks import ForkPoints, most_uncertain
from asc.device import model_device
from asc.display import show
from asc.errors import InputError
from asc.explain import Explanation, check_source
from asc.generate import Completion, Decoding, function_end
from asc.kvcache import continue_from, keep_rows, padded_rows, run_prefix
from asc.models import ModelBundle
from asc.scores import encode

__all__ = ["MAX_EXPLORE", "PREFIX_SLOTS", "Branch", "PrefixCache", "branch", "check_choice", "check_text",
           "explore_forks", "mean_value", "prefix_cache"]

MAX_EXPLORE = 8  # most branches explore_forks makes in one call
PREFIX_SLOTS = 3  # trunk caches kept per model
_MEMO: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class PrefixCache:
    """The model's state after ``ids`` (T,): ``past`` (its KV cache, :mod:`asc.kvcache`, never modified) and
    ``logits`` (V,), float32 next-token logits after the last id."""

    ids: np.ndarray
    past: Any = field(repr=False)
    logits: np.ndarray = field(repr=False)


@dataclass(frozen=True)
class Branch:
    """One counterfactual continuation (module doc). ``forced_ids`` (M,) were forced at ``fork_index``:
    ``forced_rank`` is their rank under the model there (1 = its first choice; 0 for a typed text of several
    tokens) and ``forced_prob`` their probability (the product over the M tokens). ``replaced_id`` is the
    trunk's token at the fork (-1 when the fork is past the trunk's end)."""

    prompt: str
    fork_index: int
    forced_ids: np.ndarray
    forced_text: str
    forced_rank: int
    forced_prob: float
    replaced_id: int
    completion: Completion
    settings: Decoding

    @property
    def forced_id(self) -> int:
        return int(self.forced_ids[0])

    def to_dict(self) -> dict:
        """The branch point and settings as JSON-ready values (the branch's own tokens: explain its completion)."""
        return {"fork_index": self.fork_index, "forced_ids": self.forced_ids.tolist(), "forced_text": self.forced_text,
                "forced_rank": self.forced_rank, "forced_prob": None if math.isnan(self.forced_prob) else self.forced_prob,
                "replaced_id": self.replaced_id, "stop_reason": self.completion.stop_reason,
                "settings": self.settings.to_dict()}

    def _repr_html_(self) -> str:
        """Inline in a notebook: what was forced where, then the branch's completion."""
        return str(show(self, "html"))


def prefix_cache(bundle: ModelBundle, ids: np.ndarray) -> PrefixCache:
    """One forward pass over ``ids`` (T,): the model's KV cache and its next-token logits (module doc)."""
    import torch

    bundle.require_causal("next-token probabilities to branch with")
    ids = np.asarray(ids, dtype=np.int64).copy()
    if not 1 <= len(ids) <= bundle.context_length:
        raise InputError(f"a prefix of {len(ids)} tokens: give 1 to {bundle.context_length} (the model's context)")
    device = model_device(bundle.model)
    with bundle.lock, torch.inference_mode():
        x = torch.from_numpy(ids)[None].to(device)
        out, past = run_prefix(bundle.model, x, attention_mask=torch.ones_like(x), feature="branching",
                               **keep_logits(bundle.model, 1))
        logits = out[0, -1].float().cpu().numpy()
    return PrefixCache(ids=ids, past=past, logits=logits)


def _memo_cache(bundle: ModelBundle, ids: np.ndarray, need: int) -> PrefixCache:
    """A kept cache whose ids start with ``ids[:need]``, else one over all of ``ids`` (then kept)."""
    with bundle.lock:
        slots = _MEMO.setdefault(bundle, OrderedDict())
        for key, entry in slots.items():
            if len(entry.ids) >= need and np.array_equal(entry.ids[:need], ids[:need]):
                slots.move_to_end(key)
                return entry
        entry = prefix_cache(bundle, ids[: bundle.context_length])
        slots[ids.tobytes()] = entry
        while len(slots) > PREFIX_SLOTS:
            slots.popitem(last=False)
        return entry


def _trunk(bundle: ModelBundle, trunk: Completion | Branch | str, language: str) -> tuple[Completion, str]:
    """The trunk as a Completion, and its prompt."""
    bundle.require_causal("next-token probabilities to branch with")
    if isinstance(trunk, (Branch, Completion)):
        return (trunk.completion, trunk.prompt) if isinstance(trunk, Branch) else (trunk, trunk.prompt)
    text = check_source(trunk, language)
    ids, start, end, special = encode(bundle, text)
    return Completion(prompt=text, text=text, ids=ids, start=start, end=end, special=special, n_prompt=len(ids),
                      stop_reason="max_new_tokens"), text


def check_text(token: str | None) -> None:
    """Refuse an empty typed replacement (what can be refused before a model is loaded)."""
    if token is not None and not token:
        raise InputError("the replacement text is empty: type at least one character")


def check_choice(bundle: ModelBundle, choose: int | None, token: str | None) -> list[int] | None:
    """Refuse a bad choice before any model call; the typed text's ids (None for ``choose``)."""
    if (choose is None) == (token is None):
        raise InputError("give exactly one of choose=K (the model's K-th choice) or token=TEXT (a typed replacement)")
    if choose is not None:
        vocab = vocab_size(bundle.model)
        if not 1 <= choose <= vocab:
            raise InputError(f"choice {choose} is not a rank of the model's {vocab}-token vocabulary: "
                             f"choose from 1 (its first choice) to {vocab}")
        return None
    check_text(token)
    ids = bundle.tokenizer(token, add_special_tokens=False)["input_ids"]
    if set(ids) & set(bundle.tokenizer.all_special_ids):
        raise InputError("the replacement text holds a special token (such as <|endoftext|>): type code only")
    return [int(i) for i in ids]


def _rows_cache(base: PrefixCache, lengths: list[int]) -> tuple[Any, Any]:
    """A batch cache: row r holds the first ``lengths[r]`` positions of ``base``, left-padded with zeros to the
    longest (copies), and the matching attention mask (:func:`asc.kvcache.padded_rows`)."""
    return padded_rows(base.past, lengths)


def _step(model: Any, x: Any, pos: Any, past: Any, mask: Any) -> tuple[Any, Any, Any]:
    import torch

    mask = torch.cat([mask, torch.ones_like(x)], 1)
    logits, past = continue_from(model, past, input_ids=x, attention_mask=mask, position_ids=pos)
    return logits.float(), past, mask


def _select(logits: Any, temperature: float, top_p: float) -> Any:
    """Next ids (B,) from float32 logits (B, V): argmax, or transformers' temperature + top-p + multinomial."""
    import torch

    if temperature <= 0:
        return logits.argmax(-1)
    logits = logits / temperature
    if top_p < 1.0:
        sorted_logits, order = torch.sort(logits, descending=False)
        drop = sorted_logits.softmax(-1).cumsum(-1) <= 1 - top_p
        drop[..., -1:] = False
        logits = logits.masked_fill(drop.scatter(1, order, drop), -math.inf)
    return torch.multinomial(logits.softmax(-1), num_samples=1)[:, 0]


_Pick = Callable[[int, Any], tuple[list[int], int]]  # (row, probs (V,)) -> forced ids, their rank


def _text(tok: Any, ids: list[int]) -> str:
    return tok.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)


def _decode(bundle: ModelBundle, trunk: Completion, prompt: str, base: PrefixCache, ats: list[int], pick: _Pick,
            n_forced: int, settings: Decoding) -> list[Branch]:
    """The batched engine behind :func:`branch` and :func:`explore_forks` (module doc)."""
    import torch

    tok, model, device = bundle.tokenizer, bundle.model, model_device(bundle.model)
    special = set(tok.all_special_ids)
    limits = [min(settings.max_new_tokens, bundle.context_length - a) for a in ats]
    cuts = [int(trunk.end[:a].max(initial=0)) for a in ats]  # the text before each fork
    heads = [min(trunk.n_prompt, a) for a in ats]
    prompts = [prompt if h == trunk.n_prompt else trunk.text[:c] for h, c in zip(heads, cuts, strict=True)]
    shared = [trunk.text[len(p):c] for p, c in zip(prompts, cuts, strict=True)]

    def ended(r: int, ids: list[int]) -> bool:
        return settings.stop_at_function_end and function_end(prompts[r], shared[r] + _text(tok, ids),
                                                              settings.language) is not None

    gens: list[list[int]] = [[] for _ in ats]
    stops = ["max_new_tokens"] * len(ats)
    with bundle.lock, torch.inference_mode(), torch.random.fork_rng():
        torch.manual_seed(settings.seed)
        if len(ats) == 1 and len(base.ids) == ats[0] and np.array_equal(base.ids, trunk.ids[: ats[0]]):
            past, mask = _rows_cache(base, [ats[0]])  # the cache ends at the fork: its logits are the choices
            probs0 = torch.from_numpy(base.logits).to(device)[None].softmax(-1)
        else:  # cut before the fork and feed the token there to read the model's choices
            past, mask = _rows_cache(base, [a - 1 for a in ats])
            x = torch.tensor([[int(trunk.ids[a - 1])] for a in ats], device=device)
            logits, past, mask = _step(model, x, torch.tensor([[a - 1] for a in ats], device=device), past, mask)
            probs0 = logits[:, -1].softmax(-1)
        picked = [pick(r, probs0[r]) for r in range(len(ats))]
        forced = torch.tensor([ids for ids, _ in picked], device=device)
        pos = torch.tensor(ats, device=device)[:, None] + torch.arange(n_forced, device=device)[None]
        logits, past, mask = _step(model, forced, pos, past, mask)
        probs = probs0.gather(1, forced[:, :1])[:, 0]
        if n_forced > 1:
            probs = probs * logits[:, :-1].softmax(-1).gather(2, forced[:, 1:, None])[..., 0].prod(-1)
        forced_probs = probs.cpu().tolist()
        for r, (ids, _) in enumerate(picked):
            if special & set(ids):  # the model's K-th choice may be its end-of-sequence token
                stops[r] = "eos"
            elif ended(r, ids):  # a forced text may end the function by itself
                stops[r] = "function_end"
        active = [r for r in range(len(ats)) if limits[r] > n_forced and stops[r] == "max_new_tokens"]
        nxt = logits[active, -1]
        while active:
            chosen = _select(nxt, settings.temperature, settings.top_p).cpu().tolist()
            keep = []
            for j, r in enumerate(active):
                if chosen[j] in special:
                    stops[r] = "eos"
                    continue
                gens[r].append(chosen[j])
                if ended(r, picked[r][0] + gens[r]):
                    stops[r] = "function_end"
                elif n_forced + len(gens[r]) < limits[r]:
                    keep.append(j)
            if not keep:
                break
            if len(keep) < len(active):  # finished rows leave the batch
                keep_rows(past, torch.tensor(keep, device=device))
                mask = mask[keep]
            active = [active[j] for j in keep]
            x = torch.tensor([[gens[r][-1]] for r in active], device=device)
            pos = torch.tensor([[ats[r] + n_forced + len(gens[r]) - 1] for r in active], device=device)
            logits, past, mask = _step(model, x, pos, past, mask)
            nxt = logits[:, -1]
    return [_finish(bundle, trunk, a, picked[r], gens[r], stops[r], float(forced_probs[r]),
                    (prompts[r], shared[r], cuts[r], heads[r]), settings) for r, a in enumerate(ats)]


def _finish(bundle: ModelBundle, trunk: Completion, at: int, picked: tuple[list[int], int], gen: list[int],
            stop: str, prob: float, row: tuple[str, str, int, int], settings: Decoding) -> Branch:
    """One row's :class:`Branch`: generated tokens after the function's end dropped (the forced ones kept),
    character spans from cumulative decodes as in :func:`asc.generate.complete`."""
    tok, (prompt, shared, cut, head) = bundle.tokenizer, row
    new = picked[0] + gen
    ends = [len(_text(tok, new[: j + 1])) for j in range(len(new))]
    if stop == "function_end" and gen:
        limit = (function_end(prompt, shared + _text(tok, new), settings.language) or 0) - len(shared)
        keep = max(len(picked[0]), sum(1 for j in range(len(new)) if (ends[j - 1] if j else 0) < limit))
        new, ends = new[:keep], ends[:keep]
    comp = Completion(
        prompt=prompt, text=trunk.text[:cut] + _text(tok, new),
        ids=np.concatenate([trunk.ids[:at], np.asarray(new, dtype=np.int64)]),
        start=np.concatenate([trunk.start[:at], cut + np.asarray([0, *ends[:-1]], dtype=np.int64)]),
        end=np.concatenate([trunk.end[:at], cut + np.asarray(ends, dtype=np.int64)]),
        special=np.concatenate([trunk.special[:at], np.isin(np.asarray(new, dtype=np.int64), tok.all_special_ids)]),
        n_prompt=head, stop_reason=stop)
    return Branch(prompt=prompt, fork_index=at, forced_ids=np.asarray(picked[0], dtype=np.int64),
                  forced_text=tok.decode(picked[0], skip_special_tokens=False, clean_up_tokenization_spaces=False),
                  forced_rank=picked[1], forced_prob=prob,
                  replaced_id=int(trunk.ids[at]) if at < len(trunk.ids) else -1, completion=comp, settings=settings)


def branch(bundle: ModelBundle, trunk: Completion | Branch | str, at: int, *, choose: int | None = None,
           token: str | None = None, max_new_tokens: int = 64, temperature: float = 0.0, top_p: float = 1.0,
           seed: int = 0, language: str = "python", stop_at_function_end: bool = True,
           cache: PrefixCache | None = None) -> Branch:
    """Replace the trunk's token ``at`` by the model's ``choose``-th choice or the ids of ``token``, and
    continue (module doc). ``at`` may equal the trunk's length (the branch then extends it). ``cache``: a
    :func:`prefix_cache` over the trunk's first ``at - 1`` tokens or more (default: a kept one, else one
    forward pass over the trunk, kept)."""
    comp, prompt = _trunk(bundle, trunk, language)
    settings = Decoding(max_new_tokens, temperature, top_p, seed, language, stop_at_function_end)
    if not 1 <= at <= len(comp.ids):
        raise InputError(f"at={at} is outside the trunk's {len(comp.ids)} tokens: branch at a token index from 1 "
                         f"to {len(comp.ids)}")
    typed = check_choice(bundle, choose, token)
    n_forced = len(typed or [0])
    if at + n_forced > bundle.context_length:
        raise InputError(f"{n_forced} forced token(s) at {at} pass the model's context of {bundle.context_length} "
                         "tokens: branch earlier or type a shorter text")
    if cache is None:
        cache = _memo_cache(bundle, comp.ids, at - 1)
    elif len(cache.ids) < at - 1 or not np.array_equal(cache.ids[: at - 1], comp.ids[: at - 1]):
        raise InputError("the cache was computed for other tokens: pass prefix_cache(bundle, trunk ids) or no cache")

    def pick(row: int, probs: Any) -> tuple[list[int], int]:
        if typed is not None:
            rank = int((probs > probs[typed[0]]).sum()) + 1 if len(typed) == 1 else 0
            return typed, rank
        return [int(probs.topk(int(choose or 1)).indices[-1])], int(choose or 1)

    return _decode(bundle, comp, prompt, cache, [at], pick, n_forced, settings)[0]


def explore_forks(bundle: ModelBundle, trunk: Completion | Branch | str, forks: ForkPoints, n: int = MAX_EXPLORE,
                  max_new_tokens: int = 64, *, temperature: float = 0.0, top_p: float = 1.0, seed: int = 0,
                  language: str = "python", generated_only: bool = False,
                  stop_at_function_end: bool = True) -> list[Branch]:
    """Branch at the ``n`` (at most :data:`MAX_EXPLORE`) most uncertain fork points of the trunk (the tokens at
    or after the prompt with ``generated_only``), each with the best choice other than the trunk's token, in
    one batched decode (module doc). Most uncertain first; fewer when there are fewer fork points."""
    comp, prompt = _trunk(bundle, trunk, language)
    settings = Decoding(max_new_tokens, temperature, top_p, seed, language, stop_at_function_end)
    if not 1 <= n <= MAX_EXPLORE:
        raise InputError(f"n={n}: explore 1 to {MAX_EXPLORE} fork points at once")
    if forks.n_tokens != len(comp.ids):
        raise InputError(f"the fork points cover {forks.n_tokens} tokens, the trunk has {len(comp.ids)}: "
                         "compute them from this trunk's scores")
    ats = [int(a) for a in most_uncertain(forks, n, first=comp.n_prompt if generated_only else 1)
           if a < bundle.context_length]
    if not ats:
        return []
    base = _memo_cache(bundle, comp.ids, max(ats) - 1)

    def pick(row: int, probs: Any) -> tuple[list[int], int]:
        top = probs.topk(2).indices.tolist()
        rank = 2 if ats[row] < len(comp.ids) and top[0] == int(comp.ids[ats[row]]) else 1
        return [int(top[rank - 1])], rank

    return _decode(bundle, comp, prompt, base, ats, pick, 1, settings)


def mean_value(explanation: Explanation, from_token: int = 0) -> float:
    """Mean AsC-Eval node value over the nodes bound to a token at index ``from_token`` or later (a branch's
    summary: pass its ``fork_index``); NaN when none has a value."""
    al = explanation.alignment
    vals = explanation.values[(al.counts() > 0) & (al.last_token() >= from_token)]  # each node's tokens are sorted
    return float(np.nanmean(vals)) if (~np.isnan(vals)).any() else math.nan
