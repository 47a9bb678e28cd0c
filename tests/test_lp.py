"""Tests of the simplex-method intersection and containment tests (`jaxgjk._lp`).

References are independent of the library: the exact signed Euclidean distance between the hulls
(`reference.signed_distance_hull`: Qhull on the Minkowski difference), the exact 1-norm distance
by scipy's HiGHS `linprog`, and half-space tests against `scipy.spatial.ConvexHull`.
float64 comes from tests/conftest.py (x64 on; inputs choose the dtype).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import linprog
from scipy.spatial import ConvexHull

from jaxgjk._lp import LPResult, contains, lp_intersect
from jaxgjk.reference import signed_distance_hull

SQRT3 = np.sqrt(3.0)
NUM = 10  # vertex rows per set in the batched tests
CHUNK = 1000  # pairs per compiled call: with NUM, one compilation per dtype and function


def _lp_one(a, b, mask_a, mask_b, epsilon):
    return lp_intersect(a, b, mask_a=mask_a, mask_b=mask_b, epsilon=epsilon)


def _contains_one(inner, outer, mask_inner, mask_outer, epsilon):
    return contains(inner, outer, mask_inner=mask_inner, mask_outer=mask_outer, epsilon=epsilon)


lp_batch = jax.jit(jax.vmap(_lp_one, in_axes=(0, 0, 0, 0, None)))
contains_batch = jax.jit(jax.vmap(_contains_one, in_axes=(0, 0, 0, 0, None)))


def in_chunks(function, epsilon, *batches):
    """`function(*chunk, epsilon)` over chunks of CHUNK rows (the last padded by repetition)."""
    count = len(batches[0])
    outputs = []
    for start in range(0, count, CHUNK):
        rows = np.arange(start, start + CHUNK).clip(max=count - 1)
        outputs.append(jax.tree.map(np.asarray, function(*(x[rows] for x in batches), epsilon)))
    return jax.tree.map(lambda *xs: np.concatenate(xs)[:count], *outputs)


def all_valid(points):
    return np.ones(points.shape[:2], bool)


def run_lp(a, b, mask_a=None, mask_b=None, epsilon=None):
    """lp_intersect on numpy batches (K, N, 3), (K, M, 3); masks default to all rows valid."""
    mask_a = all_valid(a) if mask_a is None else mask_a
    mask_b = all_valid(b) if mask_b is None else mask_b
    return in_chunks(lp_batch, epsilon, a, b, mask_a, mask_b)


def run_contains(inner, outer, mask_inner, mask_outer):
    """contains on numpy batches (K, N, 3), (K, M, 3) with masks (K, N), (K, M)."""
    return in_chunks(contains_batch, None, inner, outer, mask_inner, mask_outer)


def pad(points, mask=None):
    """(K, 3) points and mask as (NUM, 3), (NUM,) with garbage padding rows masked out."""
    points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    mask = np.ones(len(points), bool) if mask is None else np.asarray(mask)
    padded = np.full((NUM, 3), np.inf)
    padded[: len(points)] = points
    return padded, np.concatenate([mask, np.zeros(NUM - len(points), bool)])


def lp_pair(a, b, epsilon=None):
    """One pair through the shared compiled batch (padded to NUM rows)."""
    (a, mask_a), (b, mask_b) = pad(a), pad(b)
    result = run_lp(a[None], b[None], mask_a[None], mask_b[None], epsilon)
    return jax.tree.map(lambda x: x[0], result)


def contains_pair(inner, outer, mask_inner=None, mask_outer=None):
    """One containment query through the shared compiled batch (padded to NUM rows)."""
    (inner, mask_inner), (outer, mask_outer) = pad(inner, mask_inner), pad(outer, mask_outer)
    return bool(run_contains(inner[None], outer[None], mask_inner[None], mask_outer[None])[0])


def library_scale(a, b, mask_a=None, mask_b=None):
    """The documented scale (K,): largest half-extent of the bounding box of the valid vertices."""
    points = np.concatenate([a, b], axis=1)
    valid = np.concatenate([all_valid(a) if mask_a is None else mask_a,
                            all_valid(b) if mask_b is None else mask_b], axis=1)[..., None]
    low = np.where(valid, points, np.inf).min(axis=1)
    high = np.where(valid, points, -np.inf).max(axis=1)
    with np.errstate(invalid="ignore"):
        half = 0.5 * (high - low).max(axis=1)
    return np.where(np.isfinite(half) & (half > 0), half, 1.0)


def signed_distances(a, b):
    """Exact signed Euclidean distances (K,) of the pairs of hulls (negative: penetration)."""
    return np.array([signed_distance_hull(x, y)["distance"] for x, y in zip(a, b, strict=True)])


def l1_distance(a, b):
    """Exact 1-norm distance min ‖p − q‖₁ between conv(a) and conv(b), by HiGHS."""
    n, m = len(a), len(b)
    cost = np.concatenate([np.zeros(n + m), np.ones(6)])
    equalities = np.zeros((5, n + m + 6))
    equalities[:3, :n] = a.T
    equalities[:3, n : n + m] = -b.T
    equalities[:3, n + m :] = np.concatenate([np.eye(3), -np.eye(3)], axis=1)
    equalities[3, :n] = 1
    equalities[4, n : n + m] = 1
    rhs = np.array([0, 0, 0, 1, 1.0])
    result = linprog(cost, A_eq=equalities, b_eq=rhs, bounds=(0, None), method="highs")
    assert result.status == 0
    return result.fun


def l1_distances(a, b, mask_a=None, mask_b=None):
    mask_a = all_valid(a) if mask_a is None else mask_a
    mask_b = all_valid(b) if mask_b is None else mask_b
    pairs = zip(a, b, mask_a, mask_b, strict=True)
    return np.array([l1_distance(x[mx], y[my]) for x, y, mx, my in pairs])


# ----------------------------------------------------------------------------------------------
# Samplers


def random_pairs(rng, count, num=NUM):
    """Anisotropic Gaussian clouds, B offset so about half the pairs overlap, then every pair
    scaled by 10^U(−3, 3) and translated by up to 10 of its own sizes."""
    a = rng.normal(size=(count, num, 3)) * rng.uniform(0.2, 2.0, size=(count, 1, 3))
    b = rng.normal(size=(count, num, 3)) * rng.uniform(0.2, 2.0, size=(count, 1, 3))
    direction = rng.normal(size=(count, 1, 3))
    direction /= np.linalg.norm(direction, axis=-1, keepdims=True)
    b += direction * rng.uniform(0.0, 6.0, size=(count, 1, 1))
    scale = 10.0 ** rng.uniform(-3, 3, size=(count, 1, 1))
    shift = rng.uniform(-10, 10, size=(count, 1, 3)) * scale
    return a * scale + shift, b * scale + shift


def touching_pairs(rng, count, gap_fraction):
    """Pairs at Euclidean distance `gap_fraction · size` (> 0), or overlapping by about that much.

    Separated (gap > 0): B is translated so that its support vertex along −u sits at A's support
    vertex along u plus gap·u; the slab between the two support planes is empty, so the distance
    is exactly the gap. Overlapping (gap < 0): the same B vertex is placed |gap| inside A, moved
    from A's support vertex towards A's centroid, a point of conv(A) ∩ conv(B).
    Returns (a, b, size) with size (count,) the radius of A.
    """
    a, b = random_pairs(rng, count)
    u = rng.normal(size=(count, 3))
    u /= np.linalg.norm(u, axis=-1, keepdims=True)
    index = np.arange(count)
    a_star = a[index, np.argmax(np.einsum("kni,ki->kn", a, u), axis=1)]
    b_star = b[index, np.argmin(np.einsum("kni,ki->kn", b, u), axis=1)]
    centroid = a.mean(axis=1)
    size = np.linalg.norm(a - centroid[:, None], axis=-1).max(axis=1)
    inward = centroid - a_star
    inward /= np.linalg.norm(inward, axis=-1, keepdims=True)
    gap = gap_fraction * size
    target = np.where(gap[:, None] > 0, a_star + gap[:, None] * u, a_star - gap[:, None] * inward)
    return a, b + (target - b_star)[:, None, :], size


# ----------------------------------------------------------------------------------------------
# Random pairs against the exact distance


@pytest.fixture(scope="module")
def random_batch():
    """4000 random pairs (float64), the library's results, exact signed distances and scales."""
    a, b = random_pairs(np.random.default_rng(20160519), 4000)
    return a, b, run_lp(a, b), signed_distances(a, b), library_scale(a, b)


