"""Long work in the inspector shows its progress and can be cancelled (issue 48, 2).

"Until 1%" ran 352 s behind a bare spinner in the walkthrough. Here integrated gradients at 256 points on SmolLM2 show
a bar with the stage, the points done of 256, the seconds spent and the seconds left; Cancel stops it, says so, and
the request does not start again by itself. Marked ``browser`` and ``real`` (tests/e2e/conftest.py's server, SmolLM2).
"""

from __future__ import annotations

import re

import pytest

from tests.browser import OUT, choose, click_until, has_chromium, keyed, open_page, rerun

pytestmark = [pytest.mark.real, pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not has_chromium(), reason="Debian chromium not installed (make test does)")]

WAIT_MS = 240_000  # a loaded 2-core machine: SmolLM2 explains in the page's own rerun


def test_integrated_gradients_show_progress_and_cancel(app_server, browser):
    from playwright.sync_api import expect

    page = open_page(browser, app_server, "Completion inspector", viewport={"width": 1400, "height": 1000})
    code = page.locator(".st-key-code textarea")
    expect(code).to_have_value(re.compile(r"return count"), timeout=WAIT_MS)  # the default example
    sequence = page.locator("pre.asc-seq").first
    click_until(page, page.get_by_role("button", name="Explain", exact=True),
                lambda t: expect(sequence).to_contain_text("count", timeout=t), 2 * WAIT_MS, tries=2)
    choose(page, "why_token", "return", re.compile(r"^\d+: ' return'"), WAIT_MS)  # a late target: a long prompt
    rerun(page, lambda: page.locator(".st-key-why_method").get_by_text("integrated gradients").click(), WAIT_MS)
    steps = page.locator(".st-key-why_steps input")
    rerun(page, lambda: (steps.fill("256"), steps.press("Enter")), WAIT_MS)
    page.get_by_role("button", name="Explain this prediction").click()
    bar = page.locator("[data-testid='stProgress']", has_text="integrated gradients, 256 path points")
    expect(bar).to_contain_text(re.compile(r"256 path points: \d+ of 256 · \d+ s · about \d+ s left"), timeout=WAIT_MS)
    page.screenshot(path=str(OUT / "progress-ig.png"))
    keyed(page, "why_cancel").locator("button").first.click()  # (the key names the element and its wrapper)
    expect(page.get_by_text("Stopped. Press the button again to start it anew.")).to_be_visible(timeout=WAIT_MS)
    expect(bar).to_have_count(0)
    expect(page.get_by_text("Pick a target and a method, then press")).to_have_count(0)  # this run says it stopped
    rerun(page, lambda: page.locator(".st-key-why_method").get_by_text("gradient x input").click(), WAIT_MS)
    expect(page.get_by_text("Stopped. Press the button again")).to_have_count(0)  # the next run: no request kept
    expect(page.get_by_text(re.compile(r"^Pick a target and a method, then press"))).to_be_visible(timeout=WAIT_MS)
    page.close()
