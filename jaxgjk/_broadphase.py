"""Broadphase: the pairs of a scene whose bounds come within a margin, under `jit` with static shapes.

Sort and sweep (Baraff 1992; MuJoCo's broadphase, and one of Bullet's and PhysX's) within the
columns of a grid: along the axis where the boxes' centres spread most, a box meets only boxes whose
lower bound lies in a window around its own extent; across it, the plane is cut into square columns
about the size of a typical box, and a box no wider than a column meets only the boxes of its own
and the neighbouring columns. Sorted by column, then by lower bound, each such set of partners is a
contiguous run of the sorted list, found by binary search. Boxes too large for a column (and
unbounded ones) sweep over every box instead. The runs of all boxes are enumerated as one flat
sequence of slots in fixed-size chunks (a `while_loop`; each chunk maps its slots to pairs, tests
them in 3-D, and appends the hits by a prefix sum), so the work follows the number of pairs in the
runs, and every step is a data-parallel array operation (sort, search, gather, scan, scatter) that
parallelises on a GPU. On 10 000 unit-size boxes in a 20³ box the columns cut the slots tenfold
against a plain sweep (0.38 M against 3.8 M; `benchmarks/results/broadphase.md`).
"""

from __future__ import annotations

import functools
import operator

import jax
import jax.numpy as jnp
import numpy as np

from ._batch import _is_single
from ._bounds import aabb
from ._dataclass import pytree_dataclass
from ._tolerance import epsilon

# Slots (candidate pairs of the runs) tested per step of the loop.
CHUNK_SIZE = 16384
# The grid's columns across the sweep axis: at most this many per axis (more merge at the edge), of
# side `CELL_FACTOR` times the `CELL_QUANTILE` quantile of the boxes' largest extent; a box wider
# than `SMALL_FRACTION` of a column on any axis sweeps over every box instead. A column spans at
# least `GRID_RESOLUTION` roundings of the largest coordinate, so that rounding moves a box by at
# most a small fraction of a column (well within the 1 − SMALL_FRACTION to spare).
COLUMNS = 4096
CELL_FACTOR, CELL_QUANTILE, SMALL_FRACTION = 1.5, 0.9, 15 / 16
GRID_RESOLUTION = 1024
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
        count: () int32 number of pairs found; more than `capacity` when some did not fit (int64
            with x64 on and more than 2^31 pairs possible; without x64, a scene whose sweep would
            visit 2^31 slots or more gives up with count 2^31 − 1 and overflow set).
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


def _sweep_axis(lower, upper):
    """() int: the axis along which the centres of the finite boxes (N, 3) spread most."""
    centres = (lower + upper) / 2
    spread = jnp.nanvar(jnp.where(jnp.isfinite(centres), centres, jnp.nan), axis=0)
    return jnp.argmax(jnp.where(jnp.isnan(spread), -1, spread))


def _grid(lower, upper, cell_size):
    """(cell, origin): the side of the square columns across the sweep axis and their corner (3,).

    The default side is `CELL_FACTOR` times the `CELL_QUANTILE` quantile of the boxes' largest
    extent; it is kept at least `GRID_RESOLUTION` roundings of the largest coordinate, so that
    rounding moves no box by more than a small fraction of a column.
    """
    finite = jnp.all(jnp.isfinite(lower) & jnp.isfinite(upper), axis=-1)
    if cell_size is None:
        extent = jnp.where(finite, jnp.max(upper - lower, axis=-1), jnp.nan)
        cell = CELL_FACTOR * jnp.nanquantile(extent, CELL_QUANTILE)
    else:
        cell = jnp.asarray(cell_size, lower.dtype)
    magnitude = jnp.max(jnp.where(finite[:, None], jnp.maximum(jnp.abs(lower), jnp.abs(upper)), 0))
    cell = jnp.maximum(cell, GRID_RESOLUTION * epsilon(lower.dtype) * magnitude)
    cell = jnp.where(cell > 0, cell, 1)  # NaN: no finite box; 0: every box a point at the origin
    origin = jnp.min(jnp.where(finite[:, None], lower, jnp.inf), axis=0)
    return cell, jnp.where(jnp.isfinite(origin), origin, 0)


