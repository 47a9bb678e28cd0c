"""Forward kinematics of a tree of links in JAX: joint values to every link's world pose.

A link's pose is its parent's pose, then the joint's fixed origin, then the joint's motion (a rotation
about the joint axis by the joint value for revolute and continuous joints, a translation along it for
prismatic ones, nothing for fixed ones): ``world_child = world_parent ∘ origin ∘ motion(value)``, the
URDF convention. Written with `Pose` (unit quaternions), so it runs under `jit`, `vmap` and every
differentiation transform.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .._dataclass import pytree_dataclass, static_field
from .._pose import Pose, matrix_to_quaternion

FIXED, REVOLUTE, PRISMATIC = 0, 1, 2


@pytree_dataclass
class Kinematics:
    """The kinematic tree, one row per link in topological order (every parent before its children).

    Fields:
        origins: `Pose` (L,): the parent link's frame to the joint frame at zero motion (identity for
            the root).
        axes: (L, 3) unit joint axes in the joint frame (unused where the motion is fixed).
        multipliers, offsets: (L,) a link's joint value is ``multipliers * q[sources] + offsets`` (1 and
            0 except for mimic joints; unused where the motion is fixed).
        parents: static (L,) parent link index, -1 for the root.
        sources: static (L,) index into the joint vector q of the joint driving the link, -1 for none.
        motions: static (L,) `FIXED`, `REVOLUTE` (continuous joints too) or `PRISMATIC`.
    """

    origins: Pose
    axes: jnp.ndarray
    multipliers: jnp.ndarray
    offsets: jnp.ndarray
    parents: tuple = static_field()
    sources: tuple = static_field()
    motions: tuple = static_field()

    def joint_values(self, q):
        """(L,) the value of every link's joint (zero for fixed joints and the root) from q (J,)."""
        sources = np.asarray(self.sources)
        driven = jnp.asarray(q)[np.maximum(sources, 0)] if len(q) else jnp.zeros(len(sources), q.dtype)
        return jnp.where(sources >= 0, self.multipliers * driven + self.offsets, 0)

    def local_poses(self, q) -> Pose:
        """`Pose` (L,): each link's frame in its parent's frame, ``origin ∘ motion(value)``."""
        values = self.joint_values(q)
        motions = np.asarray(self.motions)
        half = jnp.where(motions == REVOLUTE, values / 2, 0)[:, None]
        rotation = jnp.concatenate([jnp.cos(half), jnp.sin(half) * self.axes], axis=-1)
        translation = jnp.where((motions == PRISMATIC)[:, None], values[:, None] * self.axes, 0)
        return self.origins.compose(Pose(translation, rotation))

    def link_poses(self, q, base_pose: Pose) -> Pose:
        """`Pose` (L,): every link's world pose for joint values q (J,), the root placed at `base_pose`.

        Args:
            q: (J,) joint values (radians, metres) in the order of `sources`' indices.
            base_pose: `Pose` of the root link in the world frame (no batch axes).
        """
        local = self.local_poses(q)
        local_rotations = local.rotation_matrix()
        # Chained as rotation matrices, one small product a link. Composing `Pose`s would normalise both
        # quaternions and rebuild a matrix for the translation at every link: six times the operations,
        # three times the compile time.
        translations = [base_pose.apply(local.translation[0])]
        rotations = [base_pose.rotation_matrix() @ local_rotations[0]]
        for link in range(1, len(self.parents)):
            parent = self.parents[link]
            translations.append(translations[parent] + rotations[parent] @ local.translation[link])
            rotations.append(rotations[parent] @ local_rotations[link])
        return Pose(jnp.stack(translations), matrix_to_quaternion(jnp.stack(rotations)))
