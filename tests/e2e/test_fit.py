"""Every page in Chromium at 1400 x 1000 px: no figure is wider than its panel.

A figure is a plotly chart (the AST trees are plotly SVG) or a dataframe. Each one shown is measured where the
browser laid it out: its drawing (the chart's SVG, the table's grid) must lie inside its panel (the column, tab or
main column holding it, padding excluded), and a table's grid must not scroll sideways (a column cut on the right).
The pages run on the small results of tests/e2e/conftest.py's ``e2e_runs`` (HumanEval runs of SmolLM2 and the tiny
random model, attention, layer and glueCode runs of the tiny model, BLANCA with MiniLM), on the server
test_browser.py uses too, and on the embedded SmolLM2 where a page explains code itself (the inspector, Compare
models, a glueCode item).

"Why this token?" is measured after a run too (``test_why_this_token_fits_its_panels_after_a_run``: statements,
categories, the methods side by side, the nested nodes), with its text a panel could cut (the Steps checkbox's
label, the tree legend's minus sign); before it, integrated gradients at 256 points show their progress and are
cancelled (issue 48: once a test of its own, which explained the snippet again on its own page).

The demo on a fresh install (its button states its time, it runs to Table I) is
``tests/e2e/test_browser.py::test_global_demo_on_a_fresh_install_in_chromium``.
Marked ``browser`` (tests/e2e) and ``real``; skipped where chromium is missing.
"""

from __future__ import annotations

import re
import time

import pytest

from asc.why import DEFAULT_STEPS
from tests.browser import MODEL_RUN, OUT, POLL_MS, choose, click_until, has_chromium, idle, keyed, open_page, rerun
from ui.charts import WINDOW_PX

pytestmark = [pytest.mark.real, pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not has_chromium(), reason="Debian chromium not installed (make test does)")]

WAIT_MS = 240_000  # a loaded 2-core machine: SmolLM2 explains, completes and branches in the page's own rerun

# every shown chart and table: its drawing's box, its panel's inner box, and whether its grid scrolls sideways
MEASURE = """() => {
  const keyOf = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const key = Array.from(e.classList || []).find((c) => c.startsWith('st-key-'));
      if (key) return key.slice(7);
    }
    return '?';
  };
  const out = [];
  for (const el of document.querySelectorAll("[data-testid='stPlotlyChart'], [data-testid='stDataFrame']")) {
    if (el.getClientRects().length === 0) continue;  // in a tab or expander not shown
    const chart = el.dataset.testid === 'stPlotlyChart';
    const drawing = chart ? el.querySelector('.main-svg') : el;
    if (!drawing) { out.push({key: keyOf(el), kind: 'chart', missing: true}); continue; }
    const panel = el.parentElement.closest(
      "[data-testid='stColumn'], [data-testid='stTabPanel'], [data-testid='stMainBlockContainer']");
    const p = panel.getBoundingClientRect(), s = getComputedStyle(panel), d = drawing.getBoundingClientRect();
    const grid = chart ? null : el.querySelector('.dvn-scroller');
    out.push({key: keyOf(el), kind: chart ? 'chart' : 'table', missing: false,
              left: d.left, right: d.right, width: d.width,
              panel_left: p.left + parseFloat(s.paddingLeft), panel_right: p.right - parseFloat(s.paddingRight),
              scroll: grid ? grid.scrollWidth - grid.clientWidth : 0});
  }
  return out;
}"""


# a chart has drawn, or is no longer shown (removed by a rerun, or in a tab or an expander not shown)
DRAWN = """(el) => !el.isConnected || el.getClientRects().length === 0
  || Array.from(el.querySelectorAll('.main-svg')).some((svg) => svg.getClientRects().length > 0)"""


def _open(browser, url: str, title: str):
    """A new session on ``url`` at the app's window size, once its title shows and its first run has finished."""
    return open_page(browser, url, title, viewport={"width": WINDOW_PX[0], "height": WINDOW_PX[1]})


