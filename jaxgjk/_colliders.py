"""Specialised exact colliders, chosen at trace time by the kinds of the two cores.

Robot models are mostly spheres, capsules and boxes, against each other and against the floor. Their
cores are a point, a segment and a box (`Shape.margin` sweeps them into the shapes), and for those a
closed form or a separating-axis test gives the exact contact with no loop:
- point–point, point–segment, segment–segment (parallel segments included), point–box and
  segment–box: `_scalar_pairs`, which runs the whole query of those pairs on per-pair scalars
  (`_solve.solve` hands them over);
- box–box: `_box_colliders`;
- point–cylinder and point–ellipsoid (spheres against cylinders and ellipsoids): `_curved_colliders`;
  their contacts on a curved surface carry the normal's response to the curvature
  (`_refine.smooth_response`), as the refined general path's do;
- a half-space against any shape: exact from that shape's one support point along the plane's normal.

`Rounded` shapes ride on their core's solver. Every solver returns a `Contact` in A's frame whose simplex
holds the support directions of the two features in contact (box corners by their sign vectors, segment
ends by ±z), so the tangent rule (`_tangent`) differentiates it exactly as it does GJK's and EPA's.
`Config(specialised=False)` forces the general GJK/EPA path (half-spaces have no other).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from ._contact import Contact, NormalKind, QueryMode
from ._minkowski import RelativePair
from ._packed import Packed
from ._refine import smooth_response
from ._result import Simplex, Status
from ._scalars import Vec3
from ._shapes import (
    Affine,
    Box,
    Capsule,
    ConvexHull,
    Cylinder,
    Ellipsoid,
    HalfSpace,
    MinkowskiSum,
    Rounded,
    Shape,
    Sphere,
)
from ._vector import dot, largest_abs, matvec, rmatvec, select

POINT, SEGMENT, BOX, HALF_SPACE = "point", "segment", "box", "half-space"
CYLINDER, ELLIPSOID = "cylinder", "ellipsoid"
_CORE_KINDS = {Sphere: POINT, Capsule: SEGMENT, Box: BOX, HalfSpace: HALF_SPACE, Cylinder: CYLINDER,
               Ellipsoid: ELLIPSOID}


def innermost(shape: Shape) -> Shape:
    """The shape that `Rounded` wrappers sweep (the shape itself if it is not one)."""
    while isinstance(shape, Rounded):
        shape = shape.shape
    return shape


def core_kind(shape: Shape) -> str | None:
    """POINT, SEGMENT, BOX, CYLINDER, ELLIPSOID or HALF_SPACE for shapes whose core has a specialised
    solver (against some kinds), else None."""
    return _CORE_KINDS.get(type(innermost(shape)))


def _holds_half_space(shape) -> bool:
    if isinstance(shape, HalfSpace):
        return True
    if isinstance(shape, (Affine, Rounded)):
        return _holds_half_space(shape.shape)
    if isinstance(shape, MinkowskiSum):
        return _holds_half_space(shape.a) or _holds_half_space(shape.b)
    if isinstance(shape, ConvexHull):
        return any(_holds_half_space(part) for part in shape.shapes)
    return False


def check_half_spaces(shape_a: Shape, shape_b: Shape) -> None:
    """Raise at trace time for pairs with a half-space that no solver handles: two half-spaces (no
    bounded support to measure), or a half-space inside an `Affine`, `MinkowskiSum` or `ConvexHull`."""
    for name, shape in (("a", shape_a), ("b", shape_b)):
        if _holds_half_space(shape) and core_kind(shape) != HALF_SPACE:
            raise ValueError(f"{name} holds a HalfSpace inside a {type(shape).__name__}: a half-space has "
                             "no bounded support, so only a HalfSpace itself (or a Rounded one) can be "
                             "queried")
    if core_kind(shape_a) == HALF_SPACE and core_kind(shape_b) == HALF_SPACE:
        raise ValueError("both shapes are half-spaces: their distance is 0 or undefined (unless their "
                         "planes are parallel and facing away), and no solver measures it")


def is_half_space(shape: Shape):
    """() bool, run time: `shape` is a half-space (a `HalfSpace`, or a `Packed` lane holding one)."""
    if core_kind(shape) == HALF_SPACE:
        return jnp.asarray(True)
    if isinstance(shape, Packed):
        return jnp.asarray(shape.is_half_space())
    return jnp.asarray(False)


def bounded(pair: RelativePair) -> RelativePair:
    """`pair` with the half-spaces of `Packed` lanes read as points, for the loops (`Packed.bounded`)."""
    def read(shape):
        return shape.bounded() if isinstance(shape, Packed) else shape

    return RelativePair(read(pair.shape_a), read(pair.shape_b), pair.rotation, pair.translation)


def packed_half_space_contact(pair: RelativePair):
    """For pairs with a `Packed` side: (lanes () bool where a packed side holds a half-space, their
    contact); None for pairs without one (trace time)."""
    half_a = isinstance(pair.shape_a, Packed) and pair.shape_a.is_half_space()
    half_b = isinstance(pair.shape_b, Packed) and pair.shape_b.is_half_space()
    if half_a is False and half_b is False:
        return None
    contacts = []
    if half_b is not False:
        contacts.append((half_b, _half_space(pair, pair.shape_a)))
    if half_a is not False:
        contacts.append((half_a, exchanged(_half_space(pair.exchanged(), pair.shape_b), pair)))
    lanes, contact = contacts[0]
    for other_lanes, other in contacts[1:]:
        contact = jax.tree_util.tree_map(lambda x, y, use=other_lanes: jnp.where(use, x, y), other, contact)
        lanes = lanes | other_lanes
    return lanes, contact


def padded_simplex(directions_a, points_a, directions_b, points_b, weights, mask) -> Simplex:
    """A `Simplex` from k ≤ 4 rows ((k, 3) or (k,) each), padded to 4 slots."""
    def pad(leaf):
        return jnp.concatenate([leaf, jnp.zeros((4 - leaf.shape[0],) + leaf.shape[1:], leaf.dtype)])

    return Simplex(pad(directions_a), pad(directions_b), pad(points_a), pad(points_b), pad(weights),
                   pad(mask))


def closed_contact(distance, normal, simplex: Simplex, point_a, point_b, normal_kind) -> Contact:
    """A `Contact` from a closed form: status by the sign of the (exact) core distance, no iterations."""
    status = select([distance > 0, distance < 0], [Status.SEPARATED, Status.PENETRATING],
                        Status.INTERSECTING).astype(jnp.int32)
    return Contact(distance, normal, simplex, point_a, point_b, status, jnp.zeros((), jnp.int32),
                   jnp.asarray(normal_kind, jnp.int32), jnp.asarray(False))


def is_apart(gap, resolution):
    """Whether the cores' witness points `gap` (3,) apart are farther apart than rounding: their
    direction is then the normal; within rounding it is noise, and the touching cores' own normal
    (the crossing of two segments, a direction across a segment) holds instead."""
    return largest_abs(gap) > resolution


def is_along(gap: Vec3, axis: Vec3, tolerance):
    """Whether the witness points' offset `gap` leaves the unit `axis` by at most `tolerance`: its
    component across the axis, taken directly (a difference of lengths cancels to √rounding)."""
    across = gap - axis * gap.dot(axis)
    return across.dot(across) <= tolerance * tolerance


TRIANGLE_SLOTS = np.arange(3)  # the slots of a simplex of three vertices


def by_slot(slots, *values):
    """The `values` (scalars, one per slot) at the simplex slots `slots` (a NumPy index array), zero (or
    False) at slots past them. Written per slot, not stacked: XLA:CPU emits a stack of scalars as an
    unvectorised loop that recomputes every scalar's expression at each element."""
    total = jnp.zeros_like(values[0])
    for slot in reversed(range(len(values))):
        total = jnp.where(slots == slot, values[slot], total)
    return total


