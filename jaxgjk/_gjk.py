"""GJK distance on the Minkowski difference of two cores (Gilbert, Johnson, Keerthi 1988;
van den Bergen 1999, "A fast and robust GJK implementation for collision detection of convex objects").

One `lax.while_loop` with a hard iteration bound. Each step takes the support point w of D = B − A
along −v, where v is the current closest point, tests termination, adds w to the simplex and replaces v
by the closest point of the new simplex (`_simplex.closest_point`). The state carries any batch axes
last, so the same step runs for one pair and, under `vmap` (`_iterate`), on contiguous lanes of a whole
batch. Stopping tests, each a guarantee:
- duality gap: ``|v|² − v·w ≤ tol·|v|·max|w|`` gives ``|v| − d ≤ tol·max|w|`` since v·w/|v| ≤ d ≤ |v|;
- repeated support point or no decrease of |v|: no further progress is possible in this precision;
- the simplex encloses the origin, or |v| ≤ eps max|w|: the cores intersect or touch;
- `separation_bound`: the lower bound v·w/|v| exceeds it (early exit of `intersect` and of far pairs);
- `contact_bound`: the upper bound |v| is at most it (early exit of `intersect` for rounded shapes).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._dataclass import entry, pytree_dataclass
from ._gate import broadcast_lanes, split_shared, update_rows, with_batch_rule
from ._minkowski import POINT_ROW, SUPPORT_FIELDS, RelativePair, SupportPoint
from ._result import RUNNING, STALLED_ACROSS, Simplex, Status
from ._simplex import closest_point
from ._tolerance import CPU_GJK_CHUNK, GJK_PROGRESS_ROUNDINGS, STALL_CONTACT_ROUNDINGS, epsilon
from ._vector import first_argmax, leading_dot, select


@pytree_dataclass
class GJKState:
    """Loop carry of GJK (A's frame).

    Values read and written together share an array, read through properties: each leaf of a loop's
    carry costs XLA kernels of its own to copy, select, gather and transpose.

    Fields:
        vertices: (4, 5, 3) the simplex slots' support points (`SupportPoint.stacked` on axis 1);
            `points` (4, 3) their points of D.
        weights: (4,) barycentric weights of `closest`; mask: (4,) bool slots in use.
        closest: (3,) v, the simplex point closest to the origin.
        measures: (2,) `lower_bound` the best lower bound on the core distance seen so far,
            `scale_sq` max |w|² over the support points seen (the size of D).
        counts: (2,) int32 `iterations` (support evaluations), `status` (RUNNING, a `Status` or
            STALLED_ACROSS).
    """

    vertices: jnp.ndarray
    weights: jnp.ndarray
    mask: jnp.ndarray
    closest: jnp.ndarray
    measures: jnp.ndarray
    counts: jnp.ndarray

    points = entry("vertices", (slice(None), POINT_ROW))
    lower_bound, scale_sq = (entry("measures", k) for k in range(2))
    iterations, status = (entry("counts", k) for k in range(2))

    def simplex(self) -> Simplex:
        """The public `Simplex` view of the state."""
        v = SupportPoint.unstacked(self.vertices, axis=1)
        return Simplex(v.direction_a, v.direction_b, v.point_a, v.point_b, self.weights, self.mask)


def _state(vertices, weights, mask, closest, lower_bound, scale_sq, iterations, status) -> GJKState:
    """A `GJKState` of its values."""
    return GJKState(vertices, weights, mask, closest, jnp.stack([lower_bound, scale_sq]),
                    jnp.stack([iterations, status]).astype(jnp.int32))


def _touching(norm_sq, scale_sq):
    """|v| is within rounding (eps·max|w|, the error of v itself) of zero."""
    return norm_sq <= epsilon(norm_sq.dtype) ** 2 * scale_sq


def _initial_state(pair: RelativePair, warm_start: Simplex | None) -> GJKState:
    """A one-point simplex from the centres' direction, or the warm start's re-evaluated simplex."""
    # From the centres' direction (Seed 004's choice); coincident centres start along +x instead.
    toward_b = pair.center()
    toward_b = jnp.where(jnp.any(toward_b != 0), toward_b, jnp.eye(3, dtype=toward_b.dtype)[0])
    first = pair.support(-toward_b, packed_once=True)
    dtype = first.point.dtype
    vertices = jnp.zeros((4, len(SUPPORT_FIELDS), 3), dtype).at[0].set(first.stacked(axis=0))
    mask = jnp.array([True, False, False, False])
    closest, weights = first.point, jnp.array([1, 0, 0, 0], dtype)
    if warm_start is not None:
        warm = pair.points_from_directions(warm_start.directions_a, warm_start.directions_b, packed_once=True)
        warm_closest, warm_weights, warm_mask = closest_point(warm.point, warm_start.mask)
        use_warm = jnp.any(warm_start.mask) & (
            jnp.sum(warm_closest**2) <= jnp.sum(closest**2)
        )
        pick = lambda w, c: jnp.where(use_warm, w, c)  # noqa: E731
        vertices = pick(warm.stacked(axis=1), vertices)
        closest, weights = pick(warm_closest, closest), pick(warm_weights, weights)
        mask = pick(warm_mask, mask)
    norm_sq = jnp.sum(closest**2)
    points = vertices[:, POINT_ROW]
    scale_sq = jnp.max(jnp.where(mask, jnp.sum(points**2, axis=-1), 0))
    status = jnp.where(_touching(norm_sq, scale_sq), Status.INTERSECTING, RUNNING)
    return _state(vertices, weights, mask, closest, jnp.zeros((), dtype), scale_sq, 1, status)


def _running(state: GJKState, max_iterations: int):
    return (state.status == RUNNING) & (state.iterations < max_iterations)


def _step(support, state: GJKState, separation_bound, contact_bound, max_iterations: int,
          tolerance: float) -> GJKState:
    """One GJK step on the lanes still running; the others keep their state. The state's leaves carry
    any batch axes last (one pair: none), `support` maps directions (3, *B) to a `SupportPoint` of
    (3, *B) leaves, and the bounds are () or (*B)."""
    running = _running(state, max_iterations)
    v = state.closest
    w = support(-v)
    norm_sq = leading_dot(v, v)
    v_dot_w = leading_dot(v, w.point)
    scale_sq = jnp.maximum(state.scale_sq, leading_dot(w.point, w.point))
    norm = jnp.sqrt(norm_sq)  # > 0 while running: a vanishing v stops the loop as touching
    lower_bound = jnp.maximum(state.lower_bound, v_dot_w / norm)
    repeated = jnp.any(state.mask & jnp.all(state.points == w.point, axis=1), axis=0)
    converged = repeated | (norm_sq - v_dot_w <= tolerance * norm * jnp.sqrt(scale_sq))
    exceeded = lower_bound > separation_bound

    # w goes to slot 3, where the sub-algorithm looks for the newest point; a point already there
    # moves to the first free slot (a running simplex holds at most three points).
    slots = jnp.arange(4).reshape((4,) + (1,) * norm_sq.ndim)
    moved_to = jnp.where(state.mask[3], first_argmax(~state.mask[:3]), 4)

    rows = slots[:, None, None]
    vertices = jnp.where(rows == moved_to, state.vertices[3], state.vertices)
    vertices = jnp.where(rows == 3, w.stacked(axis=0), vertices)
    mask = state.mask | (slots == moved_to) | (slots == 3)
    closest, weights, mask = closest_point(vertices[:, POINT_ROW], mask, last_only=True)
    new_norm_sq = leading_dot(closest, closest)
    # No progress beyond rounding. An improvement within rounding is still taken: in float32 the
    # decrease of |v|² can fall below its ulp while the duality gap is still large.
    stalled = new_norm_sq > norm_sq * (1 + GJK_PROGRESS_ROUNDINGS * epsilon(norm_sq.dtype))
    intersecting = (jnp.all(mask, axis=0) | _touching(new_norm_sq, scale_sq)
                    | (jnp.sqrt(new_norm_sq) <= contact_bound))
    # Stopping with w beyond the origin's plane (v·w < 0) while |v| is within rounding of zero
    # (float32 near contact): rounding keeps the sub-algorithm from enclosing the origin, so the
    # pair touches or overlaps: leave the depth to EPA. With |v| above that, the stall is the
    # sub-algorithm's own precision limit (a thin sliver of D, from nearly parallel edges, gives
    # v to only eps·|w| absolute): the pair is apart by |v| to that precision where w stays on
    # v's side of the origin. Beyond it, the sign is unknown: the direction of a small v is only
    # good to eps·|w|/|v|, so w can cross by rounding (pairs apart by 1e-11 of their size), or
    # because D is a slab thinner than that error around the origin (two crossing needles
    # overlapping by 2e-6): STALLED_ACROSS, which EPA settles.
    near_zero = norm_sq <= (STALL_CONTACT_ROUNDINGS * epsilon(norm_sq.dtype)) ** 2 * scale_sq
    stalled_across = (converged | stalled) & (v_dot_w < 0)
    status = select(
        [stalled_across & near_zero, stalled_across, converged | stalled, exceeded, intersecting],
        [Status.INTERSECTING, STALLED_ACROSS, Status.SEPARATED, Status.BOUND_EXCEEDED, Status.INTERSECTING],
        RUNNING,
    ).astype(jnp.int32)
    accept = running & ~(converged | stalled | exceeded)
    pick = lambda new, old: jnp.where(accept, new, old)  # noqa: E731  (the batch trails: it broadcasts)
    return GJKState(
        vertices=pick(vertices, state.vertices),
        weights=pick(weights, state.weights),
        mask=pick(mask, state.mask),
        closest=pick(closest, state.closest),
        measures=jnp.where(running, jnp.stack([lower_bound, scale_sq]), state.measures),
        counts=jnp.where(running, jnp.stack([state.iterations + 1, status]), state.counts),
    )


def _loop(support, state: GJKState, separation_bound, contact_bound, max_iterations: int,
          tolerance: float) -> GJKState:
    """`_step` until no lane runs (leaves as in `_step`)."""
    def step(state):
        return _step(support, state, separation_bound, contact_bound, max_iterations, tolerance)

    return jax.lax.while_loop(lambda state: jnp.any(_running(state, max_iterations)), step, state)


def _iterate(pair: RelativePair, state: GJKState, separation_bound, contact_bound, max_iterations: int,
             tolerance: float) -> GJKState:
    """GJK's loop on one pair from `state`. Under `vmap` (`jax.custom_batching.custom_vmap`) the same
    loop runs with the batch as the last axis of its state (contiguous lanes: ~2x faster on XLA:CPU
    than the batch-major layout `vmap` gives), on the CPU in groups of `CPU_GJK_CHUNK` lanes that stay
    in cache, each group as long as its slowest pair. The supports are evaluated per pair (`vmap`).
    Primal work only (a while loop): the queries' tangent rules never differentiate it."""
    def one_pair(operands):
        pair, state, separation_bound, contact_bound = operands
        return _loop(pair.support, state, separation_bound, contact_bound, max_iterations, tolerance)

    def batched(axis_size, operands, flags):
        (pair, *lanes), (pair_flags, *lane_flags) = operands, flags
        lanes = broadcast_lanes(lanes, lane_flags, axis_size)
        pair_rows, rebuild = split_shared(pair, pair_flags)
        axes = jax.tree_util.tree_map(lambda batched: 0 if batched else None, pair_flags)
        support = jax.vmap(RelativePair.support, in_axes=(axes, 1), out_axes=1)

        def group(rows):  # a group of the pair's batched leaves and of `lanes`, batch first
            pair_rows, lanes = rows
            pair = rebuild(pair_rows)
            state, separation_bound, contact_bound = jax.tree_util.tree_map(
                lambda leaf: jnp.moveaxis(leaf, 0, -1), lanes)
            state = _loop(lambda direction: support(pair, direction), state, separation_bound,
                          contact_bound, max_iterations, tolerance)
            return jax.tree_util.tree_map(lambda leaf: jnp.moveaxis(leaf, -1, 0), state)

        chunk = CPU_GJK_CHUNK if jax.default_backend() == "cpu" else axis_size
        return update_rows(jnp.ones(axis_size, bool), group, (pair_rows, lanes), lanes[0], chunk)

    return with_batch_rule(one_pair, batched, (pair, state, separation_bound, contact_bound))


def gjk(pair: RelativePair, *, max_iterations: int, tolerance: float,
        separation_bound=jnp.inf, contact_bound=-jnp.inf, warm_start: Simplex | None = None
        ) -> GJKState:
    """Run GJK on the cores of `pair`; the final state holds v, the simplex and the status (a `Status`,
    or STALLED_ACROSS: apart by |v| unless EPA finds a depth).

    Args:
        pair: the two cores, B placed in A's frame.
        max_iterations: hard bound on support evaluations.
        tolerance: relative duality-gap tolerance (see the module docstring).
        separation_bound: () stop with BOUND_EXCEEDED once the lower bound exceeds it.
        contact_bound: () stop with INTERSECTING once |v| ≤ it.
        warm_start: a previous `Simplex`, re-evaluated at the new relative pose.
    """
    state = _initial_state(pair, warm_start)
    dtype = state.closest.dtype
    state = _iterate(pair, state, jnp.asarray(separation_bound, dtype), jnp.asarray(contact_bound, dtype),
                     max_iterations, tolerance)
    status = jnp.where(state.status == RUNNING, Status.MAX_ITERATIONS, state.status)
    return _state(state.vertices, state.weights, state.mask, state.closest, state.lower_bound,
                  state.scale_sq, state.iterations, status)
