"""asc.branching.branches: branches from a KV cache (tiny model and a scripted one), explore_forks, ast_diff, and the
``python -m asc branch`` command. One real SmolLM2 test is marked ``real``.

The scripted model wraps the tiny model: its forward runs the real one (so the cache is real) and then puts
all the probability on a fixed continuation, by position, so the stopping rules are checked on known text.
"""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
import torch

import asc.branching.branches as branch_mod
from asc.branching.branches import branch, explore_forks, mean_value, prefix_cache
from asc.branching.forks import fork_points
from asc.branching.treediff import ast_diff
from asc.errors import InputError
from asc.generate import complete, explain_completion
from asc.scores import encode
from asc.syntax import parse
from tests.helpers import run_module

PROMPT = "def f(x):\n    y = x"


@pytest.fixture(scope="module")
def trunk(tiny):
    return complete(tiny, PROMPT, 20, stop_at_function_end=False)


def _generate(bundle, ids, n, **sampling):
    """transformers' own generate from scratch on ``ids`` (a full re-read of the prefix)."""
    x = torch.tensor([list(ids)])
    seed = sampling.pop("seed", 0)
    kw = {"do_sample": True, "top_k": 0, **sampling} if sampling else {"do_sample": False, "temperature": None,
                                                                       "top_p": None, "top_k": None}
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        out = bundle.model.generate(input_ids=x, attention_mask=torch.ones_like(x), max_new_tokens=n,
                                    pad_token_id=0, **kw)
    return out[0].tolist()


def _check_spans(comp):
    """Exact ids with spans into the text: the new part tiles the text after the prompt."""
    assert len(comp.ids) == len(comp.start) == len(comp.end) == len(comp.special)
    assert comp.text.startswith(comp.prompt)
    assert comp.end[-1] == len(comp.text)
    np.testing.assert_array_equal(comp.start[comp.n_prompt:][1:], comp.end[comp.n_prompt:][:-1])


# ------------------------------------------------------------------------------------------ prefix cache


def test_prefix_cache_matches_a_full_forward(tiny):
    ids = encode(tiny, PROMPT)[0]
    cache = prefix_cache(tiny, ids)
    with torch.inference_mode():
        full = tiny.model(input_ids=torch.from_numpy(ids)[None], use_cache=False).logits[0, -1].numpy()
    np.testing.assert_allclose(cache.logits, full, atol=1e-5)
    assert cache.past.get_seq_length() == len(ids)
    np.testing.assert_array_equal(cache.ids, ids)
    with pytest.raises(InputError):
        prefix_cache(tiny, np.zeros(0, dtype=np.int64))
    with pytest.raises(InputError):
        prefix_cache(tiny, np.zeros(tiny.context_length + 1, dtype=np.int64))


# ------------------------------------------------------------------------------------------ branch


def test_prefix_is_the_trunks_and_the_forced_token_is_the_kth_choice(tiny, trunk):
    scores = explain_completion(tiny, trunk).scores
    at = trunk.n_prompt + 3
    for k in (1, 2, 5):
        b = branch(tiny, trunk, at, choose=k, max_new_tokens=6)
        comp = b.completion
        np.testing.assert_array_equal(comp.ids[:at], trunk.ids[:at])
        np.testing.assert_array_equal(comp.start[:at], trunk.start[:at])
        assert comp.text[: comp.end[at - 1]] == trunk.text[: trunk.end[at - 1]]
        assert b.fork_index == at and b.forced_rank == k and b.forced_id == comp.ids[at]
        assert b.forced_id == scores.top_ids[at, k - 1]
        assert b.forced_prob == pytest.approx(scores.top_probs[at, k - 1], rel=1e-4)
        assert b.replaced_id == trunk.ids[at]
        assert b.prompt == comp.prompt == trunk.prompt and comp.n_prompt == trunk.n_prompt
        assert len(comp.ids) - at <= 6
        _check_spans(comp)


