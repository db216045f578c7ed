"""A sparse autoencoder on the residual stream, kept in SAELens's folder layout (``cfg.json`` + ``sae_weights.safetensors``).

**What it computes.** SAELens's inference SAEs (``sae_lens/saes/topk_sae.py``, ``standard_sae.py``,
``jumprelu_sae.py`` and the base ``sae.py``, read for this module): the input is centred on the decoder bias when
``apply_b_dec_to_input`` (``x - b_dec``), the pre-activations are ``(x - b_dec) @ W_enc + b_enc``, the activation is
``topk`` (keep the ``k`` largest pre-activations, ReLU them, zero the rest), ``standard`` (ReLU) or ``jumprelu``
(keep a pre-activation above its ``threshold``), and the reconstruction is ``acts @ W_dec + b_dec``. Shapes as in
SAELens: ``W_enc`` (d_in, d_sae), ``W_dec`` (d_sae, d_in), ``b_enc`` (d_sae,), ``b_dec`` (d_in,).

**The folder.** :func:`save_sae` writes SAELens 6's layout: ``sae_weights.safetensors`` with those four tensors
(plus ``threshold`` for jumprelu) and ``cfg.json`` with ``d_in``, ``d_sae``, ``dtype``, ``device``,
``apply_b_dec_to_input``, ``normalize_activations``, ``reshape_activations``, ``architecture``, ``k``,
``rescale_acts_by_decoder_norm`` and ``metadata`` (``model_name``, ``hook_name`` such as
``blocks.{L}.hook_resid_post``, ``sae_lens_version``: the SAELens version whose layout is written, so SAELens's
loader does not convert it as a pre-6.0 config). :func:`load_sae` reads that layout and SAELens's pre-6.0 one (flat
``model_name``/``hook_name`` or ``hook_point``, ``activation_fn`` ``topk`` with ``activation_fn_kwargs.k``).

**Where the residual stream is.** ``blocks.{L}.hook_resid_post`` is the output of decoder block ``L`` (from 0),
before any final norm (TransformerLens's convention; the last entry of transformers' hidden states has the final
norm applied, so the block's output is read with a hook instead: :mod:`probes.sae.activations`).
``blocks.{L}.hook_resid_pre`` is block ``L - 1``'s output.

**Departures.** Only ``normalize_activations: "none"`` is read: SAELens's ``expected_average_only_in`` needs a
scaling factor that is not in the folder (our training folds its factor into the weights before saving, as SAELens's
``fold_activation_norm_scaling_factor`` does), and the run-time ``layer_norm``/``constant_norm_rescale`` modes and
attention-head (``hook_z``) SAEs are refused with one line. A model is matched by name loosely (case, punctuation
and a hub owner ignored: ``HuggingFaceTB/SmolLM2-135M`` is ``smollm2-135m``) and by width (``d_in``).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from asc.atomic import write_atomic
from asc.errors import InputError

if TYPE_CHECKING:
    from asc.models import ModelBundle

__all__ = ["ARCHITECTURES", "CFG_FILE", "SAELENS_FORMAT", "WEIGHTS_FILE", "SaeConfig", "SaeMismatchError",
           "SparseAutoencoder", "check_sae_for", "config_dict", "hook_name", "layer_of_hook", "load_sae", "save_sae",
           "with_metadata"]

CFG_FILE = "cfg.json"  # SAELens's SAE_CFG_FILENAME
WEIGHTS_FILE = "sae_weights.safetensors"  # SAELens's SAE_WEIGHTS_FILENAME
SAELENS_FORMAT = "6.54.12"  # the SAELens release whose layout save_sae writes (read from its source)
ARCHITECTURES = ("topk", "standard", "jumprelu")
_HOOK = re.compile(r"^blocks\.(\d+)\.hook_resid_(post|pre)$")


class SaeMismatchError(InputError):
    """An SAE used with a model or layer it was not trained on: the message names both."""


def hook_name(layer: int) -> str:
    """SAELens's (TransformerLens's) name of the residual stream after block ``layer``."""
    return f"blocks.{layer}.hook_resid_post"


def layer_of_hook(name: str) -> int:
    """The block whose output ``name`` is (``hook_resid_post`` of L: L; ``hook_resid_pre`` of L: L - 1), or an
    InputError naming the hooks read."""
    m = _HOOK.match(name or "")
    if not m or (m.group(2) == "pre" and int(m.group(1)) == 0):
        raise InputError(f"SAE hook {name!r} is not read here: only residual-stream SAEs after a block "
                         "(blocks.L.hook_resid_post, or blocks.L.hook_resid_pre with L >= 1)")
    return int(m.group(1)) - (1 if m.group(2) == "pre" else 0)


@dataclass(frozen=True)
class SaeConfig:
    """What ``cfg.json`` says (module doc); ``metadata`` keeps every other metadata key as it was read."""

    d_in: int
    d_sae: int
    architecture: str = "topk"
    k: int = 0
    model_name: str = ""
    hook_name: str = ""
    dtype: str = "float32"
    apply_b_dec_to_input: bool = True
    rescale_acts_by_decoder_norm: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def layer(self) -> int:
        """The block whose output the SAE reads (:func:`layer_of_hook`)."""
        return layer_of_hook(self.hook_name)

    def to_cfg(self) -> dict[str, Any]:
        """The ``cfg.json`` dict, SAELens 6's layout."""
        meta = {"sae_lens_version": SAELENS_FORMAT, "sae_lens_training_version": None, **self.metadata,
                "model_name": self.model_name, "hook_name": self.hook_name}
        out: dict[str, Any] = {"d_in": self.d_in, "d_sae": self.d_sae, "dtype": self.dtype, "device": "cpu",
                               "apply_b_dec_to_input": self.apply_b_dec_to_input, "normalize_activations": "none",
                               "reshape_activations": "none", "metadata": meta, "architecture": self.architecture}
        if self.architecture == "topk":
            out.update(k=self.k, rescale_acts_by_decoder_norm=self.rescale_acts_by_decoder_norm)
        return out


