"""asc.generate: where a completed function ends, generation with the tiny model, scoring the exact ids.

The stop/truncation logic is also checked with a scripted "model" (its ``generate`` replays fixed
token ids of the tiny tokenizer) so the outcome does not depend on random weights. Real-model
checks (SmolLM2) are marked ``real``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from asc.errors import InputError
from asc.generate import Completion, complete, explain_completion, function_end
from asc.syntax import parse
from tests.helpers import ROOT

STOP_REASONS = {"function_end", "eos", "max_new_tokens"}
PROMPTS = ["def f(x):\n    return x", "def add(a, b):\n    s = a + b\n", "class A:\n    def m(self, v):\n        w = v\n"]


# ------------------------------------------------------------------------------------------ function_end


def _cut(prompt, completion, language="python"):
    i = function_end(prompt, completion, language)
    return None if i is None else (completion[:i], completion[i:])


def test_function_end_top_level():
    prompt = "def f(x):\n    y = x\n"
    assert _cut(prompt, "    return y\nprint(f(1))\n") == ("    return y\n", "print(f(1))\n")
    # the returned index is just past the newline that begins the first outer line
    completion = "    return y\nz = 2\n"
    i = function_end(prompt, completion)
    assert completion[i - 1] == "\n" and completion[i:].startswith("z")
    assert i == completion.index("\nz") + 1


def test_function_end_ignores_blank_lines():
    prompt = "def f(x):\n    y = x\n"
    assert function_end(prompt, "\n\n    return y\n") is None
    assert function_end(prompt, "    a = 1\n\n   \n\t\n    return y\n") is None  # whitespace-only lines
    assert _cut(prompt, "    return y\n\n\nprint(1)") == ("    return y\n\n\n", "print(1)")
    assert _cut(prompt, "    return y\n  \n\nx") == ("    return y\n  \n\n", "x")


def test_function_end_none_while_inside():
    prompt = "def f(x):\n    for i in x:\n"
    assert function_end(prompt, "") is None
    assert function_end(prompt, "        print(i)\n") is None
    assert function_end(prompt, "        print(i)\n    return x\n") is None  # dedent to the body: still inside
    assert function_end(prompt, "        print(i)\n    return x") is None
    assert function_end(prompt, "        print(i)  # no newline yet") is None


def test_function_end_only_generated_lines_count():
    # prompt lines at column 0 before/after the def are not the end; the first generated one is
    prompt = "import os\nx = 1\ndef f():\n"
    assert function_end(prompt, "    return x\n") is None
    assert _cut(prompt, "    return x\ny = f()\n") == ("    return x\n", "y = f()\n")
    # the first generated character continues the prompt's last line: not a new line
    assert function_end("def f():\n    return", " 1") is None
    # a generated line right after a prompt that ends with a newline starts at index 0
    assert function_end("def f():\n    return 1\n", "print(f())\n") == 0


def test_function_end_method():
    prompt = "class A:\n    def f(self):\n        x = 1\n"
    assert function_end(prompt, "        return x\n") is None
    assert _cut(prompt, "        return x\n\n    def g(self):\n        pass\n") == (
        "        return x\n\n", "    def g(self):\n        pass\n")
    assert _cut(prompt, "        return x\nprint(A)\n") == ("        return x\n", "print(A)\n")
    # a line deeper than the def but shallower than the body is still inside (a continuation)
    assert function_end(prompt, "        return (x +\n      1)\n") is None


def test_function_end_tabs():
    prompt = "class A:\n\tdef f(self):\n\t\tx = 1\n"
    assert function_end(prompt, "\t\treturn x\n") is None
    assert _cut(prompt, "\t\treturn x\n\tdef g(self):\n") == ("\t\treturn x\n", "\tdef g(self):\n")
    # a tab and four spaces are the same level
    assert _cut(prompt, "\t\treturn x\n    def g(self):\n") == ("\t\treturn x\n", "    def g(self):\n")
    assert function_end(prompt, "\t\treturn x\n\t\t\ty = 2\n") is None


def test_function_end_async_and_no_def():
    assert _cut("async def f():\n    await g()\n", "    return 1\nx = 1") == ("    return 1\n", "x = 1")
    assert function_end("x = 1\n", "y = 2\nz = 3\n") is None  # no function to end


def test_function_end_java():
    prompt = "class A {\n  int f(int x) {\n    int y = x;"
    completion = "\n    return y;\n  }\n}\nclass B {}"
    assert _cut(prompt, completion, "java") == ("\n    return y;\n  }\n}", "\nclass B {}")
    # braces opened and closed in the completion balance themselves
    completion = "\n    if (y > 0) { y = 1; }\n  }\n}"
    assert _cut(prompt, completion, "java") == (completion, "")
    assert function_end(prompt, "\n    return y;\n  }\n", "java") is None  # the class is still open
    one = "int f() {\n  return 1;"
    assert _cut(one, "\n}\nint g() {}", "java") == ("\n}", "\nint g() {}")


def test_function_end_java_without_open_brace():
    assert function_end("int f()", " { return 1; }", "java") is None
    assert function_end("class A {}", "\n}", "java") is None
    assert function_end("class A { }\n}", "}}}", "java") is None  # more closed than opened


# ------------------------------------------------------------------------------------------ scripted model


class _Scripted:
    """Stands in for a transformers model: ``generate`` appends fixed ids one by one, honouring
    ``max_new_tokens`` and ``stopping_criteria`` the way transformers does."""

    def __init__(self, script):
        self.script = list(script)
        self.steps = 0

    def generate(self, input_ids, attention_mask=None, max_new_tokens=20, stopping_criteria=(), **kwargs):
        ids = input_ids
        self.steps = 0
        for t in self.script[:max_new_tokens]:
            ids = torch.cat([ids, torch.tensor([[t]])], dim=1)
            self.steps += 1
            if any(bool(c(ids, None).all()) for c in stopping_criteria or ()):
                break
        return ids


def _scripted(tiny, continuation, extra_ids=()):
    ids = tiny.tokenizer(continuation, add_special_tokens=False)["input_ids"] + list(extra_ids)
    model = _Scripted(ids)
    return dataclasses.replace(tiny, model=model, name="scripted"), model


def _check_spans(comp: Completion):
    """Generated spans tile the completion: contiguous, from the end of the prompt to the end of the text."""
    g = slice(comp.n_prompt, None)
    if comp.n_prompt < len(comp.ids):
        assert comp.start[comp.n_prompt] == len(comp.prompt)
        np.testing.assert_array_equal(comp.start[g][1:], comp.end[g][:-1])
        assert comp.end[-1] == len(comp.text)
    else:
        assert comp.text == comp.prompt
    assert (comp.end >= comp.start).all()
    assert len(comp.ids) == len(comp.start) == len(comp.end) == len(comp.special)
    assert comp.generated.sum() == len(comp.ids) - comp.n_prompt
    assert not comp.special[g].any()


def test_scripted_stops_at_function_end(tiny):
    bundle, model = _scripted(tiny, "\n    return y\n\nprint(f(2))\nprint(3)\n")
    comp = complete(bundle, "def f(x):\n    y = x + 1\n", 50)
    assert comp.prompt == "def f(x):\n    y = x + 1"
    assert comp.stop_reason == "function_end"
    assert comp.completion == "\n    return y\n\n"
    assert comp.text == comp.prompt + comp.completion
    assert not parse(comp.text).has_error
    # generation itself stopped once the outer line appeared, not at the end of the script
    assert model.steps < len(model.script)
    _check_spans(comp)
    # the kept tokens are exactly the scripted ones before "print"
    kept = comp.ids[comp.n_prompt:].tolist()
    assert tiny.tokenizer.decode(kept) == "\n    return y\n\n"
    assert kept == model.script[:len(kept)]


def test_scripted_method_end(tiny):
    bundle, _ = _scripted(tiny, "\n        return v\n    def n(self):\n        pass\n")
    comp = complete(bundle, "class A:\n    def m(self, v):\n        w = v\n", 50)
    assert comp.stop_reason == "function_end"
    # the tokenizer merges a newline with the next line's indentation ("\n   "): that token ends the
    # method's last line, so it is kept; nothing of the next def is
    assert comp.completion.rstrip(" ") == "\n        return v\n"
    assert "def" not in comp.completion
    assert not parse(comp.text).has_error
    _check_spans(comp)


def test_scripted_java_end(tiny):
    bundle, _ = _scripted(tiny, "\n    return y;\n  }\n}\nclass B {}\n")
    comp = complete(bundle, "class A {\n  int f(int x) {\n    int y = x;", 50, language="java")
    assert comp.stop_reason == "function_end"
    # the token holding the last closing brace is kept, nothing after the next one
    assert comp.completion.startswith("\n    return y;\n  }\n}")
    assert "class B" not in comp.completion
    assert parse(comp.text, "java").has_error is False
    _check_spans(comp)


def test_scripted_eos(tiny):
    eos = tiny.tokenizer.eos_token_id
    bundle, _ = _scripted(tiny, "\n    return y", extra_ids=[eos] + tiny.tokenizer("\nzzz")["input_ids"])
    comp = complete(bundle, "def f(x):\n    y = x\n", 50)
    assert comp.stop_reason == "eos"
    assert comp.completion == "\n    return y"
    assert eos not in comp.ids[comp.n_prompt:].tolist()
    _check_spans(comp)


def test_scripted_max_new_tokens_and_no_stop(tiny):
    continuation = "\n    return y\nprint(f(2))\n"
    bundle, model = _scripted(tiny, continuation)
    comp = complete(bundle, "def f(x):\n    y = x\n", 3)
    assert comp.stop_reason == "max_new_tokens"
    assert len(comp.ids) - comp.n_prompt == 3
    assert comp.ids[comp.n_prompt:].tolist() == model.script[:3]
    _check_spans(comp)
    comp = complete(bundle, "def f(x):\n    y = x\n", 100, stop_at_function_end=False)
    assert comp.stop_reason == "max_new_tokens"
    assert comp.completion == continuation  # nothing cut
    _check_spans(comp)


def test_scripted_non_ascii_spans(tiny):
    continuation = '\n    s = "é✓ü"\n    return s\nx = 1\n'
    bundle, _ = _scripted(tiny, continuation)
    comp = complete(bundle, "def f():\n    t = 1\n", 60)
    assert comp.stop_reason == "function_end"
    assert comp.completion == '\n    s = "é✓ü"\n    return s\n'
    _check_spans(comp)
    # split characters: the tokens of one character together cover exactly that character
    for ch in "é✓ü":
        at = comp.text.index(ch)
        covering = [j for j in range(comp.n_prompt, len(comp.ids)) if comp.start[j] <= at < comp.end[j]]
        assert len(covering) == 1
        assert comp.text[comp.start[covering[0]]:comp.end[covering[0]]] == ch


# ------------------------------------------------------------------------------------------ tiny model


@pytest.mark.parametrize("prompt", PROMPTS)
def test_complete_greedy_is_deterministic_and_consistent(tiny, prompt):
    a = complete(tiny, prompt, 10)
    b = complete(tiny, prompt, 10)
    np.testing.assert_array_equal(a.ids, b.ids)
    assert a.text == b.text and a.stop_reason == b.stop_reason
    p = prompt.rstrip()
    assert a.prompt == p and a.text == p + a.completion
    assert a.stop_reason in STOP_REASONS
    n_gen = len(a.ids) - a.n_prompt
    assert n_gen <= 10
    if a.stop_reason == "max_new_tokens":
        assert n_gen == 10
    enc = tiny.tokenizer(p, return_offsets_mapping=True)
    assert a.ids[:a.n_prompt].tolist() == enc["input_ids"]
    assert [tuple(o) for o in enc["offset_mapping"]] == list(zip(a.start[:a.n_prompt], a.end[:a.n_prompt]))
    _check_spans(a)
    for j in range(a.n_prompt, len(a.ids)):
        piece = tiny.tokenizer.decode([int(a.ids[j])], clean_up_tokenization_spaces=False)
        if piece.isascii():
            assert a.text[a.start[j]:a.end[j]] == piece


@pytest.mark.parametrize("prompt", PROMPTS[:2])
def test_complete_greedy_picks_the_top_token(tiny, prompt):
    comp = complete(tiny, prompt, 8, stop_at_function_end=False)
    with torch.inference_mode():
        logits = tiny.model(torch.tensor([comp.ids.tolist()])).logits[0]
    for i in range(comp.n_prompt, len(comp.ids)):
        row = logits[i - 1]
        assert float(row[comp.ids[i]]) >= float(row.max()) - 1e-4


def test_complete_with_bos(tiny_bos):
    comp = complete(tiny_bos, PROMPTS[0], 6)
    assert comp.ids[0] == tiny_bos.tokenizer.bos_token_id and comp.special[0]
    assert comp.ids[:comp.n_prompt].tolist() == tiny_bos.tokenizer(PROMPTS[0])["input_ids"]
    _check_spans(comp)


def test_complete_max_new_tokens(tiny):
    reasons = []
    for n in (1, 2, 5):
        comp = complete(tiny, PROMPTS[1], n, stop_at_function_end=False)
        n_gen = len(comp.ids) - comp.n_prompt
        assert n_gen <= n
        assert comp.stop_reason in {"max_new_tokens", "eos"}
        if comp.stop_reason == "max_new_tokens":
            assert n_gen == n
        else:  # the end-of-text token is not kept: fewer tokens than asked for
            assert n_gen < n
        reasons.append(comp.stop_reason)
    assert "max_new_tokens" in reasons  # the budget was reached at least once
    with pytest.raises(InputError):
        complete(tiny, PROMPTS[0], 0)


def test_complete_clamps_to_the_context(tiny):
    prompt = "def f(x):\n" + "    x = x + 1\n" * 5  # most of the 64-token context
    n_prompt = len(tiny.tokenizer(prompt.rstrip())["input_ids"])
    assert 40 < n_prompt < tiny.context_length
    comp = complete(tiny, prompt, 50, stop_at_function_end=False)
    assert len(comp.ids) <= tiny.context_length
    assert comp.stop_reason in {"max_new_tokens", "eos"}
    if comp.stop_reason == "max_new_tokens":
        assert len(comp.ids) == tiny.context_length  # 50 new tokens asked for, clamped to what the context holds
    else:
        assert len(comp.ids) < tiny.context_length


def test_complete_sampling_is_seeded(tiny):
    kw = {"temperature": 1.0, "top_p": 0.95, "stop_at_function_end": False}
    a = complete(tiny, PROMPTS[0], 10, seed=7, **kw)
    b = complete(tiny, PROMPTS[0], 10, seed=7, **kw)
    np.testing.assert_array_equal(a.ids, b.ids)
    assert a.text == b.text
    outs = {tuple(complete(tiny, PROMPTS[0], 10, seed=s, **kw).ids.tolist()) for s in range(4)}
    assert len(outs) > 1  # the seed matters (near-uniform random model: distinct draws)
    _check_spans(a)


def test_complete_leaves_the_global_rng_alone(tiny):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    complete(tiny, PROMPTS[0], 5, temperature=1.0, seed=1)
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize("prompt", ["", "   \n\t\n"])
def test_complete_empty_prompt(tiny, prompt):
    with pytest.raises(InputError):
        complete(tiny, prompt, 5)


def test_complete_prompt_longer_than_context(tiny):
    prompt = "def f(x):\n" + "".join(f"    x{i} = x * {i}\n" for i in range(20))
    assert len(tiny.tokenizer(prompt)["input_ids"]) > tiny.context_length
    with pytest.raises(InputError, match="context"):
        complete(tiny, prompt, 5)


def _prompt_with(tokenizer, n_tokens):
    """A Python prompt of exactly ``n_tokens`` tokens (no trailing whitespace)."""
    base = "def f(x):\n    return x"
    for k in range(40):
        for tail in ("", "+", " +", "1", " + 1", "*2", " * 22"):
            p = base + " + x" * k + tail
            if len(tokenizer(p)["input_ids"]) == n_tokens:
                return p
    raise AssertionError(f"no prompt of {n_tokens} tokens")


def test_complete_context_boundary(tiny):
    full = _prompt_with(tiny.tokenizer, tiny.context_length)
    with pytest.raises(InputError, match="context"):
        complete(tiny, full, 5)
    near = _prompt_with(tiny.tokenizer, tiny.context_length - 1)
    comp = complete(tiny, near, 10, stop_at_function_end=False)
    assert comp.n_prompt == tiny.context_length - 1
    assert len(comp.ids) <= tiny.context_length
    assert comp.stop_reason in {"max_new_tokens", "eos"}


# ------------------------------------------------------------------------------------------ explain_completion


def _raw_logprobs(bundle, ids):
    with torch.inference_mode():
        logits = bundle.model(torch.tensor([list(ids)])).logits[0].double()
    return torch.log_softmax(logits, -1).numpy()


@pytest.mark.parametrize("prompt", PROMPTS[:2])
def test_explain_completion_scores_the_exact_ids(tiny, prompt):
    comp = complete(tiny, prompt, 10, stop_at_function_end=False)
    ex = explain_completion(tiny, comp)
    np.testing.assert_array_equal(ex.scores.ids, comp.ids)
    np.testing.assert_array_equal(ex.scores.start, comp.start)
    np.testing.assert_array_equal(ex.scores.end, comp.end)
    assert ex.source == comp.text
    lp = _raw_logprobs(tiny, comp.ids)
    assert np.isnan(ex.scores.prob[0])  # no BOS: nothing predicts the first token
    for i in range(1, len(comp.ids)):
        assert ex.scores.logprob[i] == pytest.approx(lp[i - 1, comp.ids[i]], abs=1e-5)
    assert ex.tree.source == comp.text


def test_explain_completion_does_not_retokenize(tiny):
    """Ids that are not the tokenizer's own split of the text are scored as given."""
    text = "def f(x):\n    return x\n"
    tok = tiny.tokenizer
    canonical = tok(text)["input_ids"]
    # spell "return" one character per token: same text, different ids
    head, tail = text.split("return")
    pieces = [head] + list("return") + [tail]
    ids, start, end, pos = [], [], [], 0
    for piece in pieces:
        enc = tok(piece, add_special_tokens=False, return_offsets_mapping=True)
        ids += enc["input_ids"]
        start += [pos + a for a, _ in enc["offset_mapping"]]
        end += [pos + b for _, b in enc["offset_mapping"]]
        pos += len(piece)
    assert ids != canonical and tok.decode(ids) == text
    n_prompt = len(tok(head, add_special_tokens=False)["input_ids"])
    comp = Completion(prompt=head, text=text, ids=np.array(ids), start=np.array(start), end=np.array(end),
                      special=np.zeros(len(ids), bool), n_prompt=n_prompt, stop_reason="max_new_tokens")
    ex = explain_completion(tiny, comp)
    assert ex.scores.ids.tolist() == ids
    lp = _raw_logprobs(tiny, ids)
    np.testing.assert_allclose(ex.scores.logprob[1:], [lp[i - 1, ids[i]] for i in range(1, len(ids))], atol=1e-5)
    # the tokens of "return" are bound to the return statement
    ret = ex.tree.type.index("return_statement")
    bound = set(ex.alignment.tokens_of(ret).tolist())
    assert set(range(n_prompt, n_prompt + 6)) <= bound


