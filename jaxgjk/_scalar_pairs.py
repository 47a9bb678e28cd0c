"""Spheres and capsules against each other and against boxes (their `Rounded` forms included): the
whole query on per-pair scalars.

Their cores are a point (A's or B's origin), a segment along the body's z axis or a box, and the exact
contact is a closed form (`_closest`; a point and a box: the box's closest point, or from inside its
nearest face; a segment and a box: the separating axes and candidates of `_box_colliders`). The
stages are `_solve`'s — validity, sanitising and B's pose in A's frame (`prepare`), the cores' contact
in A's frame, then the margins, the world frame, the status and the features (`world_result`) —
written end to end on `Vec3`s and scalars (`_scalars`), so that under
`vmap` the query runs as a few contiguous loops over the batch rather than dozens over short strided
rows; arrays are made only for the `DistanceResult`. The results follow the contract of every other
solver: the simplex holds the support directions of the features in contact (a segment's ends by
(0, 0, ±1), box corners by their sign vectors, a point by the normal), which the tangent rule
(`_tangent`) differentiates.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ._checks import float_leaves
from ._closest import nearly_parallel, point_segment, safe_ratio, segment_segment
from ._colliders import by_slot, feature_axes, innermost, is_along, parallelogram, staircase
from ._contact import NormalKind, QueryMode
from ._features import Feature, FeatureDim, feature_without_vertices
from ._pose import unit_quaternion_components
from ._result import Config, DistanceResult, Simplex, Status
from ._scalars import Rotation, Vec3, where
from ._shapes import Box, Capsule, Sphere
from ._tolerance import BOX_AXIS_ROUNDINGS, epsilon, float_dtype, touching_resolution
from ._vector import computed_once


def handles(config: Config, shape_a, shape_b) -> bool:
    """Whether this module solves the pair (trace time): both cores are points or segments (a `Sphere`
    or `Capsule`, possibly `Rounded`), or one is and the other a box, and the config allows
    specialised solvers."""
    cores = {type(innermost(shape_a)), type(innermost(shape_b))}
    return config.specialised and (cores <= {Sphere, Capsule} or cores in ({Sphere, Box}, {Capsule, Box}))


def _half_length(shape, dtype):
    """The core segment's half-length () (0 for a sphere's point)."""
    core = innermost(shape)
    return core.half_length if isinstance(core, Capsule) else jnp.zeros((), dtype)


class _Contact(NamedTuple):
    """`_contact.Contact` on scalars: core distance, normal A → B (A's frame), the simplex, the core
    witness points in each body's frame (a point's or a segment's as its z coordinate (): they lie on
    their body's z axis; a box's as a `Vec3`), the normal's kind."""

    distance: jnp.ndarray
    normal: Vec3
    simplex: Simplex
    point_a: jnp.ndarray | Vec3
    point_b: jnp.ndarray | Vec3
    normal_kind: jnp.ndarray


# The simplex's slots and the components of its rows: its arrays are written as functions of these
# indices (`_colliders.by_slot`).
_SLOTS = np.arange(4)
_COMPONENTS = np.arange(3)


def _per_slot(*values):
    """(4,) the `values` (up to four scalars) in the first slots, zero (or False) in the rest."""
    return by_slot(_SLOTS, *values)


def _axial_rows(signs, half_length):
    """(4, 3) rows (0, 0, sign · half_length) of segment ends given by `signs` (4,) (∓1, 0 unused)."""
    return jnp.where(_COMPONENTS == 2, (signs * half_length)[..., None], 0)


def _repeated_rows(vector: Vec3, count: int):
    """(4, 3) `vector` in the first `count` rows, zero in the rest."""
    return jnp.where((_SLOTS < count)[:, None], vector.array_by_component(), 0)


def _once(value):
    """`value` (a scalar, a `Vec3`, a `Rotation`, or a tuple of them) with every scalar `computed_once`:
    for the values that rows broadcast at every element."""
    if isinstance(value, Rotation):
        return Rotation(_once(row) for row in value.rows)
    if isinstance(value, Vec3):
        return Vec3(*(computed_once(component) for component in value))
    if isinstance(value, tuple):
        return type(value)(*map(_once, value)) if hasattr(value, "_fields") else tuple(map(_once, value))
    return computed_once(value)


def _point_point(rotation: Rotation, translation: Vec3, resolution) -> _Contact:
    """Two points: A's at A's origin, B's at `translation`; coincident, the normal is +z."""
    dtype = translation.x.dtype
    zero = jnp.zeros((), dtype)
    apart = translation.largest_abs() > resolution
    normal = where(apart, translation, Vec3.axis(2, dtype)).unit()
    no_points = jnp.zeros((4, 3), dtype)
    simplex = Simplex(_repeated_rows(normal, 1), _repeated_rows(-rotation.apply_transpose(normal), 1),
                      no_points, no_points, _per_slot(jnp.ones((), dtype)), _SLOTS < 1)
    return _Contact(normal.dot(translation), normal, simplex, zero, zero,
                    jnp.where(apart, NormalKind.FROM_CLOSEST, NormalKind.FIXED))


def _point_segment(rotation: Rotation, translation: Vec3, half_b, resolution) -> _Contact:
    """A point (A's origin) and B's core segment; on the segment, any direction across it."""
    dtype = translation.x.dtype
    zero = jnp.zeros((), dtype)
    start = translation - rotation.column(2) * half_b
    end = translation + rotation.column(2) * half_b
    along = point_segment(Vec3(zero, zero, zero), start, end)
    closest = start + (end - start) * along
    # Projected inside the segment, the exact offset is perpendicular to it: its component along it is
    # the rounding of `along` (`_segment_segment`).
    axis_b = rotation.column(2)
    across = where((along > 0) & (along < 1), closest - axis_b * closest.dot(axis_b), closest)
    apart = across.largest_abs() > resolution
    axis = (end - start).unit()
    normal = where(apart, across, where(axis.is_zero(), Vec3.axis(2, dtype), axis).across()).unit()
    ends = _per_slot(-jnp.ones((), dtype), jnp.ones((), dtype))
    simplex = Simplex(_repeated_rows(normal, 2), _axial_rows(ends, 1), jnp.zeros((4, 3), dtype),
                      _axial_rows(ends, half_b), _per_slot(1 - along, along), _per_slot(along < 1, along > 0))
    return _Contact(normal.dot(closest), normal, simplex, zero, half_b * (2 * along - 1),
                    jnp.where(apart, NormalKind.FROM_CLOSEST, NormalKind.FIXED))


