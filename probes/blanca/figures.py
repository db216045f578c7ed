"""BLANCA figures, pure (score and summary tables in, plotly figures out; inputs are not mutated).

- :func:`distance_distributions` (the paper's Figures 2 and 4): L or F, per model the density of the cosine
  distances of positive pairs (solid) and negative pairs (dashed); a good model draws its solid curve left of
  its dashed one.
- :func:`regression_plot` (Figures 6 and 7, with Figure 5's per-distance means for H): H or U, one panel per
  model, the embedding distance of each pair against its target (MRO distance, or usage similarity) with the
  least-squares line over all pairs and Pearson r.
- :func:`summary_bars`: one panel per task, a bar per model for the task's main metric with its 95% bootstrap
  interval; hover gives value, interval, p and n.
- :func:`ranked_answers_figure`: one R question, its answers sorted by the model's cosine similarity to the
  question, the true answer(s) highlighted; :func:`question_answers` is that order as a table (the page lists
  the answers' texts in it).

Inputs are the scores table (one row per scored pair: ``model, task, id, split, row, distance, target, name_a,
name_b, group``) and the long summary table (``model, task, metric, value, low, high, p_value, n``); filter them
to one split first (the paper reports test). Names and ids are HTML-escaped (plotly renders HTML in labels).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from asc.errors import InputError
from asc.viz import MODEL_COLORS, escape_text
from probes.blanca.items import BLANCA_TASKS
from probes.blanca.metrics import ranking_order

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = ["BLANCA_MAIN_METRIC", "distance_distributions", "question_answers", "ranked_answers_figure", "regression_plot",
           "summary_bars"]

BLANCA_MAIN_METRIC = {"R": "MRR", "L": "d", "F": "d", "H": "r", "U": "r"}  # d, not t: t grows with n
_PAIR_TITLES = {"L": "L: linked vs unlinked sections",
                "F": "F: FAQ answer vs documentation it references (hard negatives from the same module)"}
_X_TITLES = {"H": "MRO distance (jittered ±0.15)",  # short: one title under each panel
             "U": "usage similarity (Jaccard)"}
_SCORE_COLUMNS = ("model", "task", "id", "row", "distance", "target", "name_a", "name_b")
_SUMMARY_COLUMNS = ("model", "task", "metric", "value", "low", "high", "p_value", "n")
_TRUE_COLOR, _OTHER_COLOR, _JITTER = "#2166ac", "#c7c7c7", 0.15


def _require(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(f"the {what} table lacks the columns {missing}; pass the table with {list(columns)}")


def _task_rows(scores: pd.DataFrame, task: str, allowed: Sequence[str]) -> pd.DataFrame:
    _require(scores, _SCORE_COLUMNS, "scores")
    if task not in allowed:
        raise InputError(f"this figure draws the tasks {list(allowed)}, not {task!r}; pick one of them")
    rows = scores[scores["task"] == task]
    if not len(rows):
        present = sorted(set(scores["task"].astype(str)))
        raise InputError(f"the scores have no rows of task {task!r} (tasks present: {present}); score it first")
    return rows


def _model_colors(frame: pd.DataFrame, models: Sequence[str] | None) -> dict[str, str]:
    """The models to draw (``models``' order, else the table's) with their colors, fixed by their place in the
    whole table so that a model keeps its color when others are left out."""
    known = list(dict.fromkeys(frame["model"].astype(str)))
    chosen = list(dict.fromkeys(models)) if models is not None else known
    unknown = [m for m in chosen if m not in known]
    if unknown or not chosen:
        raise InputError(f"no scores for the models {unknown or '(none chosen)'}; models present: {known}")
    return {m: MODEL_COLORS[known.index(m) % len(MODEL_COLORS)] for m in chosen}


def distance_distributions(scores: pd.DataFrame, task: str, models: Sequence[str] | None = None,
                           bins: int = 30) -> go.Figure:
    """L or F: per model, the density of the positives' (solid) and negatives' (dashed) cosine distances.

    Drawn as the paper draws it: one panel, one color per model, positives solid and negatives dashed. Density
    step lines over bins shared by every curve (not filled histograms): overlaid bars hide each other after two
    models, whereas lines keep the solid/dashed pairing readable for many models and compare the models on one
    x axis; the bins make no smoothing choice (a KDE would). A legend entry toggles one curve; hover gives the
    bin, its density and its count out of the curve's pairs.
    """
    import plotly.graph_objects as go

    rows = _task_rows(scores, task, ("L", "F"))
    colors = _model_colors(rows, models)
    rows = rows[rows["model"].astype(str).isin(colors)]
    values = rows["distance"].to_numpy(dtype=float)
    values = values[np.isfinite(values)]
    if not len(values):
        raise InputError(f"the {task} scores of {list(colors)} have no finite distance; rescore them")
    low, high = float(values.min()), float(values.max())
    if high - low < 1e-9:
        low, high = low - 0.05, high + 0.05
    edges = np.linspace(low, high, max(int(bins), 1) + 1)
    centers = (edges[:-1] + edges[1:]) / 2
    fig = go.Figure()
    for model, color in colors.items():
        of_model = rows[rows["model"].astype(str) == model]
        for label, positive, dash in (("positive", True, "solid"), ("negative", False, "dash")):
            dist = of_model.loc[(of_model["target"] > 0) == positive, "distance"].to_numpy(dtype=float)
            dist = dist[np.isfinite(dist)]
            if not len(dist):
                continue
            counts, _ = np.histogram(dist, bins=edges)
            density = counts / (len(dist) * np.diff(edges))
            name = f"{escape_text(model)} · {label}"
            fig.add_trace(go.Scatter(
                x=centers.tolist(), y=density.tolist(), mode="lines", line_shape="hvh", name=name,
                legendgroup=escape_text(model), line={"color": color, "dash": dash, "width": 2},
                customdata=[[lo, hi, int(c), len(dist)] for lo, hi, c in zip(edges[:-1], edges[1:], counts)],
                hovertemplate=name + "<br>distance %{customdata[0]:.3f}–%{customdata[1]:.3f}<br>density %{y:.2f}"
                                     "<br>%{customdata[2]} of %{customdata[3]} pairs<extra></extra>"))
    fig.update_layout(title=_PAIR_TITLES[task] + " (solid: positive pairs, dashed: negative pairs)",
                      xaxis_title="cosine distance (1 − cosine similarity)", yaxis_title="probability density",
                      hovermode="closest", height=420, margin={"l": 60, "r": 20, "t": 60, "b": 50})
    return fig


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    if len(x) < 2 or np.std(x) == 0 or np.std(y) == 0:
        return math.nan
    return float(np.corrcoef(x, y)[0, 1])


def regression_plot(scores: pd.DataFrame, task: str, models: Sequence[str] | None = None, max_points: int = 2000,
                    seed: int = 0) -> go.Figure:
    """H or U: one panel per model, embedding cosine distance (y) against the target (x), least-squares line.

    The line (``np.polyfit``) and r use every pair of the model; at most ``max_points`` pairs per model are drawn
    (a seeded sample). H's integer distances are jittered for the drawing only, and its panels add the mean
    distance per class distance with its standard error (the paper's Figure 5 idea). r is the summary's: Pearson
    r between the target read as a distance (H: itself, U: 1 − similarity) and the embedding distance, so
    positive is good in both tasks (U's line slopes down when r is positive).
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    rows = _task_rows(scores, task, ("H", "U"))
    if max_points < 1:
        raise InputError(f"max_points must be at least 1, not {max_points}")
    colors = _model_colors(rows, models)
    rng = np.random.default_rng(seed)
    fits: dict[str, tuple[pd.DataFrame, float]] = {}
    for model in colors:
        part = rows[rows["model"].astype(str) == model]
        part = part[np.isfinite(part["target"].astype(float)) & np.isfinite(part["distance"].astype(float))]
        x, y = part["target"].to_numpy(dtype=float), part["distance"].to_numpy(dtype=float)
        fits[model] = (part, _pearson(x if task == "H" else 1 - x, y))
    ncols = min(len(colors), 4)
    nrows = math.ceil(len(colors) / ncols)
    titles = [f"{escape_text(m)} (r = {'n/a' if r != r else f'{r:.2f}'})" for m, (_, r) in fits.items()]
    fig = make_subplots(rows=nrows, cols=ncols, shared_xaxes="all", shared_yaxes="all", subplot_titles=titles,
                        horizontal_spacing=0.04, vertical_spacing=0.12)
    for k, (model, (part, r)) in enumerate(fits.items()):
        where = {"row": k // ncols + 1, "col": k % ncols + 1}
        color, label = colors[model], escape_text(model)
        x, y = part["target"].to_numpy(dtype=float), part["distance"].to_numpy(dtype=float)
        drawn = np.sort(rng.choice(len(part), size=max_points, replace=False)) if len(part) > max_points \
            else np.arange(len(part))
        shown_x = x[drawn] + (rng.uniform(-_JITTER, _JITTER, len(drawn)) if task == "H" else 0.0)
        custom = [[escape_text(a), escape_text(b), f"{t:g}"] for a, b, t in
                  zip(part["name_a"].iloc[drawn], part["name_b"].iloc[drawn], x[drawn])]
        fig.add_trace(go.Scattergl(
            x=shown_x.tolist(), y=y[drawn].tolist(), mode="markers", name=f"{label} · pairs", legendgroup=label,
            showlegend=False, marker={"color": color, "size": 4, "opacity": 0.35}, customdata=custom,
            hovertemplate="%{customdata[0]} – %{customdata[1]}<br>target %{customdata[2]}<br>distance %{y:.3f}"
                          f"<extra>{label}</extra>"), **where)
        if task == "H" and len(part):
            means = part.groupby("target")["distance"].agg(["mean", "std", "count"]).sort_index()
            sem = (means["std"] / np.sqrt(means["count"])).fillna(0.0)
            fig.add_trace(go.Scatter(
                x=means.index.to_numpy(dtype=float).tolist(), y=means["mean"].tolist(), mode="markers",
                name=f"{label} · mean per distance", legendgroup=label, showlegend=False,
                marker={"color": "black", "size": 7, "symbol": "diamond"},
                error_y={"type": "data", "array": sem.tolist(), "thickness": 1.5, "color": "black"},
                customdata=[[int(c), s] for c, s in zip(means["count"], sem)],
                hovertemplate="class distance %{x}: mean distance %{y:.3f} ± %{customdata[1]:.3f} (SE), "
                              f"n=%{{customdata[0]}}<extra>{label}</extra>"), **where)
        if len(np.unique(x)) >= 2:
            slope, intercept = np.polyfit(x, y, 1)
            ends = np.array([x.min(), x.max()])
            r_text = "n/a" if r != r else f"{r:.2f}"
            fig.add_trace(go.Scatter(
                x=ends.tolist(), y=(slope * ends + intercept).tolist(), mode="lines", legendgroup=label,
                name=f"{label} · least squares, r = {r_text}", line={"color": color, "width": 3},
                hovertemplate=f"{label}: distance = {intercept:.3f} + {slope:.4f} · target<br>r = {r_text}, "
                              f"n = {len(x)} pairs<extra></extra>"), **where)
    for k in range(max(len(colors) - ncols, 0), len(colors)):  # the lowest panel of each column
        fig.update_xaxes(title_text=_X_TITLES[task], row=k // ncols + 1, col=k % ncols + 1)
    fig.update_yaxes(title_text="cosine distance", col=1)
    what = ("class hierarchy distance (H: edges between the classes in the MRO tree)" if task == "H" else
            "class usage similarity (U: Jaccard of the methods called on the two classes)")
    fig.update_layout(title=f"Embedding distance predicted from {what}<br><sup>r: the target read as a distance; "
                            "positive = good</sup>",
                      height=320 * nrows + 120, margin={"l": 60, "r": 20, "t": 80, "b": 60},
                      legend={"orientation": "h", "y": -0.15})
    return fig


def _number(value: float, fmt: str = ".3f") -> str:
    return "n/a" if value != value else format(value, fmt)


def summary_bars(summary: pd.DataFrame, metric_for_task: Mapping[str, str] = BLANCA_MAIN_METRIC) -> go.Figure:
    """One panel per task (BLANCA's order), a bar per model for the task's metric with its 95% interval.

    Colors follow the models' order in ``summary``, one shared legend; each panel has its own y scale (MRR lies
    in 0-1, t is unbounded). A missing interval draws no error bar; hover says "n/a".
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    _require(summary, _SUMMARY_COLUMNS, "summary")
    picked = summary[[metric_for_task.get(t) == m for t, m in zip(summary["task"], summary["metric"])]]
    if not len(picked):
        present = sorted({f"{t}: {m}" for t, m in zip(summary["task"], summary["metric"])})
        raise InputError(f"the summary has none of the metrics {dict(metric_for_task)}; it has {present}")
    twice = picked[picked.duplicated(["model", "task"], keep=False)]
    if len(twice):
        first = twice.iloc[0]
        raise InputError(f"the summary has {int((twice['model'] == first['model']).sum())} rows for "
                         f"({first['model']}, {first['task']}, {first['metric']}); pass one row per model, task and "
                         "metric (filter it to one split)")
    tasks = [t for t in BLANCA_TASKS if t in set(picked["task"])] + sorted(set(picked["task"]) - set(BLANCA_TASKS))
    colors = _model_colors(summary, None)
    fig = make_subplots(rows=1, cols=len(tasks), horizontal_spacing=0.06,
                        subplot_titles=[f"{escape_text(t)} ({escape_text(metric_for_task[t])})" for t in tasks])
    shown: set[str] = set()
    for j, task in enumerate(tasks, 1):
        of_task = picked[picked["task"] == task]
        for model, color in colors.items():
            row = of_task[of_task["model"].astype(str) == model]
            if not len(row):
                continue
            value, low, high = (float(row[c].iloc[0]) for c in ("value", "low", "high"))
            p, n = float(row["p_value"].iloc[0]), row["n"].iloc[0]
            label = escape_text(model)
            interval = "n/a" if low != low or high != high else f"[{low:.3f}, {high:.3f}]"
            fig.add_trace(go.Bar(
                x=[label], y=[value], name=label, legendgroup=label, showlegend=model not in shown,
                marker={"color": color},
                error_y={"type": "data", "symmetric": False, "array": [0.0 if high != high else high - value],
                         "arrayminus": [0.0 if low != low else value - low], "thickness": 1.2},
                customdata=[[interval, _number(p, ".2g"), n]],
                hovertemplate=f"{label} · {escape_text(task)} {escape_text(metric_for_task[task])}: %{{y:.3f}}"
                              "<br>95% interval %{customdata[0]}<br>p = %{customdata[1]}<br>n = %{customdata[2]} "
                              "items<extra></extra>"), row=1, col=j)
            shown.add(model)
        fig.update_xaxes(showticklabels=False, row=1, col=j)
    fig.update_yaxes(zeroline=True, zerolinecolor="#777")
    fig.update_layout(title="BLANCA per task: the main metric per model (bars: 95% bootstrap interval)",
                      height=380, barmode="group", margin={"l": 50, "r": 20, "t": 70, "b": 40})
    return fig


def question_answers(scores: pd.DataFrame, model: str, question_id: str) -> pd.DataFrame:
    """One R question's answers as ``model`` ranks them: most similar to the question first, ties in the answers'
    order (:func:`probes.blanca.metrics.ranking_order`); the scores' rows with ``similarity`` (1 − distance) and
    ``true`` (grade > 0), a plain index. An unknown model or question is an :class:`InputError` naming those
    present."""
    rows = _task_rows(scores, "R", ("R",))
    _model_colors(rows, [model])
    of_model = rows[rows["model"].astype(str) == model]
    answers = of_model[of_model["id"].astype(str) == str(question_id)]
    if not len(answers):
        ids = list(dict.fromkeys(of_model["id"].astype(str)))
        raise InputError(f"{model} has no R question {question_id!r}; pick one of its {len(ids)} questions, e.g. "
                         f"{ids[:5]}")
    answers = answers.sort_values("row", kind="stable")
    similarity = 1 - answers["distance"].to_numpy(dtype=float)
    ranked = answers.assign(similarity=similarity, true=answers["target"].to_numpy(dtype=float) > 0)
    return ranked.iloc[ranking_order(similarity.tolist())].reset_index(drop=True)


def ranked_answers_figure(scores: pd.DataFrame, model: str, question_id: str) -> go.Figure:
    """One R question: its answers as horizontal bars of cosine similarity to the question (1 − distance),
    most similar on top (ties keep the answers' order, as :mod:`probes.blanca.metrics` ranks them); blue: the
    true answer(s) (grade > 0), grey: the others."""
    import plotly.graph_objects as go

    answers = question_answers(scores, model, question_id)
    similarity, true = answers["similarity"].to_numpy(), answers["true"].to_numpy()
    ranks = np.flatnonzero(true) + 1
    where = f"true answer ranked {ranks[0]} of {len(answers)}" if len(ranks) else "no true answer among them"
    fig = go.Figure(go.Bar(
        x=similarity.tolist(), y=[f"answer {int(r)}" for r in answers["row"]], orientation="h",
        marker={"color": [_TRUE_COLOR if t else _OTHER_COLOR for t in true]},
        text=["true answer" if t else "" for t in true], textposition="inside",
        customdata=[[f"{g:g}", escape_text(str(b)[:120])] for g, b in zip(answers["target"], answers["name_b"])],
        hovertemplate="%{y}: similarity %{x:.3f}<br>grade %{customdata[0]}<br>%{customdata[1]}<extra></extra>"))
    fig.update_layout(title=f"{escape_text(model)}: answers to question {escape_text(str(question_id))} by cosine "
                            f"similarity ({where})",
                      xaxis_title="cosine similarity to the question (1 − distance)",
                      yaxis={"autorange": "reversed", "type": "category"}, height=max(260, 26 * len(answers) + 120),
                      margin={"l": 100, "r": 20, "t": 60, "b": 50})
    return fig
