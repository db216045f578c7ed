"""The probe pages' figures as a browser draws them (issues 44 and 48), with screenshots under test-output/.

* Layer heatmaps: beside each accuracy heatmap its references (majority class, control task); Table III on its
  default baseline, MiniLM, and a message in place of the chart when the chosen baseline leaves nothing to draw.
* Attention maps: the gold-edge legend lies off the matrix, and the word labels are at least 10 px and never
  overlap.

A server of its own (its runs folder is made here: probe results of SmolLM2 and MiniLM written as the layer demo
writes them, and the tiny model's attention run), so the shared one of tests/e2e/conftest.py keeps its one-model
layer run. Marked ``browser`` (tests/e2e); skipped where chromium is missing.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from tests.browser import OUT, choose, has_chromium, open_page, serve

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not has_chromium(), reason="Debian chromium not installed")]

WAIT_MS = 240_000  # a loaded 2-core machine: the tiny model computes one snippet's attention in the page's rerun


def _probe_result(folder, model: str, task: str, accuracy, classes: int) -> None:
    from probes.inspect.linear import ProbeResult, save_probes

    acc = np.asarray(accuracy, dtype=float)
    y = np.arange(10 * classes) % classes
    result = ProbeResult(model=model, task=task, task_digest="d", pooling="last", seed=0,
                         labels=tuple(f"c{k}" for k in range(classes)), accuracy=acc, dev_accuracy=acc,
                         control_accuracy=np.full(len(acc), 1 / classes + 0.02), l2=np.full(len(acc), 0.01),
                         majority=1 / classes, y_test=y, predictions=np.tile(y, (len(acc), 1)))
    save_probes(result, None, folder / model / f"{task}-last")


@pytest.fixture(scope="module")
def views_server(tmp_path_factory):
    from probes.codesyntax.attention import run_attention
    from tests.helpers import ATTENTION_CODES
    from tests.support.models import tiny_random_model

    root = tmp_path_factory.mktemp("probe-views")
    layers = root / "layers"
    rng = np.random.default_rng(0)
    for task, classes in (("KTX", 10), ("IDN", 4)):  # SmolLM2 best on both, MiniLM near chance on KTX
        _probe_result(layers, "smollm2-135m", task, np.clip(0.4 + 0.3 * rng.random(31), 0, 1), classes)
        _probe_result(layers, "minilm-l6", task, 1 / classes + 0.1 * rng.random(7), classes)
    run_attention(tiny_random_model(), ATTENTION_CODES * 3, root / "attention", spec="tiny-random", ks=(1, 2))
    env = {**os.environ, "ASC_RUNS_DIR": str(root)}
    env.pop("ASC_MODEL", None)
    yield from serve(env, "probe-views.log")


def test_layer_heatmaps_references_and_table_iii_in_chromium(views_server, browser):
    from playwright.sync_api import expect

    page = open_page(browser, views_server + "/layer-heatmaps", "Layer heatmaps")
    heat = page.locator(".st-key-heat_minilm-l6 .main-svg").first
    expect(heat).to_be_visible(timeout=WAIT_MS)
    for reference in ("majority", "control"):  # the references' column labels, beside the heatmap
        expect(page.locator(".st-key-heat_minilm-l6 .x2tick text", has_text=reference)).to_have_count(1)
    expect(page.get_by_text("test samples per task")).to_be_visible()
    page.locator(".st-key-heat_minilm-l6").scroll_into_view_if_needed()
    page.screenshot(path=str(OUT / "layer-heatmaps-references.png"), full_page=True)

    page.get_by_role("tab", name="Best layer & Table III").click()
    norm = page.locator(".st-key-norm .main-svg").first
    expect(norm).to_be_visible(timeout=WAIT_MS)
    expect(page.locator(".st-key-lp_base input[role='combobox']")).to_have_value("minilm-l6")  # the docs' baseline
    expect(page.locator(".st-key-norm text", has_text=re.compile(r"^100$")).first).to_be_visible()  # SmolLM2's cells
    page.screenshot(path=str(OUT / "layer-heatmaps-table-iii.png"), full_page=True)

    choose(page, "lp_base", "smollm2", "smollm2-135m")  # the best model on every task as its own baseline
    expect(page.get_by_text("Table III is empty with smollm2")).to_be_visible(timeout=WAIT_MS)
    expect(page.locator(".st-key-norm")).to_have_count(0)  # a message, never an empty white box
    page.screenshot(path=str(OUT / "layer-heatmaps-table-iii-empty.png"), full_page=True)
    page.close()


# within the attention map: the legend's box and the plot area's, every tick label's font size and position
MEASURE_MAP = """(root) => {
  const box = (el) => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const ticks = (sel) => Array.from(root.querySelectorAll(sel)).map((t) => ({
    size: parseFloat(getComputedStyle(t).fontSize), box: box(t)}));
  return {legend: box(root.querySelector('.legend')), plot: box(root.querySelector('.nsewdrag')),
          x: ticks('.xtick text'), y: ticks('.ytick text')};
}"""


def _apart(boxes: list[list[float]], lo: int, hi: int) -> bool:
    """Whether no two of ``boxes`` overlap along one axis (``lo``/``hi``: the box's indices of that axis)."""
    spans = sorted((b[lo], b[hi]) for b in boxes)
    return all(a[1] <= b[0] + 0.5 for a, b in zip(spans, spans[1:]))


def test_attention_map_legend_is_off_the_matrix_and_labels_are_readable_in_chromium(views_server, browser):
    from playwright.sync_api import expect

    page = open_page(browser, views_server + "/attention-maps", "Attention maps")
    chart = page.locator(".st-key-at_map .js-plotly-plot").first
    expect(chart.locator(".legend")).to_be_visible(timeout=WAIT_MS)
    got = chart.evaluate(MEASURE_MAP)
    legend, plot = got["legend"], got["plot"]
    assert legend[0] >= plot[2] or legend[2] <= plot[0] or legend[1] >= plot[3] or legend[3] <= plot[1], got
    assert got["x"] and got["y"]
    assert min(t["size"] for t in got["x"] + got["y"]) >= 10, got
    assert _apart([t["box"] for t in got["x"]], 0, 2) and _apart([t["box"] for t in got["y"]], 1, 3), got
    chart.scroll_into_view_if_needed()
    chart.screenshot(path=str(OUT / "attention-map.png"))
    page.close()
