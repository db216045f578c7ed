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


def _reference_ig(bundle, ex, target, steps, baseline=None, alt=None):
    """Integrated gradients written out: Gauss-Legendre nodes and weights on [0, 1], one autograd call per node."""
    x = _embeds(bundle, ex.scores.ids[: target.last])
    base = torch.zeros_like(x) if baseline is None else baseline
    base[:, target.index:] = x[:, target.index:]
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


@pytest.mark.parametrize("baseline", ["zero", "pad"])
def test_integrated_gradients_equal_a_hand_written_gauss_legendre_sum(tiny, ex, at_return, baseline):
    got = attribute(tiny, SRC, at_return, "ig", steps=8, baseline=baseline, explanation=ex)
    pad = None
    if baseline == "pad":
        pad = _embeds(tiny, [tiny.tokenizer.pad_token_id or tiny.tokenizer.eos_token_id] * at_return.last)
    want = _reference_ig(tiny, ex, at_return, 8, pad)
    np.testing.assert_allclose(got.token_attr[: at_return.index], want[: at_return.index], rtol=1e-3, atol=1e-5)
    assert got.steps == 8 and got.baseline == baseline
    x = _embeds(tiny, ex.scores.ids[: at_return.last])
    base = torch.zeros_like(x) if pad is None else pad
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
    assert again[0][0] == at_return.index  # the module: one per token before the target (no special tokens)


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
    want = _reference_ig(tiny, ex, by_id, DEFAULT_STEPS, alt=by_id.contrast_id)
    np.testing.assert_allclose(got.token_attr[:i], want[:i], rtol=1e-3, atol=1e-5)
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
    assert np.isnan(got.token_attr[target.index:]).all() and not np.isnan(got.token_attr[: target.index]).any()
    want = _reference_ig(tiny, ex, target, 8)
    np.testing.assert_allclose(got.token_attr[: target.index], want[: target.index], rtol=1e-3, atol=1e-5)
    with pytest.raises(InputError, match="no predicted token"):
        node_target(tiny, ex, next(i for i in range(ex.tree.n_nodes) if ex.tree.start[i] == 0 and
                                   ex.tree.end[i] == 3))  # "def", the first token


def test_bad_settings_are_refused(tiny, ex, at_return):
    for kwargs, needle in (({"method": "shap"}, "method 'shap'"), ({"baseline": "mean"}, "baseline 'mean'"),
                           ({"steps": 0}, "steps=0")):
        with pytest.raises(InputError, match=needle):
            attribute(tiny, SRC, at_return, explanation=ex, **kwargs)
    with pytest.raises(InputError, match="outside the snippet's"):
        attribute(tiny, SRC, 10_000, explanation=ex)


@pytest.mark.real
@pytest.mark.xfail(strict=True, reason="measured: on SmolLM2 the target is rough along the straight path from the zero "
                   "(or pad) baseline: near zero the first token (the attention sink, no BOS here) flips the model "
                   "chaotically, and the rest wiggles by a nat per 0.05 of the path, so 16 Gauss-Legendre points leave "
                   "a 12-80% gap; see the docstring for the rules and baselines tried; benchmarks/bench_why.py prints "
                   "the steps that reach 1%")
def test_integrated_gradients_are_complete_on_smollm2():
    """The issue's claim: the attributions sum to target(input) - target(baseline) within 1% at the default step
    count. Kept as a strict xfail: it fails today (see the reason), and turns into a failure to look at once a
    path or rule makes it hold.

    Tried in session 37 (gap in % of the difference, targets " b" of ``add`` and a token of asc/concepts.py):
    holding the first token at its embedding removes the chaos near zero (zero baseline, 16 GL points: -102%
    and -4%); an adaptive trapezoid that bisects the interval whose exact error (f(b) - f(a), known from the
    forward values, minus its estimate) is largest: -6% and -10% at 16 gradients, +6% and -6% at 32; with the
    pad baseline -3% and +0.5% at 16. Only a baseline of the embeddings at half scale (not a meaningful
    baseline) is smooth enough (0.0% and 0.4%)."""
    from asc.models import load_model

    bundle = load_model("smollm2-135m")
    source = "def add(a, b):\n    return a + b\n"
    ex = explain(bundle, source)
    target = target_at(bundle, ex, 2, 16)  # "b" in "a + b"
    got = attribute(bundle, source, target, "ig", explanation=ex)
    assert got.steps == DEFAULT_STEPS
    gap = got.value - got.baseline_value
    assert abs(got.delta) <= 0.01 * abs(gap), (got.delta, gap)
