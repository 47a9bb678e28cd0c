"""Run every example notebook top to bottom in quick mode (JAXGJK_QUICK=1).

Needs the `notebooks` extra (matplotlib, nbclient, nbformat, ipykernel); skipped without it. Slow
(tens of seconds per notebook): deselect with ``-m "not notebooks"``.
"""

import os
import pathlib

import pytest

pytestmark = pytest.mark.notebooks

NOTEBOOK_DIR = pathlib.Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))


def test_notebooks_found():
    names = {path.name for path in NOTEBOOKS}
    assert {"01_quickstart.ipynb", "02_trajectory_optimisation.ipynb", "03_robot_arm.ipynb",
            "04_massive_pairs.ipynb"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_notebook_runs(path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("matplotlib")

    notebook = nbformat.read(path, as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), (
        f"{path.name} is committed with outputs: strip them")

    # The kernel inherits this environment: quick sizes, a non-interactive backend, and the checkout
    # importable even when jaxgjk is not installed.
    repo = str(NOTEBOOK_DIR.parent)
    monkeypatch.setenv("JAXGJK_QUICK", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [repo] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    client.execute()
