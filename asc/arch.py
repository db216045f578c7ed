"""One model adapter: what every feature asks about a loaded model's insides, found once per model.

Every feature that reaches inside a model (AsC-Eval's scores, the logit lens, attribution, activation patching,
branches, the probes' feature extraction) asks this module, and :mod:`asc.kvcache` for prefix KV caches, instead of
re-deriving the layout or reading the config: one list of known names per part decides what is supported, and
``tests/test_architecture.py`` fails when another module names a final norm, a softcap, a decoder-layer attribute,
the embeddings, a config's shape, a KV cache or a log-softmax. What :func:`model_insides` finds (the layout once per
model; values read from the config, such as the softcap, on every call), for a transformers ``PreTrainedModel``:

- ``base``: the model without its LM head (``model.base_model``), called for hidden states (:func:`hidden_states`);
- ``layers``: the ``ModuleList`` of decoder blocks, at one of :data:`LAYER_PATHS` under ``base`` (GPT-2's ``h``,
  Llama/Gemma/GPT-NeoX's ``layers``, OPT's ``decoder.layers``, a multimodal Gemma 3's ``language_model.layers``),
  and ``owner``, the module holding it;
- ``norm``: what turns the last block's output into the head's input: the owner's final norm (one of
  :data:`FINAL_NORMS`; an attribute set to None, as in OPT-350m, is the identity) followed by an output projection
  where the owner has one (:data:`OUTPUT_PROJECTIONS`: OPT's ``project_out``);
- ``head``: the unembedding, ``model.get_output_embeddings()`` (tied or not), and what the model's forward does to
  its logits: ``logit_scale`` (Cohere's, multiplied), ``logits_divisor`` (Granite's ``logits_scaling``, divided)
  and ``softcap`` (``final_logit_softcapping`` of the text config, Gemma 2 and 3: ``tanh(x / c) * c``, in float32),
  applied in that order by :meth:`ModelInsides.finish_logits`; :meth:`ModelInsides.logits` is the whole way from a
  block's output to the model's logits;
- ``embeddings``: ``model.get_input_embeddings()``; :func:`embed` gives its output for token ids, which features
  feed as ``inputs_embeds`` (the forward then applies what it applies to ids). ``embedding_scale`` is the factor
  from a row of the matrix to layer 0's input (Gemma's ``sqrt(hidden)``, inside its embedding module, times
  ``input_scale``, what the forward multiplies ``inputs_embeds`` by: Granite's ``embedding_multiplier``);
- ``replayable``: whether activation patching may call the decoder layers one by one from recorded arguments
  (:mod:`asc.why.residual`'s cached method): the architectures of :data:`VERIFIED_TYPES`.

Known and unknown architectures: :data:`VERIFIED_TYPES` are the model types the architecture matrix checks feature
by feature (``tests/asc/test_arch_matrix.py``, table in ``docs/bench/arch_matrix.md``). Another type whose parts
are found is checked once, at its first use by a feature that computes logits from the parts or feeds input
embeddings: on a 4-token input the logits from ``embed(ids)`` must equal those from the ids, and
``logits(last block's output)`` the model's own; where one differs the feature gets an
:class:`~asc.errors.UnsupportedArchitectureError` line naming it, the architecture and the part, never a silently
wrong number. A layout not found is refused the same way, naming the names looked for.

Also here, the one rule each: the text config and the numbers read from it (:func:`layer_count`,
:func:`vocab_size`, :func:`context_lengths`, :func:`config_shape`), log-probabilities from logits
(:func:`log_probs`), which tokens get a prediction and whether the first is the attention sink (:func:`predicted`,
:func:`first_token_is_sink`: a model whose tokenizer adds no BOS attends to its first token as a BOS), a forward
pass that keeps only the last logits (:func:`keep_logits`) and every layer's hidden states (:func:`hidden_states`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from asc.errors import UnsupportedArchitectureError

__all__ = ["CONTEXT_KEYS", "FINAL_NORMS", "HIDDEN_KEYS", "INNER_KEYS", "LAYER_KEYS", "LAYER_PATHS",
           "OUTPUT_PROJECTIONS", "VERIFIED_TYPES", "FinalNorm", "ModelInsides", "apply_softcap", "architecture",
           "config_shape", "context_lengths", "decoder_layers", "embed", "first_token_is_sink", "hidden_states",
           "input_embeddings", "keep_logits", "layer_count", "log_probs", "logit_softcap", "model_insides",
           "predicted", "text_config", "vocab_size"]

#: Where the decoder blocks live, relative to the base model (dotted paths), first match wins.
LAYER_PATHS = ("layers", "h", "blocks", "decoder.layers", "language_model.layers", "model.layers")
#: Names of the final norm on the module that holds the decoder blocks.
FINAL_NORMS = ("norm", "ln_f", "final_layer_norm", "final_layernorm", "norm_f")
#: Projections applied after the final norm, before the head, on the same module (OPT's ``project_out``).
OUTPUT_PROJECTIONS = ("project_out",)
#: Config keys, first found wins: the number of decoder blocks, the hidden size, the MLP's inner size, the context.
LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers")
HIDDEN_KEYS = ("hidden_size", "n_embd", "d_model")
INNER_KEYS = ("intermediate_size", "n_inner", "ffn_dim")
CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "n_ctx")
#: Model types the architecture matrix checks feature by feature (module doc), plus the multimodal Gemma 3, whose
#: decoder is ``gemma3_text``'s. Others are checked on first use; only these replay their layers one by one.
VERIFIED_TYPES = frozenset({
    "llama", "mistral", "qwen2", "qwen3", "phi3", "phi", "starcoder2", "gpt_neox", "gpt2", "gpt_bigcode", "opt",
    "gemma2", "gemma3_text", "gemma3", "olmo2", "stablelm", "falcon", "codegen", "gptj", "cohere", "granite"})


# ----------------------------------------------------------------------------------------- the config

def text_config(model: Any) -> Any:
    """The text model's config of ``model`` (a model or a config): ``get_text_config()`` where it exists (a
    multimodal config's nested one), else ``text_config``, else the config itself."""
    cfg = model.config if hasattr(model, "config") else model
    if hasattr(cfg, "get_text_config"):
        return cfg.get_text_config()
    return getattr(cfg, "text_config", None) or cfg