@pytree_dataclass
class _Boxes:
    """Boxes of one set, in some order (leading axis K on every field).

    Fields:
        index: (K,) int32 index into the set.
        lower, upper: (K, 3) widened bounds.
        low, high: (K,) the bounds along the sweep axis.
        small: (K,) bool, finite and no wider than a column (`SMALL_FRACTION` of it) on every axis.
        rank: (K,) int32 position in the order of both sets' lower bounds along the sweep axis.
    """

    index: jnp.ndarray
    lower: jnp.ndarray
    upper: jnp.ndarray
    low: jnp.ndarray
    high: jnp.ndarray
    small: jnp.ndarray
    rank: jnp.ndarray


def _take(tree, index):
    return jax.tree_util.tree_map(lambda leaf: leaf[index], tree)


def _concatenate(*trees):
    return jax.tree_util.tree_map(lambda *leaves: jnp.concatenate(leaves), *trees)


@pytree_dataclass
class _Sorted:
    """One set's boxes three ways: as given, by column then lower bound, and by lower bound.

    Fields:
        boxes: `_Boxes` (N) in the set's order.
        column: (N, 2) int32 the column (across the sweep axis) of each small box, else 0.
        by_column: `_Boxes` sorted by column (large boxes last), then by lower bound.
        column_keys: (N,) int32 the sorted column keys (``COLUMNS * column[0] + column[1]``).
        by_sweep: `_Boxes` sorted by lower bound along the sweep axis.
    """

    boxes: _Boxes
    column: jnp.ndarray
    by_column: _Boxes
    column_keys: jnp.ndarray
    by_sweep: _Boxes


def _sorted(lower, upper, rank, axis, cell, origin) -> _Sorted:
    finite = jnp.all(jnp.isfinite(lower) & jnp.isfinite(upper), axis=-1)
    small = finite & jnp.all(upper - lower <= SMALL_FRACTION * cell, axis=-1)
    boxes = _Boxes(jnp.arange(len(lower), dtype=jnp.int32), lower, upper, lower[:, axis], upper[:, axis],
                   small, rank)
    across = jnp.stack([(axis + 1) % 3, (axis + 2) % 3])
    scaled = jnp.floor((lower[:, across] - origin[across]) / cell)
    # Columns past the last merge into it: more candidates there, never fewer.
    column = jnp.where(small[:, None], jnp.clip(scaled, 0, COLUMNS - 1), 0).astype(jnp.int32)
    key = jnp.where(small, column[:, 0] * COLUMNS + column[:, 1], COLUMNS * COLUMNS)
    column_keys, _, by_column = jax.lax.sort((key, boxes.low, boxes.index), num_keys=2)
    return _Sorted(boxes, column, _take(boxes, by_column), column_keys, _take(boxes, jnp.argsort(boxes.low)))


def _search(values, first, last, query, right: bool):
    """The first position p in [first, last) with ``values[p] > query`` (`right`; else ``>=``), or
    `last` if none: a binary search, vectorised over the (K,) arguments, in the sorted run
    ``values[first:last]``."""
    def halve(_, bounds):
        low, high = bounds
        middle = (low + high) // 2
        value = values[jnp.clip(middle, 0, len(values) - 1)]
        before = (value <= query) if right else (value < query)
        searching = low < high
        return jnp.where(searching & before, middle + 1, low), jnp.where(searching & ~before, middle, high)

    steps = int(np.ceil(np.log2(len(values) + 1)))
    return jax.lax.fori_loop(0, steps, halve, (first, last))[0]


@pytree_dataclass
class _Runs:
    """The candidate runs: owner o pairs with the partners ``start[o] + k`` for k < length[o].

    Every pair of boxes that overlap is in exactly one run, once, given that a `filtered` run keeps
    only the partners that are small or come after the owner (`_Boxes.rank`). Fields:
        owners: `_Boxes` (K); partners: `_Boxes` (L).
        start, length: (K,) the runs.
        filtered: (K,) bool, the run is a large box's sweep over every box.
        owner_is_b: (K,) bool, the owner is from the second set (the pair is then (partner, owner)).
    """

    owners: _Boxes
    partners: _Boxes
    start: jnp.ndarray
    length: jnp.ndarray
    filtered: jnp.ndarray
    owner_is_b: jnp.ndarray


