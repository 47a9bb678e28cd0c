"""Expanding Polytope Algorithm: penetration depth of overlapping cores (van den Bergen 2001, "Proximity
queries and penetration depth computation on 3D game objects"; 2004, §4.4).

The polytope lives in fixed-size arrays sized from the iteration bound: vertices (support points of D),
faces (vertex indices, outward unit normal, distance to the origin, validity) and face adjacency (the
face across each edge). One step: take the valid face nearest the origin, the support point w of D along
its normal, stop when the gap between the support plane and the face is within tolerance; otherwise
remove the faces that see w, and close the hole by joining w to the horizon (the edges between seen and
unseen faces), which the adjacency gives in O(faces) without search.

Under `vmap` every pair pays for every step of the batch's slowest pair, and each step scans the
arrays: the first steps run on small arrays; the pairs still running after them move on to the full
capacity, on the CPU gathered `CPU_EPA_TAIL_CHUNK` at a time, so that they no longer hold the rest of
the batch; a batch with no overlapping pair skips EPA (`_gate.compute_where`). A step reads the state,
decides, then writes its new faces and vertex into free rows (none where the step is refused), so no
step keeps a copy of the polytope to undo itself.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from ._dataclass import entry, pytree_dataclass
from ._gate import compute_where, where_active
from ._minkowski import POINT_ROW, SUPPORT_FIELDS, RelativePair, SupportPoint
from ._result import RUNNING, Simplex, Status
from ._simplex import face_weights
from ._tolerance import (
    CPU_EPA_TAIL_CHUNK,
    EPA_CONSISTENCY_ROUNDINGS,
    EPA_COPLANAR_ROUNDINGS,
    EPA_FOLD_RINGS,
    EPA_MAX_HORIZON,
    EPA_PHASE_STEPS,
    epsilon,
    power_of_two_scale,
)
from ._vector import (
    dot,
    first_argmin,
    largest_abs,
    perpendicular,
    select,
    triple_product,
    true_indices,
    unit_vector,
    used_first,
)

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

    Values that a step reads and writes together share an array, read through properties: each
    leaf of a loop's carry costs XLA kernels of its own to copy, select, gather and pad (~13 per leaf
    in a `signed_distance` kernel).

    Fields:
        vertices: (V, 5, 3) support points (`SupportPoint.stacked` on axis 1); `points` (V, 3) their
            points of D.
        topology: (F, 2, 3) int32: `faces` (F, 3) vertex indices, counter-clockwise seen from outside,
            and `adjacency` (F, 3) the face across edge k (corner k to corner k+1).
        planes: (F, 4): `normals` (F, 3) outward unit normals and `distances` (F,) to the origin.
        valid: (F,) bool live faces.
        best: the support point ((5, 3), stacked) whose plane gave `upper_bound`, and
        best_normal: (3,) its direction: translating B by `upper_bound` along it separates the cores.
        measures: (3,) `size_sq` the largest |vertex|² (the size of the polytope), `extent` its
            largest |coordinate|, `upper_bound` the least support-plane distance seen (the depth lies
            between it and the nearest face's distance).
        counts: (3,) int32 `num_vertices` slots in use, `iterations`, `status` (RUNNING or a `Status`).
    """

    vertices: jnp.ndarray
    topology: jnp.ndarray
    planes: jnp.ndarray
    valid: jnp.ndarray
    best: jnp.ndarray
    best_normal: jnp.ndarray
    measures: jnp.ndarray
    counts: jnp.ndarray

    points = entry("vertices", (slice(None), POINT_ROW))
    faces = entry("topology", (slice(None), 0))
    adjacency = entry("topology", (slice(None), 1))
    normals = entry("planes", (slice(None), slice(0, 3)))
    distances = entry("planes", (slice(None), 3))
    size_sq, extent, upper_bound = (entry("measures", k) for k in range(3))
    num_vertices, iterations, status = (entry("counts", k) for k in range(3))


def _measures(size_sq, extent, upper_bound):
    """`EPAState.measures` of its three values."""
    return jnp.stack([size_sq, extent, upper_bound])


def _counts(num_vertices, iterations, status):
    """`EPAState.counts` of its three values."""
    return jnp.stack([num_vertices, iterations, status]).astype(jnp.int32)