def test_choose_1_reproduces_a_greedy_trunk_token_for_token(tiny, trunk):
    same = branch(tiny, trunk, trunk.n_prompt, choose=1, max_new_tokens=20, stop_at_function_end=False)
    np.testing.assert_array_equal(same.completion.ids, trunk.ids)
    np.testing.assert_array_equal(same.completion.start, trunk.start)
    np.testing.assert_array_equal(same.completion.end, trunk.end)
    assert same.completion.text == trunk.text and same.completion.stop_reason == trunk.stop_reason
    for at in range(trunk.n_prompt + 1, len(trunk.ids), 4):  # from the middle: the budget counts from the fork
        mid = branch(tiny, trunk, at, choose=1, max_new_tokens=20 - (at - trunk.n_prompt), stop_at_function_end=False)
        np.testing.assert_array_equal(mid.completion.ids, trunk.ids)
        assert mid.completion.text == trunk.text


def test_the_cache_path_equals_a_full_re_read(tiny, trunk):
    for at in (1, 5, trunk.n_prompt, trunk.n_prompt + 4):
        b = branch(tiny, trunk, at, choose=2, max_new_tokens=10, stop_at_function_end=False)
        head = b.completion.ids[: at + 1].tolist()
        assert _generate(tiny, head, 9) == b.completion.ids.tolist()
        if at < trunk.n_prompt:  # a fork inside the prompt: the branch's prompt is the text before it
            assert b.completion.n_prompt == at and b.prompt == trunk.text[: trunk.end[at - 1]]


def test_sampling_is_seeded_like_generate(tiny, trunk):
    at = trunk.n_prompt
    b = branch(tiny, trunk, at, choose=2, max_new_tokens=12, temperature=0.8, top_p=0.9, seed=3,
               stop_at_function_end=False)
    again = branch(tiny, trunk, at, choose=2, max_new_tokens=12, temperature=0.8, top_p=0.9, seed=3,
                   stop_at_function_end=False)
    np.testing.assert_array_equal(b.completion.ids, again.completion.ids)
    head = b.completion.ids[: at + 1].tolist()
    assert _generate(tiny, head, 11, temperature=0.8, top_p=0.9, seed=3) == b.completion.ids.tolist()
    assert (b.settings.temperature, b.settings.top_p, b.settings.seed) == (0.8, 0.9, 3)
    assert b.to_dict()["settings"] == {"max_new_tokens": 12, "temperature": 0.8, "top_p": 0.9, "seed": 3,
                                       "language": "python", "stop_at_function_end": False}


def test_typed_text_forces_all_its_ids(tiny, trunk):
    at = trunk.n_prompt
    text = " + 1\n    return y"
    b = branch(tiny, trunk, at, token=text, max_new_tokens=30, stop_at_function_end=False)
    ids = tiny.tokenizer(text, add_special_tokens=False)["input_ids"]
    assert b.forced_ids.tolist() == ids and len(ids) > 1
    assert b.completion.ids[at:at + len(ids)].tolist() == ids
    assert b.completion.text.startswith(trunk.prompt + text)
    assert b.forced_rank == 0  # several tokens: no single rank
    scored = explain_completion(tiny, b.completion).scores
    assert b.forced_prob == pytest.approx(float(np.prod(scored.prob[at:at + len(ids)])), rel=1e-3)
    one = branch(tiny, trunk, at, token="x", max_new_tokens=3)
    assert one.forced_rank == int(explain_completion(tiny, one.completion).scores.rank[at])


def test_a_forced_end_of_sequence_token_ends_the_branch(tiny, trunk):
    at = trunk.n_prompt
    logits = prefix_cache(tiny, trunk.ids[:at]).logits
    eos = tiny.tokenizer.eos_token_id
    rank = int((logits > logits[eos]).sum()) + 1
    b = branch(tiny, trunk, at, choose=rank, max_new_tokens=10)
    assert b.forced_id == eos and b.completion.stop_reason == "eos"
    assert b.completion.special[-1] and b.completion.text == trunk.prompt
    explain_completion(tiny, b.completion)  # a special token: scored as such, no crash


