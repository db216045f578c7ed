"""A snippet's nodes' SAE latents: what the inspector's *Features* view and ``Explanation.features`` show (issue 47).

:func:`features`: for an :class:`asc.explain.Explanation` (its tokens, tree and alignment) the SAE's activations at its
layer on the explanation's own token ids (windows of the model's context for a long snippet, AsC-Eval's), and per node
the ``top`` latents with the largest activation on any usable token bound to it (AsC-Eval's binding: a node's tokens
include its descendants'). :meth:`asc.explain.Explanation.features` calls it through the SAE
(:meth:`probes.sae.model.SparseAutoencoder.node_features`): asc never imports probes. This module takes the SAE as an
object with ``check_for``, ``encode`` and ``cfg`` and imports no other module of probes.sae but the activations', so
the SAE's class can call it without an import cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from probes.sae.activations import padded, resid_post, usable

if TYPE_CHECKING:
    from asc.explain import Explanation
    from asc.models import ModelBundle

__all__ = ["TOKEN_LATENTS", "NodeFeatures", "features"]

TOKEN_LATENTS = 64  # the most latents kept per token (a TopK SAE activates k of them)


@dataclass(frozen=True)
class NodeFeatures:
    """Per node of an explanation's tree: ``latents`` (N, top), the strongest latents (-1: none), and ``values``
    (N, top) their largest activation on the node's usable tokens (NaN: none); ``layer`` the SAE's. Per token (T):
    ``token_latents`` and ``token_values`` (T, m), the latents active on it and their activations (-1 and 0 pad)."""

    layer: int
    latents: np.ndarray
    values: np.ndarray
    token_latents: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    token_values: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))

    def of(self, node: int) -> list[tuple[int, float]]:
        """``(latent, activation)`` pairs of ``node``, strongest first."""
        return [(int(lat), float(v)) for lat, v in zip(self.latents[node], self.values[node], strict=True) if lat >= 0]

    def on_tokens(self, latent: int, tokens: Sequence[int] | np.ndarray) -> np.ndarray:
        """The activation of ``latent`` on each of ``tokens`` (token indices; 0 where it is not active)."""
        idx = np.asarray(tokens, dtype=np.int64)
        if not len(idx) or not self.token_latents.size:
            return np.zeros(len(idx))
        hit = self.token_latents[idx] == latent
        out: np.ndarray = np.where(hit, self.token_values[idx], 0.0).sum(axis=1)
        return out


def _long_states(bundle: ModelBundle, layer: int, ids: np.ndarray, max_window: int = 2048) -> torch.Tensor:
    """(T, d) block ``layer``'s output for a sequence of any length: windows of the context's length, each after the
    first starting half a window later and keeping only positions past the previous one (AsC-Eval's windows)."""
    window = max(2, min(bundle.context_length, max_window))
    if len(ids) <= window:
        return resid_post(bundle, layer, *padded(bundle, [ids]))[0]
    stride = window // 2
    parts, done, start = [], 0, 0
    while done < len(ids):
        part = resid_post(bundle, layer, *padded(bundle, [ids[start : start + window]]))[0]
        parts.append(part[done - start :])
        done = start + part.shape[0]
        start += stride
    return torch.cat(parts)


def features(sae: Any, explanation: Explanation, bundle: ModelBundle, top: int = 5) -> NodeFeatures:
    """The strongest latents of every node of ``explanation`` (module doc) by ``sae`` (a
    :class:`probes.sae.model.SparseAutoencoder`); a :class:`probes.sae.model.SaeMismatchError` when it is not of
    ``bundle``'s model."""
    layer: int = sae.check_for(bundle)
    s = explanation.scores
    al = explanation.alignment
    states = _long_states(bundle, layer, np.asarray(s.ids))
    with torch.inference_mode():
        acts = sae.encode(states.to(next(sae.parameters()).device)).cpu().numpy()
    acts[~usable(np.asarray(s.special))] = 0.0
    n, top = explanation.tree.n_nodes, max(1, min(top, sae.cfg.d_sae))
    latents = np.full((n, top), -1, dtype=np.int64)
    values = np.full((n, top), np.nan)
    for i in range(n):
        tokens = al.tokens_of(i)
        if not len(tokens):
            continue
        best = acts[tokens].max(axis=0)
        pick = np.argsort(-best, kind="stable")[:top]
        pick = pick[best[pick] > 0]
        latents[i, : len(pick)] = pick
        values[i, : len(pick)] = best[pick]
    m = max(1, min(TOKEN_LATENTS, int((acts > 0).sum(axis=1).max(initial=0))))
    order = np.argsort(-acts, axis=1, kind="stable")[:, :m]
    kept = np.take_along_axis(acts, order, axis=1)
    token_latents = np.where(kept > 0, order, -1).astype(np.int64)
    return NodeFeatures(layer, latents, values, token_latents, np.where(kept > 0, kept, 0.0).astype(np.float32))