def test_random_pairs_decide_like_exact_distance(random_batch):
    _, _, result, signed, scale = random_batch
    assert result.converged.all()
    clear = np.abs(signed) > 1e-8 * scale
    assert clear.mean() > 0.99
    np.testing.assert_array_equal(result.intersecting[clear], signed[clear] < 0)
    assert 0.3 < result.intersecting.mean() < 0.7  # both outcomes well represented


def test_random_pairs_bracket_the_euclidean_distance(random_batch):
    _, _, result, signed, scale = random_batch
    distance, slack = np.maximum(signed, 0), 1e-12 * scale
    # Certified lower bound ≤ d₂ ≤ residual (‖p − q‖₁ of actual points) ≤ √3 d₂ at the optimum.
    assert np.all(result.distance_lower_bound <= distance * (1 + 1e-9) + slack)
    assert np.all(result.residual >= distance * (1 - 1e-9) - slack)
    separated = ~result.intersecting
    assert np.all(
        result.residual[separated] <= SQRT3 * distance[separated] * (1 + 1e-9) + slack[separated]
    )
    assert np.all(result.residual[~separated] <= 1e-10 * scale[~separated])


def test_lower_bound_is_at_least_residual_over_sqrt3(random_batch):
    _, _, result, signed, scale = random_batch
    separated = ~result.intersecting
    lower, residual = result.distance_lower_bound[separated], result.residual[separated]
    assert np.all(lower >= residual / SQRT3 * (1 - 1e-9) - 1e-12 * scale[separated])
    direction = result.separating_direction[separated]
    np.testing.assert_allclose(np.linalg.norm(direction, axis=-1), 1, rtol=1e-12)
    assert np.all(result.distance_lower_bound[~separated] == 0)
    # Typically much tighter than 1/√3 (a median ratio near 1 for these clouds).
    assert np.median(lower / signed[separated]) > 0.9


