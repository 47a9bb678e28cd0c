"""Scenes: the broadphase, then a query on its candidate pairs, in one call that runs under `jit`."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from ._batch import _is_single
from ._bounds import aabb
from ._broadphase import candidate_pairs, check_scene_arguments, saturating_sum
from ._dataclass import pytree_dataclass
from ._features import FeatureDim, feature_without_vertices
from ._pose import Pose
from ._queries import distance
from ._result import DistanceResult, Status


@pytree_dataclass
class NearbyPairs:
    """The candidate pairs of one scene or of a batch of scenes, with the query's result for each.

    Fields:
        scene: (capacity,) int32 the scene of each pair (0 for `nearby_pairs`), −1 in the padding.
        index_a, index_b: (capacity,) int32 the pairs within their scene (as `CandidatePairs`), −1 in
            the padding.
        count: () int32 number of candidate pairs found, over all scenes (more than capacity when some
            did not fit).
        overflow: () bool, ``count > capacity``: candidates were left out (`retry_on_overflow`).
        result: the query's result for each slot, leading axis (capacity,). Padding slots hold a
            result that cannot be mistaken for a pair: `distance` +inf with status BOUND_EXCEEDED,
            features NONE and every other field 0 (a `DistanceResult`), False (`intersect`), zeros
            (any other query).
    """

    scene: jnp.ndarray
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


def _take(tree, index):
    return jax.tree_util.tree_map(lambda leaf: jnp.asarray(leaf)[index], tree)


# How a set's shapes are laid out: one shape for every pose, a stack (N, ...), a stack per scene.
_SHARED, _STACK, _PER_SCENE = "shared", "stack", "per scene"


def _layout(shapes) -> str:
    if _is_single(shapes):
        return _SHARED
    if _is_single(_take(shapes, 0)):
        return _STACK
    if _is_single(_take(_take(shapes, 0), 0)):
        return _PER_SCENE
    raise ValueError("shapes must be one shape, a stack of N (leading axis N on every leaf) or a stack per "
                     "scene (leading axes (S, N))")


def _member(shapes, layout: str, scene, index):
    """Object `index` of `scene` (one shape) from shapes laid out as `layout`."""
    shapes = _take(shapes, scene) if layout == _PER_SCENE else shapes
    return shapes if layout == _SHARED else _take(shapes, index)


def nearby_pairs(query, shapes, poses, *, margin, capacity: int, shapes_b=None, poses_b=None,
                 allowed=None, groups=None, groups_b=None, config=None) -> NearbyPairs:
    """`candidate_pairs`, then `query` on every candidate: a scene's pairs within `margin`, under `jit`.

    `jg.distance` runs with ``distance_upper_bound=margin``, so candidates farther apart stop early
    with status BOUND_EXCEEDED (their distance a lower bound above the margin); `signed_distance` and
    `intersect` run in full. The pairs within the margin are those with ``result.distance <= margin``
    (for `intersect`: the overlapping ones are True). For many scenes (environments) use
    `nearby_pairs_batched`, whose scenes share one pool of `capacity` slots.

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
    one_scene = functools.partial(jax.tree_util.tree_map, lambda leaf: jnp.asarray(leaf)[None])
    return _nearby_pairs(query, shapes, one_scene(poses), margin=margin, capacity=int(capacity),
                         shapes_b=shapes_b, poses_b=one_scene(poses_b), allowed=allowed, groups=groups,
                         groups_b=groups_b, config=config)


def nearby_pairs_batched(query, shapes, poses, *, margin, capacity: int, shapes_b=None, poses_b=None,
                         allowed=None, groups=None, groups_b=None, config=None) -> NearbyPairs:
    """`nearby_pairs` over S scenes (environments) at once, their pairs in one pool of `capacity` slots.

    The broadphase runs per scene (`jax.vmap`); the candidates of all scenes are then gathered into
    `capacity` slots and the query runs once over them, so the slots a batch needs follow the total
    number of candidates, not S times the most any scene has (as with `jax.vmap(nearby_pairs)`).
    Per-scene reductions: ``jax.ops.segment_min(found.result.distance, found.scene, S)`` (padding
    goes to segment −1, which segment ops drop, and its distance is +inf).

    Args:
        query, margin, allowed, groups, groups_b, config: as `nearby_pairs` (masks and groups shared
            by all scenes).
        shapes: one shape, a stack of N shared by the scenes (leading axis N), or a stack per scene
            (leading axes (S, N)).
        poses: `Pose` with translation (S, N, 3), rotation (S, N, 4).
        capacity: static int, the slots for all scenes together.
        shapes_b, poses_b: a second set per scene (poses (S, M)), for the pairs A × B.
    Returns:
        `NearbyPairs`, `scene` saying which scene each pair belongs to; `count` over all scenes.
    """
    check_scene_arguments(margin, capacity, shapes_b, poses_b)
    for name, pose in (("poses", poses), ("poses_b", poses_b)):
        if pose is not None and np.ndim(pose.translation) != 3:
            raise ValueError(f"{name} must have leading axes (scenes, objects): translation (S, N, 3), got "
                             f"{np.shape(pose.translation)}")
    return _nearby_pairs(query, shapes, poses, margin=margin, capacity=int(capacity), shapes_b=shapes_b,
                         poses_b=poses_b, allowed=allowed, groups=groups, groups_b=groups_b, config=config)