def _first_int(cfg: Any, keys: tuple[str, ...]) -> int:
    for key in keys:
        value = getattr(cfg, key, None)
        if isinstance(value, int) and not isinstance(value, bool) and value:
            return int(value)
    return 0


def layer_count(model: Any) -> int:
    """The number of decoder (or encoder) blocks the config of ``model`` (a model or a config) names, 0 if none."""
    return _first_int(text_config(model), LAYER_KEYS)


def vocab_size(model: Any) -> int:
    """Rows of the model's output layer: its text config's vocabulary size (may exceed the tokenizer's)."""
    return int(text_config(model).vocab_size)


def context_lengths(model: Any) -> list[int]:
    """The context lengths the config names (:data:`CONTEXT_KEYS`; the model accepts the shortest)."""
    cfg = text_config(model)
    return [int(getattr(cfg, k)) for k in CONTEXT_KEYS if getattr(cfg, k, None)]


def config_shape(config: Any) -> tuple[int, int, int, int, bool]:
    """``(hidden, layers, vocab, inner, tied)`` of a config before any weight is read (``inner``: the MLP's inner
    size, ``4 * hidden`` when the config names none; ``tied``: input and output embeddings shared)."""
    cfg = text_config(config)
    hidden = _first_int(cfg, HIDDEN_KEYS)
    inner = _first_int(cfg, INNER_KEYS) or 4 * hidden
    tied = bool(getattr(cfg, "tie_word_embeddings", True))
    return hidden, _first_int(cfg, LAYER_KEYS), _first_int(cfg, ("vocab_size",)), inner, tied


def logit_softcap(model: Any) -> float | None:
    """``final_logit_softcapping`` of the model's text config (Gemma 2 and 3), None when unset or zero."""
    cfg = getattr(model, "config", None)
    if cfg is not None and hasattr(cfg, "get_text_config"):
        cfg = cfg.get_text_config()
    cap = getattr(cfg, "final_logit_softcapping", None)
    return float(cap) if cap else None


def _logit_scales(model: Any) -> tuple[float | None, float | None]:
    """(multiplier, divisor) the forward applies to the head's logits: Cohere's ``logit_scale`` (an attribute of
    the LM model, set from its config) and Granite's ``logits_scaling``; None where not set."""
    cfg = text_config(model) if hasattr(model, "config") else None
    scale = getattr(model, "logit_scale", None)
    scale = scale if isinstance(scale, (int, float)) and not isinstance(scale, bool) else None
    divisor = getattr(cfg, "logits_scaling", None)
    return (float(scale) if scale is not None and scale != 1 else None,
            float(divisor) if isinstance(divisor, (int, float)) and divisor and divisor != 1 else None)


def apply_softcap(logits: Any, cap: float | None) -> Any:
    """``tanh(logits / cap) * cap`` in float32 (the model's own soft-capping), or ``logits`` when ``cap`` is None."""
    import torch

    return logits if not cap else torch.tanh(logits.float() / cap) * cap


