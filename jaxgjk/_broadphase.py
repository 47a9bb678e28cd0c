"""Broadphase: the pairs of a scene whose bounds come within a margin, under `jit` with static shapes.

Sort and sweep (Baraff 1992; MuJoCo's broadphase, and one of Bullet's and PhysX's): the boxes are
sorted by their lower bound along the axis where their centres spread most; a box's candidates along
that axis are then a contiguous run of the sorted list, found by binary search. The runs of all boxes are
enumerated as one flat sequence of slots, in fixed-size chunks (a `while_loop` over the chunks; each
chunk maps its slots to pairs, tests the pairs in 3-D, and appends the hits by a prefix sum), so the
work is proportional to the number of pairs that overlap along the sweep axis, and every step is a
data-parallel array operation (sort, search, gather, scan, scatter) that parallelises on a GPU.
"""

from __future__ import annotations

import functools
import operator

import jax
import jax.numpy as jnp
import numpy as np

from ._bounds import aabb
from ._dataclass import pytree_dataclass
from ._tolerance import epsilon

# Slots (candidate pairs along the sweep axis) tested per step of the loop.
CHUNK_SIZE = 16384
# Bounds are widened by this many roundings of their largest coordinate, so that rounding in the
# bounds (the rotation matrix, the sums) never makes them tighter than the shape.
ROUNDING_ALLOWANCE = 32


@pytree_dataclass
class CandidatePairs:
    """Pairs found by `candidate_pairs` (leading batch axes, if any, come first).

    Fields:
        index_a: (capacity,) int32 index into the first set, −1 in the padding after `count` pairs.
        index_b: (capacity,) int32 index into the second set (into the same set, > index_a, for one
            set), −1 in the padding.
        count: () int32 number of pairs found; more than `capacity` when some did not fit.
        overflow: () bool, ``count > capacity``: pairs were left out; call again with a capacity of
            at least `count` (`retry_on_overflow` does).
    """

    index_a: jnp.ndarray
    index_b: jnp.ndarray
    count: jnp.ndarray
    overflow: jnp.ndarray


def _widened(lower, upper, margin):
    """Bounds (N, 3) widened by half the margin and a rounding allowance; NaN bounds become infinite
    (an object that could be anywhere is a candidate with everything)."""
    lower = jnp.where(jnp.isnan(lower), -jnp.inf, lower)
    upper = jnp.where(jnp.isnan(upper), jnp.inf, upper)
    magnitude = jnp.maximum(jnp.where(jnp.isfinite(lower), jnp.abs(lower), 0),
                            jnp.where(jnp.isfinite(upper), jnp.abs(upper), 0))
    largest = jnp.max(magnitude, axis=-1, keepdims=True)
    widen = margin / 2 + ROUNDING_ALLOWANCE * epsilon(lower.dtype) * largest
    return lower - widen, upper + widen


def _sweep_axis(*bound_sets):
    """() int: the axis along which the centres of the finite boxes spread most."""
    centres = jnp.concatenate([(lower + upper) / 2 for lower, upper in bound_sets])
    spread = jnp.nanvar(jnp.where(jnp.isfinite(centres), centres, jnp.nan), axis=0)
    return jnp.argmax(jnp.where(jnp.isnan(spread), -1, spread))


def _sorted_along(lower, upper, axis):
    """The boxes sorted by their lower bound along `axis`: (order (N,) int32, lower (N, 3), upper (N, 3))."""
    order = jnp.argsort(lower[:, axis]).astype(jnp.int32)
    return order, lower[order], upper[order]


@pytree_dataclass
class _Runs:
    """The sweep's runs: owner o pairs with partners ``start[o] + k`` for k < length[o].

    Owners and partners are boxes in sweep order; every pair of boxes that overlap along the sweep
    axis appears in exactly one run, once. Fields:
        owner_index, partner_index: (K,), (L,) int32 indices of the boxes into their sets.
        owner_lower, owner_upper: (K, 3); partner_lower, partner_upper: (L, 3) their bounds.
        start, length: (K,) the runs.
        owner_is_b: (K,) bool, the owner is from the second set (the pair is then (partner, owner)).
    """

    owner_index: jnp.ndarray
    owner_lower: jnp.ndarray
    owner_upper: jnp.ndarray
    partner_index: jnp.ndarray
    partner_lower: jnp.ndarray
    partner_upper: jnp.ndarray
    start: jnp.ndarray
    length: jnp.ndarray
    owner_is_b: jnp.ndarray


