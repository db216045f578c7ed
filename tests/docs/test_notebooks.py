"""The example notebooks (docs/notebooks/): committed without outputs, and each runs top to bottom on a real
Jupyter kernel (nbclient + ipykernel) with the real SmolLM2, a cell that raises failing the test.

The kernel is this module's own: a kernelspec written into a temporary folder named first on ``JUPYTER_PATH``, whose
command is this interpreter (``sys.executable -m ipykernel_launcher``), so nothing is registered on the machine and
no other Python's kernel named ``python3`` is picked up; a first cell the test adds prints the kernel's
``sys.executable`` to check it. The kernel inherits the test process's environment (``HF_HUB_OFFLINE=1`` and the
checkout on ``PYTHONPATH``: tests/conftest.py).

One kernel runs the notebooks one after another (a kernel's start and its imports of torch, transformers and the
backend cost seconds of CPU each): the first cell the test adds moves the kernel into the notebook's own temporary
folder (a notebook that writes, the corpus run's folder, writes there, never into the checkout) and ends with
``%reset -f``, so each notebook starts with an empty namespace and must import and load all it uses, as after a
restart. A kernel that died is started again.
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


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    """A kernel running this interpreter (a kernelspec found first on JUPYTER_PATH), shared by the module's
    notebooks: yields ``(manager, client)``."""
    from jupyter_client.manager import KernelManager

    folder = tmp_path_factory.mktemp("jupyter")
    spec = folder / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "AsC Studio tests", "language": "python"}))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_PATH", str(folder))
        km = KernelManager(kernel_name=KERNEL)
        km.start_kernel(cwd=str(folder))
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=120)
        state = {"km": km, "kc": kc}

        def alive() -> tuple:
            if not state["km"].is_alive():  # a notebook killed it: the next one gets a fresh kernel
                state["kc"].stop_channels()
                state["km"].restart_kernel(now=True)
                state["kc"] = state["km"].client()
                state["kc"].start_channels()
                state["kc"].wait_for_ready(timeout=120)
            return state["km"], state["kc"]

        try:
            yield alive
        finally:
            state["kc"].stop_channels()
            state["km"].shutdown_kernel(now=True)


@pytest.mark.real
@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=_id)
def test_notebook_runs_on_a_real_kernel(path, kernel, tmp_path):
    from nbclient import NotebookClient
    from nbformat.v4 import new_code_cell

    book = nbformat.read(path, as_version=4)
    work = tmp_path / "work"
    work.mkdir()
    book.cells.insert(0, new_code_cell(f"import os, sys\nos.chdir({str(work)!r})\nprint(sys.executable, os.getcwd())\n"
                                       "%reset -f"))
    km, kc = kernel()
    client = NotebookClient(book, km=km, kernel_name=KERNEL, timeout=600)
    client.kc = kc  # the module's kernel and client: nbclient neither starts nor stops them
    client.execute()
    assert book.cells[0].outputs[0]["text"].split() == [sys.executable, str(work)]  # this venv's Python, its folder
    code = [cell for cell in book.cells if cell.cell_type == "code"]
    assert all(cell.execution_count is not None for cell in code)
    assert not [out for cell in code for out in cell.outputs if out.get("output_type") == "error"]
