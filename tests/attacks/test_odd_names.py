"""Names no file can have: a path part over 255 bytes (``ENAMETOOLONG``) and a NUL character, where the app meets them.

* a corpus path inside a data root but too long used to pass the policy and fail its job with a raw
  ``OSError: [Errno 36]`` and a traceback in the server log: the policy and the queue now refuse the text, and
  an ``OSError`` a job meets anyway fails it with one line, logged without a traceback;
* an upload whose name holds a NUL replaced the uploader's page with Streamlit's traceback (its own ``type=``
  check raises before the page runs): the pages check the name themselves and show one error line.
"""

from __future__ import annotations

import errno
import logging
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from asc.access import AccessPolicy
from asc.corpus.sources import load_corpus
from asc.errors import InputError
from asc.jobs import JobKind, JobQueue
from tests.pages.helpers import TINY, button, page

LONG = "a" * 300


def test_a_long_corpus_path_inside_a_root_is_refused_by_the_policy_and_the_queue(tmp_path):
    corpus = str(tmp_path / LONG)
    policy = AccessPolicy(shared=True, data_roots=(tmp_path,))
    with pytest.raises(InputError, match="has a name of 300 bytes; file systems take at most 255"):
        policy.check_corpus(corpus)
    queue = JobQueue(lambda spec: spec)
    with pytest.raises(InputError, match="at most 255"):
        queue.submit("m", corpus, 2, tmp_path / "runs")
    with pytest.raises(InputError, match="contains a NUL character"):
        policy.check_corpus(str(tmp_path / "a\0b"))
    assert queue.jobs() == []


def test_an_os_error_in_a_job_fails_it_with_one_line_and_no_traceback_in_the_log(tmp_path, caplog):
    corpus = str(tmp_path / LONG)

    def call(bundle, progress, stop):  # what a page's job does with a corpus that passed no check
        load_corpus(corpus, roots=[tmp_path])

    queue = JobQueue(lambda spec: spec)
    with caplog.at_level(logging.WARNING, logger="asc.jobs"):
        job = queue.submit_call(JobKind.ATTENTION, "m", "attention maps", tmp_path / "o", call)
        after = queue.submit_call(JobKind.ATTENTION, "m", "next", tmp_path / "o", lambda b, p, s: None)
        assert queue.wait(60)
    assert job.status == "failed" and after.status == "done"
    assert job.error.endswith("is too long a path for the file system: give a shorter path"), job.error
    assert "\n" not in job.error and "Errno" not in job.error and len(job.error) < 300
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


def test_os_error_message_names_the_path_and_the_fix():
    from asc.files import os_error_message

    message = os_error_message(OSError(errno.ENAMETOOLONG, "File name too long", "/data/" + LONG))
    assert message.startswith("/data/aaa") and "..." in message and message.endswith("give a shorter path")
    assert os_error_message(OSError(errno.EBUSY, "Device or resource busy", "/x")) == "/x: device or resource busy"


@pytest.mark.parametrize("name", ["ok\0.py", "evil\0.txt"])
def test_an_upload_named_with_a_nul_shows_an_error_line_not_a_traceback(monkeypatch, name):
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    at = AppTest.from_file(page("inspect"), default_timeout=120)
    at.session_state["settings"] = TINY
    at.run()
    code = at.text_area(key="code").value
    at.file_uploader(key="upload").set_value((name, b"def f(x):\n    return x\n", "text/x-python"))
    at.run()
    assert not at.exception
    assert any("NUL character" in e.value for e in at.error)
    assert at.text_area(key="code").value == code  # the upload was not taken


def test_an_upload_of_another_kind_is_refused_by_name(monkeypatch):
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    at = AppTest.from_file(page("inspect"), default_timeout=120)
    at.session_state["settings"] = TINY
    at.run()
    at.file_uploader(key="upload").set_value(("notes.pdf", b"def f(x):\n    return x\n", "application/pdf"))
    at.run()
    assert not at.exception and any("notes" in e.value and "upload one of those" in e.value for e in at.error)


def test_a_task_file_named_with_a_nul_is_refused_and_nothing_is_submitted(monkeypatch, tmp_path):
    from ui import jobs

    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path))
    before = len(jobs.job_queue().jobs())
    at = AppTest.from_file(page("probing"), default_timeout=120)
    at.run()
    at.multiselect(key="lp_models").set_value(["tiny-random"])
    at.multiselect(key="lp_tasks").set_value([])
    at.file_uploader(key="lp_files").set_value([("t\0.tsv", b"tr\ta\tx = 1\nte\tb\ty = 2\n", "text/plain")])
    at.run()
    assert not at.exception
    button(at, "Start").click().run()
    assert not at.exception and any("NUL character" in e.value for e in at.error)
    assert len(jobs.job_queue().jobs()) == before
    assert not Path(tmp_path / "layers" / "uploads").exists()