def test_residual_is_the_l1_distance_at_the_optimum(random_batch):
    a, b, result, _, _ = random_batch
    separated = np.flatnonzero(~result.intersecting)[:150]
    reference = l1_distances(a[separated], b[separated])
    np.testing.assert_allclose(result.residual[separated], reference, rtol=1e-7, atol=0)


def test_decision_is_scale_and_translation_invariant(random_batch, rng):
    a, b, result, _, _ = random_batch
    for factor in (1e-3, 1e3):
        shift = rng.normal(size=(len(a), 1, 3)) * factor * 100
        moved = run_lp(a * factor + shift, b * factor + shift)
        np.testing.assert_array_equal(moved.intersecting, result.intersecting)
        np.testing.assert_allclose(
            moved.residual, result.residual * factor, rtol=1e-6, atol=1e-9 * factor
        )


# ----------------------------------------------------------------------------------------------
# Near-touching, degenerate and padded input


def test_touching_pairs_epsilon_decides_as_documented(rng):
    gap_fraction = np.repeat([1e-6, -1e-6], 300)
    a, b, size = touching_pairs(rng, 600, gap_fraction)
    scale = library_scale(a, b)
    separated = gap_fraction > 0
    gap = gap_fraction * size

    result = run_lp(a, b)  # default epsilon 1e-10 relative: resolves a 1e-6 gap
    assert result.converged.all()
    np.testing.assert_array_equal(result.intersecting, ~separated)
    # d₂ = gap exactly for the separated half: the bounds bracket it.
    assert np.all(result.distance_lower_bound[separated] <= gap[separated] * (1 + 1e-6))
    assert np.all(result.residual[separated] >= gap[separated] * (1 - 1e-6))
    assert np.all(result.distance_lower_bound[separated] >= gap[separated] / SQRT3 * (1 - 1e-6))

    # Documented rule: d₂ > ε·scale ⇒ separated; √3·d₂ ≤ ε·scale ⇒ intersecting.
    for epsilon in (1e-7, 1e-4):
        decided = run_lp(a, b, epsilon=epsilon)
        assert decided.intersecting[~separated].all()
        must_separate = separated & (gap > epsilon * scale)
        must_intersect = separated & (SQRT3 * gap <= epsilon * scale)
        assert must_separate.any() or must_intersect.any()
        assert not decided.intersecting[must_separate].any()
        assert decided.intersecting[must_intersect].all()
    assert run_lp(a, b, epsilon=1e-4).intersecting.all()


