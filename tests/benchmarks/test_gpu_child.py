"""benchmarks/gpu/child.py runs ``python SCRIPT`` / ``python -m MODULE`` as a fresh interpreter or as a fork of the
running one (dry runs), with the same output, exit codes and time limit either way."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.gpu.child import python

SCRIPT = """
import sys
print("out", sys.argv[1:])
print("err", file=sys.stderr)
if sys.argv[1] == "fail":
    raise SystemExit("a message for the user")
if sys.argv[1] == "crash":
    raise ValueError("boom")
if sys.argv[1] == "code":
    sys.exit(3)
if sys.argv[1] == "sleep":
    import time
    sys.stdout.flush()  # a killed interpreter cannot flush
    time.sleep(30)
"""


@pytest.fixture
def script(tmp_path: Path) -> str:
    path = tmp_path / "script.py"
    path.write_text(SCRIPT)
    return str(path)


@pytest.mark.parametrize("fork", [True, False], ids=["fork", "fresh"])
def test_output_and_exit_codes_match_a_fresh_interpreter(script: str, fork: bool):
    out, err, code = python([script, "ok", "x"], fork=fork)
    assert (out, err, code) == ("out ['ok', 'x']\n", "err\n", 0)
    out, err, code = python([script, "fail"], fork=fork)
    assert code == 1 and err.endswith("a message for the user\n")
    out, err, code = python([script, "crash"], fork=fork)
    assert code == 1 and "ValueError: boom" in err and "Traceback" in err
    assert python([script, "code"], fork=fork)[2] == 3


@pytest.mark.parametrize("fork", [True, False], ids=["fork", "fresh"])
def test_a_command_out_of_time_is_killed_and_says_none(script: str, fork: bool):
    out, _, code = python([script, "sleep"], fork=fork, timeout=1.5)
    assert code is None and out == "out ['sleep']\n"


def test_a_module_runs_as_main():
    out, _, code = python(["-m", "json.tool", "--help"], fork=True)
    assert code == 0 and "usage:" in out
