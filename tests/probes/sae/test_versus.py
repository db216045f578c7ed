"""probes.sae.versus: the best single latent against the linear probe, on crafted matrices and the tiny model."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from asc.errors import InputError
from probes.features import extract_features
from probes.inspect.linear import train_probes
from probes.inspect.taskfile import Task
from probes.sae import best_latent, versus_features, versus_probe
from tests.probes.sae.conftest import random_sae


def _task(y: np.ndarray, labels: tuple[str, ...] = ("no", "yes"), texts: list[str] | None = None) -> Task:
    """A task over ``y`` split 60/20/20 by position (tr tr tr va te, repeated)."""
    split = np.array(["tr", "tr", "tr", "va", "te"] * (len(y) // 5 + 1))[: len(y)]
    return Task("X", labels, tuple(texts or [str(i) for i in range(len(y))]), y, split)


def _sparse(rng: np.random.Generator, n: int, width: int) -> np.ndarray:
    return np.where(rng.random((n, width)) < 0.05, rng.random((n, width)) * 3, 0.0)


def test_a_latent_that_carries_the_label_is_found_and_scores_like_the_probe():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    latents = _sparse(rng, 200, 64)
    latents[:, 17] = np.where(y == 1, 0.5 + rng.random(200), 0.0)  # fires exactly on "yes"
    features = rng.normal(size=(200, 4))
    features[:, 3] += 8 * (2 * y - 1)
    result = versus_features(features, latents, _task(y), n_boot=200)
    assert result.latent.tolist() == [17] and result.latent_train_accuracy[0] == 1.0
    assert result.latent_accuracy[0] == 1.0 and result.probe_accuracy[0] == 1.0
    assert result.gap_ci[0].tolist() == [0.0, 0.0] and result.latent_ci[0].tolist() == [1.0, 1.0]
    assert result.rule(0).describe(("no", "yes")) == "latent 17: <= 0 no; > 0 yes"
    assert 0.3 < result.majority[0] < 0.7


def test_a_label_spread_over_several_latents_goes_to_the_probe():
    """y is the sign of a sum of six latents: each alone says little, a linear probe reads them all."""
    rng = np.random.default_rng(1)
    latents = np.maximum(rng.normal(size=(500, 12)), 0)
    y = (latents[:, :6].sum(axis=1) > np.median(latents[:, :6].sum(axis=1))).astype(int)
    result = versus_features(latents, latents, _task(y), n_boot=500)
    assert result.probe_accuracy[0] > 0.9 and result.latent_accuracy[0] < 0.8
    assert result.gap_ci[0, 0] > 0.1  # the probe wins beyond the bootstrap's doubt


def test_a_latent_whose_size_counts_the_class_gets_one_interval_per_class():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 3, 300)
    latents = _sparse(rng, 300, 20)
    latents[:, 4] = np.where(y == 0, 0.0, y + rng.random(300) * 0.5)  # 0: silent; 1: about 1.2; 2: about 2.2
    rule = best_latent(latents, y, 3)
    assert rule.latent == 4 and rule.train_accuracy == 1.0 and rule.leaves.tolist() == [0, 1, 2]
    assert rule.cuts[0] == 0 and 1.0 <= rule.cuts[1] < 2.0  # between the two classes' values
    reverse = best_latent(latents, np.where(y == 0, 1, 0), 2)  # silent means class 1: the direction flips
    assert reverse.latent == 4 and reverse.leaves.tolist() == [1, 0] and reverse.train_accuracy == 1.0


def test_the_best_stump_is_the_exhaustive_one():
    """On few distinct values every threshold is a candidate: the dynamic program equals a brute-force search."""
    rng = np.random.default_rng(3)
    for _ in range(30):
        n, width = int(rng.integers(5, 40)), int(rng.integers(1, 12))
        latents = np.where(rng.random((n, width)) < 0.5, rng.random((n, width)).round(1), 0.0)
        y = rng.integers(0, 2, n)
        best = max(max(a, 1 - a) for j in range(width) for t in np.r_[-1, latents[:, j]]
                   for a in [((latents[:, j] > t) == y).mean()])
        rule = best_latent(latents, y, 2)
        assert rule.train_accuracy == pytest.approx(best)
        assert (rule.predict(latents) == y).mean() == pytest.approx(rule.train_accuracy)


def test_exports(tmp_path):
    rng = np.random.default_rng(4)
    y = rng.integers(0, 2, 100)
    result = versus_features(rng.normal(size=(100, 4)), _sparse(rng, 100, 8), _task(y), n_boot=50)
    row = json.loads(result.export(tmp_path / "v.json").read_text())["tasks"][0]
    assert row["task"] == "X" and row["latent"] == int(result.latent[0]) and len(row["probe_ci"]) == 2
    assert result.export(tmp_path / "v.csv").read_text().startswith("task,n_classes,")
    assert {"probe_lo", "latent_hi", "gap_lo", "latent_rule"} <= set(result.to_frame().columns)
    with pytest.raises(InputError, match="one of each per sample"):
        versus_features(np.zeros((99, 4)), np.zeros((100, 8)), _task(y))


def test_the_tiny_model_end_to_end(tiny):
    """The states are INSPECT's (layer 0's output = INSPECT's layer 1, last token); the probe and the latent's rule
    score on them as reported; one-token texts are pooled at the first token, which the SAE is not read at."""
    texts = [f"count = {i}\n" if i % 2 else f"return x + {i}\n" for i in range(58)] + ["x", "a"]
    y = np.array([i % 2 for i in range(58)] + [1, 0])
    task = _task(y, ("return", "count"), texts)
    assert [len(tiny.tokenizer(t)["input_ids"]) for t in texts[-2:]] == [1, 1]
    sae = random_sae(32, width=16, k=3, layer=0)
    result = versus_probe(sae, tiny, [task, task], n_boot=100)
    assert result.tasks == ("X", "X") and result.layer == 0 and result.pooling == "last"
    assert result.off_distribution.tolist() == [2, 2]  # "x" and "a"
    states = extract_features(tiny, texts, "last")[0][:, 1]  # INSPECT's features at layer 1
    with torch.inference_mode():
        latents = sae.encode(torch.from_numpy(states)).numpy()
    te = task.indices("te")
    assert (result.rule(0).predict(latents[te]) == y[te]).mean() == pytest.approx(result.latent_accuracy[0])
    probe, _ = train_probes(states[:, None, :], task, control=False)
    assert result.probe_accuracy[0] == pytest.approx(probe.accuracy[0])
    assert np.all(result.probe_ci[:, 0] <= result.probe_accuracy) and np.all(result.probe_accuracy <= result.probe_ci[:, 1])
    with pytest.raises(InputError, match="use last"):
        versus_probe(sae, tiny, [task], pooling="mean")
