"""probes.sae.quality: the spliced cross-entropy is the clean one for an identity SAE and the ablated one for a zero SAE."""

from __future__ import annotations

import math

import pytest
import torch

from probes.sae.activations import encode_snippets, padded, resid_post, splice
from probes.sae.quality import evaluate_sae
from tests.probes.sae.conftest import FUNCTIONS, identity_sae, random_sae, zero_sae


def test_the_identity_sae_reconstructs_exactly():
    x = torch.randn(40, 32, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(identity_sae(32)(x), x)


@pytest.mark.parametrize("layer", [0, 1])
def test_spliced_ce_is_clean_ce_for_the_identity_and_ablated_ce_for_zeros(tiny, layer):
    q = evaluate_sae(identity_sae(32, layer=layer), tiny, FUNCTIONS, layer)
    assert q.n_tokens > 100 and q.n_snippets == 4
    assert q.ce_sae == pytest.approx(q.ce_clean, abs=1e-5)
    assert q.variance_explained == pytest.approx(1.0, abs=1e-6) and q.mse < 1e-10
    assert q.ce_recovered == pytest.approx(1.0, abs=1e-4)
    assert q.l0 <= 32 and q.dead_latents < 64
    z = evaluate_sae(zero_sae(32, layer=layer), tiny, FUNCTIONS, layer)
    assert z.ce_zero == pytest.approx(q.ce_zero) and z.ce_clean == pytest.approx(q.ce_clean)
    assert z.ce_sae == pytest.approx(z.ce_zero, abs=1e-5)
    assert abs(z.ce_zero - z.ce_clean) > 1e-3  # the splice changes the model's output: the checks above can fail
    assert z.ce_recovered == pytest.approx(0.0, abs=1e-4) and z.l0 == 0 and z.dead_latents == 4


def test_a_random_sae_lies_in_between_and_the_report_is_json_ready(tiny):
    q = evaluate_sae(random_sae(32, width=16, k=3), tiny, FUNCTIONS, 1)
    assert q.l0 == pytest.approx(3, abs=0.01) and q.variance_explained < 0.99
    assert q.ce_sae != pytest.approx(q.ce_clean, abs=1e-4)
    d = q.to_dict()
    assert set(d) >= {"variance_explained", "l0", "dead_latents", "ce_recovered"}
    assert all(v is None or math.isfinite(v) for v in d.values() if isinstance(v, float))


def test_resid_post_is_the_block_output_the_splice_replaces(tiny):
    snip = encode_snippets(tiny, FUNCTIONS[:1], 64)[0]
    ids, mask = padded(tiny, [snip.ids])
    x = resid_post(tiny, 0, ids, mask)
    seen = []
    with splice(tiny, 0, lambda h: seen.append(h.clone()) or h), torch.inference_mode():
        tiny.model(input_ids=ids, attention_mask=mask)
    assert torch.allclose(seen[0].float(), x)


def test_reading_a_layer_stops_the_pass_there(tiny):
    from asc.arch import model_insides

    later = []
    hook = model_insides(tiny).layers[1].register_forward_hook(lambda *a: later.append(1))
    try:
        ids, mask = padded(tiny, [encode_snippets(tiny, FUNCTIONS[:1], 64)[0].ids])
        resid_post(tiny, 0, ids, mask)
        assert later == []
        resid_post(tiny, 1, ids, mask)
        assert later == [1]
    finally:
        hook.remove()
