"""`Robot`: a URDF's links as convex shapes, forward kinematics, and self- and world-collision distances
with gradients through the joint values."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from .._bounds import aabb
from .._dataclass import pytree_dataclass, static_field
from .._pose import Pose
from .._queries import intersect, signed_distance_rows
from .._result import Config, DistanceResult
from .._tolerance import float_dtype
from ._geometry import CLIMBING_ABOVE, build_groups
from ._kinematics import FIXED, PRISMATIC, REVOLUTE, Kinematics
from ._pairs import (
    any_per_pair,
    check_obstacles,
    evaluate,
    geometry_world_poses,
    nearest_per_pair,
    plan_pairs,
    stack_signature,
)
from ._urdf import read_urdf

# Configurations sampled for the allowed-collision matrix (pairs in contact at all of them are skipped).
DEFAULT_ACM_SAMPLES = 256
# Overlapping geometry pairs of one shape-class pair given EPA lanes at once, per configuration
# (`jaxgjk._queries.signed_distance_rows`; more loop trips where more overlap).
EPA_CAPACITY = 8


def collision_penalty(distance, margin):
    """The C¹ penalty of a signed distance below `margin` (CHOMP's obstacle cost, Ratliff et al. 2009).

    ``margin/2 − d`` for ``d < 0`` (penetration: slope −1), ``(margin − d)² / (2 margin)`` for
    ``0 ≤ d < margin``, and 0 beyond: continuous with a continuous derivative. Elementwise; `margin` > 0
    (metres) broadcasts against `distance`.
    """
    margin = jnp.asarray(margin, jnp.result_type(distance))
    inside = jnp.clip(margin - distance, 0, margin)
    return inside * inside / (2 * margin) + jnp.maximum(-distance, 0)


def collision_residual(distance, margin):
    """``max(margin − d, 0)``: least-squares residuals whose half square is a C¹ penalty of the signed
    distance below `margin` (for Gauss–Newton / Levenberg–Marquardt solvers). Elementwise."""
    return jnp.maximum(jnp.asarray(margin, jnp.result_type(distance)) - distance, 0)


@pytree_dataclass
class RobotDistances:
    """Signed distances of every checked pair of a robot at one configuration.

    Fields:
        pairs: (P, 2) int32: link indices into `Robot.link_names`, or ``len(link_names) + k`` for
            obstacle k (obstacle stacks numbered in the order given). Self pairs come first (as
            `Robot.self_pairs`), then for each obstacle in turn every link with collision geometry
            (`Robot.geometry_links`). The same for every configuration (under `vmap` it gains the batch
            axis like every field).
        result: `DistanceResult` batched over the P pairs (world frame; A is the pair's first entry, so
            ``normal`` points from the first link towards the second link or the obstacle). For links
            with several collision geometries, the geometry pair of least signed distance.
    """

    pairs: jnp.ndarray
    result: DistanceResult

    def penalty(self, margin):
        """(P,) `collision_penalty` of each pair's signed distance (`margin`: () or (P,) metres)."""
        return collision_penalty(self.result.distance, margin)

    def cost(self, margin):
        """() the sum of the pairs' `collision_penalty`: a C¹ collision cost for gradient descent."""
        return jnp.sum(self.penalty(margin))

    def min_distance(self):
        """() the least signed distance over all pairs."""
        return jnp.min(self.result.distance)


@pytree_dataclass
class Robot:
    """A robot's kinematic tree and collision geometry, for forward kinematics and distance queries.

    Build it with `Robot.from_urdf`. Every method is a pure function of the joint values q, usable under
    `jax.jit`, `jax.vmap` and differentiation; the robot itself is a pytree (pass it to jitted functions
    as an argument, or close over it).

    Fields:
        kinematics: the `Kinematics` tree.
        lower, upper: (J,) joint limits in the order of `joint_names` (radians, metres; ±inf where a
            joint has none).
        groups: collision geometry `GeometryGroup`s (one per shape kind).
        base_pose: world `Pose` of the root link (identity unless given).
        name: the robot's name.
        link_names: static, every link in topological order (the root first, parents before children).
        joint_names: static, the movable joints (revolute, continuous, prismatic; not mimic joints):
            q holds their values in this order.
        self_pairs: static, the (i, j) link index pairs checked for self-collision, i < j.
    """

    kinematics: Kinematics
    lower: jnp.ndarray
    upper: jnp.ndarray
    groups: tuple
    base_pose: Pose
    name: str = static_field()
    link_names: tuple = static_field()
    joint_names: tuple = static_field()
    self_pairs: tuple = static_field()

    @staticmethod
    def from_urdf(path, *, dtype=None, base_pose: Pose | None = None, package_dirs=None, self_pairs=None,
                  num_samples: int = DEFAULT_ACM_SAMPLES, seed: int = 0,
                  climbing_above: int = CLIMBING_ABOVE) -> Robot:
        """Load a URDF file: links, joints (revolute, continuous, prismatic, fixed; mimic joints follow
        their leader) and collision geometry (meshes as convex hulls, boxes, cylinders, spheres).

        Args:
            path: the URDF file.
            dtype: float dtype of the geometry and kinematics (default: JAX's default float).
            base_pose: world pose of the root link (default identity).
            package_dirs: {package: folder} for ``package://`` mesh references.
            self_pairs: the link pairs to check for self-collision, as (name, name) or (index, index);
                default: every pair of links with collision geometry except adjacent ones (joined by a
                joint, possibly through links without geometry) and those in contact at each of
                `num_samples` random configurations (seeded with `seed`), the usual allowed-collision
                matrix. Edit later with `with_self_pairs` / `without_self_pairs`.
            climbing_above: mesh hulls with more vertices use the hill-climbing support.

        Warns:
            NonConvexMeshWarning: listing the meshes replaced by their convex hulls.
        Raises:
            FileNotFoundError: naming a missing URDF or mesh file.
        """
        description = read_urdf(path, package_dirs=package_dirs)
        dtype = float_dtype() if dtype is None else np.dtype(dtype)
        robot = _from_description(description, dtype, base_pose, climbing_above)
        if self_pairs is None:
            candidates = _non_adjacent_pairs(robot, description)
            touching = always_in_contact(robot, candidates, num_samples=num_samples, seed=seed)
            self_pairs = [pair for pair, always in zip(candidates, touching, strict=True) if not always]
        return robot.with_self_pairs(self_pairs)

    # --- names and limits -------------------------------------------------------------------------

    def link_index(self, link) -> int:
        """The index in `link_names` of a link given by name or index."""
        if isinstance(link, (int, np.integer)):
            if not 0 <= link < len(self.link_names):
                raise IndexError(f"link index {link} out of range for {len(self.link_names)} links")
            return int(link)
        if link not in self.link_names:
            raise KeyError(f"{self.name} has no link {link!r}")
        return self.link_names.index(link)

    def geometry_links(self) -> tuple:
        """Indices of the links that have collision geometry, ascending."""
        return tuple(sorted({link for group in self.groups for link in group.links}))

    def self_pair_names(self) -> tuple:
        """The self-collision pairs as (link name, link name)."""
        return tuple((self.link_names[a], self.link_names[b]) for a, b in self.self_pairs)

    def with_self_pairs(self, pairs) -> Robot:
        """A copy checking exactly `pairs` ((name or index, name or index) each) for self-collision."""
        with_geometry = set(self.geometry_links())
        canonical = set()
        for pair in pairs:
            a, b = sorted(self.link_index(link) for link in pair)
            if a == b:
                raise ValueError(f"self pair {pair} names one link twice")
            missing = [self.link_names[i] for i in (a, b) if i not in with_geometry]
            if missing:
                raise ValueError(f"self pair {pair}: {missing} has no collision geometry")
            canonical.add((a, b))
        return dataclasses.replace(self, self_pairs=tuple(sorted(canonical)))

    def without_self_pairs(self, pairs) -> Robot:
        """A copy that no longer checks `pairs` ((name or index, name or index) each)."""
        dropped = {tuple(sorted(self.link_index(link) for link in pair)) for pair in pairs}
        return dataclasses.replace(self, self_pairs=tuple(p for p in self.self_pairs if p not in dropped))

    def with_base_pose(self, base_pose: Pose) -> Robot:
        """A copy whose root link sits at `base_pose` (world frame)."""
        return dataclasses.replace(self, base_pose=base_pose)

    def random_q(self, key, count: int):
        """(count, J) joint values uniform within the limits (unbounded joints: within ±π)."""
        lower = jnp.where(jnp.isfinite(self.lower), self.lower, -jnp.pi)
        upper = jnp.where(jnp.isfinite(self.upper), self.upper, jnp.pi)
        unit = jax.random.uniform(key, (count, len(self.joint_names)), self.lower.dtype)
        return lower + unit * (upper - lower)

    # --- kinematics and distances -----------------------------------------------------------------

    def link_poses(self, q, base_pose: Pose | None = None) -> Pose:
        """World `Pose` of every link (leading axis over `link_names`) at joint values q (J,).

        Args:
            q: (J,) joint values in the order of `joint_names` (radians, metres).
            base_pose: the root link's world pose (default `self.base_pose`).
        """
        q = self._check_q(q)
        return self.kinematics.link_poses(q, self.base_pose if base_pose is None else base_pose)

    def geometry_poses(self, q, base_pose: Pose | None = None) -> list:
        """World `Pose` of every collision geometry, one `Pose` (G_k,) per entry of `groups`."""
        return geometry_world_poses(self.groups, self.link_poses(q, base_pose))

    def pairs(self, obstacles=None, obstacle_poses=None) -> np.ndarray:
        """(P, 2) the pairs `distances` reports for these obstacles (host-side NumPy, no evaluation)."""
        stacks, _, counts = check_obstacles(obstacles, obstacle_poses)
        return self._plan(stacks, counts).pairs

    def distances(self, q, obstacles=None, obstacle_poses=None, *, base_pose: Pose | None = None,
                  config: Config | None = None) -> RobotDistances:
        """Signed distances, witness points and normals of every self pair and every link–obstacle pair.

        One compiled program (jitted here; it also runs inside the caller's `jit`/`vmap`), differentiable
        w.r.t. q, the obstacle poses, the obstacles' fields and `base_pose`.

        Args:
            q: (J,) joint values in the order of `joint_names`.
            obstacles: None; one stack of obstacles (a shape of one kind with leading axis K on its
                fields, a `jaxgjk.pack` batch, or one unbatched shape shared by all K poses); or a list
                of such stacks (obstacle indices run through them in order).
            obstacle_poses: world `Pose` (K,) for one stack, or a list of them.
            base_pose: the root link's world pose (default `self.base_pose`).
            config: `jaxgjk.Config` for the queries.
        Returns:
            `RobotDistances`.
        """
        stacks, poses, _ = check_obstacles(obstacles, obstacle_poses)
        base_pose = self.base_pose if base_pose is None else base_pose
        return _distances(self, self._check_q(q), stacks, poses, base_pose, config)

    def collision_cost(self, q, obstacles=None, obstacle_poses=None, *, margin=0.02, **kwargs):
        """() the sum of `collision_penalty(d, margin)` over every pair: a C¹ cost for gradient-based
        optimisers (zero when every pair is at least `margin` apart). Other arguments as `distances`."""
        return self.distances(q, obstacles, obstacle_poses, **kwargs).cost(margin)

    # --- helpers ----------------------------------------------------------------------------------

    def _check_q(self, q):
        q = jnp.asarray(q)
        if q.shape != (len(self.joint_names),):
            raise ValueError(f"q must have shape ({len(self.joint_names)},) (one value per joint of "
                             f"joint_names; batch with jax.vmap), got {q.shape}")
        return q.astype(float_dtype(q, self.lower))

    def _plan(self, obstacles, counts):
        """The `PairPlan` for these obstacle stacks and their sizes (as `check_obstacles` returns them)."""
        sources = [group.shapes for group in self.groups] + list(obstacles)
        plan = plan_pairs(tuple(group.links for group in self.groups),
                          tuple(stack_signature(shapes) for shapes in sources), tuple(counts),
                          len(self.link_names), self.self_pairs)
        if not len(plan.pairs):
            raise ValueError(f"{self.name}: no pairs to check (no self pairs and no obstacles)")
        return plan


@functools.partial(jax.jit, static_argnames=("config",))
def _distances(robot, q, obstacles, obstacle_poses, base_pose, config):
    plan = robot._plan(obstacles, [np.shape(poses.translation)[0] for poses in obstacle_poses])
    geometry_poses = geometry_world_poses(robot.groups, robot.kinematics.link_poses(q, base_pose))
    query = functools.partial(signed_distance_rows, config=config, epa_capacity=EPA_CAPACITY)
    flat = evaluate(query, plan, [group.shapes for group in robot.groups] + list(obstacles),
                    geometry_poses + list(obstacle_poses))
    return RobotDistances(jnp.asarray(plan.pairs, jnp.int32), nearest_per_pair(flat, plan.table))


@jax.jit
def _contacts(robot, qs):
    """(S, P) bool: each self pair of `robot` in contact at each configuration qs (S, J)."""
    plan = robot._plan([], [])

    def one(q):
        poses = geometry_world_poses(robot.groups, robot.kinematics.link_poses(q, robot.base_pose))
        shapes = [group.shapes for group in robot.groups]
        return any_per_pair(evaluate(jax.vmap(intersect), plan, shapes, poses), plan.table)

    return jax.vmap(one)(qs)


@jax.jit
def _geometry_bounds(robot, qs):
    """(lower, upper), each (S, G, 3): the world bounds (`jaxgjk.aabb`) of every collision geometry, the
    groups' rows concatenated, at each configuration qs (S, J)."""
    def one(q):
        bounds = [jax.vmap(aabb)(group.shapes, poses)
                  for group, poses in zip(robot.groups, robot.geometry_poses(q), strict=True)]
        return tuple(jnp.concatenate(side) for side in zip(*bounds, strict=True))

    return jax.vmap(one)(qs)


def _boxes_overlap_everywhere(robot, qs, pairs) -> list:
    """For each link pair (a, b) of `pairs`, whether the bounds of some geometry of a overlap those of
    some geometry of b at every configuration of qs (S, J). False proves the pair apart at some
    configuration; True proves nothing. Invalid geometry has infinite bounds: it overlaps everything."""
    lower, upper = (np.asarray(side) for side in _geometry_bounds(robot, qs))
    owners = np.concatenate([np.asarray(group.links) for group in robot.groups])
    overlapping = []
    for a, b in pairs:
        rows_a, rows_b = np.flatnonzero(owners == a), np.flatnonzero(owners == b)
        overlap = np.all((lower[:, rows_a, None] <= upper[:, None, rows_b])
                         & (lower[:, None, rows_b] <= upper[:, rows_a, None]), axis=-1)  # (S, A, B)
        overlapping.append(bool(overlap.any(axis=(1, 2)).all()))
    return overlapping


def always_in_contact(robot: Robot, pairs, *, num_samples: int = DEFAULT_ACM_SAMPLES, seed: int = 0):
    """For each link pair of `pairs`, whether it is in contact (`jaxgjk.intersect`) at every one of
    `num_samples` configurations drawn uniformly within the joint limits (`Robot.random_q`).

    The geometries' world bounds rule most pairs out first (apart at some configuration); only the
    pairs whose bounds overlap at every configuration run the exact test, so a robot with none
    compiles no query here.
    """
    pairs = list(pairs)
    if not pairs or num_samples <= 0:
        return [False] * len(pairs)
    canonical = [tuple(sorted(robot.link_index(link) for link in pair)) for pair in pairs]
    robot.with_self_pairs(canonical)  # the same errors for a pair without geometry or of one link
    qs = robot.random_q(jax.random.PRNGKey(seed), num_samples)
    candidates = sorted(set(canonical))
    possible = [pair for pair, overlap in zip(candidates, _boxes_overlap_everywhere(robot, qs, candidates),
                                              strict=True) if overlap]
    touching = set()
    if possible:
        trial = robot.with_self_pairs(possible)
        contacts = np.asarray(_contacts(trial, qs)).all(axis=0)
        touching = {pair for pair, always in zip(trial.self_pairs, contacts, strict=True) if always}
    return [pair in touching for pair in canonical]


def _non_adjacent_pairs(robot: Robot, description) -> list:
    """Pairs (i < j) of links with collision geometry that no joint joins directly or through links
    without geometry (MoveIt's "adjacent" rule)."""
    with_geometry = set(robot.geometry_links())
    index = {name: i for i, name in enumerate(robot.link_names)}
    neighbours = {i: set() for i in range(len(robot.link_names))}
    for joint in description.joints:
        parent, child = index[joint.parent], index[joint.child]
        neighbours[parent].add(child)
        neighbours[child].add(parent)
    adjacent = set()
    for start in with_geometry:
        seen, frontier = {start}, [start]
        while frontier:  # walk through links without geometry to the nearest links with geometry
            link = frontier.pop()
            for other in neighbours[link] - seen:
                seen.add(other)
                if other in with_geometry:
                    adjacent.add(tuple(sorted((start, other))))
                else:
                    frontier.append(other)
    ordered = sorted(with_geometry)
    return [(a, b) for i, a in enumerate(ordered) for b in ordered[i + 1:] if (a, b) not in adjacent]


def _from_description(description, dtype, base_pose, climbing_above) -> Robot:
    links = description.links
    index = {name: i for i, name in enumerate(links)}
    joints = {joint.child: joint for joint in description.joints}
    movable = [joint for joint in description.joints if joint.kind != "fixed" and joint.mimic is None]
    source = {joint.name: position for position, joint in enumerate(movable)}
    by_name = {joint.name: joint for joint in description.joints}
    origins, axes, multipliers, offsets, parents, sources, motions = [], [], [], [], [], [], []
    for name in links:
        joint = joints.get(name)
        if joint is None:  # the root
            origins.append(np.eye(4))
            axes.append(np.zeros(3))
            multipliers.append(0.0)
            offsets.append(0.0)
            parents.append(-1)
            sources.append(-1)
            motions.append(FIXED)
            continue
        # A chain of mimic joints composes its affine maps: value = multiplier × leader's value + offset.
        multiplier, offset, leader, seen = 1.0, 0.0, joint, {joint.name}
        while leader.mimic is not None:
            leader_name, scale, shift = leader.mimic
            multiplier, offset = multiplier * scale, offset + multiplier * shift
            if leader_name in seen:
                raise ValueError(f"mimic joints form a cycle through {joint.name!r}")
            seen.add(leader_name)
            leader = by_name[leader_name]
        origins.append(joint.origin)
        axes.append(joint.axis)
        parents.append(index[joint.parent])
        motion = {"fixed": FIXED, "prismatic": PRISMATIC}.get(joint.kind, REVOLUTE)
        if joint.kind != "fixed" and leader.kind == "fixed":
            raise ValueError(f"joint {joint.name!r} mimics the fixed joint {leader.name!r}")
        multipliers.append(multiplier)
        offsets.append(offset)
        sources.append(source[leader.name] if motion != FIXED else -1)
        motions.append(motion)
    kinematics = Kinematics(Pose.from_matrix(jnp.asarray(np.stack(origins), dtype)),
                            jnp.asarray(np.stack(axes), dtype), jnp.asarray(multipliers, dtype),
                            jnp.asarray(offsets, dtype), tuple(parents), tuple(sources), tuple(motions))
    groups = build_groups(description.geometries, index, dtype, climbing_above)
    base_pose = Pose.identity(dtype) if base_pose is None else base_pose
    return Robot(kinematics, jnp.asarray([j.lower for j in movable], dtype),
                 jnp.asarray([j.upper for j in movable], dtype), groups, base_pose, description.name,
                 links, tuple(j.name for j in movable), ())