def test_exactly_touching_lattice_pairs_under_jit(rng):
    """Regression: with integer vertices many start gaps are exactly ±0. Their signs used to be
    decided while building the tableau, and XLA evaluated that decision in several fusions with
    different rounding (FMA), giving rows of inconsistent sign and wrong "optimal" answers
    under jit(vmap) only. Exact touching (distance 0) must count as intersecting."""
    count = 1000
    a = rng.integers(-2, 3, size=(count, NUM, 3)).astype(float)
    b = rng.integers(-2, 3, size=(count, NUM, 3)).astype(float)
    b += np.round(rng.normal(size=(count, 1, 3)) * 2) / 2
    power = 2.0 ** rng.integers(-10, 10, size=(count, 1, 1))  # exact scaling keeps the touching
    a, b = a * power, b * power
    result = run_lp(a, b)
    assert result.converged.all()
    l1 = l1_distances(a, b)
    np.testing.assert_array_equal(result.intersecting, l1 <= 1e-9 * library_scale(a, b))
    separated = ~result.intersecting
    np.testing.assert_allclose(result.residual[separated], l1[separated], rtol=1e-7)


def test_masks_duplicates_and_single_points_match_linprog(rng):
    """Padding with garbage rows, empty sets, single points, duplicate and degenerate hulls."""
    count = 700
    a = np.full((count, NUM, 3), np.nan)
    b = np.full((count, NUM, 3), 1e30)
    mask_a = np.zeros((count, NUM), bool)
    mask_b = np.zeros((count, NUM), bool)
    for k in range(count):
        for points, mask in ((a[k], mask_a[k]), (b[k], mask_b[k])):
            valid = rng.choice(NUM, size=rng.integers(0, NUM + 1) if k % 50 else 0, replace=False)
            # A small pool of distinct points: duplicates, and collinear or flat hulls.
            pool = rng.normal(size=(rng.integers(1, 6), 3)) + rng.uniform(-1, 1, size=3)
            points[valid] = pool[rng.integers(0, len(pool), size=len(valid))]
            mask[valid] = True
        if k % 7 == 0:  # single points against single points
            mask_a[k] = mask_a[k] & (np.cumsum(mask_a[k]) == 1)
            mask_b[k] = mask_b[k] & (np.cumsum(mask_b[k]) == 1)
        if k % 11 == 0 and mask_a[k].any():  # B shares one of A's points
            b[k, 0], mask_b[k, 0] = a[k][mask_a[k]][0], True
    factor = 10.0 ** rng.uniform(-3, 3, size=(count, 1, 1))
    a, b = a * factor, b * factor
    result = run_lp(a, b, mask_a, mask_b)
    assert result.converged.all()

    empty = ~mask_a.any(axis=1) | ~mask_b.any(axis=1)
    assert empty.sum() >= 14
    assert not result.intersecting[empty].any()
    assert np.isinf(result.residual[empty]).all()
    assert np.isinf(result.distance_lower_bound[empty]).all()

    present = ~empty
    l1 = l1_distances(a[present], b[present], mask_a[present], mask_b[present])
    scale = library_scale(a[present], b[present], mask_a[present], mask_b[present])
    expected = l1 <= 1e-9 * scale
    assert 0.1 < expected.mean() < 0.9
    assert not np.any((l1 > 1e-9 * scale) & (l1 < 1e-7 * scale))  # no ambiguous pairs
    np.testing.assert_array_equal(result.intersecting[present], expected)
    residual = result.residual[present][~expected]
    lower = result.distance_lower_bound[present][~expected]
    np.testing.assert_allclose(residual, l1[~expected], rtol=1e-7)
    assert np.all(lower <= residual)
    assert np.all(lower >= l1[~expected] / SQRT3 * (1 - 1e-9))