def parallelogram(s, t, slots=TRIANGLE_SLOTS):
    """The half of D's parallelogram of two segments' ends that holds the point of parameters `s`, `t`
    in [0, 1] (along A's and B's segments): at the simplex slots `slots`, whether A's and B's corner
    ends are their + ends (bool), and the convex weights, from the near corner (1 − s − t, t, s) where
    s + t ≤ 1 (ends (−, −), (−, +), (+, −)), else from the far one (s + t − 1, 1 − t, 1 − s) (ends
    (+, +), (+, −), (−, +)); slots past the third: weight 0. Convex weights make it GJK's own closest
    simplex, so as a warm start it ends at once."""
    far = s + t > 1
    weights = by_slot(slots, jnp.where(far, s + t - 1, 1 - s - t), jnp.where(far, 1 - t, t),
                      jnp.where(far, 1 - s, s))
    return jnp.where(slots == 2, ~far, far), jnp.where(slots == 1, ~far, far), weights


def staircase(first_p, first_q):
    """Shared weights of a point on each of two segments P and Q, `first_p` and `first_q` () the
    points' weights on their segments' first ends: the pairs of ends (first, first), then the segment
    whose first weight runs out first steps to its second end, then (second, second). Returns
    (whether P steps first, the three pairs' weights (three scalars)): convex, and each side's
    weighted ends give its point (the half of D's parallelogram beside the diagonal from (first,
    first) to (second, second), where `parallelogram` takes the other diagonal)."""
    low, high = jnp.minimum(first_p, first_q), jnp.maximum(first_p, first_q)
    return first_p <= first_q, (low, high - low, 1 - high)