# ----------------------------------------------------------------------------------------- rules on logits and tokens

def log_probs(logits: Any) -> Any:
    """Log-probabilities over the vocabulary (the last axis) in float32: ``logits.float().log_softmax(-1)``."""
    return logits.float().log_softmax(-1)


def predicted(special: Any) -> np.ndarray:
    """bool (T,): the tokens that get a next-token prediction: not special (a BOS, EOS or pad token) and not the
    first (nothing comes before it)."""
    out = ~np.asarray(special, dtype=bool)
    if len(out):
        out[0] = False
    return out


def first_token_is_sink(special: Any) -> bool:
    """Whether the first token is an ordinary one: a model whose tokenizer adds no BOS (SmolLM2) attends to it as
    to a BOS, its attention sink (integrated gradients hold it, :mod:`asc.why.attribute`)."""
    return bool(len(special)) and not bool(special[0])


def keep_logits(model: Any, n: int) -> dict[str, Any]:
    """``{"logits_to_keep": n}`` when the model's forward takes it (it then computes the last ``n`` positions'
    logits only), else ``{}``: keyword arguments for the forward pass."""
    try:
        takes = "logits_to_keep" in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        takes = False
    return {"logits_to_keep": n} if takes else {}


def hidden_states(model: Any, input_ids: Any, attention_mask: Any, **extra: Any) -> tuple[Any, ...]:
    """Every layer's states (the embeddings first, ``layer_count + 1`` tensors (B, T, H)) from one pass of the
    model's base (no LM head; an encoder is its own base). ``extra``: more forward arguments (``use_cache``)."""
    base = getattr(model, "base_model", model)
    out = base(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True, **extra)
    return tuple(out.hidden_states)


# ----------------------------------------------------------------------------------------- the layout

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


def _model_of(bundle: Any) -> Any:
    """The model of a :class:`~asc.models.ModelBundle` (it has a tokenizer and a lock), or ``bundle`` itself."""
    return bundle.model if hasattr(bundle, "tokenizer") and hasattr(bundle, "lock") else bundle


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


def _module_scale(embeddings: Any) -> float:
    """The factor an embedding module applies itself (Gemma's scaled embeddings), 1.0 for a plain one."""
    scale = getattr(embeddings, "scalar_embed_scale", None)
    if scale is None and getattr(embeddings, "embed_scale", None) is not None:
        scale = float(embeddings.embed_scale)
    return float(scale) if scale else 1.0


@dataclass(frozen=True)
class ModelInsides:
    """A causal LM's parts (module doc): ``norm`` maps the last block's output to the head's input; the logit
    scales and the softcap are what the forward does to the head's output (None: nothing)."""

    kind: str
    base: Any
    owner: Any
    layers: Any
    norm: Any
    head: Any
    softcap: float | None
    embeddings: Any
    logit_scale: float | None = None
    logits_divisor: float | None = None
    input_scale: float = 1.0
    embedding_scale: float = 1.0

    @property
    def n_layers(self) -> int:
        """The number of decoder blocks."""
        return len(self.layers)

    @property
    def replayable(self) -> bool:
        """Whether the decoder layers may be called one by one from recorded arguments (module doc)."""
        return self.kind in VERIFIED_TYPES

    def finish_logits(self, logits: Any) -> Any:
        """The head's output as the model's forward returns it: scaled, divided, soft-capped (in float32)."""
        if self.logit_scale is not None:
            logits = logits * self.logit_scale
        if self.logits_divisor is not None:
            logits = logits / self.logits_divisor
        return apply_softcap(logits, self.softcap)

    def logits(self, hidden: Any, normalize: bool = True) -> Any:
        """The logits from a block's output (``normalize``: through the final norm first; False for a state the
        model has normalised already, as its last hidden state)."""
        return self.finish_logits(self.head(self.norm(hidden) if normalize else hidden))


_LAYOUTS: weakref.WeakKeyDictionary[Any, ModelInsides] = weakref.WeakKeyDictionary()
_CHECKS: weakref.WeakKeyDictionary[Any, dict[str, str]] = weakref.WeakKeyDictionary()


def _layout(model: Any, feature: str) -> ModelInsides:
    found: ModelInsides | None = _cached(_LAYOUTS, model)
    if found is not None:
        return found
    base = getattr(model, "base_model", None)
    if base is None or base is model:
        raise _refuse(feature, model, "base model (the model without its LM head)", "base_model")
    owner, layers = decoder_layers(model, feature)
    norm = _final_norm(model, owner, feature)
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if head is None:
        raise _refuse(feature, model, "output head", "get_output_embeddings()")
    embeddings = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    found = ModelInsides(architecture(model), base, owner, layers, norm, head, None, embeddings)
    _store(_LAYOUTS, model, found)
    return found