def _planes(normals, distances):
    """`EPAState.planes` (..., 4) of normals (..., 3) and distances (...)."""
    return jnp.concatenate([normals, distances[..., None]], axis=-1)


def _face_planes(corners):
    """Outward unit normals (F, 3) and origin distances (F,) of the triangles `corners` (F, 3, 3),
    counter-clockwise seen from outside.

    A degenerate (zero-area) face gets distance +inf so that it is never the nearest face.
    """
    a, b, c = corners[:, 0], corners[:, 1], corners[:, 2]
    # The edges in units of their length (exact): the cross product of two short edges underflows in
    # float32 for shapes below ~1e-7, and the face would count as degenerate.
    edge_b, edge_c = b - a, c - a
    scale = power_of_two_scale(jnp.maximum(largest_abs(edge_b), largest_abs(edge_c)))[0][:, None]
    normals = unit_vector(jnp.cross(edge_b * scale, edge_c * scale))
    degenerate = jnp.all(normals == 0, axis=-1)
    distances = jnp.where(degenerate, jnp.inf, dot(normals, a))
    return normals, distances


def _initial_state(pair: RelativePair, simplex: Simplex, capacity: int, tolerance: float) -> EPAState:
    """Grow GJK's final simplex (2 to 4 points whose hull holds the origin) into a tetrahedron.

    A tetrahedron is convex whatever its points, so it holds the origin (maybe on its boundary, which
    EPA's first steps push out): a segment gains the support point along ± two perpendiculars that
    lies farthest from its line (one perpendicular alone can be the normal of a flat D, whose support
    points then tie and may fall back onto the line), a triangle the support point along its normal
    or the opposite one, whichever lies farther from its plane.
    """
    order = used_first(simplex.mask)  # used slots first
    # Set-up runs once: packed shapes evaluate their supports once for both sides (`_packed.on_both`).
    support = functools.partial(pair.support, packed_once=True)
    start = pair.points_from_directions(simplex.directions_a[order], simplex.directions_b[order],
                                        packed_once=True)
    count = jnp.sum(simplex.mask)
    p = start.point
    axis = unit_vector(p[1] - p[0])
    first = perpendicular(axis)
    second = jnp.cross(axis, first)
    candidates = jax.vmap(support)(jnp.stack([first, -first, second, -second]))
    off_line = jnp.sum(jnp.cross(axis, candidates.point - p[0]) ** 2, axis=-1)
    third = jax.tree_util.tree_map(lambda leaf: leaf[jnp.argmax(off_line)], candidates)
    with_third = jax.tree_util.tree_map(
        lambda leaf, x: jnp.where(count >= 3, leaf, leaf.at[2].set(x)), start, third)
    q = with_third.point
    normal = unit_vector(jnp.cross(q[1] - q[0], q[2] - q[0]))
    opposite = jax.vmap(support)(jnp.stack([normal, -normal]))
    above, below = (jax.tree_util.tree_map(lambda leaf, side=side: leaf[side], opposite) for side in (0, 1))
    fourth = jax.tree_util.tree_map(
        lambda x, y: jnp.where(jnp.dot(normal, above.point - q[0]) >= jnp.dot(normal, q[0] - below.point),
                               x, y), above, below)
    four = jax.tree_util.tree_map(
        lambda leaf, x: jnp.where(count >= 4, leaf, leaf.at[3].set(x)), with_third, fourth)

    corners = four.point
    volume = jnp.dot(corners[1] - corners[0], jnp.cross(corners[2] - corners[0], corners[3] - corners[0]))
    tetrahedron = jnp.where(volume >= 0, _TETRAHEDRON, _TETRAHEDRON[:, [0, 2, 1]]).astype(jnp.int32)
    adjacency = jnp.where(volume >= 0, _TETRAHEDRON_ADJACENCY,
                          _TETRAHEDRON_ADJACENCY[:, [2, 1, 0]]).astype(jnp.int32)

    num_faces = 2 * capacity
    rows = four.stacked(axis=1)
    vertices = jnp.zeros((capacity, len(SUPPORT_FIELDS), 3), corners.dtype).at[:4].set(rows)
    topology = jnp.zeros((num_faces, 2, 3), jnp.int32).at[:4].set(jnp.stack([tetrahedron, adjacency], 1))
    valid = jnp.zeros(num_faces, bool).at[:4].set(True)
    tetrahedron_normals, tetrahedron_distances = _face_planes(corners[tetrahedron])
    normals = jnp.zeros((num_faces, 3), corners.dtype).at[:4].set(tetrahedron_normals)
    distances = jnp.full(num_faces, jnp.inf, corners.dtype).at[:4].set(tetrahedron_distances)
    # A one-point simplex means GJK touched D's boundary at a vertex: depth 0, nothing to expand. So
    # does a D without interior: a segment through the origin (a capsule's axis through a sphere's
    # centre: no proper face at all) or a flat D (crossing capsule axes: the width of D along the
    # triangle's normal is within EPA's tolerance, so the depth, at most that width, is 0 to
    # tolerance). Face 0 then holds the direction in which the cores separate: the perpendicular of
    # the segment, or the side of the plane with the lesser support.
    size_sq = jnp.max(jnp.sum(corners**2, axis=-1))
    # So does GJK's segment with no support point off its line by more than EPA's tolerance (a sphere's
    # centre on a capsule's axis, two coaxial capsules): the tetrahedron's faces are rounding noise
    # there, and EPA's steps on them ended up to 14% of the depth off (a sphere at a capsule's centre,
    # `Packed`). D lies in slabs of that width around the line along both perpendiculars.
    on_line = (count == 2) & (jnp.max(off_line) <= tolerance**2 * size_sq)
    collinear = jnp.all(jnp.isinf(distances[:4])) | on_line
    width = jnp.dot(normal, above.point - below.point)
    flat = jnp.any(normal != 0) & (width <= tolerance * jnp.sqrt(size_sq))
    plane_side = jnp.where(jnp.dot(normal, above.point) <= -jnp.dot(normal, below.point), 1, -1)
    normals = normals.at[0].set(select([collinear, flat],
                                           [first, plane_side * normal], normals[0]))
    distances = distances.at[0].set(jnp.where(collinear | flat, 0, distances[0]))
    valid = valid & ((jnp.arange(num_faces) == 0) | ~(collinear | flat))  # face 0 is the nearest
    status = jnp.where((count < 2) | collinear | flat, Status.INTERSECTING, RUNNING).astype(jnp.int32)
    return EPAState(vertices, topology, _planes(normals, distances), valid, rows[0], normals[0],
                    _measures(size_sq, jnp.max(jnp.abs(corners)), jnp.asarray(jnp.inf, p.dtype)),
                    _counts(4, 0, status))


