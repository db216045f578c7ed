"""The curated public API of probes (probes/__init__.py): complete, and light to import."""

from tests.helpers import heavy_modules_after_import


def test_probes_api_is_light_and_complete():
    import probes

    assert not [name for name in probes.__all__ if not hasattr(probes, name)]
    assert heavy_modules_after_import("probes", ("torch", "transformers", "streamlit", "plotly", "sklearn")) == ""
