"""ui.progress: the bar's words, a work that reports and returns, an error handed on, and Cancel (AppTest)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from ui.progress import describe


def test_the_bar_says_the_stage_the_steps_the_time_and_the_time_left():
    assert describe("layer 3 of 30 patched", 4, 31, 12.4, 8.0) == "layer 3 of 30 patched: 4 of 31 · 12 s · about 54 s left"
    assert describe("integrated gradients, 64 path points", 64, 64, 30.0, 9.0).endswith("64 of 64 · 30 s")  # done
    assert describe("Attributing...", 0, 0, 1.0, 1.0) == "Attributing... · 1 s"  # nothing reported yet


def _page():
    import threading

    import streamlit as st

    from ui.progress import Cancelled, with_progress

    ran = st.session_state.setdefault("ran", [])

    def work(report):
        ran.append(threading.current_thread().name)
        for i in range(3):
            report("counting", i + 1, 3)
        if st.session_state.get("fail"):
            raise ValueError("the work failed")
        return 42

    try:
        st.write(f"result {with_progress('Counting...', work, 'cancel_me')}")
    except Cancelled as cancelled:
        st.write(f"cancelled {cancelled.progress}")
    except ValueError as err:
        st.write(f"error {err}")


def test_a_work_runs_in_its_own_thread_and_its_bar_and_button_go_when_it_returns():
    at = AppTest.from_function(_page, default_timeout=60)
    at.run()
    assert not at.exception
    assert [m.value for m in at.markdown] == ["result 42"]
    assert at.session_state["ran"] == ["asc-page-work"]
    assert not at.get("progress") and not at.button  # the bar and Cancel are gone with the work
    at.session_state["fail"] = True
    at.run()
    assert [m.value for m in at.markdown] == ["error the work failed"]


def test_cancel_stops_before_the_work_runs_again():
    """What the rerun after a click on Cancel does (the click itself interrupts the running script: chromium checks it
    in tests/e2e/test_fit.py): it raises Cancelled without starting the work."""
    from unittest import mock

    from ui.progress import _STOPPED

    at = AppTest.from_function(_page, default_timeout=60)
    with mock.patch("streamlit.button", return_value=True):  # the button as it reads in the run after its click
        at.run()
    assert not at.exception
    assert [m.value for m in at.markdown] == ["cancelled None"] and at.session_state["ran"] == []
    at.session_state[_STOPPED + "cancel_me"] = ("counting", 1, 3)  # what the interrupted run left
    with mock.patch("streamlit.button", return_value=True):
        at.run()
    assert [m.value for m in at.markdown] == ["cancelled ('counting', 1, 3)"]  # how far it got, said once
    assert _STOPPED + "cancel_me" not in at.session_state
    at.session_state[_STOPPED + "cancel_me"] = ("counting", 2, 3)  # left by a run another widget interrupted
    at.run()  # ... then a run that ends: nothing stale is kept for a later Cancel
    assert [m.value for m in at.markdown] == ["result 42"] and _STOPPED + "cancel_me" not in at.session_state


def test_a_queued_rerun_is_seen_through_the_sessions_requests():
    """A click inside a fragment is queued, not raised (ui.progress's module doc): the redraw loop reads the queue."""
    from types import SimpleNamespace

    from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType

    from ui.progress import rerun_waiting

    def ctx(state):
        return SimpleNamespace(script_requests=SimpleNamespace(_state=state))

    assert not rerun_waiting(ctx(ScriptRequestType.CONTINUE))
    assert rerun_waiting(ctx(ScriptRequestType.RERUN)) and rerun_waiting(ctx(ScriptRequestType.STOP))
    assert not rerun_waiting(SimpleNamespace(script_requests=None))  # no queue to read: as before
