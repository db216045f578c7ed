"""What the browser tests share: Debian's chromium, a free port, a Streamlit server started and awaited, and the
waits that keep them from flaking on a loaded 2-core machine.

Plain functions (fixtures live in the test files and tests/e2e/conftest.py): :func:`start_app` starts a server and
waits for its health check, :func:`serve` starts the app as ``make app`` does, for a fixture; :func:`chromium`
launches Debian's chromium through Playwright (never a downloaded browser).

Waiting: a check waits for the very element it asserts (Playwright's ``expect(locator)``, which retries until its
timeout), never for a sibling and never for a fixed time. :func:`open_page` opens a session whose page counts the
script runs that finished; :func:`rerun` does an action that reruns the script and returns once that rerun has
finished (``[data-test-script-state]`` alone cannot tell: right after a click it still reads ``notRunning`` until the
server answers); :func:`choose` picks a selectbox option with the keyboard; :func:`keyed` finds an element by its
key, not the one a rerun is replacing. Timeouts: :data:`SHOWN` for an element
of a page, :data:`MODEL_RUN` for what a model run in the app produces.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tests.helpers import ROOT

#: Debian's headless shell (package chromium-headless-shell: Chromium's old headless mode, the build Playwright itself
#: drives headless) where installed, else Debian's chromium. The same Blink renders the pages; the full browser's
#: headless mode cost chromium's processes 2.7x the CPU on three inspector, compare and Global tests (48 s against
#: 18 s) and 1.24x on the fit tests (84 s against 68 s), measured on this 2-core machine that the suite keeps busy.
CHROMIUM = next((exe for exe in ("/usr/lib/chromium/chromium-headless-shell", "/usr/bin/chromium")
                 if Path(exe).exists()), "/usr/bin/chromium")
OUT = ROOT / "test-output"  # server logs and screenshots
SHOWN = 120_000  # ms an element may take to show on a loaded 2-core machine (a rerun, a lazy-loaded widget, plotly)
MODEL_RUN = 420_000  # ms for what a model run in the app produces (SmolLM2 or Gemma on the CPU, a one-click demo)

#: Counts, in ``window.__ascRunsDone``, the script runs (and fragment runs) that finished in this page: every change
#: of the app's ``data-test-script-state`` away from ``running``; ``window.__ascRunsStarted`` the other changes
#: (towards a run: ``rerunRequested``, ``running``).
_COUNT_RUNS = """
new MutationObserver(records => {
  for (const r of records) {
    if (r.oldValue === 'running') window.__ascRunsDone = (window.__ascRunsDone || 0) + 1;
    else window.__ascRunsStarted = (window.__ascRunsStarted || 0) + 1;  // a change towards running
  }
}).observe(document, {subtree: true, attributes: true, attributeOldValue: true,
                      attributeFilter: ['data-test-script-state']});
"""
#: Counts, in ``window.__ascMessages``, the messages this page's websockets received from the server (Streamlit's
#: one socket: deltas, script-state changes, pings of its own protocol): for a page that must stay quiet.
COUNT_MESSAGES = """
(() => {
  const Native = window.WebSocket;
  window.__ascMessages = 0;
  window.WebSocket = function (...args) {
    const socket = new Native(...args);
    socket.addEventListener('message', () => { window.__ascMessages += 1; });
    return socket;
  };
  window.WebSocket.prototype = Native.prototype;
  Object.assign(window.WebSocket, {CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3});
})();
"""
#: Ends every CSS animation at once (spinners, the running icon, skeletons' shimmer): in a headless chromium
#: without a GPU each animated page repaints 60 times a second on the CPU while it waits for the server (0.1 of a
#: core per page, more than everything else a waiting page does). Transitions stay, and so does every element and
#: its final style: no check here looks at a motion.
_STILL = """
(() => {
  const add = () => {
    const style = document.createElement('style');
    style.textContent = '*, *::before, *::after { animation-duration: 0s !important; animation-delay: 0s !important;'
      + ' animation-iteration-count: 1 !important; }';
    (document.head || document.documentElement).appendChild(style);
  };
  if (document.documentElement) add(); else document.addEventListener('DOMContentLoaded', add);
})();
"""
#: ms between two checks of a page.wait_for_function condition: Playwright's default polls on every animation frame,
#: which makes a waiting page draw 60 frames a second on the CPU (0.08 of a core) for as long as a model run lasts; the
#: run counters (:data:`_COUNT_RUNS`) count every change, so checking them 10 times a second misses none
POLL_MS = 100
#: ms a click or key may take to start a run in the browser (:func:`started`) before it counts as lost and is retried
STARTS = 20_000
_IDLE = "document.querySelector(\"[data-testid='stApp']\")?.getAttribute('data-test-script-state') === 'notRunning'"


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


def start_app(command: Sequence[str], env: dict, log_name: str, port: int, cwd: Path = ROOT) -> subprocess.Popen:
    """Start ``command`` (a server on ``port``) in ``cwd`` with its output in ``test-output/<log_name>``; return once
    ``/_stcore/health`` answers (the process is killed, and AssertionError raised, if it never does)."""
    OUT.mkdir(exist_ok=True)
    log = open(OUT / log_name, "w")  # noqa: SIM115 (the server writes to it while it lives)
    proc = subprocess.Popen(list(command), cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1)
            return proc
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise AssertionError(f"the server did not start: see {OUT / log_name}")


def printed_url(log: Path, timeout: float = 120.0) -> str:
    """The address ``make app``'s launcher (or ``asc-studio``) prints once the server answers, read from its ``log``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(r"AsC Studio \(local mode\): (http://\S+)", log.read_text())
        if found:
            return found.group(1)
        time.sleep(0.3)
    raise AssertionError(f"no address printed: see {log}")


