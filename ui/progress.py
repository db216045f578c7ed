"""Long work in a page: a progress bar that says the stage, the steps done, the time spent and the time left, and a
Cancel button that stops the work.

:func:`with_progress` runs ``work(report)`` in a thread of its own while the script's thread redraws the bar four
times a second from what ``report(stage, done, total)`` last said (the backend's ``on_progress``: integrated
gradients' path points, occlusion's variants, patching's layers). The work never calls Streamlit, so a cached
function (``st.cache_data``) can run inside it. A click on Cancel reruns the script: Streamlit interrupts the script's
thread at its next redraw of the bar, the work is told to stop (its next ``report`` raises) and is waited for, and the
rerun raises :class:`Cancelled` before starting the work again, so the page says it stopped and how far the work had
got (:attr:`Cancelled.progress`).

Inside a fragment (the inspector's views are one) Streamlit does not interrupt a run for a click: it queues the
fragment's rerun until the run ends, so Cancel waited for the work to finish (integrated gradients at 256 points ran
to their end, and the page then said "Stopped"). The redraw loop therefore also looks at the session's queued requests
(:func:`rerun_waiting`) and, when one waits, stops the work and ends this run itself (Streamlit's ``StopException``,
which leaves the queued rerun in place; ``st.stop()`` would drop it). Any queued request stops the work, as any
rerun does outside fragments; so a page that polls (a ``run_every`` fragment, :func:`ui.jobs.live_job_panel` while
a job runs) would stop it every few seconds: the inspector, where it is used, has none.

The time left is the stage's own: its time so far (from the previous stage's last report, or the start) scaled by the
steps still to do (integrated gradients with *Until 1%* starts a new stage at each doubling of the points, whose
length is not known in advance).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import streamlit as st
from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx
from streamlit.runtime.scriptrunner_utils.exceptions import StopException

__all__ = ["POLL_S", "Cancelled", "describe", "rerun_waiting", "with_progress"]

T = TypeVar("T")
POLL_S = 0.25  # seconds between two redraws of the bar
_STOPPED = "_asc_stopped_"  # session-state key prefix: (stage, done, total) of the work a rerun interrupted


class Cancelled(Exception):
    """The user pressed Cancel: the work did not run (or was stopped). ``progress``: (stage, done, total) when it was
    stopped, None when unknown."""

    def __init__(self, progress: tuple[str, int, int] | None = None) -> None:
        super().__init__("cancelled")
        self.progress = progress


class _Stop(Exception):
    """Raised inside the work by ``report`` once the page was left or cancelled."""


def describe(stage: str, done: int, total: int, elapsed: float, stage_elapsed: float) -> str:
    """The bar's text: the stage, its steps done of all, the seconds spent, and the seconds its rest should take."""
    text = f"{stage}: {done} of {total}" if total else stage
    text += f" · {elapsed:.0f} s"
    if 0 < done < total:
        text += f" · about {stage_elapsed / done * (total - done):.0f} s left"
    return text


def rerun_waiting(ctx: Any = None) -> bool:
    """Whether the session has asked for a rerun (or a stop) that this run has not yet been interrupted for: a click
    inside a fragment waits in this queue until the run ends (module doc). Reads Streamlit's private request state;
    False when it is not there."""
    ctx = get_script_run_ctx(suppress_warning=True) if ctx is None else ctx
    state = getattr(getattr(ctx, "script_requests", None), "_state", None)
    return state is not None and getattr(state, "name", "CONTINUE") != "CONTINUE"


def with_progress(label: str, work: Callable[[Callable[[str, int, int], None]], T], cancel_key: str) -> T:
    """``work(report)`` with a progress bar and a Cancel button (key ``cancel_key``), both removed once it returns;
    its result, or its exception. :class:`Cancelled` when this run follows a click on Cancel."""
    box = st.empty()
    with box.container():
        bar = st.progress(0.0, text=label)
        if st.button("Cancel", key=cancel_key, help="stop this computation"):
            box.empty()
            raise Cancelled(st.session_state.pop(_STOPPED + cancel_key, None))
    started = time.monotonic()
    # since: when the stage began (the previous stage's last report; the start for the first), for its time left
    state: dict[str, Any] = {"stage": label, "done": 0, "total": 0, "since": started, "last": started}
    stop = threading.Event()
    lock = threading.Lock()

    def report(stage: str, done: int, total: int) -> None:
        if stop.is_set():
            raise _Stop
        now = time.monotonic()
        with lock:
            if stage != state["stage"]:
                state["since"] = state["last"]
            state.update(stage=stage, done=int(done), total=int(total), last=now)

    # work's result, or its exception, handed to the script's thread (a _Stop after a cancel is dropped there)
    value: list[T] = []
    error: list[BaseException] = []

    def run() -> None:
        try:
            value.append(work(report))
        except BaseException as err:
            error.append(err)

    thread = threading.Thread(target=run, name="asc-page-work", daemon=True)
    add_script_run_ctx(thread, get_script_run_ctx())  # caches and the model's loader see this session
    thread.start()
    try:
        while thread.is_alive():
            thread.join(POLL_S)
            if rerun_waiting():  # a click in a fragment: end this run, the queued one follows (module doc)
                raise StopException()
            with lock:
                stage, done, total, since = state["stage"], state["done"], state["total"], state["since"]
            now = time.monotonic()
            bar.progress(min(1.0, done / total) if total else 0.0,
                         text=describe(stage, done, total, now - started, now - since))  # a Cancel click raises here
    except BaseException:
        stop.set()  # Streamlit's rerun (Cancel, another widget) or a stop: the work ends at its next report
        thread.join()
        with lock:  # how far it got, for the rerun's "Stopped" when the rerun is Cancel's
            st.session_state[_STOPPED + cancel_key] = (str(state["stage"]), int(state["done"]), int(state["total"]))
        raise
    box.empty()
    st.session_state.pop(_STOPPED + cancel_key, None)  # a run that ended leaves no "how far" for a later Cancel
    if error:
        raise error[0]
    return value[0]
