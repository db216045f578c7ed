"""Positions in source text, in one place: the ``LINE:COL`` users type and the character offset the backend uses.

A position is ``LINE:COL`` with both counted from 1 and the column in characters (as editors show them; a tab is one
character); lines are split at ``\\n`` only, so a ``\\r`` before it is the line's last character and a text ending in
``\\n`` has an empty last line (its only position is column 1). :func:`offset_at` turns a position into the offset of
its character (the end of a line, one past its last character, is a position too) and refuses one outside the text
with an :class:`~asc.errors.InputError` naming the text's extent; :func:`line_col_at` is its inverse. Every command
and module that reads ``--at LINE:COL`` or a ``--corrupt operator:LINE:COL`` spec converts through here.
"""

from __future__ import annotations

from asc.errors import InputError

__all__ = ["line_col_at", "offset_at"]


def offset_at(source: str, line: int, col: int, label: str | None = None, within: str = "the snippet") -> int:
    """The character offset of ``line``:``col`` (both from 1) in ``source``, or an InputError: ``label`` names what
    gave the position (default ``position LINE:COL``; e.g. ``--at 3:9``), ``within`` the text (``the snippet``)."""
    lines = source.split("\n")
    if not 1 <= line <= len(lines) or not 1 <= col <= len(lines[line - 1]) + 1:
        last = min(max(line, 1), len(lines))
        raise InputError(f"{label or f'position {line}:{col}'} is outside {within} ({len(lines)} lines, line {last} "
                         f"has {len(lines[last - 1])} characters): give LINE:COL inside it, both from 1")
    return sum(len(s) + 1 for s in lines[: line - 1]) + col - 1


def line_col_at(source: str, offset: int) -> tuple[int, int]:
    """``(line, col)``, both from 1, of the character at ``offset`` in ``source`` (the inverse of :func:`offset_at`;
    an offset past the end counts on from the last line)."""
    line_start = source.rfind("\n", 0, offset) + 1
    return source.count("\n", 0, offset) + 1, offset - line_start + 1