class _BoxSlots(NamedTuple):
    """A box feature in the simplex's first three slots (`_colliders.box_feature_simplex`, written on
    scalars): its corners by sign vectors, `base` (a `Vec3` of ±1) in slot 0 and, in slots 1 and 2,
    `base` with the component `raised[1]`, `raised[2]` (int32 ()) set to +1 (`raised[0]` is −1:
    none); the affine `weights` and the `mask` of the slots (three scalars each)."""

    base: Vec3
    raised: tuple
    weights: tuple
    mask: tuple


def _box_slots(point: Vec3, half: Vec3, free=None, zero_sign=1) -> _BoxSlots:
    """The feature of the box of half extents `half` that holds `point` (its frame, on its surface): it
    extends along the axes where `point` lies strictly inside the box's slab, or along `free` (three
    bools, at most two) where given, where `point` may lie beyond the feature (the weights
    extrapolate it). `zero_sign` (): the corners' sign where `point` is 0 on a side of length 0."""
    if free is None:
        free = [jnp.abs(p) < h for p, h in zip(point, half, strict=True)]
    base = Vec3(*(jnp.where(f | (p < 0), -1, jnp.where(p > 0, 1, zero_sign))
                  for f, p in zip(free, point, strict=True)))
    count, first, second, alpha, beta = feature_axes(
        free, [(p + h) / jnp.where(h > 0, 2 * h, 1) for p, h in zip(point, half, strict=True)])
    return _BoxSlots(base, (jnp.asarray(-1, jnp.int32), first, second), (1 - alpha - beta, alpha, beta),
                     (jnp.asarray(True), count >= 1, count >= 2))


def _box_rows(base: Vec3, raised, half: Vec3, dtype):
    """(directions (4, 3), corners (4, 3)) of the box corners in slots 0–2 (`_BoxSlots`), zero in slot 3."""
    rows = _SLOTS[:, None]
    is_raised = by_slot(_SLOTS, *raised)[:, None] == _COMPONENTS
    directions = jnp.where(rows < 3, jnp.where(is_raised, 1, by_slot(_COMPONENTS, *base)), 0).astype(dtype)
    return directions, directions * by_slot(_COMPONENTS, *half)


def _box_feature_simplex(point: Vec3, half: Vec3, normal: Vec3) -> Simplex:
    """The simplex of A's point (support direction `normal`, A's frame) against the feature of B's box
    that holds `point` (B's frame, on the box's surface)."""
    slots = _box_slots(point, half)
    directions, corners = _box_rows(slots.base, slots.raised, half, point.x.dtype)
    return Simplex(_repeated_rows(normal, 3), directions, jnp.zeros((4, 3), point.x.dtype), corners,
                   _per_slot(*slots.weights), _per_slot(*slots.mask))


def _clip(point: Vec3, half: Vec3) -> Vec3:
    """The closest point to `point` of the box of half extents `half` (its frame)."""
    return Vec3(*(jnp.clip(p, -h, h) for p, h in zip(point, half, strict=True)))


def _point_box(rotation: Rotation, translation: Vec3, half: Vec3, resolution) -> _Contact:
    """A point (A's origin) and B's core box of half extents `half`: the box's closest point, or,
    inside the closed box or outside it by no more than `resolution`, its nearest face's (the first
    of ties in x, y, z order): so close to the box, the offset's direction is rounding (a sphere's
    centre on a flat box's plane got a normal 0.08 rad off in float32)."""
    dtype = translation.x.dtype
    # A's point in B's frame, computed once: the offset to its clamp must be exactly 0 along the axes it
    # is not clamped on (copies of its expression in two fusions rounded apart, 1e-8 rad in float64).
    point = _once(-rotation.apply_transpose(translation))
    closest = _clip(point, half)
    gap = rotation.apply(closest - point)
    inside = gap.largest_abs() <= resolution
    depths = Vec3(*(h - jnp.abs(p) for p, h in zip(point, half, strict=True)))
    on_x = (depths.x <= depths.y) & (depths.x <= depths.z)
    on_y = ~on_x & (depths.y <= depths.z)

    def on_axis(vector: Vec3):  # the nearest face's component of `vector`
        return jnp.where(on_x, vector.x, jnp.where(on_y, vector.y, vector.z))

    face_sign = jnp.where(on_axis(point) >= 0, 1, -1).astype(dtype)
    face = face_sign * on_axis(half)
    on_face = Vec3(jnp.where(on_x, face, closest.x), jnp.where(on_y, face, closest.y),
                   jnp.where(on_x | on_y, closest.z, face))
    point_b = where(inside, on_face, closest)
    # From A's point to B's: outside, towards the box's closest point; inside, into the box through
    # the nearest face (B moves by the depth along it to separate): minus that face's outward normal.
    face_normal = -(where(on_x, rotation.column(0), where(on_y, rotation.column(1), rotation.column(2)))
                    * face_sign)
    outward = gap.unit()
    normal = where(inside, face_normal, outward)
    # Read at every element of the simplex's rows: computed once, sphere–box runs 1.7x faster.
    point_b, normal = _once((point_b, normal))
    simplex = _box_feature_simplex(point_b, half, normal)
    face_contact = simplex.mask[2]  # three corners: a face
    kind = jnp.where(~inside, NormalKind.FROM_CLOSEST,
                     jnp.where(face_contact, NormalKind.FROM_FACE, NormalKind.FIXED))
    return _Contact(jnp.where(inside, -on_axis(depths), outward.dot(gap)), normal, simplex,
                    jnp.zeros((), dtype), point_b, kind)


