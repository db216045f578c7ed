"""asc.why.attribute and asc.why.targets: targets, gradient x input and integrated gradients against hand-written
references (torch autograd, our own Gauss-Legendre sum) on the tiny model, aggregation to nodes and categories, and
integrated gradients' completeness on the real SmolLM2."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from asc.errors import InputError
from asc.explain import explain
from asc.why.attribute import DEFAULT_STEPS, aggregate, attribute
from asc.why.targets import node_target, target_at, token_target
from tests.asc.why.conftest import COUNT_CHARS

SRC = COUNT_CHARS




def _log_p(bundle, embeds, positions, ids, alt=None):
    """Reference target: mean log p of ``ids`` at ``positions`` (minus log p(alt) at the first) from the full
    logits of a plain forward pass over input embeddings (B, L, H)."""
    logits = bundle.model(inputs_embeds=embeds).logits.float().log_softmax(-1)
    value = torch.stack([logits[:, p - 1, i] for p, i in zip(positions, ids, strict=True)], -1).mean(-1)
    return value - logits[:, positions[0] - 1, alt] if alt is not None else value


def _embeds(bundle, ids):
    with torch.no_grad():
        return bundle.model.get_input_embeddings()(torch.from_numpy(np.asarray(ids))[None]).float()


def _pad(bundle, n):
    """The pad baseline written out: the pad (else end-of-sequence) token's embedding at ``n`` positions."""
    tok = bundle.tokenizer
    return _embeds(bundle, [tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id] * n)


def _reference_ig(bundle, ex, target, steps, baseline=None, alt=None, hold_first=True):
    """Integrated gradients written out: Gauss-Legendre nodes and weights on [0, 1], one autograd call per node;
    the first token held at its embedding (the attention sink) unless ``hold_first`` is false."""
    x = _embeds(bundle, ex.scores.ids[: target.last])
    base = torch.zeros_like(x) if baseline is None else baseline
    base[:, target.index:] = x[:, target.index:]
    if hold_first:
        base[:, 0] = x[:, 0]
    nodes, weights = np.polynomial.legendre.leggauss(steps)
    total = torch.zeros_like(x)
    for a, w in zip((nodes + 1) / 2, weights / 2, strict=True):
        z = (base + float(a) * (x - base)).requires_grad_(True)
        (grad,) = torch.autograd.grad(_log_p(bundle, z, target.positions, target.ids, alt).sum(), z)
        total += float(w) * grad * (x - base)
    return total.sum(-1)[0].double().numpy()


def test_target_at_picks_the_token_starting_there_or_the_first_after(tiny, ex, at_return):
    s = ex.scores
    assert s.text[at_return.index].strip() == "count"
    assert SRC.split("\n")[5][11:].startswith("count")
    inside = target_at(tiny, ex, 6, 13)  # inside "count": the next token
    assert inside.index > at_return.index
    before = target_at(tiny, ex, 6, 1)  # the indentation of line 6: the first token starting at or after it
    assert before.index <= at_return.index and s.start[before.index] >= SRC.index("    return")
    with pytest.raises(InputError, match="outside the snippet"):
        target_at(tiny, ex, 99, 1)
    with pytest.raises(InputError, match="no prediction"):
        target_at(tiny, ex, 1, 1)


def test_gradient_x_input_equals_autograd(tiny, ex, at_return):
    got = attribute(tiny, SRC, at_return, "grad", explanation=ex)
    x = _embeds(tiny, ex.scores.ids[: at_return.index]).requires_grad_(True)
    value = _log_p(tiny, x, at_return.positions, at_return.ids)
    (grad,) = torch.autograd.grad(value.sum(), x)
    want = (grad * x).sum(-1)[0].detach().double().numpy()
    np.testing.assert_allclose(got.token_attr[: at_return.index], want, rtol=1e-4, atol=1e-6)
    assert np.isnan(got.token_attr[at_return.index:]).all()  # nothing from the target on
    assert got.value == pytest.approx(at_return.logprob, abs=1e-4) and got.steps == 0
    assert math.isnan(got.baseline_value)