def _read_cfg(raw: dict[str, Any], where: str) -> SaeConfig:
    """A :class:`SaeConfig` from SAELens 6's ``cfg.json`` or a pre-6.0 one (module doc)."""
    meta = dict(raw.get("metadata") or {})
    flat = {k: raw[k] for k in ("model_name", "hook_name", "hook_point") if k in raw}
    model = meta.get("model_name") or flat.get("model_name") or ""
    hook = meta.get("hook_name") or flat.get("hook_name") or flat.get("hook_point") or ""
    arch = raw.get("architecture") or "standard"
    fn = raw.get("activation_fn") or raw.get("activation_fn_str")
    k = raw.get("k") or (raw.get("activation_fn_kwargs") or {}).get("k") or 0
    if fn == "topk" and arch == "standard":
        arch = "topk"
    if arch not in ARCHITECTURES:
        raise InputError(f"{where}: SAE architecture {arch!r} is not read here; read: {', '.join(ARCHITECTURES)}")
    norm = raw.get("normalize_activations") or "none"
    if norm not in ("none", False):
        raise InputError(f"{where}: normalize_activations={norm!r} is not supported: fold the scaling into the "
                         "weights (SAELens's fold_activation_norm_scaling_factor) and save with 'none'")
    if (raw.get("reshape_activations") or "none") != "none":
        raise InputError(f"{where}: attention-head SAEs (reshape_activations={raw['reshape_activations']!r}) are "
                         "not read here: give a residual-stream SAE")
    try:
        d_in, d_sae, k = int(raw["d_in"]), int(raw["d_sae"]), int(k)
    except (KeyError, TypeError, ValueError):
        raise InputError(f"{where}: cfg.json needs whole numbers d_in and d_sae (SAELens's layout)") from None
    if arch == "topk" and not 1 <= k <= d_sae:
        raise InputError(f"{where}: a topk SAE needs k between 1 and d_sae={d_sae}, got {k}")
    layer_of_hook(hook)
    meta = {key: v for key, v in meta.items() if key not in ("model_name", "hook_name")}
    return SaeConfig(d_in, d_sae, arch, k, str(model), str(hook), str(raw.get("dtype") or "float32"),
                     bool(raw.get("apply_b_dec_to_input", True)), bool(raw.get("rescale_acts_by_decoder_norm", False)),
                     meta)