@functools.partial(jax.jit, static_argnames=("query", "capacity", "config"))
def _nearby_pairs(query, shapes, poses, *, margin, capacity, shapes_b, poses_b, allowed, groups, groups_b,
                  config) -> NearbyPairs:
    """The work of both entry points: poses have a leading scene axis (S, N)."""
    num_scenes, num_a = np.shape(poses.translation)[:2]
    layout_a = _layout(shapes)
    one_set = shapes_b is None
    layout_b = layout_a if one_set else _layout(shapes_b)
    num_b = num_a if one_set else np.shape(poses_b.translation)[1]
    possible = num_a * (num_a - 1) // 2 if one_set else num_a * num_b

    # Per scene, the broadphase; then the stored pairs of all scenes into the `capacity` slots.
    def scene_candidates(shapes, poses, shapes_b, poses_b):
        return candidate_pairs(shapes, poses, margin=margin, capacity=max(1, min(capacity, possible)),
                               shapes_b=shapes_b, poses_b=poses_b, allowed=allowed, groups=groups,
                               groups_b=groups_b)

    axes = (0 if layout_a == _PER_SCENE else None, 0, 0 if layout_b == _PER_SCENE else None, 0)
    per_scene = jax.vmap(scene_candidates, in_axes=axes)(shapes, poses, shapes_b, poses_b)
    stored = (per_scene.index_a >= 0).reshape(-1)
    position = jnp.cumsum(stored, dtype=jnp.int32) - 1
    target = jnp.where(stored & (position < capacity), position, capacity)

    def slots(values):
        return jnp.full(capacity, -1, jnp.int32).at[target].set(values.reshape(-1), mode="drop")

    scene = slots(jnp.broadcast_to(jnp.arange(num_scenes, dtype=jnp.int32)[:, None], per_scene.index_a.shape))
    index_a, index_b = slots(per_scene.index_a), slots(per_scene.index_b)
    count = saturating_sum(per_scene.count)

    shapes_b, poses_b = (shapes, poses) if one_set else (shapes_b, poses_b)
    options = {} if config is None else {"config": config}
    if query is distance:
        options["distance_upper_bound"] = margin
    # Padding slots evaluate the first object of each set of scene 0 with B moved clear of A along x
    # (beyond the margin), which costs one early-exiting GJK run and never starts EPA.
    stand_in_a = _member(shapes, layout_a, 0, 0), _take(poses, (0, 0))
    stand_in_b = _member(shapes_b, layout_b, 0, 0), _take(poses_b, (0, 0))
    (_, upper_a), (lower_b, _) = aabb(*stand_in_a), aabb(*stand_in_b)
    clearance = upper_a[0] - lower_b[0] + 2 * margin + 1
    clearance = jnp.where(jnp.isfinite(clearance), clearance, 0)
    moved_b = Pose(stand_in_b[1].translation.at[0].add(clearance), stand_in_b[1].rotation)

    def one(scene, index_a, index_b):
        is_pair = index_a >= 0
        scene, index_a, index_b = (jnp.maximum(index, 0) for index in (scene, index_a, index_b))
        pose_b = jax.tree_util.tree_map(lambda real, clear: jnp.where(is_pair, real, clear),
                                        _take(poses_b, (scene, index_b)), moved_b)
        result = query(_member(shapes, layout_a, scene, index_a), _take(poses, (scene, index_a)),
                       _member(shapes_b, layout_b, scene, index_b), pose_b, **options)
        return jax.tree_util.tree_map(lambda real, pad: jnp.where(is_pair, real, pad), result,
                                      _padding(result))

    return NearbyPairs(scene, index_a, index_b, count, count > capacity,
                       jax.vmap(one)(scene, index_a, index_b))


def retry_on_overflow(function, *args, capacity: int, **kwargs):
    """``function(*args, capacity=capacity, **kwargs)``, called again with a larger capacity while
    its result's `overflow` is set anywhere (outside `jit`; for `candidate_pairs`, `nearby_pairs`,
    `nearby_pairs_batched`, or a jitted or vmapped wrapper of them that takes ``capacity=``).

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
        if needed >= np.iinfo(np.int32).max:
            raise ValueError("the count saturated (more than 2^31 slots to sweep): enable jax_enable_x64, "
                             "or lower the margin")
        capacity = max(2 * capacity, 1 << max(needed - 1, 0).bit_length())