def _runs(lower, upper, lower_b, upper_b, axis, count_dtype) -> _Runs:
    order_a, lower_a, upper_a = _sorted_along(lower, upper, axis)
    low_a, high_a = lower_a[:, axis], upper_a[:, axis]
    if lower_b is None:
        # Within one set: the boxes after p in sweep order that start before p ends.
        position = jnp.arange(len(order_a), dtype=count_dtype)
        end = jnp.searchsorted(low_a, high_a, side="right").astype(count_dtype)
        return _Runs(order_a, lower_a, upper_a, order_a, lower_a, upper_a, position + 1,
                     jnp.maximum(end - position - 1, 0), jnp.zeros(len(order_a), bool))
    order_b, lower_b, upper_b = _sorted_along(lower_b, upper_b, axis)
    low_b, high_b = lower_b[:, axis], upper_b[:, axis]
    # B boxes starting within an A box (low_a <= low_b <= high_a), then A boxes starting within a B box
    # strictly after it (low_b < low_a <= high_b): every overlapping pair exactly once. The partners
    # are the B boxes, then the A boxes.
    start_a = jnp.searchsorted(low_b, low_a, side="left")
    end_a = jnp.searchsorted(low_b, high_a, side="right")
    start_b = jnp.searchsorted(low_a, low_b, side="right")
    end_b = jnp.searchsorted(low_a, high_b, side="right")
    length = jnp.concatenate([end_a - start_a, end_b - start_b])
    return _Runs(jnp.concatenate([order_a, order_b]), jnp.concatenate([lower_a, lower_b]),
                 jnp.concatenate([upper_a, upper_b]), jnp.concatenate([order_b, order_a]),
                 jnp.concatenate([lower_b, lower_a]), jnp.concatenate([upper_b, upper_a]),
                 jnp.concatenate([start_a, start_b + len(order_b)]).astype(count_dtype),
                 jnp.maximum(length, 0).astype(count_dtype),
                 jnp.arange(len(length)) >= len(order_a))


def _active(runs: _Runs) -> _Runs:
    """The runs with at least one slot, first (the others keep their place after them with length
    0): each slot of a chunk then belongs to one of the chunk's first owners."""
    keep = jnp.nonzero(runs.length > 0, size=len(runs.length), fill_value=len(runs.length) - 1)[0]
    count = jnp.sum(runs.length > 0)
    return _Runs(runs.owner_index[keep], runs.owner_lower[keep], runs.owner_upper[keep],
                 runs.partner_index, runs.partner_lower, runs.partner_upper, runs.start[keep],
                 jnp.where(jnp.arange(len(keep)) < count, runs.length[keep], 0), runs.owner_is_b[keep])


def _count_dtype(possible: int):
    if possible < 2**31:
        return jnp.int32
    if jax.config.jax_enable_x64:
        return jnp.int64
    raise ValueError(f"{possible:,} possible pairs overflow int32 counts: enable jax_enable_x64")