def _first_of_largest(values):
    """(the largest of `values` (scalars), its index () int32, the first of ties: `jnp.argmax`)."""
    best, index = values[0], jnp.zeros((), jnp.int32)
    for i, value in enumerate(values[1:], 1):
        larger = value > best
        best, index = jnp.where(larger, value, best), jnp.where(larger, i, index)
    return best, index


def _pick(index, values):
    """`values[index]` for a traced `index` () over a sequence of scalars or of `Vec3`s."""
    if isinstance(values[0], Vec3):
        return Vec3(*(_pick(index, components) for components in zip(*values, strict=True)))
    chosen = values[-1]
    for i in reversed(range(len(values) - 1)):
        chosen = jnp.where(index == i, values[i], chosen)
    return chosen


def _choose(use_face, use_edge, face, edge, corner):
    """The face contact's value where `use_face`, else the edge contact's where `use_edge`, else the
    corner contact's (scalars or `Vec3`s). `jnp.select`, not a chain of wheres: with the chain, XLA:CPU
    copied the candidates' computation into each output's loop (the whole result 1.4x slower)."""
    if isinstance(face, Vec3):
        return Vec3(*(_choose(use_face, use_edge, *c) for c in zip(face, edge, corner, strict=True)))
    return jnp.select([use_face, use_edge], [face, edge], corner)


class _Candidate(NamedTuple):
    """A candidate contact of A's core segment and B's core box: A's point (0, 0, `z`) and B's `point`
    (B's frame), and its simplex on scalars: in the three slots, A's segment ends by their signs
    (`signs_a`) and B's corners by `base` and `raised` (`_BoxSlots`), with the slots' `weights` and
    `mask`."""

    z: jnp.ndarray
    point: Vec3
    signs_a: tuple
    base: Vec3
    raised: tuple
    weights: tuple
    mask: tuple


def _segment_face(axis_in_b: Vec3, origin_in_b: Vec3, towards: Vec3, face, face_sign, h, half: Vec3,
                  tolerance):
    """B's face normal to its axis `face` (int32 ()) with outward normal −`towards` (A's frame; B lies
    on the side of sign `face_sign` along the axis) against the segment's deepest end, or, where the
    segment lies flat on it to rounding, against the segment's part over the face's rectangle widened
    by the tolerance (clipped, Liang–Barsky), at that part's middle. The segment is A's axis
    (0, 0, z), |z| ≤ `h`, at `axis_in_b` z + `origin_in_b` in B's frame. Returns (the candidate,
    whether its simplex is a triangle whose normal is the contact's, whether the face has area)."""
    dtype = towards.z.dtype
    extents = tuple(half)
    deepest = jnp.where(towards.z >= 0, 1, -1).astype(dtype)
    steepest = (jnp.abs(towards.z) > jnp.abs(towards.x)) & (jnp.abs(towards.z) > jnp.abs(towards.y))
    flat = (2 * h * jnp.abs(towards.z) <= tolerance) & (h > 0) & ~steepest
    start = axis_in_b * jnp.where(flat, -h, deepest * h) + origin_in_b
    step = axis_in_b * jnp.where(flat, 2 * h, 0)
    enter, leave = jnp.zeros((), dtype), jnp.ones((), dtype)
    for k, (begin, change, e) in enumerate(zip(start, step, extents, strict=True)):
        bound = jnp.where(face == k, jnp.inf, e + tolerance)
        moving = change != 0
        safe = jnp.where(moving, change, 1)
        low, high = (-bound - begin) / safe, (bound - begin) / safe
        within = jnp.abs(begin) <= bound
        enter = jnp.maximum(enter, jnp.where(moving, jnp.minimum(low, high),
                                             jnp.where(within, -jnp.inf, jnp.inf)))
        leave = jnp.minimum(leave, jnp.where(moving, jnp.maximum(low, high),
                                             jnp.where(within, jnp.inf, -jnp.inf)))
    enter, leave = _once((enter, leave))  # the simplex reads them too
    clipped = flat & (enter <= leave)
    on_face = [face == k for k in range(3)]
    face_value = -face_sign * _pick(face, extents)

    def onto_face(z):  # the segment's point at `z`, projected onto the face and clamped to it
        return Vec3(*(jnp.where(on, face_value, jnp.clip(p, -e, e))
                      for on, p, e in zip(on_face, axis_in_b * z + origin_in_b, extents, strict=True)))

    z = jnp.where(clipped, h * (enter + leave - 1), deepest * h)
    # The simplex holds a vertex of the overlap, a pair of points in contact: the segment's end over the
    # face (against three of its corners), or where it enters the face, crossing an edge of the face
    # (the two edges coupled).
    crossing = clipped & (enter > 0)
    vertex = onto_face(jnp.where(clipped, h * (2 * enter - 1), deepest * h))
    in_face = [~on & (e > 0) for on, e in zip(on_face, extents, strict=True)]  # the face's axes
    slots = _box_slots(vertex, half, [jnp.where(crossing, jnp.abs(p) < e, f)
                                      for p, e, f in zip(vertex, extents, in_face, strict=True)], -face_sign)
    # Crossing, the segment's ends and the face edge's corners coupled by `_colliders.staircase`.
    end = jnp.where(clipped, -1, deepest).astype(dtype)  # the segment's end, where not crossing
    end_first, stairs = staircase(1 - enter, slots.weights[0])
    candidate = _Candidate(
        z, onto_face(z),
        (jnp.where(crossing, -1, end), jnp.where(crossing, jnp.where(end_first, 1, -1), end),
         jnp.where(crossing, 1, end)),
        slots.base,
        (slots.raised[0], jnp.where(crossing & end_first, -1, slots.raised[1]),
         jnp.where(crossing, slots.raised[1], slots.raised[2])),
        tuple(jnp.where(crossing, st, w) for st, w in zip(stairs, slots.weights, strict=True)),
        (slots.mask[0], crossing | slots.mask[1], jnp.where(crossing, slots.mask[1], slots.mask[2])))
    edge = Vec3(*(jnp.where(slots.raised[1] == k, 1, 0).astype(dtype) for k in range(3)))
    parallel = crossing & slots.mask[1] & nearly_parallel(axis_in_b, edge)
    has_area = in_face[0].astype(jnp.int32) + in_face[1] + in_face[2] == 2
    return candidate, candidate.mask[2] & ~parallel, has_area


