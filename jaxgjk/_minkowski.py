"""The Minkowski difference D = B − A of two posed cores, in A's local frame."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp

from ._dataclass import pytree_dataclass
from ._packed import on_both
from ._shapes import Shape
from ._tolerance import power_of_two_scale


@pytree_dataclass
class SupportPoint:
    """A point of D with the support queries that made it (one row per point under `vmap`).

    Fields:
        point: (3,) ``R @ point_b + t - point_a``, A's frame.
        direction_a, direction_b: (3,) support directions in A's and B's local frames.
        point_a, point_b: (3,) core support points in A's and B's local frames.
    """

    point: jnp.ndarray
    direction_a: jnp.ndarray
    direction_b: jnp.ndarray
    point_a: jnp.ndarray
    point_b: jnp.ndarray

    def stacked(self, axis: int):
        """The five fields as one array, stacked along `axis` in `SUPPORT_FIELDS` order (`point`
        first): a loop's carry of one array instead of five, as each leaf of a carry costs XLA
        kernels of its own to copy, select, gather and pad."""
        return jnp.stack([getattr(self, name) for name in SUPPORT_FIELDS], axis=axis)

    @staticmethod
    def unstacked(rows, axis: int) -> SupportPoint:
        """The `SupportPoint` of `stacked` rows along `axis`."""
        return SupportPoint(**{name: jnp.take(rows, row, axis=axis)
                               for row, name in enumerate(SUPPORT_FIELDS)})


SUPPORT_FIELDS = tuple(field.name for field in dataclasses.fields(SupportPoint))
POINT_ROW = SUPPORT_FIELDS.index("point")  # where `stacked` puts the point of D


@pytree_dataclass
class RelativePair:
    """Two cores with B placed in A's frame: ``x_A = rotation @ x_B + translation``.

    Working in A's frame keeps float32 accurate for bodies far from the world origin.
    """

    shape_a: Shape
    shape_b: Shape
    rotation: jnp.ndarray  # (3, 3) B's frame to A's frame
    translation: jnp.ndarray  # (3,) B's origin in A's frame

    def support(self, direction, *, packed_once: bool = False) -> SupportPoint:
        """Support point of D = B − A along `direction` (3,), A's frame.

        The direction is first scaled by a power of two to a largest component in [1, 2) (exact; a
        support ignores the length, and the points' `direction_a`/`direction_b` hold the scaled one):
        GJK's −v is as short as the shapes are small, and a support's own products (radii ·
        direction) would underflow in float32 below ~1e-10.
        """
        direction = direction * power_of_two_scale(jnp.max(jnp.abs(direction)))[0]
        return self.point_from_directions(-direction, self.rotation.T @ direction, packed_once=packed_once)

    def point_from_directions(self, direction_a, direction_b, hint_a=None, hint_b=None, *,
                              packed_once: bool = False) -> SupportPoint:
        """The point s_B(direction_b) − s_A(direction_a) of D, directions in each body's frame; with
        hints (3,) (support points found before for these directions, each body's frame), ties are
        broken towards them (`Shape.core_support_near`). `packed_once`: two packed shapes of the same
        kinds run their support once, stacked (`_packed.on_both`: less to compile; the loops' steps,
        which run many times, keep one call per side, measured faster)."""
        def support(shape, direction, hint):
            return shape.core_support(direction) if hint is None else shape.core_support_near(direction, hint)

        if packed_once:
            point_a, point_b = on_both(support, self.shape_a, (direction_a, hint_a), self.shape_b,
                                       (direction_b, hint_b))
        else:
            point_a = support(self.shape_a, direction_a, hint_a)
            point_b = support(self.shape_b, direction_b, hint_b)
        point = self.rotation @ point_b + self.translation - point_a
        return SupportPoint(point, direction_a, direction_b, point_a, point_b)

    def points_from_directions(self, directions_a, directions_b, hints_a=None, hints_b=None, *,
                               packed_once: bool = False) -> SupportPoint:
        """`point_from_directions` for stacks (K, 3) of directions (and hints)."""
        return jax.vmap(functools.partial(self.point_from_directions, packed_once=packed_once))(
            directions_a, directions_b, hints_a, hints_b)

    def exchanged(self) -> RelativePair:
        """The same two shapes with A placed in B's frame (the pair (B, A))."""
        return RelativePair(self.shape_b, self.shape_a, self.rotation.T, -self.rotation.T @ self.translation)

    def center(self):
        """A point (3,) of D: B's core centre minus A's, A's frame."""
        return self.rotation @ self.shape_b.center() + self.translation - self.shape_a.center()
