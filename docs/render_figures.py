"""Render the docs pages' result figures to PNG from run folders (Playwright + Debian's chromium, offline).

    .venv/bin/python docs/render_figures.py --layers runs/layers --attention runs/attention \
        --gluecode runs/gluecode-repro --gluecode-set stdlib-120-seed0 --blanca runs/blanca-repro \
        --asc-layers runs/layers-smol-he runs/layers-gemma-he

Writes ``docs/layers-<model>.png`` (task x layer heatmaps), ``docs/layers-best.png``,
``docs/attention-<model>.png`` (the head heatmap of If:if->test) and ``docs/gluecode-context.png`` (glueCode's
accuracy by context level, every model of the task set), ``docs/blanca-summary.png`` and ``docs/blanca-hierarchy.png``
(BLANCA's main metric per task and model on the test split; H's regressions), ``docs/asc-layers-<run>.png`` and
``docs/asc-layers-depth.png`` (AsC-Eval per layer: category x layer heatmaps, Global on relative depth). The
figures are the app's own
(``probes.figures``); plotly.js is inlined, so no network is needed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _shoot(figs: dict[str, object], out: Path) -> None:
    from playwright.sync_api import sync_playwright

    from asc.viz import figure_html

    with sync_playwright() as p, tempfile.TemporaryDirectory() as tmp:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1100, "height": 600})
        for name, fig in figs.items():
            html = Path(tmp) / f"{name}.html"
            html.write_text(figure_html(fig.update_layout(width=1050)), encoding="utf-8")
            page.goto(html.as_uri())
            page.wait_for_selector(".main-svg")
            page.locator(".plotly-graph-div").first.screenshot(path=str(out / f"{name}.png"))
            print("wrote", out / f"{name}.png")
        browser.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--layers", default="runs/layers")
    ap.add_argument("--attention", default="runs/attention")
    ap.add_argument("--gluecode", default="runs/gluecode")
    ap.add_argument("--gluecode-set", default="", help="the task set to draw (default: the first)")
    ap.add_argument("--asc-layers", nargs="*", default=[], metavar="RUN",
                    help="AsC-Eval runs made with --layers: a heatmap each and the curves of all on relative depth")
    ap.add_argument("--blanca", default="runs/blanca", help="a BLANCA run folder (its first task set)")
    ap.add_argument("--out", default=str(ROOT / "docs"))
    args = ap.parse_args()
    from probes.catalog import LAYER_TASKS
    from probes.codesyntax.attention import attention_runs, load_attention_run, relation_table
    from probes.figures import best_layer_heatmap, head_heatmap, layer_heatmap
    from probes.inspect.runs import best_layer_table, load_results, results_table

    figs = {}
    results = load_results(args.layers) if Path(args.layers).is_dir() else []
    if results:
        table = results_table(results)
        order = [t for t in LAYER_TASKS if t in set(table["task"])]
        for model in dict.fromkeys(table["model"]):
            figs[f"layers-{model}"] = layer_heatmap(table, model, "accuracy", order)
        figs["layers-best"] = best_layer_heatmap(best_layer_table(results), order)
    for folder in attention_runs(args.attention) if Path(args.attention).is_dir() else []:
        run = load_attention_run(folder)
        row = relation_table(run, "first", 1).set_index("relation").loc["If:if->test"]
        figs[f"attention-{run.model}"] = head_heatmap(run.scores.layer_head("If:if->test", "first", 1, "test"),
                                                      "If:if->test", (int(row["layer"]), int(row["head"])),
                                                      "test hit rate @ 1")
    figs.update(_gluecode_figures(Path(args.gluecode), args.gluecode_set))
    figs.update(_asc_layer_figures(args.asc_layers))
    figs.update(_blanca_figures(Path(args.blanca)))
    _shoot(figs, Path(args.out))


def _asc_layer_figures(folders: list[str]) -> dict[str, object]:
    import pandas as pd

    from asc.corpus.depth import layer_summary
    from asc.corpus.runs import load_digest
    from asc.corpus.summary import run_label
    from asc.viz.corpus_depth import depth_curves, layer_heatmap

    if not folders:
        return {}
    tables = [layer_summary(f, run_label(load_digest(f))) for f in folders]
    figs: dict[str, object] = {f"asc-layers-{Path(f).name}": layer_heatmap(t, str(t["model"].iloc[0]))
                               for f, t in zip(folders, tables)}
    figs["asc-layers-depth"] = depth_curves(pd.concat(tables, ignore_index=True))
    return figs


def _blanca_figures(folder: Path) -> dict[str, object]:
    from probes.blanca.evaluate import summarize
    from probes.blanca.figures import regression_plot, summary_bars
    from probes.blanca.runs import load_scores

    sets = sorted((folder / "tasks").iterdir()) if (folder / "tasks").is_dir() else []
    if not sets:
        return {}
    scores = load_scores(folder, sets[0].name)
    test = scores[scores["split"] == "test"]
    return {"blanca-summary": summary_bars(summarize(scores, "test")),
            "blanca-hierarchy": regression_plot(test[test["model"].isin(["minilm-l6", "smollm2-135m",
                                                                          "FT-H (minilm-l6)"])], "H")}


def _gluecode_figures(folder: Path, task_set: str) -> dict[str, object]:
    from probes.gluecode.browse import context_frame
    from probes.gluecode.figures import context_figure
    from probes.gluecode.runs import load_predictions, load_task_sets
    from probes.gluecode.zeroshot import accuracy_table, baselines

    sets = load_task_sets(folder) if folder.is_dir() else {}
    name = task_set or next(iter(sets), "")
    if name not in sets:
        return {}
    predictions = load_predictions(folder, name)
    items = [it for task_items in sets[name].values() for it in task_items]
    frame = context_frame(accuracy_table(predictions), baselines(items))
    return {"gluecode-context": context_figure(frame, f"glueCode, task set {name}, zero-shot: "
                                                      "does context beyond the function help?")}


if __name__ == "__main__":
    main()
