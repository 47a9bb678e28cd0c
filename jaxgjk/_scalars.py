"""3-vectors and rotations held as separate scalars per pair, for closed-form queries written end to end.

Under `vmap` a (3,) vector becomes a (B, 3) array and a rotation a (B, 3, 3) one, and XLA:CPU runs a
closed-form query written on them as dozens of loops over short strided rows (~5 ns per lane each,
whatever they compute: `benchmarks/results/session20/`). Held as three (or nine) scalars, each a (B,)
array under `vmap`, the same arithmetic fuses into a few contiguous loops: capsule pairs 37-42 M/s
against 1.7 M/s for the same outputs on arrays (`benchmarks/component_probe.py`). Arrays are made
only for a result's outputs (`Vec3.array`).

`Vec3` and `Rotation` are trace-time containers (not pytrees): their fields are jax arrays of any one
shape, the scalars of one pair (or of a batch, elementwise).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ._tolerance import power_of_two_scale


class Vec3:
    """A 3-vector as three scalars `x`, `y`, `z` (arrays of one shape)."""

    __slots__ = ("x", "y", "z")

    def __init__(self, x, y, z):
        self.x, self.y, self.z = x, y, z

    @staticmethod
    def of(array) -> Vec3:
        """The components of `array` (..., 3)."""
        return Vec3(array[..., 0], array[..., 1], array[..., 2])

    @staticmethod
    def axis(index: int, dtype) -> Vec3:
        """The unit vector along axis `index` (trace-time int)."""
        return Vec3(*(jnp.asarray(i == index, dtype) for i in range(3)))

    def __iter__(self):
        return iter((self.x, self.y, self.z))

    def __add__(self, other: Vec3) -> Vec3:
        return Vec3(self.x + other.x, self.y + other.y, self.z + other.z)

    def __sub__(self, other: Vec3) -> Vec3:
        return Vec3(self.x - other.x, self.y - other.y, self.z - other.z)

    def __neg__(self) -> Vec3:
        return Vec3(-self.x, -self.y, -self.z)

    def __mul__(self, factor) -> Vec3:
        return Vec3(self.x * factor, self.y * factor, self.z * factor)

    def __rmul__(self, factor) -> Vec3:
        return Vec3(factor * self.x, factor * self.y, factor * self.z)

    def dot(self, other: Vec3):
        return self.x * other.x + self.y * other.y + self.z * other.z

    def cross(self, other: Vec3) -> Vec3:
        return Vec3(self.y * other.z - self.z * other.y, self.z * other.x - self.x * other.z,
                    self.x * other.y - self.y * other.x)

    def largest_abs(self):
        return jnp.maximum(jnp.maximum(jnp.abs(self.x), jnp.abs(self.y)), jnp.abs(self.z))

    def is_zero(self):
        return (self.x == 0) & (self.y == 0) & (self.z == 0)

    def unit(self) -> Vec3:
        """This vector over its norm, zero where it is too short to normalise: `_vector.unit_vector`
        (the same scaling by a power of two, so any length gives its direction)."""
        largest = self.largest_abs()
        is_nonzero = largest >= float(jnp.finfo(largest.dtype).tiny) ** 0.5
        scaled = self * power_of_two_scale(jnp.where(is_nonzero, largest, 1))[0]
        # Zero by an infinite norm, so that the division is the last operation: XLA:CPU computes a
        # division once and reads it where it is used, where it copies cheaper operations into every
        # use (the normal's, in a query's every output).
        norm = jnp.where(is_nonzero, jnp.sqrt(jnp.where(is_nonzero, scaled.dot(scaled), 1)), jnp.inf)
        return Vec3(*(c / norm for c in scaled))

    def across(self) -> Vec3:
        """A vector perpendicular to this one, its cross product with the axis of its smallest
        |component| (the first of ties): `_vector.perpendicular` before normalising."""
        ax, ay, az = jnp.abs(self.x), jnp.abs(self.y), jnp.abs(self.z)
        pick_x = (ax <= ay) & (ax <= az)
        pick_y = ~pick_x & (ay <= az)
        one, zero = jnp.ones_like(ax), jnp.zeros_like(ax)
        return self.cross(Vec3(jnp.where(pick_x, one, zero), jnp.where(pick_y, one, zero),
                               jnp.where(pick_x | pick_y, zero, one)))

    def array(self):
        """The vector as an array (..., 3), stacked from its components."""
        return jnp.stack(jnp.broadcast_arrays(self.x, self.y, self.z), axis=-1)

    def array_by_component(self):
        """`array`, written as a function of the component index instead of a stack. XLA:CPU emits a
        stack as one loop over the elements that computes, unvectorised, the expression of each
        element's component: fast where the components are cheap (a point on a segment), where they
        are long (a box's witness point through the poses) 50 times slower than this, which computes
        all three at every element but vectorised."""
        component = np.arange(3)
        x, y, z = (jnp.asarray(c)[..., None] for c in self)
        return jnp.where(component == 0, x, jnp.where(component == 1, y, z))


def where(condition, if_true: Vec3, if_false: Vec3) -> Vec3:
    """`jnp.where` per component."""
    return Vec3(*(jnp.where(condition, a, b) for a, b in zip(if_true, if_false, strict=True)))


class Rotation:
    """A rotation matrix as nine scalars: `rows` (three `Vec3`)."""

    __slots__ = ("rows",)

    def __init__(self, rows):
        self.rows = tuple(rows)

    @staticmethod
    def of_unit_quaternion(w, x, y, z) -> Rotation:
        """The rotation of the unit quaternion (w, x, y, z): `_pose.quaternion_to_matrix`."""
        return Rotation((Vec3(1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)),
                         Vec3(2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)),
                         Vec3(2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y))))

    def column(self, index: int) -> Vec3:
        return Vec3(*(getattr(row, "xyz"[index]) for row in self.rows))

    def transpose(self) -> Rotation:
        return Rotation(self.column(j) for j in range(3))

    def apply(self, vector: Vec3) -> Vec3:
        """R v."""
        return Vec3(*(row.dot(vector) for row in self.rows))

    def apply_transpose(self, vector: Vec3) -> Vec3:
        """Rᵀ v."""
        return Vec3(*(self.column(j).dot(vector) for j in range(3)))

    def __matmul__(self, other: Rotation) -> Rotation:
        columns = [other.column(j) for j in range(3)]
        return Rotation(Vec3(*(row.dot(column) for column in columns)) for row in self.rows)

    def array(self):
        """The matrix as an array (..., 3, 3)."""
        return jnp.stack([row.array() for row in self.rows], axis=-2)
