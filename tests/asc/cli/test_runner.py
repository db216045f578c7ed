"""asc.cli.runner, what every command shares once parsed: writing tables, number cells, exit codes.

The commands themselves are tested beside their modules (test_main.py runs ``python -m asc`` as users do).
"""

from __future__ import annotations

import argparse
import io
import json
import sys

import pandas as pd
import pytest

from asc.cli import runner
from asc.errors import AscError, InputError, UnknownModelError

# ------------------------------------------------------------------------------------------ write_table

TABLE = pd.DataFrame({"category": ["Global", "Scope"], "median": [0.61, float("nan")], "n_nodes": [10, 0]})


def test_write_table_csv_by_default(tmp_path):
    for name in ("t.csv", "t.txt", "t"):  # anything but .json is CSV
        out = runner.write_table(TABLE, tmp_path / "sub" / name)
        assert out == tmp_path / "sub" / name
        text = out.read_text()
        assert text.splitlines()[0] == "category,median,n_nodes"  # no index column
        pd.testing.assert_frame_equal(pd.read_csv(out), TABLE)


def test_write_table_json_records(tmp_path):
    out = runner.write_table(TABLE, tmp_path / "t.json")
    assert json.loads(out.read_text()) == [{"category": "Global", "median": 0.61, "n_nodes": 10},
                                           {"category": "Scope", "median": None, "n_nodes": 0}]  # NaN is null


def test_write_table_is_atomic(tmp_path):
    target = tmp_path / "t.csv"
    target.write_text("old\n")

    class Failing:
        def to_csv(self, path, index):
            path.write_text("half")
            raise OSError("disk full")

    with pytest.raises(InputError, match=r"cannot write .*t\.csv \(disk full\): give another --out"):
        runner.write_table(Failing(), target)
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"]  # no temporary left behind
    runner.write_table(TABLE, target)
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"] and target.read_text().startswith("category,")


# ------------------------------------------------------------------------------------------ run


def _args(func, debug=False):
    return argparse.Namespace(func=func, verbose=True, debug=debug)


@pytest.fixture(autouse=True)
def _restore_env(monkeypatch):
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")  # run() sets it by default: keep the process clean


def test_run_returns_the_commands_status():
    assert runner.run(_args(lambda a: 0)) == 0
    assert runner.run(_args(lambda a: 3)) == 3


@pytest.mark.parametrize("error", [InputError("file not found: x.py"), UnknownModelError("unknown model 'm'"),
                                   AscError("some user mistake")])
def test_run_user_errors_exit_2_with_one_line(capsys, error):
    def fail(args):
        raise error

    assert runner.run(_args(fail)) == 2
    captured = capsys.readouterr()
    assert captured.err == f"error: {error}\n" and captured.out == ""


def test_run_other_user_errors_can_be_named(capsys):
    def fail(args):
        raise ValueError("bad task")

    assert runner.run(_args(fail), user_errors=(AscError, ValueError)) == 2
    assert capsys.readouterr().err == "error: bad task\n"


def test_run_unexpected_errors_exit_1_with_one_line_unless_debug(capsys):
    def crash(args):
        raise KeyError("x")

    assert runner.run(_args(crash)) == 1
    err = capsys.readouterr().err
    assert err == "error: KeyError: 'x' (run with --debug for the traceback)\n"
    with pytest.raises(KeyError):
        runner.run(_args(crash, debug=True))
    assert runner.run(_args(crash), user_errors=(ValueError,)) == 1  # not a user error there either


def test_run_closed_pipe_exits_0_quietly(monkeypatch):
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)

    def head(args):
        raise BrokenPipeError(32, "Broken pipe")

    assert runner.run(_args(head)) == 0
    assert stderr.closed  # nothing more is written to a pipe whose reader left


# ------------------------------------------------------------------------------------------ small helpers


def test_fmt_numbers_and_missing():
    assert runner.fmt(None) == "-" and runner.fmt(float("nan")) == "-"
    assert runner.fmt(0.12345) == "0.123" and runner.fmt(2, 1) == "2.0" and runner.fmt(-0.5, 2) == "-0.50"
