"""Code completion whose tokens are scored exactly as generated (AsC-Viz, paper section V, Fig. 5).

:func:`complete` continues a prompt with the model (greedy by default; temperature / top-p
sampling on request, seeded) and returns a :class:`Completion`: the prompt's token ids followed by
the generated ids, each with its character span in ``prompt + completion``. Scoring then runs on
those exact ids (:func:`explain_completion`), never on a re-tokenization of the text, which could
split the generated code differently.

Generation stops after ``max_new_tokens``, at the end-of-sequence token, or at the end of the
function being completed: for Python the first line that starts at or left of the prompt's first
``def`` (a dedent back to the function's own level), for Java when the braces opened by the prompt
close. Generated tokens that start after the function's last newline are dropped (the token that
ends the last line is kept, even when the tokenizer merged the next line's indentation into it:
ids are never split); generation itself stops as soon as the function has ended.

Trailing whitespace of the prompt is left for the model to generate: tokenizers merge a newline
with the next line's indentation (``"\n        "`` is one SmolLM2 token), so a prompt that ends on a
bare newline is an unnatural token boundary that pushes the model off its training distribution
(it then tends to write a comment at column 0). ``Completion.prompt`` is the prompt as used.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from asc.align import AlignOptions
from asc.device import model_device
from asc.display import show
from asc.errors import InputError
from asc.explain import Explanation, check_source, explain_scored
from asc.models import ModelBundle
from asc.scores import encode, score_ids

__all__ = ["STOP_REASONS", "Completion", "Decoding", "complete", "explain_completion", "first_lines", "function_end",
           "stop_message"]

STOP_REASONS = {  # why generation stopped, in words (Completion.stop_reason)
    "function_end": "the function was complete (the model went on past its end)",
    "eos": "the model wrote its end-of-text token",
    "max_new_tokens": "the limit of new tokens was reached",
}
FEW_TOKENS = 8  # a completion this short looks as if nothing happened: stop_message says what to do


@dataclass(frozen=True)
class Decoding:
    """How a completion (and each branch of it) is decoded: the one decoding settings type of the app, the
    notebooks and the CLI. ``temperature`` 0 is greedy (``top_p`` and ``seed`` then do nothing); generation stops
    after ``max_new_tokens``, at the end of the model's text, or, with ``stop_at_function_end``, where the
    function the prompt opens ends (in ``language``). Refused with the fix when it cannot run."""

    max_new_tokens: int = 64
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    language: str = "python"
    stop_at_function_end: bool = True

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise InputError("max_new_tokens must be at least 1")
        if not self.temperature >= 0:
            raise InputError(f"temperature={self.temperature}: use 0 (greedy) or a positive value")
        if not 0 < self.top_p <= 1:
            raise InputError(f"top_p={self.top_p}: choose a value above 0 and at most 1")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, as a branch tree and a branch record it."""
        return asdict(self)

    @classmethod
    def from_dict(cls, entry: dict[str, Any]) -> Decoding:
        """What :meth:`to_dict` wrote (keys it does not know are ignored; missing ones take the defaults)."""
        known = {k: entry[k] for k in cls.__dataclass_fields__ if k in entry}
        return cls(**known)


@dataclass(frozen=True)
class Completion:
    """Prompt + generated tokens. Arrays have shape ``(T,)``; ``n_prompt`` tokens come from the prompt."""

    prompt: str
    text: str  # prompt + completion
    ids: np.ndarray
    start: np.ndarray  # char offsets into ``text``
    end: np.ndarray
    special: np.ndarray
    n_prompt: int
    stop_reason: str  # "function_end" | "eos" | "max_new_tokens"

    @property
    def completion(self) -> str:
        return self.text[len(self.prompt):]

    @property
    def generated(self) -> np.ndarray:
        """bool (T,): tokens the model generated."""
        mask = np.zeros(len(self.ids), dtype=bool)
        mask[self.n_prompt:] = True
        return mask

    def _repr_html_(self) -> str:
        """Inline in a notebook: the prompt, then the generated text underlined (a completion is not scored:
        :func:`explain_completion` gives the colored view)."""
        return str(show(self, "html"))


def stop_message(completion: Completion, max_new_tokens: int | None = None) -> str:
    """How many tokens the model wrote and why it stopped (:data:`STOP_REASONS`), in a sentence; a short completion
    of a finished function adds what to do (a prompt that leaves the model something to write: :func:`first_lines`)."""
    n = len(completion.ids) - completion.n_prompt
    why = STOP_REASONS.get(completion.stop_reason, completion.stop_reason)
    if completion.stop_reason == "max_new_tokens" and max_new_tokens is not None:
        why = f"the limit of {max_new_tokens} new tokens was reached"
    text = f"The model wrote {n} token{'s' if n != 1 else ''} and stopped: {why}."
    if completion.stop_reason == "function_end" and n < FEW_TOKENS:
        text += (" The code was already a whole function: keep only its first lines (its signature and first "
                 "statement) and complete again to see the model write the rest.")
    return text


def first_lines(code: str, n: int = 2) -> str:
    """The first ``n`` non-blank lines of ``code`` (each with its newline): a prompt that leaves the model the rest
    of the function to write (a function's signature and its first statement, for ``n=2``)."""
    kept: list[str] = []
    for line in code.splitlines(keepends=True):
        kept.append(line if line.endswith("\n") else line + "\n")
        if sum(1 for k in kept if k.strip()) >= n:
            break
    return "".join(kept)


