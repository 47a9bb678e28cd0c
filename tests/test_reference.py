"""Self-consistency of the float64 NumPy/SciPy reference, `jaxgjk.reference`.

The three routes (hull of the Minkowski difference, minimum of its support function over the sphere,
closed forms) are checked against each other and against hand-derived exact cases. jaxgjk is only
used to build shape and pose objects.
"""

import subprocess
import sys

import jax
import numpy as np
import pytest

import jaxgjk as jg
from jaxgjk.reference import (
    capsule_capsule,
    capsule_endpoints,
    closest_point_triangles,
    point_box,
    segment_segment_distance,
    shape_halfspace,
    signed_distance_hull,
    signed_distance_polytopes,
    signed_distance_smooth,
    sphere_box,
    sphere_capsule,
    sphere_sphere,
    support_function,
    support_point,
)

EX = np.array([1.0, 0.0, 0.0])
IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])


def f64(*values):
    """A float64 array: 0-d for one value (a shape's scalar field), else 1-d."""
    return np.array(values[0] if len(values) == 1 else values, np.float64)


def random_quaternion(rng):
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def pose(translation, rotation=IDENTITY):
    return jg.Pose(np.asarray(translation, np.float64), np.asarray(rotation, np.float64))


def random_pose(rng, spread):
    return pose(rng.normal(size=3) * spread, random_quaternion(rng))


def matrix(rotation):
    w, x, y, z = rotation
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def box_corners(half):
    signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    return signs * np.asarray(half, np.float64)


def all_shapes():
    """One of every kind, the composite ones built from the others."""
    box = jg.Box(f64(0.5, 0.8, 0.3))
    vertices = np.random.default_rng(7).normal(size=(9, 3))
    mask = np.array([True] * 7 + [False] * 2)
    linear = np.array([[1.0, 0.2, 0.0], [0.1, 0.7, 0.3], [0.0, -0.2, 1.2]])
    return {
        "sphere": jg.Sphere(f64(0.7)),
        "capsule": jg.Capsule(f64(0.3), f64(0.6)),
        "box": box,
        "cylinder": jg.Cylinder(f64(0.4), f64(0.9)),
        "cone": jg.Cone(f64(0.6), f64(0.5)),
        "ellipsoid": jg.Ellipsoid(f64(0.3, 0.9, 0.5)),
        "polytope": jg.Polytope(vertices, mask),
        "affine": jg.Affine(jg.Cylinder(f64(0.4), f64(0.9)), linear, f64(0.1, -0.2, 0.3)),
        "minkowski": jg.MinkowskiSum(box, jg.Ellipsoid(f64(0.2, 0.1, 0.3))),
        "rounded": jg.Rounded(jg.Cone(f64(0.6), f64(0.5)), f64(0.15)),
        "hull": jg.ConvexHull((jg.Sphere(f64(0.4)), jg.Affine(box, np.eye(3), f64(1.0, 0, 0)))),
    }


def boundary_samples(name, shape, num=400):
    """Points (local) of the shape, densely on the part of its boundary that carries the support."""
    rng = np.random.default_rng(3)
    sphere = rng.normal(size=(num, 3))
    sphere /= np.linalg.norm(sphere, axis=1, keepdims=True)
    angle = np.linspace(0, 2 * np.pi, num, endpoint=False)
    circle = np.stack([np.cos(angle), np.sin(angle), np.zeros(num)], axis=1)
    if name == "sphere":
        return 0.7 * sphere
    if name == "capsule":
        return np.concatenate([0.3 * sphere + [0, 0, 0.6], 0.3 * sphere - [0, 0, 0.6]])
    if name == "cylinder":
        return np.concatenate([0.4 * circle + [0, 0, 0.9], 0.4 * circle - [0, 0, 0.9]])
    if name == "cone":
        return np.concatenate([[[0, 0, 0.5]], 0.6 * circle - [0, 0, 0.5]])
    if name == "ellipsoid":
        return f64(0.3, 0.9, 0.5) * sphere
    raise KeyError(name)


