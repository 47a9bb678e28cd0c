"""Expanding Polytope Algorithm: penetration depth of overlapping cores (van den Bergen 2001, "Proximity
queries and penetration depth computation on 3D game objects"; 2004, §4.4).

The polytope lives in fixed-size arrays sized from the iteration bound: vertices (support points of D),
faces (vertex indices, outward unit normal, distance to the origin, validity) and face adjacency (the
face across each edge). One step: take the valid face nearest the origin, the support point w of D along
its normal, stop when the gap between the support plane and the face is within tolerance; otherwise
remove the faces that see w, and close the hole by joining w to the horizon (the edges between seen and
unseen faces), which the adjacency gives in O(faces) without search.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from ._dataclass import pytree_dataclass
from ._minkowski import RelativePair, SupportPoint
from ._result import Simplex, Status
from ._shapes import unit_vector
from ._simplex import face_weights
from ._tolerance import epsilon, power_of_two_scale

RUNNING = -1
_NEXT = np.array([1, 2, 0])  # edge k of a face runs from corner k to corner _NEXT[k]


def _adjacency(faces: np.ndarray) -> np.ndarray:
    """For each face (F, 3) and edge k, the index of the face sharing that edge (reversed)."""
    owner = {(f[k], f[_NEXT[k]]): i for i, f in enumerate(faces) for k in range(3)}
    return np.array([[owner[(f[_NEXT[k]], f[k])] for k in range(3)] for f in faces])


_TETRAHEDRON = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])  # outward if det > 0
_TETRAHEDRON_ADJACENCY = _adjacency(_TETRAHEDRON)


@pytree_dataclass
class EPAState:
    """Loop carry of EPA (A's frame).

    Fields:
        vertices: SupportPoint with (V, ·) leaves; num_vertices: () int32 slots in use.
        faces: (F, 3) int32 vertex indices, counter-clockwise seen from outside.
        adjacency: (F, 3) int32 face across edge k (corner k to corner k+1).
        normals: (F, 3) outward unit normals; distances: (F,) plane distance to the origin.
        valid: (F,) bool live faces.
        nearest: () int32 index of the nearest valid face at the last step.
        upper_bound: () least support-plane distance seen (the depth lies between).
        best: the support point (SupportPoint, (3,) leaves) whose plane gave `upper_bound`, and
        best_normal: (3,) its direction: translating B by `upper_bound` along it separates the cores.
        iterations: () int32; status: () int32, RUNNING or a `Status`.
    """

    vertices: SupportPoint
    num_vertices: jnp.ndarray
    faces: jnp.ndarray
    adjacency: jnp.ndarray
    normals: jnp.ndarray
    distances: jnp.ndarray
    valid: jnp.ndarray
    nearest: jnp.ndarray
    upper_bound: jnp.ndarray
    best: SupportPoint
    best_normal: jnp.ndarray
    iterations: jnp.ndarray
    status: jnp.ndarray


def _face_planes(points, faces):
    """Outward unit normals (F, 3) and origin distances (F,) of `faces` (F, 3) over `points` (V, 3).

    A degenerate (zero-area) face gets distance +inf so that it is never the nearest face.
    """
    a, b, c = points[faces[:, 0]], points[faces[:, 1]], points[faces[:, 2]]
    # The edges in units of their length (exact): the cross product of two short edges underflows in
    # float32 for shapes below ~1e-7, and the face would count as degenerate.
    edge_b, edge_c = b - a, c - a
    scale = power_of_two_scale(jnp.maximum(jnp.max(jnp.abs(edge_b), axis=-1),
                                           jnp.max(jnp.abs(edge_c), axis=-1)))[0][:, None]
    normals = unit_vector(jnp.cross(edge_b * scale, edge_c * scale))
    degenerate = jnp.all(normals == 0, axis=-1)
    distances = jnp.where(degenerate, jnp.inf, jnp.sum(normals * a, axis=-1))
    return normals, distances


def _perpendicular(axis):
    """A unit direction (3,) perpendicular to `axis` (3,)."""
    helper = jnp.eye(3, dtype=axis.dtype)[jnp.argmin(jnp.abs(axis))]
    return unit_vector(jnp.cross(axis, helper))


def _initial_state(pair: RelativePair, simplex: Simplex, capacity: int, tolerance: float) -> EPAState:
    """Grow GJK's final simplex (2 to 4 points whose hull holds the origin) into a tetrahedron.

    A tetrahedron is convex whatever its points, so it holds the origin (maybe on its boundary, which
    EPA's first steps push out): a segment gains the support point along ± two perpendiculars that
    lies farthest from its line (one perpendicular alone can be the normal of a flat D, whose support
    points then tie and may fall back onto the line), a triangle the support point along its normal
    or the opposite one, whichever lies farther from its plane.
    """
    order = jnp.argsort(~simplex.mask, stable=True)  # used slots first
    start = pair.points_from_directions(simplex.directions_a[order], simplex.directions_b[order])
    count = jnp.sum(simplex.mask)
    p = start.point
    axis = unit_vector(p[1] - p[0])
    first = _perpendicular(axis)
    second = jnp.cross(axis, first)
    candidates = jax.vmap(pair.support)(jnp.stack([first, -first, second, -second]))
    off_line = jnp.sum(jnp.cross(axis, candidates.point - p[0]) ** 2, axis=-1)
    third = jax.tree_util.tree_map(lambda leaf: leaf[jnp.argmax(off_line)], candidates)
    with_third = jax.tree_util.tree_map(
        lambda leaf, x: jnp.where(count >= 3, leaf, leaf.at[2].set(x)), start, third)
    q = with_third.point
    normal = unit_vector(jnp.cross(q[1] - q[0], q[2] - q[0]))
    above, below = pair.support(normal), pair.support(-normal)
    fourth = jax.tree_util.tree_map(
        lambda x, y: jnp.where(jnp.dot(normal, above.point - q[0]) >= jnp.dot(normal, q[0] - below.point),
                               x, y), above, below)
    four = jax.tree_util.tree_map(
        lambda leaf, x: jnp.where(count >= 4, leaf, leaf.at[3].set(x)), with_third, fourth)

    corners = four.point
    volume = jnp.dot(corners[1] - corners[0], jnp.cross(corners[2] - corners[0], corners[3] - corners[0]))
    faces = jnp.where(volume >= 0, _TETRAHEDRON, _TETRAHEDRON[:, [0, 2, 1]]).astype(jnp.int32)
    adjacency = jnp.where(volume >= 0, _TETRAHEDRON_ADJACENCY,
                          _TETRAHEDRON_ADJACENCY[:, [2, 1, 0]]).astype(jnp.int32)

    num_faces = 2 * capacity
    vertices = jax.tree_util.tree_map(
        lambda leaf: jnp.zeros((capacity,) + leaf.shape[1:], leaf.dtype).at[:4].set(leaf), four)
    faces = jnp.zeros((num_faces, 3), jnp.int32).at[:4].set(faces)
    adjacency = jnp.zeros((num_faces, 3), jnp.int32).at[:4].set(adjacency)
    valid = jnp.zeros(num_faces, bool).at[:4].set(True)
    normals, distances = _face_planes(vertices.point, faces)
    # A one-point simplex means GJK touched D's boundary at a vertex: depth 0, nothing to expand. So
    # does a D without interior: a segment through the origin (a capsule's axis through a sphere's
    # centre: no proper face at all) or a flat D (crossing capsule axes: the width of D along the
    # triangle's normal is within EPA's tolerance, so the depth, at most that width, is 0 to
    # tolerance). Face 0 then holds the direction in which the cores separate: the perpendicular of
    # the segment, or the side of the plane with the lesser support.
    collinear = jnp.all(jnp.isinf(distances[:4]))
    scale = jnp.sqrt(jnp.max(jnp.sum(corners**2, axis=-1)))
    flat = jnp.any(normal != 0) & (jnp.dot(normal, above.point - below.point) <= tolerance * scale)
    plane_side = jnp.where(jnp.dot(normal, above.point) <= -jnp.dot(normal, below.point), 1, -1)
    normals = normals.at[0].set(jnp.select([collinear, flat],
                                           [first, plane_side * normal], normals[0]))
    distances = distances.at[0].set(jnp.where(collinear | flat, 0, distances[0]))
    valid = valid & ((jnp.arange(num_faces) == 0) | ~(collinear | flat))  # face 0 is the nearest
    status = jnp.where((count < 2) | collinear | flat, Status.INTERSECTING, RUNNING).astype(jnp.int32)
    return EPAState(vertices, jnp.asarray(4, jnp.int32), faces, adjacency, normals, distances, valid,
                    jnp.zeros((), jnp.int32), jnp.asarray(jnp.inf, p.dtype),
                    jax.tree_util.tree_map(lambda leaf: leaf[0], four), normals[0],
                    jnp.zeros((), jnp.int32), status)


def _nearest_face(state: EPAState):
    return jnp.argmin(jnp.where(state.valid, state.distances, jnp.inf)).astype(jnp.int32)


def _connected_patch(below, adjacency, nearest):
    """The faces of `below` (F,) bool edge-connected to face `nearest` (which is included).

    Faces below w only by rounding can lie apart from the rest (meeting it at a vertex, as on a cone's
    base), and a patch in two pieces has no single horizon cycle. Grows one ring of neighbours a step;
    a patch has fewer rings than faces, which bounds the loop.
    """
    def grow(carry):
        seen, _, rings = carry
        grown = seen | (below & jnp.any(seen[adjacency], axis=-1))
        return grown, jnp.any(grown != seen), rings + 1

    seen = jnp.arange(below.shape[0]) == nearest
    seen, _, _ = jax.lax.while_loop(lambda carry: carry[1] & (carry[2] < below.shape[0]), grow,
                                    (seen, jnp.asarray(True), jnp.zeros((), jnp.int32)))
    return seen


def _add_folded_faces(sees, state: EPAState, w, holds_w, rings: int = 2, max_folds: int = 8):
    """`sees` (F,) plus the faces that hold `w` within rounding (`holds_w`) and border a seen face
    with w on their side of the shared edge, ring by ring.

    The faces strictly below w are seen; a face that holds w stays, and the new face on its edge
    extends it flat — except when w lies on its side of that edge, where the new face would fold back
    over it (an inverted face, possible only through rounding near a flat fold), so it goes too.
    Taking every face that holds w instead swallowed a cylinder's whole cap fan at each new rim point,
    growing the horizon past any size. Such faces are rare: each ring tests at most `max_folds` of
    them, gathered into a few rows, so a step stays O(faces).
    """
    num_faces = sees.shape[0]
    for _ in range(rings):
        candidate = holds_w & ~sees & jnp.any(sees[state.adjacency], axis=-1)
        rows = jnp.nonzero(candidate, size=max_folds, fill_value=0)[0]
        in_use = jnp.arange(max_folds) < jnp.sum(candidate)
        start = state.vertices.point[state.faces[rows]]
        end = state.vertices.point[state.faces[rows][:, _NEXT]]
        inside = jnp.sum(jnp.cross(end - start, w - start) * state.normals[rows][:, None, :],
                         axis=-1) > 0
        folds = in_use & jnp.any(sees[state.adjacency[rows]] & inside, axis=-1)
        sees = sees.at[jnp.where(folds, rows, num_faces)].set(True, mode="drop")
    return sees


def _expand(state: EPAState, w: SupportPoint, nearest, max_horizon: int):
    """Add `w` as a vertex: remove the faces that see it and join the horizon to it.

    The horizon edges (edges of seen faces whose neighbour is unseen) are compacted into `max_horizon`
    rows; each becomes a new face (edge start, edge end, w) in a free face slot. All scatters and
    gathers act on those few rows, so a step costs O(faces + max_horizon²). Returns the new state and
    whether the step was consistent (the horizon fits and forms a simple cycle), and the least
    origin distance of the new faces.
    """
    num_faces = state.faces.shape[0]
    new_index = state.num_vertices
    corner = state.vertices.point[state.faces[:, 0]]
    coplanar = 16 * epsilon(w.point.dtype) * jnp.max(jnp.abs(state.vertices.point))
    side = jnp.sum(state.normals * (w.point - corner), axis=-1)
    sees = _connected_patch(state.valid & (side > coplanar), state.adjacency, nearest)
    sees = _add_folded_faces(sees, state, w.point, state.valid & (jnp.abs(side) <= coplanar))

    horizon = (sees[:, None] & ~sees[state.adjacency]).reshape(-1)
    edge = jnp.nonzero(horizon, size=max_horizon, fill_value=0)[0].astype(jnp.int32)  # face·3 + corner
    in_use = jnp.arange(max_horizon) < jnp.sum(horizon)
    start = state.faces.reshape(-1)[edge]
    end = state.faces[:, _NEXT].reshape(-1)[edge]
    neighbour = state.adjacency.reshape(-1)[edge]
    seen_face = edge // 3
    kept = state.valid & ~sees
    slot = jnp.nonzero(~kept, size=max_horizon, fill_value=num_faces)[0]
    slot = jnp.where(in_use, slot, num_faces).astype(jnp.int32)  # out of range: dropped below

    # On the horizon cycle, the new face on edge (a, b) meets the one starting at b and the one
    # ending at a.
    pairs_in_use = in_use[None, :] & in_use[:, None]
    follows = (start[None, :] == end[:, None]) & pairs_in_use
    precedes = (end[None, :] == start[:, None]) & pairs_in_use
    consistent = (jnp.sum(horizon) <= max_horizon) & jnp.all(
        ~in_use | ((jnp.sum(follows, axis=1) == 1) & (jnp.sum(precedes, axis=1) == 1)))
    new_faces = jnp.stack([start, end, jnp.full_like(start, new_index)], axis=-1)
    new_adjacency = jnp.stack([neighbour, slot[jnp.argmax(follows, axis=1)],
                               slot[jnp.argmax(precedes, axis=1)]], axis=-1)
    faces = state.faces.at[slot].set(new_faces, mode="drop")
    adjacency = state.adjacency.at[slot].set(new_adjacency, mode="drop")
    # The unseen neighbour's edge that pointed at the removed face now points at the new face.
    neighbour_edge = jnp.argmax(state.adjacency[neighbour] == seen_face[:, None], axis=-1)
    adjacency = adjacency.at[jnp.where(in_use, neighbour, num_faces), neighbour_edge].set(
        slot, mode="drop")
    valid = kept.at[slot].set(True, mode="drop")

    vertices = jax.tree_util.tree_map(lambda s, x: s.at[new_index].set(x), state.vertices, w)
    new_normals, new_distances = _face_planes(vertices.point, new_faces)
    normals = state.normals.at[slot].set(new_normals, mode="drop")
    distances = state.distances.at[slot].set(new_distances, mode="drop")
    expanded = dataclasses.replace(state, vertices=vertices, num_vertices=new_index + 1, faces=faces,
                                   adjacency=adjacency, normals=normals, distances=distances, valid=valid)
    return expanded, consistent, jnp.min(jnp.where(in_use, new_distances, jnp.inf))


def epa(pair: RelativePair, simplex: Simplex, *, max_iterations: int, tolerance: float,
        active) -> EPAState:
    """Run EPA from GJK's final `simplex` (origin enclosed or touched); lanes with `active` False
    start finished. The state's `nearest` face gives the depth, normal and witness points."""
    capacity = max_iterations + 4
    max_horizon = 32

    def keep_going(state: EPAState):
        return (state.status == RUNNING) & (state.iterations < max_iterations)

    def step(state: EPAState) -> EPAState:
        nearest = _nearest_face(state)
        normal = state.normals[nearest]
        lower_bound = state.distances[nearest]
        w = pair.support(normal)
        support_distance = jnp.dot(normal, w.point)
        improves = support_distance < state.upper_bound
        upper_bound = jnp.where(improves, support_distance, state.upper_bound)
        best = jax.tree_util.tree_map(lambda new, old: jnp.where(improves, new, old), w, state.best)
        best_normal = jnp.where(improves, normal, state.best_normal)
        scale = jnp.sqrt(jnp.max(jnp.sum(state.vertices.point**2, axis=-1)))
        repeated = jnp.any(
            (jnp.arange(capacity) < state.num_vertices)
            & jnp.all(state.vertices.point == w.point, axis=-1))
        gap = upper_bound - lower_bound
        converged = gap <= tolerance * scale
        # A support point already in the polytope with a gap left means the polytope lost convexity to
        # rounding: stop, and say so.
        stuck = repeated & ~converged
        full = state.num_vertices >= capacity
        expanded, consistent, lowest = _expand(state, w, nearest, max_horizon)
        # The polytope only grows, so its faces' distances only grow, up to rounding. A new face
        # nearer than the nearest one by more than the gap means rounding broke convexity (float32
        # near its precision): accepting it would report a depth that is far too small.
        consistent &= lowest >= lower_bound - gap - 16 * epsilon(scale.dtype) * scale
        status = jnp.select(
            [~jnp.isfinite(lower_bound), converged, stuck | full | ~consistent],
            [Status.DEGENERATE, Status.PENETRATING, Status.DEGENERATE], RUNNING).astype(jnp.int32)
        accept = status == RUNNING
        pick = lambda new, old: jnp.where(accept, new, old)  # noqa: E731
        kept = jax.tree_util.tree_map(pick, expanded, state)
        return dataclasses.replace(kept, nearest=nearest, upper_bound=upper_bound, best=best,
                                   best_normal=best_normal, iterations=state.iterations + 1,
                                   status=status)

    state = _initial_state(pair, simplex, capacity, tolerance)
    state = dataclasses.replace(state, status=jnp.where(active, state.status, Status.PENETRATING))
    state = jax.lax.while_loop(keep_going, step, state)
    status = jnp.where(state.status == RUNNING, Status.MAX_ITERATIONS, state.status)
    return dataclasses.replace(state, nearest=_nearest_face(state), status=status.astype(jnp.int32))


def nearest_face_simplex(state: EPAState) -> Simplex:
    """The nearest face as a three-point `Simplex` with the origin's projection weights."""
    corners = state.faces[state.nearest]
    vertices = jax.tree_util.tree_map(
        lambda leaf: jnp.concatenate([leaf[corners], jnp.zeros_like(leaf[:1])]), state.vertices)
    mask = jnp.array([True, True, True, False])
    weights = face_weights(vertices.point, mask)
    return Simplex(vertices.direction_a, vertices.direction_b, vertices.point_a, vertices.point_b,
                   weights, mask)
