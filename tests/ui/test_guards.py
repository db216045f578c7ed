"""ui/guards.py: uploads are decoded or refused with the fix named; too long snippets are refused."""

from pathlib import Path

import pytest

from asc.errors import InputError
from ui import guards


def test_invalid_utf8_upload_message():
    with pytest.raises(InputError, match="not valid UTF-8"):
        guards.decode_upload(b"x = '\xff'\n", "bad.py")
    assert guards.decode_upload("x = 'é'\n".encode(), "ok.py") == "x = 'é'\n"


def test_invalid_utf8_upload_names_the_file_the_byte_and_the_fix():
    with pytest.raises(InputError) as err:
        guards.decode_upload(b"ab\xe9cd", "latin1.py")
    message = str(err.value)
    assert message.startswith("latin1.py is not valid UTF-8 (byte 2: ")
    assert "re-save it as UTF-8 and upload it again" in message
    assert err.value.__cause__ is None and err.value.__suppress_context__  # one line, no decoding traceback


def test_empty_and_bom_uploads_decode_as_they_are():
    assert guards.decode_upload(b"", "empty.py") == ""  # emptiness is the explain step's to refuse
    assert guards.decode_upload("\ufeffx = 1\n".encode(), "bom.py") == "\ufeffx = 1\n"


def test_check_length_accepts_up_to_the_limit_and_refuses_beyond():
    guards.check_length("x" * guards.MAX_CHARS)  # exactly at the limit: accepted
    with pytest.raises(InputError) as err:
        guards.check_length("x" * (guards.MAX_CHARS + 1))
    message = str(err.value)
    assert f"the snippet has {guards.MAX_CHARS + 1:,} characters" in message
    assert f"at most {guards.MAX_CHARS:,}" in message and "python -m asc explain FILE" in message
    assert guards.MAX_CHARS == 60_000


def test_an_upload_longer_than_the_view_takes_is_refused_before_decoding():
    """A 200 MB upload (Streamlit's default limit) used to be decoded into the session and the text box first."""
    with pytest.raises(InputError, match="more than the browser view takes"):
        guards.decode_upload(b"x" * (4 * guards.MAX_CHARS + 1), "big.py")
    with pytest.raises(InputError, match="the browser view takes at most"):
        guards.decode_upload(b"x" * (guards.MAX_CHARS + 1), "long.py")  # decodes, then the length check
    assert len(guards.decode_upload(b"x" * guards.MAX_CHARS, "ok.py")) == guards.MAX_CHARS


def test_a_run_picker_shows_each_runs_title_and_a_folder_no_longer_listed_by_name():
    from asc.corpus.listing import RunInfo

    info = RunInfo(model="m", corpus="c", n_planned=5, finished=True, folder="run-1")
    label = guards.titles({Path("runs/run-1"): info})
    assert label(Path("runs/run-1")) == info.title == "m · c · 5 snippets · run-1"
    assert label(Path("runs/deleted")) == "deleted"