def _column_run(owners: _Boxes, columns, partners: _Sorted, offset, cell):
    """(start, length) (K,) of the runs of small `owners` (columns (K, 2)) into the column at `offset`
    (2 ints) from theirs: the partners there whose lower bound along the sweep axis is within
    [owner's lower − cell, owner's upper] (a small partner that overlaps the owner along the axis
    starts no earlier). Starts index `partners.by_column`."""
    target = columns + jnp.asarray(offset, jnp.int32)
    inside = owners.small & jnp.all((target >= 0) & (target < COLUMNS), axis=-1)
    key = target[:, 0] * COLUMNS + target[:, 1]
    first = jnp.searchsorted(partners.column_keys, key, side="left").astype(jnp.int32)
    last = jnp.searchsorted(partners.column_keys, key, side="right").astype(jnp.int32)
    start = _search(partners.by_column.low, first, last, owners.low - cell, right=False)
    end = _search(partners.by_column.low, first, last, owners.high, right=True)
    return start, jnp.where(inside, jnp.maximum(end - start, 0), 0)


def _sweep_run(owners: _Boxes, partners: _Sorted, cell):
    """(start, length) (K,) of the runs of large `owners` over every partner (`partners.by_sweep`) whose
    lower bound along the sweep axis is within [owner's lower − cell, owner's upper]."""
    start = jnp.searchsorted(partners.by_sweep.low, owners.low - cell, side="left").astype(jnp.int32)
    end = jnp.searchsorted(partners.by_sweep.low, owners.high, side="right").astype(jnp.int32)
    return start, jnp.where(owners.small, 0, jnp.maximum(end - start, 0))


# The columns around a column: half of them within one set (each neighbouring pair once), all for A × B.
_HALF_NEIGHBOURS = ((0, 1), (1, -1), (1, 0), (1, 1))
_NEIGHBOURS = tuple((b, c) for b in (-1, 0, 1) for c in (-1, 0, 1))


def _runs(lower, upper, lower_b, upper_b, cell_size) -> _Runs:
    """Small boxes meet the small boxes of their own and the neighbouring columns, within a window of
    the sweep axis; large (and unbounded) boxes sweep over every box."""
    one_set = lower_b is None
    both_lower = lower if one_set else jnp.concatenate([lower, lower_b])
    both_upper = upper if one_set else jnp.concatenate([upper, upper_b])
    axis = _sweep_axis(both_lower, both_upper)
    cell, origin = _grid(both_lower, both_upper, cell_size)
    order = jnp.argsort(both_lower[:, axis])
    rank = jnp.zeros(len(order), jnp.int32).at[order].set(jnp.arange(len(order), dtype=jnp.int32))
    a = _sorted(lower, upper, rank[:len(lower)], axis, cell, origin)
    if one_set:
        # Same column: the boxes after p (column order) that start before p ends.
        owners = a.by_column
        position = jnp.arange(len(lower), dtype=jnp.int32)
        last = jnp.searchsorted(a.column_keys, a.column_keys, side="right").astype(jnp.int32)
        end = _search(owners.low, position + 1, last, owners.high, right=True)
        starts, lengths = [position + 1], [jnp.where(owners.small, jnp.maximum(end - position - 1, 0), 0)]
        for offset in _HALF_NEIGHBOURS:
            start, length = _column_run(owners, a.column[owners.index], a, offset, cell)
            starts.append(start)
            lengths.append(length)
        start, length = _sweep_run(a.by_sweep, a, cell)
        runs = len(starts)
        return _Runs(_concatenate(*[owners] * runs, a.by_sweep), _concatenate(a.by_column, a.by_sweep),
                     jnp.concatenate(starts + [start + len(lower)]), jnp.concatenate(lengths + [length]),
                     jnp.arange((runs + 1) * len(lower)) >= runs * len(lower),
                     jnp.zeros((runs + 1) * len(lower), bool))
    b = _sorted(lower_b, upper_b, rank[len(lower):], axis, cell, origin)
    # A's small boxes into B's columns; A's large boxes over B; B's large boxes over A.
    column_runs = [_column_run(a.boxes, a.column, b, offset, cell) for offset in _NEIGHBOURS]
    start_a, length_a = _sweep_run(a.boxes, b, cell)
    start_b, length_b = _sweep_run(b.boxes, a, cell)
    starts = [start for start, _ in column_runs] + [start_a + len(lower_b), start_b + 2 * len(lower_b)]
    lengths = [length for _, length in column_runs] + [length_a, length_b]
    run = jnp.arange((len(_NEIGHBOURS) + 1) * len(lower) + len(lower_b))
    return _Runs(_concatenate(*[a.boxes] * (len(_NEIGHBOURS) + 1), b.boxes),
                 _concatenate(b.by_column, b.by_sweep, a.by_sweep), jnp.concatenate(starts),
                 jnp.concatenate(lengths), run >= len(_NEIGHBOURS) * len(lower),
                 run >= (len(_NEIGHBOURS) + 1) * len(lower))


