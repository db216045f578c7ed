"""How results show themselves in notebooks: the table behind their ``_repr_html_`` and figure methods.

Results (:class:`~asc.explain.Explanation`, :class:`~asc.generate.Completion`, :class:`~asc.depth.LayerExplanation`
and the branch results of :mod:`asc.branching`) sit below their figure builders: :mod:`asc.viz` imports them to draw
them, so a result's module may not import :mod:`asc.viz`, not even inside a method (the import contract "no import
cycles between the rooms of asc" of ``make lint`` counts every import statement). The dependency is turned around
instead: a result's method names the view it wants (``show(self, "tree", ...)``), and :mod:`asc.viz.notebook`
registers the builder of every (result class, view) pair with :func:`register` when :mod:`asc.viz` is imported,
which ``import asc`` does before any of its modules runs. The builders stay pure functions in :mod:`asc.viz`; this
module holds only the table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from asc.errors import AscError

__all__ = ["register", "show", "views_of"]

Builder = TypeVar("Builder", bound=Callable[..., Any])
_BUILDERS: dict[tuple[type, str], Callable[..., Any]] = {}


def register(cls: type, view: str) -> Callable[[Builder], Builder]:
    """A decorator: ``builder(result, *args, **kwargs)`` draws ``view`` of ``cls``'s results (and its subclasses')."""
    def add(builder: Builder) -> Builder:
        _BUILDERS[(cls, view)] = builder
        return builder

    return add


def show(result: object, view: str, *args: Any, **kwargs: Any) -> Any:
    """``view`` of ``result`` (an HTML string for ``"html"``, else a plotly figure), drawn by its registered builder."""
    for cls in type(result).__mro__:
        builder = _BUILDERS.get((cls, view))
        if builder is not None:
            return builder(result, *args, **kwargs)
    raise AscError(f"{type(result).__name__} has no {view!r} view: import asc.viz first (import asc does)")


def views_of(cls: type) -> tuple[str, ...]:
    """The views registered for ``cls`` itself, sorted."""
    return tuple(sorted(view for owner, view in _BUILDERS if owner is cls))
