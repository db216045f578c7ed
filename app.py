"""AsC Studio: Streamlit entry point. A router (st.navigation) and the sidebar every page shares.

Run with `make app` (or `.venv/bin/streamlit run app.py`). Set ASC_MODEL to start on another model.
With ASC_STUDY_MODE=1 (`make study`) the app serves a user study: participants get only the study page,
without sidebar or navigation; the password-protected results page stays reachable at /study-results.

Access (``ui.gate``, docs/sharing.md, "Sharing the app"): with ASC_PASSWORD set, every visitor types that password first
(tries are rate-limited); in local mode every visitor presents the server's access token (``make app`` prints
the address with it). The router checks both before it shows anything, and every page checks them again
itself, because Streamlit's legacy ``pages/`` route can run a page without this file.
"""

from __future__ import annotations

import ui.preload  # noqa: F401  (first: imports the backend once, in one thread: ui/preload.py)

# isort: split
import streamlit as st

from asc import study_mode
from ui import gate, widgets

st.set_page_config(page_title="AsC Studio", page_icon=":material/account_tree:", layout="wide")
gate.enter(study=True, router=True)  # the password and the token; nothing of the app (not even its pages' names) before them
widgets.style()
study = st.Page("pages/study.py", title="User study", icon=":material/how_to_reg:", url_path="user-study")
results = st.Page("pages/study_admin.py", title="Study results", icon=":material/lock:", url_path="study-results")
if study_mode():
    st.session_state["settings"] = widgets.default_settings()
    page = st.navigation([study, results], position="hidden")
else:
    st.session_state["settings"] = widgets.sidebar()
    inspector = st.Page("pages/inspect.py", title="Completion inspector", icon=":material/account_tree:",
                        url_path="inspector")

    def home() -> None:
        st.switch_page(inspector, query_params=st.query_params.to_dict())

    # Streamlit serves its default page at "/" only (its url_path then answers "Page not found"): the default is
    # this hidden page, which opens the inspector, so that /inspector is the inspector's own address
    page = st.navigation([
        st.Page(home, title="AsC Studio", url_path="home", default=True, visibility="hidden"),
        inspector,
        st.Page("pages/compare.py", title="Compare models", icon=":material/compare_arrows:", url_path="compare-models"),
        st.Page("pages/global_eval.py", title="Global AsC-Eval", icon=":material/bar_chart:",
                url_path="global-asc-eval"),
        st.Page("pages/causal.py", title="Causal effects", icon=":material/hub:", url_path="causal-effects"),
        st.Page("pages/probing.py", title="Layer heatmaps", icon=":material/stacks:", url_path="layer-heatmaps"),
        st.Page("pages/attention.py", title="Attention maps", icon=":material/grid_on:", url_path="attention-maps"),
        st.Page("pages/sae.py", title="Syntax features", icon=":material/scatter_plot:", url_path="syntax-features"),
        st.Page("pages/gluecode.py", title="Benchmark tasks (glueCode)", icon=":material/checklist:",
                url_path="benchmark-tasks"),
        st.Page("pages/blanca.py", title="Text about code (BLANCA)", icon=":material/menu_book:",
                url_path="text-about-code"),
        study, results,
    ])
    with st.sidebar:
        st.caption("AsC Studio explains code models in terms of syntax: AsC-Eval, AsC-Viz (ASTxplainer), "
                   "layer probes (INSPECT), attention heads (CodeSyntax), SAE latents (syntax features), benchmark tasks (glueCode), text about "
                   "code (BLANCA).")
with gate.routed():  # a page file run outside this was started by the legacy routing (ui.gate)
    page.run()
