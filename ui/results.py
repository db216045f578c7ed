"""What the inspector shows, as a typed object: one Explain or Complete with the model and settings behind it.

The inspector page builds an :class:`InspectorResult` after each run and keeps it in ``st.session_state["result"]``;
the per-layer view (:mod:`ui.depth_view`) and the branches (:mod:`ui.branches_view`) read its fields, never keys
of a dict. Frozen like the backend's results: a new run makes a new object.
"""

from __future__ import annotations

from dataclasses import dataclass

from asc import Completion, Decoding, Explanation
from ui.widgets import Settings


@dataclass(frozen=True)
class InspectorResult:
    """One inspector run: ``ex`` the explanation shown; ``completion`` and ``decoding`` for *Complete* (None for
    *Explain*, which scores the text as it is); ``model`` the model's name and ``settings`` the sidebar's choice
    when it ran (placement, remote code), which later views reuse so that they score with the same model."""

    ex: Explanation
    model: str
    settings: Settings
    completion: Completion | None = None
    decoding: Decoding | None = None

    @property
    def n_prompt(self) -> int | None:
        """Tokens of the prompt (the rest were generated); None for *Explain*."""
        return None if self.completion is None else self.completion.n_prompt

    @property
    def stop(self) -> str | None:
        """Why generation stopped (:attr:`asc.generate.Completion.stop_reason`); None for *Explain*."""
        return None if self.completion is None else self.completion.stop_reason
