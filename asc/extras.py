"""Optional dependency groups ("extras" of the ``asc-studio`` distribution) and the check that names the missing one.

``pip install asc-studio`` installs the core: what ``import asc``, ``asc explain``, ``asc eval`` (local),
``asc compare`` and ``asc branch`` need. Each feature below needs an extra as well (``pyproject.toml`` lists
their packages; a clone's ``make setup`` installs all of them from ``requirements.txt``):

| extra | feature |
|---|---|
| ``app`` | the Streamlit app (``asc-studio``), the user study; also pulls ``causal`` and ``probes`` for its pages |
| ``ray`` | corpus runs on a Ray cluster (``--engine ray``) |
| ``probes`` | layer probes, glueCode and BLANCA (``asc-probes``), the embedded MiniLM encoder |
| ``causal`` | AsC-Causal (``asc causal``) |
| ``why`` | gradient attributions (``asc attribute --method gradient|ig``) |
| ``models`` | the embedded Gemma 3 270M |
| ``all`` | every extra |

A feature calls :func:`require` before it imports its optional packages; when one is missing it raises
:class:`~asc.errors.MissingExtraError`, one line that names the extra (the CLI prints it and exits 2)::

    error: --engine ray needs ray, which is not installed: pip install 'asc-studio[ray]' (a clone: make setup)

The check asks the import system whether the package can be found (:func:`importlib.util.find_spec`), so it costs
no import; a module set to ``None`` in ``sys.modules`` counts as missing (the tests block extras that way).
"""

from __future__ import annotations

import importlib.util
import sys

from asc.errors import MissingExtraError

__all__ = ["DISTRIBUTION", "EXTRAS", "install_hint", "missing_modules", "require"]

DISTRIBUTION = "asc-studio"

#: Every extra and what it adds (``pyproject.toml``'s ``[project.optional-dependencies]`` has the same keys).
EXTRAS: dict[str, str] = {
    "app": "the Streamlit app (asc-studio) and the user study, with the packages of every page",
    "ray": "corpus runs on a Ray cluster (--engine ray)",
    "probes": "layer probes, glueCode and BLANCA (asc-probes), the embedded MiniLM encoder",
    "causal": "AsC-Causal (asc causal)",
    "why": "gradient attributions (asc attribute)",
    "models": "the embedded Gemma 3 270M",
    "all": "every extra",
}

# import names that differ from the names pip installs
_PIP_NAMES = {"sklearn": "scikit-learn", "sentence_transformers": "sentence-transformers", "yaml": "PyYAML",
              "sqlalchemy": "SQLAlchemy"}


def install_hint(extra: str) -> str:
    """The command that installs ``extra``: ``pip install 'asc-studio[extra]'`` (a clone has every extra already
    after ``make setup``)."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; the extras are {sorted(EXTRAS)}")
    return f"pip install '{DISTRIBUTION}[{extra}]' (a clone: make setup)"


def missing_modules(*modules: str) -> list[str]:
    """The top-level packages of ``modules`` that cannot be imported here (not installed, or blocked with ``None``
    in ``sys.modules``), in the order given."""
    missing = []
    for module in modules:
        top = module.split(".")[0]
        if sys.modules.get(top) is not None:  # imported already (a stand-in without __spec__ too)
            continue
        try:
            found = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            found = None
        if found is None and top not in missing:
            missing.append(top)
    return missing


def require(*modules: str, extra: str, feature: str) -> None:
    """Check that ``modules`` (import names, e.g. ``"ray"``, ``"sklearn"``) can be imported before ``feature`` uses
    them; :class:`~asc.errors.MissingExtraError` naming ``extra`` when one cannot."""
    missing = missing_modules(*modules)
    if missing:
        names = ", ".join(_PIP_NAMES.get(m, m) for m in missing)
        verb = "is" if len(missing) == 1 else "are"
        raise MissingExtraError(f"{feature} needs {names}, which {verb} not installed: {install_hint(extra)}")
