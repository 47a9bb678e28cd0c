"""The public queries: `distance`, `signed_distance`, `intersect`, with their tangent rules.

Each query validates its inputs at trace time, places B in A's frame, runs GJK on the cores (and EPA
where they overlap), then adds the margins. Gradients come from a `jax.custom_jvp`: the loops run only
in the primal; the tangent holds the final simplex (or EPA face) fixed — its support directions in each
body's frame and its active vertex set — and differentiates the witness points as functions of the poses
and shape fields. ``d distance = normal · (d point_b − d point_a)`` by the envelope theorem.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from ._dataclass import pytree_dataclass
from ._epa import epa
from ._features import FeatureDim, feature_without_vertices
from ._gjk import gjk
from ._minkowski import RelativePair
from ._pose import Pose, normalized_quaternion
from ._refine import refine
from ._result import Config, DistanceResult, Simplex, Status
from ._shapes import Shape, check_array, float_leaves, unit_vector
from ._simplex import face_weights
from ._tolerance import epa_iterations, epa_tolerance, epsilon, feature_tolerance, float_dtype, gjk_tolerance

_DISTANCE, _SIGNED, _INTERSECT = "distance", "signed", "intersect"
# How the normal of the result depends on the geometry (for the tangent rule).
_NORMAL_FROM_CLOSEST, _NORMAL_FROM_FACE, _NORMAL_FIXED, _NORMAL_SMOOTH = 0, 1, 2, 3


def _check_inputs(shape_a, pose_a, shape_b, pose_b) -> None:
    for name, shape in (("a", shape_a), ("b", shape_b)):
        if not isinstance(shape, Shape):
            raise TypeError(f"{name} must be a jaxgjk shape, got {type(shape).__name__}")
        shape.check(name)
    for name, pose in (("pose_a", pose_a), ("pose_b", pose_b)):
        if not isinstance(pose, Pose):
            raise TypeError(f"{name} must be a jaxgjk.Pose, got {type(pose).__name__}")
        check_array(f"{name}.translation", pose.translation, (3,))
        check_array(f"{name}.rotation", pose.rotation, (4,))


def _cast(tree, dtype):
    """Floating leaves of `tree` as `dtype` arrays; integer and bool leaves and float0 tangents kept."""
    def cast(leaf):
        if getattr(leaf, "dtype", None) == jax.dtypes.float0:
            return leaf
        leaf = jnp.asarray(leaf)
        return leaf.astype(dtype) if jnp.issubdtype(leaf.dtype, jnp.floating) else leaf

    return jax.tree_util.tree_map(cast, tree)


def _sanitize(tree, is_valid):
    """Zero every float leaf of `tree` where the input is invalid, so the loops run on finite data."""
    def clean(leaf):
        return leaf if leaf.dtype == jnp.bool_ else jnp.where(is_valid, leaf, 0)

    return jax.tree_util.tree_map(clean, tree)


def _all_finite(tree):
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(leaf)) for leaf in float_leaves(tree)]))


def _prepare(shape_a, pose_a, shape_b, pose_b):
    """Cast to one dtype, check run-time validity, sanitize, and place B in A's frame."""
    dtype = float_dtype(*float_leaves((shape_a, pose_a, shape_b, pose_b)))
    shape_a, pose_a, shape_b, pose_b = _cast((shape_a, pose_a, shape_b, pose_b), dtype)
    _, rotation_a_ok = normalized_quaternion(pose_a.rotation)
    _, rotation_b_ok = normalized_quaternion(pose_b.rotation)
    is_valid = (_all_finite((shape_a, pose_a, shape_b, pose_b)) & shape_a.is_valid()
                & shape_b.is_valid() & rotation_a_ok & rotation_b_ok)
    shape_a, pose_a, shape_b, pose_b = _sanitize((shape_a, pose_a, shape_b, pose_b), is_valid)
    rotation_a = pose_a.rotation_matrix()
    rotation_b = pose_b.rotation_matrix()
    pair = RelativePair(shape_a, shape_b, rotation_a.T @ rotation_b,
                        rotation_a.T @ (pose_b.translation - pose_a.translation))
    return dtype, (shape_a, pose_a, shape_b, pose_b), pair, is_valid


