"""Text about code (BLANCA): do a model's embeddings of text about code reflect what programmers know?

Runs go to the app-wide background queue and write to ``<runs>/blanca`` (``probes.blanca.runs``: the task set built
once from the Python documentation and standard library, scores per model and task, resumed). Everything shown is
read back from that folder, including what ``python -m probes blanca --out runs/blanca`` wrote.
"""

from __future__ import annotations

import ui.preload  # noqa: F401  (first: imports the backend once, in one thread: ui/preload.py)

# isort: split
import re
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

import streamlit as st

from asc import AscError, JobKind, blanca_dir, csv_text, embedded_names
from asc.viz import figure_html
from probes.blanca import (
    BLANCA_TASK_TITLES,
    BLANCA_TASKS,
    RankItem,
    blanca_job,
    blanca_set_name,
    blanca_table,
    distance_distributions,
    question_answers,
    ranked_answers_figure,
    regression_plot,
    summary_bars,
    target_kinds,
)
from ui import cache, gate, guards, jobs, widgets

gate.enter()  # first: the password, the token, the study's pages (ui.gate)

if TYPE_CHECKING:
    import plotly.graph_objects as go

SPLITS = {"test": "test (as the paper reports)", "all": "all items (pretrained models only)"}

st.title("Text about code (BLANCA)")
st.caption("Do a model's embeddings of *text about code* reflect what programmers know? BLANCA's five tasks compare "
           "cosine distances of embedded texts: R ranks a question's answers, L tells linked documentation sections "
           "from unlinked ones, F tells the documentation an answer refers to from other classes of its module, and "
           "H and U ask whether class documentations lie closer when the classes are closer in the hierarchy or are "
           "used alike. The paper's data came from StackOverflow and Graph4Code; ours are the Python documentation's "
           "FAQ and library reference and the standard library's classes (hundreds of items per task, not hundreds "
           "of thousands).")

folder = blanca_dir()
sets, broken = cache.blanca_task_sets(folder)
with st.expander("Run tasks", expanded=not sets):
    c1, c2 = st.columns([3, 2])
    models = widgets.model_picker(c1, "Models", embedded_names(), jobs.demo_models(JobKind.BLANCA), "bl",
                                  help="Sentence encoders (MiniLM) embed with their own pooling; decoders with the "
                                       "mean of their last layer's token states.")
    tasks = c2.multiselect("Tasks", BLANCA_TASKS, default=list(BLANCA_TASKS), key="bl_tasks",  # chips: names alone fit
                           help="; ".join(f"{t}: {BLANCA_TASK_TITLES[t]}" for t in BLANCA_TASKS))
    c2.caption(" · ".join(f"{t}: {BLANCA_TASK_TITLES[t]}" for t in BLANCA_TASKS))
    seed = st.number_input("Seed", 0, 2**31 - 1, 0, key="bl_seed",
                           help="item sampling of the task set (built once as stdlib-seed<seed>) and the bootstrap")
    if st.button("Start", type="primary", key="bl_start"):
        if not models or not tasks:
            st.error("Choose at least one model and one task.")
        elif guards.allowed(models, None, widgets.trust_remote_code()):
            for model in models:
                jobs.submit(JobKind.BLANCA, model, f"BLANCA: {', '.join(tasks)} ({blanca_set_name(seed=int(seed))})",
                            folder, blanca_job(tasks, folder, seed=int(seed)))
    st.caption("The first run builds the task set (U scans the standard library's source); MiniLM then embeds the "
               "five tasks' texts (about 2,500), which takes minutes on a 2-core CPU (the measured costs per task: "
               "`docs/bench/blanca.txt`). R, L and F need "
               "Debian's python3.11-doc (`make docs-data`); without it they are skipped and H and U still run.")


jobs.live_job_panel(JobKind.BLANCA)  # this tab's jobs and the queue, refreshed

for name, why in broken.items():
    st.error(f"The task set {widgets.plain(name)} cannot be read: {widgets.plain(why)}")
if not sets:
    jobs.no_results(JobKind.BLANCA, "blanca", "No BLANCA results yet: run the small demo below, start a run above, "
                    "or from a shell: `.venv/bin/python -m probes blanca --model minilm-l6 --out runs/blanca`.")
    st.stop()

shown = st.selectbox("Task set", list(sets), key="bl_show_set", help="what it was built from, and its seed") if len(
    sets) > 1 else next(iter(sets))
task_set = sets[shown]
for task, why in task_set.skipped.items():
    st.info(f"{task} ({BLANCA_TASK_TITLES[task]}) is not in this task set: {widgets.plain(why)}")
try:
    scores = cache.blanca_scores(folder, shown)
    finetuned = cache.blanca_finetuned(folder, shown)
except (AscError, OSError, ValueError) as err:  # a garbled model.json, a truncated Parquet file
    st.error(f"The scores of {widgets.plain(shown)} under {widgets.plain(folder)} cannot be read "
             f"({widgets.plain(err)}): delete the broken model's folder under scores/ and run it again.")
    st.stop()
if not len(scores):
    sizes = ", ".join(f"{t}: {train + test} ({test} test)" for t, (train, test) in task_set.counts().items())
    st.info(f"The task set {widgets.plain(shown)} is built ({sizes or 'no task'}); no model has scored it yet "
            "(see the run above).")
    st.stop()

split = st.radio("Split", list(SPLITS), format_func=SPLITS.get, horizontal=True, key="bl_split",
                 help="all: train and test items together, for models that never saw them: more items, so narrower "
                      "intervals. Fine-tuned models trained on the train split, so they are left out.")
leave_out = tuple(finetuned) if split == "all" else ()
if leave_out:
    st.caption(f"Left out on all items (fine-tuned on the train split): {widgets.plain(', '.join(leave_out))}.")