def test_branches_reuse_the_kept_trunk_cache(tiny, trunk, monkeypatch):
    calls = []
    real = branch_mod.prefix_cache
    monkeypatch.setattr(branch_mod, "prefix_cache", lambda bundle, ids: calls.append(len(ids)) or real(bundle, ids))
    fresh = dataclasses.replace(tiny)  # a bundle of its own: nothing kept yet
    for at in (trunk.n_prompt, 3, len(trunk.ids) - 1):
        branch(fresh, trunk, at, choose=2, max_new_tokens=4)
    assert calls == [len(trunk.ids)]  # one forward pass over the trunk, then only new tokens
    cache = real(fresh, trunk.ids[: trunk.n_prompt])
    a = branch(fresh, trunk, trunk.n_prompt, choose=2, max_new_tokens=6, cache=cache)  # ends at the fork
    b = branch(fresh, trunk, trunk.n_prompt, choose=2, max_new_tokens=6)
    np.testing.assert_array_equal(a.completion.ids, b.completion.ids)
    with pytest.raises(InputError, match="other tokens"):
        branch(fresh, trunk, trunk.n_prompt + 5, choose=2, cache=cache)


def test_a_text_trunk_and_a_branch_of_a_branch(tiny):
    b = branch(tiny, PROMPT, 4, choose=2, max_new_tokens=5)
    ids = encode(tiny, PROMPT)[0]
    np.testing.assert_array_equal(b.completion.ids[:4], ids[:4])
    bb = branch(tiny, b, 6, choose=3, max_new_tokens=4)
    np.testing.assert_array_equal(bb.completion.ids[:6], b.completion.ids[:6])
    assert bb.forced_rank == 3 and bb.prompt == b.prompt
    # at the very end: nothing to replace, the branch extends the text
    end = branch(tiny, PROMPT, len(ids), choose=1, max_new_tokens=3)
    assert end.replaced_id == -1 and end.completion.text.startswith(PROMPT)


@pytest.mark.parametrize("kwargs,needle", [
    ({"at": 0, "choose": 1}, "outside the trunk"),
    ({"at": 10_000, "choose": 1}, "outside the trunk"),
    ({"at": 3, "choose": 0}, "choose from 1"),
    ({"at": 3, "choose": 321}, "320-token vocabulary"),
    ({"at": 3}, "exactly one of"),
    ({"at": 3, "choose": 2, "token": "x"}, "exactly one of"),
    ({"at": 3, "token": ""}, "empty"),
    ({"at": 3, "token": "x<|endoftext|>"}, "special token"),
    ({"at": 3, "choose": 1, "temperature": -1.0}, "temperature"),
    ({"at": 3, "choose": 1, "top_p": 0.0}, "top_p"),
    ({"at": 3, "choose": 1, "max_new_tokens": 0}, "max_new_tokens"),
])
def test_bad_requests_are_one_clear_error(tiny, trunk, kwargs, needle):
    with pytest.raises(InputError, match=needle) as err:
        branch(tiny, trunk, **kwargs)
    assert "\n" not in str(err.value)


# ------------------------------------------------------------------------------------------ scripted continuation


class _Scripted(torch.nn.Module):
    """The tiny model's forward (a real cache), with the logits replaced: token ``n + k`` of the sequence is
    ``script[k]`` for certain."""

    def __init__(self, model, n, script):
        super().__init__()
        self.inner, self.n, self.script, self.config = model, n, script, model.config

    def forward(self, input_ids=None, position_ids=None, **kwargs):
        out = self.inner(input_ids=input_ids, position_ids=position_ids, **kwargs)
        pos = position_ids if position_ids is not None else torch.arange(input_ids.shape[1])[None]
        logits = torch.full_like(out.logits, -1e4)
        for b in range(logits.shape[0]):
            for q in range(logits.shape[1]):
                k = int(pos[b, -logits.shape[1] + q]) + 1 - self.n
                if 0 <= k < len(self.script):
                    logits[b, q, self.script[k]] = 1e4
        out.logits = logits
        return out


def _scripted(tiny, prompt, continuation, extra=()):
    n = len(encode(tiny, prompt)[0])
    script = tiny.tokenizer(continuation, add_special_tokens=False)["input_ids"] + list(extra)
    return dataclasses.replace(tiny, model=_Scripted(tiny.model, n, script), name="scripted"), n