class SparseAutoencoder(torch.nn.Module):  # type: ignore[misc]
    """SAELens's inference SAE (module doc) as a torch module: :meth:`encode`, :meth:`decode`, ``forward`` (both)."""

    def __init__(self, cfg: SaeConfig, weights: dict[str, torch.Tensor] | None = None) -> None:
        super().__init__()
        self.cfg = cfg
        d, m = cfg.d_in, cfg.d_sae
        w = weights or {}
        self.W_enc = torch.nn.Parameter(w.get("W_enc", torch.zeros(d, m)).float().clone())
        self.W_dec = torch.nn.Parameter(w.get("W_dec", torch.zeros(m, d)).float().clone())
        self.b_enc = torch.nn.Parameter(w.get("b_enc", torch.zeros(m)).float().clone())
        self.b_dec = torch.nn.Parameter(w.get("b_dec", torch.zeros(d)).float().clone())
        if cfg.architecture == "jumprelu":
            self.threshold = torch.nn.Parameter(w.get("threshold", torch.zeros(m)).float().clone())

    def pre_activations(self, x: torch.Tensor) -> torch.Tensor:
        """(..., d_sae): ``(x - b_dec) @ W_enc + b_enc`` (times the decoder norms when SAELens's
        ``rescale_acts_by_decoder_norm`` is set)."""
        x = x.float()
        if self.cfg.apply_b_dec_to_input:
            x = x - self.b_dec
        pre = x @ self.W_enc + self.b_enc
        if self.cfg.rescale_acts_by_decoder_norm:
            pre = pre * self.W_dec.norm(dim=-1)
        return pre

    def activate(self, pre: torch.Tensor) -> torch.Tensor:
        """The activation of the architecture on pre-activations (topk: the k largest, ReLU'd, others 0)."""
        if self.cfg.architecture == "topk":
            values, index = torch.topk(pre, k=self.cfg.k, dim=-1, sorted=False)
            return torch.zeros_like(pre).scatter_(-1, index, values.relu())
        if self.cfg.architecture == "jumprelu":
            return pre * (pre > self.threshold)
        return pre.relu()

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """(..., d_in) activations -> (..., d_sae) latent activations."""
        return self.activate(self.pre_activations(x))

    def decode(self, acts: torch.Tensor) -> torch.Tensor:
        """(..., d_sae) latent activations -> (..., d_in) reconstruction."""
        if self.cfg.rescale_acts_by_decoder_norm:
            acts = acts / self.W_dec.norm(dim=-1)
        return acts @ self.W_dec + self.b_dec

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The reconstruction of ``x``."""
        return self.decode(self.encode(x))

    def check_for(self, bundle: Any) -> int:
        """:func:`check_sae_for` ``(self, bundle)``: the layer it reads, or a :class:`SaeMismatchError`."""
        return check_sae_for(self, bundle)

    def node_features(self, explanation: Any, bundle: Any, top: int = 5) -> Any:
        """:func:`probes.sae.nodes.features` ``(self, explanation, bundle, top)``: what
        :meth:`asc.explain.Explanation.features` calls."""
        from probes.sae.nodes import features

        return features(self, explanation, bundle, top)

    def weights(self) -> dict[str, torch.Tensor]:
        """SAELens's state dict: the tensors ``sae_weights.safetensors`` holds (contiguous, on the CPU)."""
        return {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}


def save_sae(sae: SparseAutoencoder, folder: str | Path) -> Path:
    """Write ``sae`` into ``folder`` in SAELens's layout (each file atomically); the folder."""
    from safetensors.torch import save_file

    folder = Path(folder)
    state = sae.weights()
    write_atomic(folder / WEIGHTS_FILE, lambda tmp: save_file(state, str(tmp)))
    cfg = json.dumps(sae.cfg.to_cfg(), indent=1, default=str)
    write_atomic(folder / CFG_FILE, lambda tmp: tmp.write_text(cfg, encoding="utf-8"))
    return folder


