"""ui/jobs.py: one queue for the whole app process, and the label of a job in the progress panel."""

import time
from pathlib import Path

from asc.jobs import Job, JobKind, JobQueue
from ui import jobs


def test_job_queue_is_shared_by_every_call():
    queue = jobs.job_queue()
    assert isinstance(queue, JobQueue) and jobs.job_queue() is queue


def test_describe_says_model_label_status_and_progress_while_running():
    job = Job(id=3, kind=JobKind.LAYERS, model="tiny-random", corpus="layer probes: toy", limit=None,
              out=Path("out"))
    assert jobs._describe(job) == "#3 tiny-random, layer probes: toy: queued"
    job.status, job.stage, job.done, job.total = "running", "TOY probes", 2, 5
    job.started = time.time() - 4.2
    assert jobs._describe(job) == "#3 tiny-random, layer probes: toy: running (TOY probes 2/5, 4 s)"
    job.status = "failed"
    assert jobs._describe(job) == "#3 tiny-random, layer probes: toy: failed"


def test_describe_leaves_out_an_empty_stage():
    job = Job(id=4, kind=JobKind.EVAL, model="tiny-random", corpus="humaneval", limit=40, out=Path("out"))
    job.status, job.done, job.total, job.started = "running", 8, 40, time.time() - 2.2
    assert jobs._describe(job) == "#4 tiny-random, humaneval: running (8/40, 2 s)"


def _two_panels():
    from asc.jobs import JobKind
    from ui import jobs

    jobs.live_job_panel(JobKind.EVAL)
    jobs.live_job_panel(JobKind.LAYERS, lambda job: f"custom label of #{job.id}")


def test_live_job_panel_shows_its_kinds_jobs_with_the_pages_label(monkeypatch):
    """The one-line panel of a page: this tab's jobs of its kind (with the page's label when it gives one), the
    other tabs' active ones without their text, nothing of another kind."""
    from streamlit.testing.v1 import AppTest

    every = [Job(id=1, kind=JobKind.EVAL, model="m1", corpus="humaneval", limit=40, out=Path("a"), owner="me"),
             Job(id=2, kind=JobKind.LAYERS, model="m2", corpus="probes", limit=None, out=Path("b"), owner="me"),
             Job(id=3, kind=JobKind.EVAL, model="secret", corpus="secret", limit=None, out=Path("c"), owner="you")]
    every[0].status, every[0].done, every[0].total, every[0].started = "running", 1, 4, time.time()
    monkeypatch.setattr(jobs, "job_queue", lambda: type("Queue", (), {
        "jobs": lambda self, kind=None: [j for j in every if kind is None or j.kind == kind]})())
    monkeypatch.setattr(jobs, "owner", lambda: "me")
    at = AppTest.from_function(_two_panels, default_timeout=60)
    at.run()
    assert not at.exception
    texts = [p.text.replace("\\", "") for p in at.get("progress")]  # shown as plain text: Markdown escaped
    assert texts[0].startswith("#1 m1, humaneval: running (1/4")
    assert texts[1] == "#3 another tab's corpus evaluation: queued, 2 jobs ahead of it"  # #1 and #2, any kind
    assert texts[2] == "custom label of #2, 1 job ahead of it"
    assert len(texts) == 3 and not any("secret" in t for t in texts)
