"""World-frame axis-aligned bounds of posed shapes, from their support mappings.

The support function h(d) = max over the shape of d · x gives the extreme coordinates exactly: the
shape's upper bound along world axis e_i is ``t_i + h(Rᵀ e_i)`` and its lower bound ``t_i − h(−Rᵀ e_i)``
(R, t: the pose; Rᵀ e_i is row i of R). Six support calls serve any convex shape; the primitives use
the closed forms of those six values, which cost a few multiplications, and composites combine their
parts' bounds where the support functions combine (a Minkowski sum adds them, a hull takes the larger,
a ball adds its radius), so every bound below is exact up to rounding. A half-space's bounds are
infinite except along an axis its plane is perpendicular to.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._checks import check_array, float_leaves
from ._hill_climb import ClimbingPolytope
from ._packed import Packed
from ._pose import Pose, normalized_quaternion
from ._shapes import (
    Box,
    Capsule,
    Cone,
    ConvexHull,
    Cylinder,
    Ellipsoid,
    HalfSpace,
    MinkowskiSum,
    Polytope,
    Rounded,
    Shape,
    Sphere,
)
from ._tolerance import float_dtype


def _symmetric(extent):
    return -extent, extent


def _from_supports(shape, rotation):
    # Rows of R are the world axes in the local frame: six support calls along ±rows.
    directions = jnp.concatenate([rotation, -rotation])
    points = jax.vmap(shape.support)(directions)
    values = jnp.sum(directions * points, axis=-1)
    return -values[3:], values[:3]


def _sphere(shape, rotation):
    return _symmetric(jnp.broadcast_to(shape.radius, (3,)).astype(rotation.dtype))


def _capsule(shape, rotation):
    return _symmetric(jnp.abs(rotation[:, 2]) * shape.half_length + shape.radius)


def _box(shape, rotation):
    return _symmetric(jnp.abs(rotation) @ shape.half_extents)


def _cross_axis(rotation):
    """|(R_i0, R_i1)| for each world axis i: the length of its local direction across the z axis.
    (Not sqrt(1 − R_i2²), which loses half the digits where R_i2 is near ±1.)"""
    return jnp.sqrt(rotation[:, 0] ** 2 + rotation[:, 1] ** 2)


def _cylinder(shape, rotation):
    return _symmetric(jnp.abs(rotation[:, 2]) * shape.half_length + shape.radius * _cross_axis(rotation))


def _cone(shape, rotation):
    # h(d) = max(apex · d, best rim point · d) = max(h d_z, −h d_z + r |d_xy|), d = ±row i of R.
    along, across = rotation[:, 2] * shape.half_height, shape.radius * _cross_axis(rotation)
    return -jnp.maximum(-along, along + across), jnp.maximum(along, across - along)


def _ellipsoid(shape, rotation):
    # h(d) = |diag(radii) d|.
    return _symmetric(jnp.sqrt(jnp.sum((rotation * shape.radii) ** 2, axis=-1)))


def _vertex_range(vertices, rotation, mask=None):
    world = vertices.astype(rotation.dtype) @ rotation.T
    if mask is None:
        return jnp.min(world, axis=0), jnp.max(world, axis=0)
    return (jnp.min(jnp.where(mask[:, None], world, jnp.inf), axis=0),
            jnp.max(jnp.where(mask[:, None], world, -jnp.inf), axis=0))


def _polytope(shape, rotation):
    return _vertex_range(shape.vertices, rotation, shape.mask)


def _climbing_polytope(shape, rotation):
    return _vertex_range(shape.vertices, rotation)


def _packed(shape, rotation):
    return shape.per_kind(lambda primitive: _offsets(primitive, rotation))


def _half_space(shape, rotation):
    # h(d) = 0 for d a positive multiple of the outward normal +z (the plane through the origin), +inf
    # for any other d: a bound is finite only along an axis that the plane is perpendicular to.
    perpendicular = (rotation[:, 0] == 0) & (rotation[:, 1] == 0)
    return (jnp.where(perpendicular & (rotation[:, 2] < 0), 0, -jnp.inf).astype(rotation.dtype),
            jnp.where(perpendicular & (rotation[:, 2] > 0), 0, jnp.inf).astype(rotation.dtype))


def _rounded(shape, rotation):
    low, high = _offsets(shape.shape, rotation)
    return low - shape.radius, high + shape.radius


def _minkowski_sum(shape, rotation):
    (low_a, high_a), (low_b, high_b) = _offsets(shape.a, rotation), _offsets(shape.b, rotation)
    return low_a + low_b, high_a + high_b


def _convex_hull(shape, rotation):
    lows, highs = zip(*(_offsets(part, rotation) for part in shape.shapes), strict=True)
    return jnp.min(jnp.stack(lows), axis=0), jnp.max(jnp.stack(highs), axis=0)


# Exact closed forms by kind; any other shape (Affine, user-defined) takes six support calls.
_RULES = {Sphere: _sphere, Capsule: _capsule, Box: _box, Cylinder: _cylinder, Cone: _cone,
          Ellipsoid: _ellipsoid, Polytope: _polytope, ClimbingPolytope: _climbing_polytope,
          Packed: _packed, HalfSpace: _half_space, Rounded: _rounded, MinkowskiSum: _minkowski_sum,
          ConvexHull: _convex_hull}


def _offsets(shape, rotation):
    """(low (3,), high (3,)): the shape's extreme world coordinates minus the pose's translation."""
    return _RULES.get(type(shape), _from_supports)(shape, rotation)


def aabb(shape, pose):
    """World-frame axis-aligned bounds of one posed shape: every point x of the shape has
    ``lower <= x <= upper``, and each bound is touched by the shape (exact, up to rounding).

    Args:
        shape: any jaxgjk shape, without batch axes (a stack of shapes batches under `jax.vmap`).
        pose: its `Pose` (local to world), translation (3,), rotation (4,).
    Returns:
        (lower (3,), upper (3,)) in world coordinates, in the shape's and pose's common float dtype.
        Invalid input (a non-finite field or pose, a zero quaternion, a negative size, an empty
        polytope) gives (−inf, +inf) on every axis: the shape could be anywhere, so a broadphase
        keeps it as a candidate with everything and the query then reports INVALID_INPUT.
    """
    if not isinstance(shape, Shape):
        raise TypeError(f"shape must be a jaxgjk shape, got {type(shape).__name__}")
    if not isinstance(pose, Pose):
        raise TypeError(f"pose must be a jaxgjk.Pose, got {type(pose).__name__}")
    shape.check("shape")
    check_array("pose.translation", pose.translation, (3,))
    check_array("pose.rotation", pose.rotation, (4,))
    dtype = float_dtype(*float_leaves((shape, pose)))
    shape, pose = jax.tree_util.tree_map(
        lambda leaf: jnp.asarray(leaf, dtype if jnp.issubdtype(jnp.result_type(leaf), jnp.floating)
                                 else None), (shape, pose))
    _, rotation_ok = normalized_quaternion(pose.rotation)
    is_finite = jnp.all(jnp.stack([jnp.all(jnp.isfinite(leaf)) for leaf in float_leaves((shape, pose))]))
    is_valid = shape.is_valid() & rotation_ok & is_finite
    low, high = _offsets(shape, pose.rotation_matrix())
    lower = jnp.where(is_valid, pose.translation + low, -jnp.inf)
    upper = jnp.where(is_valid, pose.translation + high, jnp.inf)
    return lower, upper