def _nearest_face(state: EPAState):
    return first_argmin(jnp.where(state.valid, state.distances, jnp.inf))


def _connected_patch(below, adjacency, nearest):
    """The faces of `below` (F,) bool edge-connected to face `nearest` (which is included).

    Faces below w only by rounding can lie apart from the rest (meeting it at a vertex, as on a cone's
    base), and a patch in two pieces has no single horizon cycle. Grows one ring of neighbours a step
    until it holds every face of `below` (the usual case: `below` is connected) or a ring adds none; a
    patch has fewer rings than faces, which bounds the loop.
    """
    def grow(carry):
        seen, _, rings = carry
        grown = seen | (below & jnp.any(seen[adjacency], axis=-1))
        return grown, jnp.any(grown != seen) & jnp.any(below & ~grown), rings + 1

    seen = jnp.arange(below.shape[0]) == nearest
    seen, _, _ = jax.lax.while_loop(lambda carry: carry[1] & (carry[2] < below.shape[0]), grow,
                                    (seen, jnp.any(below & ~seen), jnp.zeros((), jnp.int32)))
    return seen


def _add_folded_faces(sees, state: EPAState, corners, w, holds_w, rings: int = EPA_FOLD_RINGS):
    """`sees` (F,) plus the faces that hold `w` within rounding (`holds_w`) and border a seen face
    with w on their side of the shared edge, ring by ring; `corners` (F, 3, 3) are the faces' points.

    The faces strictly below w are seen; a face that holds w stays, and the new face on its edge
    extends it flat — except when w lies on its side of that edge, where the new face would fold back
    over it (an inverted face, possible only through rounding near a flat fold), so it goes too.
    Taking every face that holds w instead swallowed a cylinder's whole cap fan at each new rim point,
    growing the horizon past any size.
    """
    edges = corners[:, _NEXT] - corners
    inside = holds_w[:, None] & (triple_product(state.normals[:, None, :], edges, w - corners) > 0)
    # A loop, not unrolled rings: its operand `inside` is computed once. Unrolled, XLA:CPU fused the
    # triple products into each ring's gather and recomputed them there (a box-box EPA step ~15% slower).
    # A ring changes nothing where no face is `inside`: under `vmap` the loop then runs only while some
    # lane has one (most steps of a batch have none).
    def grow(carry):
        ring, sees = carry
        return ring + 1, sees | jnp.any(sees[state.adjacency] & inside, axis=-1)

    folds = jnp.any(inside)
    return jax.lax.while_loop(lambda carry: folds & (carry[0] < rings), grow,
                              (jnp.zeros((), jnp.int32), sees))[1]


