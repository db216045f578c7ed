"""probes.sae.train: a tiny TopK SAE trains, saves SAELens's layout with provenance, and resumes from its checkpoint."""

from __future__ import annotations

import json

import pytest
import torch

from asc.errors import InputError
from probes.sae import TrainSettings, load_sae, train_sae
from probes.sae.activations import stream_activations
from probes.sae.train import CHECKPOINT_FILE, PROVENANCE_FILE, default_lr
from tests.probes.sae.conftest import FUNCTIONS


def _settings(**kw):
    base = dict(model="tiny-random", layer=1, corpus="funcs", tokens=1024, width=48, k=4, batch_size=64,
                buffer_tokens=256, checkpoint_every=4)
    return TrainSettings(**{**base, **kw})


def test_training_lowers_the_loss_and_writes_the_folder(tiny, tmp_path):
    losses = []
    r = train_sae(tiny, FUNCTIONS, _settings(), tmp_path, on_progress=lambda d, t, loss: losses.append(loss))
    assert r.tokens >= 1024 and r.steps == len(losses) == 16 and not r.resumed
    assert sum(losses[-4:]) < sum(losses[:4])
    sae = load_sae(tmp_path)
    assert (sae.cfg.d_in, sae.cfg.d_sae, sae.cfg.k, sae.cfg.layer) == (32, 48, 4, 1)
    assert torch.allclose(sae.W_dec.norm(dim=1) * 0 + 1, torch.ones(48))  # cfg read back; rows below
    prov = json.loads((tmp_path / PROVENANCE_FILE).read_text())
    for key in ("model", "layer", "corpus", "tokens", "seed", "commit", "versions", "hook_name", "settings"):
        assert key in prov, key
    assert prov["versions"]["torch"] and prov["model"] == "tiny-random" and prov["complete"]
    # the input scale is folded into the weights: decoder rows have norm 1 / scale, all alike
    norms = sae.W_dec.norm(dim=1)
    assert torch.allclose(norms, torch.full_like(norms, 1 / prov["scale_folded"]), rtol=1e-4)


def test_a_stopped_run_resumes_from_its_checkpoint(tiny, tmp_path):
    steps = []
    first = train_sae(tiny, FUNCTIONS, _settings(), tmp_path, should_stop=lambda: len(steps) >= 6,
                      on_progress=lambda d, t, loss: steps.append(d))
    assert first.steps == 6 and (tmp_path / CHECKPOINT_FILE).exists()
    assert not json.loads((tmp_path / PROVENANCE_FILE).read_text())["complete"]
    second = train_sae(tiny, FUNCTIONS, _settings(), tmp_path)
    assert second.resumed and second.steps == 16 and second.tokens == 1024
    again = train_sae(tiny, FUNCTIONS, _settings(), tmp_path)  # finished: nothing to do (make sae runs twice)
    assert again.resumed and again.steps == 16 and again.seconds == 0
    with pytest.raises(InputError, match="other settings: width=48"):
        train_sae(tiny, FUNCTIONS, _settings(width=64), tmp_path)
    assert train_sae(tiny, FUNCTIONS, _settings(tokens=1280), tmp_path).steps == 20  # more tokens: it goes on


def test_the_stream_is_bounded_shuffled_and_counts_snippets(tiny):
    stream = stream_activations(tiny, 0, FUNCTIONS, batch_size=32, buffer_tokens=128, seed=0)
    batches = [next(stream) for _ in range(12)]
    assert all(b.shape == (32, 32) for b, _ in batches)
    reads = [r for _, r in batches]
    assert reads == sorted(reads) and reads[-1] > len(FUNCTIONS)  # it cycles through the corpus


def test_default_learning_rate():
    assert default_lr(2**14) == pytest.approx(2e-4) and default_lr(2**12) == pytest.approx(4e-4)
