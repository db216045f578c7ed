"""Linear probes: a planted linear label is recovered, random labels stay at chance, results round-trip."""

import numpy as np
import pytest

from probes.inspect.linear import L2_GRID, load_probes, save_probes, train_probes
from probes.inspect.tasks import Task


def _task(y, name="SYN", seed=0):
    n = len(y)
    split = np.array(["tr"] * int(0.6 * n) + ["va"] * int(0.2 * n) + ["te"] * (n - int(0.6 * n) - int(0.2 * n)))
    np.random.default_rng(seed + 100).shuffle(split)  # independent of how y was drawn
    labels = tuple(str(i) for i in range(int(max(y)) + 1))
    return Task(name, labels, tuple(f"sample {i}" for i in range(n)), np.asarray(y), split)


@pytest.fixture(scope="module")
def planted():
    """4 classes, 3 layers of 24 dims: only layer 1 carries the label (a linear direction per class)."""
    rng = np.random.default_rng(0)
    n, k, d = 400, 4, 24
    y = np.repeat(np.arange(k), n // k)
    rng.shuffle(y)
    x = rng.normal(size=(n, 3, d)).astype(np.float32)
    x[:, 1, :] += 2.0 * np.eye(k)[y] @ rng.normal(size=(k, d))
    x[:, 2, :] *= 1000.0  # a layer with huge activations must not break the probe (standardized)
    task = _task(y)
    result, weights = train_probes(x, task, model="synthetic", pooling="last", seed=0)
    return x, task, result, weights


def test_planted_label_is_recovered_only_where_it_is(planted):
    _, _, r, _ = planted
    assert r.accuracy[1] >= 0.95
    assert r.accuracy[0] < 0.45 and r.accuracy[2] < 0.45  # chance is 0.25
    assert r.best_layer == 1  # chosen on dev
    assert r.selectivity[1] > 0.5


def test_control_task_with_shuffled_labels_stays_near_chance(planted):
    _, _, r, _ = planted
    assert np.all(r.control_accuracy < 0.45)


def test_random_labels_stay_at_chance():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(400, 2, 24)).astype(np.float32)
    y = rng.integers(0, 4, size=400)
    r, _ = train_probes(x, _task(y), control=False)
    assert np.all(np.abs(r.accuracy - 0.25) < 0.15)
    assert np.all(np.isnan(r.control_accuracy))


def test_majority_baseline_and_confusion(planted):
    _, task, r, _ = planted
    te = task.indices("te")
    counts = np.bincount(task.y[task.indices("tr")])
    assert r.majority == pytest.approx(float((task.y[te] == np.argmax(counts)).mean()))
    cm = r.confusion(1)
    assert cm.sum() == len(te)
    assert np.trace(cm) == round(r.accuracy[1] * len(te))
    assert set(r.l2) <= set(L2_GRID)


def test_weights_reproduce_the_predictions(planted):
    x, task, r, w = planted
    te = task.indices("te")
    z = (x[te, 1, :] - w["mean"][1]) / w["scale"][1]
    pred = np.argmax(z @ w["coef"][1].T + w["intercept"][1], axis=1)
    assert np.array_equal(pred, r.predictions[1])


def test_save_and_load_round_trip(planted, tmp_path):
    _, _, r, w = planted
    path = save_probes(r, w, tmp_path / "m" / "SYN-last")
    back = load_probes(path)
    assert back.task_digest == r.task_digest and back.labels == r.labels and back.pooling == "last"
    assert np.allclose(back.accuracy, r.accuracy) and np.array_equal(back.predictions, r.predictions)
    stored = np.load(path.with_suffix(".npz"))
    assert stored["w_coef"].shape == w["coef"].shape


def test_binary_task_and_wrong_shapes():
    rng = np.random.default_rng(2)
    y = np.repeat([0, 1], 100)
    x = rng.normal(size=(200, 1, 8)).astype(np.float32)
    x[:, 0, 0] += 3.0 * y
    r, w = train_probes(x, _task(y))
    assert r.accuracy[0] > 0.85 and w["coef"].shape == (1, 1, 8)
    with pytest.raises(ValueError, match="features must be"):
        train_probes(x[:10], _task(y))