def serve(env: dict, log_name: str) -> Iterator[str]:
    """For a fixture: the app started as ``make app`` starts it (``ui.serve``) with ``env`` and no access token
    (tests/attacks/test_gate.py tests it), its output in ``test-output/<log_name>``; yields its address, stops it
    afterwards."""
    port = free_port()
    proc = start_app(launcher_command(port), {**env, "HF_HUB_OFFLINE": "1", "ASC_TOKEN": "off"}, log_name, port)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)


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


def still(page):
    """``page`` (not yet navigated) with every CSS animation ended at once (:data:`_STILL`); returns it."""
    page.add_init_script(_STILL)
    return page


def open_page(browser, url: str, title: str, scripts: tuple[str, ...] = (), **kwargs):
    """A new session on ``url`` (a page of 1500 x 1100 px) once its title ``title`` shows and its first run has
    finished (a fresh session reports idle before its first run starts, so the title comes first). ``scripts`` run
    in the page before the app's own (e.g. :data:`COUNT_MESSAGES`); ``kwargs`` go to ``browser.new_page``. Actions
    on the page wait up to :data:`SHOWN` for their element."""
    from playwright.sync_api import expect

    page = browser.new_page(**{"viewport": {"width": 1500, "height": 1100}, **kwargs})
    page.set_default_timeout(SHOWN)
    page.add_init_script(_COUNT_RUNS)
    for script in scripts:
        page.add_init_script(script)
    still(page).goto(url)
    expect(page.locator("h1", has_text=title)).to_be_visible(timeout=SHOWN)
    idle(page)
    return page


def keyed(page, key: str):
    """The element of Streamlit key ``key`` that the latest script run drew. While a run redraws the page (a rerun
    the script asks for itself, a fragment), the element of the run before can stay beside the new one, marked
    ``data-stale``, and a plain ``.st-key-<key>`` then matches both."""
    return page.locator(f".st-key-{key}:not([data-stale='true'])")


def idle(page, timeout: float = SHOWN) -> None:
    """Until no script run is going on in ``page``: before an action, so it does not land in a page being redrawn.
    Not a proof that an action's rerun is over (see :func:`rerun`)."""
    page.wait_for_function(_IDLE, timeout=timeout, polling=POLL_MS)


def rerun(page, action: Callable[[], object], timeout: float = SHOWN, tries: int = 3) -> None:
    """Do ``action`` (a click or a key that reruns the script, or a fragment of it) and return once that run has
    finished: one more finished run than before, and none going on. A page from :func:`open_page` only.

    Acts only once no run goes on: a click on an element that a run is about to redraw can be lost. An action that
    starts no run within :data:`STARTS` was lost (the run starts in the browser, before any server work: see
    :func:`started`) and is done again, up to ``tries`` times: the study's "Submit and continue" once started
    nothing in a clean clone's full suite, and the test waited 420 s for its run."""
    for attempt in range(tries):
        idle(page, timeout)
        counts = _counts(page)
        action()
        if started(page, counts):
            break
        retried(f"rerun: the action started no run (try {attempt + 1} of {tries})")
        if attempt == tries - 1:
            raise AssertionError(f"{tries} tries started no run in the page")
    finished(page, counts[1], timeout)


def finished(page, done: int, timeout: float = SHOWN) -> None:
    """Until ``page`` has finished more runs than ``done`` and none goes on."""
    page.wait_for_function(f"n => (window.__ascRunsDone || 0) > n && {_IDLE}", arg=done, timeout=timeout,
                           polling=POLL_MS)


def _counts(page) -> list[int]:
    """The page's run counters (:data:`_COUNT_RUNS`): runs started, runs done."""
    return page.evaluate("[window.__ascRunsStarted || 0, window.__ascRunsDone || 0]")