def _expand(state: EPAState, w: SupportPoint, nearest, max_horizon: int):
    """Plan adding `w` as a vertex: remove the faces that see it and join the horizon to it.

    The horizon edges (edges of seen faces whose neighbour is unseen) are compacted into `max_horizon`
    rows; each becomes a new face (edge start, edge end, w) in a free face slot. Planning only reads
    the state; returns whether the step is consistent (the horizon fits and forms cycles: each of its
    vertices starts one edge and ends one), the least origin distance of the new faces, and
    `commit(accept)`, which writes the step where `accept` (() bool) and leaves the state as it was
    elsewhere. Its gathers act on the horizon's rows; the commit matches every face row against them,
    so a step costs O(faces × horizon) comparisons.

    A consistent horizon has at most as many edges as the polytope has vertices (each starts one), so
    arrays with room for fewer vertices than `max_horizon` (EPA's first phase) take that many rows: a
    longer horizon is inconsistent either way.
    """
    num_faces = state.faces.shape[0]
    capacity = state.vertices.shape[0]
    max_horizon = min(max_horizon, capacity)
    new_index = state.num_vertices
    points = state.points
    corners = points[state.faces]
    coplanar = EPA_COPLANAR_ROUNDINGS * epsilon(w.point.dtype) * state.extent
    side = dot(state.normals, w.point - corners[:, 0])
    sees = _connected_patch(state.valid & (side > coplanar), state.adjacency, nearest)
    sees = _add_folded_faces(sees, state, corners, w.point, state.valid & (jnp.abs(side) <= coplanar))

    horizon = (sees[:, None] & ~sees[state.adjacency]).reshape(-1)
    edge = true_indices(horizon, max_horizon, 0)  # face·3 + corner
    in_use = jnp.arange(max_horizon) < jnp.sum(horizon)
    start = state.faces.reshape(-1)[edge]
    end = state.faces[:, _NEXT].reshape(-1)[edge]
    neighbour = state.adjacency.reshape(-1)[edge]
    seen_face = edge // 3
    kept = state.valid & ~sees
    slot = jnp.where(in_use, true_indices(~kept, max_horizon, num_faces), num_faces)  # out of range: dropped

    # On the horizon cycle, the new face on edge (a, b) meets the one starting at b and the one
    # ending at a: found through tables indexed by vertex.
    start_key = jnp.where(in_use, start, capacity)
    end_key = jnp.where(in_use, end, capacity)

    def count(keys):
        return jnp.zeros(capacity, jnp.int32).at[keys].add(1, mode="drop")

    def lookup(keys, values):
        return jnp.full(capacity, num_faces, jnp.int32).at[keys].set(values, mode="drop")

    consistent = (jnp.sum(horizon) <= max_horizon) & jnp.all(
        ~in_use | ((count(start_key)[end] == 1) & (count(end_key)[start] == 1)))
    new_faces = jnp.stack([start, end, jnp.full_like(start, new_index)], axis=-1)
    new_adjacency = jnp.stack([neighbour, lookup(start_key, slot)[end], lookup(end_key, slot)[start]],
                              axis=-1)
    new_normals, new_distances = _face_planes(jnp.stack(
        [points[start], points[end],
         jnp.broadcast_to(w.point, (max_horizon, 3))], axis=1))
    # The unseen neighbour's edge that pointed at the removed face now points at the new face.
    points_back = state.adjacency[neighbour] == seen_face[:, None]
    neighbour_edge = jnp.where(points_back[:, 0], 0, jnp.where(points_back[:, 1], 1, 2))

    def commit(accept) -> EPAState:
        # Each face row reads the new face written to it, if any (the slots are distinct), and the
        # new vertex its slot: selects and gathers, where scatters would be loops on XLA:CPU.
        rows = jnp.where(accept, slot, num_faces)
        writes = rows == jnp.arange(num_faces)[:, None]  # (F, H)
        source = jnp.min(jnp.where(writes, jnp.arange(max_horizon), max_horizon), axis=1)
        written = source < max_horizon
        source = jnp.minimum(source, max_horizon - 1)

        def write(old, new):
            return jnp.where(written.reshape((-1,) + (1,) * (old.ndim - 1)), new[source], old)

        topology = write(state.topology, jnp.stack([new_faces, new_adjacency], axis=1))
        topology = topology.at[jnp.where(accept & in_use, neighbour, num_faces), 1, neighbour_edge].set(
            slot, mode="drop")
        vertex = (jnp.arange(capacity) == new_index) & accept
        vertices = jnp.where(vertex[:, None, None], w.stacked(axis=0), state.vertices)
        return dataclasses.replace(
            state, vertices=vertices, topology=topology,
            planes=write(state.planes, _planes(new_normals, new_distances)),
            valid=(state.valid & ~(sees & accept)) | written,
            measures=_measures(
                jnp.where(accept, jnp.maximum(state.size_sq, jnp.dot(w.point, w.point)), state.size_sq),
                jnp.where(accept, jnp.maximum(state.extent, jnp.max(jnp.abs(w.point))), state.extent),
                state.upper_bound),
            counts=_counts(new_index + accept, state.iterations, state.status))

    return consistent, jnp.min(jnp.where(in_use, new_distances, jnp.inf)), commit


