"""The main job (`python -m jaxgjk`, the README's first command) on small batches, without SciPy."""

import subprocess
import sys

import pytest

# SciPy is blocked: a plain `pip install -e .` has none, and the check must run on the NumPy routes.
MAIN_WITHOUT_SCIPY = """
import sys
sys.modules["scipy"] = None
from jaxgjk._demo import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("query", ["signed_distance", "intersect"])  # the two ways the check reads
def test_main_job_checks_its_sample_against_the_reference_without_scipy(query):
    arguments = ["--pairs", "96", "--check", "12", "--kinds", "box", "cylinder", "polytope", "--query", query,
                 "--no-cache"]
    run = subprocess.run([sys.executable, "-c", MAIN_WITHOUT_SCIPY, *arguments], capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "check: 12 pairs vs the float64 reference (jaxgjk.reference" in run.stdout
    assert run.stdout.rstrip().endswith("PASS")
