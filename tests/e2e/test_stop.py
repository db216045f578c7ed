"""Ctrl-C with a job running stops the jobs and the server within seconds, leaving a resumable run.

The walkthrough of issue 48 pressed Ctrl-C on ``make app`` while the Global page's demo ran: the server was still up
after 18 s, a SIGTERM then printed "terminate called without an active exception" (a thread inside torch when the
process ended) and ``make`` exited with Error 250. Here the app is started as ``make app`` starts it, the demo is
started in chromium on the embedded SmolLM2 (40 HumanEval functions: a minute or more on this CPU), and once its
first snippets are written the launcher's process group gets SIGINT, as a terminal's Ctrl-C sends it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from asc.corpus import load_run
from asc.jobs import JobKind
from tests.browser import MODEL_RUN, OUT, SHOWN, chromium, free_port, has_chromium, open_page, printed_url
from ui import jobs

pytestmark = [pytest.mark.real, pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not has_chromium(), reason="Debian chromium not installed (make test does)")]

STOP_WITHIN_S = jobs.STOP_WAIT + 10.0  # from Ctrl-C to the launcher's exit: the job's wait, and the server's own stop


def test_ctrl_c_with_a_job_running_stops_cleanly_and_keeps_the_finished_snippets(tmp_path):
    from playwright.sync_api import expect

    port, runs = free_port(), tmp_path / "runs"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ASC_TOKEN": "off", "ASC_RUNS_DIR": str(runs)}
    env.pop("ASC_MODEL", None)  # the embedded default, SmolLM2: a demo that runs long enough to be interrupted
    log_path = OUT / "stop.log"
    OUT.mkdir(exist_ok=True)
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "ui.serve", "--server.headless", "true", "--server.port",
                                 str(port), "--server.address", "127.0.0.1"], env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)  # its own group, as a terminal's job
        try:
            url = printed_url(log_path)
            with chromium() as browser:
                page = open_page(browser, url.rstrip("/") + "/global-asc-eval", "Global AsC-Eval")
                page.get_by_role("button", name=jobs.demo_label(JobKind.EVAL)).click()
                expect(page.locator("[data-testid='stProgress']").first).to_be_visible(timeout=SHOWN)
                deadline = time.monotonic() + MODEL_RUN / 1000
                while time.monotonic() < deadline and not list(runs.rglob("*.parquet")):
                    time.sleep(0.5)  # until the run has written its first part (polled: a file, not a page element)
                assert list(runs.rglob("*.parquet")), "the demo wrote nothing"
                os.killpg(proc.pid, signal.SIGINT)
                pressed = time.monotonic()
                code = proc.wait(timeout=60)
                took = time.monotonic() - pressed
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    text = log_path.read_text()
    assert "terminate called" not in text and "Traceback" not in text, text[-3000:]
    assert code in (0, -signal.SIGINT, 130), (code, text[-2000:])
    print(f"stopped {took:.1f} s after Ctrl-C")
    assert took < STOP_WITHIN_S, f"the server took {took:.1f} s to stop after Ctrl-C"
    folder = next(p.parent for p in runs.rglob("*.parquet"))
    while not (folder / "meta.json").exists() and folder != runs:
        folder = folder.parent
    run = load_run(folder)
    assert 0 < len(run.snippets) < 40  # the finished snippets were kept; a resumed run does the rest
