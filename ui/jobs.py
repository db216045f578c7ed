"""The app-wide background queue and the progress panel pages show for their own kind of job."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from asc.corpus.jobs import Job, JobKind, JobQueue
from ui.cache import get_bundle


@st.cache_resource(show_spinner=False)
def job_queue() -> JobQueue:
    """The app-wide queue of long runs: they go on while users switch pages or leave."""
    return JobQueue(lambda spec: get_bundle(spec, False))


def _describe(job: Job) -> str:
    label = f"#{job.id} {job.model}, {job.corpus}: {job.status}"
    if job.status == "running":
        label += f" ({job.stage} {job.done}/{job.total}, {job.elapsed:.0f} s)"
    return label


def job_panel(kind: JobKind, describe: Callable[[Job], str] | None = None) -> None:
    """Progress bars of the background jobs of ``kind`` (newest first, at most 6) with a Cancel button each.

    ``describe(job)`` gives the label (default: model, label, status, stage); pages call this inside an
    ``st.fragment(run_every=...)``.
    """
    for job in reversed(job_queue().jobs(kind)[-6:]):
        label = (describe or _describe)(job)
        if job.status == "done":
            label += f" in {job.elapsed:.0f} s"
        cols = st.columns([6, 1])
        cols[0].progress(min(1.0, job.done / job.total) if job.total else 0.0, text=label)
        if job.error:
            cols[0].error(job.error)
        if job.active and cols[1].button("Cancel", key=f"cancel_{job.id}"):
            job.cancel.set()
