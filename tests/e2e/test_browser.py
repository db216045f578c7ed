"""End-to-end: the real app in Debian's chromium, driven by Playwright, on the SmolLM2 default.

Opens the inspector, explains the example, clicks a node in the partial AST, downloads the tokens
CSV, turns "Per layer" on and moves the layer slider (heatmap, a node's curve); completes a prompt and branches it
at a fork point by choosing an alternative (the branch tree, the two trees side by side); opens Compare with the two
embedded models (SmolLM2, Gemma) and the Global page on a small SmolLM2 run and the glueCode page on a small SmolLM2 run (its table, context plot, an item outlined) and the BLANCA page
on a small MiniLM run (its table and figures, an R question picked); on a fresh runs folder, opens /inspector directly
and runs the Global page's one-click
demo until its figures appear; saves screenshots under test-output/. Marked ``browser`` (and ``real``: SmolLM2 and Gemma
load); deselect with ``-m "not browser"``. Skipped (with the reason) where chromium is missing;
`make test` installs it.
"""

import csv
import io
import os
import re
import time
from pathlib import Path

import pytest

from tests.browser import OUT, chromium, free_port, has_chromium, launcher_command, start_app, stop

pytestmark = [pytest.mark.real, pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not has_chromium(), reason="Debian chromium not installed (make test does)")]


def _serve(env: dict, log_name: str):
    """Start the app with ``env`` (no access token: tests/attacks/test_gate.py tests it); yields its URL, stops it
    afterwards."""
    port = free_port()
    proc = start_app(launcher_command(port), {**env, "ASC_TOKEN": "off"}, log_name, port)  # as make app starts it
    yield f"http://127.0.0.1:{port}"
    stop(proc)


@pytest.fixture(scope="module")
def server(runs_dir):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ASC_RUNS_DIR": str(runs_dir)}  # small real results (conftest)
    env.pop("ASC_MODEL", None)  # the embedded default: SmolLM2-135M
    yield from _serve(env, "streamlit.log")