def _segment_edge(rotation: Rotation, translation: Vec3, edge, edge_normal: Vec3, h, half: Vec3):
    """The closest points of the segment (A's axis, |z| ≤ `h`) and B's support edge along −`edge_normal`
    (A's frame), parallel to B's axis `edge` (int32 ()), each clamped to its edge, with the simplex of
    their parallelogram (`_colliders.parallelogram`): (`_Candidate`, whether the two edges span a face of
    D: not parallel to rounding, neither of length 0)."""
    dtype = translation.x.dtype
    extents = tuple(half)
    columns = [rotation.column(j) for j in range(3)]  # B's axes, A's frame
    along_b = _pick(edge, columns)
    signs_b = Vec3(*(jnp.where(-c.dot(edge_normal) >= 0, 1, -1).astype(dtype) for c in columns))
    on_edge = [edge == k for k in range(3)]
    base = Vec3(*(jnp.where(on, -1, sign) for on, sign in zip(on_edge, signs_b, strict=True)))
    middle = Vec3(*(jnp.where(on, 0, sign * e)
                    for on, sign, e in zip(on_edge, signs_b, extents, strict=True)))
    offset = rotation.apply(middle) + translation  # the edge's middle, A's frame
    # Lines a(s) = s z, b(t) = offset + t y (unit z, y): with c = z × y, the closest points are at
    # s = ((offset × y)·c)/|c|², t = ((offset × z)·c)/|c|².
    cross = Vec3(-along_b.y, along_b.x, jnp.zeros_like(along_b.x))
    cross_sq = cross.dot(cross)
    cross_sq_safe = jnp.where(cross_sq > 0, cross_sq, 1)
    z_axis = Vec3.axis(2, dtype)

    def fraction(along, half_edge):  # from the edge's − end to its + end, clamped to [0, 1]
        return ((jnp.clip(along, -half_edge, half_edge) + half_edge)
                / jnp.where(half_edge > 0, 2 * half_edge, 1))

    half_edge_b = _pick(edge, extents)
    s = fraction(offset.cross(along_b).dot(cross) / cross_sq_safe, h)
    t = fraction(offset.cross(z_axis).dot(cross) / cross_sq_safe, half_edge_b)
    far = s + t > 1  # the parallelogram's far half
    point = Vec3(*(jnp.where(on, half_edge_b * (2 * t - 1), sign * e)
                   for on, sign, e in zip(on_edge, signs_b, extents, strict=True)))
    candidate = _Candidate(
        h * (2 * s - 1), point, tuple(jnp.where(high, 1, -1).astype(dtype) for high in (far, far, ~far)),
        base, tuple(jnp.where(high, edge, -1) for high in (far, ~far, far)),
        (jnp.where(far, s + t - 1, 1 - s - t), jnp.where(far, 1 - t, t), jnp.where(far, 1 - s, s)),
        (jnp.asarray(True),) * 3)
    return candidate, ~nearly_parallel(z_axis, along_b) & (h > 0) & (half_edge_b > 0)


def _segment_corner(rotation: Rotation, translation: Vec3, axis_in_b: Vec3, origin_in_b: Vec3, h,
                    half: Vec3) -> _Candidate:
    """The nearest of the segment's ends against B and B's corners against the segment's interior (the
    first of ties, in `_box_colliders`' order): an end against B's feature holding its closest point,
    or a corner against the segment's edge (a corner nearest an end is that end's contact at best)."""
    dtype = translation.x.dtype
    ends = [axis_in_b * (end * h) + origin_in_b for end in (-1, 1)]  # B's frame
    on_box = [_clip(end, half) for end in ends]
    gaps_sq = [(end - on).dot(end - on) for end, on in zip(ends, on_box, strict=True)]
    for index in range(8):
        corner = rotation.apply(Vec3(*((2 * ((index >> k) & 1) - 1) * e for k, e in enumerate(half))))
        corner = corner + translation  # A's frame
        # A corner whose nearest point of the segment is an end is never nearer than that end's own
        # nearest point of B (exact: its clamp), so it does not compete: within rounding of the end's
        # distance it would win the tie with a point up to √(rounding · distance) off along B's edge
        # (a 7e-4 turn of the float32 normal at a distance of 0.2).
        gaps_sq.append(jnp.where(jnp.abs(corner.z) < h, corner.x * corner.x + corner.y * corner.y, jnp.inf))
    # The nearest by its index, computed once: every field below reads it, and XLA:CPU copied the ten
    # candidates' distances into each field's loop (capsule-box: ~2 000 of its ~11 000 instructions).
    best = computed_once(_first_of_largest([-gap_sq for gap_sq in gaps_sq])[1])  # the first least
    from_a = best < 2  # A's end against B (the end + where `best` is 1), else B's corner `best` − 2
    corner_signs = Vec3(*(jnp.where(((best - 2) >> k) & 1 == 1, 1, -1).astype(dtype) for k in range(3)))
    corner_b = Vec3(*(sign * e for sign, e in zip(corner_signs, half, strict=True)))
    on_axis = jnp.clip((rotation.apply(corner_b) + translation).z, -h, h)
    end_sign = jnp.where(best == 1, 1, -1).astype(dtype)
    z = jnp.where(from_a, end_sign * h, on_axis)
    point = where(from_a, where(best == 1, on_box[1], on_box[0]), corner_b)
    corner_signs = where(from_a, Vec3(*(jnp.ones((), dtype),) * 3), corner_signs)
    end_slots = _box_slots(point, half)
    inside = jnp.abs(z) < h  # B's corner against the segment's edge, else against an end
    segment_base = jnp.where(inside | (z < 0), -1, 1).astype(dtype)
    along = jnp.where(inside, (z + h) / jnp.where(h > 0, 2 * h, 1), 0)
    segment_signs = (segment_base, jnp.where(inside, 1, segment_base), segment_base)
    segment_weights = (1 - along, along, jnp.zeros_like(along))
    segment_mask = (jnp.asarray(True), inside, jnp.asarray(False))

    def by_side(end_values, corner_values):  # an end's (A's) where it is the nearest, else a corner's
        return tuple(jnp.where(from_a, a, b) for a, b in zip(end_values, corner_values, strict=True))

    return _Candidate(z, point, by_side((end_sign,) * 3, segment_signs),
                      where(from_a, end_slots.base, corner_signs), by_side(end_slots.raised, (-1,) * 3),
                      by_side(end_slots.weights, segment_weights), by_side(end_slots.mask, segment_mask))


