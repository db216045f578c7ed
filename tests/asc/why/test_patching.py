"""asc.why.patching and asc.why.residual: activation patching of a corruption, layer x node, on the tiny model (and
one real SmolLM2 check); the token alignment of two runs; ``python -m asc intervene``."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from asc.errors import InputError
from asc.scores import encode
from asc.syntax import parse
from asc.why.corrupt import Corruption, Edit, corrupt
from asc.why.patching import align_tokens, default_target, patch, target_values
from asc.why.residual import record
from tests.helpers import run_module

SRC = ("def count_chars(string, character):\n    count = 0\n    for letter in string:\n"
       "        if letter == character:\n            count = count + 1\n    return count\n")


def _same_length_rename(bundle, name: str = "letter"):
    """A rename of ``name`` that keeps every token count (so every position aligns)."""
    for new in ("item", "elem", "thing", "value", "entry", "char", "x", "c"):
        c = corrupt(SRC, f"rename:{name}:{new}")
        if len(encode(bundle, c.corrupted)[0]) == len(encode(bundle, SRC)[0]):
            return c
    raise AssertionError("no same-length rename found")


@pytest.fixture(scope="module")
def same(tiny):
    return _same_length_rename(tiny)


def test_patching_every_position_restores_the_clean_target_at_every_layer(tiny, same):
    p = patch(tiny, same, spans=[0])  # the root: every token
    assert abs(p.clean_value - p.corrupted_value) > 1e-4  # the corruption moves the target
    assert p.n_positions[0] == len(encode(tiny, SRC)[0])  # every token, aligned in both runs
    np.testing.assert_allclose(p.corrupted_value + p.effect[:, 0], p.clean_value, atol=1e-5)
    np.testing.assert_allclose(p.all_restored, 1.0, atol=1e-3)
    assert (p.aligned == np.arange(len(p.aligned))).all() and not len(p.unaligned_corrupted) and not p.note


def test_patching_reports_the_two_runs_and_each_layer(tiny, same):
    seen: list[tuple[str, int, int]] = []
    p = patch(tiny, same, spans=[0], on_progress=lambda stage, done, total: seen.append((stage, done, total)))
    n = len(p.layers)
    assert [d for _, d, _ in seen] == list(range(n + 2)) and {t for _, _, t in seen} == {n + 1}
    assert seen[-1][0] == f"layer {n} of {tiny.n_layers} patched"


def test_patching_nothing_leaves_the_corrupted_value(tiny, same):
    ids = encode(tiny, same.corrupted)[0]
    runs = record(tiny, ids, "cached")
    target = default_target(tiny, SRC)
    empty = (np.zeros(0, dtype=np.int64), torch.zeros(0, runs.inputs[0].shape[-1]))
    for layer in range(runs.n_layers):
        got = runs.run(layer, [empty, empty], target - 1, int(ids[target]))
        np.testing.assert_allclose(got, runs.logprobs[target - 1], atol=1e-6)
    tree = parse(SRC)
    name = tree.type.index("identifier")  # count_chars, before the first edit: the runs are equal there
    first = patch(tiny, same, spans=[name])
    assert (first.effect == 0).all()


def test_a_corruption_that_changes_nothing_has_zero_effect_everywhere(tiny):
    tree = parse(SRC)
    leaves = [n for n in range(tree.n_nodes) if tree.named[n] and not tree.named[tree.children(n)].any()]
    p = patch(tiny, Corruption("none", "no change", SRC, SRC, ()), spans=leaves)
    assert p.restored.shape == (2, len(leaves))
    assert (p.effect == 0).all() and p.clean_value == p.corrupted_value
    assert np.isnan(p.restored).all() and "does not change the target" in p.note


def _check_cached_equals_hooked(bundle, corruption, layers):
    clean_ids, bad_ids = encode(bundle, corruption.source)[0], encode(bundle, corruption.corrupted)[0]
    cached, hooked = record(bundle, bad_ids, "cached"), record(bundle, bad_ids, "hooks")
    clean = record(bundle, clean_ids, "hooks")
    np.testing.assert_allclose(cached.logprobs, hooked.logprobs, atol=1e-6)
    t = len(bad_ids) - 2
    rng = np.random.default_rng(0)
    for layer in layers:
        rows = [(pos, clean.inputs[layer][pos]) for pos in
                (np.array([0]), np.sort(rng.choice(t, 4, replace=False)), np.arange(1, t))]
        rows.append((np.zeros(0, dtype=np.int64), clean.inputs[layer][:0]))
        a = cached.run(layer, rows, t, int(bad_ids[t + 1]))
        b = hooked.run(layer, rows, t, int(bad_ids[t + 1]))
        np.testing.assert_allclose(a, b, atol=1e-5)
        assert abs(a[-1] - cached.logprobs[t]) < 1e-5  # nothing patched: the full pass's value
    assert cached.layer_runs < hooked.layer_runs or layers == [0]


def test_the_run_from_a_layer_equals_a_full_hooked_pass(tiny, same):
    _check_cached_equals_hooked(tiny, same, [0, 1])


@pytest.mark.real
def test_the_run_from_a_layer_equals_a_full_hooked_pass_on_smollm2():
    from asc.models import load_model

    bundle = load_model("smollm2-135m")
    short = Corruption("literal", "0 to 1", "n = 0\nn += 1\n", "n = 1\nn += 1\n", (Edit(4, 5, "0", "1"),))
    _check_cached_equals_hooked(bundle, short, [0, 11, 29])


def test_unaligned_positions_are_skipped_and_reported(tiny):
    c = corrupt(SRC, "rename:letter:letter_x")
    clean, bad = encode(tiny, SRC), encode(tiny, c.corrupted)
    assert len(bad[0]) > len(clean[0])  # the rename adds tokens
    p = patch(tiny, c)
    assert len(p.unaligned_corrupted) >= len(bad[0]) - len(clean[0]) and "no counterpart" in p.note
    ok = p.aligned >= 0
    assert (bad[0][ok] == clean[0][p.aligned[ok]]).all() or set(p.skipped)  # outside edits: the same tokens
    assert np.isnan(p.restored).all(axis=0).sum() == len(p.skipped) > 0
    assert p.target["corrupted_index"] - p.target["clean_index"] == len(bad[0]) - len(clean[0])


def test_token_alignment_pairs_tokens_across_a_length_change(tiny):
    c = Corruption("literal", "0 to 12345", "x = 0\ny = x\n", "x = 12345\ny = x\n", (Edit(4, 5, "0", "12345"),))
    clean, bad = encode(tiny, c.source), encode(tiny, c.corrupted)
    aligned = align_tokens(c, clean, bad)
    text = lambda tok, src, i: src[tok[1][i]:tok[2][i]]  # noqa: E731
    for j, i in enumerate(aligned):
        if i >= 0:
            assert clean[0][i] == bad[0][j] or 4 <= clean[1][i] < 5
    assert text(bad, c.corrupted, len(bad[0]) - 1) == text(clean, c.source, aligned[-1])  # the end lines up


def test_target_values_and_refusals(tiny, same):
    v = target_values(tiny, same)
    p = patch(tiny, same, layers=[1])
    assert abs(v["clean_value"] - p.clean_value) < 1e-5 and abs(v["corrupted_value"] - p.corrupted_value) < 1e-5
    assert p.restored.shape == (1, len(p.node_ids)) and list(p.layers) == [1]
    inside = default_target(tiny, SRC, same.edits[0].start - 1)  # ' letter', which 'letter_x' splits
    with pytest.raises(InputError, match="inside the corruption"):
        patch(tiny, corrupt(SRC, "rename:letter:letter_x"), inside)
    with pytest.raises(InputError, match="layers"):
        patch(tiny, same, layers=[5])


def test_intervene_command_json_and_one_line_errors(tmp_path):
    f = tmp_path / "s.py"
    f.write_text(SRC)
    out = run_module("asc", "intervene", str(f), "--corrupt", "rename:letter", "--patch", "--json", "--model",
                     "tiny-random")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) == {"corruption", "target", "effects", "patching"}
    assert {"clean_value", "corrupted_value", "text"} <= set(data["target"])
    pat = data["patching"]
    assert len(pat["restored"]) == len(pat["layers"]) == 2 and len(pat["restored"][0]) == len(pat["spans"])
    for args in (("--corrupt", "rename:nope"), ("--corrupt", "operator:99:1"),
                 ("--corrupt", "rename:letter", "--at", "99:1"), ("--corrupt", "rename:letter", "--at", "0:1")):
        bad = run_module("asc", "intervene", str(f), *args, "--model", "tiny-random")
        assert bad.returncode == 2 and len(bad.stderr.decode().strip().splitlines()) == 1, bad.stderr


def test_at_picks_the_same_token_as_attribute(tiny):
    """intervene --at and attribute --at name one token for one position: the token whose first visible character
    is there (a position inside a word's leading space or letters picks that word), else the next."""
    from asc.explain import explain
    from asc.why.targets import line_col_offset, target_at

    ex = explain(tiny, SRC)
    lines = SRC.splitlines()
    for line in range(1, len(lines) + 1):
        for col in range(1, len(lines[line - 1]) + 1, 3):
            try:
                want = target_at(tiny, ex, line, col).index
            except InputError:
                continue
            assert default_target(tiny, SRC, line_col_offset(SRC, line, col)) == want, (line, col)


def test_a_target_before_the_corruption_is_refused_naming_the_edit(tiny):
    """A target reads only the text before it: a corruption after it cannot change it (intervene printed 0.000)."""
    c = corrupt(SRC, "literal:5:29")  # `count + 1` on line 5
    early = default_target(tiny, SRC, SRC.index("letter"))
    with pytest.raises(InputError, match=r"comes before the corruption's first edit \(at 5:29\)"):
        target_values(tiny, c, early)
    with pytest.raises(InputError, match="give --at a position after the edit"):
        patch(tiny, c, early)


def test_a_snippet_longer_than_the_context_is_patched_up_to_it_and_a_target_past_it_is_refused(tiny):
    """The tiny model reads 64 tokens. A snippet past that runs up to the context (a target inside it reads nothing
    later) with a note, equal to patching the snippet cut where the context ends; a target past it is one message."""
    long_src = SRC + "".join(f"\n\ndef more_{k}(values):\n    return [v * {k} for v in values]\n" for k in range(6))
    assert len(encode(tiny, long_src)[0]) > tiny.context_length
    c = corrupt(long_src, "rename:letter:c")
    target = default_target(tiny, SRC)
    p = patch(tiny, c, target, spans="changed")
    assert "longer than the model's context of 64 tokens" in p.note
    short = patch(tiny, corrupt(SRC, "rename:letter:c"), target, spans="changed")
    assert p.clean_value == pytest.approx(short.clean_value, abs=1e-5)
    np.testing.assert_allclose(p.effect, short.effect, atol=1e-5)
    last = default_target(tiny, long_src)
    with pytest.raises(InputError, match="past the model's context of 64 tokens: pick a token nearer the start"):
        patch(tiny, c, last)
