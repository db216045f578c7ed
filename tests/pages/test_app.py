"""app.py, the router: the sidebar's shared settings and the default page."""

from streamlit.testing.v1 import AppTest

from tests.pages.helpers import APP, TINY


def test_router_renders_sidebar_and_inspector(monkeypatch):
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception
    assert [w.key for w in at.sidebar.selectbox] == ["model_choice", "language", "aggregate", "device", "dtype"]
    assert at.sidebar.selectbox[0].value == "tiny-random"
    assert at.session_state["settings"] == TINY
    assert any(t.value == "Completion inspector" for t in at.title)


def test_inspector_is_served_at_its_own_address(monkeypatch):
    """/inspector opens the inspector: Streamlit serves its default page at / only (its url_path then answered
    "Page not found"), so the default is a hidden page that switches to the inspector (url_path "inspector")."""
    import streamlit as st

    registered = []
    navigation = st.navigation

    def recording(pages, **kwargs):
        registered.append(list(pages))
        return navigation(pages, **kwargs)

    monkeypatch.setattr(st, "navigation", recording)
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()  # "/": the hidden default page switches to the inspector
    assert not at.exception
    assert any(t.value == "Completion inspector" for t in at.title)
    pages = registered[-1]
    (home,) = [p for p in pages if p.url_path == ""]
    assert home.visibility == "hidden"
    assert next(p for p in pages if p.title == "Completion inspector").url_path == "inspector"
    assert [p.title for p in pages if p.visibility == "visible"] == [  # the sidebar's order
        "Completion inspector", "Compare models", "Global AsC-Eval", "Causal effects", "Layer heatmaps",
        "Attention maps", "Syntax features", "Benchmark tasks (glueCode)", "Text about code (BLANCA)", "User study", "Study results"]
    at.switch_page("pages/inspect.py").run()
    assert not at.exception and any(t.value == "Completion inspector" for t in at.title)
