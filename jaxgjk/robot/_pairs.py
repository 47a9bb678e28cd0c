"""Evaluating a query on every checked pair of a robot in one traced program.

A *link pair* (a self pair of two links, or a link and an obstacle) expands into the pairs of their
collision geometries. At trace time the geometry pairs are grouped by the kinds of their two stacks
(with the lesser kind first, so a robot with k kinds needs k(k+1)/2 self groups, not k²), each group
runs as one vmapped query, and the results are reduced to one per link pair: for distances the
geometry pair with the least signed distance, for `intersect` whether any geometry pair touches.

Grouping by kind beats one `Packed` batch here: a packed support evaluates every primitive kind and
pads every polytope to the largest, and it cannot hold `ClimbingPolytope`s or obstacles whose fields are
traced; see `benchmarks/results/robot.md` for the measurement.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from .._batch import _exchanged
from .._pose import Pose
from .._result import DistanceResult
from .._shapes import Shape


@dataclasses.dataclass(frozen=True)
class Task:
    """One vmapped query: rows of geometry group `group_a` against rows of `side_b`.

    Fields:
        group_a: index into the robot's geometry groups.
        side_b: ("group", index) for a robot geometry group, ("obstacles", index) for an obstacle stack.
        rows_a, rows_b: (T,) int rows of the two stacks.
        swapped: (T,) bool, the geometry pair was (b, a): its result's sides are exchanged back.
    """

    group_a: int
    side_b: tuple
    rows_a: np.ndarray
    rows_b: np.ndarray
    swapped: np.ndarray


@dataclasses.dataclass(frozen=True)
class PairPlan:
    """The static layout of one evaluation.

    Fields:
        pairs: (P, 2) int link pairs: link indices, or ``num_links + k`` for obstacle k.
        tasks: the `Task`s, whose results are concatenated in this order (geometry pair rows).
        table: (P, M) int geometry pair rows of each link pair, -1 padded.
    """

    pairs: np.ndarray
    tasks: tuple
    table: np.ndarray


@functools.lru_cache(maxsize=64)
def plan_pairs(group_links: tuple, num_links: int, self_pairs: tuple, obstacle_counts: tuple) -> PairPlan:
    """Lay out the link pairs: `self_pairs` ((a, b) link indices), then every link with collision
    geometry against every obstacle (`obstacle_counts`: the number of obstacles in each stack).

    `group_links` holds each geometry group's `links`. Cached: a layout is planned once.
    """
    geometries = {}  # link -> [(group, row)]
    for group_index, links in enumerate(group_links):
        for row, link in enumerate(links):
            geometries.setdefault(link, []).append((group_index, row))
    pairs, expansions = [], []
    for link_a, link_b in self_pairs:
        pairs.append((link_a, link_b))
        expansions.append([(a, ("group", group_b), row_b) for a in geometries[link_a]
                           for group_b, row_b in geometries[link_b]])
    first = num_links
    for stack, count in enumerate(obstacle_counts):
        for link in sorted(geometries):
            for row in range(count):
                pairs.append((link, first + row))
                expansions.append([(a, ("obstacles", stack), row) for a in geometries[link]])
        first += count
    rows = {}  # (group_a, side_b) -> [(row_a, row_b, swapped, pair)]
    for pair, expansion in enumerate(expansions):
        for (group_a, row_a), side_b, row_b in expansion:
            if side_b[0] == "group" and side_b[1] < group_a:  # the lesser kind goes first
                rows.setdefault((side_b[1], ("group", group_a)), []).append((row_b, row_a, True, pair))
            else:
                rows.setdefault((group_a, side_b), []).append((row_a, row_b, False, pair))
    tasks, owners = [], []
    for (group_a, side_b), entries in sorted(rows.items()):
        entries = np.asarray(entries, np.int64).reshape(-1, 4)
        tasks.append(Task(group_a, side_b, entries[:, 0], entries[:, 1], entries[:, 2].astype(bool)))
        owners.append(entries[:, 3])
    owners = np.concatenate(owners) if owners else np.zeros(0, np.int64)
    width = max(np.bincount(owners, minlength=len(pairs)).max(initial=0), 1)
    table = np.full((len(pairs), width), -1, np.int64)
    filled = np.zeros(len(pairs), np.int64)
    for flat, pair in enumerate(owners):
        table[pair, filled[pair]] = flat
        filled[pair] += 1
    return PairPlan(np.asarray(pairs, np.int64).reshape(-1, 2), tuple(tasks), table)


def is_single_shape(shape) -> bool:
    """Whether `shape` is one shape (no batch axis), shared by every pose of its stack."""
    try:
        shape.check("shape")
    except (ValueError, TypeError):
        return False
    return True


def _take(tree, rows):
    return jax.tree_util.tree_map(lambda leaf: leaf[rows], tree)


def evaluate(query, plan: PairPlan, groups, geometry_poses, obstacles, obstacle_poses, **kwargs):
    """`query` on every geometry pair of `plan`, results concatenated along a leading axis.

    Args:
        query: `jaxgjk.signed_distance`, `distance` or `intersect`.
        groups: the robot's `GeometryGroup`s; geometry_poses: their world `Pose`s (G_k,).
        obstacles, obstacle_poses: lists of obstacle stacks (or single shapes) and their `Pose`s (K_s,).
        kwargs: passed to the query (`config=`).
    """
    outputs = []
    for task in plan.tasks:
        shapes_a = _take(groups[task.group_a].shapes, task.rows_a)
        poses_a = _take(geometry_poses[task.group_a], task.rows_a)
        kind, index = task.side_b
        if kind == "group":
            shapes_b, poses_b = _take(groups[index].shapes, task.rows_b), _take(geometry_poses[index],
                                                                               task.rows_b)
            single_b = False
        else:
            single_b = is_single_shape(obstacles[index])
            shapes_b = obstacles[index] if single_b else _take(obstacles[index], task.rows_b)
            poses_b = _take(obstacle_poses[index], task.rows_b)
        result = jax.vmap(lambda a, pa, b, pb: query(a, pa, b, pb, **kwargs),
                          in_axes=(0, 0, None if single_b else 0, 0))(shapes_a, poses_a, shapes_b, poses_b)
        if task.swapped.any() and isinstance(result, DistanceResult):
            result = _exchange_rows(result, task.swapped)
        outputs.append(result)
    return jax.tree_util.tree_map(lambda *leaves: jnp.concatenate(leaves), *outputs)


def _exchange_rows(result: DistanceResult, rows) -> DistanceResult:
    """`result` with the sides exchanged (A's outputs as B's, the normal negated) where `rows` (T,)."""
    return jax.tree_util.tree_map(
        lambda exchanged, kept: jnp.where(rows.reshape((-1,) + (1,) * (kept.ndim - 1)), exchanged, kept),
        _exchanged(result), result)


def nearest_per_pair(flat: DistanceResult, table) -> DistanceResult:
    """The geometry pair of least signed distance for each link pair (rows of `table` (P, M))."""
    if table.shape[1] == 1:
        rows = table[:, 0]
        if np.array_equal(rows, np.arange(len(rows))):
            return flat
        return _take(flat, rows)
    candidates = jnp.where(table >= 0, flat.distance[np.maximum(table, 0)], jnp.inf)
    best = jnp.argmin(candidates, axis=1)
    return _take(flat, jnp.asarray(np.maximum(table, 0))[jnp.arange(len(table)), best])


def any_per_pair(flat, table):
    """(P,) bool: any geometry pair of each link pair (rows of `table` (P, M)) is true."""
    return jnp.any(jnp.where(table >= 0, flat[np.maximum(table, 0)], False), axis=1)


def geometry_world_poses(groups, link_poses: Pose) -> list:
    """The world `Pose` (G_k,) of every geometry of every group: its link's pose, then its origin."""
    return [_take(link_poses, np.asarray(group.links)).compose(group.origins) for group in groups]