def _figures_fit(page, name: str, at_least: int) -> list[dict]:
    """Wait until at least ``at_least`` figures are shown and every chart has drawn, then measure them; assert that
    each lies inside its panel and no table scrolls sideways. Returns the measures."""
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import expect

    figures = page.locator("[data-testid='stPlotlyChart'], [data-testid='stDataFrame']")
    expect(figures.nth(at_least - 1)).to_be_attached(timeout=WAIT_MS)
    deadline = time.monotonic() + WAIT_MS / 1000
    while True:
        idle(page, WAIT_MS)
        for chart in page.locator("[data-testid='stPlotlyChart']").element_handles():  # charts load lazily: show
            # each one, then wait for its drawing; a chart a rerun hid or removed meanwhile is no longer waited on (a
            # wait on the page's n-th chart could wait on another one, hidden, for the whole time)
            try:
                if chart.is_visible():
                    chart.scroll_into_view_if_needed(timeout=10_000)
                page.wait_for_function(DRAWN, arg=chart, timeout=120_000, polling=POLL_MS)
            except PlaywrightError:
                pass  # measured below: a chart that never draws is reported as missing once the time is up
        measured = page.evaluate(MEASURE)
        # a chart a later run added or redrew (the causal page draws its graph when its estimates come) has not drawn
        # yet: wait for its drawing too; a chart that never draws still fails below, once the time is up
        if not any(m["missing"] for m in measured) or time.monotonic() > deadline:
            break
    page.screenshot(path=str(OUT / f"fit-{name}.png"), full_page=True)
    assert len(measured) >= at_least, measured
    wide = [m for m in measured if m["missing"] or m["left"] < m["panel_left"] - 1 or m["right"] > m["panel_right"] + 1
            or m["scroll"] > 1]
    assert not wide, f"{name}: figures wider than their panel: {wide}"
    assert page.locator("[data-testid='stException']").count() == 0
    return measured


def test_inspector_figures_fit_their_panels(app_server, browser):
    """The default example explained: trees, categories, least confident nodes, a node's tokens; then a prompt
    completed and branched at the default fork point: the branch tree and the two trees compared."""
    from playwright.sync_api import expect

    page = _open(browser, app_server, "Completion inspector")
    rerun(page, lambda: page.get_by_role("button", name="Explain").click(), WAIT_MS)
    expect(page.locator(".st-key-tree_partial .main-svg").first).to_be_visible(timeout=WAIT_MS)
    choose(page, "node_pick", "4: param", re.compile(r"^4: parameters"), WAIT_MS)  # a node picked from the list
    tables = page.locator("[data-testid='stDataFrame']")  # (st.dataframe's key names no element)
    expect(tables.nth(1)).to_be_visible(timeout=WAIT_MS)  # after the least confident nodes: the node's tokens, top-k
    _figures_fit(page, "inspector", 4)  # categories, least confident, partial tree, the node's tokens
    page.get_by_role("tab", name="Complete AST (all nodes)").click()
    expect(page.locator(".st-key-tree_complete .main-svg").first).to_be_visible(timeout=WAIT_MS)
    _figures_fit(page, "inspector-complete", 4)

    code = page.locator(".st-key-code textarea")
    click_until(page, page.get_by_role("button", name="Keep the first 2 lines (a prompt for Complete)"),
                lambda t: expect(code).to_have_value(re.compile(r"^(?:[^\n]*\n){2}$"), timeout=t))  # two lines
    rerun(page, lambda: page.get_by_role("button", name="Complete", exact=True).click(), WAIT_MS)
    expect(page.locator(".st-key-br_go")).to_be_visible(timeout=WAIT_MS)
    branch = page.locator(".st-key-br_go").get_by_role("button", name="Branch")
    rerun(page, lambda: branch.click(), WAIT_MS)  # the default fork point
    expect(keyed(page, "br_cmp_tree_1").locator(".main-svg").first).to_be_visible(timeout=WAIT_MS)
    keys = {m["key"] for m in _figures_fit(page, "inspector-branches", 6)}
    assert {"br_tree_chart", "br_cmp_tree_0", "br_cmp_tree_1"} <= keys
    page.close()


