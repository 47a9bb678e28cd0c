"""Closest point of a simplex (≤ 4 points) to the origin, branch-free.

The closest point of a simplex lies in the relative interior of exactly one of its faces (a vertex, an
edge, a triangle or the tetrahedron), where it is the orthogonal projection of the origin onto that face's
affine hull. Every candidate face whose projection has strictly positive barycentric weights yields a
point of the simplex, so the candidate of least norm among them is the closest point. All 15 candidates
(GJK: the 8 through its newest point) are evaluated and one is selected, with no data-dependent branches
(good under `vmap`), and with no division by a vanishing determinant: a degenerate face is simply not a
candidate. The barycentric weights are signed areas and volumes (Montanari, Petrinic, Barbieri 2017,
"Improving the GJK algorithm for faster and more reliable distance queries between convex objects").
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ._tolerance import FLAT_TRIANGLE_ROUNDINGS, epsilon, power_of_two_scale
from ._vector import first_argmin, leading_dot, select, take_first_axis, used_first

EDGES = np.array([[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]])
TRIANGLES = np.array([[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]])


def _faces(last_only: bool):
    """The candidate faces (vertex, edge and triangle index arrays; all 15 faces, or the 8 that contain
    vertex 3) and their membership (K, 4) in order: vertices, edges, triangles, tetrahedron. Lower
    dimensions come first, so an exact tie selects the smaller face."""
    vertices, edges, triangles = np.arange(4), EDGES, TRIANGLES
    if last_only:
        vertices, edges = vertices[3:], edges[(edges == 3).any(1)]
        triangles = triangles[(triangles == 3).any(1)]
    members = np.concatenate([np.eye(4, dtype=bool)[vertices], np.eye(4, dtype=bool)[edges].any(axis=1),
                              np.eye(4, dtype=bool)[triangles].any(axis=1), np.ones((1, 4), dtype=bool)])
    return vertices, edges, triangles, members


def _safe_divide(numerator, denominator, is_safe):
    return numerator / jnp.where(is_safe, denominator, 1)


def _dot(a, b):
    """Dot products of the rows' 3-vectors `a`, `b` (K, 3, *B) over axis 1: (K, *B)."""
    return a[:, 0] * b[:, 0] + a[:, 1] * b[:, 1] + a[:, 2] * b[:, 2]


def _edge_candidates(points, edges=EDGES):
    """Projection weights (E, 4, *B), projections (E, 3, *B) and validity (E, *B) of the origin onto the
    edges `edges` (E, 2) (static) of `points` (4, 3, *B)."""
    a, b = points[edges[:, 0]], points[edges[:, 1]]
    edge = b - a
    length_sq = _dot(edge, edge)
    along = -_dot(a, edge)  # t * |b - a|², with the projection at a + t (b - a)
    valid = (along > 0) & (along < length_sq)
    t = _safe_divide(along, length_sq, length_sq > 0)
    rows = np.arange(len(edges))
    weights = jnp.zeros((len(edges), 4) + t.shape[1:], points.dtype)
    weights = weights.at[rows, edges[:, 0]].set(1 - t)
    weights = weights.at[rows, edges[:, 1]].set(t)
    return weights, a + t[:, None] * edge, valid


def _triangle_candidates(points, triangles=TRIANGLES):
    """Projection weights (T, 4, *B), projections (T, 3, *B) and validity (T, *B) of the origin onto the
    triangles `triangles` (T, 3) (static) of `points` (4, 3, *B)."""
    a, b, c = (points[triangles[:, k]] for k in range(3))
    ab, ac, origin_from_a = b - a, c - a, -a
    normal = jnp.cross(ab, ac, axis=1)
    area_sq = _dot(normal, normal)
    # Signed sub-areas along the normal, ∝ the barycentric weights of the projection (Cramer's rule).
    weight_b = _dot(normal, jnp.cross(origin_from_a, ac, axis=1))
    weight_c = _dot(normal, jnp.cross(ab, origin_from_a, axis=1))
    weight_a = area_sq - weight_b - weight_c
    rounding_sq = (FLAT_TRIANGLE_ROUNDINGS * epsilon(points.dtype)) ** 2
    non_degenerate = area_sq > rounding_sq * _dot(ab, ab) * _dot(ac, ac)
    valid = non_degenerate & (weight_a > 0) & (weight_b > 0) & (weight_c > 0)
    raw = jnp.stack([weight_a, weight_b, weight_c], axis=1)
    rows = np.arange(len(triangles))[:, None]
    weights = jnp.zeros((len(triangles), 4) + area_sq.shape[1:], points.dtype).at[rows, triangles].set(
        _safe_divide(raw, area_sq[:, None], non_degenerate[:, None]))
    # The projection along the normal, not Σ weight·vertex: its direction is the normal's, accurate
    # even when the vertices are far from a nearby origin (float32 keeps GJK progressing there).
    height = _safe_divide(_dot(normal, a), area_sq, non_degenerate)
    return weights, height[:, None] * normal, valid


def _tetrahedron_candidate(points):
    """Barycentric weights (1, 4, *B) of the origin in the tetrahedron `points` (4, 3, *B), the origin
    itself (1, 3, *B), and whether it is inside (1, *B)."""
    def volume(p, q, r, s):
        return leading_dot(q - p, jnp.cross(r - p, s - p, axis=0))

    a, b, c, d = points
    zero = jnp.zeros_like(a)
    total = volume(a, b, c, d)
    raw = jnp.stack([volume(zero, b, c, d), volume(a, zero, c, d), volume(a, b, zero, d),
                     volume(a, b, c, zero)])
    edge_scale = jnp.sqrt(leading_dot(b - a, b - a) * leading_dot(c - a, c - a) * leading_dot(d - a, d - a))
    non_degenerate = jnp.abs(total) > epsilon(points.dtype) * edge_scale
    inside = non_degenerate & jnp.all(raw * jnp.sign(total) > 0, axis=0)
    return _safe_divide(raw, total, non_degenerate)[None], zero[None], inside[None]