@pytree_dataclass
class _Solution:
    """Primal solution with what the tangent rule needs (all arrays, one pair)."""

    result: DistanceResult
    normal_kind: jnp.ndarray  # () int32, one of _NORMAL_*
    tangent_scale: jnp.ndarray  # () 1 where the distance varies with the inputs, else 0
    normal_response: jnp.ndarray | None  # (3, 3) world-frame `Refinement.response` (_NORMAL_SMOOTH);
    # None where the pair is never refined (`_refines`), so the tangent rule skips the smooth branch


def _solve(config: Config, mode: str, shape_a, pose_a, shape_b, pose_b, warm_start,
           distance_upper_bound) -> _Solution:
    dtype, (shape_a, pose_a, shape_b, pose_b), pair, is_valid = _prepare(
        shape_a, pose_a, shape_b, pose_b)
    margin = shape_a.margin() + shape_b.margin()
    if mode == _INTERSECT:
        separation_bound, contact_bound = margin, margin
    else:
        bound = jnp.inf if distance_upper_bound is None else distance_upper_bound
        separation_bound, contact_bound = bound + margin, -jnp.inf
    gjk_tol = config.gjk_tolerance or gjk_tolerance(dtype)
    state = gjk(pair, max_iterations=config.max_gjk_iterations, tolerance=gjk_tol,
                separation_bound=separation_bound, contact_bound=contact_bound,
                warm_start=None if warm_start is None else _cast(warm_start, dtype))
    simplex = state.simplex()
    core_norm = jnp.linalg.norm(state.closest)
    cores_overlap = state.status == Status.INTERSECTING
    core_distance = jnp.select([cores_overlap, state.status == Status.BOUND_EXCEEDED],
                               [0, state.lower_bound], core_norm)
    normal_local = unit_vector(state.closest)
    status = state.status
    normal_kind = jnp.where(core_norm > 0, _NORMAL_FROM_CLOSEST, _NORMAL_FIXED)
    iterations = state.iterations
    # A one-point simplex at the origin: D touches the origin at a support point along
    # direction_a (the previous -v), so the depth is 0 and that direction is the normal.
    touch_normal = unit_vector(simplex.directions_a[jnp.argmax(simplex.mask)])
    fallback_normal = unit_vector(pair.center())
    fallback_normal = jnp.where(jnp.any(fallback_normal != 0), fallback_normal,
                                jnp.array([0, 0, 1], dtype))
    touch_normal = jnp.where(jnp.any(touch_normal != 0), touch_normal, fallback_normal)

    if mode == _SIGNED:
        simplex_size = jnp.sum(simplex.mask)
        run_epa = cores_overlap & (simplex_size >= 2)
        epa_tol = config.epa_tolerance or epa_tolerance(dtype)
        found = epa(pair, simplex, max_iterations=config.max_epa_iterations or epa_iterations(dtype),
                    tolerance=epa_tol, active=run_epa)
        # The depth lies between the nearest face's distance and the least support-plane distance
        # seen, `upper_bound`, whose direction and support point give a translation that does separate
        # the cores, with witness points on the surfaces. Where EPA ran out of steps, they are the
        # answer (the nearest face's normal can be far off then). Where it converged on a curved
        # surface (a gap left) or stopped on rounding (DEGENERATE), they are more accurate than the
        # face (its normal is only good to √gap) and give the values, while the face, which moves
        # with the shapes, gives the tangents.
        # Converged on polytopes (no gap), the face is exact and its witness points central.
        stopped_short = (found.status == Status.MAX_ITERATIONS) & jnp.isfinite(found.upper_bound)
        rounding = 8 * epsilon(dtype) * found.size
        gap = found.upper_bound - found.face_distance
        curved_gap = (found.status == Status.PENETRATING) & (gap > rounding)
        degenerate = (found.status == Status.DEGENERATE) & jnp.isfinite(found.upper_bound)
        use_best = run_epa & (stopped_short | curved_gap | degenerate)
        face_simplex = jax.tree_util.tree_map(
            lambda best, face: jnp.where(stopped_short, best, face), _point_simplex(found.best), found.face)
        depth = jnp.maximum(jnp.where(use_best, found.upper_bound, found.face_distance), 0)
        face_normal = jnp.where(use_best, found.best_normal, found.face_normal)
        # EPA found D flat (a segment through the origin): depth 0 like a touching pair, GJK's simplex
        # gives the points, EPA the normal.
        flat = run_epa & (found.status == Status.INTERSECTING)
        touch_normal = jnp.where(flat, -face_normal, touch_normal)
        point_mode = jnp.where(run_epa & ~flat, 1, jnp.where(cores_overlap, 2, 0))
        simplex = jax.tree_util.tree_map(
            lambda face, gjk_leaf: jnp.where(point_mode == 1, face, gjk_leaf), face_simplex, simplex)
        core_distance = jnp.select([point_mode == 1, point_mode == 2], [-depth, 0], core_distance)
        normal_local = jnp.select([point_mode == 1, point_mode == 2],
                                  [-face_normal, touch_normal], normal_local)
        normal_kind = jnp.select([(point_mode == 1) & ~stopped_short, point_mode >= 1],
                                 [_NORMAL_FROM_FACE, _NORMAL_FIXED], normal_kind)
        status = jnp.where(run_epa, found.status, status)
        iterations = iterations + jnp.where(run_epa, found.iterations, 0)
        epa_contact = point_mode == 1
    else:
        normal_local = jnp.where(cores_overlap & (core_norm == 0), touch_normal, normal_local)
        epa_contact = False

    feature_tol = config.feature_tolerance or feature_tolerance(dtype)
    if _refines(config, mode, shape_a, shape_b):
        apart = (state.status == Status.SEPARATED) & (core_norm > 0)
        refinement = refine(pair, normal_local, simplex, feature_tol, is_valid & (apart | epa_contact))
        normal_local, simplex = refinement.normal, refinement.simplex
        core_distance = jnp.where(refinement.accepted, refinement.signed, core_distance)
        normal_kind = jnp.select([refinement.smooth, refinement.accepted],
                                 [_NORMAL_SMOOTH, _NORMAL_FROM_CLOSEST], normal_kind)
        rotation = pose_a.rotation_matrix()
        response, refined = rotation @ refinement.response @ rotation.T, refinement.accepted
    else:
        response, refined = None, False
    signed = core_distance - margin
    if mode == _SIGNED:
        # Rounded shapes whose cores are apart or touch can still overlap: penetration known exactly.
        settled = (status == Status.SEPARATED) | (status == Status.INTERSECTING)
        status = jnp.where(settled & (signed < 0), Status.PENETRATING, status)

    point_a_core = pose_a.apply(simplex.weights @ simplex.points_a)
    point_b_core = pose_b.apply(simplex.weights @ simplex.points_b)
    if mode == _SIGNED:
        from_best = use_best & (point_mode == 1) & ~refined
        point_a_core = jnp.where(from_best, pose_a.apply(found.best.point_a), point_a_core)
        point_b_core = jnp.where(from_best, pose_b.apply(found.best.point_b), point_b_core)
    normal = pose_a.rotation_matrix() @ normal_local
    point_a = point_a_core + shape_a.margin() * normal
    point_b = point_b_core - shape_b.margin() * normal
    tangent_scale = jnp.ones((), dtype)
    has_features = is_valid
    if mode != _SIGNED:
        overlapping = signed <= 0
        has_features = has_features & ~overlapping
        status = jnp.where(overlapping & (status == Status.SEPARATED), Status.INTERSECTING, status)
        middle = (point_a + point_b) / 2
        point_a = jnp.where(overlapping, middle, point_a)
        point_b = jnp.where(overlapping, middle, point_b)
        tangent_scale = jnp.where(overlapping, 0, tangent_scale)
        signed = jnp.maximum(signed, 0)

    no_feature = feature_without_vertices(FeatureDim.NONE)
    feature_a, feature_b = (
        jax.tree_util.tree_map(lambda held, none: jnp.where(has_features, held, none),
                               shape.feature(direction, feature_tol), no_feature)
        for shape, direction in ((shape_a, normal_local), (shape_b, -pair.rotation.T @ normal_local)))

    # Invalid input: documented placeholders.
    zeros3 = jnp.zeros(3, dtype)
    result = DistanceResult(
        distance=jnp.where(is_valid, signed, 0).astype(dtype),
        point_a=jnp.where(is_valid, point_a, zeros3),
        point_b=jnp.where(is_valid, point_b, zeros3),
        normal=jnp.where(is_valid, normal, jnp.array([0, 0, 1], dtype)),
        status=jnp.where(is_valid, status, Status.INVALID_INPUT).astype(jnp.int32),
        iterations=jnp.where(is_valid, iterations, 0).astype(jnp.int32),
        simplex=simplex,
        feature_a=feature_a,
        feature_b=feature_b,
    )
    return _Solution(result, normal_kind.astype(jnp.int32),
                     jnp.where(is_valid, tangent_scale, 0).astype(dtype), response)