def pairs_from_bounds(lower, upper, *, margin, capacity: int, lower_b=None, upper_b=None,
                      accept=None) -> CandidatePairs:
    """`candidate_pairs` on bounds given directly (the broadphase proper).

    Args:
        lower, upper: (N, 3) world-frame bounds of the first set; ±inf allowed (unbounded objects),
            NaN read as unbounded.
        margin: () pairs whose bounds are at most this far apart along every axis are found.
        capacity: static int, the length of the output.
        lower_b, upper_b: (M, 3) bounds of a second set, or None for pairs i < j within the first.
        accept: optional function (index_a (C,), index_b (C,)) -> (C,) bool of the pairs to keep
            (allowed masks, collision groups).
    """
    num_a = np.shape(lower)[0]
    one_set = lower_b is None
    possible = num_a * (num_a - 1) // 2 if one_set else num_a * np.shape(lower_b)[0]
    count_dtype = _count_dtype(possible)
    empty = jnp.full(capacity, -1, jnp.int32)
    if possible == 0:
        return CandidatePairs(empty, empty, jnp.zeros((), count_dtype), jnp.zeros((), bool))
    lower, upper = _widened(lower, upper, margin)
    if not one_set:
        lower_b, upper_b = _widened(lower_b, upper_b, margin)
    axis = _sweep_axis((lower, upper)) if one_set else _sweep_axis((lower, upper), (lower_b, upper_b))
    runs = _active(_runs(lower, upper, lower_b, upper_b, axis, count_dtype))
    ends = jnp.cumsum(runs.length)
    total = ends[-1]
    chunk = max(1, min(CHUNK_SIZE, possible))
    last_owner, last_partner = len(runs.length) - 1, len(runs.partner_index) - 1

    def owners_of(first):
        # The owner of the chunk's first slot, then the owners whose runs start within the chunk (at
        # most `chunk` of them, consecutive): mark each run's first slot, carry the marks forward.
        first_owner = jnp.minimum(jnp.searchsorted(ends, first, side="right"), last_owner)
        window = first_owner + jnp.arange(chunk, dtype=count_dtype)
        window_safe = jnp.minimum(window, last_owner)
        offset = ends[window_safe] - runs.length[window_safe] - first
        starts_here = (window <= last_owner) & (offset >= 0) & (offset < chunk)
        marks = jnp.full(chunk, -1, count_dtype).at[jnp.where(starts_here, offset, chunk)].max(
            window, mode="drop")
        return jnp.maximum(jax.lax.cummax(marks), first_owner)

    def step(carry):
        first, found, index_a, index_b = carry
        slot = first + jnp.arange(chunk, dtype=count_dtype)
        owner = owners_of(first)
        partner = jnp.clip(runs.start[owner] + slot - (ends[owner] - runs.length[owner]), 0, last_partner)
        hit = ((slot < total)
               & jnp.all(runs.owner_lower[owner] <= runs.partner_upper[partner], axis=-1)
               & jnp.all(runs.partner_lower[partner] <= runs.owner_upper[owner], axis=-1))
        this, other = runs.owner_index[owner], runs.partner_index[partner]
        if one_set:
            pair_a, pair_b = jnp.minimum(this, other), jnp.maximum(this, other)
        else:
            swap = runs.owner_is_b[owner]
            pair_a, pair_b = jnp.where(swap, other, this), jnp.where(swap, this, other)
        if accept is not None:
            hit = hit & accept(pair_a, pair_b)
        position = found + jnp.cumsum(hit, dtype=count_dtype) - 1
        target = jnp.where(hit & (position < capacity), position, capacity)
        index_a = index_a.at[target].set(pair_a, mode="drop")
        index_b = index_b.at[target].set(pair_b, mode="drop")
        return first + chunk, found + jnp.sum(hit, dtype=count_dtype), index_a, index_b

    carry = (jnp.zeros((), count_dtype), jnp.zeros((), count_dtype), empty, empty)
    _, found, index_a, index_b = jax.lax.while_loop(lambda carry: carry[0] < total, step, carry)
    return CandidatePairs(index_a, index_b, found, found > capacity)


def is_shared(shapes) -> bool:
    """Whether `shapes` is one shape (no batch axis) that serves every pose: its check accepts it."""
    try:
        shapes.check("shapes")
    except (ValueError, TypeError):
        return False
    return True


def _stacked_bounds(shapes, poses):
    """Bounds (N, 3) of N posed shapes: a stack (leading axis N) or one shape shared by all poses."""
    return jax.vmap(aabb, in_axes=(None if is_shared(shapes) else 0, 0))(shapes, poses)


def _group_filter(groups, groups_b):
    """MuJoCo's rule: i and j collide if contype_i & conaffinity_j or contype_j & conaffinity_i."""
    contype_a, conaffinity_a = (jnp.asarray(field) for field in groups)
    contype_b, conaffinity_b = (contype_a, conaffinity_a) if groups_b is None else (
        jnp.asarray(field) for field in groups_b)
    return lambda a, b: (((contype_a[a] & conaffinity_b[b]) | (contype_b[b] & conaffinity_a[a])) != 0)


