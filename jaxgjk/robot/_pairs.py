"""Evaluating a query on every checked pair of a robot in one traced program.

A *link pair* (two links, or a link and an obstacle) expands into the pairs of their collision
geometries. Shapes come from *sources*: the robot's geometry groups and the obstacle stacks. Sources
whose rows have the same layout (shape class, pytree structure, per-row leaf shapes and dtypes) are
concatenated into one *class*, and at trace time the geometry pairs are grouped by their two classes,
the lesser class first (pairs the other way round are computed swapped and exchanged back). Each group
runs as one vmapped query, so a robot whose geometry and obstacles fall into k classes compiles at most
k(k+1)/2 queries, and the results are reduced to one per link pair: for distances the geometry pair of
least signed distance, for `intersect` whether any geometry pair touches.

Grouping by kind beats one `Packed` batch here: a packed support evaluates every kind the batch holds
and pads every polytope to the largest, and it cannot hold `ClimbingPolytope`s or obstacles whose fields are
traced; see `benchmarks/results/session29/robot-64.md` for the measurement.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from .._batch import _exchanged, _is_single
from .._pose import Pose
from .._result import DistanceResult
from .._shapes import Shape

# The order of the shape classes within a pair (then the signature's text breaks ties).
_CLASS_ORDER = ("Sphere", "Capsule", "Box", "Cylinder", "Cone", "Ellipsoid", "Polytope", "ClimbingPolytope")


def stack_signature(shapes) -> tuple:
    """The hashable row layout of a shape stack: class name, pytree structure, and each leaf's per-row
    shape and dtype. Stacks with equal signatures are concatenated into one vmapped operand."""
    leaves, structure = jax.tree_util.tree_flatten(shapes)
    rows = tuple((tuple(np.shape(leaf)[1:]), jnp.result_type(leaf).name) for leaf in leaves)
    return type(shapes).__name__, structure, rows


def _class_key(signature) -> tuple:
    name = signature[0]
    return (_CLASS_ORDER.index(name) if name in _CLASS_ORDER else len(_CLASS_ORDER)), str(signature)


@dataclasses.dataclass(frozen=True)
class Task:
    """One vmapped query: rows of class `class_a` against rows of class `class_b` (class_a ≤ class_b).

    Fields:
        rows_a, rows_b: (T,) int rows of the two classes' concatenated stacks.
        swapped: (T,) bool, the geometry pair was (b, a): its result's sides are exchanged back.
    """

    class_a: int
    class_b: int
    rows_a: np.ndarray
    rows_b: np.ndarray
    swapped: np.ndarray


@dataclasses.dataclass(frozen=True)
class PairPlan:
    """The static layout of one evaluation.

    Fields:
        pairs: (P, 2) int link pairs: link indices, or ``num_links + k`` for obstacle k.
        classes: for each class, the sources concatenated into it, in order.
        tasks: the `Task`s, whose results are concatenated in this order (geometry pair rows).
        table: (P, M) int geometry pair rows of each link pair, -1 padded.
    """

    pairs: np.ndarray
    classes: tuple
    tasks: tuple
    table: np.ndarray


@functools.lru_cache(maxsize=64)
def plan_pairs(group_links: tuple, signatures: tuple, obstacle_counts: tuple, num_links: int,
               self_pairs: tuple) -> PairPlan:
    """Lay out the link pairs: `self_pairs` ((a, b) link indices), then every link with collision
    geometry against every obstacle.

    Args:
        group_links: each robot geometry group's `links` (the first sources).
        signatures: `stack_signature` of every source: the groups, then the obstacle stacks.
        obstacle_counts: the number of obstacles in each stack (the last sources).
    Cached: a layout is planned once.
    """
    counts = [len(links) for links in group_links] + list(obstacle_counts)
    order = sorted(set(signatures), key=_class_key)
    classes = tuple(tuple(s for s, own in enumerate(signatures) if own == signature) for signature in order)
    location = {}  # (source, row) -> (class, row in the class's concatenated stack)
    for class_index, members in enumerate(classes):
        offset = 0
        for source in members:
            for row in range(counts[source]):
                location[source, row] = (class_index, offset + row)
            offset += counts[source]
    geometries = {}  # link -> [(source, row)]
    for source, links in enumerate(group_links):
        for row, link in enumerate(links):
            geometries.setdefault(link, []).append((source, row))
    pairs, expansions = [], []
    for link_a, link_b in self_pairs:
        pairs.append((link_a, link_b))
        expansions.append([(a, b) for a in geometries[link_a] for b in geometries[link_b]])
    first = num_links
    for stack, count in enumerate(obstacle_counts):
        for row in range(count):
            for link in sorted(geometries):
                pairs.append((link, first + row))
                expansions.append([(a, (len(group_links) + stack, row)) for a in geometries[link]])
        first += count
    rows = {}  # (class_a, class_b) -> [(row_a, row_b, swapped, pair)]
    for pair, expansion in enumerate(expansions):
        for item_a, item_b in expansion:
            (class_a, row_a), (class_b, row_b) = location[item_a], location[item_b]
            if class_b < class_a:
                rows.setdefault((class_b, class_a), []).append((row_b, row_a, True, pair))
            else:
                rows.setdefault((class_a, class_b), []).append((row_a, row_b, False, pair))
    tasks, owners = [], []
    for (class_a, class_b), entries in sorted(rows.items()):
        entries = np.asarray(entries, np.int64).reshape(-1, 4)
        tasks.append(Task(class_a, class_b, entries[:, 0], entries[:, 1], entries[:, 2].astype(bool)))
        owners.append(entries[:, 3])
    owners = np.concatenate(owners) if owners else np.zeros(0, np.int64)
    table = np.full((len(pairs), max(np.bincount(owners, minlength=len(pairs)).max(initial=0), 1)), -1)
    filled = np.zeros(len(pairs), np.int64)
    for flat, pair in enumerate(owners):
        table[pair, filled[pair]] = flat
        filled[pair] += 1
    return PairPlan(np.asarray(pairs, np.int64).reshape(-1, 2), classes, tuple(tasks), table)


def _take(tree, rows):
    return jax.tree_util.tree_map(lambda leaf: leaf[rows], tree)


def _concatenate(trees):
    return trees[0] if len(trees) == 1 else jax.tree_util.tree_map(lambda *leaves: jnp.concatenate(leaves),
                                                                    *trees)


def evaluate(query, plan: PairPlan, shapes, poses):
    """`query` on every geometry pair of `plan`, results concatenated along a leading axis.

    Args:
        query: a query on rows of pairs, (shapes_a, poses_a, shapes_b, poses_b) with a leading axis T
            on every leaf to results with a leading axis T: ``jax.vmap(jaxgjk.intersect)``, say.
        shapes: every source's shape stack (leading axis on every leaf), in `plan`'s source order.
        poses: every source's world `Pose` stack, likewise.
    """
    stacks = [(_concatenate([shapes[s] for s in members]), _concatenate([poses[s] for s in members]))
              for members in plan.classes]
    outputs = []
    for task in plan.tasks:
        shapes_a, poses_a = _take(stacks[task.class_a], task.rows_a)
        shapes_b, poses_b = _take(stacks[task.class_b], task.rows_b)
        result = query(shapes_a, poses_a, shapes_b, poses_b)
        if task.swapped.any() and isinstance(result, DistanceResult):
            result = _exchange_rows(result, task.swapped)
        outputs.append(result)
    return _concatenate(outputs)


def _exchange_rows(result: DistanceResult, rows) -> DistanceResult:
    """`result` with the sides exchanged (A's outputs as B's, the normal negated) where `rows` (T,)."""
    return jax.tree_util.tree_map(
        lambda exchanged, kept: jnp.where(rows.reshape((-1,) + (1,) * (kept.ndim - 1)), exchanged, kept),
        _exchanged(result), result)


def nearest_per_pair(flat: DistanceResult, table) -> DistanceResult:
    """The geometry pair of least signed distance for each link pair (rows of `table` (P, M))."""
    if table.shape[1] == 1:
        rows = table[:, 0]
        return flat if np.array_equal(rows, np.arange(len(rows))) else _take(flat, rows)
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
    """Normalise `obstacles` / `obstacle_poses` to lists of shape stacks and `Pose` stacks (trace time).

    Accepts None (no obstacles), one stack (a shape of one kind with a leading axis K on every leaf, a
    `Packed` batch, or one unbatched shape shared by all K poses, broadcast here) with a `Pose` (K,), or
    lists/tuples of those. Returns (stacks, poses, counts).
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
    stacks, counts = [], []
    for index, (stack, poses) in enumerate(zip(obstacles, obstacle_poses, strict=True)):
        if not isinstance(stack, Shape):
            raise TypeError(f"obstacles[{index}] must be a jaxgjk shape stack, got {type(stack).__name__}")
        if not isinstance(poses, Pose) or np.ndim(poses.translation) != 2 or np.ndim(poses.rotation) != 2:
            raise ValueError(f"obstacle_poses[{index}] must be a Pose with translation (K, 3) and rotation "
                             "(K, 4)")
        count = np.shape(poses.translation)[0]
        if np.shape(poses.rotation)[0] != count:
            raise ValueError(f"obstacle_poses[{index}]: translation and rotation differ in length")
        if _is_single(stack):
            stack = jax.tree_util.tree_map(
                lambda leaf, k=count: jnp.broadcast_to(leaf, (k,) + np.shape(leaf)), stack)
        else:
            sizes = {np.shape(leaf)[0] for leaf in jax.tree_util.tree_leaves(stack)}
            if sizes != {count}:
                raise ValueError(f"obstacles[{index}] holds {sorted(sizes)} shapes but "
                                 f"obstacle_poses[{index}] {count} poses")
        stacks.append(stack)
        counts.append(count)
    return stacks, list(obstacle_poses), counts
