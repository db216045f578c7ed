"""probes.gluecode.figures: what each figure draws is the data it was given."""

import pandas as pd

from probes.gluecode.browse import candidate_table, confusion
from probes.gluecode.figures import candidates_figure, confusion_figure, context_figure
from probes.gluecode.zeroshot import Prediction


def test_context_figure_has_a_panel_per_task_and_a_line_per_model():
    rows = [{"model": model, "task": task, "context": level, "n": 10, "value": v, "ci_low": v - 0.1,
             "ci_high": v + 0.05, "baseline": 0.08 if task == "OPS" else float("nan")}
            for model, shift in (("a", 0.0), ("b<x>", 0.1)) for task in ("OPS", "CALL")
            for level, v in (("function", 0.3 + shift), ("file", 0.4 + shift), ("callgraph", 0.5 + shift))]
    fig = context_figure(pd.DataFrame(rows))
    assert [a.text for a in fig.layout.annotations] == ["OPS (accuracy)", "CALL (accuracy)"]
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    assert len(lines) == 4 and {t.name for t in lines} == {"a", "b&lt;x&gt;"}  # model names escaped
    first = lines[0]
    assert list(first.x) == ["function", "file", "file + call graph"] and list(first.y) == [0.3, 0.4, 0.5]
    assert all(abs(x - 0.05) < 1e-9 for x in first.error_y.array)
    assert all(abs(x - 0.1) < 1e-9 for x in first.error_y.arrayminus)
    baseline = [t for t in fig.data if t.name == "trivial baseline"]
    assert len(baseline) == 1 and list(baseline[0].y) == [0.08, 0.08]  # CALL has none


def test_confusion_figure_shades_row_shares_and_writes_counts():
    preds = [Prediction(item_id=str(k), task="OPS", mode="rank", context="function", model="m", label=lab,
                        prediction=guess, correct=lab == guess, score=0.0)
             for k, (lab, guess) in enumerate([("+", "+"), ("+", "-"), ("+", "-"), ("<", "<")])]
    fig = confusion_figure(confusion(preds, "OPS"), "t")
    heat = fig.data[0]
    row = list(heat.y).index("+")
    assert heat.text[row][list(heat.x).index("-")] == 2
    assert abs(heat.z[row][list(heat.x).index("-")] - 2 / 3) < 1e-12
    assert heat.z[list(heat.y).index("*")] == [0.0] * 12  # an empty row stays 0, no division by zero


def test_candidates_figure_colors_answer_and_mistake_and_always_shows_the_answer():
    cands = [f"c{k}" for k in range(20)]
    table = candidate_table(cands, [-float(k) for k in range(20)], label="c19", prediction="c0")
    fig = candidates_figure(table, "t", top=5)
    bar = fig.data[0]
    assert len(bar.y) == 6 and bar.y[-1] == "c19  ✓"  # the right answer is drawn although it ranks last
    assert bar.marker.color[0] == "#b2182b" and bar.marker.color[-1] == "#2166ac"
