"""Every ``ASC_*`` environment variable and every default folder, read in one place.

Other modules ask here instead of reading ``os.environ`` (a test in ``tests/test_architecture.py``
enforces it). Functions, not constants: the environment is read when asked, so a test or a server
that sets a variable before use is honoured.

| variable | meaning | default |
|---|---|---|
| ``ASC_RUNS_DIR`` | corpus runs, probe results, attention runs, the study's files | ``<base>/runs`` |
| ``ASC_CACHE_DIR`` | de-quantized GGUF weights | ``$XDG_CACHE_HOME/asc-studio`` or ``~/.cache/asc-studio`` |
| ``ASC_DATA_ROOTS`` | folders (``os.pathsep``-separated) the app's corpus runs may read | not set: any folder |
| ``ASC_MODEL`` | the model the app starts on | ``smollm2-135m`` |
| ``ASC_MODEL_MODULES`` | comma-separated Python modules imported with :mod:`asc.models` to register more named models (the tests' ``tests.support.models`` adds ``tiny-random``) | none |
| ``ASC_STUDY_MODE`` | ``1``: serve only the user study | off |
| ``ASC_STUDY`` | the study file | ``assets/studies/astxplainer.yaml`` |
| ``ASC_STUDY_DIR`` | the study's frozen file and SQLite database | ``<runs>/study`` |
| ``ASC_STUDY_DB`` | the study's database (any SQLAlchemy URL) | SQLite in ``ASC_STUDY_DIR`` |
| ``ASC_STUDY_PASSWORD`` | the researcher password of the results page | not set: page locked |
| ``ASC_SHARED`` | ``1``: shared mode (others can reach the app), ``0``: local mode | from the server address |
| ``ASC_ALLOWED_MODELS`` | comma-separated model ids a shared app offers besides the embedded ones | none |
| ``ASC_ALLOW_REMOTE_CODE`` | ``1``: a shared app offers "Trust remote code" | off |
| ``ASC_PASSWORD`` | a password every visitor types before the app shows anything | not set: no gate |
| ``ASC_TOKEN`` | the access token a visitor presents (``?token=``); ``off``: none | local mode: a random one per start |
| ``ASC_RAY_ADDRESS`` | the Ray cluster ``--engine ray`` and the app's corpus runs join (``HOST:6379``, ``ray://HOST:10001``; ``auto`` not in shared mode) | not set: a local Ray (the app: no Ray) |

``RAY_USE_TLS`` (Ray's own variable, read by :func:`ray_uses_tls`) tells the probe of a cluster's address to expect TLS.
``HOST`` and ``PORT`` (``make app``'s variables, read by :func:`app_defaults`) are the address and port ``asc-studio``
serves on when its command line does not say.

Relative folders are taken relative to a base folder (:func:`base_folder`): in a clone the clone's folder, not the
working directory, so ``make app``, the CLI and the tests agree on where runs live; installed with pip (the app's
files then lie in the ``asc_app`` package, :data:`APP_ROOT`), the working directory, where ``asc``, ``asc-studio``
and a notebook are started (the app's server keeps its launcher's working directory).
"""

from __future__ import annotations

import os
from pathlib import Path

from asc.errors import InputError

__all__ = [
    "APP_INSTALLED", "APP_ROOT", "ASSETS", "base_folder", "CATEGORIES_DIR", "DEFAULT_MODEL", "DEFAULT_STUDY", "EXAMPLES_DIR", "attention_dir", "blanca_dir",
    "cache_dir", "data_roots", "default_model", "gluecode_dir", "layers_dir", "model_modules", "runs_dir", "study_db_url", "study_dir", "study_file", "study_mode", "study_password",
    "SECRET_VARIABLES", "access_token", "allow_remote_code", "app_defaults", "allowed_models", "app_password", "child_environment",
    "quiet_libraries", "ray_address", "triton_interpreter", "ray_uses_tls", "shared_override", "untrusted_environment",
]

_ABOVE = Path(__file__).resolve().parent.parent  # a clone's folder, or site-packages when installed with pip
#: The app's files (app.py, pages/, assets/, .streamlit/): the clone's folder, or where the wheel put them (the
#: ``asc_app`` package beside ``asc``)
APP_ROOT = _ABOVE / "asc_app" if (_ABOVE / "asc_app" / "app.py").is_file() else _ABOVE
APP_INSTALLED = APP_ROOT != _ABOVE  # installed with pip, not run from a clone
ASSETS = APP_ROOT / "assets"
CATEGORIES_DIR = ASSETS / "categories"
EXAMPLES_DIR = ASSETS / "examples"
DEFAULT_STUDY = ASSETS / "studies" / "astxplainer.yaml"
DEFAULT_MODEL = "smollm2-135m"  # the embedded model the app and the CLI start on (asc.models lists it)


