"""What a front end asks of branching, as frozen requests, and where a branch starts by default.

:class:`BranchRequest` replaces one token of a completion (the model's K-th choice, or a typed text) and continues
with a :class:`~asc.generate.Decoding`; :class:`ExploreRequest` branches at the N most uncertain fork points at once.
Each checks itself when made and runs with ``run(bundle, trunk, ...)``.

:func:`default_fork_token` is the policy that picks the token a branch starts from, the same for every front end:
the most uncertain fork point of the generated part whose token is not whitespace (where the model hesitated
between indentations its alternatives look alike, and a branch would change nothing visible); without a fork
point, the first generated token that is not whitespace. For a branch, "generated" starts after its forced token.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from asc.branching.forks import ForkPoints, most_uncertain
from asc.errors import InputError
from asc.generate import Decoding

if TYPE_CHECKING:
    from asc.branching.branches import Branch
    from asc.branching.tree import BranchNode
    from asc.generate import Completion
    from asc.models import ModelBundle

__all__ = ["BranchRequest", "ExploreRequest", "default_fork_token"]


@dataclass(frozen=True)
class BranchRequest:
    """Replace token ``at`` of a trunk by the model's ``choose``-th choice (1 = its first) or by the typed ``token``
    (one of the two), then continue with ``decoding``."""

    at: int
    choose: int | None = None
    token: str | None = None
    decoding: Decoding = field(default_factory=Decoding)

    def __post_init__(self) -> None:
        if (self.choose is None) == (self.token is None):
            raise InputError("choose an alternative or type a replacement, one of the two")
        if self.choose is not None and self.choose < 1:
            raise InputError(f"choose={self.choose}: the model's choices count from 1 (its first choice)")
        if self.at < 1:
            raise InputError(f"at={self.at}: branch at a token index from 1 (the first token has no prediction)")

    def run(self, bundle: ModelBundle, trunk: Completion | Branch | str) -> Branch:
        """:func:`asc.branching.branches.branch` of ``trunk`` as this request says."""
        from asc.branching.branches import branch

        d = self.decoding
        return branch(bundle, trunk, self.at, choose=self.choose, token=self.token, max_new_tokens=d.max_new_tokens,
                      temperature=d.temperature, top_p=d.top_p, seed=d.seed, language=d.language,
                      stop_at_function_end=d.stop_at_function_end)


@dataclass(frozen=True)
class ExploreRequest:
    """Branch at the ``n`` most uncertain fork points (of the generated part only, with ``generated_only``), each
    with the best choice other than the trunk's token, continuing with ``decoding``."""

    n: int
    decoding: Decoding = field(default_factory=Decoding)
    generated_only: bool = True

    def run(self, bundle: ModelBundle, trunk: Completion | Branch | str, forks: ForkPoints) -> list[Branch]:
        """:func:`asc.branching.branches.explore_forks` of ``trunk`` as this request says."""
        from asc.branching.branches import explore_forks

        d = self.decoding
        return explore_forks(bundle, trunk, forks, self.n, d.max_new_tokens, temperature=d.temperature, top_p=d.top_p,
                             seed=d.seed, language=d.language, generated_only=self.generated_only,
                             stop_at_function_end=d.stop_at_function_end)


def default_fork_token(node: BranchNode, forks: ForkPoints | None) -> int:
    """The token a branch of ``node``'s completion starts from by default (module doc); ``forks``: the fork points
    of that completion under the chosen thresholds (None: none computed)."""
    n = len(node.completion.ids)
    first = min(node.fork_index + (0 if node.branch is None else 1), n - 1)
    ranked = most_uncertain(forks, len(forks.indices), first=first) if forks is not None else np.zeros(0, np.int64)
    text = node.explanation.scores.text
    best = [int(i) for i in ranked if text[i].strip()] or [int(i) for i in ranked]
    if best:
        return best[0]
    return next((i for i in range(max(1, first), n) if text[i].strip()), max(1, first))
