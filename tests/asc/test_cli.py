"""asc.cli, the runner every ``python -m`` entry point shares: reading sources, writing tables, exit codes.

The commands themselves (``python -m asc ...``) are tested in test_main.py.
"""

from __future__ import annotations

import argparse
import io
import json
import sys

import pandas as pd
import pytest

from asc import cli
from asc.errors import AscError, InputError, UnknownModelError

# ------------------------------------------------------------------------------------------ read_source


def test_read_source_returns_the_text_unchanged(tmp_path):
    f = tmp_path / "a.py"
    f.write_bytes("def größe(x):\r\n\treturn x\r\n".encode())
    assert cli.read_source(str(f)) == "def größe(x):\r\n\treturn x\r\n"  # no newline translation


def test_read_source_missing_file(tmp_path):
    with pytest.raises(InputError) as err:
        cli.read_source(str(tmp_path / "nope.py"))
    assert str(err.value) == f"file not found: {tmp_path / 'nope.py'}"
    with pytest.raises(InputError, match="is a folder, not a file: give a source file, or - to read standard input"):
        cli.read_source(str(tmp_path))


def test_read_source_invalid_utf8_names_the_byte_and_the_fix(tmp_path):
    f = tmp_path / "latin1.py"
    f.write_bytes(b"x = 'caf\xe9'\n")
    with pytest.raises(InputError) as err:
        cli.read_source(str(f))
    message = str(err.value)
    assert message.startswith(f"{f} is not valid UTF-8 (byte 8: invalid continuation byte)")
    assert "iconv -f latin1 -t utf-8" in message
    assert err.value.__cause__ is None and err.value.__suppress_context__  # no decoding traceback attached


@pytest.mark.parametrize("content", [b"", b"   \n\t\n", "\u3000\n".encode()])
def test_read_source_empty_file(tmp_path, content):
    f = tmp_path / "empty.py"
    f.write_bytes(content)
    with pytest.raises(InputError) as err:
        cli.read_source(str(f))
    assert str(err.value) == f"{f} is empty: give a file with some code"


def test_read_source_dash_reads_standard_input(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO("x = 'é'\n".encode())))
    assert cli.read_source("-") == "x = 'é'\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\xff\n")))
    with pytest.raises(InputError, match="^standard input is not valid UTF-8 \\(byte 0"):
        cli.read_source("-")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\n")))
    with pytest.raises(InputError, match="^standard input is empty"):
        cli.read_source("-")


# ------------------------------------------------------------------------------------------ write_table

TABLE = pd.DataFrame({"category": ["Global", "Scope"], "median": [0.61, float("nan")], "n_nodes": [10, 0]})


def test_write_table_csv_by_default(tmp_path):
    for name in ("t.csv", "t.txt", "t"):  # anything but .json is CSV
        out = cli.write_table(TABLE, tmp_path / "sub" / name)
        assert out == tmp_path / "sub" / name
        text = out.read_text()
        assert text.splitlines()[0] == "category,median,n_nodes"  # no index column
        pd.testing.assert_frame_equal(pd.read_csv(out), TABLE)


def test_write_table_json_records(tmp_path):
    out = cli.write_table(TABLE, tmp_path / "t.json")
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
        cli.write_table(Failing(), target)
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"]  # no temporary left behind
    cli.write_table(TABLE, target)
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"] and target.read_text().startswith("category,")


# ------------------------------------------------------------------------------------------ run


def _args(func, debug=False):
    return argparse.Namespace(func=func, verbose=True, debug=debug)


@pytest.fixture(autouse=True)
def _restore_env(monkeypatch):
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")  # run() sets it by default: keep the process clean


def test_run_returns_the_commands_status():
    assert cli.run(_args(lambda a: 0)) == 0
    assert cli.run(_args(lambda a: 3)) == 3


@pytest.mark.parametrize("error", [InputError("file not found: x.py"), UnknownModelError("unknown model 'm'"),
                                   AscError("some user mistake")])
def test_run_user_errors_exit_2_with_one_line(capsys, error):
    def fail(args):
        raise error

    assert cli.run(_args(fail)) == 2
    captured = capsys.readouterr()
    assert captured.err == f"error: {error}\n" and captured.out == ""


def test_run_other_user_errors_can_be_named(capsys):
    def fail(args):
        raise ValueError("bad task")

    assert cli.run(_args(fail), user_errors=(AscError, ValueError)) == 2
    assert capsys.readouterr().err == "error: bad task\n"


def test_run_unexpected_errors_exit_1_with_one_line_unless_debug(capsys):
    def crash(args):
        raise KeyError("x")

    assert cli.run(_args(crash)) == 1
    err = capsys.readouterr().err
    assert err == "error: KeyError: 'x' (run with --debug for the traceback)\n"
    with pytest.raises(KeyError):
        cli.run(_args(crash, debug=True))
    assert cli.run(_args(crash), user_errors=(ValueError,)) == 1  # not a user error there either


def test_run_closed_pipe_exits_0_quietly(monkeypatch):
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)

    def head(args):
        raise BrokenPipeError(32, "Broken pipe")

    assert cli.run(_args(head)) == 0
    assert stderr.closed  # nothing more is written to a pipe whose reader left


# ------------------------------------------------------------------------------------------ small helpers


def test_fmt_numbers_and_missing():
    assert cli.fmt(None) == "-" and cli.fmt(float("nan")) == "-"
    assert cli.fmt(0.12345) == "0.123" and cli.fmt(2, 1) == "2.0" and cli.fmt(-0.5, 2) == "-0.50"


def test_common_options_defaults_and_choices():
    p = argparse.ArgumentParser()
    cli.add_common(p)
    args = p.parse_args([])
    assert (args.model, args.aggregate, args.max_window, args.whitespace, args.multi_leaf, args.zero_width,
            args.trust_remote_code) == ("smollm2-135m", "median", None, "enclosing", "all", "none", False)
    args = p.parse_args(["--model", "tiny-random", "--aggregate", "max", "--max-window", "32", "--trust-remote-code"])
    assert (args.model, args.aggregate, args.max_window, args.trust_remote_code) == ("tiny-random", "max", 32, True)
    with pytest.raises(SystemExit):
        p.parse_args(["--aggregate", "sum"])


def test_model_options_device_and_dtype_reach_load_model():
    p = argparse.ArgumentParser()
    cli.add_common(p)
    args = p.parse_args(["--model", "tiny-random"])
    assert (args.device, args.dtype) == ("auto", "auto")
    with pytest.raises(SystemExit):
        p.parse_args(["--dtype", "int8"])
    bundle = cli.load_bundle(p.parse_args(["--model", "tiny-random", "--device", "cpu", "--dtype", "bfloat16"]))
    assert (bundle.device, bundle.dtype) == ("cpu", "bfloat16")
    for device in ("tpu", "", " "):  # refused when parsed, before anything loads
        with pytest.raises(SystemExit):
            p.parse_args(["--model", "tiny-random", "--device", device])
    assert p.parse_args(["--device", "CUDA:1"]).device == "cuda:1"
