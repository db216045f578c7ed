"""The two model operations of the zero-shot glueCode evaluation: rank texts by likelihood, generate an identifier.

:func:`rank_texts` scores candidate texts that differ only somewhere in the middle (a masked operator, a name,
a bucket label after a prompt) by the log-likelihood the causal LM gives them. Every text is tokenized as a whole
(its natural tokenization: a candidate may merge with the space before it), the longest common token prefix of
all candidates is run **once** and its key/value cache reused for every candidate (copied and repeated over a
batch of candidates, which are right-padded: causal attention means padding after a row's end never reaches its
scored positions). The returned log-likelihood of a candidate is the sum over its tokens from the first one where
the candidates differ to the end of the text: the shared prefix adds the same constant to every candidate and is
not computed. Cost per item: the prefix once plus, per candidate, the tokens from the mask to the end of the
scored text (about one forward pass of the text when the mask is near the end; ``prefix_cache=False`` runs every
candidate's whole text instead, the reference the cache is tested against).

:func:`generate_identifiers` continues prompts greedily (batched, left-padded) and keeps the leading identifier
of each continuation: generation stops as soon as every row has written an identifier and then a character that
cannot continue one (or reached ``max_new_tokens``, or EOS). Trailing whitespace of a prompt is left for the
model to write (tokenizers merge a space with the next word, see :mod:`asc.generate`).

Windows: texts longer than the window (the model's context, capped by ``max_window``) are cut from the far end.
For prompts that is the start. For ranked texts the start is cut first; the end of the text is cut too only when
what follows the differing tokens would leave less than half of the window to what precedes them. Leading special
tokens (a BOS) are kept, and so is a *head* the caller names (``head_chars``: the call-graph stubs that open a
``callgraph`` context, which cutting from the start would otherwise remove first, making that level equal to the
file level for any long file): the cut then falls between the head and the rest, and a head longer than half the
window keeps its first half-window of tokens. The number of tokens cut is returned with every result.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from asc.arch import keep_logits, log_probs, vocab_size
from asc.device import logit_budget, model_device
from asc.errors import InputError
from asc.kvcache import continue_from, repeated_rows, run_prefix
from asc.models import ModelBundle

__all__ = ["DEFAULT_BATCH_TOKENS", "DEFAULT_MAX_WINDOW", "Generated", "Ranked", "generate_identifiers",
           "leading_identifier", "rank_texts", "window"]

DEFAULT_MAX_WINDOW = 2048  # tokens; the cap on the model's context for one text
DEFAULT_BATCH_TOKENS = 8192  # rows x (cached prefix + longest row) one forward call may hold
_IDENTIFIER = re.compile(r"[^\W\d]\w*")


@dataclass(frozen=True)
class Ranked:
    """Likelihoods of candidate texts: ``logliks[i]`` for ``texts[i]`` (nats, the candidate-dependent part)."""

    logliks: tuple[float, ...]
    n_tokens: int  # tokens of the longest candidate text, before any cut
    cut_tokens: int  # tokens cut from the far end(s) to fit the window
    forward_tokens: int  # tokens run through the model (the cost)


@dataclass(frozen=True)
class Generated:
    """A greedy continuation: the identifier it starts with (``""`` when it starts with anything else)."""

    identifier: str
    raw: str  # the decoded continuation, up to where generation stopped
    n_tokens: int  # prompt tokens before any cut
    cut_tokens: int  # tokens cut from the prompt's start to fit the window


def window(bundle: ModelBundle, max_window: int = DEFAULT_MAX_WINDOW) -> int:
    """Tokens one text may hold: the model's context capped by ``max_window``."""
    if max_window < 2:
        raise InputError(f"max_window={max_window}: give at least 2 tokens (default {DEFAULT_MAX_WINDOW})")
    return min(bundle.context_length, max_window)


def leading_identifier(text: str) -> str:
    """The Python identifier ``text`` starts with after leading whitespace; ``""`` when it starts otherwise."""
    m = _IDENTIFIER.match(text.lstrip())
    return m.group(0) if m else ""


