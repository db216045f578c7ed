"""The inspector's branch tree: a trunk completion and its branches (branches of branches too), immutable.

A :class:`BranchTree` holds :class:`BranchNode` s in creation order: node 0 is the **trunk** (the completion the
inspector shows first, ``branch`` None); every other node is a :class:`~asc.branching.branches.Branch` made from its
``parent``'s completion, with that completion's :class:`~asc.explain.Explanation`. :meth:`BranchTree.add`
returns a new tree (the app keeps one per browser tab). Each node carries its summary: ``mean_value``, the mean
AsC-Eval node value from its fork on (:func:`asc.branching.branches.mean_value`; the trunk's from its first generated token)
and ``parses`` (its tree has no ERROR or MISSING node). :meth:`BranchTree.to_dict` is the JSON export: the
prompt, the decoding settings and, per node, its parent, the branch point (``Branch.to_dict``), its text and
its whole AsC-Eval in the ``explain --json`` layout (``Explanation.to_dict``).

:func:`diff_frame` and :func:`category_frame` are the tables of a two-branch comparison (:func:`asc.branching.treediff.ast_diff`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from asc.branching.branches import Branch, mean_value
from asc.branching.treediff import TreeDiff
from asc.concepts import category_label
from asc.display import show
from asc.errors import InputError
from asc.explain import Explanation
from asc.generate import Completion, Decoding

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

__all__ = ["MAX_BRANCHES", "BranchNode", "BranchTree", "category_frame", "diff_frame"]

MAX_BRANCHES = 64  # branches one tree keeps (each holds its explanation)


def _nan_none(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


@dataclass(frozen=True)
class BranchNode:
    """One completion of the tree (module doc). ``branch`` is None for the trunk (id 0)."""

    id: int
    parent: int | None
    completion: Completion
    explanation: Explanation
    branch: Branch | None = None
    mean_value: float = math.nan
    parses: bool = True

    @property
    def fork_index(self) -> int:
        """The token where this node leaves its parent (the trunk: its first generated token)."""
        return self.branch.fork_index if self.branch is not None else self.completion.n_prompt

    @property
    def label(self) -> str:
        """``trunk`` or ``branch 3: ' x' at token 14``."""
        if self.branch is None:
            return "trunk"
        return f"branch {self.id}: {self.branch.forced_text!r} at token {self.branch.fork_index}"

    def to_dict(self, replaced_text: str | None = None) -> dict:
        """JSON-ready: the branch point (``replaced_text``: the parent's token there), text, summary, AsC-Eval."""
        fork = None if self.branch is None else {**self.branch.to_dict(), "replaced_text": replaced_text}
        return {"id": self.id, "parent": self.parent, "label": self.label, "fork": fork,
                "text": self.completion.text, "n_prompt": self.completion.n_prompt,
                "stop_reason": self.completion.stop_reason, "mean_value": _nan_none(self.mean_value),
                "parses": self.parses, "asc_eval": self.explanation.to_dict()}

    def _repr_html_(self) -> str:
        """Inline in a notebook: the label and mean value, then the colored sequence view (fork point marked,
        generated tokens underlined) and the category strip."""
        return str(show(self, "html"))


def _node(id_: int, parent: int | None, comp: Completion, ex: Explanation, br: Branch | None) -> BranchNode:
    start = br.fork_index if br is not None else comp.n_prompt
    return BranchNode(id=id_, parent=parent, completion=comp, explanation=ex, branch=br,
                      mean_value=mean_value(ex, start), parses=not ex.tree.has_error)


@dataclass(frozen=True)
class BranchTree:
    """The trunk and its branches (module doc); ``settings`` are the trunk's decoding settings (branches continue
    with them)."""

    nodes: tuple[BranchNode, ...]
    settings: Decoding = field(default_factory=Decoding)

    @classmethod
    def start(cls, trunk: Completion, explanation: Explanation, settings: Decoding | None = None) -> BranchTree:
        """A tree holding only the trunk."""
        if explanation.scores.n_tokens != len(trunk.ids):
            raise InputError(f"the explanation has {explanation.scores.n_tokens} tokens, the trunk {len(trunk.ids)}: "
                             "explain the trunk's own completion")
        return cls(nodes=(_node(0, None, trunk, explanation, None),), settings=settings or Decoding())

    @property
    def trunk(self) -> BranchNode:
        return self.nodes[0]

    def __len__(self) -> int:
        return len(self.nodes)

    def node(self, id_: int) -> BranchNode:
        if not 0 <= id_ < len(self.nodes):
            raise InputError(f"no branch {id_}: the tree has {len(self.nodes)} nodes")
        return self.nodes[id_]

    def children(self, id_: int) -> list[BranchNode]:
        return [n for n in self.nodes if n.parent == id_]

    def depth(self, id_: int) -> int:
        d, node = 0, self.node(id_)
        while node.parent is not None:
            d, node = d + 1, self.nodes[node.parent]
        return d

    def add(self, parent: int, br: Branch, explanation: Explanation) -> BranchTree:
        """A new tree with ``br`` (made from node ``parent``'s completion) as its last node."""
        self.node(parent)
        if len(self.nodes) > MAX_BRANCHES:
            raise InputError(f"this tree already holds {MAX_BRANCHES} branches: export it, then start again with "
                             "Complete")
        new = _node(len(self.nodes), parent, br.completion, explanation, br)
        return BranchTree(nodes=(*self.nodes, new), settings=self.settings)

    def to_dict(self) -> dict:
        """The JSON export (module doc)."""
        trunk = self.trunk
        return {"prompt": trunk.completion.prompt, "model": dict(trunk.explanation.model),
                "aggregate": trunk.explanation.aggregate, "language": trunk.explanation.tree.language,
                "settings": self.settings.to_dict(), "branches": [n.to_dict(self.replaced_text(n.id)) for n in self.nodes]}

    def replaced_text(self, id_: int) -> str | None:
        """The parent's token that node ``id_``'s forced token replaced (None: the trunk, or past the parent's end)."""
        node = self.node(id_)
        if node.branch is None or node.parent is None:
            return None
        parent = self.nodes[node.parent].explanation.scores
        at = node.branch.fork_index
        return parent.text[at] if at < parent.n_tokens else None

    def _repr_html_(self) -> str:
        """Inline in a notebook: a row per node (what was forced, mean value, whether it parses), then the trunk."""
        return str(show(self, "html"))

    def tree(self, selected: int | None = None) -> go.Figure:
        """The inspector's tree of branches (:func:`asc.viz.branch_tree_figure`), node ``selected`` outlined."""
        return show(self, "tree", selected=selected)


def _value(ex: Explanation, node: int) -> float:
    return float(ex.values[node]) if node >= 0 else math.nan


def diff_frame(a: Explanation, b: Explanation, diff: TreeDiff, named_only: bool = False) -> pd.DataFrame:
    """One row per node that differs between ``a``'s and ``b``'s trees (``diff`` = ``ast_diff(a.tree, b.tree)``),
    in source order: ``status`` (removed: only in A, added: only in B, changed: a matched leaf whose text differs),
    each side's node id, type, category (``uncategorized`` when no category lists it), AsC-Eval value and text
    (missing on the side without the node: ``absent`` as shown and exported), and ``first`` on the first divergence."""
    import pandas as pd

    rows: list[tuple[str, int, int]] = [("removed", int(i), -1) for i in diff.removed]
    rows += [("added", -1, int(j)) for j in diff.added]
    rows += [("changed", int(i), int(j)) for i, j in diff.changed]
    first = diff.first_divergence
    out = []
    for status, i, j in rows:
        ref_ex, ref = (a, i) if i >= 0 else (b, j)
        if named_only and not ref_ex.tree.named[ref]:
            continue
        out.append({"status": status, "node_a": i if i >= 0 else None, "node_b": j if j >= 0 else None,
                    "type": ref_ex.tree.type[ref], "category": category_label(ref_ex.node_category[ref]),
                    "value_a": _value(a, i), "value_b": _value(b, j),
                    "text_a": a.tree.text(i, limit=60) if i >= 0 else None,
                    "text_b": b.tree.text(j, limit=60) if j >= 0 else None,
                    "first": first is not None and ((i >= 0 and i == first[0]) or (j >= 0 and j == first[1])),
                    "_start": int(ref_ex.tree.start[ref]), "_depth": int(ref_ex.tree.depth[ref])})
    cols = ["status", "node_a", "node_b", "type", "category", "value_a", "value_b", "text_a", "text_b", "first"]
    if not out:
        return pd.DataFrame(columns=cols)
    frame = pd.DataFrame(out).sort_values(["_start", "_depth"], kind="stable")
    return frame[cols].reset_index(drop=True).astype({"node_a": "Int64", "node_b": "Int64"})


def category_frame(a: Explanation, b: Explanation, names: tuple[str, str] = ("A", "B")) -> pd.DataFrame:
    """Per category, the two explanations' values and B minus A (NaN where a side lacks the category)."""
    import pandas as pd

    cats = list(dict.fromkeys([*a.category_values, *b.category_values]))
    va = np.array([a.category_values.get(c, math.nan) for c in cats], dtype=np.float64)
    vb = np.array([b.category_values.get(c, math.nan) for c in cats], dtype=np.float64)
    return pd.DataFrame({"category": cats, names[0]: va, names[1]: vb, "difference": vb - va})