FRENCH = ('def moyenne_pondérée(valeurs, poids):\n    """Renvoie la moyenne pondérée des valeurs."""\n'
          '    total = sum(poids)\n    return sum(v * p for v, p in zip(valeurs, poids)) / total\n')

# the "Why this token?" view's text that a panel could cut: the Steps checkbox's label (cut to "Until ..." in a
# column too narrow for it) and the partial tree's colour legend (its left tick label, a negative number, began
# left of the figure and lost its minus sign)
WHY_TEXT = """() => {
  const label = Array.from(document.querySelectorAll('.st-key-why_auto p')).find((p) => p.textContent.includes('Until'));
  const svg = document.querySelector('.st-key-why_tree_partial .main-svg');
  const ticks = Array.from(document.querySelectorAll('.st-key-why_tree_partial g.colorbar text'))
    .filter((t) => /^[\u2212-]?[0-9.]+$/.test(t.textContent.trim()))
    .map((t) => ({text: t.textContent.trim(), left: t.getBoundingClientRect().left}))
    .sort((a, b) => a.left - b.left);
  return {label: label ? {text: label.textContent, scroll: label.scrollWidth, client: label.clientWidth} : null,
          svg_left: svg ? svg.getBoundingClientRect().left : null, ticks};
}"""


def _progress_and_cancel(page) -> None:
    """Issue 48, 2: integrated gradients at 256 points show a bar with the stage, the points done of 256, the
    seconds spent and the seconds left; Cancel stops them, says so, and the request does not start again by itself
    ("Until 1%" ran 352 s behind a bare spinner in the walkthrough)."""
    from playwright.sync_api import expect

    rerun(page, lambda: page.locator(".st-key-why_method").get_by_text("integrated gradients").click(), WAIT_MS)
    steps = page.locator(".st-key-why_steps input")
    rerun(page, lambda: (steps.fill("256"), steps.press("Enter")), WAIT_MS)
    page.get_by_role("button", name="Explain this prediction").click()
    bar = page.locator("[data-testid='stProgress']", has_text="integrated gradients, 256 path points")
    expect(bar).to_contain_text(re.compile(r"256 path points: \d+ of 256 · \d+ s · about \d+ s left"), timeout=WAIT_MS)
    page.screenshot(path=str(OUT / "progress-ig.png"))
    keyed(page, "why_cancel").locator("button").first.click()  # (the key names the element and its wrapper)
    stopped = page.get_by_text(re.compile(r"^Stopped at \d+ of 256 \(integrated gradients, 256 path points\)\. "
                                          r"Press the button again to start it anew\.$"))
    expect(stopped).to_be_visible(timeout=WAIT_MS)
    done = int(re.search(r"at (\d+) of", stopped.inner_text()).group(1))
    assert done < 256, "Cancel stopped the work before its end (in a fragment a click waits for the run to end)"
    expect(bar).to_have_count(0)
    expect(page.get_by_text("Pick a target and a method, then press")).to_have_count(0)  # this run says it stopped
    rerun(page, lambda: (steps.fill(str(DEFAULT_STEPS)), steps.press("Enter")), WAIT_MS)  # (the methods compared
    # later take their points from here)


