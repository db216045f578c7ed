"""The curated public API of asc (asc/__init__.py): every exported name exists, and importing asc has no
heavy side effects."""

import asc
from tests.helpers import heavy_modules_after_import


def test_all_names_exist():
    missing = [name for name in asc.__all__ if not hasattr(asc, name)]
    assert not missing


def test_import_loads_no_model_library_or_ui():
    assert heavy_modules_after_import("asc", ("torch", "transformers", "streamlit", "plotly", "dowhy")) == ""
