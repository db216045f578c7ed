"""End-to-end: the real app in Debian's chromium, driven by Playwright, on the SmolLM2 default.

Every check waits for the element it asserts (``expect``, tests/browser.py's timeouts for a loaded 2-core machine);
actions that rerun the script go through :func:`tests.browser.rerun`, selectboxes through :func:`tests.browser.choose`.

On the app server of tests/e2e/conftest.py (shared with test_fit.py; its runs folder holds small runs): opens the
inspector, explains the example, clicks a node in the partial AST, downloads the tokens CSV, turns "Per layer" on
and moves the layer slider (heatmap, a node's curve); completes a prompt and branches it at a fork point by choosing
an alternative (the branch tree, the two trees side by side); opens Compare with the two embedded models (SmolLM2,
Gemma), the Global page on a small SmolLM2 run, the glueCode page on a small run (its table, context plot, an item
explained by SmolLM2 with its answer outlined) and the BLANCA page on a small MiniLM run (its table and figures, an
R question picked). On a fresh runs folder, opens /inspector directly and runs the Global page's one-click demo
until its figures appear; in study mode, a participant's answers reach the researcher's CSV. Saves screenshots
under test-output/. Marked ``browser`` (and ``real``: SmolLM2 and Gemma load); deselect with ``-m "not browser"``.
Skipped (with the reason) where chromium is missing; `make test` installs it.
"""

import csv
import io
import os
import re
import time
from pathlib import Path

import pytest

from asc.jobs import JobKind
from tests.browser import (
    MODEL_RUN,
    OUT,
    POLL_MS,
    SHOWN,
    choose,
    click_point,
    click_until,
    has_chromium,
    idle,
    keyed,
    open_page,
    rerun,
    serve,
)
from ui import jobs

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = [pytest.mark.real, pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not has_chromium(), reason="Debian chromium not installed (make test does)")]


@pytest.fixture(scope="module")
def fresh_server(tmp_path_factory):
    """The app as on a fresh install: an empty runs folder, the embedded default model (SmolLM2-135M)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ASC_RUNS_DIR": str(tmp_path_factory.mktemp("fresh-runs"))}
    env.pop("ASC_MODEL", None)
    yield from serve(env, "streamlit-fresh.log")


@pytest.fixture(scope="module")
def study_server(tmp_path_factory):
    """The app in study mode on a two-sample study prepared with SmolLM2, a fresh SQLite file and a password."""
    from asc.models import load_model
    from asc.study.definition import load_study
    from asc.study.frozen import frozen_path, prepare_study, save_frozen

    root = tmp_path_factory.mktemp("study")
    study = root / "study.yaml"
    study.write_text(STUDY)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ASC_STUDY_MODE": "1", "ASC_STUDY": str(study),
           "ASC_STUDY_DIR": str(root / "data"), "ASC_STUDY_PASSWORD": "e2e-secret"}
    definition = load_study(study)
    target = frozen_path(definition, root / "data")
    target.parent.mkdir(parents=True)
    save_frozen(prepare_study(definition, load_model("smollm2-135m")), target)
    yield from serve(env, "streamlit-study.log")


STUDY = """\
id: e2e-study
title: Rate a visualization
model: smollm2-135m
consent: You agree to rate two completions.
groups:
  - {id: S1, name: Sequence, view: sequence}
background:
  - {id: python, text: "How proficient are you in Python?", choices: [Novice, Intermediate, Expert]}
ratings:
  - {id: useful, text: "The visualization is useful to explain the model's prediction"}
comment: {id: comment, text: "Anything else?"}
samples:
  - {id: count, prompt: "def count_chars(string, character):\\n    count = 0\\n"}
  - {id: pal, prompt: "def is_palindrome(text):\\n", completion: "    return text == text[::-1]\\n"}