@pytree_dataclass
class EPAResult:
    """What EPA found for one pair (A's frame).

    Fields:
        status: () int32 `Status`: PENETRATING (converged), MAX_ITERATIONS, DEGENERATE (stopped on
            rounding), or INTERSECTING (D has no interior: depth 0, `face_normal` the direction in
            which the cores separate).
        iterations: () int32 EPA steps.
        face: the nearest face as a three-point `Simplex` with the origin's projection weights.
        face_distance: () its distance to the origin, a lower bound on the depth.
        face_normal: (3,) its outward unit normal.
        upper_bound, best, best_normal: as in `EPAState`.
        size: () the largest |vertex| of the polytope, the scale of its rounding errors.
    """

    status: jnp.ndarray
    iterations: jnp.ndarray
    face: Simplex
    face_distance: jnp.ndarray
    face_normal: jnp.ndarray
    upper_bound: jnp.ndarray
    best: SupportPoint
    best_normal: jnp.ndarray
    size: jnp.ndarray


def epa(pair: RelativePair, simplex: Simplex, *, max_iterations: int, tolerance: float,
        active) -> EPAResult:
    """Run EPA from GJK's final `simplex` (origin enclosed or touched) where `active` (() bool); the
    result is all zeros elsewhere, and a batch with no active pair skips EPA altogether."""
    max_horizon = EPA_MAX_HORIZON

    def keep_going(steps: int, state: EPAState):
        return (state.status == RUNNING) & (state.iterations < steps)

    def step(pair: RelativePair, state: EPAState) -> EPAState:
        nearest = _nearest_face(state)
        normal = state.normals[nearest]
        lower_bound = state.distances[nearest]
        w = pair.support(normal)
        support_distance = jnp.dot(normal, w.point)
        improves = support_distance < state.upper_bound
        upper_bound = jnp.where(improves, support_distance, state.upper_bound)
        best = jnp.where(improves, w.stacked(axis=0), state.best)
        best_normal = jnp.where(improves, normal, state.best_normal)
        scale = jnp.sqrt(state.size_sq)
        capacity = state.vertices.shape[0]
        repeated = jnp.any(
            (jnp.arange(capacity) < state.num_vertices)
            & jnp.all(state.points == w.point, axis=-1))
        gap = upper_bound - lower_bound
        converged = gap <= tolerance * scale
        # A support point already in the polytope with a gap left means the polytope lost convexity to
        # rounding: stop, and say so.
        stuck = repeated & ~converged
        full = state.num_vertices >= capacity
        consistent, lowest, commit = _expand(state, w, nearest, max_horizon)
        # The polytope only grows, so its faces' distances only grow, up to rounding. A new face
        # nearer than the nearest one by more than the gap means rounding broke convexity (float32
        # near its precision): accepting it would report a depth that is far too small.
        consistent &= lowest >= lower_bound - gap - EPA_CONSISTENCY_ROUNDINGS * epsilon(scale.dtype) * scale
        status = select(
            [~jnp.isfinite(lower_bound), converged, stuck | full | ~consistent],
            [Status.DEGENERATE, Status.PENETRATING, Status.DEGENERATE], RUNNING).astype(jnp.int32)
        committed = commit(status == RUNNING)
        return dataclasses.replace(
            committed, best=best, best_normal=best_normal,
            measures=_measures(committed.size_sq, committed.extent, upper_bound),
            counts=_counts(committed.num_vertices, state.iterations + 1, status))

    def run(pair: RelativePair, state: EPAState, steps: int) -> EPAState:
        return jax.lax.while_loop(functools.partial(keep_going, steps), functools.partial(step, pair), state)

    def resume(operands, steps: int) -> EPAState:
        return run(*operands, steps)

    def solve(operands) -> EPAResult:
        pair, simplex, active = operands
        # Most pairs converge within a few steps (polyhedral ones within ~20): each phase runs on arrays
        # sized for its last step, which are cheaper to scan than the full capacity, and a phase runs
        # only for the pairs that the phases before it left running. Under `vmap` on the CPU those are
        # gathered `CPU_EPA_TAIL_CHUNK` at a time (`_gate.where_active`), so the few pairs that need
        # many steps no longer hold the whole batch in lockstep (a batch where no pair needs a phase
        # never runs it).
        bounds = [steps for steps in EPA_PHASE_STEPS if steps < max_iterations] + [max_iterations]
        state = _initial_state(pair, simplex, bounds[0] + 4, tolerance)
        state = dataclasses.replace(state, counts=_counts(
            state.num_vertices, state.iterations, jnp.where(active, state.status, Status.PENETRATING)))
        state = run(pair, state, bounds[0])
        for steps in bounds[1:]:
            state = _with_capacity(state, steps + 4)
            if jax.default_backend() == "cpu":
                state = where_active(state.status == RUNNING, functools.partial(resume, steps=steps),
                                     (pair, state), state, CPU_EPA_TAIL_CHUNK)
            else:
                state = run(pair, state, steps)
        nearest = _nearest_face(state)
        status = jnp.where(state.status == RUNNING, Status.MAX_ITERATIONS, state.status)
        return EPAResult(status.astype(jnp.int32), state.iterations, _face_simplex(state, nearest),
                         state.distances[nearest], state.normals[nearest], state.upper_bound,
                         SupportPoint.unstacked(state.best, axis=0),
                         state.best_normal, jnp.sqrt(state.size_sq))

    return compute_where(active, solve, (pair, simplex, jnp.asarray(active)))


