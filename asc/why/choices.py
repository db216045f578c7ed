"""The corruptions a snippet offers, as ``--corrupt`` specs with a label: what the inspector lists to pick from.

:func:`corruption_choices` walks the tree once and lists, in source order within each kind: ``rename:NAME`` for
every distinct identifier; ``operator:LINE:COL`` for every swappable binary operator; ``literal:LINE:COL`` for every
literal that has another value of its type (not ``None``/``null``); ``docstring`` and ``comment`` when the snippet
has one (all of them removed together). Only names that occur before ``before`` (labelled with all their occurrences) and positions before ``before`` (a character offset, e.g.
the target token's start) are listed, since a corruption after the target cannot change it.

A listed spec is not checked here: :func:`asc.why.corrupt.corrupt` checks it when it is applied (a rename to a
fresh name or a swap can still fail its validity check, which is then one clear message).
"""

from __future__ import annotations

from dataclasses import dataclass

from asc.positions import line_col_at
from asc.syntax import parse
from asc.why.rewrites import docstrings, grammar, operator_nodes

__all__ = ["CorruptionChoice", "corruption_choices"]

_MAX_PER_KIND = 40


@dataclass(frozen=True)
class CorruptionChoice:
    """One offered corruption: ``spec`` as :func:`asc.why.corrupt.parse_spec` reads it, ``label`` for a list."""

    spec: str
    label: str


def corruption_choices(source: str, language: str = "python", before: int | None = None) -> list[CorruptionChoice]:
    """The corruptions of ``source`` (module doc), at most 40 of each kind, first edit before ``before``."""
    tree = parse(source, language)
    g = grammar(language)
    stop = len(source) if before is None else before
    out: list[CorruptionChoice] = []
    names: dict[str, int] = {}  # every occurrence counts (a rename renames them all); listed if one is before
    first: dict[str, int] = {}
    for i in range(tree.n_nodes):
        if tree.type[i] in g.identifiers:
            names[tree.text(i)] = names.get(tree.text(i), 0) + 1
            first.setdefault(tree.text(i), int(tree.start[i]))
    for name, n in [(k, n) for k, n in names.items() if first[k] < stop][:_MAX_PER_KIND]:
        out.append(CorruptionChoice(f"rename:{name}", f"rename {name} ({n} occurrence{'s' * (n != 1)})"))
    for i in [i for i in operator_nodes(tree, g) if int(tree.start[i]) < stop][:_MAX_PER_KIND]:
        line, col = line_col_at(source, int(tree.start[i]))
        context = " ".join(tree.text(int(tree.parent[i]), 30).split())
        out.append(CorruptionChoice(f"operator:{line}:{col}", f"operator {tree.type[i]} at {line}:{col} in {context}"))
    literals = [i for i in range(tree.n_nodes)
                if tree.type[i] in g.literals and g.literals[tree.type[i]] != "none" and int(tree.start[i]) < stop]
    for i in literals[:_MAX_PER_KIND]:
        line, col = line_col_at(source, int(tree.start[i]))
        out.append(CorruptionChoice(f"literal:{line}:{col}", f"literal {' '.join(tree.text(i, 30).split())} at "
                                                             f"{line}:{col}"))
    if any(int(tree.start[i]) < stop for i in docstrings(tree)):
        out.append(CorruptionChoice("docstring", "remove the docstrings"))
    if any(tree.type[i] in g.comments and int(tree.start[i]) < stop for i in range(tree.n_nodes)):
        out.append(CorruptionChoice("comment", "remove the comments"))
    return out
