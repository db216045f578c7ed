"""Benchmark tasks (glueCode): five tasks from local to global reasoning, answered zero-shot at three context levels.

Runs go to the app-wide background queue and write to ``<runs>/gluecode`` (``probes.gluecode.runs``: task sets
built once per corpus, predictions per model, task and level, resumed). Everything shown is read back from that
folder, including what ``python -m probes gluecode --out runs/gluecode`` wrote.
"""

from __future__ import annotations

import ui.preload  # noqa: F401  (first: imports the backend once, in one thread: ui/preload.py)

# isort: split
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from asc import BUILTIN_CORPORA, AscError, JobKind, csv_text, default_model, embedded_names, gluecode_dir
from asc.viz import figure_html, sequence_html, tree_figure
from asc.viz import shown as shown_table
from probes.gluecode import (
    CONFUSION_TASKS,
    CONTEXT_LABELS,
    CONTEXTS,
    NO_WARNING,
    SHOWN,
    TASK_SUMMARY,
    TASKS,
    answered,
    baselines,
    candidate_table,
    candidates_figure,
    confusion,
    confusion_figure,
    context_figure,
    context_frame,
    gluecode_job,
    item_answers,
    levels_answered,
    mistakes,
    predictions_frame,
    scored_answers,
    table2,
)
from ui import cache, charts, gate, guards, jobs, widgets

gate.enter()  # first: the password, the token, the study's pages (ui.gate)

DEFAULT_CORPUS = "algorithms"  # the form's corpus and the shell command under "No glueCode results yet" agree
SIZES = [100, 300, 1000]  # items per task; the first is the form's default
NULL_CAVEAT = ("NullToken labels mean *the type checker (mypy) warns here*, not proven bugs: mypy follows declared "
               "types, not execution paths.")

settings = widgets.current_settings()
st.title("Benchmark tasks (glueCode)")
st.caption("Do code models need more than the function in front of them? glueCode's five tasks, from local to "
           "global: NPath complexity, a masked operator, the function's name, a masked call, and the token a type "
           "checker flags as possibly None. Each is answered zero-shot (candidates ranked by likelihood, or names "
           "generated greedily) with the function alone, the whole file, and the file plus the signatures and "
           "docstrings of what the function calls and what calls it. " + NULL_CAVEAT)

folder = gluecode_dir()
sets = cache.gluecode_items(folder)
with st.expander("Run tasks", expanded=not sets):
    c1, c2 = st.columns([3, 2])
    models = widgets.model_picker(c1, "Models", embedded_names(), [default_model()], "gc",
                                  help="Decoders only: answers are ranked by the model's next-token likelihood.")
    tasks = c2.multiselect("Tasks", TASKS, default=list(TASKS), key="gc_tasks",  # chips: the names alone fit
                           help="; ".join(f"{t}: {TASK_SUMMARY[t]}" for t in TASKS))
    c2.caption(" · ".join(f"{t}: {TASK_SUMMARY[t]}" for t in TASKS))
    d1, d2, d3, d4 = st.columns(4)
    corpus = d1.selectbox("Corpus", list(BUILTIN_CORPORA), index=BUILTIN_CORPORA.index(DEFAULT_CORPUS), key="gc_corpus",
                          help="Python functions the tasks are built from: algorithms is small and quick (a package, "
                               "so the file and call-graph levels have context); stdlib gives the most items.")
    contexts = d2.multiselect("Context levels", CONTEXTS, default=list(CONTEXTS), key="gc_contexts",
                              format_func=CONTEXT_LABELS.__getitem__)
    size = d3.selectbox("Items per task", SIZES, key="gc_size",
                        help="dev and test together (half each); only test items are answered. On a 2-core CPU "
                             "SmolLM2 takes about 6 s per item for the five tasks at the function level, 3x that "
                             "with the file.")
    seed = d4.number_input("Seed", 0, 2**31 - 1, 0, key="gc_seed")
    if st.button("Start", type="primary", key="gc_start"):
        if not models or not tasks or not contexts:
            st.error("Choose at least one model, one task and one context level.")
        elif guards.allowed(models, corpus, widgets.trust_remote_code()):
            for model in models:
                call = gluecode_job(tasks, corpus, folder, contexts=contexts, size=int(size), seed=int(seed))
                jobs.submit(JobKind.GLUECODE, model, f"glueCode: {', '.join(tasks)} on {corpus}", folder, call)


jobs.live_job_panel(JobKind.GLUECODE)  # this tab's jobs and the queue, refreshed

if not sets:
    jobs.no_results(JobKind.GLUECODE, "gluecode", "No glueCode results yet: run the small demo below, start a run "
                    "above (its defaults), or from a shell: `.venv/bin/python -m probes gluecode --model smollm2-135m "
                    f"--corpus {DEFAULT_CORPUS} --size {SIZES[0]} --out runs/gluecode`.")
    st.stop()

