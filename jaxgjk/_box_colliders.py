"""The exact contact of two box cores (box–box). `_scalar_pairs` solves a segment core against a box
(capsule–box) by the same reasoning, on per-pair scalars, taking the segment as a box with half
extents (0, 0, h) whose only edge is its axis; the notes on segments below are for it.

A and B are the two cores, everything is in A's frame (``x_A = R x_B + t``). The signed distance of two
convex cores is the largest separation ``s(u) = min_B u·x − max_A u·x`` over unit directions u, and
every s(u) is a lower bound of it.

Separating axes. The Minkowski difference D = B − A is a polytope whose facets are sums of faces of
the two cores, so their normals are face normals of a box or cross products of two edge directions:
A's face normals (none for a segment), B's, and ``a_i × b_j`` for A's edge directions a_i and B's b_j
(the cross products are exact in A's frame: they permute components of B's axes). That holds for flat
or point-like boxes too, where D may be flat: a direction across D's plane, or across an edge of D
within its plane, is one of these up to a component along the plane's normal, which does not change
the separation. So the cores overlap iff no axis separates them, and then the largest s(u) over the
axes is minus the penetration depth (the nearest facet of D; the origin's projection onto it lies in
it, else the segment from the origin to it would leave D through a nearer facet).

Separated cores. Let v be the closest vector from A to B (unique) and P the set of A's points p with
p + v in B: a convex set in A's supporting plane along v, the overlap of A's and (B − v)'s faces there.
An extreme point of P is a vertex of A, a vertex of B − v, or the crossing of an edge of each (two
convex polygons in a plane). So a closest pair is either a corner of one core with its closest point
on the other (16 corner–box clamps for two boxes, 2 + 8 for a segment), or the crossing of two skew
edges, where v ∥ a_i × b_j is the unique maximiser of s(u), hence the best cross-product axis, and the
edges are the cores' support edges along ±v. The candidates are therefore the corners, the best face
axis's face contact and the best edge axis's edge contact, each a pair of actual points; the least of
their distances is the exact distance, and an axis contact whose points are ``s(u)`` apart along u
gives the distance with u as its exact normal.

Contacts along an axis. A face of one box (F) against the other core (O): O's deepest feature along
the normal is the set of its corners within rounding of the deepest (a vertex, an edge or a face, a
quadrilateral Q in either case). The witness on O is the mean of points of Q whose projections lie in
F's face — Q's edges clipped to F's rectangle and F's corners that project into Q — a convex
combination of points of the (convex) overlap of the two features, so it lies on both projections;
the witness on F is its projection onto F's face. An edge axis: the closest points of the two support
edges. The simplex is a triangle of D's face holding a pair of points in contact, so that the tangent
rule moves the distance as that pair does: for a face axis, a vertex of the overlap (O's corner
against three corners of F's face, F's corner against O's face, or an edge of each, coupled);
for an edge axis, D's parallelogram of the two edges (`_colliders.parallelogram`). Where the overlap
is more than a point, the distance has no derivative in some turns, and the vertex's is one of its
one-sided derivatives.

Rounding. Within a tolerance of 32 ε times the sizes and the centres' offset, O's corners tie (a face
tilted by rounding is a face contact); overlapping cores take the deepest axis, a face's where an edge
axis is deeper by no more than the tolerance (its witnesses are central), and among tied faces one with
area before one with a side of length 0 (a flat or needle box's); apart, the nearest candidate,
the face contact first, then the edge contact, where they are within the tolerance of it. The cores
are apart iff some axis separates them by more than 0, so the distance is continuous through contact.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ._closest import nearly_parallel
from ._colliders import (
    box_feature_simplex,
    closed_contact,
    is_along,
    is_apart,
    padded_simplex,
    parallelogram,
    staircase,
)
from ._contact import Contact, NormalKind
from ._minkowski import RelativePair
from ._result import Simplex
from ._scalars import Vec3
from ._tolerance import BOX_AXIS_ROUNDINGS, epsilon
from ._vector import computed_once, dot, matvec, rmatvec, select, unit_vector

# A rectangle's corners in cyclic order, as signs along its two axes.
_RECTANGLE = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]])
# A box's corners as sign vectors (8, 3), corner c at bits (x, y, z) of c (1 for the + side).
_CORNER_SIGNS = 2 * ((np.arange(8)[:, None] >> np.arange(3)) & 1) - 1


def _axes(rotation):
    """The candidate separating axes (15, 3), A's frame, not normalised: A's face normals, B's, then
    ``a_i × b_j`` for A's axes i and B's j (j fastest)."""
    eye = jnp.eye(3, dtype=rotation.dtype)
    crosses = [jnp.cross(eye[i][None], rotation.T) for i in range(3)]
    return jnp.concatenate([eye, rotation.T] + crosses)


def _separations(axes, rotation, translation, half_a, half_b):
    """The separation s(u) (K,) of the cores along each of `axes` (K, 3) (−inf for a zero axis: parallel
    edges), and the sign (K,) that turns each axis from A towards B (centres' offset, ties +)."""
    length_sq = dot(axes, axes)
    valid = length_sq > 0
    centre = dot(axes, translation)
    reach_a = dot(jnp.abs(axes), half_a)
    reach_b = dot(jnp.abs(rmatvec(rotation, axes)), half_b)
    length = jnp.sqrt(jnp.where(valid, length_sq, 1))
    separation = jnp.where(valid, (jnp.abs(centre) - reach_a - reach_b) / length, -jnp.inf)
    return separation, jnp.where(centre >= 0, 1, -1).astype(translation.dtype)


def separation_bound(pair: RelativePair, core_a, core_b):
    """The largest separation () of the two core boxes over their separating axes: a lower bound of
    their distance, and > 0 iff they are apart (module docstring). Cheaper than `box_box`, which
    clamps its distance to at least this value apart."""
    separation, _ = _separations(_axes(pair.rotation), pair.rotation, pair.translation, core_a.half_extents,
                                 core_b.half_extents)
    return jnp.max(separation)


def _sided_simplex(vertex_on_a, vertex, feature) -> Simplex:
    """The simplex of one core's corner against three slots of the other's feature: `vertex` (direction,
    corner) (3,) each, `feature` (directions, corners, weights, mask) as `box_feature_simplex` gives them;
    the corner is A's where `vertex_on_a` (), else B's."""
    directions, corners, weights, mask = feature
    slots = jnp.broadcast_to(vertex[0], (3, 3)), jnp.broadcast_to(vertex[1], (3, 3))
    side_a = [jnp.where(vertex_on_a, v, f) for v, f in zip(slots, (directions, corners), strict=True)]
    side_b = [jnp.where(vertex_on_a, f, v) for v, f in zip(slots, (directions, corners), strict=True)]
    return padded_simplex(*side_a, *side_b, weights, mask)


def _coupled_slots(feature_f, feature_o):
    """Pairs of corners of F's and O's features with shared weights whose two sides average to the
    points of `feature_f` and `feature_o` (`box_feature_simplex` slots each, one of them a single
    corner, or two edges): the simplex of D's face holding that pair of points. An edge pair is
    coupled by `_colliders.staircase`, so the weights stay convex.

    Returns (slots_f, slots_o, weights (3,), mask (3,)): slots_f (directions, corners) (3, 3) each."""
    (directions_f, corners_f, weights_f, mask_f), (directions_o, corners_o, weights_o, mask_o) = (
        feature_f, feature_o)
    one_f, one_o = ~mask_f[1], ~mask_o[1]
    steps_f, stairs = staircase(weights_f[0], weights_o[0])
    f_first = one_o | (~one_f & steps_f)
    index = jnp.arange(3)
    index_f = jnp.where(index == 0, 0, jnp.where(index == 1, f_first, jnp.where(one_o, 2, ~one_f)))
    index_o = jnp.where(index == 0, 0, jnp.where(index == 1, ~f_first, jnp.where(one_f, 2, ~one_o)))
    weights = jnp.where(one_o, weights_f, jnp.where(one_f, weights_o, jnp.stack(stairs)))
    count = jnp.sum(mask_f) + jnp.sum(mask_o) - 1
    return ((directions_f[index_f], corners_f[index_f]), (directions_o[index_o], corners_o[index_o]),
            weights, index < count)


def _face_contact(rotation, translation, half_face, half_other, axis, sign, tolerance):
    """The contact of the face ``x[axis] = sign·half_face[axis]`` of a box F with the other core O that
    lies beyond it, in F's frame (``x_F = rotation x_O + translation``).

    Returns:
        point_face: (3,) on F's face, F's frame.
        point_other: (3,) on O's deepest feature along the face's normal, O's frame, projecting into
            F's face where the two features overlap (else O's deepest corner).
        slots: (slots_f, slots_o, weights, mask) of the simplex's pairs of F's and O's corners
            (`_coupled_slots`), at a vertex of the two features' overlap.
        spans_face: () bool, the simplex is a triangle whose normal is the contact's.
    """
    dtype = translation.dtype
    index = jnp.arange(3)
    on_axis = index == axis
    towards = -sign * rotation[axis]  # O's frame: its support direction against the face's normal
    deepest = jnp.where(towards >= 0, 1, -1).astype(dtype)
    # O's deepest feature: it extends along O's axes whose corners lie within `tolerance` of the
    # deepest along the normal (at most two: never the steepest).
    free = ((2 * half_other * jnp.abs(towards) <= tolerance) & (half_other > 0)
            & (index != jnp.argmax(jnp.abs(towards))))
    count = jnp.sum(free)
    first = (index == jnp.argmax(free)) & (count >= 1)
    second = (index == 2 - jnp.argmax(free[::-1])) & (count >= 2)
    pattern = jnp.asarray(_RECTANGLE, dtype)
    signs = jnp.where(first, pattern[:, :1], jnp.where(second, pattern[:, 1:], deepest))
    corners = signs * half_other  # Q (4, 3), cyclic, O's frame
    # Q's edges (a point: one edge of length 0; an edge: two, there and back) clipped to F's face
    # rectangle, widened by the tolerance, in parameters [enter, leave] along them (Liang–Barsky).
    exists = jnp.stack([count >= 0, count >= 2, count >= 1, count >= 2])
    start = matvec(rotation, corners) + translation
    step = jnp.roll(start, -1, axis=0) - start
    bound = jnp.where(on_axis, jnp.inf, half_face + tolerance)
    moving = step != 0
    step_safe = jnp.where(moving, step, 1)
    low, high = (-bound - start) / step_safe, (bound - start) / step_safe
    within = jnp.abs(start) <= bound
    enter = jnp.where(moving, jnp.minimum(low, high), jnp.where(within, -jnp.inf, jnp.inf))
    leave = jnp.where(moving, jnp.maximum(low, high), jnp.where(within, jnp.inf, -jnp.inf))
    enter, leave = jnp.maximum(jnp.max(enter, axis=1), 0), jnp.minimum(jnp.min(leave, axis=1), 1)
    clipped = exists & (enter <= leave)
    edge_step = jnp.roll(corners, -1, axis=0) - corners
    # F's face corners whose projections along O's face normal fall inside Q (a face of O).
    face_corners = half_face * jnp.where(on_axis, sign, jnp.where(index == (axis + 1) % 3, pattern[:, :1],
                                                                   pattern[:, 1:]))
    seen = rmatvec(rotation, face_corners - translation)
    within_q = ~free | (jnp.abs(seen) <= half_other + tolerance)
    inside = (count == 2) & within_q[:, 0] & within_q[:, 1] & within_q[:, 2]
    projected = jnp.where(free, jnp.clip(seen, -half_other, half_other), deepest * half_other)
    points = jnp.concatenate([corners + enter[:, None] * edge_step, corners + leave[:, None] * edge_step,
                              projected])
    valid = jnp.concatenate([clipped, clipped, inside])
    found = jnp.sum(valid)
    mean = jnp.sum(jnp.where(valid[:, None], points, 0), axis=0) / jnp.maximum(found, 1).astype(dtype)
    deepest_corner = deepest * half_other
    point_other = jnp.where(found > 0, mean, deepest_corner)
    face_value = sign * half_face

    def onto_face(point):  # a point of F's frame, clamped to the face
        return jnp.where(on_axis, face_value, jnp.clip(point, -half_face, half_face))

    point_face = onto_face(matvec(rotation, point_other) + translation)
    # The simplex holds a vertex of the overlap, a pair of points in contact: where Q's first clipped
    # edge enters F's face (Q's corner, or the crossing of an edge of each), else F's first corner
    # inside Q, else (no overlap, by rounding) O's deepest corner.
    edge, corner = jnp.argmax(clipped), jnp.argmax(inside)
    any_edge, any_corner = jnp.any(clipped), jnp.any(inside)
    enter_edge = enter[edge]
    vertex_other = jnp.where(any_edge, corners[edge] + enter_edge * edge_step[edge],
                             jnp.where(any_corner, projected[corner], deepest_corner))
    vertex_face = jnp.where(any_edge, start[edge] + enter_edge * step[edge],
                            jnp.where(any_corner, face_corners[corner],
                                      matvec(rotation, deepest_corner) + translation))
    vertex_face, vertex_other = computed_once(vertex_face), computed_once(vertex_other)  # (box-box 10%)
    # At Q's corner, F's whole face (its normal moves with F: `NormalKind.FROM_FACE`).
    at_corner = jnp.where(any_edge, enter_edge <= 0, ~any_corner)
    vertex_face = onto_face(vertex_face)
    free_f = jnp.where(at_corner, ~on_axis & (half_face > 0), jnp.abs(vertex_face) < half_face)
    feature_f = box_feature_simplex(vertex_face, half_face, free_f, zero_signs=sign)
    feature_o = box_feature_simplex(vertex_other, half_other, zero_signs=deepest)
    # Its triangle's normal is the contact's, unless it spans two nearly parallel edges.
    two_edges = feature_f[3][1] & ~feature_f[3][2] & feature_o[3][1] & ~feature_o[3][2]
    parallel = nearly_parallel(Vec3.of(feature_f[1][1] - feature_f[1][0]),
                               Vec3.of(matvec(rotation, feature_o[1][1] - feature_o[1][0])))
    slots = _coupled_slots(feature_f, feature_o)
    return point_face, point_other, slots, slots[3][2] & ~(two_edges & parallel)


def _edge_contact(rotation, translation, half_a, half_b, axis_a, axis_b, normal):
    """The contact of A's support edge along `normal` (3,) parallel to its axis `axis_a` and B's support
    edge along −normal parallel to its axis `axis_b`: the simplex of D's parallelogram of the two edges
    (`_colliders.parallelogram`'s) weighted at the closest points of their lines, each clamped to its edge,
    those points (A's frame, B's frame), and whether it spans a face of D (the edges are not parallel
    to rounding)."""
    def edge_directions(axis, direction):  # the sign vectors (2, 3) of the edge's ends
        signs = jnp.where(direction >= 0, 1, -1).astype(direction.dtype)
        return jnp.where(jnp.arange(3) == axis, jnp.asarray([[-1], [1]], direction.dtype), signs)

    directions_a = edge_directions(axis_a, normal)
    directions_b = edge_directions(axis_b, -rmatvec(rotation, normal))
    ends_a, ends_b = directions_a * half_a, directions_b * half_b
    ends_b_in_a = matvec(rotation, ends_b) + translation
    # Lines a(s) = centre_a + s x, b(t) = centre_b + t y along unit x, y: with c = x × y, the closest
    # points are s = ((r × y)·c)/|c|², t = ((r × x)·c)/|c|² for r = centre_b − centre_a (no lengths
    # squared, so any scale is safe).
    along_a = (jnp.arange(3) == axis_a).astype(normal.dtype)
    along_b = matvec(rotation, (jnp.arange(3) == axis_b).astype(normal.dtype))
    cross = jnp.cross(along_a, along_b)
    cross_sq = dot(cross, cross)
    cross_sq_safe = jnp.where(cross_sq > 0, cross_sq, 1)
    offset = (ends_b_in_a[0] + ends_b_in_a[1] - ends_a[0] - ends_a[1]) / 2

    def fraction(along, half):  # from the edge's first end to its second, clamped to [0, 1]
        return (jnp.clip(along, -half, half) + half) / jnp.where(half > 0, 2 * half, 1)

    half_edge_a, half_edge_b = half_a[axis_a], half_b[axis_b]
    s = fraction(dot(jnp.cross(offset, along_b), cross) / cross_sq_safe, half_edge_a)
    t = fraction(dot(jnp.cross(offset, along_a), cross) / cross_sq_safe, half_edge_b)
    high_a, high_b, weights = parallelogram(s, t)
    index_a, index_b = high_a.astype(jnp.int32), high_b.astype(jnp.int32)
    simplex = padded_simplex(directions_a[index_a], ends_a[index_a], directions_b[index_b], ends_b[index_b],
                              weights, jnp.ones(3, bool))
    points = ends_a[0] + s * (ends_a[1] - ends_a[0]), ends_b[0] + t * (ends_b[1] - ends_b[0])
    return simplex, points, (~nearly_parallel(Vec3.of(along_a), Vec3.of(along_b)) & (half_edge_a > 0)
                             & (half_edge_b > 0))


def _corner_contact(rotation, translation, half_a, half_b):
    """The closest pair of a corner of either core and the other core: (simplex, point_a (3,), point_b
    (3,)), each in its body's frame."""
    signs_a = signs_b = jnp.asarray(_CORNER_SIGNS, translation.dtype)
    corners_a_in_b = rmatvec(rotation, signs_a * half_a - translation)
    corners_b_in_a = matvec(rotation, signs_b * half_b) + translation
    gaps = jnp.concatenate([corners_a_in_b - jnp.clip(corners_a_in_b, -half_b, half_b),
                            corners_b_in_a - jnp.clip(corners_b_in_a, -half_a, half_a)])
    best = jnp.argmin(dot(gaps, gaps))
    from_a = best < len(signs_a)  # A's corner against B (B's frame), else B's against A (A's frame)
    half_box = jnp.where(from_a, half_b, half_a)
    on_box = jnp.clip(jnp.concatenate([corners_a_in_b, corners_b_in_a])[best], -half_box, half_box)
    direction = jnp.concatenate([signs_a, signs_b])[best]
    corner = direction * jnp.where(from_a, half_a, half_b)
    simplex = _sided_simplex(from_a, (direction, corner), box_feature_simplex(on_box, half_box))
    return simplex, jnp.where(from_a, corner, on_box), jnp.where(from_a, on_box, corner)


def box_box(pair: RelativePair, core_a, core_b, resolution) -> Contact:
    """The contact of A's core box and B's, A's frame: see the module docstring. `resolution` (): corner
    points closer than it give no normal of their own (the face axis's holds)."""
    rotation, translation = pair.rotation, pair.translation
    half_a, half_b = core_a.half_extents, core_b.half_extents
    dtype = translation.dtype
    # Rounding of the separations and of the corners' heights along an axis (A's frame, lengths); a
    # reduction, which XLA:CPU computes once, where an elementwise formula is copied into every fusion
    # that reads it.
    scales = jnp.max(jnp.abs(jnp.stack([translation, half_a, half_b])), axis=1)
    tolerance = BOX_AXIS_ROUNDINGS * epsilon(dtype) * (scales[0] + scales[1] + scales[2])
    axes = _axes(rotation)
    separation, sign = _separations(axes, rotation, translation, half_a, half_b)
    # One sign per axis for every reader: copied into each fusion, a centre within rounding of 0 could
    # round to different signs (`_scalar_pairs._segment_box`).
    sign = computed_once(sign)
    face_count = 6
    # Overlapping, a face with a side of length 0 (a flat or a needle box's: an edge or a point) gives way
    # to a face with area within the tolerance of it: that face's contact holds the points it reports.
    # Which of two tied axes an argmax takes is rounding's choice (it differed under jit); this rule
    # makes it one choice. (A lift of the faces with area inside the argmax: a rule on the argmax's
    # result slowed box-box 15-30%.)
    in_face = np.arange(3) != (np.arange(face_count) % 3)[:, None]  # (6, 3) each face's own two axes
    halves = jnp.concatenate([jnp.broadcast_to(half_a, (3, 3)), jnp.broadcast_to(half_b, (3, 3))])
    has_area = jnp.all((halves > 0) | ~in_face, axis=1)
    lift = jnp.where(has_area & (jnp.max(separation) <= 0), tolerance, 0)
    face = jnp.argmax(separation[:face_count] + lift)
    edge = face_count + jnp.argmax(separation[face_count:])
    s_face, s_edge = separation[face], separation[edge]
    face_normal, edge_normal = (sign[k] * unit_vector(axes[k]) for k in (face, edge))

    # The face contact, in the frame of the box holding the face: A (a box's first three axes) or B.
    on_a = face < face_count - 3
    rotation_f = jnp.where(on_a, rotation, rotation.T)
    translation_f = jnp.where(on_a, translation, -rmatvec(rotation, translation))
    half_f, half_o = jnp.where(on_a, half_a, half_b), jnp.where(on_a, half_b, half_a)
    face_sign = sign[face]
    point_f, point_o, (slots_f, slots_o, weights, mask), face_spans_face = _face_contact(
        rotation_f, translation_f, half_f, half_o, jnp.where(on_a, face, face - (face_count - 3)),
        jnp.where(on_a, face_sign, -face_sign), tolerance)
    side_a, side_b = ([jnp.where(on_a, f, o) for f, o in zip(first, second, strict=True)]
                      for first, second in ((slots_f, slots_o), (slots_o, slots_f)))
    face_simplex = padded_simplex(*side_a, *side_b, weights, mask)
    face_points = jnp.where(on_a, point_f, point_o), jnp.where(on_a, point_o, point_f)

    edge_index = edge - face_count
    edge_simplex, edge_points, edge_is_face = _edge_contact(
        rotation, translation, half_a, half_b, edge_index // 3, edge_index % 3, edge_normal)
    corner_simplex, *corner_points = _corner_contact(rotation, translation, half_a, half_b)

    def gap(points):
        return matvec(rotation, points[1]) + translation - points[0]

    def length(vector):
        return dot(unit_vector(vector), vector)

    s_max = jnp.maximum(s_face, s_edge)
    separated = s_max > 0
    # Apart: each candidate is a pair of actual points; the axis contacts count where their points are
    # s(u) apart along their axis (within rounding), and the nearest candidate is the closest pair.
    face_gap, edge_gap, corner_gap = gap(face_points), gap(edge_points), gap(corner_points)
    face_length, edge_length, corner_length = (length(vector) for vector in (face_gap, edge_gap, corner_gap))
    # A candidate other than the nearest by δ has a normal off by up to √(2δ/distance): the ties allowed
    # here are a few roundings (the axis tolerance's 32 roundings cost float32 normals 1e-2). An axis
    # contact also counts only where its points' offset across the axis is within the tolerance: its
    # length exceeds the axis's separation by only offset²/(2 distance), so a clamped witness (a corner
    # just beyond a face) passed the length test with a float32 normal up to 2e-3 off.
    tie = tolerance / 8
    face_found = (face_length <= s_face + tie) & is_along(Vec3.of(face_gap), Vec3.of(face_normal),
                                                          tolerance)
    edge_found = edge_is_face & (edge_length <= s_edge + tie) & is_along(Vec3.of(edge_gap),
                                                                         Vec3.of(edge_normal), tolerance)
    nearest = jnp.minimum(jnp.minimum(jnp.where(face_found, face_length, jnp.inf),
                                      jnp.where(edge_found, edge_length, jnp.inf)), corner_length)
    # Overlapping: the deepest axis, a face's where an edge axis is deeper by no more than rounding.
    use_face = jnp.where(separated, face_found & (face_length <= nearest + tie),
                         s_face >= s_edge - tolerance)
    use_edge = ~use_face & (~separated | (edge_found & (edge_length <= nearest + tie)))
    use_face, use_edge = computed_once(use_face), computed_once(use_edge)  # every output reads them
    # The corner pair's direction is the normal unless it separates the cores less, beyond rounding,
    # than the axis that separates them most (the face's, unless an edge axis's separation is larger
    # by more than rounding). A corner clamped onto the edge of a nearly parallel face lies within
    # rounding of the distance, but its direction tilts by its offset across the face over the gap,
    # and the face's far end then overlaps it by that tilt times its length (float32: 9.7e-4 rad, a
    # separation 7.5e-4 of the size short). Within rounding of each other, the corners' offset is
    # noise: the cores touch along the axis (the face's alone could overlap them deeply there: a flat
    # box's edge resting on a box, an edge axis at 0, the face's at -7.5e-5 of the size).
    face_first = s_face >= s_edge - tolerance
    axis_normal = jnp.where(face_first, face_normal, edge_normal)
    corner_direction = unit_vector(corner_gap)
    corner_separation = _separations(corner_direction[None], rotation, translation, half_a, half_b)[0][0]
    corner_holds = corner_separation >= jnp.where(face_first, s_face, s_edge) - tolerance
    corner_normal = computed_once(jnp.where(is_apart(corner_gap, resolution) & corner_holds, corner_direction,
                                            axis_normal))  # (copied into its readers: box-box 6-12% slower)
    # jnp.select, not `select`'s chain of wheres (safe here: the conditions are never constants): with the
    # chain, XLA:CPU fused the three candidates' computation into the distance's many readers, and the
    # box-box kernel ran 1.3-1.6x slower (`distance` 0.58 against 0.93 M pairs/s, 65 536 pairs).
    distance = jnp.select([use_face, use_edge], [s_face, s_edge], dot(corner_normal, corner_gap))
    # Apart, every candidate's length bounds the distance from above and s_max from below; the nearest
    # candidate is the closest pair, so its length is the distance to rounding.
    distance = jnp.where(separated, jnp.maximum(jnp.minimum(distance, nearest), s_max), distance)
    normal = select([use_face, use_edge], [face_normal, edge_normal], corner_normal)

    def choose(face_leaf, edge_leaf, corner_leaf):
        return jnp.where(use_face, face_leaf, jnp.where(use_edge, edge_leaf, corner_leaf))

    simplex = jax.tree_util.tree_map(choose, face_simplex, edge_simplex, corner_simplex)
    point_a, point_b = (choose(*sides) for sides in zip(face_points, edge_points, corner_points, strict=True))
    spans_face = jnp.where(use_face, face_spans_face, edge_is_face)
    kind = select([separated, spans_face], [NormalKind.FROM_CLOSEST, NormalKind.FROM_FACE],
                      NormalKind.FIXED)
    return closed_contact(distance, normal, simplex, point_a, point_b, kind)
