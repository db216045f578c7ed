"""One model adapter: where a loaded causal LM keeps its decoder layers, final norm, output head and embeddings.

Every feature that reaches inside a model (the logit lens, activation patching) asks this module instead of
re-deriving the layout, so one list of known names per part decides what is supported, and an unsupported model
gets one :class:`~asc.errors.UnsupportedArchitectureError` line naming the feature, the architecture and the
names looked for. What :func:`model_insides` computes, for a transformers ``PreTrainedModel``:

- ``base``: the model without its LM head (``model.base_model``), called for hidden states;
- ``layers``: the ``ModuleList`` of decoder blocks, at one of :data:`LAYER_PATHS` under ``base`` (GPT-2's ``h``,
  Llama/Gemma/GPT-NeoX's ``layers``, OPT's ``decoder.layers``, a multimodal Gemma 3's ``language_model.layers``),
  and ``owner``, the module holding it;
- ``norm``: what turns the last block's output into the head's input: the owner's final norm (one of
  :data:`FINAL_NORMS`; an attribute set to None, as in OPT-350m, is the identity) followed by an output projection
  where the owner has one (:data:`OUTPUT_PROJECTIONS`: OPT's ``project_out``);
- ``head``: the unembedding, ``model.get_output_embeddings()`` (tied or not);
- ``softcap``: ``final_logit_softcapping`` of the text config (``config.get_text_config()`` where it exists, so a
  multimodal Gemma's nested config counts), None when unset; :func:`apply_softcap` applies ``tanh(x / c) * c``;
- ``embeddings``: ``model.get_input_embeddings()``. No scale is returned: Gemma's ``sqrt(hidden)`` scale lives
  inside its embedding module (Gemma 3) or its forward (Gemma 2), so the callers that feed ``inputs_embeds``
  (``asc.why.targets``, ``asc.why.occlusion``) get the model's own behaviour without one.

Still to move here (issue 45 §1): ``asc.why.occlusion`` and ``asc.why.targets`` call ``get_input_embeddings()``
themselves; ``asc.branches``, ``asc.scores`` and the probes (``probes/``, feature extraction) read the config
(layer counts via ``ModelBundle.n_layers``, context length, vocabulary) on their own; ``asc.why.residual``'s
:data:`~asc.why.residual.CACHED_TYPES` is still a list of model types rather than a property of the adapter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from asc.errors import UnsupportedArchitectureError
from asc.models import ModelBundle

__all__ = ["FINAL_NORMS", "LAYER_PATHS", "OUTPUT_PROJECTIONS", "FinalNorm", "ModelInsides", "apply_softcap",
           "architecture", "decoder_layers", "logit_softcap", "model_insides"]

#: Where the decoder blocks live, relative to the base model (dotted paths), first match wins.
LAYER_PATHS = ("layers", "h", "blocks", "decoder.layers", "language_model.layers", "model.layers")
#: Names of the final norm on the module that holds the decoder blocks.
FINAL_NORMS = ("norm", "ln_f", "final_layer_norm", "final_layernorm", "norm_f")
#: Projections applied after the final norm, before the head, on the same module (OPT's ``project_out``).
OUTPUT_PROJECTIONS = ("project_out",)


def _supported(names: tuple[str, ...]) -> str:
    return ", ".join(names)


def architecture(model: Any) -> str:
    """The model's ``model_type`` (its class name when the config has none)."""
    return str(getattr(getattr(model, "config", None), "model_type", None) or type(model).__name__)


def _refuse(feature: str, model: Any, part: str, names: tuple[str, ...] | str) -> UnsupportedArchitectureError:
    listed = names if isinstance(names, str) else _supported(names)
    return UnsupportedArchitectureError(f"{feature} cannot find the {part} of {architecture(model)} "
                                        f"({type(model).__name__}); supported {part} names: {listed}")


def _path(root: Any, dotted: str) -> Any:
    for name in dotted.split("."):
        root = getattr(root, name, None)
        if root is None:
            return None
    return root


def decoder_layers(model: Any, feature: str = "this feature") -> tuple[Any, Any]:
    """``(owner, layers)``: the ``ModuleList`` of decoder blocks and the module holding it (where the final norm
    is), found at one of :data:`LAYER_PATHS` under the base model; an :class:`UnsupportedArchitectureError`
    naming ``feature`` otherwise."""
    import torch

    base = getattr(model, "base_model", None)
    for root in (base, model):
        if root is None:
            continue
        for dotted in LAYER_PATHS:
            layers = _path(root, dotted)
            if isinstance(layers, torch.nn.ModuleList) and len(layers):
                owner = _path(root, dotted.rpartition(".")[0]) if "." in dotted else root
                return owner, layers
    raise _refuse(feature, model, "decoder layers", LAYER_PATHS)


class FinalNorm:
    """The final norm (None: identity) followed by the output projections (each may be None), as one callable."""

    def __init__(self, norm: Any, projections: tuple[Any, ...] = ()) -> None:
        self.norm = norm
        self.projections = tuple(p for p in projections if p is not None)

    def __call__(self, hidden: Any) -> Any:
        if self.norm is not None:
            hidden = self.norm(hidden)
        for projection in self.projections:
            hidden = projection(hidden)
        return hidden


def _final_norm(model: Any, owner: Any, feature: str) -> Any:
    name = next((n for n in FINAL_NORMS if hasattr(owner, n)), None)
    if name is None:
        raise _refuse(feature, model, "final norm", FINAL_NORMS)
    norm = getattr(owner, name)
    projections = tuple(getattr(owner, p) for p in OUTPUT_PROJECTIONS if getattr(owner, p, None) is not None)
    return norm if norm is not None and not projections else FinalNorm(norm, projections)


def logit_softcap(model: Any) -> float | None:
    """``final_logit_softcapping`` of the model's text config (Gemma 2 and 3), None when unset or zero."""
    cfg = getattr(model, "config", None)
    if cfg is not None and hasattr(cfg, "get_text_config"):
        cfg = cfg.get_text_config()
    cap = getattr(cfg, "final_logit_softcapping", None)
    return float(cap) if cap else None


def apply_softcap(logits: Any, cap: float | None) -> Any:
    """``tanh(logits / cap) * cap`` in float32 (the model's own soft-capping), or ``logits`` when ``cap`` is None."""
    import torch

    return logits if not cap else torch.tanh(logits.float() / cap) * cap


@dataclass(frozen=True)
class ModelInsides:
    """A causal LM's parts (module doc): ``norm`` maps the last block's output to the head's input."""

    kind: str
    base: Any
    owner: Any
    layers: Any
    norm: Any
    head: Any
    softcap: float | None
    embeddings: Any

    @property
    def n_layers(self) -> int:
        """The number of decoder blocks."""
        return len(self.layers)


def model_insides(bundle: ModelBundle | Any, feature: str = "this feature") -> ModelInsides:
    """The parts of ``bundle`` (a :class:`ModelBundle` or a bare model); an :class:`UnsupportedArchitectureError`
    that names ``feature``, the architecture and the supported names of the first part not found."""
    model = bundle.model if isinstance(bundle, ModelBundle) else bundle
    base = getattr(model, "base_model", None)
    if base is None or base is model:
        raise _refuse(feature, model, "base model (the model without its LM head)", "base_model")
    owner, layers = decoder_layers(model, feature)
    norm = _final_norm(model, owner, feature)
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if head is None:
        raise _refuse(feature, model, "output head", "get_output_embeddings()")
    embeddings = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    return ModelInsides(architecture(model), base, owner, layers, norm, head, logit_softcap(model), embeddings)