shown = st.selectbox("Task set", list(sets), key="gc_show_set", help="corpus-items per task-seed") if len(
    sets) > 1 else next(iter(sets))
items_by_task = sets[shown]
predictions = [p for p in cache.gluecode_predictions(folder, shown) if p.task in items_by_task]
if not predictions:
    st.info(f"The task set {widgets.plain(shown)} is built; no model has answered it yet (see the run above).")
    st.stop()
all_items = [it for task_items in items_by_task.values() for it in task_items]
try:
    accuracy = cache.gluecode_accuracy(folder, shown, tuple(items_by_task))  # bootstrapped once per change
    trivial = baselines(all_items)
except AscError as err:
    st.error(str(err))
    st.stop()

table_tab, context_tab, confusion_tab, items_tab = st.tabs(["Table 2", "By context level", "Confusion",
                                                            "Items"])
with table_tab:
    wide = table2(accuracy)
    st.dataframe(shown_table(wide, TASKS), hide_index=True, width="stretch", key="gc_table2")
    st.caption("Test split. NAME: character-level BLEU of the generated name; the others: accuracy (exact match); "
               "items that do not fit the window at a level are skipped there (counted in the full table); "
               "'absent': the model has not answered that task at that level (not run, or every item skipped). "
               "Rows named *paper:* are glueCode's Table 2: Java, models fine-tuned on each task; ours are Python "
               "and zero-shot, so they are a reference point, not a race. " + NULL_CAVEAT)
    st.markdown("**Trivial baselines** (fitted on the dev split, scored on test)")
    st.dataframe(trivial, hide_index=True, width="stretch",
                 column_config={c: st.column_config.NumberColumn(format="%.3f") for c in ("value", "ci_low", "ci_high")})
    with st.expander("Every metric with its 95% interval"):
        st.dataframe(accuracy, hide_index=True, width="stretch",
                     column_config={c: st.column_config.NumberColumn(format="%.3f")
                                    for c in ("value", "ci_low", "ci_high")})
    e1, e2, e3, e4 = st.columns(4)
    e1.download_button("Table 2 (CSV)", lambda: csv_text(wide), "gluecode-table2.csv", "text/csv", key="gc_dl_t2",
                       on_click="ignore")
    e2.download_button("All metrics (CSV)", lambda: csv_text(accuracy), "gluecode-metrics.csv", "text/csv",
                       key="gc_dl_acc", on_click="ignore")
    e3.download_button("Baselines (CSV)", lambda: csv_text(trivial), "gluecode-baselines.csv", "text/csv",
                       key="gc_dl_base", on_click="ignore")
    e4.download_button("Predictions (JSON)",
                       lambda: predictions_frame(predictions).to_json(orient="records", force_ascii=False),
                       "gluecode-predictions.json", "application/json", key="gc_dl_pred", on_click="ignore")

with context_tab:
    frame = context_frame(accuracy, trivial)
    fig = context_figure(frame)
    st.plotly_chart(fig, key="gc_context")
    st.caption("A line that rises from left to right is a task where the model uses context beyond the function; "
               "flat lines are local tasks (or context the model cannot use). Bars: bootstrap 95% intervals over "
               "items. Contexts longer than the model's window are cut from the far end (see an item's details).")
    f1, f2 = st.columns(2)
    f1.download_button("Figure (HTML)", lambda: figure_html(fig), "gluecode-by-context.html", "text/html",
                       key="gc_dl_ctx", on_click="ignore")
    f2.download_button("Data (CSV)", lambda: csv_text(frame), "gluecode-by-context.csv", "text/csv",
                       key="gc_dl_ctx_csv", on_click="ignore")

model_names = list(dict.fromkeys(p.model for p in predictions))
present = [t for t in TASKS if any(p.task == t for p in predictions)]



def pick(prefix: str, columns: list[DeltaGenerator]) -> tuple[str, str, str]:
    """Model, task and context level chosen in the first three of ``columns`` (keys ``<prefix>_model`` ...)."""
    model = columns[0].selectbox("Model", model_names, key=f"{prefix}_model")
    task = columns[1].selectbox("Task", present, key=f"{prefix}_task")
    return model, task, columns[2].selectbox("Context level", levels_answered(predictions, model, task),
                                             key=f"{prefix}_level",
                                             format_func=CONTEXT_LABELS.__getitem__)