def _segment_box(rotation: Rotation, translation: Vec3, half_a, half: Vec3, resolution) -> _Contact:
    """A's core segment (along A's z, half-length `half_a`) and B's core box (half extents `half`):
    `_box_colliders`' contact of two boxes (its docstring has the reasoning) for a segment, the box of
    half extents (0, 0, `half_a`) whose only edge is its axis. The axes are B's face normals and A's
    axis crossed with B's axes; the candidates a face contact (`_segment_face`), an edge contact
    (`_segment_edge`) and a corner contact (`_segment_corner`)."""
    dtype = translation.x.dtype
    h, extents = half_a, tuple(half)
    columns = [rotation.column(j) for j in range(3)]  # B's axes, A's frame
    axis_in_b = Vec3(*(c.z for c in columns))  # A's axis, B's frame
    origin_in_b = -rotation.apply_transpose(translation)  # A's origin, B's frame
    tolerance = BOX_AXIS_ROUNDINGS * epsilon(dtype) * (translation.largest_abs() + h + half.largest_abs())
    # The separations along B's face normals and along z × B's axes, and the signs that turn each axis
    # towards B. z × c_j reaches over B Σ_k |c_k · (z × c_j)| e_k, summed as written, not as
    # e_k |c_m.z| + e_m |c_k.z| (which assumes an exactly orthogonal rotation): where z and c_j are
    # parallel to rounding, the axis's direction is rounding noise, and only the sum keeps its
    # separation a lower bound (the shortcut reported a capsule along a needle box's axis apart).
    centres = [c.dot(translation) for c in columns]

    def box_reach(u: Vec3):  # how far B reaches along u beyond its centre, times |u|
        return sum(e * jnp.abs(c.dot(u)) for e, c in zip(extents, columns, strict=True))

    face_separations = [(jnp.abs(centre) - jnp.abs(c.z) * h - e) / jnp.sqrt(c.dot(c))
                        for c, centre, e in zip(columns, centres, extents, strict=True)]
    crosses = [Vec3(-c.y, c.x, jnp.zeros_like(c.x)) for c in columns]
    cross_centres = [u.dot(translation) for u in crosses]
    edge_separations = []
    for u, centre in zip(crosses, cross_centres, strict=True):
        length_sq = u.dot(u)
        edge_separations.append(jnp.where(length_sq > 0, (jnp.abs(centre) - box_reach(u))
                                          / jnp.sqrt(jnp.where(length_sq > 0, length_sq, 1)), -jnp.inf))
    # The deepest axes and their separations, computed once: the three candidates read them.
    (s_face, face), (s_edge, edge) = _once((_first_of_largest(face_separations),
                                            _first_of_largest(edge_separations)))
    # Computed once: XLA:CPU copies the centre's expression into each fusion that reads the sign, and
    # where the centre is within rounding of 0 (a capsule centred on a flat box's plane) the copies
    # rounded it to different signs, turning one component of the normal and not the others
    # (float32, one lane of a batch: 0.5 rad off).
    face_sign, edge_sign = _once((jnp.where(_pick(face, centres) >= 0, 1, -1).astype(dtype),
                                  jnp.where(_pick(edge, cross_centres) >= 0, 1, -1).astype(dtype)))
    towards = _pick(face, columns) * face_sign  # the segment's support direction against B's face
    face_normal = towards.unit()
    edge_normal = (_pick(edge, crosses) * edge_sign).unit()
    face_contact, face_spans_face, face_has_area = _segment_face(axis_in_b, origin_in_b, towards, face,
                                                                 face_sign, h, half, tolerance)
    edge_contact, edge_is_face = _segment_edge(rotation, translation, edge, edge_normal, h, half)
    corner_contact = _segment_corner(rotation, translation, axis_in_b, origin_in_b, h, half)

    # Choose (`_box_colliders.box_box`): apart, the nearest candidate whose points are its axis's
    # separation apart; overlapping, the deepest axis, the face's within rounding.
    face_gap, edge_gap, corner_gap = (rotation.apply(c.point) + translation - Vec3(jnp.zeros_like(c.z),
                                                                                   jnp.zeros_like(c.z), c.z)
                                      for c in (face_contact, edge_contact, corner_contact))
    face_length, edge_length, corner_length = (v.unit().dot(v) for v in (face_gap, edge_gap, corner_gap))
    s_max = jnp.maximum(s_face, s_edge)
    separated = s_max > 0
    tie = tolerance / 8
    face_found = (face_length <= s_face + tie) & is_along(face_gap, face_normal, tolerance)
    edge_found = edge_is_face & (edge_length <= s_edge + tie) & is_along(edge_gap, edge_normal, tolerance)
    nearest = jnp.minimum(jnp.minimum(jnp.where(face_found, face_length, jnp.inf),
                                      jnp.where(edge_found, edge_length, jnp.inf)), corner_length)
    # A face with a side of length 0 (a flat or a needle box's) is an edge or a point: a segment lying on
    # it crosses it, and the edge contact that ties it holds the crossing (the face's holds an end).
    crossing = edge_is_face & ~face_has_area
    edge_nearest = edge_found & (edge_length <= nearest + tie)
    use_face = jnp.where(separated, face_found & (face_length <= nearest + tie) & ~(crossing & edge_nearest),
                         (s_face >= s_edge - tolerance) & ~(crossing & (s_edge >= s_face - tolerance)))
    use_edge = ~use_face & (~separated | edge_nearest)
    # The corner pair's direction unless it separates the cores less, beyond rounding, than the axis
    # that separates them most; then, and for touching corners, that axis (`_box_colliders.box_box`).
    face_first = s_face >= s_edge - tolerance
    corner_direction = corner_gap.unit()
    corner_separation = (jnp.abs(corner_direction.dot(translation)) - jnp.abs(corner_direction.z) * h
                         - box_reach(corner_direction))
    # Computed once: copied into the readers of the distance and the normal, the test cost capsule-box 20%.
    corner_normal = _once(where((corner_gap.largest_abs() > resolution)
                                & (corner_separation >= jnp.where(face_first, s_face, s_edge) - tolerance),
                                corner_direction, where(face_first, face_normal, edge_normal)))
    distance = _choose(use_face, use_edge, s_face, s_edge, corner_normal.dot(corner_gap))
    distance = jnp.where(separated, jnp.maximum(jnp.minimum(distance, nearest), s_max), distance)
    normal = _choose(use_face, use_edge, face_normal, edge_normal, corner_normal)
    chosen = _Candidate(*(
        tuple(_choose(use_face, use_edge, *values) for values in zip(*fields, strict=True))
        if isinstance(fields[0], tuple) else _choose(use_face, use_edge, *fields)
        for fields in zip(face_contact, edge_contact, corner_contact, strict=True)))
    chosen = _once(chosen)  # the simplex's rows read it at every element
    directions_b, corners_b = _box_rows(chosen.base, chosen.raised, half, dtype)
    signs = _per_slot(*chosen.signs_a)
    simplex = Simplex(_axial_rows(signs, 1), directions_b, _axial_rows(signs, h), corners_b,
                      _per_slot(*chosen.weights), _per_slot(*chosen.mask))
    spans_face = jnp.where(use_face, face_spans_face, edge_is_face)
    kind = jnp.where(separated, NormalKind.FROM_CLOSEST, jnp.where(spans_face, NormalKind.FROM_FACE,
                                                                   NormalKind.FIXED))
    return _Contact(distance, normal, simplex, chosen.z, chosen.point, kind)


