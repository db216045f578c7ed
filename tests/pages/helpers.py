"""What the page tests share: page paths, the settings the router would set, and AppTest lookups.

AppTest in Streamlit 1.67 runs only the page script on reruns of an ``st.navigation`` app, so the
router's sidebar widgets vanish after the first run (the real app keeps them: tests/e2e). Page
tests therefore run the page file with the settings the router would put in session state.
"""

from __future__ import annotations

import base64
import json

import numpy as np

from tests.helpers import ROOT
from ui import widgets

APP = str(ROOT / "app.py")
PAGES = ROOT / "pages"
TINY = widgets.Settings(model="tiny-random", trust_remote_code=False, language="python", aggregate="median")


def page(name: str) -> str:
    """The path of ``pages/<name>.py`` as AppTest wants it."""
    return str(PAGES / f"{name}.py")


def button(at, label):
    """The (first) button labelled ``label``."""
    return next(b for b in at.button if b.label == label)


def _plain(value):
    """A chart spec with plotly's typed arrays (``{"dtype": "i8", "bdata": <base64>}``, how a numpy array is
    sent to the browser) turned into lists, as the browser reads them."""
    if isinstance(value, dict):
        if "bdata" in value and "dtype" in value:
            array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
            shape = value.get("shape")
            if shape:
                array = array.reshape([int(d) for d in str(shape).split(",")] if isinstance(shape, str) else shape)
            return array.tolist()
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def charts(at) -> list[dict]:
    """Every plotly chart of the page as its JSON spec (typed arrays as lists)."""
    return [_plain(json.loads(c.proto.spec)) for c in at.get("plotly_chart")]


def tree_traces(at, view="partial"):
    """The traces (by name) of the page's partial (first) or complete (second) tree chart."""
    trees = [c for c in charts(at) if any(t.get("name") == "edges" for t in c["data"])]
    spec = trees[0 if view == "partial" else 1]
    return {t.get("name"): t for t in spec["data"]}


def inspector(monkeypatch, timeout: float = 120):
    """The inspector page on the tiny model, run once (nothing explained yet)."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    at = AppTest.from_file(page("inspect"), default_timeout=timeout)
    at.session_state["settings"] = TINY
    at.run()
    assert not at.exception
    return at


def dataframe_heights(monkeypatch) -> dict:
    """Record the ``height`` every ``st.dataframe`` of the next runs asks for, by its ``key`` (AppTest's elements do
    not carry their height): returns the dict it fills."""
    import streamlit as st
    from streamlit.elements.arrow import ArrowMixin

    heights: dict = {}
    shown, main = ArrowMixin.dataframe, st.dataframe  # st.dataframe: the main container's, bound at import

    def spy(self, data=None, *args, **kwargs):
        heights[kwargs.get("key")] = kwargs.get("height", "auto")
        return shown(self, data, *args, **kwargs)

    def main_spy(data=None, *args, **kwargs):
        heights[kwargs.get("key")] = kwargs.get("height", "auto")
        return main(data, *args, **kwargs)

    monkeypatch.setattr(ArrowMixin, "dataframe", spy)
    monkeypatch.setattr(st, "dataframe", main_spy)
    return heights