# -------------------------------------------------------------------------------------------------
# Support functions and support points
# -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(all_shapes()))
def test_support_point_attains_support_function(name):
    """u·s(u) = h(u), and h(u) ≥ u·s(v) for every other direction v (s(v) lies in the shape)."""
    rng = np.random.default_rng(0)
    shape = all_shapes()[name]
    pose_ = random_pose(rng, 1.0)
    directions = rng.normal(size=(300, 3))
    values = support_function(shape, pose_, directions)
    points = support_point(shape, pose_, directions)
    scale = 1 + np.abs(values).max()
    np.testing.assert_allclose(np.sum(points * directions, axis=1), values, atol=1e-12 * scale)
    assert np.all(directions @ points.T <= values[:, None] + 1e-12 * scale)
    # Single direction and positive homogeneity.
    assert support_function(shape, pose_, 2.5 * directions[0]) == pytest.approx(2.5 * values[0])
    assert support_point(shape, pose_, directions[0]).shape == (3,)


@pytest.mark.parametrize("name", ["sphere", "capsule", "cylinder", "cone", "ellipsoid"])
def test_curved_support_functions_match_dense_samples(name):
    """Closed forms against the maximum over dense boundary samples (an inner approximation)."""
    rng = np.random.default_rng(1)
    shape = all_shapes()[name]
    rotation = random_quaternion(rng)
    translation = rng.normal(size=3)
    directions = rng.normal(size=(200, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    world = boundary_samples(name, shape, 4000) @ matrix(rotation).T + translation
    sampled = np.max(directions @ world.T, axis=1)
    exact = support_function(shape, pose(translation, rotation), directions)
    assert np.all(sampled <= exact + 1e-12)
    assert np.all(exact - sampled < 0.02)  # sampling gap of 4000 random points / 2000 rim points


def test_composite_support_functions_match_polytopes():
    """Affine, MinkowskiSum, ConvexHull and Rounded of boxes against explicit vertex sets."""
    rng = np.random.default_rng(2)
    half_a, half_b = f64(0.5, 0.2, 0.9), f64(0.3, 0.6, 0.1)
    box_a, box_b = jg.Box(half_a), jg.Box(half_b)
    linear, offset = rng.normal(size=(3, 3)), rng.normal(size=3)
    corners_a, corners_b = box_corners(half_a), box_corners(half_b)
    cases = [
        (jg.Affine(box_a, linear, offset), corners_a @ linear.T + offset),
        (jg.MinkowskiSum(box_a, box_b), (corners_a[:, None] + corners_b[None]).reshape(-1, 3)),
        (
            jg.ConvexHull((box_a, jg.Affine(box_b, np.eye(3), offset))),
            np.concatenate([corners_a, corners_b + offset]),
        ),
    ]
    pose_ = random_pose(rng, 1.0)
    directions = rng.normal(size=(100, 3))
    for shape, vertices in cases:
        expected = support_function(jg.Polytope(vertices), pose_, directions)
        np.testing.assert_allclose(support_function(shape, pose_, directions), expected, atol=1e-12)
    rounded = jg.Rounded(box_a, f64(0.25))
    np.testing.assert_allclose(
        support_function(rounded, pose_, directions),
        support_function(box_a, pose_, directions) + 0.25 * np.linalg.norm(directions, axis=1),
        atol=1e-12,
    )


# -------------------------------------------------------------------------------------------------
# Closed forms
# -------------------------------------------------------------------------------------------------


def test_closest_point_triangles_regions_and_degenerate():
    triangle = np.array([[[0.0, 0, 0], [1, 0, 0], [0, 1, 0]]])
    cases = {  # point → closest point: face, edges, vertices
        (0.2, 0.2, 1.0): (0.2, 0.2, 0.0),
        (0.5, -1.0, 0.3): (0.5, 0.0, 0.0),
        (1.0, 1.0, 0.0): (0.5, 0.5, 0.0),
        (-1.0, -1.0, 2.0): (0.0, 0.0, 0.0),
        (3.0, -0.5, 0.0): (1.0, 0.0, 0.0),
    }
    for point, expected in cases.items():
        closest, weights = closest_point_triangles(np.array(point), triangle)
        np.testing.assert_allclose(closest[0], expected, atol=1e-15)
        np.testing.assert_allclose(weights[0] @ triangle[0], closest[0], atol=1e-15)
    needle = np.array([[[0.0, 0, 0], [1, 0, 0], [2, 0, 0]], [[1.0, 1, 1]] * 3])
    closest, _ = closest_point_triangles(np.array([1.5, 2.0, 0.0]), needle)
    np.testing.assert_allclose(closest, [[1.5, 0, 0], [1, 1, 1]], atol=1e-15)


def test_segment_segment_distance_special_cases():
    # Skew, closest points interior.
    d, p, q = segment_segment_distance(f64(-1, 0, 0), f64(1, 0, 0), f64(0.3, -1, 2), f64(0.3, 1, 2))
    assert d == pytest.approx(2.0, abs=1e-15)
    np.testing.assert_allclose(p, [0.3, 0, 0], atol=1e-15)
    np.testing.assert_allclose(q, [0.3, 0, 2], atol=1e-15)
    # Parallel, overlapping.
    d, _, _ = segment_segment_distance(f64(0, 0, 0), f64(2, 0, 0), f64(1, 0.5, 0), f64(3, 0.5, 0))
    assert d == pytest.approx(0.5, abs=1e-15)
    # Parallel, collinear and disjoint.
    d, p, q = segment_segment_distance(f64(0, 0, 0), f64(1, 0, 0), f64(3, 0, 0), f64(2, 0, 0))
    assert d == pytest.approx(1.0, abs=1e-15)
    np.testing.assert_allclose([p, q], [[1, 0, 0], [2, 0, 0]], atol=1e-15)
    # Degenerate segments (points).
    d, _, _ = segment_segment_distance(f64(1, 1, 1), f64(1, 1, 1), f64(0, 0, 0), f64(0, 0, 2))
    assert d == pytest.approx(np.sqrt(2), abs=1e-15)
    d, _, _ = segment_segment_distance(f64(1, 1, 1), f64(1, 1, 1), f64(1, 1, 2), f64(1, 1, 2))
    assert d == pytest.approx(1.0, abs=1e-15)
    # Crossing.
    d, _, _ = segment_segment_distance(f64(-1, 0, 0), f64(1, 0, 0), f64(0, -1, 0), f64(0, 1, 0))
    assert d == 0.0
    # Nearly parallel: against dense sampling of both segments.
    p0, p1, q0, q1 = f64(0, 0, 0), f64(4, 0, 0), f64(1, 0.3, 1e-9), f64(5, 0.3 + 1e-10, 0)
    s = np.linspace(0, 1, 801)[:, None]
    sampled = np.min(
        np.linalg.norm((p0 + s * (p1 - p0))[:, None] - (q0 + s * (q1 - q0))[None], axis=-1)
    )
    d, _, _ = segment_segment_distance(p0, p1, q0, q1)
    assert d <= sampled + 1e-15 and d == pytest.approx(0.3, abs=1e-9)


def test_point_box():
    half = f64(1.0, 2.0, 3.0)
    assert point_box(f64(2, 0, 0), half) == pytest.approx(1.0)
    assert point_box(f64(2, 3, 4), half) == pytest.approx(np.sqrt(3.0))
    assert point_box(f64(0.5, 0, 0), half) == pytest.approx(-0.5)
    assert point_box(f64(0, 1.8, 0), half) == pytest.approx(-0.2)
    assert point_box(f64(1, 0, 0), half) == 0.0


def test_known_box_box_cases():
    """Unit boxes face to face: gap 0.1 → 0.1; overlap 0.3 → −0.3; normal ±x from A to B."""
    box = jg.Box(f64(1, 1, 1))
    rng = np.random.default_rng(4)
    common = random_quaternion(rng)
    rot = matrix(common)
    for offset, expected in ((2.1, 0.1), (1.7, -0.3), (-2.1, 0.1), (-1.7, -0.3)):
        expected_normal = np.sign(offset) * EX
        for q, r in ((IDENTITY, np.eye(3)), (common, rot)):  # also the whole scene rotated
            pa, pb = pose(np.zeros(3), q), pose(r @ (offset * EX), q)
            for method in (signed_distance_polytopes, signed_distance_smooth):
                result = method(box, pa, box, pb)
                assert result["distance"] == pytest.approx(expected, abs=1e-12)
                np.testing.assert_allclose(result["normal"], r @ expected_normal, atol=1e-9)
                gap = result["point_b"] - result["point_a"]
                assert gap @ result["normal"] == pytest.approx(expected, abs=1e-12)


def test_hull_point_on_difference_and_witnesses():
    rng = np.random.default_rng(5)
    for spread in (0.3, 3.0):
        a = rng.normal(size=(10, 3))
        b = rng.normal(size=(12, 3)) + rng.normal(size=3) * spread
        result = signed_distance_hull(a, b)
        np.testing.assert_allclose(
            result["point_on_difference"], result["distance"] * result["normal"], atol=1e-14
        )
        n = result["normal"]
        # Supporting-plane certificate of the witnesses.
        assert result["point_a"] @ n == pytest.approx(np.max(a @ n), abs=1e-12)
        assert result["point_b"] @ n == pytest.approx(np.min(b @ n), abs=1e-12)
        assert (result["point_b"] - result["point_a"]) @ n == pytest.approx(result["distance"])


# -------------------------------------------------------------------------------------------------
# Hull method against the support-function method
# -------------------------------------------------------------------------------------------------


def random_polytope_pair(rng, kind, spread):
    if kind == "box":
        return jg.Box(rng.uniform(0.2, 1.5, 3)), jg.Box(rng.uniform(0.2, 1.5, 3))
    return (
        jg.Polytope(rng.normal(size=(int(rng.integers(4, 15)), 3))),
        jg.Polytope(rng.normal(size=(int(rng.integers(4, 15)), 3)) * rng.uniform(0.3, 1.5)),
    )


@pytest.mark.parametrize("kind", ["box", "polytope"])
def test_hull_matches_smooth(kind):
    rng = np.random.default_rng(6)
    signs = set()
    for trial in range(12):
        shape_a, shape_b = random_polytope_pair(rng, kind, 0)
        pa, pb = random_pose(rng, 0.3), random_pose(rng, 0.6 if trial % 2 else 2.5)
        hull = signed_distance_polytopes(shape_a, pa, shape_b, pb)
        smooth = signed_distance_smooth(shape_a, pa, shape_b, pb, samples=2000)
        assert smooth["distance"] == pytest.approx(hull["distance"], abs=1e-7)
        signs.add(np.sign(hull["distance"]))
        # The smooth normal is exact where the minimiser is unique; check h_D there instead.
        n = smooth["normal"]
        h_d = support_function(shape_b, pb, -n) + support_function(shape_a, pa, n)
        assert -h_d == pytest.approx(hull["distance"], abs=1e-7)
        n = hull["normal"]
        h_d = support_function(shape_b, pb, -n) + support_function(shape_a, pa, n)
        assert -h_d == pytest.approx(hull["distance"], abs=1e-12)
    assert signs == {-1.0, 1.0}


def test_rounded_and_composite_polytopes_hull_matches_smooth():
    rng = np.random.default_rng(8)
    rounded = jg.Rounded(jg.Box(f64(0.4, 0.3, 0.6)), f64(0.2))
    linear = np.eye(3) + 0.3 * rng.normal(size=(3, 3))
    affine = jg.Affine(jg.Polytope(rng.normal(size=(8, 3))), linear, f64(0.1, 0, 0))
    minkowski = jg.MinkowskiSum(jg.Box(f64(0.2, 0.5, 0.1)), jg.Capsule(f64(0.1), f64(0.3)))
    for shape_a, shape_b in ((rounded, affine), (minkowski, rounded), (affine, minkowski)):
        for spread in (0.4, 2.5):
            pa, pb = random_pose(rng, 0.2), random_pose(rng, spread)
            hull = signed_distance_polytopes(shape_a, pa, shape_b, pb)
            smooth = signed_distance_smooth(shape_a, pa, shape_b, pb, samples=2000)
            assert smooth["distance"] == pytest.approx(hull["distance"], abs=1e-7)


# -------------------------------------------------------------------------------------------------
# Closed forms against the hull and smooth methods
# -------------------------------------------------------------------------------------------------


def test_sphere_sphere():
    rng = np.random.default_rng(9)
    for spread in (0.3, 0.8, 3.0):
        ra, rb = rng.uniform(0.2, 1.0, 2)
        ca, cb = rng.normal(size=3), rng.normal(size=3) * spread
        closed = sphere_sphere(ca, ra, cb, rb)
        args = (
            jg.Sphere(f64(ra)),
            random_pose_at(rng, ca),
            jg.Sphere(f64(rb)),
            random_pose_at(rng, cb),
        )
        for method in (signed_distance_polytopes, signed_distance_smooth):
            result = method(*args)
            assert result["distance"] == pytest.approx(closed["distance"], abs=1e-8)
            np.testing.assert_allclose(result["normal"], closed["normal"], atol=1e-6)


def random_pose_at(rng, translation):
    return pose(translation, random_quaternion(rng))


def test_sphere_box():
    rng = np.random.default_rng(10)
    half = f64(0.6, 0.4, 0.9)
    box = jg.Box(half)
    for spread in (0.2, 0.7, 2.0, 2.0):
        pb = random_pose(rng, 0.5)
        center, radius = rng.normal(size=3) * spread, rng.uniform(0.1, 0.6)
        closed = sphere_box(center, radius, half, pb)
        ball = jg.Sphere(f64(radius))
        for method in (signed_distance_polytopes, signed_distance_smooth):
            result = method(ball, random_pose_at(rng, center), box, pb)
            assert result["distance"] == pytest.approx(closed["distance"], abs=1e-8)
            np.testing.assert_allclose(result["normal"], closed["normal"], atol=1e-6)


def capsule_cases(rng):
    """(capsule A, pose A, capsule B, pose B): random, parallel overlapping, parallel end to end."""
    z_axis = IDENTITY
    cases = []
    for spread in (0.5, 2.0):
        cases.append(
            (
                jg.Capsule(f64(0.3), f64(0.7)),
                random_pose(rng, 0.2),
                jg.Capsule(f64(0.2), f64(0.4)),
                random_pose(rng, spread),
            )
        )
    cases.append(
        (
            jg.Capsule(f64(0.3), f64(1.0)),
            pose(np.zeros(3), z_axis),
            jg.Capsule(f64(0.2), f64(0.5)),
            pose(f64(0.8, 0.1, 0.4), z_axis),
        )
    )  # parallel, separated
    cases.append(
        (
            jg.Capsule(f64(0.3), f64(1.0)),
            pose(np.zeros(3), z_axis),
            jg.Capsule(f64(0.2), f64(0.5)),
            pose(f64(0.2, 0.1, 0.4), z_axis),
        )
    )  # parallel, overlapping
    cases.append(
        (
            jg.Capsule(f64(0.3), f64(1.0)),
            pose(np.zeros(3), z_axis),
            jg.Capsule(f64(0.2), f64(0.5)),
            pose(f64(0, 0, 2.0), z_axis),
        )
    )  # collinear, touching
    about_y = np.array([np.cos(np.pi / 4), 0.0, np.sin(np.pi / 4), 0.0])
    cases.append(
        (
            jg.Capsule(f64(0.3), f64(1.0)),
            pose(np.zeros(3), z_axis),
            jg.Capsule(f64(0.2), f64(0.5)),
            pose(f64(0, 0, 0.3), about_y),
        )
    )  # axes crossing: flat Minkowski difference containing the origin
    return cases


def test_capsule_capsule_and_sphere_capsule():
    rng = np.random.default_rng(11)
    expected = [None, None, np.hypot(0.8, 0.1) - 0.5, np.hypot(0.2, 0.1) - 0.5, 0.0, -0.5]
    for (shape_a, pa, shape_b, pb), exact in zip(capsule_cases(rng), expected, strict=True):
        p0, p1 = capsule_endpoints(shape_a, pa)
        q0, q1 = capsule_endpoints(shape_b, pb)
        closed = capsule_capsule(p0, p1, float(shape_a.radius), q0, q1, float(shape_b.radius))
        if exact is not None:
            assert closed["distance"] == pytest.approx(exact, abs=1e-14)
        for method in (signed_distance_polytopes, signed_distance_smooth):
            result = method(shape_a, pa, shape_b, pb)
            assert result["distance"] == pytest.approx(closed["distance"], abs=1e-8)
            if exact == -0.5:  # crossing axes: the common perpendicular, either sign
                assert abs(result["normal"][1]) == pytest.approx(1.0, abs=1e-6)
        # The sphere at B's centre against capsule A.
        ball = jg.Sphere(shape_b.radius)
        closed = sphere_capsule(
            pb.translation, float(shape_b.radius), p0, p1, float(shape_a.radius)
        )
        for method in (signed_distance_polytopes, signed_distance_smooth):
            result = method(ball, pb, shape_a, pa)
            assert result["distance"] == pytest.approx(closed["distance"], abs=1e-8)


def stacked(items):
    """The pytrees `items` (shapes or poses of one kind) stacked along a new leading axis of rows."""
    return jax.tree_util.tree_map(lambda *leaves: np.stack([np.asarray(leaf) for leaf in leaves]), *items)


def assert_rows_match(rows, singles):
    """Each row of the dict `rows` equals the dict of the single call for that row."""
    for i, single in enumerate(singles):
        for key, value in single.items():
            np.testing.assert_allclose(rows[key][i], value, rtol=0, atol=1e-15, err_msg=f"{key}, row {i}")


def test_closed_forms_take_rows():
    """sphere_sphere, sphere_capsule, capsule_capsule, sphere_box, shape_halfspace and the support
    functions take a leading axis of rows (the benchmarks' vectorised references); every row equals
    its single-pair call, on the capsule cases (parallel, collinear, crossing) and on sphere centres
    coincident with the other's, on a core, inside a box and outside it."""
    rng = np.random.default_rng(12)
    cases = capsule_cases(rng)
    capsules_a, poses_a, capsules_b, poses_b = (stacked(part) for part in zip(*cases, strict=True))
    radii_a, radii_b = np.asarray(capsules_a.radius), np.asarray(capsules_b.radius)
    ends_a, ends_b = capsule_endpoints(capsules_a, poses_a), capsule_endpoints(capsules_b, poses_b)
    single_ends = [(capsule_endpoints(a, pa), capsule_endpoints(b, pb)) for a, pa, b, pb in cases]
    np.testing.assert_allclose(np.stack(ends_a, axis=1), [p for p, _ in single_ends], rtol=0, atol=1e-15)
    pairs = list(zip(single_ends, radii_a, radii_b, strict=True))
    assert_rows_match(capsule_capsule(*ends_a, radii_a, *ends_b, radii_b),
                      [capsule_capsule(*p, ra, *q, rb) for (p, q), ra, rb in pairs])
    centres = np.asarray(poses_b.translation)
    centres[0] = ends_a[0][0]  # on A's core: the normal is perpendicular to it
    singles = [sphere_capsule(c, rb, *p, ra) for c, ((p, _), ra, rb) in zip(centres, pairs, strict=True)]
    assert_rows_match(sphere_capsule(centres, radii_b, *ends_a, radii_a), singles)
    centres_a = np.asarray(poses_a.translation)
    centres[1] = centres_a[1]  # coincident centres: +x
    assert_rows_match(sphere_sphere(centres_a, radii_a, centres, radii_b),
                      [sphere_sphere(*row) for row in zip(centres_a, radii_a, centres, radii_b, strict=True)])

    boxes = [jg.Box(rng.uniform(0.2, 0.9, 3)) for _ in range(8)]
    box_poses = [random_pose(rng, 1.0) for _ in boxes]
    spreads = [0.05, 0.1, 0.2, 0.5, 1, 2, 3, 4]  # centres inside the box, then outside
    centres = np.array([pb.translation + rng.normal(size=3) * spread
                        for pb, spread in zip(box_poses, spreads, strict=True)])
    radii = rng.uniform(0.1, 0.5, len(boxes))
    half = np.asarray(stacked(boxes).half_extents)
    assert_rows_match(sphere_box(centres, radii, half, stacked(box_poses)),
                      [sphere_box(*row) for row in zip(centres, radii, half, box_poses, strict=True)])
    ground = [random_pose(rng, 0.5) for _ in boxes]
    assert_rows_match(shape_halfspace(stacked(boxes), stacked(box_poses), stacked(ground)),
                      [shape_halfspace(*row) for row in zip(boxes, box_poses, ground, strict=True)])
    directions = rng.normal(size=(len(boxes), 3))
    for support in (support_function, support_point):
        np.testing.assert_allclose(support(stacked(boxes), stacked(box_poses), directions),
                                   [support(*row) for row in zip(boxes, box_poses, directions, strict=True)],
                                   rtol=0, atol=1e-15)


def test_shape_halfspace_known_cases():
    """A unit sphere 2 above the plane z = 0.5 (0.5 of it clear); a tilted box sunk to its centre."""
    level = pose(f64(0, 0, 0.5))
    result = shape_halfspace(jg.Sphere(f64(1.0)), pose(f64(3, 1, 2.5)), level)
    assert result["distance"] == pytest.approx(1.0, abs=1e-15)
    np.testing.assert_allclose(result["normal"], [0, 0, -1], atol=1e-15)
    about_x = np.array([np.cos(np.pi / 8), np.sin(np.pi / 8), 0.0, 0.0])  # 45° about x
    result = shape_halfspace(jg.Box(f64(1.0, 1.0, 1.0)), pose(f64(0, 0, 0.5), about_x), level)
    assert result["distance"] == pytest.approx(-np.sqrt(2.0), abs=1e-15)


# -------------------------------------------------------------------------------------------------
# Curved shapes: exact symmetric cases and polygonal bounds
# -------------------------------------------------------------------------------------------------


def test_ellipsoids_with_known_answers():
    rng = np.random.default_rng(12)
    q = random_quaternion(rng)
    r = matrix(q)
    # Spheres written as ellipsoids.
    a, b = jg.Ellipsoid(f64(0.5, 0.5, 0.5)), jg.Ellipsoid(f64(0.8, 0.8, 0.8))
    for center in (f64(1.0, 1.0, 0.5), f64(0.3, 0.4, 0.1)):
        result = signed_distance_smooth(a, pose(np.zeros(3), q), b, pose(center, IDENTITY))
        closed = sphere_sphere(np.zeros(3), 0.5, center, 0.8)
        assert result["distance"] == pytest.approx(closed["distance"], abs=1e-9)
        np.testing.assert_allclose(result["normal"], closed["normal"], atol=1e-6)
    # Axis-aligned along x: A ⊂ {x ≤ 1}, B ⊂ {x ≥ 3}, tips facing → distance 2 (scene rotated).
    a, b = jg.Ellipsoid(f64(1.0, 2.0, 3.0)), jg.Ellipsoid(f64(2.0, 1.0, 1.0))
    for sign in (1.0, -1.0):
        result = signed_distance_smooth(a, pose(np.zeros(3), q), b, pose(r @ (sign * 5 * EX), q))
        assert result["distance"] == pytest.approx(2.0, abs=1e-9)
        np.testing.assert_allclose(result["normal"], r @ (sign * EX), atol=1e-6)
    # Thin discs overlapping by 0.2 along x: h_D(−x) = 0.2 is the minimum (along the discs' plane
    # the overlap is ~3.2), so the depth is 0.2 with normal +x.
    disc = jg.Ellipsoid(f64(0.5, 2.0, 2.0))
    result = signed_distance_smooth(disc, pose(np.zeros(3), q), disc, pose(r @ (0.8 * EX), q))
    assert result["distance"] == pytest.approx(-0.2, abs=1e-9)
    np.testing.assert_allclose(result["normal"], r @ EX, atol=1e-6)


def test_ellipsoids_random_certified_by_witnesses():
    """Separated ellipsoids: −h_D(u*) ≤ distance ≤ |point_b − point_a|, and the bounds meet."""
    rng = np.random.default_rng(14)
    checked = 0
    for _ in range(6):
        a, b = jg.Ellipsoid(rng.uniform(0.2, 1.2, 3)), jg.Ellipsoid(rng.uniform(0.2, 1.2, 3))
        pa, pb = random_pose(rng, 0.1), random_pose(rng, 2.5)
        result = signed_distance_smooth(a, pa, b, pb, samples=1000)
        if result["distance"] <= 0:
            continue
        checked += 1
        gap = np.linalg.norm(result["point_b"] - result["point_a"]) - result["distance"]
        assert -1e-12 <= gap <= 1e-10
        n = result["normal"]
        np.testing.assert_allclose(
            result["point_b"] - result["point_a"], result["distance"] * n, atol=1e-6
        )
    assert checked >= 3


def prism(radius, half_length, sides):
    angle = 2 * np.pi * np.arange(sides) / sides
    ring = np.stack([radius * np.cos(angle), radius * np.sin(angle), np.zeros(sides)], axis=1)
    return np.concatenate([ring + [0, 0, half_length], ring - [0, 0, half_length]])


def pyramid(radius, half_height, sides):
    base = prism(radius, 0.0, sides)[:sides] - [0, 0, half_height]
    return np.concatenate([base, [[0, 0, half_height]]])


def test_cylinder_and_cone_bracketed_by_polygons():
    """Inscribed polygonal approximation P ⊆ C ⊆ P ⊕ ball(δ), δ = r(1 − cos(π/n)).

    So sd(P, B) − δ ≤ sd(C, B) ≤ sd(P, B), with sd(P, B) exact from the hull.
    """
    rng = np.random.default_rng(13)
    sides = 256
    delta = 1.0 - np.cos(np.pi / sides)
    box = jg.Box(f64(0.3, 0.5, 0.4))
    curved = [
        (jg.Cylinder(f64(0.6), f64(0.5)), jg.Polytope(prism(0.6, 0.5, sides)), 0.6 * delta),
        (jg.Cone(f64(0.7), f64(0.6)), jg.Polytope(pyramid(0.7, 0.6, sides)), 0.7 * delta),
    ]
    for shape, polygon, gap in curved:
        for spread in (0.3, 2.0):
            pa, pb = random_pose(rng, 0.2), random_pose(rng, spread)
            exact = signed_distance_polytopes(polygon, pa, box, pb)["distance"]
            smooth = signed_distance_smooth(shape, pa, box, pb, samples=2000)["distance"]
            assert exact - gap - 1e-9 <= smooth <= exact + 1e-9



WITHOUT_SCIPY = """
import sys
import numpy as np
import jaxgjk as jg
print('jaxgjk.reference' in sys.modules, 'scipy' in sys.modules)
sys.modules['scipy'] = None  # from here on, importing SciPy fails
from jaxgjk import reference
at = lambda x: jg.Pose(np.array([x, 0.0, 0.0]), np.array([1.0, 0.0, 0.0, 0.0]))
box, sphere = jg.Box(np.ones(3)), jg.Sphere(np.array(0.5))
print(reference.signed_distance_smooth(box, at(0.0), sphere, at(3.0))['distance'])
try:
    reference.signed_distance_polytopes(box, at(0.0), sphere, at(3.0))
except ImportError as error:
    print(error)
"""


def test_reference_loads_on_request_and_needs_scipy_only_for_hulls():
    """`import jaxgjk` loads neither the oracle nor SciPy (the runtime dependencies are jax, jaxlib and
    numpy); without SciPy the support-function route still works and the hull route names the extra."""
    shown = subprocess.run([sys.executable, "-c", WITHOUT_SCIPY], capture_output=True, text=True, check=True)
    loaded, smooth, error = shown.stdout.splitlines()
    assert loaded.split() == ["False", "False"]
    assert float(smooth) == pytest.approx(1.5, abs=1e-12)
    assert "jaxgjk[reference]" in error


def test_a_stack_of_polytopes_is_refused():
    """The reference reads one polytope at a time (its vertices serve every direction): a stack of them
    raises instead of being read as one polytope with every stacked vertex."""
    vertices = np.random.default_rng(0).normal(size=(2, 6, 3))
    with pytest.raises(ValueError, match="one Polytope at a time"):
        support_function(jg.Polytope(vertices), None, np.eye(3)[:2])
    single = jg.Polytope(vertices[:1])  # a leading axis of one is one polytope
    np.testing.assert_allclose(support_function(single, None, np.eye(3)),
                               np.max(vertices[0], axis=0))