def _with_capacity(state: EPAState, capacity: int) -> EPAState:
    """`state` with room for `capacity` vertices and twice as many faces (unused slots appended)."""
    def pad(leaf, rows, fill=0):
        fill = jnp.asarray(fill, leaf.dtype)
        return jnp.concatenate([leaf, jnp.broadcast_to(fill, (rows - leaf.shape[0],) + leaf.shape[1:])])

    faces = 2 * capacity
    no_plane = _planes(jnp.zeros(3, state.planes.dtype), jnp.asarray(jnp.inf, state.planes.dtype))
    return dataclasses.replace(
        state, vertices=pad(state.vertices, capacity), topology=pad(state.topology, faces),
        planes=pad(state.planes, faces, no_plane), valid=pad(state.valid, faces))


def _face_simplex(state: EPAState, face) -> Simplex:
    """Face `face` as a three-point `Simplex` with the origin's projection weights."""
    rows = state.vertices[state.faces[face]]
    vertices = SupportPoint.unstacked(jnp.concatenate([rows, jnp.zeros_like(rows[:1])]), axis=1)
    mask = jnp.array([True, True, True, False])
    weights = face_weights(vertices.point, mask)
    return Simplex(vertices.direction_a, vertices.direction_b, vertices.point_a, vertices.point_b,
                   weights, mask)