def _refines(config: Config, mode: str, shape_a, shape_b) -> bool:
    """Whether `_refine` can run for this query (trace time): a curved core may hold the contact."""
    return mode != _INTERSECT and config.refine_normal and (shape_a.may_curve() or shape_b.may_curve())


def _point_simplex(point) -> Simplex:
    """A one-point `Simplex` holding the `SupportPoint` `point`."""
    def first_slot(leaf):
        return jnp.zeros((4,) + leaf.shape, leaf.dtype).at[0].set(leaf)

    return Simplex(first_slot(point.direction_a), first_slot(point.direction_b), first_slot(point.point_a),
                   first_slot(point.point_b), jnp.zeros(4, point.point.dtype).at[0].set(1),
                   jnp.arange(4) == 0)


def _witness(shape_a, pose_a, shape_b, pose_b, simplex: Simplex, normal, normal_kind, response):
    """Distance, witness points and normal as smooth functions of the shapes and poses, with the final
    simplex's support directions and vertex set held fixed (the tangent rule differentiates this).

    `normal` (3,) is the primal normal: the distance is ``normal · (point_b − point_a) − margins``,
    whose derivative is the envelope-theorem gradient. On a smooth contact (`_NORMAL_SMOOTH`) the
    normal moves instead by the implicit function theorem, ``normal − response · w(normal)`` with
    `response` (3, 3) world frame (`_refine.Refinement.response`), and the points are the supports
    along it, sliding over the curved surfaces. `response` None: no smooth contact is possible.
    """
    # Used slots first, unused ones repeating the first: the face normal of fewer than three points
    # is then exactly zero (a safe zero for `unit_vector`), not a NaN-prone near-zero from stale slots.
    order = jnp.argsort(~simplex.mask, stable=True)
    mask = simplex.mask[order]

    def support_points(shape, pose, directions, hints):
        # The simplex's own points as hints: its directions may expose a whole edge or face.
        directions, hints = directions[order], hints[order]
        directions = jnp.where(mask[:, None], directions, directions[0])
        hints = jnp.where(mask[:, None], hints, hints[0])
        return pose.apply(jax.vmap(shape.core_support_near)(directions, hints))

    points_a = support_points(shape_a, pose_a, simplex.directions_a, simplex.points_a)
    points_b = support_points(shape_b, pose_b, simplex.directions_b, simplex.points_b)
    differences = points_b - points_a
    weights = face_weights(differences, mask)
    point_a, point_b = weights @ points_a, weights @ points_b
    face_normal = unit_vector(jnp.cross(differences[1] - differences[0],
                                        differences[2] - differences[0]))
    face_normal = face_normal * jnp.where(jnp.dot(face_normal, normal) < 0, -1, 1)
    # From a triangle the closest point is the projection along its normal, so the face normal is
    # that direction exactly, and stays well conditioned as the distance goes to 0 (float32 near
    # contact), where unit(point_b - point_a) divides rounding by the distance.
    closest_direction = unit_vector(point_b - point_a)  # B's point minus A's: −normal when overlapping
    closest_direction = closest_direction * jnp.where(jnp.dot(closest_direction, normal) < 0, -1, 1)
    from_closest = jnp.where(jnp.sum(mask) == 3, face_normal, closest_direction)

    moving_normal = jnp.select([normal_kind == _NORMAL_FROM_CLOSEST, normal_kind == _NORMAL_FROM_FACE],
                               [from_closest, face_normal], normal)
    if response is not None:
        def world_support(shape, pose, direction):
            return pose.apply(shape.core_support(pose.rotation_matrix().T @ direction))

        smooth = normal_kind == _NORMAL_SMOOTH
        smooth_normal = normal - response @ (world_support(shape_b, pose_b, -normal)
                                             - world_support(shape_a, pose_a, normal))
        point_a = jnp.where(smooth, world_support(shape_a, pose_a, smooth_normal), point_a)
        point_b = jnp.where(smooth, world_support(shape_b, pose_b, -smooth_normal), point_b)
        moving_normal = jnp.where(smooth, smooth_normal, moving_normal)
    margin_a, margin_b = shape_a.margin(), shape_b.margin()
    # The distance through the primal weights, held: the weights' own derivative moves the point
    # within the closest feature, orthogonally to the normal (normal·(pb_i − pa_i) is the same for
    # every active vertex and the weights sum to 1), so it adds nothing, and a gradient of the
    # distance alone then skips `face_weights` and the normal.
    held = simplex.weights[order]
    distance = jnp.dot(normal, held @ differences) - margin_a - margin_b
    return (distance, point_a + margin_a * moving_normal, point_b - margin_b * moving_normal,
            moving_normal)


