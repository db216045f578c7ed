"""The best single SAE latent against INSPECT's linear probe: does one feature carry what the probe finds (issue 47)?

For each task (:class:`probes.inspect.taskfile.Task`: its samples and its ``tr``/``va``/``te`` split), at the SAE's
layer ``L``:

* **states**: block ``L``'s output at each sample's pooled token, by INSPECT's feature extraction
  (:func:`probes.features.extract_features`: tokenization, truncation, pooling; ``last`` for decoders) read where the
  SAE reads it (:func:`probes.sae.activations.resid_post`, before any final norm: INSPECT's layer ``L + 1`` exactly
  for every block but the last);
* **latents**: the SAE's encoding of those states. Pooled at one token (``last``, ``first``), a state is that
  token's state: its latents are the ones the SAE was trained on, the same numbers as per-token latents pooled.
  ``mean`` is refused: the SAE never saw a mean of states, and a mean of latents would read the text through another
  pooling than the probe. ``off_distribution`` counts samples pooled at a token the SAE is not read at (special, or
  the text's first: :func:`probes.sae.activations.usable`; one-token identifiers are);
* **probe**: :func:`probes.inspect.linear.train_probes` on those states (standardized, L2 chosen on ``va``), no
  control task;
* **best latent** (:func:`best_latent`): one latent's value cut into at most K intervals (K classes), each predicting
  a class: on a binary task a threshold and a direction (a stump), on a K-class task a one-feature tree with K
  leaves, so a count can be read off one latent's size (a depth-1 tree predicts two classes: a ceiling near 2/K).
  Thresholds: 0 (fires or not) and the quantiles of the latent's nonzero ``tr`` values (``THRESHOLDS`` in all); the
  intervals with the best ``tr`` accuracy are exact over them (dynamic programming, vectorized over latents), and
  the latent with the best ``tr`` accuracy wins (ties: the lowest index). ``va`` is not used;
* **majority**: the most frequent ``tr`` label; all accuracies are on ``te``, with percentile bootstrap intervals over
  test samples, paired (the same resamples give the probe's, the latent's and their difference's).

Departures: INSPECT (Karmakar and Robbes) reports every layer; here only the SAE's. Sparse probing of SAEs (Gao et
al., "Scaling and evaluating sparse autoencoders"; Kantamneni et al., "Are Sparse Autoencoders Useful?") fits a
logistic regression on one (or k) latents of binary tasks: on one feature that is a threshold too, fit by log-loss
rather than accuracy; intervals extend it to K classes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from asc.errors import InputError
from probes.features import PROBE_MAX_TOKENS, default_pooling, extract_features
from probes.inspect.linear import train_probes
from probes.sae.activations import resid_post, usable
from probes.sae.enrichment import export_result
from probes.sae.model import SparseAutoencoder, check_sae_for

if TYPE_CHECKING:
    import pandas as pd

    from asc.models import ModelBundle
    from probes.inspect.taskfile import Task

__all__ = ["THRESHOLDS", "LatentRule", "VersusProbe", "best_latent", "versus_features", "versus_probe"]

THRESHOLDS = 32
"""Candidate thresholds per latent: 0 and the quantiles of its nonzero train values in 31 steps (the last its max)."""
_CHUNK = 512  # latents fitted at once (bounds the (chunk, bins, bins, classes) counts)
_NEVER = 1 << 40  # an unreachable state of the dynamic program (far below any count)


@dataclass(frozen=True)
class LatentRule:
    """One latent's classifier: ``leaves[i]`` (K',) is predicted where ``cuts[i-1] < value <= cuts[i]`` (``cuts``
    (K'-1,) increasing; the first interval is everything up to ``cuts[0]``)."""

    latent: int
    cuts: np.ndarray
    leaves: np.ndarray
    train_accuracy: float

    def predict(self, latents: np.ndarray) -> np.ndarray:
        """(n,) classes for ``latents`` (n, L)."""
        return self.leaves[np.searchsorted(self.cuts, latents[:, self.latent], side="left")]

    def describe(self, labels: Sequence[str]) -> str:
        """The rule in words, e.g. ``latent 7: <= 0.5 correct; > 0.5 mutated``."""
        bounds = ["<= " + f"{c:.3g}" for c in self.cuts] + [f"> {self.cuts[-1]:.3g}" if len(self.cuts) else "any"]
        return f"latent {self.latent}: " + "; ".join(f"{b} {labels[c]}" for b, c in zip(bounds, self.leaves))


def _edges(values: np.ndarray) -> np.ndarray:
    """(L, THRESHOLDS): 0, then the lower quantiles of each latent's nonzero values (0 where it never fires)."""
    n = len(values)
    s = np.sort(values, axis=0)
    m = (s > 0).sum(axis=0)
    steps = np.arange(1, THRESHOLDS) / (THRESHOLDS - 1)
    pos = np.minimum((n - m)[None, :] + np.floor(steps[:, None] * np.maximum(m - 1, 0)).astype(np.int64), n - 1)
    q = np.where(m > 0, np.take_along_axis(s, pos, axis=0), 0.0)
    return np.concatenate([np.zeros((1, values.shape[1])), q]).T


def _fit(values: np.ndarray, y: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per latent of ``values`` (n, L): train samples right (L,), edges (L, B-1), cumulative class counts
    (L, B+1, k) and the dynamic program's choices (k, L, B+1), for B bins (bin b: edges[b-1] < value <= edges[b])."""
    edges = _edges(values)
    n_lat, n_bins = values.shape[1], THRESHOLDS + 1
    bins = (values[:, :, None] > edges[None]).sum(axis=2)  # (n, L)
    flat = (np.arange(n_lat)[None, :] * n_bins + bins) * k + y[:, None]
    counts = np.bincount(flat.ravel(), minlength=n_lat * n_bins * k).reshape(n_lat, n_bins, k)
    cum = np.concatenate([np.zeros((n_lat, 1, k), np.int64), np.cumsum(counts, axis=1)], axis=1)
    gain = (cum[:, None, :, :] - cum[:, :, None, :]).max(axis=3)  # (L, p, r): bins p..r-1 as one interval
    gain = np.where(np.triu(np.ones((n_bins + 1, n_bins + 1), bool))[None], gain, -_NEVER)
    best = np.full((n_lat, n_bins + 1), -_NEVER)
    best[:, 0] = 0
    choice = np.zeros((k, n_lat, n_bins + 1), np.int64)
    for j in range(k):  # at most k intervals (an empty one, p == r, gains 0)
        total = best[:, :, None] + gain
        choice[j] = total.argmax(axis=1)
        best = total.max(axis=1)
    return best[:, -1], edges, cum, choice


def best_latent(latents: np.ndarray, y: np.ndarray, n_classes: int) -> LatentRule:
    """The one-latent classifier with the best accuracy on ``latents`` (n, L) and labels ``y`` (n,) (module doc)."""
    latents, y = np.asarray(latents, dtype=np.float64), np.asarray(y, dtype=np.int64)
    if latents.ndim != 2 or len(latents) != len(y) or not len(y):
        raise InputError(f"latents must be (n={len(y)}, latents) with n > 0, got {latents.shape}")
    k = max(int(n_classes), 2)
    right = np.concatenate([_fit(latents[:, i : i + _CHUNK], y, k)[0] for i in range(0, latents.shape[1], _CHUNK)])
    latent = int(np.argmax(right))
    _, edges, cum, choice = _fit(latents[:, [latent]], y, k)
    pieces: list[tuple[int, np.ndarray]] = []
    r = THRESHOLDS + 1
    for j in range(k - 1, -1, -1):  # walk the choices back: interval bins p..r-1
        p = int(choice[j, 0, r])
        pieces.append((r, cum[0, r] - cum[0, p]))
        r = p
    cuts: list[float] = []
    leaves: list[int] = []
    for r, seen in reversed(pieces):  # an interval without a train sample goes to its right neighbour (last: left)
        if seen.sum():
            upper = float(edges[0, r - 1]) if r <= THRESHOLDS else np.inf
            if leaves and int(np.argmax(seen)) == leaves[-1]:
                cuts[-1] = upper
            else:
                cuts.append(upper)
                leaves.append(int(np.argmax(seen)))
    return LatentRule(latent, np.asarray(cuts[:-1]), np.asarray(leaves, np.int64), float(right[latent]) / len(y))


@dataclass(frozen=True)
class VersusProbe:
    """The best single latent against the linear probe on T tasks at one layer (module doc). Per task (T,):
    ``n_classes``, ``n_train``, ``n_test``, ``off_distribution`` (samples pooled at a token the SAE is not read at),
    ``majority``, ``probe_accuracy``, ``probe_l2`` (chosen on dev), ``latent`` (the best one), its
    ``latent_train_accuracy`` and ``latent_accuracy``; (T, 2): ``probe_ci``, ``latent_ci`` and ``gap_ci`` (the
    probe's minus the latent's accuracy) at ``level``; the latents' rules (:meth:`rule`): ``cuts`` (T, K - 1)
    NaN-padded and ``leaves`` (T, K) -1-padded, K the most intervals of a rule; ``labels`` each task's classes."""

    tasks: tuple[str, ...]
    labels: tuple[tuple[str, ...], ...]
    layer: int
    pooling: str
    n_boot: int
    level: float
    n_classes: np.ndarray
    n_train: np.ndarray
    n_test: np.ndarray
    off_distribution: np.ndarray
    majority: np.ndarray
    probe_accuracy: np.ndarray
    probe_l2: np.ndarray
    latent: np.ndarray
    latent_train_accuracy: np.ndarray
    latent_accuracy: np.ndarray
    probe_ci: np.ndarray
    latent_ci: np.ndarray
    gap_ci: np.ndarray
    cuts: np.ndarray
    leaves: np.ndarray

    def rule(self, t: int) -> LatentRule:
        """Task ``t``'s one-latent classifier."""
        n = int((self.leaves[t] >= 0).sum())
        return LatentRule(int(self.latent[t]), self.cuts[t, : n - 1], self.leaves[t, :n],
                          float(self.latent_train_accuracy[t]))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the settings and one entry per task (``python -m probes sae versus --json``)."""
        rows = [{"task": name, **{c: getattr(self, c)[t].item() for c in _COLUMNS},
                 **{c: getattr(self, c)[t].tolist() for c in _INTERVALS},
                 "latent_rule": self.rule(t).describe(self.labels[t])} for t, name in enumerate(self.tasks)]
        return {"layer": self.layer, "pooling": self.pooling, "n_boot": self.n_boot, "level": self.level,
                "tasks": rows}

    def to_frame(self) -> pd.DataFrame:
        """One row per task: :meth:`to_dict`'s entries, each interval as ``*_lo`` and ``*_hi`` columns."""
        import pandas as pd

        rows = self.to_dict()["tasks"]
        for row in rows:
            for c in _INTERVALS:
                row[f"{c[:-3]}_lo"], row[f"{c[:-3]}_hi"] = row.pop(c)
        return pd.DataFrame(rows)

    def export(self, path: str | Path) -> Path:
        """Write :meth:`to_dict` (``.json``) or :meth:`to_frame` (``.csv``) to ``path``, atomically."""
        return export_result(path, self.to_dict, self.to_frame)


_COLUMNS = ("n_classes", "n_train", "n_test", "off_distribution", "majority", "probe_accuracy", "probe_l2", "latent",
            "latent_train_accuracy", "latent_accuracy")
_INTERVALS = ("probe_ci", "latent_ci", "gap_ci")


def _row(features: np.ndarray, latents: np.ndarray, task: Task, n_boot: int, seed: int, level: float) -> dict[str, Any]:
    """One task's entries of :class:`VersusProbe` (all but ``off_distribution``)."""
    if len(features) != task.n or len(latents) != task.n:
        raise InputError(f"task {task.name}: {task.n} samples but {len(features)} feature and {len(latents)} latent "
                         "rows: give one of each per sample")
    probe, _ = train_probes(np.asarray(features, dtype=np.float32)[:, None, :], task, seed=seed, control=False)
    tr, te, y = task.indices("tr"), task.indices("te"), np.asarray(task.y, dtype=np.int64)
    rule = best_latent(latents[tr], y[tr], len(task.labels))
    hits = np.stack([probe.predictions[0] == y[te], rule.predict(latents[te]) == y[te]]).astype(np.float64)
    draws = hits[:, np.random.default_rng(seed).integers(0, len(te), size=(n_boot, len(te)))].mean(axis=2)
    q = [100 * (1 - level) / 2, 100 * (1 + level) / 2]
    return {"n_classes": len(task.labels), "n_train": len(tr), "n_test": len(te), "majority": probe.majority,
            "probe_accuracy": hits[0].mean(), "probe_l2": probe.l2[0], "latent": rule.latent,
            "latent_train_accuracy": rule.train_accuracy, "latent_accuracy": hits[1].mean(),
            "probe_ci": np.percentile(draws[0], q), "latent_ci": np.percentile(draws[1], q),
            "gap_ci": np.percentile(draws[0] - draws[1], q), "cuts": rule.cuts, "leaves": rule.leaves}


def _stack(tasks: Sequence[Task], rows: Sequence[dict[str, Any]], layer: int, pooling: str, n_boot: int,
           level: float) -> VersusProbe:
    k = max(len(r["leaves"]) for r in rows)
    cuts, leaves = np.full((len(rows), k - 1), np.nan), np.full((len(rows), k), -1, dtype=np.int64)
    for t, r in enumerate(rows):
        cuts[t, : len(r["cuts"])], leaves[t, : len(r["leaves"])] = r["cuts"], r["leaves"]
    return VersusProbe(tasks=tuple(t.name for t in tasks), labels=tuple(tuple(t.labels) for t in tasks), layer=layer,
                       pooling=pooling, n_boot=n_boot, level=level, cuts=cuts, leaves=leaves,
                       **{c: np.asarray([r[c] for r in rows]) for c in (*_COLUMNS, *_INTERVALS)})


def versus_features(features: np.ndarray, latents: np.ndarray, task: Task, *, n_boot: int = 1000, seed: int = 0,
                    level: float = 0.95) -> VersusProbe:
    """The comparison on one task (T = 1) from its pooled states ``features`` (n, d) and their latents (n, L); arrays
    do not say their layer, pooling or token positions (``layer`` -1, ``pooling`` "", ``off_distribution`` 0)."""
    row = _row(features, latents, task, n_boot, seed, level)
    return _stack([task], [{**row, "off_distribution": 0}], -1, "", n_boot, level)


def versus_probe(sae: SparseAutoencoder, bundle: ModelBundle, tasks: Sequence[Task], layer: int | None = None, *,
                 pooling: str | None = None, max_tokens: int = PROBE_MAX_TOKENS, n_boot: int = 1000, seed: int = 0,
                 level: float = 0.95, on_progress: Callable[[int, int], None] | None = None) -> VersusProbe:
    """The best single latent of ``sae`` against the linear probe on each of ``tasks`` (module doc), at the layer the
    SAE reads in ``bundle`` (``layer``: the one expected; another is refused). ``on_progress(tasks done, total)``."""
    layer = check_sae_for(sae, bundle, layer)
    pooling = pooling or default_pooling(bundle)
    if pooling not in ("last", "first"):
        raise InputError(f"pooling {pooling!r} is not read by an SAE (it sees one token's state, never a mean): "
                         "use last (the decoders' default) or first")
    device, rows = next(sae.parameters()).device, []
    for i, task in enumerate(tasks):
        states, _ = extract_features(bundle, task.texts, pooling, max_tokens=max_tokens,
                                     read=lambda ids, mask: (resid_post(bundle, layer, ids, mask),))
        with torch.inference_mode():
            latents = sae.encode(torch.from_numpy(states[:, 0]).to(device)).cpu().numpy()
        special = [bundle.tokenizer(t, return_special_tokens_mask=True, verbose=False)["special_tokens_mask"]
                   for t in task.texts]  # is the pooled token one the SAE is read at?
        off = sum(not usable(np.asarray(m, dtype=bool))[len(m) - 1 if pooling == "last" else 0] for m in special)
        rows.append({**_row(states[:, 0], latents, task, n_boot, seed, level), "off_distribution": off})
        if on_progress:
            on_progress(i + 1, len(tasks))
    return _stack(tasks, rows, layer, pooling, n_boot, level)
