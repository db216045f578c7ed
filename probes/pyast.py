"""A corpus's worth of Python ``ast`` trees: list walks, and the cyclic garbage collector paused while a build holds them.

The INSPECT and glueCode task builders (:mod:`probes.inspect.tasks`, :mod:`probes.gluecode.build`) parse every
function of a corpus (8,456 in the stdlib, about 660,000 nodes) and walk each several times per task; BLANCA's usage
scan (:mod:`probes.blanca.usage`) walks the stdlib's 1,500 files with their test suite.

* :func:`walk` and :func:`child_nodes` give the nodes ``ast.walk`` and ``ast.iter_child_nodes`` give, in the same
  order (expression contexts such as ``Load`` included), as lists read off each node's ``_fields``: a quarter faster
  than the two nested generators per node, and a list can be walked again by the next label function.
* :func:`gc_paused`: while the trees are alive, every full collection of Python's cyclic garbage collector
  traverses all of them, and allocating them triggers many: a third of a stdlib task build's CPU time. ``ast``
  nodes hold no reference cycles (no parent links), so reference counting frees them; the builders pause the
  collector for their duration (as mypy raises its thresholds for the same reason) and it resumes when the
  outermost build in the process ends. Garbage cycles made meanwhile, by any thread, are collected then.
"""

from __future__ import annotations

import ast
import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["child_nodes", "gc_paused", "walk"]


def _add_children(node: ast.AST, out: list[ast.AST]) -> None:
    """Append the direct children of ``node`` to ``out``, field by field (``ast.iter_child_nodes``' order)."""
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            out.append(value)
        elif isinstance(value, list):
            out.extend([v for v in value if isinstance(v, ast.AST)])


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """``list(ast.iter_child_nodes(node))``."""
    out: list[ast.AST] = []
    _add_children(node, out)
    return out


def walk(node: ast.AST) -> list[ast.AST]:
    """``list(ast.walk(node))``: ``node`` and every node below it, breadth first."""
    out = [node]
    for current in out:  # grows while it is read: each node's children are appended after the nodes queued before
        _add_children(current, out)
    return out


_lock = threading.Lock()
_paused = {"depth": 0, "was_enabled": False}  # builds running now (any thread), the collector's state before them


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the block (see the module docstring); nested and concurrent blocks
    share one pause, and the collector is enabled again, if it was before, when the last of them ends."""
    with _lock:
        if _paused["depth"] == 0:
            _paused["was_enabled"] = gc.isenabled()
            gc.disable()
        _paused["depth"] += 1
    try:
        yield
    finally:
        with _lock:
            _paused["depth"] -= 1
            if _paused["depth"] == 0 and _paused["was_enabled"]:
                gc.enable()
