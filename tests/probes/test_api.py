"""The curated public API of probes (probes/__init__.py): complete, and light to import."""

import importlib
import pkgutil

import pytest

from tests.helpers import heavy_modules_after_import


def test_probes_api_is_light_and_complete():
    import probes

    assert not [name for name in probes.__all__ if not hasattr(probes, name)]
    assert heavy_modules_after_import("probes", ("torch", "transformers", "streamlit", "plotly", "sklearn")) == ""


@pytest.mark.parametrize("family", ["inspect", "codesyntax", "gluecode", "blanca"])
def test_each_probe_family_has_a_curated_light_api(family):
    """probes.<family> names its public API in __all__: names its modules export, none missing, nothing heavy."""
    package = importlib.import_module(f"probes.{family}")
    exported = {name for sub in pkgutil.iter_modules(package.__path__)
                for name in getattr(importlib.import_module(f"probes.{family}.{sub.name}"), "__all__", ())}
    assert package.__doc__ and package.__all__, f"probes.{family}: give it a docstring and an __all__"
    assert not [name for name in package.__all__ if not hasattr(package, name)]
    assert set(package.__all__) <= exported  # curated from its modules' public names
    assert heavy_modules_after_import(f"probes.{family}", ("torch", "transformers", "streamlit")) == ""
