"""Background jobs follow the sidebar's device and dtype: pages and demos submit them, the app's loader uses them."""

import dataclasses
import threading

from streamlit.testing.v1 import AppTest

from asc.jobs import JobKind
from tests.pages.helpers import TINY, button, page
from ui import jobs, widgets


def test_the_apps_loader_passes_a_jobs_device_and_dtype_to_the_job_slot(monkeypatch):
    calls = []
    monkeypatch.setattr(jobs, "get_job_bundle", lambda *args: calls.append(args) or "bundle")
    load = jobs.job_queue()._load
    assert load("m") == "bundle" and load("m", trust_remote_code=True, device="cuda:1", dtype="float16") == "bundle"
    assert calls == [("m", False, "auto", "auto"), ("m", True, "cuda:1", "float16")]


def test_placement_is_auto_before_the_sidebar_ran():
    assert widgets.placement() == {"device": "auto", "dtype": "auto"}


class _Recorder:
    """Stands in for the queue: records what each submit was given."""

    def __init__(self) -> None:
        self.kwargs: list[dict] = []

    def submit(self, *args, **kwargs):
        self.kwargs.append(kwargs)

    def submit_call(self, *args, **kwargs):
        self.kwargs.append(kwargs)


def test_demos_are_submitted_on_the_given_device_and_dtype(monkeypatch, tmp_path):
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path / "runs"))
    for kind in JobKind:
        queue = _Recorder()
        jobs.submit_demo(kind, queue, owner="tab", device="cpu", dtype="bfloat16")
        assert queue.kwargs and all(k["owner"] == "tab" and (k["device"], k["dtype"]) == ("cpu", "bfloat16")
                                    for k in queue.kwargs)


def test_the_global_page_submits_runs_on_the_sidebars_device_and_dtype(monkeypatch, tmp_path):
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path / "runs"))
    queue = jobs.job_queue()
    assert queue.wait(300)
    gate = threading.Event()  # keeps the queue busy, so the page's job is checked (and cancelled) before it runs
    queue.submit_call(JobKind.EVAL, "tiny-random", "hold", tmp_path / "held", lambda *_: gate.wait(120),
                      owner="other")
    try:
        at = AppTest.from_file(page("global_eval"), default_timeout=120)
        at.session_state["settings"] = dataclasses.replace(TINY, device="cpu", dtype="bfloat16")
        at.run()
        at.number_input(key="run_limit").set_value(3).run()
        before = len(queue.jobs())
        button(at, "Start").click().run()
        assert not at.exception
        [job] = queue.jobs()[before:]
        assert job.kind is JobKind.EVAL and (job.device, job.dtype) == ("cpu", "bfloat16")
        job.cancel.set()
    finally:
        gate.set()
    assert queue.wait(120) and job.status == "cancelled"