def test_why_this_token_fits_its_panels_after_a_run(app_server, browser):
    """Issue 44 and 48, on the walkthrough's snippet (French identifiers), target ` total` on its last line:
    integrated gradients at 256 points started and cancelled (:func:`_progress_and_cancel`), then explained by
    occlusion, then the three methods compared: every chart and table of "Why this token?" lies in its
    panel (the statements, the categories, the methods side by side, their correlations; then the nested nodes), the
    sentence names `total = sum(poids)`, the Steps checkbox's label is whole and the tree legend keeps its minus."""
    from playwright.sync_api import expect

    page = _open(browser, app_server, "Completion inspector")
    code = page.locator(".st-key-code textarea")
    expect(code).to_have_value(re.compile(r"return count"), timeout=WAIT_MS)  # the default example
    code.fill(FRENCH)
    sequence = page.locator("pre.asc-seq").first
    # the click commits the text too; a fresh server loads SmolLM2 first: each try waits WAIT_MS for the result
    click_until(page, page.get_by_role("button", name="Explain", exact=True),
                lambda t: expect(sequence).to_contain_text("moyenne_pondérée", timeout=t), 2 * WAIT_MS, tries=2)
    choose(page, "why_token", "65: ", re.compile(r"^65: ' total'"), WAIT_MS)
    _progress_and_cancel(page)
    rerun(page, lambda: page.locator(".st-key-why_method").get_by_text("occlusion (syntax-aware)").click(), WAIT_MS)
    expect(page.get_by_text(re.compile(r"^Stopped"))).to_have_count(0)  # the next run: no request kept
    expect(page.get_by_text(re.compile(r"^Pick a target and a method, then press"))).to_be_visible(timeout=WAIT_MS)
    rerun(page, lambda: page.get_by_role("button", name="Explain this prediction").click(), WAIT_MS)
    said = page.locator("[data-testid='stMarkdownContainer']", has_text="Which code mattered")
    expect(said).to_contain_text(re.compile(r"relied most on line 3 total = sum\(poids\) \(\+"), timeout=WAIT_MS)
    expect(page.locator(".st-key-why_tree_partial .main-svg").first).to_be_visible(timeout=WAIT_MS)
    expect(page.locator(".st-key-why_tree_partial g.colorbar text").first).to_be_attached(timeout=WAIT_MS)
    text = page.evaluate(WHY_TEXT)
    assert text["label"] and text["label"]["text"] == "Until 1%", text
    assert text["label"]["scroll"] <= text["label"]["client"], text  # the label is whole, not "Until ..."
    assert text["ticks"] and text["ticks"][0]["text"].startswith("\u2212"), text  # the legend's left end: negative
    assert text["ticks"][0]["left"] >= text["svg_left"], text  # ... and its minus sign inside the figure

    expect(page.locator("h5#method-notes")).to_be_attached()  # the notes' anchor, linked from under the target line
    expect(page.locator("[data-testid='stCaptionContainer'] a[href='#method-notes']").first).to_be_visible()
    controls = page.locator(".st-key-why_steps").locator("xpath=ancestor::*[@data-testid='stHorizontalBlock'][1]")
    controls.screenshot(path=str(OUT / "fit-inspector-why-controls.png"))
    page.locator(".st-key-why_tree_partial").screenshot(path=str(OUT / "fit-inspector-why-tree.png"))
    rerun(page, lambda: page.get_by_role("button", name="Compare the three methods").click(), WAIT_MS)
    expect(page.get_by_text(re.compile(r"^Each column ranks the statements"))).to_be_visible(timeout=WAIT_MS)
    page.get_by_text("Where the methods agree").scroll_into_view_if_needed()
    page.screenshot(path=str(OUT / "fit-inspector-why-agreement.png"))
    _figures_fit(page, "inspector-why", 8)  # the inspector's 4, the partial tree, statements, categories, 2 tables
    page.get_by_text("Which code mattered").scroll_into_view_if_needed()
    page.screenshot(path=str(OUT / "fit-inspector-why-statements.png"))
    rerun(page, lambda: page.locator(".st-key-why_view").get_by_text("nested nodes").click(), WAIT_MS)
    expect(page.get_by_text("Which code mattered")).to_be_visible(timeout=WAIT_MS)
    _figures_fit(page, "inspector-why-nested", 8)
    page.close()


