"""GJK distance and intersection against float64 references, over every pair of kinds."""

import functools

import jax
import numpy as np
import pytest

import jaxgjk as jg
from jaxgjk.reference import support_function

from .query_cases import pairs, run_three_queries, tolerance


def all_separated():
    return pairs("separated", 31, 0) + pairs("touching", 6, 1)


def all_penetrating():
    return pairs("penetrating", 6, 2)


@functools.cache
def float64_results():
    """`distance` and `intersect` (float64) of the separated cases, then the penetrating ones."""
    _, unsigned, hits = run_three_queries(all_separated() + all_penetrating(), np.float64)
    return unsigned, hits


def distances(dtype, penetrating=False):
    """`distance` of the separated (or the penetrating) cases."""
    if dtype == np.float32:
        assert not penetrating
        return run_three_queries(all_separated(), dtype)[1]
    count = len(all_separated())
    part = slice(count, None) if penetrating else slice(0, count)
    return jax.tree_util.tree_map(lambda leaf: leaf[part], float64_results()[0])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_separated_pairs_match_reference(dtype):
    cases = all_separated()
    assert len(cases) >= 2000
    result = distances(dtype)
    errors = np.abs(result.distance - np.array([c["ref"]["distance"] for c in cases]))
    allowed = np.array([tolerance(c, dtype) for c in cases])
    worst = np.argmax(errors / allowed)
    assert np.all(errors <= allowed), (cases[worst]["kinds"], errors[worst], allowed[worst])
    # No separated pair is reported touching or given distance 0. float32 resolves gaps down to about
    # 100 eps of the size; the 1e-6·size gaps are below that and may read as touching there.
    resolvable = np.array([dtype == np.float64 or c["ref"]["distance"] > 1e-5 * c["size"]
                           for c in cases])
    assert np.all(result.status[resolvable] == jg.Status.SEPARATED)
    assert np.all(result.distance[resolvable] > 0)


def test_witness_points_certify_the_distance():
    cases = all_separated()
    result = distances(np.float64)
    for index, case in enumerate(cases):
        n, pa, pb = result.normal[index], result.point_a[index], result.point_b[index]
        scale = tolerance(case, np.float64) * 10
        # Supporting planes: A's point maximises n over A, B's point minimises n over B.
        assert abs(n @ pa - support_function(case["shape_a"], case["pose_a"], n)) <= scale
        assert abs(-n @ pb - support_function(case["shape_b"], case["pose_b"], -n)) <= scale
        assert abs(n @ (pb - pa) - result.distance[index]) <= scale
        assert abs(np.linalg.norm(n) - 1) < 1e-12


def test_intersect_agrees_with_reference():
    cases = all_separated() + all_penetrating()
    expected = np.array([c["ref"]["distance"] <= 0 for c in cases])
    np.testing.assert_array_equal(float64_results()[1], expected)


def test_overlapping_pairs_have_distance_zero():
    result = distances(np.float64, penetrating=True)
    np.testing.assert_array_equal(result.distance, 0)
    assert np.all(result.status == jg.Status.INTERSECTING)