def check_obstacles(obstacles, obstacle_poses):
    """Normalise `obstacles` / `obstacle_poses` to lists of stacks and poses; checks at trace time.

    Accepts None (no obstacles), one stack (a shape of one kind with a leading axis K on every leaf, a
    `Packed` batch, or one unbatched shape shared by all K poses) with a `Pose` (K,), or tuples/lists of
    those. Returns (stacks, poses, counts).
    """
    if obstacles is None:
        if obstacle_poses is not None:
            raise ValueError("obstacle_poses given without obstacles")
        return [], [], []
    if isinstance(obstacles, Shape):
        obstacles, obstacle_poses = [obstacles], [obstacle_poses]
    if not isinstance(obstacle_poses, (list, tuple)) or len(obstacle_poses) != len(obstacles):
        raise ValueError("obstacle_poses must be a Pose for one obstacle stack, or a list of Poses, one per "
                         "stack")
    counts = []
    for index, (stack, poses) in enumerate(zip(obstacles, obstacle_poses, strict=True)):
        if not isinstance(stack, Shape):
            raise TypeError(f"obstacles[{index}] must be a jaxgjk shape stack, got {type(stack).__name__}")
        if not isinstance(poses, Pose) or np.ndim(poses.translation) != 2 or np.ndim(poses.rotation) != 2:
            raise ValueError(f"obstacle_poses[{index}] must be a Pose with translation (K, 3) and rotation "
                             "(K, 4)")
        count = np.shape(poses.translation)[0]
        if np.shape(poses.rotation)[0] != count:
            raise ValueError(f"obstacle_poses[{index}]: translation and rotation differ in length")
        if not is_single_shape(stack):
            sizes = {np.shape(leaf)[0] for leaf in jax.tree_util.tree_leaves(stack)}
            if sizes != {count}:
                raise ValueError(f"obstacles[{index}] holds {sorted(sizes)} shapes but "
                                 f"obstacle_poses[{index}] {count} poses")
        counts.append(count)
    return list(obstacles), list(obstacle_poses), counts
