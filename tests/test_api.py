"""The curated public API: every exported name exists, and importing asc has no heavy side effects."""

import subprocess
import sys
from pathlib import Path

import asc

ROOT = Path(__file__).resolve().parent.parent


def test_all_names_exist():
    missing = [name for name in asc.__all__ if not hasattr(asc, name)]
    assert not missing


def _heavy_modules_after_import(package: str, heavy: tuple[str, ...]) -> str:
    code = (f"import sys, {package}\n"
            f"print(','.join(m for m in {heavy!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_import_loads_no_model_library_or_ui():
    assert _heavy_modules_after_import("asc", ("torch", "transformers", "streamlit", "plotly", "dowhy")) == ""


def test_probes_api_is_light_and_complete():
    import probes

    assert not [name for name in probes.__all__ if not hasattr(probes, name)]
    assert _heavy_modules_after_import("probes", ("torch", "transformers", "streamlit", "plotly", "sklearn")) == ""