def _cached(table: weakref.WeakKeyDictionary[Any, Any], model: Any) -> Any:
    try:
        return table.get(model)
    except TypeError:  # not weakly referable (a test double)
        return None


def _store(table: weakref.WeakKeyDictionary[Any, Any], model: Any, value: Any) -> None:
    try:
        table[model] = value
    except TypeError:
        pass


def model_insides(bundle: Any, feature: str = "this feature") -> ModelInsides:
    """The parts of ``bundle`` (a :class:`~asc.models.ModelBundle` or a bare model), the layout found once per
    model and the config's values read now; an :class:`UnsupportedArchitectureError` that names ``feature``, the
    architecture and the supported names of the first part not found, or, for a type outside
    :data:`VERIFIED_TYPES`, the part whose check fails (module doc)."""
    model = _model_of(bundle)
    layout = _layout(model, feature)
    scale, divisor = _logit_scales(model)
    multiplier = getattr(text_config(model), "embedding_multiplier", None)
    input_scale = float(multiplier) if isinstance(multiplier, (int, float)) and multiplier else 1.0
    found = dataclasses.replace(layout, softcap=logit_softcap(model), logit_scale=scale, logits_divisor=divisor,
                                input_scale=input_scale,
                                embedding_scale=_module_scale(layout.embeddings) * input_scale)
    _verify(model, feature, "output", found, getattr(bundle, "lock", None))
    return found


def input_embeddings(bundle: Any, feature: str = "this feature") -> Any:
    """The model's input embedding module (``get_input_embeddings()``), whose output features feed as
    ``inputs_embeds``; for a type outside :data:`VERIFIED_TYPES`, checked once to give the ids' logits."""
    model = _model_of(bundle)
    _verify(model, feature, "embeddings", None, getattr(bundle, "lock", None))
    return model.get_input_embeddings()


def embed(bundle: Any, ids: Any, feature: str = "this feature") -> Any:
    """The input embeddings (B, T, H) of token ids (B, T) (a tensor on the model's device) as the model computes
    them (a scaled embedding module's scale included, as Gemma's)."""
    return input_embeddings(bundle, feature)(ids)


def _verify(model: Any, feature: str, part: str, insides: ModelInsides | None, lock: Any = None) -> None:
    """Refuse ``feature`` on a model outside :data:`VERIFIED_TYPES` whose ``part`` (``"embeddings"``: logits from
    input embeddings; ``"output"``: logits from the last block's output) does not give the model's logits."""
    import torch

    kind = architecture(model)
    if kind in VERIFIED_TYPES or not isinstance(model, torch.nn.Module):
        return
    found: dict[str, str] | None = _cached(_CHECKS, model)
    if found is None or part not in found:
        with lock or contextlib.nullcontext():  # the bundle's forward passes wait (the check hooks a layer)
            found = {**(found or {}), part: _check(model, part, insides)}
        _store(_CHECKS, model, found)
    if found[part]:
        raise UnsupportedArchitectureError(
            f"{feature} does not support {kind} ({type(model).__name__}): {found[part]}; the architectures "
            f"checked are {', '.join(sorted(VERIFIED_TYPES))} (others work where the checks pass)")


def _check(model: Any, part: str, insides: ModelInsides | None) -> str:
    """'' when ``part`` gives the model's logits on a 4-token input, else what differs."""
    import torch

    first = next(model.parameters())
    ids = (torch.arange(1, 5, device=first.device) % max(1, vocab_size(model)))[None]
    kept: list[Any] = []
    hook = None
    if insides is not None:
        def keep(module: Any, args: Any, output: Any) -> None:
            kept.append(output[0] if isinstance(output, tuple) else output)

        hook = insides.layers[-1].register_forward_hook(keep)
    try:
        with torch.inference_mode():
            want = model(input_ids=ids, use_cache=False).logits.float()
            if insides is None:
                got = model(inputs_embeds=model.get_input_embeddings()(ids), use_cache=False).logits.float()
            else:
                got = insides.logits(kept[-1]).float()
    finally:
        if hook is not None:
            hook.remove()
    tolerance = (1e-4 if first.dtype == torch.float32 else 3e-2) * max(1.0, float(want.abs().max()))
    gap = float((got - want).abs().max()) if got.shape == want.shape else float("inf")
    if gap <= tolerance:
        return ""
    what = ("its logits from input embeddings differ from its logits from token ids" if part == "embeddings" else
            "the final norm, head, logit scale and softcap found do not reproduce its logits")
    return f"{what} (by {gap:.3g})"