def _segment_pair_simplex(half_a, half_b, s, t, diagonal_along, far_sign, use_diagonal) -> Simplex:
    """The simplex of the closest features of two segments with closest points at parameters `s`, `t`
    in [0, 1] (from the −z end). Both inside: three corners of D's parallelogram of the two segments
    (`_colliders.parallelogram`); an end against the other's inside: that end with the other's two
    ends; two ends: one point.

    Where `use_diagonal` (parallel segments, both points inside), D's parallelogram is flat and its
    long diagonal's ends hold the contact instead: (A's −z end, B's end of sign `far_sign`) and (A's +z
    end, B's other end), weighted (1 − `diagonal_along`, `diagonal_along`).
    """
    inside_a, inside_b = (s > 0) & (s < 1), (t > 0) & (t < 1)
    both = inside_a & inside_b
    end_a, end_b = s >= 1, t >= 1  # the + ends, where the parameter was clamped to 1
    # An end against an inside: the inside's ends in slots 0 and 1.
    corner_a, corner_b, corner_weights = parallelogram(s, t, _SLOTS)
    high_a = jnp.where(both, corner_a, jnp.where(inside_a, _SLOTS == 1, end_a))
    high_b = jnp.where(both, corner_b, jnp.where(~inside_a & inside_b, _SLOTS == 1, end_b))
    one = jnp.ones_like(s)
    weights = jnp.where(both, corner_weights, jnp.where(inside_a, _per_slot(1 - s, s), jnp.where(
        inside_b, _per_slot(1 - t, t), _per_slot(one))))
    count = jnp.where(both, 3, jnp.where(inside_a | inside_b, 2, 1))
    signs_a = jnp.where(_SLOTS < 3, jnp.where(high_a, 1, -1), 0).astype(s.dtype)
    signs_b = jnp.where(_SLOTS < 3, jnp.where(high_b, 1, -1), 0).astype(s.dtype)
    signs_a = jnp.where(use_diagonal, _per_slot(-one, one), signs_a)
    signs_b = jnp.where(use_diagonal, _per_slot(far_sign, -far_sign), signs_b)
    weights = jnp.where(use_diagonal, _per_slot(1 - diagonal_along, diagonal_along), weights)
    mask = _SLOTS < jnp.where(use_diagonal, 2, count)
    return Simplex(_axial_rows(signs_a, 1), _axial_rows(signs_b, 1), _axial_rows(signs_a, half_a),
                   _axial_rows(signs_b, half_b), weights, mask)