@pytest.mark.parametrize(("baseline", "hold"), [("zero", True), ("pad", True), ("pad", False)])
def test_integrated_gradients_equal_a_hand_written_gauss_legendre_sum(tiny, ex, at_return, baseline, hold):
    assert not ex.scores.special[0]  # no BOS: the first token is the sink that is held
    got = attribute(tiny, SRC, at_return, "ig", steps=8, baseline=baseline, explanation=ex, hold_sink=hold)
    pad = None
    if baseline == "pad":
        pad = _pad(tiny, at_return.last)
    want = _reference_ig(tiny, ex, at_return, 8, None if pad is None else pad.clone(), hold_first=hold)
    first = 1 if hold else 0
    np.testing.assert_allclose(got.token_attr[first: at_return.index], want[first: at_return.index], rtol=1e-3,
                               atol=1e-5)
    assert np.isnan(got.token_attr[0]) == hold and got.sink_held == hold
    doc = got.to_dict()
    assert doc["target"]["sink_held"] is hold and (doc["tokens"][0]["attribution"] is None) == hold
    assert got.steps == 8 and got.baseline == baseline
    x = _embeds(tiny, ex.scores.ids[: at_return.last])
    base = torch.zeros_like(x) if pad is None else pad.clone()
    if hold:
        base[:, 0] = x[:, 0]
    with torch.no_grad():
        assert got.baseline_value == pytest.approx(float(_log_p(tiny, base, at_return.positions, at_return.ids)),
                                                   abs=1e-4)


def test_a_node_is_the_sum_of_its_tokens_and_a_category_of_its_tokens(tiny, ex, at_return):
    got = attribute(tiny, SRC, at_return, "ig", explanation=ex)
    al = ex.alignment
    for node in range(ex.tree.n_nodes):
        vals = got.token_attr[al.tokens_of(node)]
        if np.isnan(vals).all():
            assert math.isnan(got.node_attr[node])
        else:
            assert got.node_attr[node] == pytest.approx(np.nansum(vals), abs=1e-9)
    assert got.node_attr[0] == pytest.approx(np.nansum(got.token_attr))  # the module holds every token
    names = [i for i in range(ex.tree.n_nodes) if ex.node_category[i] == "Natural Language"]
    tokens = np.flatnonzero(al.covered_tokens(np.array(names), ex.scores.n_tokens))
    assert got.category_attr["Natural Language"] == pytest.approx(np.nansum(got.token_attr[tokens]))
    share = np.nansum(np.abs(got.token_attr[tokens])) / np.nansum(np.abs(got.token_attr))
    assert got.category_share["Natural Language"] == pytest.approx(share)
    assert math.isnan(got.category_attr["Exceptions"]) and math.isnan(got.category_share["Exceptions"])
    again = aggregate(ex, np.where(np.isnan(got.token_attr), np.nan, 1.0))  # every attributed token counts 1
    assert again[0][0] == at_return.index - 1  # the module: one per token before the target but the held sink


def test_contrast_target(tiny, ex, at_return):
    s, i = ex.scores, at_return.index
    alt_k = 1 if int(s.top_ids[i][0]) == int(s.ids[i]) else 0
    by_text = token_target(tiny, ex, i, contrast=s.top_text[i][alt_k])
    by_id = token_target(tiny, ex, i, contrast=int(s.top_ids[i][alt_k]))
    assert by_text.contrast_id == by_id.contrast_id == int(s.top_ids[i][alt_k])
    assert by_text.value == pytest.approx(s.logprob[i] - math.log(s.top_probs[i][alt_k]), abs=1e-5)
    got = attribute(tiny, SRC, by_id, "ig", explanation=ex)
    with torch.no_grad():
        direct = _log_p(tiny, _embeds(tiny, s.ids[:i]), (i,), (int(s.ids[i]),), by_id.contrast_id)
    assert got.value == pytest.approx(float(direct), abs=1e-4)
    want = _reference_ig(tiny, ex, by_id, DEFAULT_STEPS, _pad(tiny, by_id.last), alt=by_id.contrast_id)
    np.testing.assert_allclose(got.token_attr[1:i], want[1:i], rtol=1e-3, atol=1e-5)
    assert got.to_dict()["target"]["contrast"] == by_id.contrast
    with pytest.raises(InputError, match="the token itself"):
        token_target(tiny, ex, i, contrast=int(s.ids[i]))
    with pytest.raises(InputError, match="tokens for this model; give one token"):
        token_target(tiny, ex, i, contrast="count = count + 1")