"""


def _no_exception(page) -> None:
    expect(page.locator("[data-testid='stException']")).to_have_count(0)


def _at_least(locator, n: int) -> None:
    """Until ``locator`` matches at least ``n`` elements (the n-th is in the page)."""
    expect(locator.nth(n - 1)).to_be_attached(timeout=SHOWN)


def _drawn(chart) -> None:
    """Until the plotly chart ``chart`` (a locator) has drawn its figure."""
    expect(chart.locator(".main-svg").first).to_be_visible(timeout=SHOWN)


def _explain(page) -> None:
    """Press Explain and wait for its result: the summary strip and the sequence view."""
    rerun(page, lambda: page.get_by_role("button", name="Explain").click(), MODEL_RUN)
    expect(page.locator("[data-testid='stMetric']").first).to_be_visible(timeout=SHOWN)
    _at_least(page.locator("pre.asc-seq span[data-token]"), 31)
    _no_exception(page)


def test_inspector_in_chromium(app_server, browser):
    page = open_page(browser, app_server, "Completion inspector", accept_downloads=True)
    _explain(page)

    # click a node of the partial AST: the details panel names it and the sequence view outlines its tokens
    tree = page.locator(".st-key-tree_partial")
    _drawn(tree)
    point = tree.locator(".scatterlayer .trace").nth(1).locator("path.point").nth(2)
    click_point(page, point)
    expect(page.get_by_text(re.compile(r"^Node \d+: "))).to_be_visible(timeout=SHOWN)
    expect(page.locator("pre.asc-seq span[style*='outline:2px']").first).to_be_visible(timeout=SHOWN)
    tree.screenshot(path=str(OUT / "inspector-tree.png"))
    page.locator("pre.asc-seq").screenshot(path=str(OUT / "inspector-sequence.png"))

    # why this node? the clicked node's attribution: the sequence view and the tree on the diverging scale
    why = page.locator(".st-key-why_what")
    rerun(page, lambda: why.get_by_text("the selected node").click())
    rerun(page, lambda: page.get_by_role("button", name="Explain this prediction").click(), MODEL_RUN)
    expect(page.locator("pre.asc-why span[data-target='1']")).to_have_count(1)
    expect(page.locator("pre.asc-why span[data-attribution]:not([data-attribution=''])").first).to_be_visible(
        timeout=SHOWN)
    _drawn(page.locator(".st-key-why_tree_partial"))
    expect(page.get_by_text("Which code mattered")).to_be_visible(timeout=SHOWN)
    _no_exception(page)
    page.locator(".st-key-why_tree_partial").screenshot(path=str(OUT / "inspector-why-tree.png"))
    until = page.locator(".st-key-why_auto").get_by_text("Until 1%")  # integrated gradients' steps="auto"
    expect(until).to_be_visible(timeout=SHOWN)
    steps_field = page.locator(".st-key-why_steps")
    expect(steps_field).to_be_visible(timeout=SHOWN)
    steps = steps_field.bounding_box()
    assert until.bounding_box()["height"] < 30 and steps and steps["width"] >= 80  # one line; the field readable
    page.locator(".st-key-why_steps").locator("xpath=ancestor::*[@data-testid='stHorizontalBlock'][1]").screenshot(
        path=str(OUT / "inspector-why-controls.png"))

    # download the tokens CSV
    page.get_by_text("Export", exact=True).click()
    button = page.get_by_role("button", name="Tokens CSV")
    expect(button).to_be_visible(timeout=SHOWN)
    with page.expect_download(timeout=SHOWN) as dl:
        button.click()
    rows = list(csv.DictReader(io.StringIO(Path(dl.value.path()).read_text(encoding="utf-8"))))
    assert rows and {"index", "text", "prob", "rank", "entropy"} <= set(rows[0])
    assert rows[0]["text"] == "def" and rows[0]["prob"] == "absent"  # SmolLM2 adds no BOS: no prediction (the word)
    assert rows[0]["rank"] == "absent"  # not a made-up 0
    assert 0.9 < float(next(r for r in rows if r["text"] == " return")["prob"]) <= 1
    page.screenshot(path=str(OUT / "inspector.png"))
    _features_of_the_node(page)  # (last: it leaves for the Syntax features page)
    page.close()


def _features_of_the_node(page) -> None:
    """Issue 47: the Features view of the selected node, with the runs folder's SmolLM2 SAE (the tiny model's is left
    out): its strongest latents with their labels and activations per token, then a latent's button
    opens its dashboard on the Syntax features page."""
    view = page.locator("[data-testid='stExpander']").filter(has_text="Features (SAE latents on the selected node)")
    view.locator("summary").click()
    expect(view.get_by_role("combobox", name="SAE folder")).to_have_value("smollm2", timeout=SHOWN)
    expect(view.get_by_text(re.compile(r"^Layer 9: the node's strongest latents"))).to_be_visible(timeout=MODEL_RUN)
    expect(view.locator("[data-testid='stDataFrame']")).to_be_visible(timeout=SHOWN)
    _no_exception(page)
    view.screenshot(path=str(OUT / "inspector-features.png"))
    button = page.locator("[class*='st-key-features_open_'] button").first
    latent = re.search(r"\d+", button.inner_text()).group()
    button.click()
    expect(page.locator("h1", has_text="Syntax features")).to_be_visible(timeout=SHOWN)
    expect(page.locator("h4", has_text=f"Latent {latent}:")).to_be_visible(timeout=SHOWN)
    expect(page.locator(".st-key-sae_latent_smollm2 input")).to_have_value(latent)
    _no_exception(page)
    page.screenshot(path=str(OUT / "inspector-features-dashboard.png"))


def test_inspector_per_layer_in_chromium(app_server, browser):
    """"Per layer (logit lens)" on SmolLM2: the layer slider defaults to the output (30), moving it to the embeddings
    recolors the views, the category x layer heatmap renders with the shown layer outlined, a node's curve appears."""
    page = open_page(browser, app_server, "Completion inspector")
    _explain(page)
    rerun(page, lambda: page.locator(".st-key-per_layer").get_by_text("Per layer (logit lens)").click(), MODEL_RUN)
    heatmap = page.locator(".st-key-depth_heatmap")
    _drawn(heatmap)
    expect(heatmap.locator("g.hm, g.heatmaplayer image, .heatmaplayer").first).to_be_attached()  # the heatmap trace
    thumb = page.locator(".st-key-depth_layer input[type='range']")  # the slider's (visually hidden) input
    expect(thumb).to_have_value("30")
    expect(thumb).to_have_attribute("max", "30")
    before = page.locator("pre.asc-seq").inner_html()
    thumb.focus()
    rerun(page, lambda: page.keyboard.press("Home"))  # to layer 0: the embeddings
    expect(page.get_by_text(re.compile(r"at layer 0$"))).to_be_visible(timeout=SHOWN)
    expect(thumb).to_have_value("0")
    # the sequence view shows layer 0's probabilities
    page.wait_for_function("html => document.querySelector('pre.asc-seq')?.innerHTML !== html", arg=before,
                           timeout=SHOWN, polling=POLL_MS)
    _no_exception(page)
    heatmap.scroll_into_view_if_needed()
    heatmap.screenshot(path=str(OUT / "inspector-per-layer-heatmap.png"))

    # a node picked from the list: its value across layers as a curve
    choose(page, "node_pick", "4: param", re.compile(r"^4: parameters"))
    curve = page.locator(".st-key-depth_curve")
    _drawn(curve)
    expect(curve.locator(".scatterlayer .trace").first).to_be_attached()
    curve.screenshot(path=str(OUT / "inspector-per-layer-node.png"))
    page.screenshot(path=str(OUT / "inspector-per-layer.png"))
    page.close()