def load_sae(folder: str | Path) -> SparseAutoencoder:
    """The SAE saved in ``folder`` (SAELens's layout, module doc), or an InputError naming what is missing or wrong."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    folder = Path(folder)
    where = str(folder)
    if not folder.is_dir():
        raise InputError(f"{where} is not a folder: give an SAE folder (cfg.json and sae_weights.safetensors)")
    for name in (CFG_FILE, WEIGHTS_FILE):
        if not (folder / name).is_file():
            raise InputError(f"{where} has no {name}: give an SAE folder in SAELens's layout (python -m probes sae "
                             "train writes one)")
    try:
        raw = json.loads((folder / CFG_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(f"{where}/{CFG_FILE} is not readable JSON ({err})") from None
    if not isinstance(raw, dict):
        raise InputError(f"{where}/{CFG_FILE} is not a JSON object")
    cfg = _read_cfg(raw, where)
    try:
        weights = load_file(str(folder / WEIGHTS_FILE))
    except (OSError, SafetensorError) as err:
        raise InputError(f"{where}/{WEIGHTS_FILE} is not a safetensors file ({err})") from None
    want = {"W_enc": (cfg.d_in, cfg.d_sae), "W_dec": (cfg.d_sae, cfg.d_in), "b_enc": (cfg.d_sae,),
            "b_dec": (cfg.d_in,)}
    if cfg.architecture == "jumprelu":
        want["threshold"] = (cfg.d_sae,)
    for key, shape in want.items():
        got = tuple(weights[key].shape) if key in weights else None
        if got != shape:
            raise InputError(f"{where}: {key} is {got or 'missing'}, but cfg.json's d_in={cfg.d_in} and "
                             f"d_sae={cfg.d_sae} need {shape}: the weights are of another SAE width")
    sae = SparseAutoencoder(cfg, weights)
    sae.eval()
    return sae


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.rsplit("/", 1)[-1].lower())


def check_sae_for(sae: SparseAutoencoder, bundle: ModelBundle, layer: int | None = None) -> int:
    """The layer ``sae`` reads in ``bundle``'s model, or a :class:`SaeMismatchError` naming both models, both widths
    or both layers when the SAE was trained on another model or layer (or ``layer`` is outside the model)."""
    from asc.arch import config_shape, model_insides

    insides = model_insides(bundle, "SAE features")
    cfg = sae.cfg
    names = {_key(bundle.name), _key(str(bundle.source))}
    if cfg.model_name and _key(cfg.model_name) not in names:
        raise SaeMismatchError(f"the SAE was trained on {cfg.model_name!r}, not on {bundle.name!r}: give --model "
                               f"{cfg.model_name} or an SAE of {bundle.name}")
    width = config_shape(bundle.model)[0]
    if width != cfg.d_in:
        raise SaeMismatchError(f"the SAE reads {cfg.d_in}-wide activations but {bundle.name}'s residual stream is "
                               f"{width} wide: it belongs to another model")
    own = cfg.layer
    if layer is not None and layer != own:
        raise SaeMismatchError(f"the SAE reads layer {own} ({cfg.hook_name}), not layer {layer}: give --layer {own} "
                               f"or an SAE of layer {layer}")
    if own >= insides.n_layers:
        raise SaeMismatchError(f"the SAE reads layer {own} but {bundle.name} has {insides.n_layers} layers (0 to "
                               f"{insides.n_layers - 1}): it belongs to another model")
    return own


def with_metadata(cfg: SaeConfig, **extra: Any) -> SaeConfig:
    """``cfg`` with ``extra`` merged into its metadata (provenance keys SAELens keeps as they are)."""
    return replace(cfg, metadata={**cfg.metadata, **extra})


def config_dict(cfg: SaeConfig) -> dict[str, Any]:
    """The config as a plain dict (JSON reports)."""
    return asdict(cfg)
