"""Rigid poses: unit quaternion (w, x, y, z) and translation, mapping local to world coordinates."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._dataclass import pytree_dataclass
from ._tolerance import float_dtype, tiny
from ._vector import dot, matvec


def _quaternion_multiply(p, q):
    """Hamilton product p ⊗ q of (..., 4) quaternions in (w, x, y, z) order."""
    pw, pv = p[..., :1], p[..., 1:]
    qw, qv = q[..., :1], q[..., 1:]
    w = pw * qw - dot(pv, qv)[..., None]
    v = pw * qv + qw * pv + jnp.cross(pv, qv)
    return jnp.concatenate([w, v], axis=-1)


def _quaternion_norm(rotation):
    """The norm (...) of quaternions `rotation` (..., 4), 1 where it is zero or not finite, and whether
    it is finite and non-zero (...) bool."""
    w, x, y, z = (rotation[..., i] for i in range(4))
    norm_sq = w * w + x * x + y * y + z * z  # written out: a short reduction is a library call
    is_valid = (norm_sq > tiny(rotation.dtype)) & jnp.isfinite(norm_sq)
    # Double where (here and in the callers): the unused branch must not produce NaN in reverse mode.
    return jnp.sqrt(jnp.where(is_valid, norm_sq, 1)), is_valid


def normalized_quaternion(rotation):
    """`rotation` (..., 4) divided by its norm; a zero quaternion gives the identity.

    Returns (unit quaternion (..., 4), is_valid (...) bool: the input had a finite, non-zero norm).
    """
    norm, is_valid = _quaternion_norm(rotation)
    identity = jnp.zeros_like(rotation).at[..., 0].set(1)
    return jnp.where(is_valid[..., None], rotation, identity) / norm[..., None], is_valid


def unit_quaternion_components(rotation):
    """`normalized_quaternion`'s components (w, x, y, z), each (...), and is_valid (...). Per component,
    for code on scalars (`_scalars.Rotation`): under `vmap` the (..., 4) array's selects and division,
    and in reverse mode their derivatives, ran as separate strided passes on XLA:CPU, a large part of
    a closed-form pair's gradient (`benchmarks/results/session50/README.md`)."""
    norm, is_valid = _quaternion_norm(rotation)
    return tuple(jnp.where(is_valid, rotation[..., i], float(i == 0)) / norm for i in range(4)), is_valid


def quaternion_to_matrix(quaternion):
    """Rotation matrix (..., 3, 3) of a unit quaternion (..., 4) in (w, x, y, z) order."""
    w, x, y, z = (quaternion[..., i] for i in range(4))
    rows = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ]
    return jnp.stack([jnp.stack(row, axis=-1) for row in rows], axis=-2)


@jax.jit  # compiled once per shape: called eagerly (reading a URDF, say) it is ~60 small operations
def matrix_to_quaternion(matrix):
    """Unit quaternion (..., 4), w ≥ 0, of a rotation matrix (..., 3, 3).

    Shepperd's method: of the four candidate formulas, use the one with the largest pivot, which is
    always ≥ 1/2 so its division is well conditioned. Branch-free (all four computed, one selected).
    """
    m = matrix
    trace = m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2]
    pivots = jnp.stack([trace, m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]], axis=-1)
    candidates = jnp.stack(
        [
            jnp.stack([1 + trace, m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                       m[..., 1, 0] - m[..., 0, 1]], axis=-1),
            jnp.stack([m[..., 2, 1] - m[..., 1, 2], 1 + 2 * m[..., 0, 0] - trace,
                       m[..., 0, 1] + m[..., 1, 0], m[..., 0, 2] + m[..., 2, 0]], axis=-1),
            jnp.stack([m[..., 0, 2] - m[..., 2, 0], m[..., 0, 1] + m[..., 1, 0],
                       1 + 2 * m[..., 1, 1] - trace, m[..., 1, 2] + m[..., 2, 1]], axis=-1),
            jnp.stack([m[..., 1, 0] - m[..., 0, 1], m[..., 0, 2] + m[..., 2, 0],
                       m[..., 1, 2] + m[..., 2, 1], 1 + 2 * m[..., 2, 2] - trace], axis=-1),
        ],
        axis=-2,
    )
    best = jnp.argmax(pivots, axis=-1)
    quaternion = jnp.take_along_axis(candidates, best[..., None, None], axis=-2)[..., 0, :]
    quaternion = quaternion * jnp.where(quaternion[..., :1] < 0, -1, 1)
    return normalized_quaternion(quaternion)[0]


