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