def test_single_points_are_symmetric_and_exact():
    p = np.array([[0.3, -1.2, 2.0]])
    q = p + np.array([[-1e-3, 2e-3, 0.0]])
    for x, y in ((p, q), (q, p)):
        result = lp_pair(x, y)
        assert not result.intersecting
        np.testing.assert_allclose(result.residual, 3e-3, rtol=1e-9)
        np.testing.assert_allclose(result.distance_lower_bound, np.sqrt(5) * 1e-3, rtol=1e-9)
    assert lp_pair(p, p).intersecting
    assert lp_pair(p, np.repeat(p, 4, axis=0)).intersecting


def test_document_one_sided_residual_is_not_a_distance_bound():
    """The document's P2 (slacks b − Ax ≥ 0) has optimum 1 for K = {0}, L = {(−δ, 0, 0)}, far above
    the distance δ; the two-sided residual used here gives exactly δ."""
    delta = 1e-3
    s, t = np.zeros((1, 3)), np.array([[-delta, 0.0, 0.0]])
    matrix = np.zeros((5, 2))
    matrix[:3, 0], matrix[:3, 1] = s[0], -t[0]
    matrix[3, 0] = matrix[4, 1] = 1
    rhs = np.array([0, 0, 0, 1, 1.0])
    # min eᵀ(b − Ax) = eᵀb − (Aᵀe)ᵀx subject to Ax ≤ b, x ≥ 0.
    document = linprog(-matrix.sum(axis=0), A_ub=matrix, b_ub=rhs, bounds=(0, None), method="highs")
    assert rhs.sum() + document.fun == pytest.approx(1.0)
    result = lp_pair(s, t)
    assert result.residual == pytest.approx(delta, rel=1e-12)
    assert result.distance_lower_bound == pytest.approx(delta, rel=1e-12)
    np.testing.assert_allclose(result.separating_direction, [-1, 0, 0])


# ----------------------------------------------------------------------------------------------
# Containment


def test_contains_matches_hull_equations(rng):
    count = 500
    outer = rng.normal(size=(count, NUM, 3)) * rng.uniform(0.3, 2, size=(count, 1, 3))
    weights = rng.dirichlet(np.full(NUM, 0.3), size=(count, NUM))
    centroid = outer.mean(axis=1, keepdims=True)
    stretch = np.where(
        rng.random((count, 1, 1)) < 0.5, 1.0, rng.uniform(0.8, 1.5, size=(count, 1, 1))
    )
    inner = centroid + stretch * (np.einsum("kin,knj->kij", weights, outer) - centroid)
    inner[::5, 0] = outer[::5, 3]  # a vertex of the outer set, exactly on its hull
    mask_inner = rng.random((count, NUM)) < 0.85
    mask_outer = np.ones((count, NUM), bool)
    mask_outer[::4, -1] = False  # padding row with garbage
    outer[::4, -1] = 1e6
    inner = np.where(mask_inner[..., None], inner, np.nan)
    factor = 10.0 ** rng.uniform(-3, 3, size=(count, 1, 1))
    inner, outer = inner * factor, outer * factor

    result = run_contains(inner, outer, mask_inner, mask_outer)

    scale = library_scale(inner, outer, mask_inner, mask_outer)
    worst = np.full(count, -np.inf)  # max over valid inner points of the outer facet values
    for k in range(count):
        equations = ConvexHull(outer[k][mask_outer[k]]).equations
        points = inner[k][mask_inner[k]]
        if len(points):
            worst[k] = (points @ equations[:, :3].T + equations[:, 3]).max()
    expected, margin = worst <= 1e-12 * scale, np.abs(worst) / scale
    clear = (margin > 1e-8) | (np.arange(count) % 5 == 0) & (margin < 1e-12)
    assert clear.mean() > 0.98
    assert 0.3 < expected.mean() < 0.9
    np.testing.assert_array_equal(result[clear], expected[clear])


