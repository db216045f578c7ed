"""Domain errors whose messages name the fix.

Every error the backend raises on purpose derives from :class:`AscError`, so the CLI and the pages
can show ``str(error)`` as one clear line instead of a traceback.
"""

from __future__ import annotations

__all__ = ["AscError", "UnknownModelError", "ModelLoadError", "InputError", "TooDeepError", "CorpusError",
           "MissingExtraError", "UnsupportedArchitectureError"]


class AscError(Exception):
    """Base class: the message is meant for the user and says what to do."""


class UnknownModelError(AscError, KeyError):
    """A model name that is neither embedded, a local path nor a plausible Hugging Face id."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class ModelLoadError(AscError):
    """The model was found but could not be loaded (missing package, no network, bad files)."""


class InputError(AscError, ValueError):
    """Source text or a file the user gave cannot be analysed as it is."""


class TooDeepError(InputError):
    """Code whose syntax tree nests deeper than :data:`asc.syntax.MAX_AST_DEPTH` levels (refused right after parsing)."""


class CorpusError(AscError, ValueError):
    """A corpus spec that names nothing loadable, or a run folder that does not match."""


class MissingExtraError(AscError):
    """An optional feature whose packages are not installed; the message names the pip extra that installs them
    (raised by :func:`asc.extras.require`)."""


class UnsupportedArchitectureError(InputError):
    """A model whose layout a feature does not know: the message names the feature, the architecture and the
    supported names of the part not found (raised by :mod:`asc.arch`)."""