with confusion_tab:
    g1, g2, g3, g4 = st.columns(4)
    cmodel, ctask, clevel = pick("gc_cm", [g1, g2, g3])
    parses = g4.checkbox("Only operators that parse", key="gc_cm_parses", disabled=ctask != "OPS",
                         help="OPS: the best operator among those that keep the function parseable")
    chosen = scored_answers(predictions, cmodel, ctask, clevel)
    if not chosen:
        st.info("This model has not answered this task yet: choose another model or task.")
    elif ctask in CONFUSION_TASKS:
        table = confusion(chosen, ctask, parses=parses)
        fig = confusion_figure(table, f"{cmodel} · {ctask} · {CONTEXT_LABELS.get(clevel, clevel)}: "
                                      f"{sum(p.correct for p in chosen)}/{len(chosen)} right")
        st.plotly_chart(fig, key="gc_confusion")
        h1, h2 = st.columns(2)
        h1.download_button("Confusion (HTML)", lambda: figure_html(fig), "gluecode-confusion.html", "text/html",
                           key="gc_dl_cm", on_click="ignore")
        h2.download_button("Confusion (CSV)", lambda: csv_text(table, index=True), "gluecode-confusion.csv",
                           "text/csv", key="gc_dl_cm_csv", on_click="ignore")
    else:
        st.caption(f"{ctask} has too many classes for a matrix: its most frequent mistakes instead.")
    if chosen:
        st.markdown("**Most frequent mistakes**")
        st.dataframe(mistakes(chosen), hide_index=True, width="stretch")

with items_tab:
    k1, k2, k3, k4 = st.columns(4)
    imodel, itask, ilevel = pick("gc_it", [k1, k2, k3])
    which = k4.radio("Show", SHOWN, horizontal=True, key="gc_it_which")
    by_id = {it.id: it for it in items_by_task.get(itask, [])}
    answers = item_answers(predictions, imodel, itask, ilevel, by_id, which)
    if not answers:
        st.info("No item of this kind: choose another filter, task or model.")
        st.stop()
    labels = {i: f"{'–' if p.skipped else '✓' if p.correct else '✗'} {p.item_id} ({p.mode})"
              for i, p in enumerate(answers)}
    answer = answers[st.selectbox("Item", list(labels), format_func=labels.__getitem__, key="gc_it_pick")]
    item = by_id[answer.item_id]
    m = st.columns(4)
    m[0].metric("Answer", answer.label if answer.label != NO_WARNING else "no warning")
    m[1].metric("Model's answer", answer.prediction if answer.prediction != NO_WARNING else "no warning")
    m[2].metric("Score", f"{answer.score:.3f}" if itask == "NAME" and answer.mode == "generate" else
                ("right" if answer.correct else "wrong"))
    m[3].metric("Context tokens", answer.n_context_tokens,
                help=f"{answer.cut_tokens} tokens cut from the far end to fit the window" if answer.cut_tokens else None)
    st.caption(f"{widgets.plain(item.module)} · {item.split} split · {answer.forward_tokens} tokens run · "
               f"{answer.seconds:.2f} s" + (f" · {NULL_CAVEAT}" if itask == "NULL" else "") +
               (f" · checker: {widgets.plain(item.meta.get('message', ''))}" if item.meta.get("message") else ""))
    left, right = st.columns([3, 2])
    with left:
        st.markdown("**The function as the model saw it**" + ("" if itask == "NPATH" else " (`<MASK>`: the spot to fill)"))
        st.code(item.function, language="python")
        if ilevel != "function":
            with st.expander(f"The whole {CONTEXT_LABELS[ilevel]} context ({len(item.context(ilevel)):,} characters)"):
                st.code(item.context(ilevel), language="python")
    with right:
        if answer.skipped:
            st.warning(f"Not answered at this level, left out of the metrics: {widgets.plain(answer.skipped)}")
        elif answer.candidates:
            cands = candidate_table(answer.candidates, answer.logliks, answer.label, answer.prediction)
            st.plotly_chart(candidates_figure(cands, f"{len(cands)} candidates ranked by {imodel}"), key="gc_cands")
            st.download_button("Candidates (CSV)", lambda: csv_text(cands), f"{itask}-candidates.csv", "text/csv",
                               key="gc_dl_cands", on_click="ignore")
        else:
            st.caption("A generated answer: no candidates to rank.")

    st.markdown(f"**AsC-Viz of the function with the answer in place**, by the sidebar's model "
                f"({widgets.plain(settings.model)}): how sure is it of each token and node, and of the answer?")
    if st.toggle("Draw with AsC-Viz", value=True, key="gc_it_viz") and guards.model_or_none(settings) is not None:
        try:
            filled = answered(item)
            guards.check_length(filled.text)
            ex = cache.cached_explain(settings.model, settings.trust_remote_code, filled.text, "python",
                                      settings.aggregate, settings.device, settings.dtype)
        except (AscError, ValueError) as err:
            st.error(str(err))
        else:
            node = ex.tree.covering(*filled.spans[0]) if filled.spans else None
            if node is not None:
                st.caption(f"Outlined: node {node}, `{ex.tree.type[node]}`, the smallest node holding the answer; "
                           f"AsC-Eval {ex.values[node]:.3f}.")
            st.html(sequence_html(ex, selected=None if itask == "NPATH" else node))  # NPATH: the whole function
            tree = tree_figure(ex, "partial", collapse_unary=True, selected=node, max_width=charts.MAIN_PX)
            charts.panel_chart(st, tree, "gc_tree", "gc_treebox", charts.MAIN_PX, config={"displaylogo": False})
