"""The example notebooks (docs/notebooks/): committed without outputs, and each runs top to bottom on a real
Jupyter kernel (nbclient + ipykernel) with the real SmolLM2, a cell that raises failing the test.

The kernel is this test's own: a kernelspec written into a temporary folder named first on ``JUPYTER_PATH``, whose
command is this interpreter (``sys.executable -m ipykernel_launcher``), so nothing is registered on the machine and
no other Python's kernel named ``python3`` is picked up; a first cell the test adds prints the kernel's
``sys.executable`` to check it. The kernel inherits the test process's environment (``HF_HUB_OFFLINE=1`` and the
checkout on ``PYTHONPATH``: tests/conftest.py) and runs in a temporary folder, so a notebook that writes (the corpus
run's folder) writes there, never into the checkout.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "docs" / "notebooks").glob("*.ipynb"))
KERNEL = "asc-test-python"


def _id(path: Path) -> str:
    return path.stem


def test_the_notebooks_are_there():
    assert len(NOTEBOOKS) >= 5, "docs/notebooks/ holds the example notebooks (docs/python.md)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_id)
def test_committed_without_outputs(path):
    """Outputs are stripped in git: no outputs, no execution counts, no widget state."""
    book = nbformat.read(path, as_version=4)
    nbformat.validate(book)
    code = [cell for cell in book.cells if cell.cell_type == "code"]
    assert code
    dirty = [k for k, cell in enumerate(code) if cell.get("outputs") or cell.get("execution_count") is not None]
    assert not dirty, f"{path.name}: code cells {dirty} hold outputs; clear them before committing"
    assert "widgets" not in book.metadata
    assert book.metadata["kernelspec"]["name"] == "python3"


@pytest.fixture
def kernel(tmp_path, monkeypatch) -> str:
    """A kernelspec running this interpreter, found first (JUPYTER_PATH); returns its name."""
    spec = tmp_path / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "AsC Studio tests", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    return KERNEL


@pytest.mark.real
@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=_id)
def test_notebook_runs_on_a_real_kernel(path, kernel, tmp_path):
    from nbclient import NotebookClient
    from nbformat.v4 import new_code_cell

    book = nbformat.read(path, as_version=4)
    book.cells.insert(0, new_code_cell("import sys\nprint(sys.executable)"))
    work = tmp_path / "work"
    work.mkdir()
    NotebookClient(book, kernel_name=kernel, timeout=600, resources={"metadata": {"path": str(work)}}).execute()
    assert book.cells[0].outputs[0]["text"].strip() == sys.executable  # this venv's Python ran it
    code = [cell for cell in book.cells if cell.cell_type == "code"]
    assert all(cell.execution_count is not None for cell in code)
    assert not [out for cell in code for out in cell.outputs if out.get("output_type") == "error"]
