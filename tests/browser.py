"""What the browser tests share: Debian's chromium, a free port, a Streamlit server started and awaited.

Plain functions (fixtures live in the test files): :func:`start_app` starts a server and waits for its
health check; :func:`chromium` launches Debian's chromium through Playwright (never a downloaded browser).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tests.helpers import ROOT

CHROMIUM = "/usr/bin/chromium"
OUT = ROOT / "test-output"  # server logs and screenshots


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def streamlit_command(port: int, address: str = "127.0.0.1") -> list[str]:
    """``streamlit run app.py`` on ``address:port``, headless, without the file watcher."""
    return [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port",
            str(port), "--server.address", address, "--server.fileWatcherType", "none"]


def launcher_command(port: int, address: str = "127.0.0.1") -> list[str]:
    """What ``make app`` runs (``python -m ui.serve``, which starts Streamlit without the legacy ``pages/`` routing
    and prints the address with the token), on ``address:port``, without the file watcher."""
    return [sys.executable, "-m", "ui.serve", *streamlit_command(port, address)[4:]]


def start_app(command: Sequence[str], env: dict, log_name: str, port: int) -> subprocess.Popen:
    """Start ``command`` (a server on ``port``) with its output in ``test-output/<log_name>``; return once
    ``/_stcore/health`` answers (the process is killed, and AssertionError raised, if it never does)."""
    OUT.mkdir(exist_ok=True)
    log = open(OUT / log_name, "w")  # noqa: SIM115 (the server writes to it while it lives)
    proc = subprocess.Popen(list(command), cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1)
            return proc
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise AssertionError(f"the server did not start: see {OUT / log_name}")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def chromium() -> Iterator:
    """A headless Debian chromium driven by Playwright."""
    from playwright.sync_api import sync_playwright

    OUT.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"])
        try:
            yield browser
        finally:
            browser.close()


def has_chromium() -> bool:
    return Path(CHROMIUM).exists()