def test_stops_at_the_function_end_like_complete(tiny):
    prompt = "def f(x):\n    y = x + 1"
    bundle, n = _scripted(tiny, prompt, "\n    return y\n\nprint(f(2))\nprint(3)\n")
    b = branch(bundle, prompt, n, choose=1, max_new_tokens=40)
    assert b.completion.stop_reason == "function_end"
    assert b.completion.completion == "\n    return y\n\n"  # as asc.generate's scripted test cuts it
    assert not parse(b.completion.text).has_error
    _check_spans(b.completion)


def test_a_forced_text_that_ends_the_function_is_kept(tiny):
    prompt = "def f(x):\n    return x"
    bundle, n = _scripted(tiny, prompt, "\n    y = 2\n")
    b = branch(bundle, prompt, n, token="\nprint(1)\n", max_new_tokens=40)
    assert b.completion.stop_reason == "function_end"
    assert b.completion.completion == "\nprint(1)\n"


def test_stops_at_end_of_sequence(tiny):
    prompt = "def f(x):\n    y = x"
    bundle, n = _scripted(tiny, prompt, "\n    return y", extra=[tiny.tokenizer.eos_token_id, 5, 6])
    b = branch(bundle, prompt, n, choose=1, max_new_tokens=40)
    assert b.completion.stop_reason == "eos" and b.completion.completion == "\n    return y"
    assert not b.completion.special.any()


# ------------------------------------------------------------------------------------------ explore_forks


def test_explore_forks_is_one_batch_equal_to_branching_one_by_one(tiny, trunk, monkeypatch):
    forks = fork_points(explain_completion(tiny, trunk).scores)
    steps = []
    real_step = branch_mod._step
    monkeypatch.setattr(branch_mod, "_step", lambda *a: steps.append(a[1].shape[0]) or real_step(*a))
    got = explore_forks(tiny, trunk, forks, 8, 10, stop_at_function_end=False)
    assert len(got) == 8
    positions = [b.fork_index for b in got]
    assert len(set(positions)) == 8 and all(forks.is_fork[p] for p in positions)
    assert steps[0] == 8  # the eight rows step together
    assert len(steps) <= 2 + 10  # the choices, the forced tokens, then one call per new token
    monkeypatch.undo()
    for b in got:
        assert b.forced_id != trunk.ids[b.fork_index]
        assert b.forced_rank in (1, 2)
        alone = branch(tiny, trunk, b.fork_index, choose=b.forced_rank, max_new_tokens=10, stop_at_function_end=False)
        np.testing.assert_array_equal(alone.completion.ids, b.completion.ids)
        assert alone.forced_prob == pytest.approx(b.forced_prob, rel=1e-4)
    late = explore_forks(tiny, trunk, forks, 3, 4, generated_only=True)
    assert all(b.fork_index >= trunk.n_prompt for b in late) and len(late) == 3


def test_explore_forks_refuses_bad_requests(tiny, trunk):
    forks = fork_points(explain_completion(tiny, trunk).scores)
    with pytest.raises(InputError, match="1 to 8"):
        explore_forks(tiny, trunk, forks, 9)
    with pytest.raises(InputError, match="1 to 8"):
        explore_forks(tiny, trunk, forks, 0)
    other = fork_points(explain_completion(tiny, complete(tiny, "x = 1", 3)).scores)
    with pytest.raises(InputError, match="this trunk"):
        explore_forks(tiny, trunk, other, 2)


# ------------------------------------------------------------------------------------------ mean_value


def test_mean_value_over_the_nodes_from_a_token_on(tiny):
    ex = explain_completion(tiny, complete(tiny, PROMPT, 5))
    everything = ex.values[~np.isnan(ex.values)].mean()
    assert mean_value(ex) == pytest.approx(everything)
    last = ex.scores.n_tokens - 1
    nodes = {n for n in range(ex.tree.n_nodes) if last in ex.alignment.tokens_of(n).tolist()}
    assert mean_value(ex, last) == pytest.approx(np.nanmean(ex.values[sorted(nodes)]))
    assert math.isnan(mean_value(ex, ex.scores.n_tokens))


