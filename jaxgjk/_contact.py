"""The contact of two cores: what every solver of a query produces (A's frame, margins not yet added).

GJK, EPA, the specialised colliders and the normal refinement each produce or improve a `Contact`;
`_solve.world_result` turns the final one into a world-frame `DistanceResult`, and the tangent rule
(`_tangent`) differentiates its simplex with the support directions held.
"""

from __future__ import annotations

import enum

import jax.numpy as jnp

from ._dataclass import pytree_dataclass
from ._result import Simplex
from ._vector import rmatvec


class QueryMode(enum.Enum):
    """Which public query a solve serves (trace-time)."""

    DISTANCE = "distance"  # GJK only: overlapping pairs report distance 0
    SIGNED = "signed"  # GJK, then EPA where the cores overlap
    INTERSECT = "intersect"  # GJK with early exits at the margins


class NormalKind(enum.IntEnum):
    """How the result's normal moves with the inputs in the tangent rule (`_tangent.witness`)."""

    FROM_CLOSEST = 0  # the direction between the simplex's closest points (a triangle's normal)
    FROM_FACE = 1  # the normal of the simplex's face (a converged EPA face)
    FIXED = 2  # held constant (a touching point, coincident centres, a flat D, an EPA bound)
    SMOOTH = 3  # the smooth maximiser of the support gap, moving with the curvature (`_refine`)


@pytree_dataclass
class Contact:
    """The contact of the two cores of one pair, A's frame.

    Fields:
        distance: () signed distance of the cores: > 0 apart, < 0 minus their penetration depth, 0 for
            overlapping cores of a query that does not measure depth.
        normal: (3,) unit normal from A towards B, A's frame.
        simplex: the simplex of D = B − A whose support directions the tangent rule holds.
        point_a: (3,) A's core witness point, A's frame.
        point_b: (3,) B's core witness point, B's frame.
        status: () int32 `Status` so far.
        iterations: () int32 loop iterations so far.
        normal_kind: () int32 `NormalKind`.
        refinable: () bool, the refinement may take the normal further (cores apart with a nonzero
            closest point, or an EPA contact).
    """

    distance: jnp.ndarray
    normal: jnp.ndarray
    simplex: Simplex
    point_a: jnp.ndarray
    point_b: jnp.ndarray
    status: jnp.ndarray
    iterations: jnp.ndarray
    normal_kind: jnp.ndarray
    refinable: jnp.ndarray


def simplex_witnesses(simplex: Simplex):
    """The core witness points (A's frame, B's frame) (3,) each: the simplex's weighted points."""
    return rmatvec(simplex.points_a, simplex.weights), rmatvec(simplex.points_b, simplex.weights)