def test_node_target_is_the_mean_over_its_tokens_and_attributes_only_before_it(tiny, ex):
    node = next(i for i in range(ex.tree.n_nodes) if ex.tree.type[i] == "augmented_assignment")
    target = node_target(tiny, ex, node)
    tokens = ex.alignment.tokens_of(node)
    assert target.positions == tuple(tokens.tolist()) and target.node == node
    assert target.logprob == pytest.approx(float(np.mean(ex.scores.logprob[tokens])))
    got = attribute(tiny, SRC, target, "ig", steps=8, explanation=ex)
    assert got.value == pytest.approx(target.logprob, abs=1e-4)
    assert np.isnan(got.token_attr[target.index:]).all() and not np.isnan(got.token_attr[1: target.index]).any()
    assert np.isnan(got.token_attr[0])  # the held sink
    want = _reference_ig(tiny, ex, target, 8, _pad(tiny, target.last))
    np.testing.assert_allclose(got.token_attr[1: target.index], want[1: target.index], rtol=1e-3, atol=1e-5)
    with pytest.raises(InputError, match="no predicted token"):
        node_target(tiny, ex, next(i for i in range(ex.tree.n_nodes) if ex.tree.start[i] == 0 and
                                   ex.tree.end[i] == 3))  # "def", the first token


