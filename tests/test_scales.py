"""The working range of scales (README, "Current limits"): the same pairs, scaled as a whole, keep their
relative accuracy — float32 from 1e-12 to 1e12, float64 from 1e-30 to 1e30 — against closed forms.
Every length-squaring step works in units of a power of two near its own size (exact rescaling), so
the 4th powers inside GJK's signed volumes and EPA's face normals stay within the float range."""

import jax.numpy as jnp
import numpy as np
import pytest

import jaxgjk as jg

from .query_cases import run_three_queries
from .shape_samples import random_rotation

SCALES = {np.float32: (1e-12, 1e-9, 1e-6, 1e-3, 1.0, 1e3, 1e6, 1e9, 1e12),
          np.float64: (1e-30, 1e-9, 1.0, 1e9, 1e30)}
TOLERANCE = {np.float32: 1e-4, np.float64: 1e-8}  # × size; EPA on the ellipsoids dominates in float64


def box_sphere(half_extents, pose_box, radius, center):
    """Signed distance of a sphere and a box, in float64."""
    local = pose_box["rotation"].T @ (center - pose_box["translation"])
    excess = np.abs(local) - half_extents
    return np.linalg.norm(np.maximum(excess, 0)) + min(np.max(excess), 0) - radius


def cases(rng, count=12):
    """Unit-size pairs (sphere–sphere, round ellipsoids, box–sphere), half apart, half overlapping:
    (kind, radius_a or half extents, radius_b, pose_a (translation, rotation matrix, quaternion),
    centre of B, expected signed distance)."""
    rows = []
    for kind in ("sphere", "ellipsoid", "box"):
        for k in range(count):
            r_a, r_b = rng.uniform(0.5, 1.0, 2)
            gap = (1 if k % 2 else -1) * rng.uniform(0.02, 0.4) * min(r_a, r_b)
            u = rng.normal(size=3)
            u /= np.linalg.norm(u)
            q = random_rotation(rng)
            rotation = np.asarray(jg.Pose(jnp.zeros(3), jnp.asarray(q)).rotation_matrix())
            a_center = rng.normal(size=3) * 3
            if kind == "box":
                extents = rng.uniform(0.5, 1.0, 3)
                # Beyond a corner along every axis (u in the box's frame): the corner is closest.
                b_center = a_center + rotation @ (extents * np.sign(u) + u * (r_b + gap))
                expected = box_sphere(extents, dict(rotation=rotation, translation=a_center), r_b, b_center)
                rows.append((kind, extents, r_b, a_center, q, b_center, expected))
            else:
                rows.append((kind, r_a, r_b, a_center, q, a_center + u * (r_a + r_b + gap), gap))
    return rows


def shapes_of(kind, size_a, radius_b, scale):
    if kind == "sphere":
        return jg.Sphere(size_a * scale), jg.Sphere(radius_b * scale)
    if kind == "ellipsoid":
        return jg.Ellipsoid(np.full(3, size_a * scale)), jg.Ellipsoid(np.full(3, radius_b * scale))
    return jg.Box(np.asarray(size_a) * scale), jg.Sphere(radius_b * scale)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_accuracy_holds_across_scales(dtype, rng):
    rows = cases(rng)
    batch = [(scale, row) for scale in SCALES[dtype] for row in rows]
    pairs = []
    for scale, row in batch:
        shape_a, shape_b = shapes_of(row[0], row[1], row[2], scale)
        pairs.append(dict(shape_a=shape_a, pose_a=jg.Pose(row[3] * scale, row[4]), shape_b=shape_b,
                          pose_b=jg.Pose(row[5] * scale, np.array([1.0, 0, 0, 0]))))
    result = run_three_queries(pairs, dtype)[0]
    scales = np.array([scale for scale, _ in batch])
    expected = np.array([row[6] for _, row in batch]) * scales
    errors = np.abs(np.asarray(result.distance, np.float64) - expected) / scales
    worst = int(np.argmax(errors))
    assert errors[worst] <= TOLERANCE[dtype], (batch[worst][1][0], scales[worst], errors[worst])
    statuses = np.asarray(result.status)
    assert np.all((statuses == jg.Status.SEPARATED) == (expected > 0))
