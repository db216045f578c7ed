"""asc.cli.args, the parsing every command line shares: reading sources, LINE:COL positions, model options, and
the old spellings of renamed flags and subcommands (still taken, the new name said once on stderr)."""

from __future__ import annotations

import argparse
import io
import sys

import pytest

from asc.cli import args as cli_args
from asc.errors import InputError

# ------------------------------------------------------------------------------------------ read_source


def test_read_source_returns_the_text_unchanged(tmp_path):
    f = tmp_path / "a.py"
    f.write_bytes("def größe(x):\r\n\treturn x\r\n".encode())
    assert cli_args.read_source(str(f)) == "def größe(x):\r\n\treturn x\r\n"  # no newline translation


def test_read_source_missing_file(tmp_path):
    with pytest.raises(InputError) as err:
        cli_args.read_source(str(tmp_path / "nope.py"))
    assert str(err.value) == f"file not found: {tmp_path / 'nope.py'}"
    with pytest.raises(InputError, match="is a folder, not a file: give a source file, or - to read standard input"):
        cli_args.read_source(str(tmp_path))


def test_read_source_invalid_utf8_names_the_byte_and_the_fix(tmp_path):
    f = tmp_path / "latin1.py"
    f.write_bytes(b"x = 'caf\xe9'\n")
    with pytest.raises(InputError) as err:
        cli_args.read_source(str(f))
    message = str(err.value)
    assert message.startswith(f"{f} is not valid UTF-8 (byte 8: invalid continuation byte)")
    assert "iconv -f latin1 -t utf-8" in message
    assert err.value.__cause__ is None and err.value.__suppress_context__  # no decoding traceback attached


@pytest.mark.parametrize("content", [b"", b"   \n\t\n", "\u3000\n".encode()])
def test_read_source_empty_file(tmp_path, content):
    f = tmp_path / "empty.py"
    f.write_bytes(content)
    with pytest.raises(InputError) as err:
        cli_args.read_source(str(f))
    assert str(err.value) == f"{f} is empty: give a file with some code"


def test_read_source_dash_reads_standard_input(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO("x = 'é'\n".encode())))
    assert cli_args.read_source("-") == "x = 'é'\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\xff\n")))
    with pytest.raises(InputError, match="^standard input is not valid UTF-8 \\(byte 0"):
        cli_args.read_source("-")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\n")))
    with pytest.raises(InputError, match="^standard input is empty"):
        cli_args.read_source("-")


# ------------------------------------------------------------------------------------------ model options


def test_common_options_defaults_and_choices():
    p = argparse.ArgumentParser()
    cli_args.add_scoring_options(p)
    args = p.parse_args([])
    assert (args.model, args.aggregate, args.max_window, args.whitespace, args.multi_leaf, args.zero_width,
            args.trust_remote_code) == ("smollm2-135m", "median", None, "enclosing", "all", "none", False)
    args = p.parse_args(["--model", "tiny-random", "--aggregate", "max", "--max-window", "32", "--trust-remote-code"])
    assert (args.model, args.aggregate, args.max_window, args.trust_remote_code) == ("tiny-random", "max", 32, True)
    with pytest.raises(SystemExit):
        p.parse_args(["--aggregate", "sum"])


def test_model_options_device_and_dtype_reach_load_model():
    p = argparse.ArgumentParser()
    cli_args.add_scoring_options(p)
    args = p.parse_args(["--model", "tiny-random"])
    assert (args.device, args.dtype) == ("auto", "auto")
    with pytest.raises(SystemExit):
        p.parse_args(["--dtype", "int8"])
    bundle = cli_args.load_bundle(p.parse_args(["--model", "tiny-random", "--device", "cpu", "--dtype", "bfloat16"]))
    assert (bundle.device, bundle.dtype) == ("cpu", "bfloat16")
    for device in ("tpu", "", " "):  # refused when parsed, before anything loads
        with pytest.raises(SystemExit):
            p.parse_args(["--model", "tiny-random", "--device", device])
    assert p.parse_args(["--device", "CUDA:1"]).device == "cuda:1"


# ------------------------------------------------------------------------------------------ positions


@pytest.mark.parametrize("text, want", [("1:1", (1, 1)), ("12:5", (12, 5)), (" 3:9", (3, 9))])
def test_line_col_reads_a_position(text, want):
    assert cli_args.line_col(text) == want