def test_inspector_branches_in_chromium(app_server, browser):
    """Complete a prompt with SmolLM2, choose the model's third alternative where the trunk wrote `for` and branch:
    the branch tree shows the trunk and the branch, the views show the branch, the two trees stand side by side
    with their differences; a click on the trunk's point in the branch tree opens it again."""
    page = open_page(browser, app_server, "Completion inspector")
    code = page.locator(".st-key-code textarea")
    # the example cut to a prompt by the page's own button (typing and Ctrl+Enter lost the keystroke on a loaded
    # machine: no rerun came within 120 s); the editor then holds the prompt the script completes
    expect(code).to_have_value(re.compile(r"return count"), timeout=SHOWN)  # the default example
    prompt = "def count_chars(string, character):\n    count = 0\n"
    click_until(page, page.locator(".st-key-to_prompt").get_by_role("button"),
                lambda t: expect(code).to_have_value(prompt, timeout=t))
    rerun(page, lambda: page.get_by_role("button", name="Complete", exact=True).click(), MODEL_RUN)
    expect(page.locator(".st-key-br_go")).to_be_visible(timeout=SHOWN)
    expect(page.locator("pre.asc-seq span[data-fork]").first).to_be_attached(timeout=SHOWN)  # fork points marked
    # branch where the trunk wrote its loop (the default, the most uncertain fork point, is often whitespace): the
    # token's label reads "<index>: ' for' (p=...)" (its whitespace maybe drawn as a visible symbol)
    choose(page, "br_at", "for'", re.compile(r"^\d+: '.?for' "))
    options = page.locator(".st-key-br_choice label").filter(has_text="p=")  # the five alternatives
    expect(options).to_have_count(5, timeout=SHOWN)
    options.nth(2).click()  # the model's third choice (the second is the default)
    expect(options.nth(2).locator("input")).to_be_checked()
    idle(page)
    rerun(page, lambda: page.locator(".st-key-br_go").get_by_role("button", name="Branch").click(), MODEL_RUN)
    expect(keyed(page, "br_cmp_tree_1")).to_be_visible(timeout=MODEL_RUN)
    _no_exception(page)
    chart = keyed(page, "br_tree_chart")  # (Branch reruns the script itself: the old chart can linger a moment)
    chart.scroll_into_view_if_needed()
    _drawn(chart)
    points = chart.locator(".scatterlayer .trace").nth(1).locator("path.point")
    expect(points).to_have_count(2)  # the trunk and the branch
    expect(page.get_by_text(re.compile(r"^Branch 1: "))).to_have_count(1)  # the new branch is open in the views
    chart.screenshot(path=str(OUT / "inspector-branch-tree.png"))
    for k in (0, 1):
        _drawn(keyed(page, f"br_cmp_tree_{k}"))
    expect(page.get_by_text(re.compile(r"changed\. First divergence: "))).to_have_count(1)  # the trees differ
    expect(keyed(page, "br_diff").locator("[data-testid='stDataFrame']")).to_have_count(1)  # the nodes that differ
    keyed(page, "br_compare").screenshot(path=str(OUT / "inspector-branch-compare.png"))

    click_point(page, points.nth(0))  # open the trunk again from the branch tree
    expect(page.get_by_text(re.compile(r"^Branch 1: "))).to_have_count(0)
    shown = page.locator(".st-key-br_open_pick input[role='combobox']")  # "Showing": the trunk
    expect(shown).to_have_value(re.compile("trunk"))
    assert "branch 1" not in shown.input_value()
    _no_exception(page)
    page.screenshot(path=str(OUT / "inspector-branches.png"), full_page=True)
    page.close()


