"""The main job (`python -m jaxgjk`, the README's first command) on small batches: its check against the
float64 reference, a second run that loads the traced program, and a run without flatbuffers."""

import subprocess
import sys

# Runs the job with the modules named in argv[1] (comma-separated) made unimportable.
MAIN_WITHOUT = """
import sys
for name in filter(None, sys.argv[1].split(",")):
    sys.modules[name] = None
from jaxgjk._demo import main
sys.exit(main(sys.argv[2:]))
"""


def run_main(blocked, *arguments):
    arguments = ["--pairs", "96", "--check", "12", "--kinds", "box", "cylinder", "polytope", *arguments]
    run = subprocess.run([sys.executable, "-c", MAIN_WITHOUT, ",".join(blocked), *arguments],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "check: 12 pairs vs the float64 reference (jaxgjk.reference" in run.stdout
    assert run.stdout.rstrip().endswith("PASS")
    return run.stdout


def test_second_run_loads_the_traced_program_and_answers_the_same(tmp_path):
    first = run_main([], "--query", "signed_distance", "--cache-dir", str(tmp_path))
    second = run_main([], "--query", "signed_distance", "--cache-dir", str(tmp_path))
    assert "(traced and saved to the cache)" in first
    assert "(traced program loaded from the cache)" in second
    assert [line for line in first.splitlines() if line.startswith(("status", "check"))][:1] == \
        [line for line in second.splitlines() if line.startswith(("status", "check"))][:1]


def test_intersect_without_flatbuffers_traces_every_run(tmp_path):
    # Without flatbuffers (optional; jax.export serialises with it) the traced program is not saved.
    output = run_main(["flatbuffers"], "--query", "intersect", "--cache-dir", str(tmp_path))
    assert "(traced)" in output
    assert not list(tmp_path.glob("main-job-*"))


def test_the_traced_program_is_kept_per_set_of_kinds():
    # A packed batch's kinds are part of its tree structure, not of its leaves' shapes: a program
    # traced for boxes and spheres must not be loaded for a batch that also holds cylinders.
    import jax

    import jaxgjk as jg
    from jaxgjk._demo import _program_key

    def key(shapes):
        leaves, structure = jax.tree_util.tree_flatten(jg.pack(shapes))
        return _program_key("distance", leaves, structure)

    box = jg.Box(jax.numpy.ones(3))
    assert key([box, jg.Sphere(1.0)]) == key([jg.Sphere(2.0), box])
    assert key([box, jg.Sphere(1.0)]) != key([box, jg.Cylinder(1.0, 1.0)])