@pytest.fixture(scope="module")
def fresh_server(tmp_path_factory):
    """The app as on a fresh install: an empty runs folder, the embedded default model (SmolLM2-135M)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ASC_RUNS_DIR": str(tmp_path_factory.mktemp("fresh-runs"))}
    env.pop("ASC_MODEL", None)
    yield from _serve(env, "streamlit-fresh.log")


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
    yield from _serve(env, "streamlit-study.log")


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


def _idle(page, timeout=180_000):
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']", timeout=timeout)


def _open(browser, url: str, title: str, **kwargs):
    """A new session on ``url``, once its page has rendered (a fresh session reports idle before its first run)."""
    page = browser.new_page(viewport={"width": 1500, "height": 1100}, **kwargs)
    page.goto(url)
    page.wait_for_selector(f"h1:has-text('{title}')", timeout=120_000)
    _idle(page)
    return page


def _charts(page, n: int) -> None:
    """Wait until ``n`` plotly charts are mounted (they load lazily)."""
    page.wait_for_function(f"document.querySelectorAll(\"[data-testid='stPlotlyChart']\").length >= {n}",
                           timeout=60_000)


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


def test_inspector_in_chromium(server, browser):
    page = _open(browser, server, "Completion inspector", accept_downloads=True)
    page.get_by_role("button", name="Explain").click()
    page.wait_for_selector("[data-testid='stMetric']", timeout=180_000)
    _idle(page)
    assert page.locator("pre.asc-seq span[data-token]").count() > 30
    assert page.locator("[data-testid='stException']").count() == 0

    # click a node of the partial AST: the details panel names it and the sequence view outlines its tokens
    tree = page.locator(".st-key-tree_partial")
    tree.scroll_into_view_if_needed()
    point = tree.locator(".scatterlayer .trace").nth(1).locator("path.point").nth(2)
    point.click(force=True)
    page.wait_for_selector("text=/^Node \\d+: /", timeout=60_000)
    _idle(page)
    assert page.locator("pre.asc-seq span[style*='outline:2px']").count() >= 1
    tree.screenshot(path=str(OUT / "inspector-tree.png"))
    page.locator("pre.asc-seq").screenshot(path=str(OUT / "inspector-sequence.png"))

    # download the tokens CSV
    page.get_by_text("Export").click()
    with page.expect_download() as dl:
        page.get_by_role("button", name="Tokens CSV").click()
    rows = list(csv.DictReader(io.StringIO(Path(dl.value.path()).read_text(encoding="utf-8"))))
    assert rows and {"index", "text", "prob", "rank", "entropy"} <= set(rows[0])
    assert rows[0]["text"] == "def" and rows[0]["prob"] == ""  # SmolLM2 adds no BOS: no prediction
    assert 0.9 < float(next(r for r in rows if r["text"] == " return")["prob"]) <= 1
    page.screenshot(path=str(OUT / "inspector.png"))
    page.close()


def test_inspector_per_layer_in_chromium(server, browser):
    """"Per layer (logit lens)" on SmolLM2: the layer slider defaults to the output (30), moving it to the embeddings
    recolors the views, the category x layer heatmap renders with the shown layer outlined, a node's curve appears."""
    page = _open(browser, server, "Completion inspector")
    page.get_by_role("button", name="Explain").click()
    page.wait_for_selector("[data-testid='stMetric']", timeout=180_000)
    _idle(page)
    page.locator(".st-key-per_layer").get_by_text("Per layer (logit lens)").click()
    heatmap = page.locator(".st-key-depth_heatmap")
    heatmap.wait_for(timeout=180_000)
    _idle(page)
    heatmap.locator(".main-svg").first.wait_for(timeout=60_000)
    assert heatmap.locator("g.hm, g.heatmaplayer image, .heatmaplayer").count() >= 1  # the heatmap trace is drawn
    thumb = page.locator(".st-key-depth_layer input[type='range']")  # the slider's (visually hidden) input
    assert thumb.input_value() == "30" and thumb.get_attribute("max") == "30"
    before = page.locator("pre.asc-seq").inner_html()
    thumb.focus()
    page.keyboard.press("Home")  # to layer 0: the embeddings
    page.wait_for_selector("text=/at layer 0$/", timeout=60_000)
    _idle(page)
    assert thumb.input_value() == "0"
    assert page.locator("pre.asc-seq").inner_html() != before  # the sequence view shows layer 0's probabilities
    assert page.locator("[data-testid='stException']").count() == 0
    heatmap.scroll_into_view_if_needed()
    heatmap.screenshot(path=str(OUT / "inspector-per-layer-heatmap.png"))

    # a node picked from the list: its value across layers as a curve
    combo = page.locator(".st-key-node_pick input[role='combobox']")
    combo.click()
    combo.fill("4: param")  # the list opens, filtered
    page.locator("[role='option']", has_text=re.compile(r"^4: parameters")).click()
    curve = page.locator(".st-key-depth_curve")
    curve.wait_for(timeout=60_000)
    _idle(page)
    curve.locator(".main-svg").first.wait_for(timeout=60_000)
    assert curve.locator(".scatterlayer .trace").count() >= 1
    curve.screenshot(path=str(OUT / "inspector-per-layer-node.png"))
    page.screenshot(path=str(OUT / "inspector-per-layer.png"))
    page.close()