def _active(runs: _Runs) -> _Runs:
    """The runs with at least one slot, first (the others keep their place after them with length
    0): each slot of a chunk then belongs to one of the chunk's first owners."""
    keep = jnp.nonzero(runs.length > 0, size=len(runs.length), fill_value=len(runs.length) - 1)[0]
    count = jnp.sum(runs.length > 0)
    return _Runs(_take(runs.owners, keep), runs.partners, runs.start[keep],
                 jnp.where(jnp.arange(len(keep)) < count, runs.length[keep], 0), runs.filtered[keep],
                 runs.owner_is_b[keep])


def _count_dtype(possible: int):
    """int64 where `possible` slots or pairs may pass int32 and x64 is on; else int32 (counts that
    would pass it saturate: `saturating_sum`)."""
    return jnp.int64 if possible >= 2**31 and jax.config.jax_enable_x64 else jnp.int32


def saturating_sum(counts):
    """The sum of the integer `counts`, or the dtype's largest value where it would wrap around."""
    limit = jnp.iinfo(counts.dtype).max
    wraps = jnp.sum(counts.astype(jnp.float32)) >= limit - 2.0**26  # float32 keeps 24 bits: margin
    return jnp.where(wraps, limit, jnp.sum(counts))


def pairs_from_bounds(lower, upper, *, margin, capacity: int, lower_b=None, upper_b=None, accept=None,
                      cell_size=None) -> CandidatePairs:
    """`candidate_pairs` on bounds given directly (the broadphase proper).

    Args:
        lower, upper: (N, 3) world-frame bounds of the first set; ±inf allowed (unbounded objects),
            NaN read as unbounded.
        margin: () pairs whose bounds are at most this far apart along every axis are found.
        capacity: static int, the length of the output.
        lower_b, upper_b: (M, 3) bounds of a second set, or None for pairs i < j within the first.
        accept: optional function (index_a (C,), index_b (C,)) -> (C,) bool of the pairs to keep
            (allowed masks, collision groups).
        cell_size: () side of the grid's columns across the sweep axis; None picks it from the boxes'
            sizes (`_grid`), inf puts every box in one column (a plain sort and sweep).
    """
    num_a = np.shape(lower)[0]
    one_set = lower_b is None
    possible = num_a * (num_a - 1) // 2 if one_set else num_a * np.shape(lower_b)[0]
    count_dtype = _count_dtype(2 * possible)  # slots: a pair of large boxes takes two
    empty = jnp.full(capacity, -1, jnp.int32)
    if possible == 0:
        return CandidatePairs(empty, empty, jnp.zeros((), count_dtype), jnp.zeros((), bool))
    lower, upper = _widened(lower, upper, margin)
    if not one_set:
        lower_b, upper_b = _widened(lower_b, upper_b, margin)
    runs = _active(_runs(lower, upper, lower_b, upper_b, cell_size))
    chunk = max(1, min(CHUNK_SIZE, possible))
    # More slots than the count type holds (2^31 without x64: beyond ~46 000 boxes all overlapping)
    # are not enumerated: the count saturates, with `overflow` set.
    slots = saturating_sum(runs.length.astype(count_dtype))
    enumerable = slots < jnp.iinfo(count_dtype).max - chunk
    ends = jnp.cumsum(runs.length, dtype=count_dtype)
    total = jnp.where(enumerable, ends[-1], 0)
    last_owner, last_partner = len(runs.length) - 1, len(runs.partners.index) - 1

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
        this, other = _take(runs.owners, owner), _take(runs.partners, partner)
        hit = ((slot < total)
               & jnp.all(this.lower <= other.upper, axis=-1) & jnp.all(other.lower <= this.upper, axis=-1)
               & (~runs.filtered[owner] | other.small | (other.rank > this.rank)))
        this, other = this.index, other.index
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
    found = jnp.where(enumerable, found, jnp.iinfo(count_dtype).max)
    return CandidatePairs(index_a, index_b, found, found > capacity)


def _stacked_bounds(shapes, poses):
    """Bounds (N, 3) of N posed shapes: a stack (leading axis N) or one shape shared by all poses."""
    return jax.vmap(aabb, in_axes=(None if _is_single(shapes) else 0, 0))(shapes, poses)


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