def _ids(bundle: ModelBundle, text: str, end: int | None = None) -> list[int]:
    """Token ids of ``text`` (with the tokenizer's special tokens); with ``end``, only the tokens that start
    before character ``end`` (the whole text's own tokenization, stopped there)."""
    if end is None:
        return list(bundle.tokenizer(text, add_special_tokens=True, verbose=False)["input_ids"])
    enc = bundle.tokenizer(text, add_special_tokens=True, return_offsets_mapping=True,
                           return_special_tokens_mask=True, verbose=False)
    keep: list[int] = []
    seen_text = False
    for i, (a, _), special in zip(enc["input_ids"], enc["offset_mapping"], enc["special_tokens_mask"]):
        if special:
            if not seen_text:  # leading special tokens (a BOS) stay; trailing ones (an EOS) go
                keep.append(i)
            continue
        if a >= end:
            break
        seen_text = True
        keep.append(i)
    return keep


def _n_lead(bundle: ModelBundle, ids: Sequence[int], text: str = "", head_chars: int = 0) -> int:
    """Tokens at the start of ``ids`` (the tokens of ``text``) that a cut keeps: leading special tokens, and the
    tokens that start within the first ``head_chars`` characters of ``text``."""
    special = set(bundle.tokenizer.all_special_ids)
    n = 0
    while n < len(ids) - 1 and ids[n] in special:
        n += 1
    if head_chars > 0 and text:
        n = max(n, len(_ids(bundle, text, head_chars)))  # the head's tokens, in the whole text's tokenization
    return min(n, len(ids) - 1)


def _common_prefix(seqs: Sequence[Sequence[int]]) -> int:
    first, n = seqs[0], min(len(s) for s in seqs)
    for i in range(n):
        if any(s[i] != first[i] for s in seqs[1:]):
            return i
    return n


def _common_suffix(seqs: Sequence[Sequence[int]], limit: int) -> int:
    first = seqs[0]
    for i in range(limit):
        if any(s[-1 - i] != first[-1 - i] for s in seqs[1:]):
            return i
    return limit


