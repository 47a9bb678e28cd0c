"""The normal refinement on curved cores (`jaxgjk._refine`), against an independent reference.

A sphere against an ellipsoid reduces to the closest point of an ellipsoid to the sphere's centre p:
x_i = a_i² p_i / (a_i² + t) with Σ (a_i p_i / (a_i² + t))² = 1, one root t in (−min a_i², ∞) whether p
is outside (t > 0) or inside (t < 0) (Eberly, "Distance from a point to an ellipse, an ellipsoid, or a
hyperellipsoid", 2011). Bisection in float64 gives the normal to rounding, where GJK and EPA alone give it
only to √tolerance (1e-6 and 4e-5 with the float64 defaults).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgjk as jg

from .shape_samples import random_rotation

N_CASES = 16


def _closest_on_ellipsoid(radii, point):
    """Closest point of the ellipsoid surface to `point` (local frame), by bisection on t."""
    def excess(t):
        return np.sum((radii * point / (radii ** 2 + t)) ** 2) - 1

    low, high = -np.min(radii) ** 2, 1.0
    while excess(high) > 0:
        high *= 2
    for _ in range(200):
        middle = (low + high) / 2
        if middle in (low, high):
            break
        low, high = (middle, high) if excess(middle) > 0 else (low, middle)
    t = (low + high) / 2
    return radii ** 2 * point / (radii ** 2 + t)


@functools.cache
def cases(inside):
    """Ellipsoid A at a random pose, sphere B with its centre outside (or inside) A; float64 arrays and
    the reference signed distance and normal (A to B)."""
    rng = np.random.default_rng(7 if inside else 8)
    rows = []
    while len(rows) < N_CASES:
        radii = rng.uniform(0.3, 1.0, 3)
        local = rng.normal(size=3)
        reach = rng.uniform(0.2, 0.8) * np.min(radii) if inside else rng.uniform(1.2, 2.0) * np.max(radii)
        local *= reach / np.linalg.norm(local)
        pose = jg.Pose(jnp.asarray(rng.normal(size=3)), jnp.asarray(random_rotation(rng)))
        matrix = np.asarray(pose.rotation_matrix())
        closest = _closest_on_ellipsoid(radii, local)
        gap = np.linalg.norm(local - closest)
        radius = rng.uniform(0.05, 0.2)
        outward = (local - closest) / gap if not inside else (closest - local) / gap
        signed = (gap if not inside else -gap) - radius
        centre = matrix @ local + np.asarray(pose.translation)
        rows.append(dict(radii=radii, pose=pose, radius=radius, centre=centre, signed=signed,
                         normal=matrix @ outward))
    return rows


@functools.cache
def _kernel(refine_normal):
    # The general path: refinement serves it (an ellipsoid and a sphere have a specialised solver).
    config = jg.Config(refine_normal=refine_normal, specialised=False)

    def query(radii, translation, rotation, radius, centre):
        return jg.signed_distance(jg.Ellipsoid(radii), jg.Pose(translation, rotation), jg.Sphere(radius),
                                  jg.Pose(centre, jnp.array([1.0, 0, 0, 0], centre.dtype)), config=config)

    return jax.jit(jax.vmap(query))


def _run(rows, dtype, refine_normal=True):
    def stack(key):
        return jnp.asarray(np.stack([np.asarray(row[key]) for row in rows]), dtype)

    translation = jnp.asarray(np.stack([np.asarray(r["pose"].translation) for r in rows]), dtype)
    rotation = jnp.asarray(np.stack([np.asarray(r["pose"].rotation) for r in rows]), dtype)
    return _kernel(refine_normal)(stack("radii"), translation, rotation, stack("radius"), stack("centre"))


@pytest.mark.parametrize("inside", [False, True], ids=["separated", "penetrating"])
def test_normal_to_rounding_float64(inside):
    """float64, default config: the normal within 1e-10 of the reference and the signed distance within
    1e-12 (the loops alone leave the normal 1e-6 off separated and 4e-5 penetrating)."""
    rows = cases(inside)
    result = _run(rows, jnp.float64)
    normal_error = np.linalg.norm(np.asarray(result.normal) - np.stack([r["normal"] for r in rows]), axis=1)
    distance_error = np.abs(np.asarray(result.distance) - np.array([r["signed"] for r in rows]))
    assert np.max(normal_error) <= 1e-10, normal_error
    assert np.max(distance_error) <= 1e-12, distance_error


@pytest.mark.parametrize("inside", [False, True], ids=["separated", "penetrating"])
def test_without_refinement_the_loops_normal(inside):
    """`Config(refine_normal=False)` keeps the loops' normal: the same distances to the loops'
    tolerance, normals only to about its square root."""
    rows = cases(inside)
    result = _run(rows, jnp.float64, refine_normal=False)
    normal_error = np.linalg.norm(np.asarray(result.normal) - np.stack([r["normal"] for r in rows]), axis=1)
    distance_error = np.abs(np.asarray(result.distance) - np.array([r["signed"] for r in rows]))
    assert np.max(distance_error) <= 1e-8, distance_error
    assert 1e-9 < np.max(normal_error) <= 1e-4, normal_error


def test_normal_float32():
    """float32: the refined normal within 2e-6 of the reference (the loops leave ~1e-3)."""
    rows = cases(False) + cases(True)
    result = _run(rows, jnp.float32)
    normal_error = np.linalg.norm(np.asarray(result.normal, np.float64)
                                  - np.stack([r["normal"] for r in rows]), axis=1)
    assert np.max(normal_error) <= 2e-6, normal_error


FLAT_CURVED_PAIRS = [(flat, curved) for flat in ("box", "polytope")
                     for curved in ("ellipsoid", "cone", "cylinder")]
N_FLAT_CURVED = 48  # per kind pair, half separated, half overlapping


def _world_support(shape, pose, direction):
    """max over the shape of direction · x (world frame), from its support mapping."""
    local = pose.rotation_matrix().T @ direction
    return jnp.dot(direction, pose.apply(shape.support(local)))


@jax.jit
@jax.vmap
def _witness_check(shape_a, pose_a, shape_b, pose_b):
    result = jg.signed_distance(shape_a, pose_a, shape_b, pose_b)
    n = result.normal
    return dict(result=result,
                gap=result.point_b - result.point_a - result.distance * n,
                plane_a=jnp.dot(n, result.point_a) - _world_support(shape_a, pose_a, n),
                plane_b=-jnp.dot(n, result.point_b) - _world_support(shape_b, pose_b, -n))


def test_witnesses_of_flat_against_curved_contacts():
    """A polytope's edge or face against a curved core, float64: each witness point on its shape's
    support plane along the normal and ``dot(normal, point_b − point_a) = distance``, to 1e-9. Where the
    refinement holds the two features (all but a cone's slant against an edge, which EPA's best
    support points answer), the points are the exact pair: point_b − point_a = distance · normal. (A
    face is held by three of its vertices and the contact may lie outside their triangle, so the weights
    must be affine; an edge's held vertices tie along the normal, so they must not be re-chosen.)"""
    from .shape_samples import random_shape

    rng = np.random.default_rng(11)
    shapes_a, shapes_b, poses_a, poses_b, curved_kinds = [], [], [], [], []
    for flat, curved in FLAT_CURVED_PAIRS:
        for index in range(N_FLAT_CURVED):
            shapes_a.append(random_shape(flat, rng))
            shapes_b.append(random_shape(curved, rng))
            curved_kinds.append(curved)
            direction = rng.normal(size=3)
            reach = rng.uniform(1.5, 2.5) if index % 2 else rng.uniform(0.0, 0.8)
            origin = rng.normal(size=3)
            poses_a.append((origin, random_rotation(rng)))
            poses_b.append((origin + reach * direction / np.linalg.norm(direction), random_rotation(rng)))

    def stack_poses(poses):
        return jg.Pose(*(jnp.asarray(np.stack([p[k] for p in poses])) for k in (0, 1)))

    checks = jax.device_get(_witness_check(jg.pack(shapes_a, dtype=np.float64), stack_poses(poses_a),
                                           jg.pack(shapes_b, dtype=np.float64), stack_poses(poses_b)))
    result = checks["result"]
    converged = (result.status == jg.Status.SEPARATED) | (result.status == jg.Status.PENETRATING)
    assert np.mean(converged) >= 0.95, np.bincount(result.status)
    overlapping = result.distance < 0
    assert np.sum(overlapping) >= len(overlapping) // 3
    gap = np.linalg.norm(checks["gap"], axis=1)
    along_normal = np.abs(np.sum(checks["gap"] * result.normal, axis=1))
    exact_pair = ~overlapping | (np.array(curved_kinds) != "cone")
    for name, error, where in (("plane_a", np.abs(checks["plane_a"]), converged),
                               ("plane_b", np.abs(checks["plane_b"]), converged),
                               ("along normal", along_normal, converged),
                               ("point_b - point_a - distance normal", gap, converged & exact_pair)):
        worst = np.argmax(np.where(where, error, -1))
        assert error[worst] <= 1e-9, (name, error[worst], worst, curved_kinds[worst])


def test_face_held_by_three_corners_gives_the_contact_outside_their_triangle():
    """A box's top face held by three of its corners whose triangle misses the contact (the fourth
    corner's half), an ellipsoid core above it: the refined simplex's witnesses are the exact pair
    (affine weights over the face, not the triangle's nearest point)."""
    from jaxgjk._minkowski import RelativePair
    from jaxgjk._refine import refine

    box, ball = jg.Box(jnp.ones(3)), jg.Ellipsoid(jnp.full(3, 0.3))
    pair = RelativePair(box, ball, jnp.eye(3), jnp.array([0.6, 0.6, 1.5]))
    corners = jnp.array([[1.0, -1, 1], [-1, 1, 1], [-1, -1, 1], [-1, -1, 1]])
    down = jnp.broadcast_to(jnp.array([0.0, 0, -1]), (4, 3))
    simplex = jg.Simplex(directions_a=corners, directions_b=down, points_a=corners,
                         points_b=jax.vmap(ball.core_support)(down), weights=jnp.array([0.5, 0.5, 0, 0]),
                         mask=jnp.array([True, True, True, False]))
    loops_normal = jnp.array([1e-9, 0, 1]) / jnp.linalg.norm(jnp.array([1e-9, 0, 1]))
    refined = refine(pair, loops_normal, simplex, 1e-6, jnp.asarray(True))
    assert refined.accepted
    np.testing.assert_allclose(refined.normal, [0, 0, 1], atol=1e-15)
    np.testing.assert_allclose(refined.signed, 0.2, atol=1e-15)
    weights = refined.simplex.weights
    np.testing.assert_allclose(weights @ refined.simplex.points_a, [0.6, 0.6, 1], atol=1e-15)
    np.testing.assert_allclose(weights @ refined.simplex.points_b + pair.translation, [0.6, 0.6, 1.2],
                               atol=1e-15)