def _zero_tangent(tree):
    def zero(leaf):
        leaf = jnp.asarray(leaf)
        if jnp.issubdtype(leaf.dtype, jnp.inexact):
            return jnp.zeros_like(leaf)
        return np.zeros(leaf.shape, jax.dtypes.float0)

    return jax.tree_util.tree_map(zero, tree)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def _differentiable_query(config, mode, shape_a, pose_a, shape_b, pose_b, warm_start,
                          distance_upper_bound) -> DistanceResult:
    return _solve(config, mode, shape_a, pose_a, shape_b, pose_b, warm_start,
                  distance_upper_bound).result


@_differentiable_query.defjvp
def _differentiable_query_jvp(config, mode, primals, tangents):
    shape_a, pose_a, shape_b, pose_b, warm_start, distance_upper_bound = primals
    solution = _solve(config, mode, *primals)
    result = solution.result
    dtype = result.distance.dtype
    inputs = _cast((shape_a, pose_a, shape_b, pose_b), dtype)
    input_tangents = _cast(tangents[:4], dtype)
    simplex = jax.lax.stop_gradient(result.simplex)
    kind = solution.normal_kind
    _, (d_distance, d_point_a, d_point_b, d_normal) = jax.jvp(
        lambda *args: _witness(*args, simplex, result.normal, kind, solution.normal_response), inputs,
        input_tangents)
    scale = solution.tangent_scale
    tangent = DistanceResult(
        distance=scale * d_distance,
        point_a=scale * d_point_a,
        point_b=scale * d_point_b,
        normal=scale * d_normal,
        status=_zero_tangent(result.status),
        iterations=_zero_tangent(result.iterations),
        simplex=_zero_tangent(result.simplex),
        feature_a=_zero_tangent(result.feature_a),
        feature_b=_zero_tangent(result.feature_b),
    )
    return result, tangent


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
    _check_inputs(a, pose_a, b, pose_b)
    return _differentiable_query(config or Config(), _DISTANCE, a, pose_a, b, pose_b, warm_start,
                                 distance_upper_bound)


def signed_distance(a, pose_a, b, pose_b, *, config: Config | None = None,
                    warm_start: Simplex | None = None) -> DistanceResult:
    """Signed distance: GJK, then EPA where the shapes overlap (distance < 0 is minus the depth).

    Arguments as `distance`. Penetrating pairs: `normal` is the direction along which B moves by
    ``-distance`` to separate; `point_a`/`point_b` are A's and B's deepest points (support points
    along ±normal).
    """
    _check_inputs(a, pose_a, b, pose_b)
    return _differentiable_query(config or Config(), _SIGNED, a, pose_a, b, pose_b, warm_start, None)


def intersect(a, pose_a, b, pose_b, *, config: Config | None = None):
    """Whether two convex shapes overlap or touch: () bool. GJK exits as soon as it finds a separating
    plane or an upper bound on the core distance within the margins. Invalid input gives False."""
    _check_inputs(a, pose_a, b, pose_b)
    inputs = jax.lax.stop_gradient((a, pose_a, b, pose_b))
    result = _solve(config or Config(), _INTERSECT, *inputs, None, None).result
    return (result.status != Status.INVALID_INPUT) & (result.distance <= 0)
