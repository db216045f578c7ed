"""Branching: where a completion could have gone otherwise, and what it would have become.

- :mod:`asc.branching.forks`: fork points, the tokens where the model hesitates (small top-2 margin or high
  entropy), and fork rates per node and category.
- :mod:`asc.branching.branches`: branches, counterfactual completions forced at one token from the trunk's KV cache
  (the K-th choice or a typed text), and :func:`explore_forks` (several fork points in one batched decode).
- :mod:`asc.branching.tree`: the inspector's tree of branches (branches of branches too), its JSON export and the
  tables of a two-branch comparison.
- :mod:`asc.branching.treediff`: two syntax trees aligned node by node (added, removed, changed, first divergence).
- :mod:`asc.branching.humaneval`: HumanEval's own tests on a branch (a subprocess; local mode only) and the
  pass-vs-confidence split.
- :mod:`asc.branching.requests`: what the app asks for (:class:`BranchRequest`, :class:`ExploreRequest`), checked and
  typed before a model runs, and the fork token it starts from.
"""

from asc.branching.branches import (
    MAX_EXPLORE,
    Branch,
    PrefixCache,
    branch,
    check_choice,
    explore_forks,
    mean_value,
    prefix_cache,
)
from asc.branching.forks import (
    ForkPoints,
    ForkSettings,
    category_fork_rate,
    fork_points,
    most_uncertain,
    node_fork_rate,
)
from asc.branching.humaneval import ConfidenceSplit, TestRun, confidence_split, find_problem, run_tests
from asc.branching.requests import BranchRequest, ExploreRequest, default_fork_token
from asc.branching.tree import MAX_BRANCHES, BranchNode, BranchTree, category_frame, diff_frame
from asc.branching.treediff import TreeDiff, ast_diff

__all__ = [
    "MAX_BRANCHES", "MAX_EXPLORE",
    "Branch", "BranchNode", "BranchRequest", "BranchTree", "ConfidenceSplit", "ExploreRequest", "ForkPoints",
    "ForkSettings", "PrefixCache", "TestRun", "TreeDiff",
    "ast_diff", "branch", "category_fork_rate", "category_frame", "check_choice", "confidence_split",
    "default_fork_token", "diff_frame", "explore_forks", "find_problem", "fork_points", "mean_value", "most_uncertain",
    "node_fork_rate", "prefix_cache", "run_tests",
]
