"""Scenes: the broadphase, then a query on its candidate pairs, in one call that runs under `jit`."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from ._bounds import aabb
from ._broadphase import candidate_pairs, check_scene_arguments, is_shared
from ._dataclass import pytree_dataclass
from ._features import FeatureDim, feature_without_vertices
from ._pose import Pose
from ._queries import distance
from ._result import DistanceResult, Status


@pytree_dataclass
class NearbyPairs:
    """The candidate pairs of a scene with the query's result for each (leading batch axes first).

    Fields:
        index_a, index_b: (capacity,) int32 the pairs (as `CandidatePairs`), −1 in the padding.
        count: () int32 number of candidate pairs found (more than capacity when some did not fit).
        overflow: () bool, ``count > capacity``: candidates were left out (`retry_on_overflow`).
        result: the query's result for each slot, leading axis (capacity,). Padding slots hold a
            result that cannot be mistaken for a pair: `distance` +inf with status BOUND_EXCEEDED,
            features NONE and every other field 0 (a `DistanceResult`), False (`intersect`), zeros
            (any other query).
    """

    index_a: jnp.ndarray
    index_b: jnp.ndarray
    count: jnp.ndarray
    overflow: jnp.ndarray
    result: object


def _padding(result):
    """The result a padding slot shows, shaped like `result` (one slot)."""
    zeros = jax.tree_util.tree_map(jnp.zeros_like, result)
    if not isinstance(result, DistanceResult):
        return zeros
    none = feature_without_vertices(FeatureDim.NONE)
    return dataclasses.replace(zeros, distance=jnp.full_like(result.distance, jnp.inf),
                               status=jnp.full_like(result.status, Status.BOUND_EXCEEDED),
                               feature_a=none, feature_b=none)


def _pick(tree, index, shared: bool):
    return tree if shared else jax.tree_util.tree_map(lambda leaf: jnp.asarray(leaf)[index], tree)


def nearby_pairs(query, shapes, poses, *, margin, capacity: int, shapes_b=None, poses_b=None,
                 allowed=None, groups=None, groups_b=None, config=None) -> NearbyPairs:
    """`candidate_pairs`, then `query` on every candidate: a scene's pairs within `margin`, under `jit`.

    `jg.distance` runs with ``distance_upper_bound=margin``, so candidates farther apart stop early
    with status BOUND_EXCEEDED (their distance a lower bound above the margin); `signed_distance` and
    `intersect` run in full. The pairs within the margin are those with ``result.distance <= margin``
    (for `intersect`: the overlapping ones are True). Batch over scenes (environments) with
    `jax.vmap`, e.g. ``in_axes=(None, 0)`` for shared shapes and per-scene poses.

    Args:
        query: `jg.distance`, `jg.signed_distance`, `jg.intersect`, or any function of
            (a, pose_a, b, pose_b) that takes ``config=``.
        shapes, poses, margin, capacity, shapes_b, poses_b, allowed, groups, groups_b: as
            `candidate_pairs` (capacity: static; margin: () distance ≥ 0).
        config: `Config` passed to the query.
    Returns:
        `NearbyPairs`: the candidates and, with a leading axis (capacity,), the query's results.
    """
    check_scene_arguments(margin, capacity, shapes_b, poses_b)
    return _nearby_pairs(query, shapes, poses, margin=margin, capacity=int(capacity), shapes_b=shapes_b,
                         poses_b=poses_b, allowed=allowed, groups=groups, groups_b=groups_b, config=config)


@functools.partial(jax.jit, static_argnames=("query", "capacity", "config"))
def _nearby_pairs(query, shapes, poses, *, margin, capacity, shapes_b, poses_b, allowed, groups, groups_b,
                  config) -> NearbyPairs:
    candidates = candidate_pairs(shapes, poses, margin=margin, capacity=capacity, shapes_b=shapes_b,
                                 poses_b=poses_b, allowed=allowed, groups=groups, groups_b=groups_b)
    one_set = shapes_b is None
    shapes_b, poses_b = (shapes, poses) if one_set else (shapes_b, poses_b)
    shared_a, shared_b = is_shared(shapes), is_shared(shapes_b)
    options = {} if config is None else {"config": config}
    if query is distance:
        options["distance_upper_bound"] = margin

    # Padding slots evaluate the first object of each set with B moved clear of A along x (beyond the
    # margin), which costs one early-exiting GJK run and never starts EPA.
    stand_in_a = _pick(shapes, 0, shared_a), _pick(poses, 0, False)
    stand_in_b = _pick(shapes_b, 0, shared_b), _pick(poses_b, 0, False)
    (_, upper_a), (lower_b, _) = aabb(*stand_in_a), aabb(*stand_in_b)
    clearance = upper_a[0] - lower_b[0] + 2 * margin + 1
    clearance = jnp.where(jnp.isfinite(clearance), clearance, 0)
    moved_b = Pose(stand_in_b[1].translation.at[0].add(clearance), stand_in_b[1].rotation)

    def one(index_a, index_b):
        is_pair = index_a >= 0
        pose_b = _pick(poses_b, jnp.maximum(index_b, 0), False)
        pose_b = jax.tree_util.tree_map(lambda real, clear: jnp.where(is_pair, real, clear), pose_b, moved_b)
        result = query(_pick(shapes, jnp.maximum(index_a, 0), shared_a),
                       _pick(poses, jnp.maximum(index_a, 0), False),
                       _pick(shapes_b, jnp.maximum(index_b, 0), shared_b), pose_b, **options)
        return jax.tree_util.tree_map(lambda real, pad: jnp.where(is_pair, real, pad), result,
                                      _padding(result))

    result = jax.vmap(one)(candidates.index_a, candidates.index_b)
    return NearbyPairs(candidates.index_a, candidates.index_b, candidates.count, candidates.overflow,
                       result)


def retry_on_overflow(function, *args, capacity: int, **kwargs):
    """``function(*args, capacity=capacity, **kwargs)``, called again with a larger capacity while
    its result's `overflow` is set anywhere (outside `jit`; for `candidate_pairs`, `nearby_pairs` or
    a jitted, vmapped wrapper of them that takes ``capacity=``).

    The new capacity is the next power of two at or above the largest `count` (at least double the
    last), so one retry usually suffices and repeated calls reuse a few compiled sizes.

    Returns:
        The first result without overflow; its capacity is ``result.index_a.shape[-1]`` (pass it to
        the next call to skip the retry).
    """
    while True:
        found = function(*args, capacity=capacity, **kwargs)
        if not np.any(np.asarray(found.overflow)):
            return found
        needed = int(np.max(np.asarray(found.count)))
        capacity = max(2 * capacity, 1 << max(needed - 1, 0).bit_length())