def _logit_rows(bundle: ModelBundle, device: Any) -> int:
    """Sequence positions whose fp32 logits (and their log-softmax) fit the device's logit budget."""
    return max(1, logit_budget(device) // max(1, 2 * 4 * vocab_size(bundle.model)))


def _batches(lengths: Sequence[int], fixed: int, budget: int, rows_cap: int) -> list[list[int]]:
    """Row numbers in batches, longest first, each with ``rows x (fixed + longest) <= budget`` and
    ``rows x longest <= rows_cap`` (at least one row per batch)."""
    order = sorted(range(len(lengths)), key=lambda r: -lengths[r])
    plans, i = [], 0
    while i < len(order):
        longest = max(1, lengths[order[i]])
        take = max(1, min(len(order) - i, budget // (fixed + longest), rows_cap // longest))
        plans.append(order[i: i + take])
        i += take
    return plans


def rank_texts(bundle: ModelBundle, texts: Sequence[str], *, ends: Sequence[int] | None = None,
               max_window: int = DEFAULT_MAX_WINDOW, batch_tokens: int = DEFAULT_BATCH_TOKENS,
               prefix_cache: bool = True, head_chars: int = 0) -> Ranked:
    """Log-likelihood of each of ``texts`` from the first token where they differ to their end (see module doc),
    or with ``ends`` to the last token that starts before character ``ends[i]`` of ``texts[i]`` (each text keeps
    its own whole-text tokenization, only the scoring stops). ``head_chars``: characters at the start of every
    text that a cut keeps (see module doc; they must be common to all texts).

    Call it under ``bundle.lock`` and ``torch.inference_mode`` (as :func:`probes.gluecode.zeroshot.predict` does).
    """
    if not texts:
        raise InputError("no candidate texts to rank")
    if batch_tokens < 1:
        raise InputError(f"batch_tokens={batch_tokens}: give at least 1 (default {DEFAULT_BATCH_TOKENS})")
    if ends is not None and len(ends) != len(texts):
        raise InputError(f"{len(ends)} ends for {len(texts)} texts: give one end per text")
    seqs = [_ids(bundle, t, None if ends is None else ends[i]) for i, t in enumerate(texts)]
    n_tokens = max(len(s) for s in seqs)
    shortest = min(len(s) for s in seqs)
    if shortest < 1:
        raise InputError("a candidate text has no tokens: give non-empty texts to rank")
    win = window(bundle, max_window)
    lead = _n_lead(bundle, seqs[0], texts[0], head_chars)
    p = min(_common_prefix(seqs), shortest - 1)  # every candidate keeps at least one token of its own
    lead = min(lead, p, max(_n_lead(bundle, seqs[0]), win // 2))
    q = _common_suffix(seqs, max(0, shortest - p - 1))
    middle = max(len(s) - p - q for s in seqs)
    free = win - lead - middle
    if free < 0:
        raise InputError(f"the candidates differ over {middle} tokens, more than the window of {win}: raise "
                         "max_window or use a model with a longer context")
    left, right = p - lead, q
    if left + right <= free:
        keep_left, keep_right = left, right
    else:
        keep_left = min(left, max(free - right, free - free // 2))
        keep_right = min(right, free - keep_left)
    cut_left, cut_right = left - keep_left, right - keep_right
    prefix = seqs[0][:lead] + seqs[0][lead + cut_left: p]
    suffixes = [s[p: len(s) - cut_right] for s in seqs]
    device = model_device(bundle.model)
    rows_cap = _logit_rows(bundle, device)
    if prefix_cache and prefix:
        logliks, forward = _rank_cached(bundle, prefix, suffixes, device, batch_tokens, rows_cap)
    else:
        logliks, forward = _rank_whole(bundle, prefix, suffixes, device, batch_tokens, rows_cap)
    return Ranked(tuple(logliks), n_tokens, cut_left + cut_right, forward)


def _pad_right(rows: Sequence[Sequence[int]], pad: int, device: Any):
    import torch

    longest = max(len(r) for r in rows)
    ids = torch.full((len(rows), longest), pad, dtype=torch.long)
    for j, r in enumerate(rows):
        ids[j, : len(r)] = torch.tensor(r, dtype=torch.long)
    return ids.to(device)


def _pad_id(bundle: ModelBundle) -> int:
    tok = bundle.tokenizer
    for cand in (tok.pad_token_id, tok.eos_token_id, 0):
        if cand is not None:
            return int(cand)
    return 0


def _rank_cached(bundle: ModelBundle, prefix: list[int], suffixes: list[list[int]], device: Any, budget: int,
                 rows_cap: int) -> tuple[list[float], int]:
    """The prefix once with its key/value cache, then the suffixes in batches on copies of that cache."""
    import torch

    model = bundle.model
    logits, cache = run_prefix(model, torch.tensor([prefix], dtype=torch.long, device=device), full=False,
                               **keep_logits(model, 1))
    first = log_probs(logits[0, -1])
    del logits
    logliks = [0.0] * len(suffixes)
    forward = len(prefix)
    for chunk in _batches([len(s) for s in suffixes], len(prefix), budget, rows_cap):
        rows = [suffixes[r] for r in chunk]
        past = repeated_rows(cache, len(rows))
        ids = _pad_right(rows, _pad_id(bundle), device)
        logp = log_probs(continue_from(model, past, input_ids=ids)[0])
        forward += sum(len(r) for r in rows)
        for j, (r, row) in enumerate(zip(chunk, rows)):
            total = float(first[row[0]])
            if len(row) > 1:
                tgt = torch.tensor(row[1:], dtype=torch.long, device=logp.device)
                total += float(logp[j, : len(row) - 1].gather(-1, tgt[:, None]).sum())
            logliks[r] = total
        del past, logp
    return logliks, forward


def _rank_whole(bundle: ModelBundle, prefix: list[int], suffixes: list[list[int]], device: Any, budget: int,
                rows_cap: int) -> tuple[list[float], int]:
    """Every candidate's whole text (prefix + suffix) in batches; the reference for :func:`_rank_cached`."""
    import torch

    rows_all = [prefix + s for s in suffixes]
    first = max(1, len(prefix))  # the first token of a text has no prediction
    logliks = [0.0] * len(suffixes)
    forward = 0
    for chunk in _batches([len(r) for r in rows_all], 0, budget, rows_cap):
        rows = [rows_all[r] for r in chunk]
        ids = _pad_right(rows, _pad_id(bundle), device)
        logp = log_probs(bundle.model(input_ids=ids, use_cache=False).logits)
        forward += sum(len(r) for r in rows)
        for j, (r, row) in enumerate(zip(chunk, rows)):
            tgt = torch.tensor(row[first:], dtype=torch.long, device=logp.device)
            logliks[r] = float(logp[j, first - 1: len(row) - 1].gather(-1, tgt[:, None]).sum()) if len(tgt) else 0.0
        del logp
    return logliks, forward


class _IdentifierDone:
    """transformers stopping criterion: a row is done once its continuation has an identifier and then a
    character that cannot continue it, or starts with something other than whitespace or an identifier."""

    def __init__(self, tokenizer: Any, n_prompt: int):
        self.tokenizer, self.n_prompt = tokenizer, n_prompt

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        texts = self.tokenizer.batch_decode(input_ids[:, self.n_prompt:], skip_special_tokens=True)
        return torch.tensor([_finished(t) for t in texts], dtype=torch.bool, device=input_ids.device)


def _finished(text: str) -> bool:
    rest = text.lstrip()
    if not rest:
        return False
    m = _IDENTIFIER.match(rest)
    return m is None or m.end() < len(rest)


def generate_identifiers(bundle: ModelBundle, prompts: Sequence[str], *, max_new_tokens: int = 16,
                         max_window: int = DEFAULT_MAX_WINDOW, batch_tokens: int = DEFAULT_BATCH_TOKENS,
                         head_chars: Sequence[int] | None = None) -> list[Generated]:
    """Greedy continuations of ``prompts`` and the leading identifier of each (see module doc), in the order of
    ``prompts``; ``head_chars[i]``: characters at the start of prompt ``i`` that a cut keeps. Call under
    ``bundle.lock`` and ``torch.inference_mode``."""
    import torch

    if max_new_tokens < 1:
        raise InputError("max_new_tokens must be at least 1")
    win = window(bundle, max_window)
    if win - max_new_tokens < 1:
        raise InputError(f"max_new_tokens={max_new_tokens} leaves no room for a prompt in a window of {win} tokens")
    tok = bundle.tokenizer
    device = model_device(bundle.model)
    prepared = []
    if head_chars is not None and len(head_chars) != len(prompts):
        raise InputError(f"{len(head_chars)} head lengths for {len(prompts)} prompts: give one per prompt")
    for i, text in enumerate(prompts):
        ids = _ids(bundle, text.rstrip())
        room = win - max_new_tokens
        lead = _n_lead(bundle, ids, text.rstrip(), head_chars[i] if head_chars is not None else 0)
        lead = min(lead, max(_n_lead(bundle, ids), room // 2))
        cut = max(0, len(ids) - room)
        prepared.append((ids[:lead] + ids[lead + cut:], len(ids), cut))
    pad = _pad_id(bundle)
    results: dict[int, Generated] = {}
    for chunk in _batches([len(p[0]) for p in prepared], max_new_tokens, batch_tokens, 1 << 62):
        rows = [prepared[r][0] for r in chunk]
        longest = max(len(row) for row in rows)
        batch = torch.full((len(rows), longest), pad, dtype=torch.long)
        mask = torch.zeros((len(rows), longest), dtype=torch.long)
        for j, row in enumerate(rows):  # left padding: every row's last prompt token at the same position
            batch[j, longest - len(row):] = torch.tensor(row, dtype=torch.long)
            mask[j, longest - len(row):] = 1
        out = bundle.model.generate(
            input_ids=batch.to(device), attention_mask=mask.to(device), max_new_tokens=max_new_tokens,
            do_sample=False, temperature=None, top_p=None, top_k=None, use_cache=True, pad_token_id=pad,
            stopping_criteria=[_IdentifierDone(tok, longest)])
        texts = tok.batch_decode(out[:, longest:], skip_special_tokens=True)
        for r, raw in zip(chunk, texts):
            _, n_tokens, cut = prepared[r]
            results[r] = Generated(leading_identifier(raw), raw, n_tokens, cut)
    return [results[r] for r in range(len(prompts))]