@pytest.mark.parametrize("text, needle", [("3", "is not LINE:COL"), ("3:x", "is not LINE:COL"), ("1:2:3", "is not LINE:COL"),
                                          ("0:4", "count from 1"), ("4:0", "count from 1"), ("-1:2", "count from 1")])
def test_line_col_refuses_what_is_not_a_position(text, needle):
    with pytest.raises(argparse.ArgumentTypeError, match=needle):
        cli_args.line_col(text)


def test_source_offset_names_the_option_and_the_snippet():
    text = "def f(x):\n    return x\n"
    assert cli_args.source_offset(text, (2, 5)) == text.index("return")
    with pytest.raises(InputError) as err:
        cli_args.source_offset(text, (9, 1))
    assert str(err.value) == ("--at 9:1 is outside the snippet (3 lines, line 3 has 0 characters): give LINE:COL inside "
                              "it, both from 1")


def test_a_bad_position_is_one_line_and_exit_2_when_parsed(capsys):
    parser = cli_args.Parser(prog="prog")
    parser.add_argument("--at", type=cli_args.line_col)
    with pytest.raises(SystemExit) as stop:
        parser.parse_args(["--at", "3"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err == "error: prog: argument --at: '3' is not LINE:COL (e.g. 12:5) (see prog --help)\n"


# ------------------------------------------------------------------------------------------ renamed spellings


def _renamed_parser() -> argparse.ArgumentParser:
    parser = cli_args.Parser(prog="prog")
    sub = cli_args.subcommands(parser)
    p = sub.add_renamed("inspect", "layers", help="layer probes")
    p.add_argument("--per-layer", "--layers", action=cli_args.RenamedFlag, help="per layer")
    sub.add_parser("other")
    return parser


@pytest.mark.parametrize("argv, per_layer, notes", [
    (["inspect"], False, []),
    (["inspect", "--per-layer"], True, []),
    (["inspect", "--layers"], True, ["`--layers` is now `--per-layer`"]),
    (["inspect", "--layers", "--layers", "--per-layer"], True, ["`--layers` is now `--per-layer`"]),
    (["layers", "--per-layer"], True, ["`prog layers` is now `prog inspect`"]),
    (["layers", "--layers"], True, ["`--layers` is now `--per-layer`", "`prog layers` is now `prog inspect`"]),
])
def test_both_spellings_parse_alike_and_the_new_name_is_said_once(capsys, argv, per_layer, notes):
    args = _renamed_parser().parse_args(argv)
    assert (args.command, args.per_layer) == ("inspect", per_layer)  # the command is named by its new name
    cli_args.say_renamed(args)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [f"note: {n} (the old name still works)" for n in notes]


def test_the_old_spellings_are_listed_in_the_help():
    parser = _renamed_parser()
    assert "inspect (layers)" in parser.format_help()
    sub = next(a for a in parser._actions if isinstance(a, cli_args.Subcommands))
    assert sub.choices["layers"] is sub.choices["inspect"]  # one parser, two names
    assert "--per-layer, --layers" in sub.choices["inspect"].format_help()
    assert "(--layers: its old name)" in sub.choices["inspect"].format_help()


def test_an_error_after_an_old_spelling_is_still_one_line(capsys):
    with pytest.raises(SystemExit) as stop:
        _renamed_parser().parse_args(["layers", "--layers", "--nope"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.splitlines()) == 1 and "unrecognized arguments: --nope" in err


def test_subcommands_need_a_parser_of_ours():
    with pytest.raises(TypeError, match="need a Parser"):
        cli_args.subcommands(argparse.ArgumentParser(prog="plain"))


def test_asc_and_probes_take_the_old_names(capsys):
    from asc.cli import build_parser as asc_parser
    from probes.cli import build_parser as probes_parser

    for command in (["explain", "f.py"], ["eval", "--corpus", "humaneval", "--out", "o"]):
        old, new = (asc_parser().parse_args([*command, flag]) for flag in ("--layers", "--per-layer"))
        assert old.per_layer is new.per_layer is True and vars(old).pop("renamed_notices")
        assert {k: v for k, v in vars(old).items() if k != "renamed_notices"} == vars(new)
        assert asc_parser().parse_args(command).per_layer is False
    old, new = (probes_parser().parse_args([name, "--model", "m", "--out", "o"]) for name in ("layers", "inspect"))
    assert old.command == new.command == "inspect" and old.func is new.func
    cli_args.say_renamed(old)
    assert capsys.readouterr().err == ("note: `python -m probes layers` is now `python -m probes inspect` (the old "
                                       "name still works)\n")