def test_compare_two_embedded_models_in_chromium(app_server, browser):
    page = open_page(browser, app_server + "/compare-models", "Compare models on one snippet")
    chosen = page.locator(".st-key-cmp_models")  # the two embedded models are preselected
    expect(chosen).to_contain_text("smollm2-135m", timeout=SHOWN)
    expect(chosen).to_contain_text("gemma3-270m")
    rerun(page, lambda: page.get_by_role("button", name="Compare").click(), MODEL_RUN)
    expect(page.get_by_text("Nodes where they disagree most")).to_be_visible(timeout=MODEL_RUN)
    _no_exception(page)
    _at_least(page.locator("[data-testid='stPlotlyChart']"), 3)  # two model trees + the difference tree
    diff = page.locator(".st-key-cmpbox_diff")
    diff.scroll_into_view_if_needed()
    _drawn(diff)
    diff.screenshot(path=str(OUT / "compare-difference.png"))
    page.close()


def test_global_page_in_chromium(app_server, browser):
    page = open_page(browser, app_server + "/global-asc-eval", "Global AsC-Eval")
    expect(page.get_by_text("AsC-Eval per model (Table I)")).to_be_visible(timeout=SHOWN)
    _no_exception(page)
    chosen = page.locator(".st-key-results")  # the runs shown: the newest per model and corpus, preselected
    try:  # widgets are lazy-loaded components: they may still be skeletons right after the run ends
        expect(chosen).to_contain_text("smollm2-135m", timeout=60_000)
    except AssertionError:  # seen rarely on this busy machine: the skeletons never resolve; a reload renders them
        page.reload()
        expect(page.get_by_text("AsC-Eval per model (Table I)")).to_be_visible(timeout=SHOWN)
        expect(chosen).to_contain_text("smollm2-135m", timeout=SHOWN)
    charts = page.locator("[data-testid='stPlotlyChart']")
    _at_least(charts, 3)
    charts.first.scroll_into_view_if_needed()
    _drawn(charts.first)
    charts.first.screenshot(path=str(OUT / "global-bars.png"))
    page.close()