def candidates(points, mask, last_only=False):
    """The candidate faces of the simplex `points` (4, 3, *B) restricted to `mask` (4, *B) bool: all 15,
    or with `last_only` (static) the 8 that contain vertex 3. *B: any batch axes, trailing.

    Returns:
        weights: (K, 4, *B) barycentric weights of each candidate's projection of the origin.
        projections: (K, 3, *B) the projections.
        valid: (K, *B) whether the candidate uses only masked vertices and its projection is interior.
        members: (K, 4) bool NumPy, the candidates' vertices.
    """
    vertices, edges, triangles, members = _faces(last_only)
    batch = mask.shape[1:]
    edge_weights, edge_points, edge_valid = _edge_candidates(points, edges)
    triangle_weights, triangle_points, triangle_valid = _triangle_candidates(points, triangles)
    tetra_weights, tetra_point, tetra_valid = _tetrahedron_candidate(points)
    vertex_weights = np.eye(4)[vertices].reshape((len(vertices), 4) + (1,) * len(batch))
    vertex_weights = jnp.broadcast_to(jnp.asarray(vertex_weights, points.dtype), (len(vertices), 4) + batch)
    weights = jnp.concatenate([vertex_weights, edge_weights, triangle_weights, tetra_weights])
    projections = jnp.concatenate([points[vertices], edge_points, triangle_points, tetra_point])
    geometric_valid = jnp.concatenate([jnp.ones((len(vertices),) + batch, bool), edge_valid, triangle_valid,
                                       tetra_valid])
    outside = members.reshape(members.shape + (1,) * len(batch)) & ~mask
    return weights, projections, geometric_valid & ~jnp.any(outside, axis=1), members


def closest_point(points, mask, last_only=False):
    """Closest point to the origin of the simplex `points` (4, 3, *B) restricted to `mask` (4, *B)
    (non-empty); *B: any batch axes, trailing (one pair: none).

    `last_only` (static): only faces containing vertex 3 are candidates (8 of 15). GJK keeps its
    newest support point there and requires it, as Johnson's sub-algorithm does: in exact arithmetic
    the closest point involves it whenever it makes progress, and in float32 a face without it can win
    a rounding tie and stall the iteration on the old face.

    Returns:
        point: (3, *B) the closest point.
        weights: (4, *B) its barycentric weights (zero off the selected face).
        face_mask: (4, *B) bool, the vertices of the smallest face containing it (the reduced simplex).
    """
    # In units of the simplex's size (exact): its signed areas and volumes are 4th powers of lengths,
    # which float32 cannot hold below ~1e-10 or above ~1e10.
    scale, inverse = power_of_two_scale(jnp.max(jnp.where(mask[:, None], jnp.abs(points), 0), axis=(0, 1)))
    weights, projections, valid, members = candidates(points * scale, mask, last_only)
    # Computed once: XLA could otherwise evaluate the norms in two fusions whose roundings differ
    # (vectorised and scalar loops), and no candidate would equal the least.
    norm_sq = jax.lax.optimization_barrier(jnp.where(valid, _dot(projections, projections), jnp.inf))
    best = first_argmin(norm_sq)
    return (take_first_axis(projections, best) * inverse, take_first_axis(weights, best),
            take_first_axis(members.reshape(members.shape + (1,) * best.ndim), best))


def face_weights(points, face_mask):
    """Barycentric weights (4,) of the origin's projection onto the face `face_mask` (4,) of `points`.

    A smooth function of `points` for a fixed face: used by the tangent rules. Only that face's
    formula sees its points; every other formula sees all points collapsed onto one, whose exactly
    zero determinant `_safe_divide` guards. (Evaluating them on the real points and discarding them
    would not do: a nearly degenerate unused face has huge derivatives, and reverse mode multiplies
    them by the zero cotangent, giving NaN.) Degenerate faces give finite weights.
    """
    order = used_first(face_mask)  # the face's vertices first
    count = jnp.sum(face_mask)
    ordered = points[order]
    # The weights do not change with the scale of the points: measured in units of the face's size,
    # the determinants (4th powers of lengths, 8th in their derivatives) cannot under- or overflow
    # for a small face near contact in float32.
    offsets = jnp.where(face_mask[order][:, None], ordered - ordered[0], 0)
    size_sq = jnp.max(jnp.sum(offsets * offsets, axis=-1))
    ordered = ordered / jnp.sqrt(jnp.where(size_sq > 0, size_sq, 1))

    def only_if(size):
        """`ordered` with rows from `size` on set to row 0; all rows row 0 unless count == size."""
        keep = (jnp.arange(4) < size) & (count == size)
        return jnp.where(keep[:, None], ordered, ordered[0])

    # The edge directly, not via `_edge_candidates`: its five other, zero-length edges gave NaN in
    # jit-compiled reverse mode under vmap (not eagerly).
    start, end = only_if(2)[:2]
    length_sq = jnp.sum((end - start) ** 2)
    t = _safe_divide(-jnp.dot(start, end - start), length_sq, length_sq > 0)
    zero = jnp.zeros_like(t)
    weights = select(
        [count == 1, count == 2, count == 3],
        [jnp.eye(4, dtype=points.dtype)[0], jnp.stack([1 - t, t, zero, zero]),
         _triangle_candidates(only_if(3))[0][0]],
        _tetrahedron_candidate(only_if(4))[0][0])
    return jnp.zeros_like(weights).at[order].set(weights)