def _segment_segment(rotation: Rotation, translation: Vec3, half_a, half_b, resolution) -> _Contact:
    """A's core segment (along A's z) and B's."""
    dtype = translation.x.dtype
    zero = jnp.zeros((), dtype)
    start_a, end_a = Vec3(zero, zero, -half_a), Vec3(zero, zero, half_a)
    start_b = translation - rotation.column(2) * half_b
    end_b = translation + rotation.column(2) * half_b
    s, t = _once(segment_segment(start_a, end_a, start_b, end_b))  # every output reads them: 1.0-1.2x
    axis_a, axis_b = end_a - start_a, end_b - start_b
    parallel = nearly_parallel(axis_a, axis_b)
    # Parallel segments overlapping: the diagonal of D's flat parallelogram (`_segment_pair_simplex`),
    # weighted at the origin's projection onto it, so that both witness points lie on their segments.
    same_way = axis_a.dot(axis_b) >= 0
    along = point_segment(Vec3(zero, zero, zero), where(same_way, end_b, start_b) - start_a,
                          where(same_way, start_b, end_b) - end_a)
    far_sign = jnp.where(same_way, 1, -1).astype(dtype)
    inside_a, inside_b = (s > 0) & (s < 1), (t > 0) & (t < 1)
    use_diagonal = inside_a & inside_b & parallel
    skew_face = inside_a & inside_b & ~parallel
    simplex = _segment_pair_simplex(half_a, half_b, s, t, along, far_sign, use_diagonal)
    # The simplex's weighted points, directly: the closest points' parameters, or the diagonal's.
    point_a = half_a * (2 * jnp.where(use_diagonal, along, s) - 1)
    point_b = half_b * jnp.where(use_diagonal, far_sign * (1 - 2 * along), 2 * t - 1)
    gap = rotation.column(2) * point_b + translation - Vec3(zero, zero, point_a)
    # Where a closest point lies inside its segment, the exact gap is perpendicular to that segment, and
    # perpendicular to both along z × B's axis (exact: B's rotation's components) where both do and the
    # segments are not parallel. The computed gap's component along a segment is the rounding of s or
    # t, which grows as the segments turn parallel: a normal read from it was tilted by up to that over
    # |gap| (1.5e-4 rad in float64 for crossing capsules 1e-6 rad from coaxial, whose cores' distance
    # was 20 roundings), and a segment's far end then overlapped the other body by that tilt times its
    # length.
    direction_b = rotation.column(2)
    across_both = Vec3(-direction_b.y, direction_b.x, zero)
    gap_across = where(
        skew_face,
        across_both * safe_ratio(gap.dot(across_both), across_both.dot(across_both)),
        where(inside_a, Vec3(gap.x, gap.y, zero), where(inside_b, gap - direction_b * gap.dot(direction_b),
                                                        gap)))
    apart = gap_across.largest_abs() > resolution
    # Cores that cross (or lie on one line) separate fastest across both: the parallelogram's normal,
    # towards B's centre; on one line, any direction across it.
    crossing = axis_a.cross(axis_b)
    towards_b = crossing * jnp.where(crossing.dot(translation) < 0, -1, 1).astype(dtype)
    line = where(axis_a.is_zero(), axis_b, axis_a).unit()
    across = where(line.is_zero(), Vec3.axis(2, dtype), line).across()
    normal = where(apart, gap_across, where(parallel, across, towards_b)).unit()
    kind = jnp.where(apart, NormalKind.FROM_CLOSEST,
                     jnp.where(skew_face, NormalKind.FROM_FACE, NormalKind.FIXED))
    return _Contact(normal.dot(gap), normal, simplex, point_a, point_b, kind)


def _exchanged(contact: _Contact, rotation: Rotation) -> _Contact:
    """The contact of (A, B) from that of (B, A), which is in B's frame (`_colliders.exchanged`)."""
    s = contact.simplex
    return _Contact(contact.distance, -rotation.apply(contact.normal),
                    Simplex(s.directions_b, s.directions_a, s.points_b, s.points_a, s.weights, s.mask),
                    contact.point_b, contact.point_a, contact.normal_kind)


def _core_contact(shape_a, shape_b, rotation: Rotation, translation: Vec3, resolution) -> _Contact:
    """The cores' contact, A's frame, by the solver of their kinds (trace time)."""
    dtype = translation.x.dtype
    core_a, core_b = innermost(shape_a), innermost(shape_b)
    if isinstance(core_a, Box) or (isinstance(core_a, Capsule) and isinstance(core_b, Sphere)):
        inverse = rotation.transpose()  # solved as (B, A): A's pose in B's frame is (Rᵀ, −Rᵀ t)
        return _exchanged(_core_contact(shape_b, shape_a, inverse, -inverse.apply(translation), resolution),
                          rotation)
    half_a, half_b = _half_length(shape_a, dtype), _half_length(shape_b, dtype)
    if isinstance(core_b, Box):
        extents = Vec3.of(core_b.half_extents)
        if isinstance(core_a, Capsule):
            return _segment_box(rotation, translation, half_a, extents, resolution)
        return _point_box(rotation, translation, extents, resolution)
    if isinstance(core_b, Capsule):
        if isinstance(core_a, Capsule):
            return _segment_segment(rotation, translation, half_a, half_b, resolution)
        return _point_segment(rotation, translation, half_b, resolution)
    return _point_point(rotation, translation, resolution)


def _all_of(flags):
    total = jnp.asarray(True)
    for flag in flags:
        total = total & flag
    return total


def _placed(rotation: Rotation, translation: Vec3, point) -> Vec3:
    """A core point in the world frame from its body's frame (`_Contact`: a z coordinate or a `Vec3`)."""
    if isinstance(point, Vec3):
        return rotation.apply(point) + translation
    return rotation.column(2) * point + translation


def _turned(rotation: Rotation, direction: Vec3, whole: bool) -> Vec3:
    """`direction` (A's frame) in B's frame: whole where `whole` (a box's feature reads every
    component), else its z component only (a point's or a segment's reads no other)."""
    if whole:
        return rotation.apply_transpose(direction)
    zero = jnp.zeros_like(direction.z)
    return Vec3(zero, zero, rotation.column(2).dot(direction))


def _feature(shape, margin, direction: Vec3, relative_tolerance) -> Feature:
    """`Shape.feature` along `direction` (the body's frame): CURVED where the margin is positive, else
    the core's (a point's vertex, a segment's end or edge, a box's corner, edge or face)."""
    core = innermost(shape).core_feature(direction.array(), relative_tolerance)
    curved = feature_without_vertices(FeatureDim.CURVED)
    return jax.tree_util.tree_map(lambda c, f: jnp.where(margin > 0, c, f), curved, core)


