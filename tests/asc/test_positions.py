"""asc.positions: LINE:COL (both from 1, the column in characters) to a character offset and back, and the one
message for a position outside the text."""

from __future__ import annotations

import pytest

from asc.errors import InputError
from asc.positions import line_col_at, offset_at

SRC = "def f(x):\n\tif x:\r\n        return 'é'\n"  # a tab, a CR before the newline, a non-ASCII character


def test_every_character_and_line_end_round_trips():
    lines = SRC.split("\n")
    for line, text in enumerate(lines, 1):
        for col in range(1, len(text) + 2):  # the line's end (one past its last character) is a position too
            offset = offset_at(SRC, line, col)
            assert line_col_at(SRC, offset) == (line, col)
            assert offset == sum(len(t) + 1 for t in lines[: line - 1]) + col - 1
    assert [offset_at(SRC, 1, 1), offset_at(SRC, 2, 2), offset_at(SRC, 3, 17)] == [0, 11, SRC.index("é")]
    assert SRC[offset_at(SRC, 2, 7)] == "\r"  # columns count characters: the CR is line 2's last one
    assert offset_at(SRC, 4, 1) == len(SRC)  # a text ending in a newline has an empty last line


@pytest.mark.parametrize("line, col, extent", [
    (5, 1, "(4 lines, line 4 has 0 characters)"),
    (1, 11, "(4 lines, line 1 has 9 characters)"),
    (0, 1, "(4 lines, line 1 has 9 characters)"),
    (2, 0, "(4 lines, line 2 has 7 characters)"),
])
def test_a_position_outside_names_the_extent_and_the_fix(line, col, extent):
    with pytest.raises(InputError) as err:
        offset_at(SRC, line, col)
    assert str(err.value) == f"position {line}:{col} is outside the snippet {extent}: give LINE:COL inside it, both from 1"


def test_the_caller_names_the_option_and_the_text():
    with pytest.raises(InputError, match=r"^--at 9:1 is outside the file \(1 lines"):
        offset_at("x = 1", 9, 1, "--at 9:1", within="the file")


def test_line_col_at_the_ends():
    assert line_col_at("", 0) == (1, 1)
    assert line_col_at("ab\n", 3) == (2, 1)
    assert line_col_at("ab\ncd", 5) == (2, 3)