def test_auto_steps_double_until_the_gap_is_within_one_percent(tiny, ex, at_return, monkeypatch):
    import asc.why.attribute as module

    monkeypatch.setattr(module, "DEFAULT_STEPS", 1)  # start at 1 point: the tiny model needs a few doublings
    got = attribute(tiny, SRC, at_return, "ig", steps="auto", explanation=ex)
    n = got.steps
    assert n > 1 and n & (n - 1) == 0  # 1, 2, 4, ...: some doublings ran
    assert got.relative_gap <= 0.01 or n == module.AUTO_MAX_STEPS
    alone = attribute(tiny, SRC, at_return, "ig", steps=n, explanation=ex)
    np.testing.assert_array_equal(got.token_attr, alone.token_attr)  # the last run's result, as a plain run
    assert attribute(tiny, SRC, at_return, "ig", steps=n // 2, explanation=ex).relative_gap > 0.01
    assert attribute(tiny, SRC, at_return, "grad", steps="auto", explanation=ex).steps == 0


def test_progress_counts_the_path_points_of_each_round_and_a_raise_stops_the_work(tiny, ex, at_return, monkeypatch):
    import asc.why.attribute as module

    monkeypatch.setattr(module, "DEFAULT_STEPS", 1)
    seen: list[tuple[str, int, int]] = []
    got = attribute(tiny, SRC, at_return, "ig", steps="auto", explanation=ex,
                    on_progress=lambda stage, done, total: seen.append((stage, done, total)))
    rounds = [t for _, d, t in seen if d == t]  # each round reports reaching its points
    assert rounds[-1] == got.steps and rounds == [2 ** i for i in range(len(rounds))]
    assert all(0 <= d <= t for _, d, t in seen)
    for total in rounds:  # each round's one batch: reported before its forward (0 done) and after it (all done)
        assert [d for _, d, t in seen if t == total] == [0, total], seen
    assert "gap at 1 points" in next(s for s, _, t in seen if t == 2)  # the round before's gap, in words
    assert seen[0][0] == "integrated gradients, 1 path points"

    class Stop(Exception):
        pass

    def stop(stage: str, done: int, total: int) -> None:
        raise Stop  # what the inspector's Cancel does (Streamlit's rerun exception, raised in the callback)

    for method in ("ig", "grad", "occlusion"):
        with pytest.raises(Stop):
            attribute(tiny, SRC, at_return, method, steps=4, explanation=ex, on_progress=stop)


def test_bad_settings_are_refused(tiny, ex, at_return):
    for kwargs, needle in (({"method": "shap"}, "method 'shap'"), ({"baseline": "mean"}, "baseline 'mean'"),
                           ({"steps": 0}, "steps=0"), ({"steps": "many"}, "or 'auto'"), ({"steps": True}, "steps=True")):
        with pytest.raises(InputError, match=needle):
            attribute(tiny, SRC, at_return, explanation=ex, **kwargs)
    with pytest.raises(InputError, match="outside the snippet's"):
        attribute(tiny, SRC, 10_000, explanation=ex)


@pytest.fixture(scope="module")
def smollm2_add():
    """SmolLM2, ``add``'s explanation and the target " b" of ``return a + b`` (no BOS: the first token is the sink)."""
    from asc.models import load_model

    bundle = load_model("smollm2-135m")
    source = "def add(a, b):\n    return a + b\n"
    ex = explain(bundle, source)
    assert not ex.scores.special[0]
    return bundle, source, ex, target_at(bundle, ex, 2, 16)


@pytest.mark.real
@pytest.mark.xfail(strict=True, reason="measured: at 16 Gauss-Legendre points the straight path from any meaningful "
                   "baseline tried leaves a gap of tens of percent on SmolLM2 (the target changes sharply over a "
                   "few hundredths of the path); the default path needs a few hundred points (the test below, and "
                   "benchmarks/bench_why.py); see the docstring for the rules and baselines tried")
def test_integrated_gradients_are_complete_at_the_default_steps_on_smollm2(smollm2_add):
    """The issue's claim: the attributions sum to target(input) - target(baseline) within 1% at the default step
    count. Kept as a strict xfail: it fails today (see the reason), and turns into a failure to look at once a
    path or rule makes it hold.

    Tried (gap in % of the difference; targets " b" of ``add`` and tokens of asc/concepts.py and asc/align.py):
    session 37: an adaptive trapezoid that bisects the interval whose exact error (f(b) - f(a), known from the
    forward values, minus its estimate) is largest (-6% and -10% at 16 gradients, +6% and -6% at 32); a baseline of
    the embeddings at half scale is smooth enough (0.0% and 0.4%) but explains nothing. Session 40: the mean
    embedding as baseline. Session 42, on 14 targets over 3 snippets: the first token (the attention sink) held or
    moved, zero or pad baseline. Only the sink held makes more points help; with the pad baseline the median gap
    was 21% at 16 points, 4% at 64, 0.2% at 128 and 0.0% at 256 (13 of 14 within 1%); with zeros 4.5% at 128; with
    the sink moved 65% (pad) and 204% (zero) at 128."""
    bundle, source, ex, target = smollm2_add
    got = attribute(bundle, source, target, "ig", explanation=ex)
    assert got.steps == DEFAULT_STEPS
    assert got.relative_gap <= 0.01, (got.delta, got.value - got.baseline_value)


@pytest.mark.real
def test_the_held_sink_makes_integrated_gradients_complete_with_more_steps_on_smollm2(smollm2_add):
    """The default path (pad baseline, the first token held) reaches 1% at 128 points on the target " a" of
    ``return a + b`` (0.2% measured; 3.9% at 64); the same baseline with the first token moved does not come near it
    at the same count (108% measured): the sink, not the rule, makes the path rough. (On the target " b" after it the
    default path needs 256 points: 2.0% at 128; the sink moved, 62% at 256.)"""
    bundle, source, ex, _ = smollm2_add
    target = target_at(bundle, ex, 2, 12)
    assert target.text == " a"
    held = attribute(bundle, source, target, "ig", steps=128, explanation=ex)
    assert held.sink_held and np.isnan(held.token_attr[0]) and held.baseline == "pad"
    assert held.relative_gap <= 0.01, (held.delta, held.value - held.baseline_value)
    moved = attribute(bundle, source, target, "ig", steps=128, explanation=ex, hold_sink=False)
    assert not moved.sink_held and not np.isnan(moved.token_attr[0])
    assert moved.relative_gap > 0.1, (moved.delta, moved.value - moved.baseline_value)