def test_contains_degenerate_sets():
    cube = np.array([[x, y, z] for x in (0, 1.0) for y in (0, 1.0) for z in (0, 1.0)])
    none = np.zeros(8, bool)
    assert contains_pair(cube, cube)
    assert contains_pair(cube[:1] * 0.5 + 0.25, cube)
    assert not contains_pair(np.concatenate([cube, [[1.5, 0.5, 0.5]]]), cube)
    assert contains_pair(cube, cube, mask_inner=none)  # the empty set is a subset of anything
    assert not contains_pair(cube, cube, mask_outer=none)
    assert contains_pair(cube, cube, mask_inner=none, mask_outer=none)
    assert contains_pair(cube[[1, 1, 1]], cube[[1]])  # duplicates, single point
    assert not contains_pair(cube[[1, 2]], cube[[1, 1]])
    assert contains_pair(cube * 1e3 + 1e3, cube * 1e3 + 1e3)
    assert jax.jit(contains)(np.zeros((0, 3)), cube)  # a (0, 3) array is the empty set


# ----------------------------------------------------------------------------------------------
# float32, transformations, iteration bound, input validation


def test_float32_pairs(rng):
    a, b = random_pairs(rng, 500)
    a, b = a.astype(np.float32), b.astype(np.float32)
    signed = signed_distances(a.astype(np.float64), b.astype(np.float64))
    scale = library_scale(a.astype(np.float64), b.astype(np.float64))
    result = run_lp(a, b)
    assert result.residual.dtype == np.float32
    assert result.distance_lower_bound.dtype == np.float32
    assert result.converged.all()
    clear = np.abs(signed) > 1e-4 * scale
    assert clear.mean() > 0.95
    np.testing.assert_array_equal(result.intersecting[clear], signed[clear] < 0)
    assert np.all(result.distance_lower_bound <= np.maximum(signed, 0) + 1e-5 * scale)


def test_batches_nest_and_jit(rng):
    a = jnp.asarray(rng.normal(size=(2, 3, 5, 3)))
    b = jnp.asarray(rng.normal(size=(2, 3, 4, 3)) + 1.0)
    nested = jax.jit(jax.vmap(jax.vmap(lp_intersect)))(a, b)
    assert isinstance(nested, LPResult)
    assert nested.intersecting.shape == (2, 3)
    assert nested.separating_direction.shape == (2, 3, 3)
    single = lp_pair(a[1, 2], b[1, 2])  # padded to NUM rows: masked columns never enter
    np.testing.assert_allclose(single.residual, nested.residual[1, 2], rtol=1e-12)
    assert single.iterations == nested.iterations[1, 2]


def test_iteration_bound_is_reported(rng):
    a, b = rng.normal(size=(NUM, 3)), rng.normal(size=(NUM, 3)) + 3.0
    full = lp_pair(a, b)
    assert full.converged and full.iterations > 1
    cut = jax.jit(lambda a, b: lp_intersect(a, b, max_iterations=1))(a, b)
    assert not cut.converged and cut.iterations == 1
    assert not cut.intersecting
    assert cut.distance_lower_bound <= full.residual  # still a valid bound


def _zeros(*shape, dtype=np.float64):
    return np.zeros(shape, dtype)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: lp_intersect(_zeros(4, 2), _zeros(4, 3)), "vertices_a"),
        (lambda: lp_intersect(_zeros(4, 3), _zeros(4, 3, dtype=np.int32)), "vertices_b"),
        (lambda: lp_intersect(_zeros(4, 3), _zeros(3)), "vertices_b"),
        (lambda: lp_intersect(_zeros(4, 3), _zeros(4, 3), mask_a=np.ones(3, bool)), "mask_a"),
        (lambda: lp_intersect(_zeros(4, 3), _zeros(4, 3), mask_b=np.ones(4)), "mask_b"),
        (lambda: contains(_zeros(2, 4), _zeros(4, 3)), "inner_vertices"),
        (lambda: contains(_zeros(2, 3), _zeros(4, 3, dtype=bool)), "outer_vertices"),
        (lambda: contains(_zeros(2, 3), _zeros(4, 3), mask_outer=np.ones(2, bool)), "mask_outer"),
    ],
)
def test_bad_input_raises_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()
