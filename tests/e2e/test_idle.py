"""An idle open tab costs the server nothing measurable, and the server watches no files.

The walkthrough of issue 48 found a server started by ``make app`` at about half a core with one idle tab open (400-512
CPU ticks per 10 s against 4 with none) and a log of 61,348 "Inotify queue overflowed" lines: Streamlit's file watcher
rescanned the tree, and every page with a job panel reran it every 2 s. Here the app is started as ``make app`` starts
it (``python -m ui.serve``, with no file-watcher option of ours), a tab is opened on the inspector and one on a page
with a job panel, and once both are idle the server's processes are measured for 20 s (the spinning server spent
4-5 CPU s in 10 s; the bar is 0.4: 10 s with a bar of 0.2 failed at 0.29 beside the other worker's tests).
"""

from __future__ import annotations

import os
import sys
import time

import pytest

from tests.browser import OUT, chromium, free_port, has_chromium, open_page, start_app, stop

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not has_chromium(), reason="Debian chromium not installed (make test does)")]

MEASURE_S = 20.0
MAX_CPU_S = 0.4  # CPU seconds the whole server may spend in MEASURE_S with idle tabs (2% of one core)


def _cpu_seconds(proc) -> float:
    import psutil

    total = 0.0
    for p in [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            continue
    return total


def test_an_idle_tab_costs_the_server_nothing_and_no_file_is_watched(tmp_path):
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ASC_TOKEN": "off", "ASC_MODEL": "tiny-random",
           "ASC_RUNS_DIR": str(tmp_path / "runs")}
    command = [sys.executable, "-m", "ui.serve", "--server.headless", "true", "--server.port", str(port),
               "--server.address", "127.0.0.1"]  # make app's options: no --server.fileWatcherType of the test's
    proc = start_app(command, env, "idle.log", port)
    try:
        with chromium() as browser:
            base = f"http://127.0.0.1:{port}"
            inspector = open_page(browser, base + "/", "Completion inspector")
            corpus = open_page(browser, base + "/global-asc-eval", "Global AsC-Eval")
            before = _cpu_seconds(proc)
            time.sleep(MEASURE_S)  # the measure itself: CPU spent over a span of wall time
            spent = _cpu_seconds(proc) - before
            corpus.screenshot(path=str(OUT / "idle-global.png"))
            inspector.close()
            corpus.close()
    finally:
        stop(proc)
    log = (OUT / "idle.log").read_text()
    assert "Inotify" not in log and "Watching" not in log, log[-2000:]
    print(f"idle: the server spent {spent:.3f} CPU s in {MEASURE_S:.0f} s")
    assert spent < MAX_CPU_S, f"the server spent {spent:.2f} CPU s in {MEASURE_S:.0f} s with two idle tabs"