def test_gluecode_page_in_chromium(app_server, browser):
    # the small glueCode run of the server's runs folder (the tiny model on hand-made items, two levels: conftest.py);
    # the item's function is explained by the sidebar's SmolLM2 in the page
    page = open_page(browser, app_server + "/benchmark-tasks", "Benchmark tasks (glueCode)")
    expect(page.get_by_text("Trivial baselines")).to_be_visible(timeout=SHOWN)
    _no_exception(page)
    page.get_by_role("tab", name="By context level").click()
    context = page.locator("[data-testid='stPlotlyChart']").filter(visible=True).first  # the tab's figure
    _drawn(context)
    context.screenshot(path=str(OUT / "gluecode-context.png"))
    # an item: candidates ranked, the function explained by the sidebar's SmolLM2, the answer outlined
    page.get_by_role("tab", name="Items").click()
    tree = page.locator(".st-key-gc_treebox")
    expect(tree.locator(".js-plotly-plot")).to_have_count(1, timeout=MODEL_RUN)
    _no_exception(page)
    _at_least(page.locator("pre.asc-seq span[data-token]"), 11)  # the function, token by token
    expect(page.get_by_text("Outlined: node")).to_have_count(1)  # NPATH's answer: the function_definition node
    tree.scroll_into_view_if_needed()
    page.screenshot(path=str(OUT / "gluecode-item.png"))
    page.close()


def test_blanca_page_in_chromium(app_server, browser):
    # the small real BLANCA run of the server's runs folder (MiniLM, hand-made items of the five tasks: conftest.py)
    from tests.helpers import blanca_items

    page = open_page(browser, app_server + "/text-about-code", "Text about code (BLANCA)")
    expect(page.get_by_text("Every metric with its 95% bootstrap interval")).to_be_visible(timeout=SHOWN)
    _no_exception(page)
    expect(page.locator("[data-testid='stDataFrame']").first).to_be_visible(timeout=SHOWN)  # the paper-style table
    # the summary bars by their own key: in one full-suite run the page's first chart in document order stayed
    # invisible for two minutes (never seen alone); wait for the element asserted, then scroll to it
    bars = page.locator(".st-key-bl_fig_bars [data-testid='stPlotlyChart']")
    expect(bars).to_be_visible(timeout=SHOWN)
    bars.scroll_into_view_if_needed()
    expect(bars.locator(".gtitle")).to_contain_text("BLANCA per task", timeout=SHOWN)
    bars.screenshot(path=str(OUT / "blanca-summary.png"))
    # R: another question of the test split draws its own ranked answers
    page.get_by_role("tab", name="R: ranked answers").click()
    ranked = page.locator(".st-key-bl_fig_ranked")
    tests = [it for it in blanca_items("R") if it.split == "test"]

    # while Streamlit reruns, the old figure can linger beside the new one: wait for the title we want, not for one
    expect(ranked.locator(".gtitle").filter(has_text=f"question {tests[0].id} ").first).to_be_visible(timeout=SHOWN)
    choose(page, "bl_r_question", tests[1].question, re.compile(re.escape(tests[1].question)))
    expect(ranked.locator(".gtitle").filter(has_text=f"question {tests[1].id} ").first).to_be_visible(timeout=SHOWN)
    expect(page.get_by_text(tests[1].question, exact=True).first).to_be_visible()  # the question under the figure
    _no_exception(page)
    page.screenshot(path=str(OUT / "blanca-ranked.png"))
    page.close()


def test_inspector_address_opens_the_inspector_in_chromium(fresh_server, browser):
    # the root opens the inspector at its own address. A server started as make app starts it (ui/serve.py) has no
    # legacy pages/-folder routing, so not even its very first session is answered "Page not found"
    page = open_page(browser, fresh_server, "Completion inspector")
    page.wait_for_url("**/inspector", timeout=SHOWN)
    expect(page.get_by_text("Page not found")).to_have_count(0)
    page.close()
    page = open_page(browser, fresh_server + "/inspector", "Completion inspector")
    expect(page.get_by_text("Page not found")).to_have_count(0)
    assert page.url.rstrip("/").endswith("/inspector")
    page.close()


