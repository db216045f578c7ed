"""User study, participant side (paper section VI-D): consent, background, samples with one view, ratings.

Each participant gets an anonymous code (kept in the URL as ``?code=...``), so a reload or a new
connection resumes where they stopped; the store (``asc.study.store``) assigns the group and saves
every page when it is submitted. The samples are the prepared (frozen) study: identical for all.
"""

from __future__ import annotations

import ui.preload  # noqa: F401  (first: imports the backend once, in one thread: ui/preload.py)

# isort: split
from collections.abc import Callable
from functools import partial
from typing import Any

import streamlit as st

from asc import AscError
from asc.study import frozen_explanation
from asc.viz import TREE_VIEWS, sequence_html, tree_figure, tree_view
from ui import charts, gate
from ui import study as ui_study

gate.enter(study=True)  # first: the password, the token, the study's pages (ui.gate)

try:
    definition, frozen, store = ui_study.study()
except AscError as err:
    st.error(f"The study cannot be opened: {err}")
    st.stop()

st.title(definition.title)
if frozen is None:
    st.info("This study is not open yet: the researcher prepares it on the Study results page "
            "(or with `python -m asc.study prepare`).")
    st.stop()

code = st.query_params.get("code") or st.session_state.get("study_code")
state = store.state(code) if code else None
if state is None:
    if definition.intro:
        st.markdown(definition.intro)
    start, resume = st.columns(2)
    with start:
        st.markdown("**New participant**")
        if st.button("Start the study", type="primary", key="study_start"):
            code = store.new_participant()
            st.session_state["study_code"] = code
            st.query_params["code"] = code
            st.rerun()
    with resume:
        typed = st.text_input("Resume with your code", key="study_resume", placeholder="e.g. K7QX2MHD")
        if st.button("Resume", key="study_resume_go"):
            from asc.study import normalize_code

            if store.state(normalize_code(typed)) is None:
                st.error("No participant has this code in this study: check it, or start anew.")
            else:
                st.session_state["study_code"] = normalize_code(typed)
                st.query_params["code"] = normalize_code(typed)
                st.rerun()
    st.stop()

st.caption(f"Your anonymous code: **{state.code}** (the page's address keeps it: reload or come back with it "
           "to continue where you stopped).")
total = len(definition.samples)
st.progress(len(state.answered) / total, text=f"{len(state.answered)} of {total} samples rated")


def submit(save: Callable[..., object], *args: Any) -> None:
    try:
        save(*args)
    except AscError as err:
        st.session_state["study_error"] = str(err)
    else:
        st.session_state.pop("study_error", None)


if st.session_state.get("study_error"):
    st.error(st.session_state["study_error"])

if state.step == "consent":
    st.markdown(definition.consent)
    if st.button("I agree and want to take part", type="primary", key="study_consent"):
        submit(store.consent, state.code)
        st.rerun()
elif state.step == "background":
    st.subheader("About you")
    with st.form("background"):
        answers = {}
        for q in definition.background:
            label = q.text if q.required else ui_study.optional_label(q.text)
            if q.choices:
                answers[q.id] = st.radio(label, q.choices, index=None, key=f"bg_{q.id}")
            else:
                answers[q.id] = st.text_input(label, key=f"bg_{q.id}")
        personal = {}
        if definition.collect_personal_data:
            for q in definition.personal_fields:
                personal[q.id] = st.text_input(q.text if q.required else ui_study.optional_label(q.text),
                                               key=f"pd_{q.id}")
        if st.form_submit_button("Continue", type="primary"):
            submit(store.save_background, state.code, answers, personal or None)
            st.rerun()
elif state.step == "sample":
    sample = frozen.sample(state.next_sample)
    view = state.view
    st.subheader(f"Sample {len(state.answered) + 1} of {total}")
    st.markdown("An incomplete method (the prompt) and the model's completion:")
    st.code(sample.prompt, language=definition.language)
    st.code(sample.text, language=definition.language)
    ex, n_prompt = frozen_explanation(sample)
    if view == "sequence":
        st.markdown("Each token of the completion is colored by the model's confidence (red: low, blue: high):")
        st.html(sequence_html(ex, n_prompt=n_prompt))
    elif view in TREE_VIEWS:
        st.markdown("The code's syntax tree, each node colored by the model's confidence (red: low, blue: high):")
        fig = tree_figure(ex, tree_view(view), max_width=charts.STUDY_PX)
        charts.panel_chart(st, fig, "study_tree", "treebox_study", charts.STUDY_PX, config={"displaylogo": False})
    with st.form(f"ratings_{sample.id}"):
        answers = {}
        for q in definition.ratings:
            choice = st.radio(q.text, range(1, 6), index=None, horizontal=True, key=f"r_{sample.id}_{q.id}",
                              format_func=partial(ui_study.rating_label, q.labels))
            answers[q.id] = choice
        if definition.comment is not None:
            answers[definition.comment.id] = st.text_area(ui_study.optional_label(definition.comment.text),
                                                          key=f"c_{sample.id}")
        if st.form_submit_button("Submit and continue", type="primary"):
            submit(store.save_ratings, state.code, sample.id, answers)
            st.rerun()
else:
    st.success(definition.thanks)
    st.caption(f"Your answers are saved under the code {state.code}.")
