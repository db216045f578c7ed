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
    assert any("python -m probes inspect" in i.value for i in at.info)
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


def _save(folder, model, task, acc, control, labels=("a", "b")):
    """A probe result of ``model`` on ``task`` (accuracy per layer ``acc``) written where the page reads it."""
    from probes.inspect.linear import ProbeResult, save_probes

    acc = np.asarray(acc, dtype=float)
    y = np.arange(10) % len(labels)
    result = ProbeResult(model=model, task=task, task_digest="d", pooling="last", seed=0, labels=labels, accuracy=acc,
                         dev_accuracy=acc, control_accuracy=np.full(len(acc), control), l2=np.full(len(acc), 0.01),
                         majority=1 / len(labels), y_test=y, predictions=np.tile(y, (len(acc), 1)))
    save_probes(result, None, folder / model / f"{task}-last")


def test_table_iii_defaults_to_the_minilm_baseline_and_never_draws_an_empty_chart(monkeypatch, tmp_path):
    """Issue 48: the code model's results come first (the demo runs it first), MiniLM's a little later. The baseline
    must then be MiniLM, as the docs say, not the first model kept from before (whose Table III is all empty: it is
    the best model on every task); a baseline nothing beats says so instead of drawing an empty white box."""
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path))
    folder = tmp_path / "layers"
    for task in ("KTX", "IDN"):
        _save(folder, "smollm2-135m", task, [0.3, 0.8, 0.6], 0.5)
    at = AppTest.from_file(LAYERS_PAGE, default_timeout=120)
    at.run()
    assert not at.exception
    assert at.selectbox(key="lp_base").value == "smollm2-135m"  # the only model so far
    assert any("at least two models" in i.value for i in at.info)
    for task in ("KTX", "IDN"):
        _save(folder, "minilm-l6", task, [0.5, 0.55], 0.5)
    at.run()  # MiniLM's results have come
    assert not at.exception
    assert at.selectbox(key="lp_base").value == "minilm-l6"
    norm = next(c for c in charts(at) if c["layout"]["title"]["text"].startswith("Accuracy normalized"))
    z = np.asarray(norm["data"][0]["z"], dtype=float)
    assert np.isfinite(z).any() and np.allclose(z[norm["data"][0]["y"].index("smollm2-135m")], 100)
    at.selectbox(key="lp_base").set_value("smollm2-135m").run()  # the best model as its own baseline
    assert not at.exception
    assert not any(c["layout"]["title"]["text"].startswith("Accuracy normalized") for c in charts(at))
    assert any("Table III is empty with smollm2" in i.value and "minilm-l6" in i.value for i in at.info)


def test_heatmaps_show_their_references_and_the_test_samples(monkeypatch, tmp_path):
    """Issue 44: beside each accuracy heatmap the majority class and the control task, and the page says how many
    test samples every accuracy stands on."""
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path))
    _save(tmp_path / "layers", "minilm-l6", "KTX", [0.05, 0.1, 0.15], 0.08,
          labels=tuple("abcdefghij"))
    at = AppTest.from_file(LAYERS_PAGE, default_timeout=120)
    at.run()
    assert not at.exception
    heat = charts(at)[0]
    assert heat["data"][1]["x"] == ["majority", "control"]
    assert np.allclose(heat["data"][1]["z"], [[0.1, 0.08]])
    assert any("10 test samples per task" in c.value and "majority class" in c.value for c in at.caption)
