"""What a front end asks of attribution and patching, as frozen requests, and which target it starts from.

The inspector's widgets, the notebooks and the CLI describe one action each: :class:`AttributionRequest` (a
token, or a node's mean, by a method, with integrated gradients' points and an optional contrast) and
:class:`PatchingRequest` (a target token, a ``--corrupt`` spec, the patched spans). A request checks itself when
made (an :class:`~asc.errors.InputError` naming the fix) and runs with :meth:`~AttributionRequest.run` on a model
bundle and the explanation it targets; the UI never builds a dict of keyword arguments for the backend.

The policy that picks a target lives here too, so that every front end starts from the same one:
:func:`explainable_tokens` (those with a prediction: not the first token, not a special token) and
:func:`default_target_token` (the selected node's last predicted token, else the least confident token; ties
go to the earliest).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from asc.errors import InputError
from asc.why.attribute import ATTRIBUTION_METHODS, AUTO_MAX_STEPS, AUTO_STEPS, DEFAULT_STEPS

if TYPE_CHECKING:
    from asc.explain import Explanation
    from asc.models import ModelBundle
    from asc.why.attribute import Attribution
    from asc.why.patching import Patching

__all__ = ["PATCH_SPANS", "AttributionRequest", "PatchingRequest", "default_target_token", "explainable_tokens"]

PATCH_SPANS = ("changed", "after")  # asc.why.patching.span_nodes: the changed nodes; and every named leaf after

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class AttributionRequest:
    """Attribute the token ``index`` (with an optional ``contrast``: an alternative token's text) or, when ``node``
    is given, the mean log-probability of that node's predicted tokens, by ``method`` (one of
    :data:`~asc.why.attribute.ATTRIBUTION_METHODS`); ``steps``: integrated gradients' path points, or
    ``"auto"`` (other methods keep :data:`~asc.why.attribute.DEFAULT_STEPS`)."""

    index: int | None = None
    node: int | None = None
    method: str = "grad"
    steps: int | str = DEFAULT_STEPS
    contrast: str | None = None

    def __post_init__(self) -> None:
        if (self.index is None) == (self.node is None):
            raise InputError("give a target token (index) or a node, one of the two")
        if self.method not in ATTRIBUTION_METHODS:
            raise InputError(f"method {self.method!r} is not one of {', '.join(ATTRIBUTION_METHODS)}")
        if self.node is not None and self.contrast is not None:
            raise InputError("a contrast compares two tokens: give a target token (index) to use it")
        if self.method != "ig" and self.steps != DEFAULT_STEPS:
            object.__setattr__(self, "steps", DEFAULT_STEPS)  # only integrated gradients have path points
        steps = self.steps
        if steps != AUTO_STEPS and (not isinstance(steps, int) or isinstance(steps, bool)
                                    or not 1 <= steps <= AUTO_MAX_STEPS):
            raise InputError(f"steps={steps!r}: give a whole number of path points from 1 to {AUTO_MAX_STEPS}, or "
                             f"{AUTO_STEPS!r}")

    def with_method(self, method: str) -> AttributionRequest:
        """The same target by another method (integrated gradients keep this request's points when it has them)."""
        return replace(self, method=method, steps=self.steps if method == "ig" else DEFAULT_STEPS)

    def run(self, bundle: ModelBundle, explanation: Explanation,
            on_progress: Progress | None = None) -> Attribution:
        """:func:`asc.why.attribute.attribute` of this request on ``explanation``'s code with ``bundle``."""
        from asc.why.attribute import attribute
        from asc.why.targets import node_target

        target = node_target(bundle, explanation, self.node) if self.node is not None else int(self.index or 0)
        return attribute(bundle, explanation.source, target, self.method, self.steps, contrast=self.contrast,
                         language=explanation.tree.language, explanation=explanation, on_progress=on_progress)


@dataclass(frozen=True)
class PatchingRequest:
    """Patch the clean run into the run of ``explanation``'s code corrupted by ``corruption`` (a ``--corrupt``
    spec, :mod:`asc.why.corrupt`), for the target token ``index``, restoring the spans ``spans`` (one of
    :data:`PATCH_SPANS`) at every layer."""

    index: int
    corruption: str
    spans: str = "changed"

    def __post_init__(self) -> None:
        if self.spans not in PATCH_SPANS:
            raise InputError(f"spans {self.spans!r} is not one of {', '.join(PATCH_SPANS)}")
        if not self.corruption.strip():
            raise InputError("the corruption is empty: give a --corrupt spec, e.g. rename:total:x")

    def run(self, bundle: ModelBundle, explanation: Explanation, on_progress: Progress | None = None) -> Patching:
        """:func:`asc.why.patching.patch` of this request on ``explanation``'s code with ``bundle``."""
        from asc.why.corrupt import corrupt
        from asc.why.patching import patch

        language = explanation.tree.language
        return patch(bundle, corrupt(explanation.source, self.corruption, language, bundle.tokenizer), self.index,
                     spans=self.spans, language=language, on_progress=on_progress)


def explainable_tokens(explanation: Explanation) -> list[int]:
    """The tokens a prediction can be explained for: those with a probability (the first token and special tokens
    have none), in order."""
    return [int(i) for i in np.flatnonzero(~np.isnan(explanation.scores.prob)) if i > 0]


def default_target_token(explanation: Explanation, selected: int | None = None) -> int | None:
    """The target a front end starts from: the last predicted token of the ``selected`` node, when it has one,
    else the least confident predicted token (the earliest of equals); None when no token has a prediction."""
    choices = explainable_tokens(explanation)
    if not choices:
        return None
    if selected is not None:
        allowed = set(choices)
        mine = [int(i) for i in explanation.alignment.tokens_of(selected) if int(i) in allowed]
        if mine:
            return mine[-1]
    prob = explanation.scores.prob
    return min(choices, key=lambda i: (float(prob[i]), i))