def solve(config: Config, mode: QueryMode, shape_a, pose_a, shape_b, pose_b, distance_upper_bound):
    """`_solve.Solution` of one query on a pair that `handles` accepts (the stages of `_solve.solve`)."""
    from ._solve import Solution, cast  # _solve dispatches here

    # prepare: one dtype; validity; shapes sanitised by their own validity (shapes shared by a batch of
    # poses stay unbatched), poses by the pair's; B's pose in A's frame; the pair's scale.
    dtype = float_dtype(*float_leaves((shape_a, pose_a, shape_b, pose_b)))
    shape_a, pose_a, shape_b, pose_b = cast((shape_a, pose_a, shape_b, pose_b), dtype)
    # Radii, half-lengths and half extents: finite, ≥ 0 (a box's per component).
    sizes = [size for leaf in jax.tree_util.tree_leaves((shape_a, shape_b))
             for size in ([leaf] if jnp.ndim(leaf) == 0 else [leaf[i] for i in range(3)])]
    shapes_valid = _all_of(jnp.isfinite(size) & (size >= 0) for size in sizes)
    poses_finite = _all_of(jnp.isfinite(pose.translation[i]) for pose in (pose_a, pose_b) for i in range(3))
    (unit_a, rotation_a_ok), (unit_b, rotation_b_ok) = (unit_quaternion_components(pose.rotation)
                                                        for pose in (pose_a, pose_b))
    is_valid = shapes_valid & poses_finite & rotation_a_ok & rotation_b_ok
    shape_a, shape_b = jax.tree_util.tree_map(lambda leaf: computed_once(jnp.where(shapes_valid, leaf, 0)),
                                              (shape_a, shape_b))
    rotation_a, rotation_b = (
        Rotation.of_unit_quaternion(*(computed_once(jnp.where(is_valid, unit[i], float(i == 0)))
                                      for i in range(4)))
        for unit in (unit_a, unit_b))
    zero3 = Vec3(*(jnp.zeros((), dtype),) * 3)
    translation_a, translation_b = (where(is_valid, Vec3.of(pose.translation), zero3)
                                    for pose in (pose_a, pose_b))
    rotation = rotation_a.transpose() @ rotation_b
    translation = rotation_a.apply_transpose(translation_b - translation_a)
    # The pair's placement and sizes are read everywhere, and every pair's outputs broadcast them over
    # rows (`_vector.computed_once`): 1.05-1.4x the rate of every pair here.
    rotation, translation = _once((rotation, translation))
    reach = jnp.maximum(shape_a.reach(), shape_b.reach())
    scale = computed_once(jnp.maximum(reach, translation.largest_abs()))  # else copied: capsule-box 1.15x
    resolution = touching_resolution(scale)

    contact = _core_contact(shape_a, shape_b, rotation, translation, resolution)

    # world_result: margins, touching, status, world frame, features, placeholders for invalid input.
    margin_a, margin_b = shape_a.margin(), shape_b.margin()
    margin = margin_a + margin_b
    signed = contact.distance - margin
    signed = jnp.where(jnp.abs(signed) <= resolution, 0, signed)
    if mode is QueryMode.SIGNED:
        status = jnp.where(signed > 0, Status.SEPARATED, jnp.where(signed < 0, Status.PENETRATING,
                                                                   Status.INTERSECTING))
    else:
        status = jnp.where((contact.distance > 0) & (signed > 0), Status.SEPARATED, Status.INTERSECTING)
        if distance_upper_bound is not None:
            status = jnp.where(contact.distance - margin > distance_upper_bound, Status.BOUND_EXCEEDED,
                               status)
    normal = rotation_a.apply(contact.normal)
    point_a = _placed(rotation_a, translation_a, contact.point_a) + normal * margin_a
    point_b = _placed(rotation_b, translation_b, contact.point_b) - normal * margin_b
    tangent_scale = jnp.ones((), dtype)
    has_features = is_valid
    if mode is not QueryMode.SIGNED:
        # Every output reads it (the features through `has_features`): computed once, not copied with
        # the whole contact into each (`distance` of sphere-box 1.7x, capsule-capsule 1.2-1.3x).
        overlapping = computed_once(signed <= 0)
        has_features = has_features & ~overlapping
        middle = (point_a + point_b) * 0.5
        point_a, point_b = where(overlapping, middle, point_a), where(overlapping, middle, point_b)
        tangent_scale = jnp.where(overlapping, 0, tangent_scale)
        signed = jnp.maximum(signed, 0)
    tolerance = config.resolved(dtype).feature_tolerance
    no_feature = feature_without_vertices(FeatureDim.NONE)
    directions = contact.normal, _turned(rotation, -contact.normal, isinstance(innermost(shape_b), Box))
    feature_a, feature_b = (
        jax.tree_util.tree_map(lambda held, none: jnp.where(has_features, held, none),
                               _feature(shape, shape_margin, direction, tolerance), no_feature)
        for shape, shape_margin, direction in zip((shape_a, shape_b), (margin_a, margin_b), directions,
                                                  strict=True))
    zeros3 = jnp.zeros(3, dtype)
    with_box = isinstance(contact.point_a, Vec3) or isinstance(contact.point_b, Vec3)
    as_array = Vec3.array_by_component if with_box else Vec3.array  # (`array_by_component`)
    # The normal by component on every pair: the tangent rule reads it, and stacked, its unit vector's
    # chain ran unvectorised inside `value_and_grad` (sphere–box: 3x that kernel's time).
    result = DistanceResult(
        distance=jnp.where(is_valid, signed, 0).astype(dtype),
        point_a=jnp.where(is_valid, as_array(point_a), zeros3),
        point_b=jnp.where(is_valid, as_array(point_b), zeros3),
        normal=jnp.where(is_valid, normal.array_by_component(), jnp.array([0, 0, 1], dtype)),
        status=jnp.where(is_valid, status, Status.INVALID_INPUT).astype(jnp.int32),
        iterations=jnp.zeros((), jnp.int32),
        simplex=contact.simplex,
        feature_a=feature_a,
        feature_b=feature_b,
    )
    return Solution(result, jnp.asarray(contact.normal_kind, jnp.int32),
                    jnp.where(is_valid, tangent_scale, 0).astype(dtype), None)