def test_explain_completion_with_bos(tiny_bos):
    comp = complete(tiny_bos, PROMPTS[0], 6, stop_at_function_end=False)
    ex = explain_completion(tiny_bos, comp)
    np.testing.assert_array_equal(ex.scores.ids, comp.ids)
    assert np.isnan(ex.scores.prob[0]) and not np.isnan(ex.scores.prob[1:]).any()
    lp = _raw_logprobs(tiny_bos, comp.ids)
    np.testing.assert_allclose(ex.scores.logprob[1:], [lp[i - 1, comp.ids[i]] for i in range(1, len(comp.ids))],
                               atol=1e-5)


# ------------------------------------------------------------------------------------------ real model

COUNT_PROMPT = "def count_chars(string, character):\n    count = 0\n    for letter in string:\n"


@pytest.mark.real
def test_smollm2_completes_the_function(smol):
    comp = complete(smol, COUNT_PROMPT, 64)
    assert comp.stop_reason == "function_end"
    assert comp.prompt == COUNT_PROMPT.rstrip()
    assert comp.ids[:comp.n_prompt].tolist() == smol.tokenizer(comp.prompt)["input_ids"]
    assert len(comp.ids) > comp.n_prompt
    assert not parse(comp.text).has_error
    # nothing of the next top-level line was kept: every generated code line is indented
    lines = comp.text[len(COUNT_PROMPT.rstrip()):].split("\n")[1:]
    assert all(line[:1] in (" ", "\t") for line in lines if line.strip())
    _check_spans(comp)

    ex = explain_completion(smol, comp)
    np.testing.assert_array_equal(ex.scores.ids, comp.ids)
    lp = _raw_logprobs(smol, comp.ids)
    for i in range(comp.n_prompt, len(comp.ids)):
        assert ex.scores.prob[i] == pytest.approx(np.exp(lp[i - 1, comp.ids[i]]), abs=1e-5)
        assert ex.scores.logprob[i] == pytest.approx(lp[i - 1, comp.ids[i]], abs=1e-4)
    # greedy: each generated token is the model's top choice
    assert (ex.scores.rank[comp.n_prompt:] == 1).all()


