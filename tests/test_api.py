"""The curated public API: every exported name exists, and importing asc has no heavy side effects."""

import subprocess
import sys
from pathlib import Path

import asc

ROOT = Path(__file__).resolve().parent.parent


def test_all_names_exist():
    missing = [name for name in asc.__all__ if not hasattr(asc, name)]
    assert not missing


def test_import_loads_no_model_library_or_ui():
    code = ("import sys, asc\n"
            "heavy = [m for m in ('torch', 'transformers', 'streamlit', 'plotly', 'dowhy') if m in sys.modules]\n"
            "print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""