def feature_axes(free, fraction):
    """The axes a box feature extends along and the point's place on them, from `free` (three bools:
    the feature extends along these axes, at most two) and `fraction` (three scalars: the point's
    coordinates as fractions of the box's sides, from the − side): their number () int32, the first
    two (first, second) () int32 (a stable sort of ~free, free axes first; unused ones arbitrary), and
    the point's fractions along them (alpha, beta) (), 0 where unused. Per component, on arrays (3,)
    or sequences of scalars alike: XLA:CPU sorts, and reduces over three elements, in library calls
    that cost more than the rest of a closed-form solver."""
    count = free[0].astype(jnp.int32) + free[1] + free[2]
    first = jnp.where(free[0], 0, jnp.where(free[1], 1, jnp.where(free[2], 2, 0)))
    second = jnp.where(count >= 2, jnp.where(free[0] & free[1], 1, 2),
                       jnp.where(count == 1, jnp.where(free[0], 1, 0), 1))

    def component(values, axis):
        return jnp.where(axis == 0, values[0], jnp.where(axis == 1, values[1], values[2]))

    return (count, first, second, jnp.where(count >= 1, component(fraction, first), 0),
            jnp.where(count >= 2, component(fraction, second), 0))


def box_feature_simplex(point, half_extents, free=None, zero_signs=1):
    """The simplex slots of the box feature holding `point` (3,), a point on the surface of the box of
    `half_extents` (3,), box frame: the feature's corners by their sign vectors, at most three (a
    vertex, an edge's ends, three corners of a face: along the axes where `point` lies strictly inside
    the box's slab, or along the axes `free` (3,) bool, at most two, where given), with the affine
    weights of `point` over them (over `free` axes, `point` may lie beyond the box: the weights then
    extrapolate the feature's plane). `zero_signs` (3,) or (): the corners' signs where `point` is 0 on
    a side of length 0, the side a size's derivative grows.

    Returns (directions (3, 3), corners (3, 3), weights (3,), mask (3,)).
    """
    dtype = point.dtype
    if free is None:
        free = jnp.abs(point) < half_extents  # the feature extends along these axes
    signs = jnp.where(point > 0, 1, jnp.where(point < 0, -1, zero_signs)).astype(dtype)
    base = jnp.where(free, -1, signs).astype(dtype)
    count, first, second, alpha, beta = feature_axes(free, (point + half_extents) /
                                                     jnp.where(half_extents > 0, 2 * half_extents, 1))
    index = jnp.arange(3)
    directions = jnp.stack([base, jnp.where(index == first, 1, base), jnp.where(index == second, 1, base)])
    return (directions, directions * half_extents, jnp.stack([1 - alpha - beta, alpha, beta]),
            jnp.arange(3) <= count)


def _half_space(pair: RelativePair, shape_a: Shape) -> Contact:
    """Any shape A and a half-space B: A's deepest point along the plane's outward normal m decides.

    The contact's simplex pairs that point with three points of the plane (its projection and two
    steps along the plane), so the tangent rule turns the normal with the plane and slides the plane's
    witness point under A's.
    """
    dtype = pair.translation.dtype
    outward = pair.rotation[:, 2]  # B's plane normal, A's frame
    deepest = shape_a.core_support(-outward)
    height = dot(outward, deepest - pair.translation)
    foot = rmatvec(pair.rotation, deepest - pair.translation).at[2].set(0)  # B's frame, on the plane
    step = jnp.maximum(largest_abs(foot), 1)
    points_b = jnp.stack([foot, foot.at[0].add(step), foot.at[1].add(step)])
    normal = -outward
    simplex = padded_simplex(jnp.broadcast_to(-outward, (3, 3)), jnp.broadcast_to(deepest, (3, 3)),
                              jnp.broadcast_to(jnp.array([0, 0, 1], dtype), (3, 3)), points_b,
                              jnp.array([1, 0, 0], dtype), jnp.ones(3, bool))
    return closed_contact(height, normal, simplex, deepest, foot, NormalKind.FROM_FACE)


def exchanged(contact: Contact, pair: RelativePair) -> Contact:
    """The contact of (A, B) from the contact of (B, A), which is in B's frame: normal turned to A's
    frame and negated, the sides' points and support directions swapped (the simplex of A − B, vertex
    for vertex, is that of B − A)."""
    s = contact.simplex
    return Contact(contact.distance, -matvec(pair.rotation, contact.normal),
                   Simplex(s.directions_b, s.directions_a, s.points_b, s.points_a, s.weights, s.mask),
                   contact.point_b, contact.point_a, contact.status, contact.iterations,
                   contact.normal_kind, contact.refinable)