@pytree_dataclass
class Pose:
    """A rigid transform ``world = R @ local + translation``.

    Fields:
        translation: (*, 3) world-frame position of the local origin.
        rotation: (*, 4) quaternion (w, x, y, z); a non-unit quaternion is normalised where it is used.
    """

    translation: jnp.ndarray
    rotation: jnp.ndarray

    @staticmethod
    def identity(dtype=None) -> Pose:
        """The identity pose."""
        dtype = float_dtype() if dtype is None else dtype
        return Pose(jnp.zeros(3, dtype), jnp.array([1, 0, 0, 0], dtype))

    @staticmethod
    def from_translation(translation) -> Pose:
        """A pure translation (3,)."""
        translation = jnp.asarray(translation)
        dtype = float_dtype(translation)
        return Pose(translation.astype(dtype), jnp.array([1, 0, 0, 0], dtype))

    @staticmethod
    def from_rotation_matrix(rotation_matrix, translation=None) -> Pose:
        """From a rotation matrix (3, 3) and a translation (3,) (zero if omitted)."""
        rotation_matrix = jnp.asarray(rotation_matrix)
        dtype = float_dtype(rotation_matrix)
        translation = jnp.zeros(3, dtype) if translation is None else jnp.asarray(translation, dtype)
        return Pose(translation, matrix_to_quaternion(rotation_matrix.astype(dtype)))

    @staticmethod
    def from_matrix(matrix) -> Pose:
        """From a homogeneous transform (4, 4) ``[[R, t], [0, 1]]``."""
        matrix = jnp.asarray(matrix)
        return Pose.from_rotation_matrix(matrix[..., :3, :3], matrix[..., :3, 3])

    @staticmethod
    def from_euler_xyz(angles, translation=None) -> Pose:
        """From angles (3,) in radians: rotate about x, then about y, then about z (fixed axes).

        ``R = Rz(angles[2]) @ Ry(angles[1]) @ Rx(angles[0])``.
        """
        angles = jnp.asarray(angles)
        dtype = float_dtype(angles)
        angles = angles.astype(dtype)
        half = angles / 2
        zeros = jnp.zeros_like(half[..., 0])
        cos, sin = jnp.cos(half), jnp.sin(half)
        qx = jnp.stack([cos[..., 0], sin[..., 0], zeros, zeros], axis=-1)
        qy = jnp.stack([cos[..., 1], zeros, sin[..., 1], zeros], axis=-1)
        qz = jnp.stack([cos[..., 2], zeros, zeros, sin[..., 2]], axis=-1)
        rotation = _quaternion_multiply(qz, _quaternion_multiply(qy, qx))
        translation = (
            jnp.zeros(angles.shape, dtype) if translation is None else jnp.asarray(translation, dtype)
        )
        return Pose(translation, rotation)

    @staticmethod
    def from_wxyz_xyz(value) -> Pose:
        """From jaxlie's SE3 layout: a (*, 7) array ``[qw, qx, qy, qz, x, y, z]``, or any object with a
        ``wxyz_xyz`` attribute holding one (a ``jaxlie.SE3``; jaxlie itself is not needed)."""
        value = jnp.asarray(getattr(value, "wxyz_xyz", value))
        if value.shape[-1:] != (7,):
            raise ValueError(f"wxyz_xyz must have shape (..., 7), got {value.shape}")
        value = value.astype(float_dtype(value))
        return Pose(value[..., 4:], value[..., :4])

    @property
    def wxyz_xyz(self):
        """(*, 7) ``[qw, qx, qy, qz, x, y, z]``, jaxlie's SE3 layout: ``jaxlie.SE3(pose.wxyz_xyz)``."""
        rotation, translation = jnp.asarray(self.rotation), jnp.asarray(self.translation)
        dtype = float_dtype(rotation, translation)
        return jnp.concatenate([rotation.astype(dtype), translation.astype(dtype)], axis=-1)

    def unit_rotation(self):
        """The rotation quaternion (*, 4) normalised (identity where it was zero or not finite)."""
        return normalized_quaternion(self.rotation)[0]

    def rotation_matrix(self):
        """Rotation matrix (*, 3, 3) of the normalised quaternion."""
        return quaternion_to_matrix(self.unit_rotation())

    def apply(self, points):
        """Map local points (..., 3) to world coordinates."""
        return matvec(self.rotation_matrix(), points) + self.translation

    def inverse(self) -> Pose:
        """The pose mapping world to local coordinates."""
        unit = self.unit_rotation()
        conjugate = unit * jnp.array([1, -1, -1, -1], unit.dtype)
        translation = -matvec(quaternion_to_matrix(conjugate), self.translation)
        return Pose(translation, conjugate)

    def compose(self, other: Pose) -> Pose:
        """The pose ``self ∘ other``: apply `other` first, then `self`."""
        rotation = _quaternion_multiply(self.unit_rotation(), other.unit_rotation())
        return Pose(self.apply(other.translation), rotation)