def test_inspector_branches_in_chromium(server, browser):
    """Complete a prompt with SmolLM2, choose the model's third alternative where the trunk wrote `for` and branch:
    the branch tree shows the trunk and the branch, the views show the branch, the two trees stand side by side
    with their differences; a click on the trunk's point in the branch tree opens it again."""
    page = _open(browser, server, "Completion inspector")
    code = page.locator(".st-key-code textarea")
    code.fill("def count_chars(string, character):\n    count = 0\n")
    code.press("Control+Enter")
    _idle(page)
    page.get_by_role("button", name="Complete").click()
    page.locator(".st-key-br_go").wait_for(timeout=180_000)
    _idle(page)
    page.locator("pre.asc-seq span[data-fork]").first.wait_for(timeout=60_000)  # fork points marked
    # branch where the trunk wrote its loop (the default, the most uncertain fork point, is often whitespace)
    combo = page.locator(".st-key-br_at input[role='combobox']")
    combo.click()
    combo.fill("for'")  # the list opens, filtered
    page.locator("[role='option']", has_text=re.compile(r"^\d+: ' ?for' ")).first.click()
    _idle(page)
    options = page.locator(".st-key-br_choice label").filter(has_text="p=")  # the five alternatives
    options.nth(4).wait_for(timeout=60_000)
    assert options.count() == 5
    options.nth(2).click()  # the model's third choice
    _idle(page)
    page.locator(".st-key-br_go").get_by_role("button", name="Branch").click()
    compare = page.locator(".st-key-br_cmp_tree_1")
    compare.wait_for(timeout=180_000)
    _idle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    chart = page.locator(".st-key-br_tree_chart")
    chart.scroll_into_view_if_needed()
    chart.locator(".main-svg").first.wait_for(timeout=60_000)
    points = chart.locator(".scatterlayer .trace").nth(1).locator("path.point")
    assert points.count() == 2  # the trunk and the branch
    assert page.get_by_text(re.compile(r"^Branch 1: ")).count() == 1  # the new branch is open in the views
    chart.screenshot(path=str(OUT / "inspector-branch-tree.png"))
    for k in (0, 1):
        page.locator(f".st-key-br_cmp_tree_{k}").locator(".main-svg").first.wait_for(timeout=60_000)
    assert page.get_by_text(re.compile(r"changed\. First divergence: ")).count() == 1  # the trees differ
    assert page.locator(".st-key-br_diff [data-testid='stDataFrame']").count() == 1  # the nodes that differ
    page.locator(".st-key-br_compare").screenshot(path=str(OUT / "inspector-branch-compare.png"))

    points.nth(0).click(force=True)  # open the trunk again from the branch tree
    page.get_by_text(re.compile(r"^Branch 1: ")).wait_for(state="detached", timeout=60_000)
    _idle(page)
    shown = page.locator(".st-key-br_open_pick").evaluate(  # the select's text, or its input's value
        "e => e.innerText + ' ' + Array.from(e.querySelectorAll('input')).map(i => i.value).join(' ')")
    assert "trunk" in shown and "branch 1" not in shown
    assert page.locator("[data-testid='stException']").count() == 0
    page.screenshot(path=str(OUT / "inspector-branches.png"), full_page=True)
    page.close()


def test_compare_two_embedded_models_in_chromium(server, browser):
    page = _open(browser, server + "/compare-models", "Compare models on one snippet")
    from playwright.sync_api import expect

    chosen = page.locator(".st-key-cmp_models")  # the two embedded models are preselected
    expect(chosen).to_contain_text("smollm2-135m", timeout=60_000)
    expect(chosen).to_contain_text("gemma3-270m")
    page.get_by_role("button", name="Compare").click()
    page.wait_for_selector("text=Nodes where they disagree most", timeout=300_000)
    _idle(page, 300_000)
    assert page.locator("[data-testid='stException']").count() == 0
    _charts(page, 3)  # two model trees + the difference tree
    diff = page.locator(".st-key-cmpbox_diff")
    diff.scroll_into_view_if_needed()
    diff.screenshot(path=str(OUT / "compare-difference.png"))
    page.close()


def test_global_page_in_chromium(server, browser):
    page = _open(browser, server + "/global-asc-eval", "Global AsC-Eval")
    page.wait_for_selector("text=AsC-Eval per model (Table I)", timeout=120_000)
    assert page.locator("[data-testid='stException']").count() == 0
    from playwright.sync_api import expect

    chosen = page.locator(".st-key-results")  # the runs shown: the newest per model and corpus, preselected
    try:  # widgets are lazy-loaded components: they may still be skeletons right after the run ends
        expect(chosen).to_contain_text("smollm2-135m", timeout=30_000)
    except AssertionError:  # seen rarely on this busy machine: the skeletons never resolve; a reload renders them
        page.reload()
        page.wait_for_selector("text=AsC-Eval per model (Table I)", timeout=120_000)
        expect(chosen).to_contain_text("smollm2-135m", timeout=60_000)
    _charts(page, 3)
    charts = page.locator("[data-testid='stPlotlyChart']")
    charts.first.scroll_into_view_if_needed()
    charts.first.screenshot(path=str(OUT / "global-bars.png"))
    page.close()