def started(page, counts: list[int], within: float = STARTS) -> bool:
    """Whether a run has started (or started and ended) in ``page`` since its counters read ``counts``, waiting up to
    ``within`` ms. A click or key that starts a run changes the page's script state at once, in the browser: no
    server work comes before it, so a short wait tells a lost click from a slow run."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function("([s, d]) => (window.__ascRunsStarted || 0) > s || (window.__ascRunsDone || 0) > d",
                               arg=counts, timeout=within, polling=POLL_MS)
    except PlaywrightTimeout:
        return False
    return True


def retried(what: str) -> None:
    """Note in ``test-output/retries.log`` that a helper had to try an action again (test, time, what): the retries
    cost little, and the log says which clicks a loaded machine loses."""
    import os

    OUT.mkdir(exist_ok=True)
    test = os.environ.get("PYTEST_CURRENT_TEST", "?")
    with (OUT / "retries.log").open("a") as log:
        log.write(f"{time.strftime('%H:%M:%S')} {test}: {what}\n")


def click_point(page, point, timeout: float = SHOWN, tries: int = 3) -> None:
    """Click a plotly chart's ``point`` (a locator) and wait for the run the selection starts, as :func:`rerun`.

    A click that lands while plotly is still wiring a freshly drawn chart (a loaded machine) selects nothing and
    starts no run, and waiting for its run would wait forever: when no run has started ``timeout / tries`` after a
    click, the point is clicked again (safe: nothing was selected). Once a run has started, it is waited for."""
    counts = _counts(page)
    for attempt in range(tries):
        point.click(force=True)
        if started(page, counts, timeout / tries):
            break
        retried(f"click_point: click {attempt + 1} of {tries} started no run")  # the click selected nothing
        if attempt == tries - 1:
            raise AssertionError(f"{tries} clicks on a chart's point started no run")
    finished(page, counts[1], timeout)


def click_until(page, target, shown, timeout: float = SHOWN, tries: int = 3) -> None:
    """Click ``target`` (a button whose action is idempotent) until ``shown`` (a locator assertion on what the click
    changes, e.g. ``lambda t: expect(code).to_have_value(v, timeout=t)``) holds, then wait until no run goes on.

    A click that lands while Streamlit redraws the page can start no run (seen once in a clean clone: the inspector's
    "Keep the first 2 lines" button, no rerun within 120 s while the other worker ran the Global demo): a click
    that starts no run within :data:`STARTS` is made again (:func:`started`); one that started a run has
    ``timeout`` for ``shown``, and a click whose run ended without it is made again too, up to ``tries`` clicks."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(tries):
        idle(page, timeout)
        counts = _counts(page)
        target.click()
        try:
            if not started(page, counts):
                raise AssertionError("no run started")
            shown(timeout)
            break
        except (AssertionError, PlaywrightTimeout) as failed:
            retried(f"click_until: click {attempt + 1} of {tries}: {str(failed).splitlines()[0][:120]}")
            if attempt == tries - 1:
                raise
    idle(page, timeout)


def choose(page, key: str, typed: str, option: re.Pattern | str, timeout: float = SHOWN) -> None:
    """Pick an option of the selectbox with key ``key`` by keyboard: type ``typed`` into it (its list opens, filtered
    and sorted by match), wait until the list's first option reads ``option`` (a regex searched in its text, or the
    whole text), press Enter (which takes that option) and wait for the rerun; then the box shows the option.

    Not a click on the option: the list floats over the page, re-positions and is virtualized, so a click can wait
    for an option that is never both visible and still; the keyboard takes the option the filter put first. An Enter
    that starts no run and leaves the box as it was (seen twice in clean clones' full suites, 240 s without a run) is
    retried, as :func:`click_until` retries a click."""
    from playwright.sync_api import expect

    pattern = option if isinstance(option, re.Pattern) else re.compile(f"^{re.escape(option)}$")
    idle(page, timeout)
    box = page.locator(f".st-key-{key} input[role='combobox']")
    if pattern.search(box.input_value()):
        return  # already chosen: choosing it again would start no rerun

    first = page.get_by_role("listbox").get_by_role("option").first
    for choice in range(3):  # an Enter that lands while the page is redrawn takes nothing: choose again
        for attempt in range(3):  # a click that lands while the box is redrawn opens no list: open it again
            box.click()
            box.fill(typed)
            try:  # the list is the browser's: it opens and filters without the server
                expect(first).to_have_text(pattern, timeout=min(timeout / 3, STARTS))
                break
            except AssertionError:
                retried(f"choose {key}: the list did not show {pattern.pattern!r} (try {attempt + 1} of 3)")
                if attempt == 2:
                    raise
                box.press("Escape")
                idle(page, timeout)
        counts = _counts(page)
        box.press("Enter")
        if started(page, counts):
            finished(page, counts[1], timeout)
            break
        if pattern.search(box.input_value()):  # taken, and its run not seen starting: wait for it
            idle(page, timeout)
            break
        retried(f"choose {key}: Enter started no run (try {choice + 1} of 3)")
        if choice == 2:
            raise AssertionError(f"choosing {pattern.pattern!r} in {key} started no run in three tries")
        box.press("Escape")
        idle(page, timeout)
    expect(box).to_have_value(pattern, timeout=timeout)