def _solvers():
    from ._box_colliders import box_box  # it builds on the helpers above
    from ._curved_colliders import point_cylinder, point_ellipsoid

    return {(BOX, BOX): box_box,
            (POINT, CYLINDER): point_cylinder, (POINT, ELLIPSOID): point_ellipsoid}


def _with_response(contact: Contact, pair: RelativePair):
    """A curved solver's contact and its normal's response (3, 3), A's frame (`_refine.Refinement`):
    where it says `NormalKind.SMOOTH` (both cores hold the contact at a point, apart), the normal moves
    with the curvature, as the refined general path's does; where g is not at a strict maximum there,
    the normal falls back to the closest points' direction."""
    response, definite = smooth_response(pair, contact.normal)
    smooth = (contact.normal_kind == NormalKind.SMOOTH) & definite
    kind = jnp.where((contact.normal_kind == NormalKind.SMOOTH) & ~definite, NormalKind.FROM_CLOSEST,
                     contact.normal_kind)
    return dataclasses.replace(contact, normal_kind=kind.astype(jnp.int32)), jnp.where(smooth, response, 0)


def specialised_contact(specialised: bool, pair: RelativePair, resolution):
    """The exact contact of `pair`'s cores from a specialised solver and its normal's response (3, 3),
    A's frame (None where the contact is never `NormalKind.SMOOTH`), or None where its kinds have no
    solver here (trace time; point and segment pairs, and a point or a segment with a box, are
    `_scalar_pairs`'s).
    Half-spaces are always solved here (`specialised` does not apply to them). `resolution` (): the
    least core distance told apart from touching (`_tolerance`)."""
    kind_a, kind_b = core_kind(pair.shape_a), core_kind(pair.shape_b)
    if kind_b == HALF_SPACE:
        return _half_space(pair, pair.shape_a), None
    if kind_a == HALF_SPACE:
        return exchanged(_half_space(pair.exchanged(), pair.shape_b), pair), None
    if not specialised:
        return None
    solvers = _solvers()
    core_a, core_b = innermost(pair.shape_a), innermost(pair.shape_b)
    if (kind_a, kind_b) in solvers:
        contact = solvers[kind_a, kind_b](pair, core_a, core_b, resolution)
    elif (kind_b, kind_a) in solvers:
        contact = exchanged(solvers[kind_b, kind_a](pair.exchanged(), core_b, core_a, resolution), pair)
    else:
        return None
    if CYLINDER in (kind_a, kind_b) or ELLIPSOID in (kind_a, kind_b):
        return _with_response(contact, pair)
    return contact, None


def has_solver(specialised: bool, shape_a: Shape, shape_b: Shape) -> bool:
    """Whether `specialised_contact` solves the pair of these shapes' kinds in closed form (trace
    time): a half-space with anything, and the kinds of `_solvers` where `specialised`."""
    kinds = core_kind(shape_a), core_kind(shape_b)
    return HALF_SPACE in kinds or (specialised and (kinds in _solvers() or kinds[::-1] in _solvers()))


def separation_bound(specialised: bool, pair: RelativePair):
    """A lower bound () of the cores' distance that is > 0 iff they are apart, cheaper than their
    contact and never above the distance that `specialised_contact` gives, or None where the pair's
    kinds have none here (trace time): two boxes, by their separating axes."""
    if not specialised or (core_kind(pair.shape_a), core_kind(pair.shape_b)) != (BOX, BOX):
        return None
    from ._box_colliders import separation_bound as box_separation_bound

    return box_separation_bound(pair, innermost(pair.shape_a), innermost(pair.shape_b))


def for_mode(contact: Contact, mode: QueryMode, margin, distance_upper_bound) -> Contact:
    """A closed-form contact with the statuses of `mode`: overlapping cores are INTERSECTING where the
    query does not measure depth (as GJK reports them), and BOUND_EXCEEDED beyond the distance bound."""
    status = contact.status
    if mode is not QueryMode.SIGNED:
        status = jnp.where(contact.distance <= 0, Status.INTERSECTING, status)
    if distance_upper_bound is not None:
        status = jnp.where(contact.distance - margin > distance_upper_bound, Status.BOUND_EXCEEDED, status)
    return Contact(contact.distance, contact.normal, contact.simplex, contact.point_a, contact.point_b,
                   status.astype(jnp.int32), contact.iterations, contact.normal_kind, contact.refinable)