def test_patching_fits_its_panels_after_a_run(app_server, browser):
    """Issue 44: "What changes it?" after a run on SmolLM2 (the default example, its ``return``, the first offered
    corruption): the heatmap and the per-category table lie in their panels, and the heatmap's colour bar says what a
    negative share means."""
    from playwright.sync_api import expect

    page = _open(browser, app_server, "Completion inspector")
    code = page.locator(".st-key-code textarea")
    expect(code).to_have_value(re.compile(r"return count"), timeout=WAIT_MS)  # the default example
    sequence = page.locator("pre.asc-seq").first
    click_until(page, page.get_by_role("button", name="Explain", exact=True),
                lambda t: expect(sequence).to_contain_text("count", timeout=t), 2 * WAIT_MS, tries=2)
    # the explanation's run over (the default example's sequence may show before it): its patch section drawn
    expect(keyed(page, "patch_token")).to_be_visible(timeout=WAIT_MS)
    choose(page, "patch_token", "return", re.compile(r"^\d+: ' return'$"), MODEL_RUN)  # corruptions come before it
    rerun(page, lambda: page.get_by_role("button", name="Corrupt and patch").click(), MODEL_RUN)
    heat = page.locator(".st-key-patch_heatmap .main-svg").first
    expect(heat).to_be_visible(timeout=WAIT_MS)
    expect(page.locator(".st-key-patch_heatmap g.colorbar")).to_contain_text(re.compile(r"below 0: patching\s*made it worse"))
    heat.scroll_into_view_if_needed()
    page.screenshot(path=str(OUT / "fit-inspector-patching.png"))
    _figures_fit(page, "inspector-patching", 5)  # shown ones: the inspector's, the heatmap, the per-category table
    page.close()


def test_compare_figures_fit_their_panels(app_server, browser):
    from playwright.sync_api import expect

    page = _open(browser, app_server + "/compare-models", "Compare models on one snippet")
    rerun(page, lambda: page.get_by_role("button", name="Compare").click(), WAIT_MS)
    expect(page.locator(".st-key-cmptree_diff .main-svg").first).to_be_visible(timeout=WAIT_MS)
    _figures_fit(page, "compare", 4)  # a tree per model, the difference tree, the nodes they disagree on
    page.close()


TABLE = "[data-testid='stDataFrame']"  # st.dataframe's key names no element: tables are found by their order
CHART = "[data-testid='stPlotlyChart'] .main-svg"


@pytest.mark.parametrize(("path", "title", "shown", "nth", "at_least"), [
    ("global-asc-eval", "Global AsC-Eval", TABLE, 0, 5),  # Table I
    ("causal-effects", "Causal effects", TABLE, 1, 2),  # Table II: correlations, then effects and verdicts
    ("layer-heatmaps", "Layer heatmaps", CHART, 0, 1),
    ("attention-maps", "Attention maps", ".st-key-at_map .main-svg", 0, 2),
    ("benchmark-tasks", "Benchmark tasks (glueCode)", TABLE, 0, 1),  # Table 2
    ("text-about-code", "Text about code (BLANCA)", CHART, 0, 2),
])
def test_page_figures_fit_their_panels(app_server, browser, path, title, shown, nth, at_least):
    from playwright.sync_api import expect

    page = _open(browser, f"{app_server}/{path}", title)
    expect(page.locator(shown).nth(nth)).to_be_visible(timeout=WAIT_MS)
    _figures_fit(page, path, at_least)
    page.close()


def test_syntax_features_heatmap_and_dashboard_fit_their_panels(app_server, browser):
    """The Syntax features page on the first SAE folder (SmolLM2's): the category x latent heatmap drawn, the dashboard's contexts with
    their node highlighted, its histogram and tables inside their panels."""
    from playwright.sync_api import expect

    page = _open(browser, f"{app_server}/syntax-features", "Syntax features")
    expect(page.locator(".st-key-sae_heatmap .main-svg").first).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("table.sae-contexts mark").first).to_be_visible(timeout=WAIT_MS)
    expect(page.locator(".st-key-sae_hist .main-svg").first).to_be_visible(timeout=WAIT_MS)
    _figures_fit(page, "syntax-features", 3)  # the heatmap, the histogram, the node types (and the ranking)
    page.close()


def test_gluecode_item_tree_fits_its_panel(app_server, browser):
    from playwright.sync_api import expect

    page = _open(browser, app_server + "/benchmark-tasks", "Benchmark tasks (glueCode)")
    page.get_by_role("tab", name="Items").click()
    expect(page.locator(".st-key-gc_tree .main-svg").first).to_be_visible(timeout=WAIT_MS)
    _figures_fit(page, "benchmark-tasks-item", 2)
    page.close()
