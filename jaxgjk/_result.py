"""Status codes, the query configuration and the result types."""

from __future__ import annotations

import dataclasses
import enum

import jax.numpy as jnp

from ._dataclass import pytree_dataclass, static_field
from ._features import Feature
from ._tolerance import epa_iterations, epa_tolerance, feature_tolerance, gjk_tolerance


class Status(enum.IntEnum):
    """Outcome of a query, stored as an int32 array in `DistanceResult.status`; `.message` explains it."""

    SEPARATED = 0
    INTERSECTING = 1
    PENETRATING = 2
    MAX_ITERATIONS = 3
    DEGENERATE = 4
    INVALID_INPUT = 5
    BOUND_EXCEEDED = 6

    @property
    def message(self) -> str:
        """A user-facing description of the status."""
        return _MESSAGES[self]


RUNNING = -1  # a loop's status while it runs (GJK, EPA, the LP test): not a `Status`, never returned
# GJK stalled on rounding with its support point beyond the origin's plane (v·w < 0): apart by |v|,
# unless EPA, run on it by signed queries, proves a depth. Not a `Status`, never returned.
STALLED_ACROSS = -2

_MESSAGES = {
    Status.SEPARATED: "GJK converged: the shapes are apart and distance > 0 is their distance.",
    Status.INTERSECTING: "The shapes overlap or touch (the distance query reports distance 0).",
    Status.PENETRATING: "EPA converged: distance < 0 is minus the penetration depth.",
    Status.MAX_ITERATIONS: "An iteration bound was hit; outputs are the best estimate so far.",
    Status.DEGENERATE: "A numerical degeneracy stopped the loop early (e.g. EPA could not grow its "
    "polytope); outputs are the best estimate.",
    Status.INVALID_INPUT: "Invalid input (NaN/inf, zero quaternion, negative size, empty vertex set); "
    "outputs are finite placeholders: distance 0, points 0, normal +z, iterations 0.",
    Status.BOUND_EXCEEDED: "GJK stopped once its lower bound exceeded distance_upper_bound; distance "
    "is that lower bound.",
}


@pytree_dataclass
class Config:
    """Iteration bounds and tolerances (static: a different config compiles a different kernel).

    Fields:
        max_gjk_iterations: hard bound on GJK iterations (one support evaluation each).
        max_epa_iterations: hard bound on EPA iterations, which sizes the polytope's arrays (and so the
            cost of every EPA step beyond the first 32, which run on arrays sized for 16, then 32:
            `_tolerance.EPA_PHASE_STEPS`); None picks the dtype's default (`_tolerance.epa_iterations`:
            64 float32, 128 float64).
        gjk_tolerance: relative duality gap at which GJK stops; None picks the dtype's default
            (`_tolerance.gjk_tolerance`: 1e-12 float64, 1e-6 float32).
        epa_tolerance: relative gap at which EPA stops; None picks the dtype's default.
        feature_tolerance: relative tolerance of the closest-feature reports (`_features`); None picks
            the dtype's default (`_tolerance.feature_tolerance`: 1e-6 float64, 1e-3 float32).
        refine_normal: where a curved core holds the contact, take the loops' normal (good to only
            √tolerance there) to rounding by Newton steps (`_refine`), so that gradients of the distance
            and the witness points' are exact; adds roughly 5–40% to a `distance` query on curved pairs
            (nothing on polyhedral ones). False keeps the loops' normal.
        specialised: solve the pairs of sphere, capsule and box cores, and spheres against cylinders
            and ellipsoids (and their `Rounded` forms), by exact closed forms, separating axes and a
            short Newton solve (`_colliders`) instead of GJK/EPA; False forces the general path.
            Half-spaces have no general path: they are always solved in closed form.
    """

    max_gjk_iterations: int = static_field(default=128)
    max_epa_iterations: int | None = static_field(default=None)
    gjk_tolerance: float | None = static_field(default=None)
    epa_tolerance: float | None = static_field(default=None)
    feature_tolerance: float | None = static_field(default=None)
    refine_normal: bool = static_field(default=True)
    specialised: bool = static_field(default=True)

    def resolved(self, dtype) -> Config:
        """This configuration with every field left None set to `dtype`'s default (`_tolerance`)."""
        def pick(value, default):
            return default(dtype) if value is None else value

        return dataclasses.replace(
            self, max_epa_iterations=pick(self.max_epa_iterations, epa_iterations),
            gjk_tolerance=pick(self.gjk_tolerance, gjk_tolerance),
            epa_tolerance=pick(self.epa_tolerance, epa_tolerance),
            feature_tolerance=pick(self.feature_tolerance, feature_tolerance))


@pytree_dataclass
class Simplex:
    """GJK's final simplex (or EPA's final face): up to four vertices of the Minkowski difference B − A.

    Pass it back as `warm_start` for a nearby query: its support directions are re-evaluated at the new
    poses. Leading batch axes are allowed.

    Fields:
        directions_a: (4, 3) support directions in A's local frame (`points_a = A.support(directions_a)`).
        directions_b: (4, 3) support directions in B's local frame.
        points_a: (4, 3) support points of A's core, A's local frame.
        points_b: (4, 3) support points of B's core, B's local frame.
        weights: (4,) barycentric weights of the closest point (zero outside `mask`).
        mask: (4,) bool, the vertices in use.
    """

    directions_a: jnp.ndarray
    directions_b: jnp.ndarray
    points_a: jnp.ndarray
    points_b: jnp.ndarray
    weights: jnp.ndarray
    mask: jnp.ndarray


@pytree_dataclass
class DistanceResult:
    """Result of `distance` / `signed_distance` for one pair (batch axes lead under vmap).

    Fields:
        distance: () signed distance: > 0 separation, < 0 minus the penetration depth, 0 touching.
        point_a: (3,) world-frame witness point on A's surface (closest, or deepest when penetrating).
        point_b: (3,) world-frame witness point on B's surface.
        normal: (3,) world-frame unit vector from A towards B; ``distance == normal · (point_b - point_a)``.
        status: () int32 `Status` code.
        iterations: () int32 GJK iterations plus EPA iterations.
        simplex: the final `Simplex` (cores, relative frame), for warm starts.
        feature_a, feature_b: the `Feature` (vertex, edge, face, curved; vertex indices for polytopes
            and boxes) of A and of B exposed by the normal; NONE for an overlapping pair of `distance`.
    """

    distance: jnp.ndarray
    point_a: jnp.ndarray
    point_b: jnp.ndarray
    normal: jnp.ndarray
    status: jnp.ndarray
    iterations: jnp.ndarray
    simplex: Simplex
    feature_a: Feature
    feature_b: Feature