match = re.search(r"-seed(\d+)$", shown)  # the set's seed: the bootstrap of `python -m probes blanca --seed`
try:
    summary = cache.blanca_summary(folder, shown, split, target_kinds(task_set), leave_out,
                                   seed=int(match.group(1)) if match else 0)
except AscError as err:
    st.error(widgets.plain(err))
    st.stop()
picked = scores[~scores["model"].isin(leave_out)]
picked = picked if split == "all" else picked[picked["split"] == split]
if not len(summary):
    st.info("Too few items on this split for any metric: choose all items, or score a larger task set.")
    st.stop()


def show_figure(make: Callable[[], go.Figure], name: str, what: str, task: str = "") -> None:
    """The figure ``make()`` draws (key ``bl_fig_<name>``) with its offline HTML download; a figure of a ``task``
    that was not scored, or that cannot be drawn, gets a line instead."""
    if task and task not in set(picked["task"]):
        st.caption(f"{what}: not scored{'' if split == 'all' else ' on this split'}.")
        return
    try:
        fig = make()
    except AscError as err:
        st.info(f"{what}: {widgets.plain(err)}")
        return
    st.plotly_chart(fig, key=f"bl_fig_{name}")
    st.download_button(f"{what} (HTML)", lambda: figure_html(fig), f"blanca-{name}.html", "text/html",
                       key=f"bl_dl_{name}", on_click="ignore")


table_tab, pairs_tab, regression_tab, ranking_tab = st.tabs(["Table", "L and F: distances", "H and U: regressions",
                                                             "R: ranked answers"])
with table_tab:
    wide = blanca_table(summary)
    st.dataframe(wide, hide_index=True, width="stretch",
                 column_config={c: st.column_config.NumberColumn(format="%.3f") for c in wide.columns[1:]})
    st.caption(f"{SPLITS[split].capitalize()}. R: MRR and NDCG of the answers ranked by cosine similarity to the "
               "question. L, F: mean cosine distance of positive (+) and negative (−) pairs, Student's t and Cohen's d "
               "of the difference (positive: related texts lie closer); t grows with the square root of the sample and "
               "ours are hundreds of pairs where the paper's are thousands, so compare d, not t. H, U: Pearson r "
               "between the target read as a distance and the embedding distance (positive = good). Rows named "
               "*paper:* are the paper's USE (its strongest encoder without fine-tuning) and its best fine-tuned "
               "model per task, on StackOverflow and Graph4Code data: a reference point, not a race.")
    with st.expander("Every metric with its 95% bootstrap interval, p-value and n"):
        st.dataframe(summary, hide_index=True, width="stretch",
                     column_config={**{c: st.column_config.NumberColumn(format="%.3f")
                                       for c in ("value", "low", "high")},
                                    "p_value": st.column_config.NumberColumn(format="%.2e")})
    e1, e2, e3 = st.columns(3)
    e1.download_button("Table (CSV)", lambda: csv_text(wide), "blanca-table.csv", "text/csv", key="bl_dl_table",
                       on_click="ignore")
    e2.download_button("Summary (JSON)", lambda: summary.to_json(orient="records", force_ascii=False),
                       "blanca-summary.json", "application/json", key="bl_dl_summary", on_click="ignore")
    e3.download_button("Scores (CSV)", lambda: csv_text(picked), "blanca-scores.csv", "text/csv", key="bl_dl_scores",
                       on_click="ignore")
    show_figure(lambda: summary_bars(summary), "bars", "Main metric per task")

PAIR_TABS = (
    (pairs_tab, ("L", "F"), distance_distributions, "distances",
     "The density of the cosine distances of positive pairs (solid) and negative pairs (dashed) per model: "
     "a model that reads the texts as programmers do draws its solid curve left of its dashed one."),
    (regression_tab, ("H", "U"), regression_plot, "regression",
     "Each pair's embedding distance against its target, one panel per model, with the least-squares line "
     "and Pearson r (r > 0: classes closer in the hierarchy, or used alike, have closer documentation)."),
)
for tab, pair_tasks, figure, kind, caption in PAIR_TABS:
    with tab:
        st.caption(caption)
        for task in pair_tasks:
            show_figure(partial(figure, picked, task), f"{kind}-{task}", f"{task}, {BLANCA_TASK_TITLES[task]}", task)

with ranking_tab:
    ranked = picked[picked["task"] == "R"]
    questions = {it.id: it for it in task_set.items.get("R", [])
                 if isinstance(it, RankItem) and it.id in set(ranked["id"])}  # R's items are RankItems
    if not questions:
        st.info("No R question was scored on this split: score R (it needs the Python documentation).")
        st.stop()
    g1, g2 = st.columns([1, 3])
    rmodel = g1.selectbox("Model", list(dict.fromkeys(ranked["model"])), key="bl_r_model")
    question_ids = list(questions)
    qid = g2.selectbox("Question", question_ids, key="bl_r_question",
                       format_func=lambda q: questions[q].question[:120])
    item = questions[qid]
    show_figure(lambda: ranked_answers_figure(ranked, rmodel, qid), "ranked", "Ranked answers")
    st.markdown(f"**The question** ({widgets.plain(qid)})")
    st.text(item.question)
    for rank, row in question_answers(ranked, rmodel, qid).iterrows():  # the figure's order
        k = int(row["row"])
        if k >= len(item.answers) or (int(rank) >= 3 and not row["true"]):
            continue
        label = f"{int(rank) + 1}. answer {k} · similarity {row['similarity']:.3f}" + (
            " · the true answer" if row["true"] else "")
        with st.expander(widgets.plain(label), expanded=rank == 0 or bool(row["true"])):
            st.text(item.answers[k])
    st.caption("The three answers most similar to the question, and the true answer wherever it ranks.")