def test_first_lines_keeps_the_signature_and_first_statement():
    from asc.generate import first_lines

    code = (ROOT / "assets" / "examples" / "count_chars.py").read_text()
    assert first_lines(code) == "def count_chars(string, character):\n    count = 0\n"
    assert first_lines("\n\ndef f():\n\n    x = 1\n    y") == "\n\ndef f():\n\n    x = 1\n"  # blank lines kept
    assert first_lines("def f(): pass") == "def f(): pass\n"
    assert first_lines(code, 1) == "def count_chars(string, character):\n"


def _made(n_prompt: int, n_new: int, stop: str) -> Completion:
    n = n_prompt + n_new
    return Completion(prompt="p", text="p" * n, ids=np.arange(n), start=np.arange(n), end=np.arange(n) + 1,
                      special=np.zeros(n, bool), n_prompt=n_prompt, stop_reason=stop)


def test_the_stop_message_says_how_many_tokens_why_and_what_to_do():
    from asc.generate import FEW_TOKENS, STOP_REASONS, stop_message

    short = stop_message(_made(30, 2, "function_end"), 64)
    assert short.startswith("The model wrote 2 tokens and stopped: " + STOP_REASONS["function_end"])
    assert "keep only its first lines" in short  # nothing seemed to happen: what to do
    long = stop_message(_made(30, FEW_TOKENS, "function_end"), 64)
    assert "first lines" not in long
    assert stop_message(_made(30, 64, "max_new_tokens"), 64) == (
        "The model wrote 64 tokens and stopped: the limit of 64 new tokens was reached.")
    assert stop_message(_made(30, 1, "eos")) == "The model wrote 1 token and stopped: the model wrote its end-of-text token."
