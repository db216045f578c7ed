"""pages/probing.py, Layer heatmaps: how to get results, a probe run through the app's queue, its figures."""

import numpy as np
from streamlit.testing.v1 import AppTest

from asc.jobs import JobKind
from tests.helpers import toy_task
from tests.pages.helpers import button, charts, page
from ui import jobs

LAYERS_PAGE = page("probing")


def test_layers_page_without_results_says_how_to_get_them(monkeypatch, tmp_path):
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path))
    at = AppTest.from_file(LAYERS_PAGE, default_timeout=120)
    at.run()
    assert not at.exception
    assert any("python -m probes layers" in i.value for i in at.info)
    assert at.multiselect(key="lp_models").value == ["tiny-random", "minilm-l6"]


def test_layers_page_runs_probes_and_plots_them(monkeypatch, tmp_path):
    from probes.catalog import layer_job
    from probes.inspect.runs import load_results

    tsv = tmp_path / "toy.tsv"
    toy_task().to_tsv(tsv)
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path / "runs"))
    at = AppTest.from_file(LAYERS_PAGE, default_timeout=120)
    at.run()
    at.multiselect(key="lp_models").set_value(["tiny-random"]).run()
    at.multiselect(key="lp_tasks").set_value([]).run()
    button(at, "Start").click().run()
    assert any("at least one model and one task" in e.value for e in at.error)
    # a run from a task file goes through the app's queue, like the Start button with an upload
    queue = jobs.job_queue()
    out = tmp_path / "runs" / "layers"
    queue.submit_call(JobKind.LAYERS, "tiny-random", "layer probes: toy", out, layer_job([], out, task_files=[tsv]))
    assert queue.wait(120)
    assert queue.jobs()[-1].status == "done"
    at.run()
    assert not at.exception
    result = load_results(out)[0]
    specs = charts(at)
    heat = specs[0]["data"][0]
    assert heat["y"] == ["TOY"] and np.allclose(heat["z"][0], result.accuracy)
    titles = [c["layout"]["title"]["text"] for c in specs]
    assert titles[0] == "tiny-random: accuracy per task and layer (box: layer chosen on dev)"
    best = result.best_layer
    assert f"tiny-random · TOY · layer {best}: accuracy {result.accuracy[best]:.3f}" in titles  # the confusion matrix