def test_gluecode_page_in_chromium(server, browser, runs_dir):
    # a small real glueCode run (SmolLM2, hand-made items, two levels) where the server's page reads it
    from asc.models import load_model
    from probes.gluecode import runs
    from tests.helpers import gluecode_items

    folder = runs_dir / "gluecode"
    tasks = ["NPATH", "OPS", "NAME", "CALL", "NULL"]
    items = runs.build_or_load(folder, "toy", tasks, 4, 0, lambda task, *_: (gluecode_items(task), {}))
    runs.run_gluecode(load_model("smollm2-135m"), items, folder, task_set="toy-4-seed0", contexts=["function", "file"])
    page = _open(browser, server + "/benchmark-tasks", "Benchmark tasks (glueCode)")
    page.wait_for_selector("text=Trivial baselines", timeout=120_000)
    assert page.locator("[data-testid='stException']").count() == 0
    page.get_by_role("tab", name="By context level").click()
    _charts(page, 1)
    page.locator("[data-testid='stPlotlyChart']").first.screenshot(path=str(OUT / "gluecode-context.png"))
    # an item: candidates ranked, the function explained by the sidebar's SmolLM2, the answer outlined
    page.get_by_role("tab", name="Items").click()
    tree = page.locator(".st-key-gc_treebox")
    tree.wait_for(timeout=180_000)
    _idle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.locator("pre.asc-seq span[data-token]").count() > 10  # the function, token by token
    assert page.get_by_text("Outlined: node").count() == 1  # NPATH's answer: the function_definition node
    tree.scroll_into_view_if_needed()
    assert tree.locator(".js-plotly-plot").count() == 1
    page.screenshot(path=str(OUT / "gluecode-item.png"))
    page.close()


def test_blanca_page_in_chromium(server, browser, runs_dir):
    # a small real BLANCA run (MiniLM, hand-made items of the five tasks) where the server's page reads it
    from playwright.sync_api import expect

    from asc.models import load_model
    from probes.blanca.build import load_task_set
    from probes.blanca.runs import run_blanca
    from tests.helpers import blanca_items, write_blanca_set

    folder = runs_dir / "blanca"
    run_blanca(load_model("minilm-l6"), load_task_set(write_blanca_set(folder)), folder)
    page = _open(browser, server + "/text-about-code", "Text about code (BLANCA)")
    page.wait_for_selector("text=Every metric with its 95% bootstrap interval", timeout=120_000)
    assert page.locator("[data-testid='stException']").count() == 0
    expect(page.locator("[data-testid='stDataFrame']").first).to_be_visible(timeout=120_000)  # the paper-style table
    _charts(page, 1)
    bars = page.locator("[data-testid='stPlotlyChart']").first
    bars.scroll_into_view_if_needed()
    assert "BLANCA per task" in bars.locator(".gtitle").text_content()
    bars.screenshot(path=str(OUT / "blanca-summary.png"))
    # R: another question of the test split draws its own ranked answers
    page.get_by_role("tab", name="R: ranked answers").click()
    ranked = page.locator(".st-key-bl_fig_ranked")
    ranked.wait_for(timeout=60_000)
    tests = [it for it in blanca_items("R") if it.split == "test"]

    # while Streamlit reruns, the old figure can linger beside the new one: wait for the title we want, not for one
    expect(ranked.locator(".gtitle").filter(has_text=f"question {tests[0].id} ").first).to_be_visible(timeout=120_000)
    page.locator(".st-key-bl_r_question").click()
    page.get_by_role("option", name=tests[1].question).click()
    _idle(page)
    expect(ranked.locator(".gtitle").filter(has_text=f"question {tests[1].id} ").first).to_be_visible(timeout=120_000)
    assert page.get_by_text(tests[1].question, exact=True).count() >= 1  # the question's text under the figure
    assert page.locator("[data-testid='stException']").count() == 0
    page.screenshot(path=str(OUT / "blanca-ranked.png"))
    page.close()


