"""The public queries: `distance`, `signed_distance`, `intersect`, and their trace-time input checks.

Each query validates its inputs at trace time, then solves the pair (`_solve`: GJK on the cores, EPA where
they overlap, a refinement of the normal on curved contacts, the margins and the world frame) inside a
`jax.custom_jvp` whose tangent rule (`_tangent`) never differentiates the loops.
"""

from __future__ import annotations

import jax

from ._checks import check_array
from ._colliders import check_half_spaces
from ._contact import QueryMode
from ._pose import Pose
from ._result import Config, DistanceResult, Simplex
from ._shapes import Shape
from ._solve import overlaps
from ._tangent import differentiable_query, differentiable_signed_rows


def checked_config(config: Config | None, shape_a, pose_a, shape_b, pose_b) -> Config:
    """Raise at trace time for ill-formed inputs; the config to run (the defaults for None)."""
    for name, shape in (("a", shape_a), ("b", shape_b)):
        if not isinstance(shape, Shape):
            raise TypeError(f"{name} must be a jaxgjk shape, got {type(shape).__name__}")
        shape.check(name)
    for name, pose in (("pose_a", pose_a), ("pose_b", pose_b)):
        if not isinstance(pose, Pose):
            raise TypeError(f"{name} must be a jaxgjk.Pose, got {type(pose).__name__}")
        check_array(f"{name}.translation", pose.translation, (3,))
        check_array(f"{name}.rotation", pose.rotation, (4,))
    check_half_spaces(shape_a, shape_b)
    return Config() if config is None else config


def distance(a, pose_a, b, pose_b, *, config: Config | None = None, warm_start: Simplex | None = None,
             distance_upper_bound=None) -> DistanceResult:
    """Distance between two convex shapes by GJK (overlapping pairs: distance 0, INTERSECTING).

    Args:
        a, b: shapes (no batch axes; batch with `jax.vmap` or the batch helpers).
        pose_a, pose_b: their `Pose`s (local to world).
        config: iteration bounds and tolerances (`Config()` if None).
        warm_start: the `simplex` of a previous, nearby query of the same pair.
        distance_upper_bound: () optional; GJK stops once it proves the distance exceeds it
            (status BOUND_EXCEEDED, distance a valid lower bound).
    Returns:
        `DistanceResult`, world frame, units of the inputs.
    """
    config = checked_config(config, a, pose_a, b, pose_b)
    return differentiable_query(config, QueryMode.DISTANCE, a, pose_a, b, pose_b, warm_start,
                                 distance_upper_bound)


def signed_distance(a, pose_a, b, pose_b, *, config: Config | None = None,
                    warm_start: Simplex | None = None) -> DistanceResult:
    """Signed distance: GJK, then EPA where the shapes overlap (distance < 0 is minus the depth).

    Arguments as `distance`. Penetrating pairs: `normal` is the direction along which B moves by
    ``-distance`` to separate; `point_a`/`point_b` are A's and B's deepest points (support points
    along ±normal).
    """
    config = checked_config(config, a, pose_a, b, pose_b)
    return differentiable_query(config, QueryMode.SIGNED, a, pose_a, b, pose_b, warm_start, None)


def signed_distance_rows(shapes_a, poses_a, shapes_b, poses_b, *, config: Config | None = None,
                         epa_capacity: int = 8) -> DistanceResult:
    """`signed_distance` of T pairs at once: shapes and poses with a leading axis T on every leaf (one
    shape kind per side), the same results and derivatives as ``jax.vmap(signed_distance)``.

    EPA runs on the overlapping pairs only, gathered `epa_capacity` at a time (a plain `vmap` of
    `signed_distance` gathers them 2 048 at a time on the CPU, and runs EPA on every lane on a GPU,
    where a loop runs for all lanes while any needs it). Pays where few pairs of a batch overlap: a
    robot's self and obstacle pairs at one configuration. Under an outer `vmap` (over
    configurations, say) each member gathers its own overlapping pairs.

    Returns:
        `DistanceResult` with leading axis T.
    """
    def check_row(*pair):  # the one-pair checks on a row (trace time only)
        checked_config(config, *pair)

    jax.eval_shape(jax.vmap(check_row), shapes_a, poses_a, shapes_b, poses_b)
    config = Config() if config is None else config
    return differentiable_signed_rows(config, epa_capacity, shapes_a, poses_a, shapes_b, poses_b)


def intersect(a, pose_a, b, pose_b, *, config: Config | None = None):
    """Whether two convex shapes overlap or touch: () bool. GJK exits as soon as it finds a separating
    plane or an upper bound on the core distance within the margins; on the CPU a lower bound of the
    distance decides most pairs before it (`_solve.overlaps`). Invalid input gives False."""
    config = checked_config(config, a, pose_a, b, pose_b)
    return overlaps(config, *jax.lax.stop_gradient((a, pose_a, b, pose_b)))