def check_scene_arguments(margin, capacity, shapes_b, poses_b) -> None:
    """Raise on a capacity that is not a positive int, a margin known to be negative or NaN, or a
    second set given by half."""
    if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) or capacity < 1:
        raise ValueError(f"capacity must be a positive int (static), got {capacity!r}")
    try:
        known = np.asarray(margin)
    except jax.errors.TracerArrayConversionError:  # traced: checked by no one
        known = np.zeros(())
    if not np.all(known >= 0):
        raise ValueError(f"margin must be a non-negative distance, got {margin}")
    if (shapes_b is None) != (poses_b is None):
        raise ValueError("give both shapes_b and poses_b, or neither")


def candidate_pairs(shapes, poses, *, margin, capacity: int, shapes_b=None, poses_b=None, allowed=None,
                    groups=None, groups_b=None) -> CandidatePairs:
    """Pairs of posed shapes whose axis-aligned bounds (`aabb`) come within `margin`: runs under `jit`.

    Within one set (`shapes_b` None) the pairs i < j; else every pair (i of A, j of B). A pair whose
    shapes are within `margin` of each other is always found (the bounds contain the shapes, and are
    widened by a few roundings), so the exact query on the candidates decides which are.

    Args:
        shapes: N shapes (leading axis N on every leaf; `pack` for mixed kinds) or one shape shared by
            all poses.
        poses: `Pose` with translation (N, 3), rotation (N, 4).
        margin: () distance, ≥ 0: pairs whose bounds are at most this far apart are candidates.
        capacity: static int, the length of the output; pairs beyond it are counted, not stored.
        shapes_b, poses_b: a second set of M, for the pairs A × B.
        allowed: optional bool mask, (N, N) within one set (pair i, j kept where ``allowed[i, j] or
            allowed[j, i]``) or (N, M) for A × B.
        groups: optional (contype (N,), conaffinity (N,)) int bit masks, MuJoCo's rule: i and j are
            paired only if ``contype_i & conaffinity_j`` or ``contype_j & conaffinity_i`` is nonzero.
        groups_b: the second set's (contype (M,), conaffinity (M,)) for A × B (default: `groups`).
    Returns:
        `CandidatePairs`: index_a, index_b (capacity,), the first `count` pairs found, then −1 padding;
        `overflow` when count > capacity. The order of the pairs is unspecified.
    """
    check_scene_arguments(margin, capacity, shapes_b, poses_b)
    return _candidate_pairs(shapes, poses, margin=margin, capacity=int(capacity), shapes_b=shapes_b,
                            poses_b=poses_b, allowed=allowed, groups=groups, groups_b=groups_b)


@functools.partial(jax.jit, static_argnames=("capacity",))
def _candidate_pairs(shapes, poses, *, margin, capacity, shapes_b, poses_b, allowed, groups, groups_b):
    lower, upper = _stacked_bounds(shapes, poses)
    lower_b, upper_b = (None, None) if shapes_b is None else _stacked_bounds(shapes_b, poses_b)
    filters = []
    if allowed is not None:
        allowed = jnp.asarray(allowed, bool)
        expected = (len(lower), len(lower) if lower_b is None else len(lower_b))
        if allowed.shape != expected:
            raise ValueError(f"allowed must have shape {expected}, got {allowed.shape}")
        symmetric = lower_b is None
        filters.append(lambda a, b: allowed[a, b] | (allowed[b, a] if symmetric else False))
    if groups is not None:
        filters.append(_group_filter(groups, groups_b))
    accept = None if not filters else (
        lambda a, b: functools.reduce(operator.and_, [keep(a, b) for keep in filters]))
    dtype = lower.dtype
    return pairs_from_bounds(lower, upper, margin=jnp.asarray(margin, dtype), capacity=capacity,
                             lower_b=lower_b, upper_b=upper_b, accept=accept)