def test_inspector_address_opens_the_inspector_in_chromium(fresh_server, browser):
    # the root opens the inspector at its own address. A server started as make app starts it (ui/serve.py) has no
    # legacy pages/-folder routing, so not even its very first session is answered "Page not found"
    from playwright.sync_api import expect

    page = _open(browser, fresh_server, "Completion inspector")
    page.wait_for_url("**/inspector", timeout=60_000)
    expect(page.get_by_text("Page not found")).to_have_count(0)
    page.close()
    page = _open(browser, fresh_server + "/inspector", "Completion inspector")
    expect(page.get_by_text("Page not found")).to_have_count(0)
    assert page.url.rstrip("/").endswith("/inspector")
    page.close()


def test_global_demo_on_a_fresh_install_in_chromium(fresh_server, browser):
    from playwright.sync_api import expect

    page = _open(browser, fresh_server + "/global-asc-eval", "Global AsC-Eval")  # maybe the server's first session
    page.wait_for_selector("text=No results yet", timeout=60_000)
    expect(page.get_by_text("Page not found")).to_have_count(0)
    assert page.locator(".js-plotly-plot").count() == 0
    started = time.time()
    page.get_by_role("button", name=re.compile(r"^Run a small demo")).click()
    page.wait_for_selector("[data-testid='stProgress']", timeout=60_000)  # the job panel shows the run
    # the panel reruns the page when the run ends: the figures come without a click
    page.wait_for_selector(".js-plotly-plot", timeout=300_000)
    print(f"global demo: figures {time.time() - started:.0f} s after the click")
    _idle(page)
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.get_by_text("No results yet").count() == 0
    page.wait_for_selector("text=AsC-Eval per model (Table I)", timeout=60_000)
    page.screenshot(path=str(OUT / "global-demo.png"))
    page.close()


def test_participant_then_researcher_in_chromium(study_server, browser):
    page = _open(browser, study_server, "Rate a visualization")
    assert page.locator("[data-testid='stSidebar']").count() == 0  # participants get no sidebar or navigation
    page.get_by_role("button", name="Start the study").click()
    page.get_by_role("button", name="I agree and want to take part").click()
    page.get_by_text("Expert").click()
    page.get_by_role("button", name="Continue").click()
    for n, level in ((1, "Agree"), (2, "Strongly agree")):
        page.wait_for_selector(f"text=Sample {n} of 2", timeout=60_000)
        _idle(page)
        assert page.locator("pre.asc-seq span[data-token]").count() > 5  # group S1: the token sequence
        page.get_by_text(level, exact=True).click()
        if n == 2:
            page.get_by_label("Anything else? (optional)").fill("colors help")
        page.get_by_role("button", name="Submit and continue").click()
    page.wait_for_selector("text=Your answers are saved under the code", timeout=60_000)
    code = page.url.split("code=")[1][:8]
    page.screenshot(path=str(OUT / "study-participant.png"))
    page.close()

    admin = _open(browser, study_server + "/study-results", "Study results", accept_downloads=True)
    assert admin.locator("[data-testid='stDataFrame']").count() == 0  # nothing without the password
    admin.get_by_label("Researcher password").fill("e2e-secret")
    admin.get_by_label("Researcher password").press("Enter")
    admin.wait_for_selector("text=Agreement per group and question (Table III)", timeout=60_000)
    _idle(admin)
    with admin.expect_download() as dl:
        admin.get_by_role("button", name="All responses (CSV)").click()
    rows = list(csv.DictReader(io.StringIO(Path(dl.value.path()).read_text(encoding="utf-8"))))
    mine = [r for r in rows if r["code"] == code]
    assert {(r["sample_id"], r["question_id"], r["value"]) for r in mine} == {
        ("", "python", "Expert"), ("count", "useful", "4"), ("count", "comment", ""), ("pal", "useful", "5"),
        ("pal", "comment", "colors help")}
    admin.screenshot(path=str(OUT / "study-results.png"))
    admin.close()