def _env(name: str) -> str:
    return os.environ.get(name, "").strip()


def base_folder() -> Path:
    """What relative folders are taken relative to: the clone's folder (:data:`APP_ROOT`), or the working directory
    when installed with pip (:data:`APP_INSTALLED`)."""
    return Path.cwd() if APP_INSTALLED else APP_ROOT


def _folder(value: str) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else base_folder() / path


def runs_dir() -> Path:
    """Where corpus runs, probe results and attention runs live: ``$ASC_RUNS_DIR`` or ``runs`` in :func:`base_folder`."""
    return _folder(_env("ASC_RUNS_DIR") or "runs")


def layers_dir() -> Path:
    """Where the Layer heatmaps page keeps probe results: ``<runs>/layers``."""
    return runs_dir() / "layers"


def attention_dir() -> Path:
    """Where the Attention maps page keeps its runs: ``<runs>/attention``."""
    return runs_dir() / "attention"


def gluecode_dir() -> Path:
    """Where the Benchmark tasks (glueCode) page keeps task sets and predictions: ``<runs>/gluecode``."""
    return runs_dir() / "gluecode"


def blanca_dir() -> Path:
    """Where the Text about code (BLANCA) page keeps task sets, scores and embeddings: ``<runs>/blanca``."""
    return runs_dir() / "blanca"


def data_roots() -> list[Path] | None:
    """Folders the app's corpus runs may read (``$ASC_DATA_ROOTS``, ``os.pathsep``-separated); None when unset.

    The built-in corpora are always allowed; the command line is not restricted (its user owns the files)."""
    value = _env("ASC_DATA_ROOTS")
    if not value:
        return None
    return [_folder(part.strip()) for part in value.split(os.pathsep) if part.strip()]


def cache_dir() -> Path:
    """Where de-quantized GGUF weights are kept: ``$ASC_CACHE_DIR`` or ``~/.cache/asc-studio``."""
    if _env("ASC_CACHE_DIR"):
        return Path(_env("ASC_CACHE_DIR")).expanduser()
    return Path(_env("XDG_CACHE_HOME") or Path.home() / ".cache") / "asc-studio"


def default_model() -> str:
    """The model the app starts on: ``$ASC_MODEL`` (the tests' ``tiny-random``) or the embedded default."""
    return _env("ASC_MODEL") or DEFAULT_MODEL


def model_modules() -> tuple[str, ...]:
    """``ASC_MODEL_MODULES``: the modules that register more named models (:func:`asc.models.register_model`),
    comma-separated dotted names; anything else in the list is refused with the fix."""
    names = tuple(n.strip() for n in _env("ASC_MODEL_MODULES").split(",") if n.strip())
    bad = [n for n in names if not all(part.isidentifier() for part in n.split("."))]
    if bad:
        raise InputError(f"ASC_MODEL_MODULES names {bad}: give comma-separated module names such as "
                         "'tests.support.models'")
    return names


def study_mode() -> bool:
    """``ASC_STUDY_MODE=1``: the app serves only the participant page (no sidebar, no navigation)."""
    return _env("ASC_STUDY_MODE").lower() not in ("", "0", "false", "no")


def study_file() -> Path:
    """The study the app serves: ``$ASC_STUDY`` or the paper's design shipped in ``assets/studies``."""
    return Path(_env("ASC_STUDY")).expanduser() if _env("ASC_STUDY") else DEFAULT_STUDY


def study_dir() -> Path:
    """Folder of the study's frozen file and SQLite database: ``$ASC_STUDY_DIR`` or ``<runs>/study``."""
    return _folder(_env("ASC_STUDY_DIR")) if _env("ASC_STUDY_DIR") else runs_dir() / "study"


def study_db_url() -> str:
    """The study's database URL from ``$ASC_STUDY_DB`` (any SQLAlchemy URL); "" = the default SQLite file
    in :func:`study_dir` (:func:`asc.study.store.default_url` builds it)."""
    return _env("ASC_STUDY_DB")


