"""PLACEHOLDER for the corruptions of issue 30: the other helper's module replaces this file at merge.

It holds only what :mod:`asc.why.patching` and ``python -m asc intervene`` need, written to the shared
contract: :class:`Edit` and :class:`Corruption` exactly as the design note gives them, and a :func:`corrupt`
that knows one kind, ``rename:NAME`` (every whole-word occurrence of NAME, found by a regular expression,
not by tree-sitter: inside strings and comments too; no check that the result parses). Every other spec is
refused with an :class:`~asc.errors.InputError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from asc.errors import InputError

__all__ = ["Corruption", "Edit", "corrupt", "rename"]


@dataclass(frozen=True)
class Edit:
    """``source[start:end] == old`` (character offsets in the ORIGINAL source) is replaced by ``new``."""

    start: int
    end: int
    old: str
    new: str


@dataclass(frozen=True)
class Corruption:
    """``corrupted`` is ``source`` with ``edits`` (sorted, disjoint) applied."""

    kind: str
    description: str
    source: str
    corrupted: str
    edits: tuple[Edit, ...]

    def corrupted_span(self, edit: Edit) -> tuple[int, int]:
        """``(start, end)`` of ``edit``'s new text in the corrupted text."""
        shift = sum(len(e.new) - len(e.old) for e in self.edits if e.end <= edit.start and e is not edit)
        return edit.start + shift, edit.start + shift + len(edit.new)

    def changed_mask(self, n_chars_source: int | None = None) -> np.ndarray:
        """bool ``(n_chars_source,)``: the characters of the source an edit replaces."""
        mask = np.zeros(len(self.source) if n_chars_source is None else n_chars_source, dtype=bool)
        for e in self.edits:
            mask[e.start:e.end] = True
        return mask


def _apply(source: str, edits: tuple[Edit, ...]) -> str:
    parts, at = [], 0
    for e in edits:
        parts += [source[at:e.start], e.new]
        at = e.end
    return "".join(parts) + source[at:]


def rename(source: str, name: str, new: str | None = None) -> Corruption:
    """Every whole-word occurrence of ``name`` replaced by ``new`` (default ``name + "_x"``)."""
    if not name.isidentifier():
        raise InputError(f"rename:{name!r}: give an identifier of the snippet, e.g. rename:count")
    new = new or f"{name}_x"
    edits = tuple(Edit(m.start(), m.end(), name, new) for m in re.finditer(rf"\b{re.escape(name)}\b", source))
    if not edits:
        raise InputError(f"rename:{name}: the snippet has no identifier {name!r}; give a name it uses")
    return Corruption("rename", f"rename {name} to {new}", source, _apply(source, edits), edits)


def corrupt(source: str, spec: str, language: str = "python") -> Corruption:
    """The corruption ``spec`` names (this placeholder: ``rename:NAME`` only)."""
    kind, _, arg = spec.partition(":")
    if kind == "rename" and arg:
        return rename(source, arg)
    raise InputError(f"unknown corruption {spec!r}: give rename:NAME (operator:LINE:COL, literal:LINE:COL, "
                     "docstring and comment come with asc.why.corrupt)")
