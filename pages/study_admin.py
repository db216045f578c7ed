"""User study, researcher side: prepare the study, follow progress, Table III, distributions, answers, export.

Protected by the password in Streamlit secrets (``study_password``) or ``ASC_STUDY_PASSWORD``; without
the right password the page shows nothing but the password box, whose tries are limited (5 a minute per
client, 30 for everybody: :func:`ui.access.password_gate`). In study mode (``ASC_STUDY_MODE=1``)
it is not in any navigation: participants never see it, researchers open ``/study-results``.
"""

from __future__ import annotations

import ui.preload  # noqa: F401  (first: imports the backend once, in one thread: ui/preload.py)

# isort: split
import streamlit as st

from asc import AscError, csv_text
from asc.study import agreement_table, rating_bars, rating_counts
from asc.viz import figure_html
from ui import access, cache, gate
from ui import study as ui_study

gate.enter(study=True)  # first: the password, the token, the study's pages (ui.gate)

st.title("Study results")
password = ui_study.password()
if not password:
    st.info("Set a researcher password first: `ASC_STUDY_PASSWORD=...` in the environment or `study_password` in "
            ".streamlit/secrets.toml, then restart the app.")
    st.stop()
# constant-time comparison, at most 5 tries a minute per client and 30 for everybody (ui.access)
if not access.password_gate(password, "study", "Researcher password", key="study_pw"):
    st.stop()

try:
    definition, frozen, store = ui_study.study()
    study_path, frozen_path, url = ui_study.study_paths()
except AscError as err:
    st.error(f"The study cannot be opened: {err}")
    st.stop()
st.caption(f"Study `{definition.id}` from {study_path}; answers in {url.split('://')[0]} database "
           f"{url.split('/')[-1]}.")

if frozen is None:
    st.warning("The study is not prepared: the samples without a completion must be completed once, so that every "
               "participant sees the same content.")
    if st.button(f"Prepare with {definition.model}", type="primary", key="study_prepare"):
        from asc.study import prepare_study, save_frozen

        with st.status("Preparing: completing and scoring the samples...") as status:
            try:
                frozen_path.parent.mkdir(parents=True, exist_ok=True)
                save_frozen(prepare_study(definition, cache.get_bundle(definition.model)), frozen_path)
            except AscError as err:
                status.update(label=str(err), state="error")
                st.stop()
            status.update(label="Prepared", state="complete")
        st.rerun()
    st.stop()

progress = store.progress()
responses = store.responses()
st.subheader("Progress per group")
st.dataframe(progress, hide_index=True, width="stretch")

st.subheader("Agreement per group and question (Table III)")
table = agreement_table(responses, definition)
st.dataframe(table, hide_index=True, width="stretch",
             column_config={c: st.column_config.NumberColumn(format="%.0f %%") for c in table.columns
                            if c not in ("group", "group_name", "question", "question_text", "n")})

counts = rating_counts(responses, definition)
if len(counts) and counts["count"].sum() > 0:
    fig = rating_bars(counts)
    st.plotly_chart(fig, key="study_dist")
    st.download_button("Ratings chart (HTML)", lambda: figure_html(fig), f"{definition.id}-ratings.html", "text/html",
                       key="study_dl_fig", on_click="ignore")

st.subheader("Free-text answers")
texts = responses[responses["question_id"].isin(
    [q.id for q in (definition.comment,) if q is not None] + [q.id for q in definition.background if not q.choices])]
texts = texts[texts["value"].notna() & (texts["value"].astype(str).str.strip() != "")]
if texts.empty:
    st.caption("None yet.")
else:
    st.dataframe(texts, hide_index=True, width="stretch")

e1, e2, e3 = st.columns(3)
e1.download_button("All responses (CSV)", lambda: csv_text(responses), f"{definition.id}-responses.csv",
                   "text/csv", key="study_dl_responses", on_click="ignore")
e2.download_button("Participants (CSV)", lambda: csv_text(store.participants()),
                   f"{definition.id}-participants.csv", "text/csv", key="study_dl_participants", on_click="ignore")
e3.download_button("Table III (CSV)", lambda: csv_text(table), f"{definition.id}-table3.csv", "text/csv",
                   key="study_dl_table", on_click="ignore")