@pytest.mark.timeout(900)  # the demo is a real SmolLM2 run: minutes on a loaded machine
def test_global_demo_on_a_fresh_install_in_chromium(fresh_server, browser):
    page = open_page(browser, fresh_server + "/global-asc-eval", "Global AsC-Eval")  # maybe the server's first session
    expect(page.get_by_text("No results yet")).to_be_visible(timeout=SHOWN)
    expect(page.get_by_text("Page not found")).to_have_count(0)
    expect(page.locator(".js-plotly-plot")).to_have_count(0)
    started = time.time()
    button = page.get_by_role("button", name=jobs.demo_label(JobKind.EVAL))
    expect(button).to_be_visible(timeout=SHOWN)
    assert re.search(rf"\bup to {jobs.DEMO_MINUTES[JobKind.EVAL]} minutes\b", button.inner_text())  # its promise
    button.click()
    expect(page.locator("[data-testid='stProgress']").first).to_be_visible(timeout=SHOWN)  # the job panel shows it
    # the panel reruns the page when the run ends: the figures come without a click
    expect(page.get_by_text("AsC-Eval per model (Table I)")).to_be_visible(timeout=2 * MODEL_RUN)
    expect(page.locator(".js-plotly-plot").first).to_be_visible(timeout=SHOWN)
    # the time is printed, never asserted: speed is a benchmark's job (under load the same demo took 28 s and 177 s
    # for 8 of its 40 snippets); the timeout above only fails a demo that hangs
    print(f"global demo: figures {time.time() - started:.0f} s after the click "
          f"(the button states {jobs.DEMO_MINUTES[JobKind.EVAL]} min)")
    idle(page)
    _no_exception(page)
    expect(page.get_by_text("No results yet")).to_have_count(0)
    page.screenshot(path=str(OUT / "global-demo.png"))
    page.close()


def test_participant_then_researcher_in_chromium(study_server, browser):
    page = open_page(browser, study_server, "Rate a visualization")
    expect(page.locator("[data-testid='stSidebar']")).to_have_count(0)  # participants get no sidebar or navigation
    rerun(page, lambda: page.get_by_role("button", name="Start the study").click())
    rerun(page, lambda: page.get_by_role("button", name="I agree and want to take part").click())
    page.get_by_text("Expert").click()
    rerun(page, lambda: page.get_by_role("button", name="Continue").click(), MODEL_RUN)
    for n, level in ((1, "Agree"), (2, "Strongly agree")):
        expect(page.get_by_text(f"Sample {n} of 2")).to_be_visible(timeout=MODEL_RUN)  # the model completes it
        _at_least(page.locator("pre.asc-seq span[data-token]"), 6)  # group S1: the token sequence
        idle(page)
        page.get_by_text(level, exact=True).click()
        if n == 2:
            page.get_by_label("Anything else? (optional)").fill("colors help")
        rerun(page, lambda: page.get_by_role("button", name="Submit and continue").click(), MODEL_RUN)
    expect(page.get_by_text("Your answers are saved under the code")).to_be_visible(timeout=SHOWN)
    code = page.url.split("code=")[1][:8]
    page.screenshot(path=str(OUT / "study-participant.png"))
    page.close()

    admin = open_page(browser, study_server + "/study-results", "Study results", accept_downloads=True)
    expect(admin.locator("[data-testid='stDataFrame']")).to_have_count(0)  # nothing without the password
    admin.get_by_label("Researcher password").fill("e2e-secret")
    rerun(admin, lambda: admin.get_by_label("Researcher password").press("Enter"))
    expect(admin.get_by_text("Agreement per group and question (Table III)")).to_be_visible(timeout=SHOWN)
    button = admin.get_by_role("button", name="All responses (CSV)")
    expect(button).to_be_visible(timeout=SHOWN)
    with admin.expect_download(timeout=SHOWN) as dl:
        button.click()
    rows = list(csv.DictReader(io.StringIO(Path(dl.value.path()).read_text(encoding="utf-8"))))
    mine = [r for r in rows if r["code"] == code]
    assert {(r["sample_id"], r["question_id"], r["value"]) for r in mine} == {
        ("absent", "python", "Expert"), ("count", "useful", "4"), ("count", "comment", "absent"), ("pal", "useful", "5"),
        ("pal", "comment", "colors help")}
    admin.screenshot(path=str(OUT / "study-results.png"))
    admin.close()
