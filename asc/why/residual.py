"""Runs of a decoder with parts of its residual stream replaced: what activation patching executes.

A :class:`ResidualRuns` holds one sequence's run (its token ids, the input of every decoder layer, and, for the
cached method, the other arguments each layer was called with) and answers, for a layer ``l`` and a batch of
rows each naming positions and the vectors to put there, the log-probability of one token at one position.

Two methods, the same numbers (``tests/asc/why/test_patching.py``):

- ``"cached"``: the run starts at layer ``l`` from the stored input of that layer, the replaced positions
  substituted; layers ``l..L-1`` are called with the arguments captured from the full run (attention masks,
  rotary embeddings, position ids, one set per layer, so Gemma 3's sliding and full layers each get theirs),
  then the final norm and the output layer are applied to the one position that predicts the target. Layers
  ``0..l-1``, the embeddings and the other positions' logits are never recomputed. Supported where the adapter
  says the layers replay (:attr:`asc.arch.ModelInsides.replayable`: the families of the architecture matrix, each
  checked against a full pass by ``tests/asc/test_arch_matrix.py``).
- ``"hooks"``: a full forward pass per batch with a PyTorch forward pre-hook on layer ``l`` that writes the rows'
  vectors into its input; any decoder whose layers :mod:`asc.arch` finds works this way.

Layer ``l`` means the input of decoder layer ``l`` (0: the embeddings, as the model feeds them to layer 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from asc.arch import VERIFIED_TYPES, architecture, decoder_layers, log_probs, model_insides
from asc.device import model_device
from asc.errors import InputError
from asc.models import ModelBundle

__all__ = ["ResidualRuns", "record"]

_FEATURE = "activation patching"

Row = tuple[np.ndarray, Any]  # (positions (P,) int, vectors (P, H) tensor) of one patched run


def _layers(model: Any, n_layers: int) -> Any:
    """The model's ``n_layers`` decoder layers (:func:`asc.arch.decoder_layers`), or an :class:`InputError`."""
    _, layers = decoder_layers(model, _FEATURE)
    if len(layers) != n_layers:
        raise InputError(f"{type(model).__name__}: {len(layers)} decoder layers found where the config says "
                         f"{n_layers}, so no residual stream to patch; choose a decoder such as smollm2-135m")
    return layers


def _replays(model: Any) -> bool:
    """Whether the cached method applies: the adapter finds the parts and says the layers replay."""
    try:
        return model_insides(model, _FEATURE).replayable
    except InputError:
        return False


def _batched(value: Any, batch: int) -> Any:
    """``value`` (a captured layer argument) with every tensor of batch size 1 expanded to ``batch`` rows."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.expand(batch, *value.shape[1:]) if value.dim() and value.shape[0] == 1 else value
    if isinstance(value, tuple | list):
        return type(value)(_batched(v, batch) for v in value)
    if isinstance(value, dict):
        return {k: _batched(v, batch) for k, v in value.items()}
    return value


@dataclass
class ResidualRuns:
    """One sequence's run, ready to be re-run with parts of its residual stream replaced (module doc).

    ``inputs[l]`` (T, H) is the input of decoder layer ``l``; ``logprobs`` (T - 1,) the log-probability of every
    token of ``ids`` (T,) after the tokens before it (index ``i`` scores token ``i + 1``)."""

    bundle: ModelBundle
    ids: np.ndarray
    method: str
    inputs: list[Any] = field(repr=False)
    logprobs: np.ndarray = field(repr=False)
    calls: list[tuple[tuple, dict]] = field(repr=False, default_factory=list)
    layer_runs: float = 0.0  # work done by run(): rows x layers run, in units of one full pass's layers (hooks: 1 a row)

    @property
    def n_layers(self) -> int:
        return len(self.inputs)

    def run(self, layer: int, rows: Sequence[Row], position: int, token: int) -> np.ndarray:
        """(B,) float64: for each row, the log-probability of ``token`` after ``position`` (its logits at
        ``position``) when the input of ``layer`` has the row's vectors at the row's positions."""
        import torch

        if not rows:
            return np.zeros(0)
        self.layer_runs += len(rows) * ((self.n_layers - layer) / self.n_layers if self.method == "cached" else 1.0)
        with torch.inference_mode():
            hidden = self.inputs[layer].unsqueeze(0).repeat(len(rows), 1, 1)
            for b, (pos, vec) in enumerate(rows):
                hidden[b, torch.as_tensor(pos, dtype=torch.long)] = vec.to(hidden.dtype)
            logits = (self._from_layer(layer, hidden, position) if self.method == "cached"
                      else self._hooked(layer, hidden, position))
            return log_probs(logits)[:, token].double().cpu().numpy()

    def _from_layer(self, layer: int, hidden: Any, position: int) -> Any:
        parts = model_insides(self.bundle, _FEATURE)
        layers = parts.layers
        batch = hidden.shape[0]
        for k in range(layer, self.n_layers):
            args, kwargs = self.calls[k]
            out = layers[k](hidden, *_batched(args, batch), **_batched(kwargs, batch))
            hidden = out[0] if isinstance(out, tuple) else out
        return parts.logits(hidden[:, position])

    def _hooked(self, layer: int, hidden: Any, position: int) -> Any:
        import torch

        layers = _layers(self.bundle.model, self.n_layers)

        def swap(module: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
            return (hidden, *args[1:]), kwargs

        handle = layers[layer].register_forward_pre_hook(swap, with_kwargs=True)
        try:
            ids = torch.as_tensor(self.ids, device=hidden.device).unsqueeze(0).expand(hidden.shape[0], -1)
            return self.bundle.model(input_ids=ids, use_cache=False).logits[:, position]
        finally:
            handle.remove()


def record(bundle: ModelBundle, ids: np.ndarray, method: str = "auto") -> ResidualRuns:
    """One full forward pass over ``ids`` (T,) recording every decoder layer's input (and, for the cached method,
    its other arguments). ``method``: ``"cached"``, ``"hooks"`` or ``"auto"`` (cached where the adapter says the
    layers replay, :attr:`asc.arch.ModelInsides.replayable`, else hooks)."""
    import torch

    model = bundle.model
    if method not in ("cached", "hooks", "auto"):
        raise InputError(f"patching method {method!r}: choose cached, hooks or auto")
    if method != "hooks":
        replays = _replays(model)
        if method == "cached" and not replays:
            raise InputError(f"the cached patching method supports {', '.join(sorted(VERIFIED_TYPES))}, not "
                             f"{architecture(model)!r}: use method='hooks'")
        method = "cached" if replays else "hooks"
    layers = _layers(model, bundle.n_layers)
    inputs: list[Any] = [None] * len(layers)
    calls: list[tuple[tuple, dict]] = [((), {})] * len(layers)

    def keep(k: int):
        def hook(module: Any, args: tuple, kwargs: dict) -> None:
            inputs[k] = args[0][0].detach()
            calls[k] = (args[1:], dict(kwargs))
        return hook

    handles = [layer.register_forward_pre_hook(keep(k), with_kwargs=True) for k, layer in enumerate(layers)]
    try:
        with torch.inference_mode():
            x = torch.as_tensor(ids, dtype=torch.long, device=model_device(model)).unsqueeze(0)
            logits = model(input_ids=x, use_cache=False).logits[0].float()
            logprobs = log_probs(logits[:-1]).gather(1, x[0, 1:, None])[:, 0].double().cpu().numpy()
    finally:
        for h in handles:
            h.remove()
    return ResidualRuns(bundle, np.asarray(ids, dtype=np.int64), method, inputs, logprobs,
                        calls if method == "cached" else [])