# ------------------------------------------------------------------------------------------ CLI

SRC = "def add(a, b):\n    s = a + b\n    return s\n"


def _asc(*args):
    return run_module("asc", "branch", *args, "--model", "tiny-random", timeout=300)


@pytest.mark.slow
def test_cli_branch_json_and_text(tmp_path):
    f = tmp_path / "a.py"
    f.write_text(SRC)
    out = _asc(str(f), "--at", "3:5", "--choose", "2", "--max-new", "6", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert set(doc) == {"fork", "trunk", "branch"}
    fork = doc["fork"]
    assert fork["forced_rank"] == 2 and fork["line"] == 2 and fork["column"] == 14
    at = fork["fork_index"]
    trunk_tokens, branch_tokens = doc["trunk"]["tokens"], doc["branch"]["tokens"]
    assert [t["text"] for t in trunk_tokens[:at]] == [t["text"] for t in branch_tokens[:at]]
    assert branch_tokens[at]["rank"] == 2 and branch_tokens[at]["text"] == fork["forced_text"]
    assert fork["replaced_text"] == trunk_tokens[at]["text"]
    assert {"tokens", "nodes", "snippet"} <= set(doc["branch"])
    text = _asc(str(f), "--at", "3:5", "--token", " * 2", "--max-new", "4")
    assert text.returncode == 0, text.stderr
    report = text.stdout.decode()
    assert "fork at token" in report and "typed, " in report and "mean AsC-Eval" in report
    assert "parses:" in report and "first divergence" in report


@pytest.mark.parametrize("args,needle", [
    (["--at", "9:1", "--choose", "2"], "outside"),
    (["--at", "2:40", "--choose", "2"], "outside"),
    (["--at", "1:1", "--choose", "2"], "no code before"),
    (["--at", "3:5", "--choose", "100000"], "vocabulary"),
    (["--at", "3:5", "--token", ""], "empty"),
    (["--at", "3:5", "--choose", "0"], "at least 1"),
    (["--at", "3", "--choose", "1"], "LINE:COL"),
    (["--at", "3:5", "--choose", "1", "--token", "x"], "not allowed with"),
    (["--at", "3:5", "--choose", "1", "--top-p", "0"], "--top-p: must be above 0"),  # refused when parsed
])
def test_cli_branch_bad_input_is_one_line(tmp_path, args, needle):
    f = tmp_path / "a.py"
    f.write_text(SRC)
    out = _asc(str(f), *args)
    err = out.stderr.decode()
    assert out.returncode == 2, err
    assert needle in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


# ------------------------------------------------------------------------------------------ SmolLM2


@pytest.mark.real
def test_smollm2_branches_a_humaneval_prompt(smol):
    prompt = ('def below_zero(operations: list) -> bool:\n    """Return True if the balance, starting at zero, '
              'falls below zero at any point.\n    >>> below_zero([1, 2, -4, 5])\n    True\n    """\n    balance = 0\n')
    trunk = complete(smol, prompt, 16)
    ex = explain_completion(smol, trunk)
    at = trunk.n_prompt
    b = branch(smol, trunk, at, choose=2, max_new_tokens=16, stop_at_function_end=False)
    np.testing.assert_array_equal(b.completion.ids[:at], trunk.ids[:at])
    assert b.forced_id == ex.scores.top_ids[at, 1] and b.forced_rank == 2
    assert _generate(smol, b.completion.ids[: at + 1].tolist(), 15) == b.completion.ids.tolist()
    same = branch(smol, trunk, at, choose=1, max_new_tokens=16)
    np.testing.assert_array_equal(same.completion.ids, trunk.ids)
    bex = explain_completion(smol, b.completion)
    assert not math.isnan(mean_value(bex, at))
    assert ast_diff(ex.tree, bex.tree).first_divergence is not None
    forks = fork_points(ex.scores)
    got = explore_forks(smol, trunk, forks, 3, 8, generated_only=False)
    assert len({g.fork_index for g in got}) == len(got) >= 1
