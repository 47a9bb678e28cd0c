"""Run every example notebook top to bottom in quick mode (JAXGJK_QUICK=1), and check the README shows each
with its picture (notebooks/figures/, written by full-size runs only: quick runs must leave it alone).

Needs the `notebooks` extra (matplotlib, pillow, nbclient, nbformat, ipykernel); skipped without it. Slow
(tens of seconds per notebook): deselect with ``-m "not notebooks"``.
"""

import os
import pathlib

import pytest

pytestmark = pytest.mark.notebooks

NOTEBOOK_DIR = pathlib.Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
FIGURE_DIR = NOTEBOOK_DIR / "figures"  # the README's pictures, one per notebook, from full-size runs
# Packages a notebook needs beyond the `notebooks` extra's basics (skipped without them).
REQUIREMENTS = {"05_panda": ("pybullet", "yourdfpy", "trimesh")}


def test_notebooks_found():
    names = {path.name for path in NOTEBOOKS}
    assert {"01_quickstart.ipynb", "02_trajectory_optimisation.ipynb", "03_robot_arm.ipynb",
            "04_massive_pairs.ipynb", "05_panda.ipynb"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_notebook_runs(path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("matplotlib")
    for requirement in REQUIREMENTS.get(path.stem, ()):
        pytest.importorskip(requirement)

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
    picture = FIGURE_DIR / f"{path.stem}.png"
    before = picture.read_bytes() if picture.exists() else None
    client.execute()
    after = picture.read_bytes() if picture.exists() else None
    assert after == before, f"a quick run of {path.name} rewrote the README's picture {picture.name}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_readme_shows_notebook_and_picture(path):
    picture = FIGURE_DIR / f"{path.stem}.png"
    assert picture.exists(), f"no README picture for {path.name}: run it at full size (JAXGJK_QUICK unset)"
    assert picture.stat().st_size < 60_000, f"{picture.name} is {picture.stat().st_size} bytes: keep it small"
    readme = (NOTEBOOK_DIR.parent / "README.md").read_text()
    assert f"(notebooks/{path.name})" in readme and f"(notebooks/figures/{picture.name})" in readme
