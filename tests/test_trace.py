"""`trace_distance`: a JSON-serialisable per-iteration record of GJK that agrees with `distance`."""

import json

import jax.numpy as jnp
import numpy as np
import pytest

import jaxgjk as jg
from jaxgjk._trace import trace_distance


def polytope_capsule(separation):
    points = np.random.default_rng(7).normal(size=(40, 3))
    pose_b = jg.Pose(jnp.asarray([separation, 0.5, 0.2]), jnp.asarray([0.9, 0.1, 0.2, 0.3]))
    return (jg.Polytope.from_points(points), jg.Pose.identity(),
            jg.Capsule(jnp.asarray(0.3), jnp.asarray(0.5)), pose_b)


def ellipsoid_box():
    pose_a = jg.Pose(jnp.asarray([0.1, -0.2, 0.3]), jnp.asarray([0.8, -0.3, 0.1, 0.5]))
    pose_b = jg.Pose(jnp.asarray([1.6, 0.9, -0.4]), jnp.asarray([0.6, 0.2, -0.7, 0.3]))
    return jg.Ellipsoid(jnp.asarray([0.9, 0.4, 0.6])), pose_a, jg.Box(jnp.asarray([0.5, 0.3, 0.8])), pose_b


CASES = {"separated": lambda: polytope_capsule(3.0), "overlapping": lambda: polytope_capsule(0.4),
         "curved": ellipsoid_box}
_TRACES = {}


def traced(name):
    if name not in _TRACES:
        _TRACES[name] = trace_distance(*CASES[name]())
    return _TRACES[name]


@pytest.mark.parametrize("name", sorted(CASES))
def test_json_round_trip(name):
    trace = traced(name)
    assert json.loads(json.dumps(trace, allow_nan=False)) == trace


@pytest.mark.parametrize("name", sorted(CASES))
def test_bounds_bracket_the_final_distance(name):
    trace = traced(name)
    final = trace["result"]["distance"]
    entries = trace["iterations"]
    assert len(entries) == trace["result"]["iterations"] >= 1
    lower = np.array([entry["lower_bound"] for entry in entries])
    upper = np.array([entry["upper_bound"] for entry in entries])
    tol = 1e-9
    assert np.all(lower <= final + tol) and np.all(final <= upper + tol)
    assert np.all(np.diff(upper) <= 0) and np.all(np.diff(lower) >= 0)


@pytest.mark.parametrize("name", sorted(CASES))
def test_entries_are_consistent(name):
    entries = traced(name)["iterations"]
    for k, entry in enumerate(entries, start=1):
        assert entry["iteration"] == k
        simplex = entry["simplex"]
        mask = np.array(simplex["mask"])
        assert entry["simplex_size"] == mask.sum()
        assert entry["feature"] == ("vertex", "edge", "face", "tetrahedron")[mask.sum() - 1]
        closest = np.array(simplex["weights"]) @ np.array(simplex["points"])
        np.testing.assert_allclose(closest, entry["closest"], atol=1e-12)
        np.testing.assert_allclose(entry["closest_norm"], np.linalg.norm(entry["closest"]))
        if k > 1:  # GJK searches along -v of the previous iteration, scaled by a power of two
            direction, previous = np.array(entry["direction"]), -np.array(entries[k - 2]["closest"])
            np.testing.assert_array_equal(direction / np.max(np.abs(direction)),
                                          previous / np.max(np.abs(previous)))
        if entry["accepted"] and k > 1:
            assert any(np.array_equal(point, entry["support"])
                       for point, used in zip(simplex["points"], mask, strict=True) if used)
    assert all(entry["status"] == "RUNNING" for entry in entries[:-1])


@pytest.mark.parametrize("name, status", [("separated", "SEPARATED"), ("overlapping", "INTERSECTING"),
                                          ("curved", "SEPARATED")])
def test_last_entry_matches_distance(name, status):
    trace = traced(name)
    last = trace["iterations"][-1]
    assert last["status"] == trace["result"]["status"] == status
    # The trace is GJK's: its last |v| is `distance` without the normal refinement, which a curved pair's
    # result has (that one is bracketed by the bounds, `test_bounds_bracket_the_final_distance`).
    # The trace and `distance` are two compilations of GJK: on the polytope pairs they agree to the
    # bit; on the curved pair both run to GJK's rounding floor, where they may part by ~1e-11 of the
    # distance (8e-12 measured with jaxlib 0.10.2, its last |v| just below its lower bound).
    unrefined = jg.distance(*CASES[name](), config=jg.Config(refine_normal=False))
    np.testing.assert_allclose(last["upper_bound"], float(unrefined.distance),
                               rtol=1e-10 if name == "curved" else 1e-12, atol=1e-12)
    if name != "curved":
        np.testing.assert_allclose(last["upper_bound"], trace["result"]["distance"], rtol=1e-12, atol=1e-12)
    if name == "separated":  # the recorded result is `jg.distance`'s
        result = jg.distance(*CASES[name]())
        np.testing.assert_allclose(trace["result"]["distance"], float(result.distance), rtol=1e-12)
        assert trace["result"]["iterations"] == int(result.iterations)
        np.testing.assert_allclose(trace["result"]["point_a"], np.asarray(result.point_a), atol=1e-12)


def test_invalid_input_gives_no_iterations():
    a, pose_a, b, pose_b = polytope_capsule(3.0)
    trace = trace_distance(a, pose_a, b, jg.Pose(pose_b.translation * jnp.nan, pose_b.rotation))
    assert trace["iterations"] == []
    assert trace["result"]["status"] == "INVALID_INPUT"
    json.dumps(trace, allow_nan=False)
