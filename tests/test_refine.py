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
from shape_samples import random_rotation

import jaxgjk as jg

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
    config = jg.Config(refine_normal=refine_normal)

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