def function_end(prompt: str, completion: str, language: str = "python") -> int | None:
    """Character index in ``completion`` where the completed function ends, or None if it has not."""
    if language == "java":
        depth = prompt.count("{") - prompt.count("}")
        if depth <= 0:
            return None
        for i, ch in enumerate(completion):
            depth += (ch == "{") - (ch == "}")
            if depth == 0:
                return i + 1
        return None
    m = re.search(r"^([ \t]*)(async\s+)?def\s", prompt, flags=re.M)
    if not m:
        return None
    level = len(m.group(1).expandtabs(4))
    text = prompt + completion
    for line in re.finditer(r"\n([ \t]*)(\S)", text):
        # the first line whose code is generated and sits at or left of the def ends the function
        if line.start(2) >= len(prompt) and len(line.group(1).expandtabs(4)) <= level:
            return max(0, line.start() + 1 - len(prompt))  # keep the newline ending the last line
    return None


class _FunctionEnd:
    """transformers stopping criterion: stop once the generated text has left the function."""

    def __init__(self, tokenizer: Any, prompt: str, n_prompt: int, language: str) -> None:
        self.tokenizer, self.prompt, self.n_prompt, self.language = tokenizer, prompt, n_prompt, language

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        text = self.tokenizer.decode(input_ids[0, self.n_prompt:], skip_special_tokens=True)
        done = function_end(self.prompt, text, self.language) is not None
        return torch.full((input_ids.shape[0],), done, dtype=torch.bool, device=input_ids.device)


def complete(bundle: ModelBundle, prompt: str, max_new_tokens: int = 64, *, temperature: float = 0.0,
             top_p: float = 1.0, seed: int = 0, language: str = "python",
             stop_at_function_end: bool = True) -> Completion:
    """Generate a continuation of ``prompt`` (see module doc). ``temperature == 0`` means greedy."""
    import torch

    bundle.require_causal("next-token probabilities to generate with")
    Decoding(max_new_tokens, temperature, top_p, seed, language, stop_at_function_end)  # refused with the fix
    check_source(prompt, language)
    prompt = prompt.rstrip()
    ids, start, end, special = encode(bundle, prompt)
    room = bundle.context_length - len(ids)
    if room < 1:
        raise InputError(f"the prompt has {len(ids)} tokens, the model's context is {bundle.context_length}: "
                         "shorten the prompt to complete it")
    max_new_tokens = min(max_new_tokens, room)
    tok = bundle.tokenizer
    kwargs = {"max_new_tokens": max_new_tokens, "do_sample": temperature > 0, "use_cache": True,
              "pad_token_id": tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id}
    if temperature > 0:
        kwargs.update(temperature=float(temperature), top_p=float(top_p), top_k=0)
    else:  # explicit greedy: ignore sampling defaults of the model's generation_config
        kwargs.update(temperature=None, top_p=None, top_k=None)
    if stop_at_function_end:
        kwargs["stopping_criteria"] = [_FunctionEnd(tok, prompt, len(ids), language)]
    with bundle.lock, torch.inference_mode(), torch.random.fork_rng():
        torch.manual_seed(seed)
        device = model_device(bundle.model)
        out = bundle.model.generate(input_ids=torch.from_numpy(ids)[None].to(device),
                                    attention_mask=torch.ones(1, len(ids), dtype=torch.long, device=device), **kwargs)
    gen = out[0, len(ids):].tolist()
    stop = "max_new_tokens"
    eos = set(tok.all_special_ids)
    for j, t in enumerate(gen):
        if t in eos:
            gen, stop = gen[:j], "eos"
            break
    # character spans of generated tokens: lengths of cumulative decodes (a token that ends inside a
    # multi-byte character gets the character when it completes)
    pieces = [tok.decode(gen[: j + 1], skip_special_tokens=False, clean_up_tokenization_spaces=False)
              for j in range(len(gen))]
    ends = [len(p) for p in pieces]
    completion = pieces[-1] if pieces else ""
    if stop_at_function_end:
        cut = function_end(prompt, completion, language)
        if cut is not None:
            keep = sum(1 for j in range(len(gen)) if (ends[j - 1] if j else 0) < cut)
            gen, ends = gen[:keep], ends[:keep]
            completion = pieces[keep - 1] if keep else ""
            stop = "function_end"
    g_start = [len(prompt) + (ends[j - 1] if j else 0) for j in range(len(gen))]
    g_end = [len(prompt) + e for e in ends]
    return Completion(prompt=prompt, text=prompt + completion,
                      ids=np.concatenate([ids, np.asarray(gen, dtype=np.int64)]),
                      start=np.concatenate([start, np.asarray(g_start, dtype=np.int64)]),
                      end=np.concatenate([end, np.asarray(g_end, dtype=np.int64)]),
                      special=np.concatenate([special, np.zeros(len(gen), dtype=bool)]),
                      n_prompt=len(ids), stop_reason=stop)


def explain_completion(bundle: ModelBundle, comp: Completion, language: str = "python", aggregate: str = "median",
                       options: AlignOptions | None = None, max_window: int | None = None) -> Explanation:
    """AsC-Eval of prompt + completion, scored on the exact ids (prompt's and generated)."""
    info = bundle.summary()
    scores = score_ids(bundle, comp.text, comp.ids, comp.start, comp.end, comp.special, max_window=max_window)
    return explain_scored(info, scores, language, aggregate, options)