def study_password() -> str:
    """The researcher password from ``$ASC_STUDY_PASSWORD`` ("" = not set; the app also reads its secrets)."""
    return os.environ.get("ASC_STUDY_PASSWORD", "")


def _flag(name: str) -> bool | None:
    value = _env(name).lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    return None


def shared_override() -> bool | None:
    """``$ASC_SHARED``: True (``1``) forces shared mode, False (``0``) local mode; None (unset): the app decides
    from its server address (:meth:`asc.access.AccessPolicy.from_environment`)."""
    return _flag("ASC_SHARED")


def allowed_models() -> tuple[str, ...]:
    """Model ids a shared app offers besides the embedded models: ``$ASC_ALLOWED_MODELS`` (comma-separated)."""
    return tuple(m.strip() for m in _env("ASC_ALLOWED_MODELS").split(",") if m.strip())


def allow_remote_code() -> bool:
    """``ASC_ALLOW_REMOTE_CODE=1``: a shared app offers "Trust remote code" (a local app always does)."""
    return bool(_flag("ASC_ALLOW_REMOTE_CODE"))


def app_password() -> str:
    """The password of the whole app from ``$ASC_PASSWORD`` ("" = no password gate)."""
    return os.environ.get("ASC_PASSWORD", "")


TOKEN_OFF = "off"  # ASC_TOKEN=off: no access token (an explicit choice; see asc.access.server_token)


def access_token() -> str:
    """``$ASC_TOKEN``: the access token visitors present (``?token=...`` or the token box); ``"off"``
    (:data:`TOKEN_OFF`, any case) switches the token off; ``""`` when unset (a local app then makes a random
    one: :func:`asc.access.server_token`)."""
    value = _env("ASC_TOKEN")
    return TOKEN_OFF if value.lower() == TOKEN_OFF else value


def child_environment(**values: str) -> dict[str, str]:
    """This process's environment with ``values`` set, for a child process of ours (e.g. the launcher's server,
    which needs the token); a child that runs code not ours gets :func:`untrusted_environment`."""
    return {**os.environ, **values}


#: Variables that hold secrets: the access token, the passwords, the study database's URL (it may hold one).
SECRET_VARIABLES = ("ASC_TOKEN", "ASC_PASSWORD", "ASC_STUDY_PASSWORD", "ASC_STUDY_DB")


def untrusted_environment() -> dict[str, str]:
    """This process's environment without :data:`SECRET_VARIABLES`, for a child process that runs code not ours
    (HumanEval's tests on model-generated code, mypy on a user's corpus): what it prints or sends cannot hold
    the server's token or passwords."""
    return {name: value for name, value in os.environ.items() if name not in SECRET_VARIABLES}


def triton_interpreter() -> bool:
    """Whether Triton runs kernels in its CPU interpreter (``TRITON_INTERPRET=1``, Triton's own variable), so
    :mod:`asc.kernels` may hand it CPU tensors."""
    return _env("TRITON_INTERPRET") == "1"


def app_defaults() -> tuple[str, str]:
    """What ``make app`` sets, for ``asc-studio``: ``HF_HUB_OFFLINE=1`` and ``TOKENIZERS_PARALLELISM=false`` where the
    user has not set them; returns the address and port it serves on, ``$HOST`` and ``$PORT`` as ``make app`` reads
    them (127.0.0.1 and 8501 when unset)."""
    for name, value in (("HF_HUB_OFFLINE", "1"), ("TOKENIZERS_PARALLELISM", "false")):
        os.environ.setdefault(name, value)
    return _env("HOST") or "127.0.0.1", _env("PORT") or "8501"


def quiet_libraries() -> None:
    """Set (where the user has not) the variables that keep transformers and the hub from logging warnings and
    progress bars; read when transformers is imported, so only commands that load a model pay for it."""
    for name, value in (("TRANSFORMERS_VERBOSITY", "error"), ("HF_HUB_DISABLE_PROGRESS_BARS", "1")):
        os.environ.setdefault(name, value)


def ray_address() -> str | None:
    """The Ray cluster ``--engine ray`` joins by default: ``$ASC_RAY_ADDRESS`` (None: start a local Ray)."""
    return _env("ASC_RAY_ADDRESS") or None


def ray_uses_tls() -> bool:
    """``RAY_USE_TLS=1`` (Ray's own variable): the cluster's gRPC servers speak TLS."""
    return bool(_flag("RAY_USE_TLS"))
