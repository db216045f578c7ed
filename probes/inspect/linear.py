"""Linear probes per layer: multinomial logistic regression, L2 chosen on dev, accuracy on test.

For one (model, task) and every layer ``l`` of the features ``x[:, l, :]``:

1. features are standardized with the training split's mean and scale (layers differ in scale by
   orders of magnitude; SmolLM2 carries a few very large activation dimensions);
2. a multinomial logistic regression (one linear layer with softmax, as INSPECT) is trained on the
   ``tr`` split for each L2 strength ``lambda`` of :data:`L2_GRID` (mean cross-entropy +
   ``lambda / 2 * ||W||^2``; INSPECT's range 1e-5..1e-2 plus two stronger values, because at 1k
   samples the hidden size is close to the number of training samples and weak penalties overfit);
3. the strength with the best ``va`` accuracy is kept (ties: the stronger) and its ``te`` accuracy
   is reported.

Two references tell learned structure from probe capacity: the majority-class baseline (the most
frequent training label, predicted for every test sample) and a control task: the same probe on a
seeded permutation of the labels over all samples (Hewitt and Liang's selectivity idea; with
balanced classes the control sits near chance unless the probe memorises), trained with the L2
strength chosen for the real labels at that layer. Selectivity = accuracy minus control accuracy.

:class:`ProbeResult` holds the metrics and the test predictions (for confusion matrices);
:func:`save_probes` writes it with the weights and provenance (model, tokenizer, task hash,
pooling, seed) to ``<stem>.json`` + ``<stem>.npz``.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from asc.atomic import write_atomic
from asc.errors import InputError
from asc.extras import require

if TYPE_CHECKING:
    from probes.inspect.taskfile import Task

_Params = tuple[np.ndarray, np.ndarray, np.ndarray]  # coef, intercept, classes of a fitted probe

__all__ = ["L2_GRID", "ProbeResult", "load_probes", "save_probes", "train_probes"]

log = logging.getLogger(__name__)

L2_GRID = (1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)
_MAX_ITER = 300


@dataclass(frozen=True, eq=False)
class ProbeResult:
    """Probe metrics for one (model, task) across layers. ``L`` = layers + 1 (0 = embeddings)."""

    model: str
    task: str
    task_digest: str
    pooling: str
    seed: int
    labels: tuple[str, ...]
    accuracy: np.ndarray  # (L,) test accuracy with the dev-chosen L2
    dev_accuracy: np.ndarray  # (L,) dev accuracy of the chosen L2
    control_accuracy: np.ndarray  # (L,) test accuracy of the same probe on permuted labels
    l2: np.ndarray  # (L,) chosen L2 strength
    majority: float  # test accuracy of predicting the most frequent training label
    y_test: np.ndarray  # (n_test,) gold test labels
    predictions: np.ndarray  # (L, n_test) predicted test labels
    provenance: dict = field(default_factory=dict)  # model source, tokenizer, corpus, sizes, timings

    @property
    def n_layers(self) -> int:
        return int(self.accuracy.shape[0])

    @property
    def selectivity(self) -> np.ndarray:
        return self.accuracy - self.control_accuracy

    @property
    def best_layer(self) -> int:
        """The layer with the best dev accuracy (ties: the earliest): chosen without looking at test."""
        return int(np.argmax(self.dev_accuracy))

    def confusion(self, layer: int) -> np.ndarray:
        """``(classes, classes)`` counts: rows are gold labels, columns predictions, on the test split."""
        k = len(self.labels)
        out = np.zeros((k, k), dtype=np.int64)
        np.add.at(out, (self.y_test, self.predictions[layer]), 1)
        return out

    def metrics(self) -> dict:
        return {"accuracy": self.accuracy.tolist(), "dev_accuracy": self.dev_accuracy.tolist(),
                "control_accuracy": self.control_accuracy.tolist(), "l2": self.l2.tolist(),
                "majority": self.majority, "best_layer": self.best_layer}


def _standardize(x: np.ndarray, train: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    mean = x[train].mean(axis=0)
    scale = x[train].std(axis=0)
    scale[scale < 1e-6] = 1.0
    return (x - mean) / scale, mean, scale


def _fit_layer(x: np.ndarray, y: np.ndarray, tr: np.ndarray, va: np.ndarray,
               grid: Sequence[float]) -> tuple[_Params, float, float]:
    """Fit one probe per L2 strength (strongest first, warm-started); keep the best on dev.

    With a single strength in ``grid`` (the control task) ``va`` is only scored."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    best: _Params | None = None
    best_acc, best_l2 = -1.0, grid[0]
    clf = LogisticRegression(max_iter=_MAX_ITER, warm_start=True, tol=1e-4)
    for l2 in sorted(grid, reverse=True):
        clf.set_params(C=1.0 / (l2 * len(tr)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf.fit(x[tr], y[tr])
        acc = float((clf.predict(x[va]) == y[va]).mean())
        if acc > best_acc:  # strict: ties keep the stronger penalty (visited first)
            best_acc, best_l2 = acc, l2
            best = (clf.coef_.copy(), clf.intercept_.copy(), clf.classes_.copy())
    assert best is not None  # the first strength always beats -1.0
    return best, best_acc, best_l2


def _predict(params: _Params, x: np.ndarray) -> np.ndarray:
    coef, intercept, classes = params
    scores = x @ coef.T + intercept
    if coef.shape[0] == 1:  # binary: sklearn keeps one row for the positive class
        return classes[(scores[:, 0] > 0).astype(int)]
    return classes[np.argmax(scores, axis=1)]


def train_probes(features: np.ndarray, task: Task, *, model: str = "", pooling: str = "", seed: int = 0,
                 l2_grid: Sequence[float] = L2_GRID, control: bool = True, provenance: dict | None = None,
                 on_progress: Callable[[int, int], None] | None = None) -> tuple[ProbeResult, dict]:
    """Train one probe per layer of ``features`` (``(n, L, d)``) on ``task``'s splits.

    Returns the :class:`ProbeResult` and the weights (``coef (L, classes|1, d)``, ``intercept``,
    ``mean``/``scale (L, d)``) for :func:`save_probes`.
    """
    require("sklearn", "threadpoolctl", extra="probes", feature="the layer probes (scikit-learn)")
    from threadpoolctl import threadpool_limits

    x_all = np.asarray(features, dtype=np.float32)
    if x_all.ndim != 3 or x_all.shape[0] != task.n:
        raise ValueError(f"features must be (n_samples={task.n}, layers, hidden), got {x_all.shape}")
    y = np.asarray(task.y, dtype=np.int64)
    tr, va, te = (task.indices(s) for s in ("tr", "va", "te"))
    if min(len(tr), len(va), len(te)) == 0 or len(np.unique(y[tr])) < 2:
        raise InputError(f"task {task.name}: every split needs samples and training needs two classes")
    y_control = np.random.default_rng(seed).permutation(y)
    n_layers = x_all.shape[1]
    acc, dev, ctrl, l2s = (np.zeros(n_layers) for _ in range(4))
    preds = np.zeros((n_layers, len(te)), dtype=np.int64)
    weights: dict[str, list] = {"coef": [], "intercept": [], "mean": [], "scale": []}
    counts = np.bincount(y[tr], minlength=len(task.labels))
    majority = float((y[te] == int(np.argmax(counts))).mean())
    with threadpool_limits(1):  # small solves: BLAS/OpenMP threads only add overhead (50x when the CPU is busy)
        for layer in range(n_layers):
            x, mean, scale = _standardize(x_all[:, layer, :], tr)
            params, dev[layer], l2s[layer] = _fit_layer(x, y, tr, va, l2_grid)
            preds[layer] = _predict(params, x[te])
            acc[layer] = float((preds[layer] == y[te]).mean())
            if control:  # same probe, same L2 as the real task: only the labels differ (Hewitt and Liang)
                cparams, _, _ = _fit_layer(x, y_control, tr, va, (l2s[layer],))
                ctrl[layer] = float((_predict(cparams, x[te]) == y_control[te]).mean())
            else:
                ctrl[layer] = np.nan
            for key, value in zip(("coef", "intercept", "mean", "scale"), (params[0], params[1], mean, scale)):
                weights[key].append(value)
            if on_progress:
                on_progress(layer + 1, n_layers)
    result = ProbeResult(model=model, task=task.name, task_digest=task.digest, pooling=pooling, seed=seed,
                         labels=tuple(task.labels), accuracy=acc, dev_accuracy=dev, control_accuracy=ctrl, l2=l2s,
                         majority=majority, y_test=y[te], predictions=preds, provenance=dict(provenance or {}))
    return result, {k: np.stack(v) for k, v in weights.items()}


def save_probes(result: ProbeResult, weights: dict | None, stem: str | Path) -> Path:
    """Write ``<stem>.json`` (provenance + metrics) and ``<stem>.npz`` (predictions and weights), atomically."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, Any] = {"y_test": result.y_test, "predictions": result.predictions}  # Any: savez's **kwds
    for key, value in (weights or {}).items():
        arrays[f"w_{key}"] = value
    write_atomic(stem.with_suffix(".npz"), lambda tmp: np.savez_compressed(tmp, **arrays))
    doc = {"model": result.model, "task": result.task, "task_digest": result.task_digest, "pooling": result.pooling,
           "seed": result.seed, "labels": list(result.labels), "provenance": result.provenance, **result.metrics()}
    # the JSON last: its presence marks a complete result
    write_atomic(stem.with_suffix(".json"), lambda tmp: tmp.write_text(json.dumps(doc, indent=1)))
    return stem.with_suffix(".json")


def load_probes(path: str | Path) -> ProbeResult:
    """Read a result written by :func:`save_probes` (give the ``.json`` or the stem)."""
    path = Path(path).with_suffix(".json")
    doc = json.loads(path.read_text())
    arrays = np.load(path.with_suffix(".npz"))
    return ProbeResult(model=doc["model"], task=doc["task"], task_digest=doc["task_digest"], pooling=doc["pooling"],
                       seed=int(doc["seed"]), labels=tuple(doc["labels"]),
                       accuracy=np.asarray(doc["accuracy"], dtype=float),
                       dev_accuracy=np.asarray(doc["dev_accuracy"], dtype=float),
                       control_accuracy=np.asarray(doc["control_accuracy"], dtype=float),
                       l2=np.asarray(doc["l2"], dtype=float), majority=float(doc["majority"]),
                       y_test=arrays["y_test"], predictions=arrays["predictions"],
                       provenance=doc.get("provenance", {}))
