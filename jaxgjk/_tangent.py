"""The tangent rule of the queries (`jax.custom_jvp`).

The loops run only in the primal (`_solve`); the tangent holds the final simplex (or EPA face) fixed —
its support directions in each body's frame and its active vertex set — and differentiates the witness
points as functions of the poses and shape fields: ``d distance = normal · (d point_b − d point_a)`` by
the envelope theorem. Reverse mode comes from transposing this linear rule.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from ._contact import NormalKind
from ._packed import on_both
from ._result import DistanceResult, Simplex
from ._scalars import Rotation, Vec3
from ._simplex import face_weights
from ._solve import cast, solve, solve_signed_rows
from ._vector import dot, matvec, rmatvec, select, unit_vector, used_first


def witness(shape_a, pose_a, shape_b, pose_b, simplex: Simplex, normal, normal_kind, response):
    """Distance, witness points and normal as smooth functions of the shapes and poses, with the final
    simplex's support directions and vertex set held fixed (the tangent rule differentiates this).

    `normal` (3,) is the primal normal: the distance is ``normal · (point_b − point_a) − margins``,
    whose derivative is the envelope-theorem gradient. On a smooth contact (`NormalKind.SMOOTH`) the
    normal moves instead by the implicit function theorem, ``normal − response · w(normal)`` with
    `response` (3, 3) world frame (`_refine.Refinement.response`), and the points are the supports
    along it, sliding over the curved surfaces. `response` None: no smooth contact is possible.
    """
    # Used slots first, unused ones repeating the first: the face normal of fewer than three points
    # is then exactly zero (a safe zero for `unit_vector`), not a NaN-prone near-zero from stale slots.
    order = used_first(simplex.mask)
    mask = simplex.mask[order]

    def support_points(shape, pose, directions, hints):
        # The simplex's own points as hints: its directions may expose a whole edge or face.
        directions, hints = directions[order], hints[order]
        directions = jnp.where(mask[:, None], directions, directions[0])
        hints = jnp.where(mask[:, None], hints, hints[0])
        # Slot by slot, not vmapped, and rotated on the matrix's entries as scalars (`_scalars`):
        # reverse mode then sums the slots' cotangents of the pose with adds, where a vmap's broadcast
        # transposes to a short reduction and a matrix's column slices to pads (slow on XLA:CPU).
        rotation = Rotation.of_unit_quaternion(*pose.unit_rotation())
        return jnp.stack([rotation.apply(Vec3.of(shape.core_support_near(direction, hint))).array()
                          + pose.translation for direction, hint in zip(directions, hints, strict=True)])

    points_a, points_b = on_both(support_points, shape_a, (pose_a, simplex.directions_a, simplex.points_a),
                                 shape_b, (pose_b, simplex.directions_b, simplex.points_b))
    differences = points_b - points_a
    weights = face_weights(differences, mask)
    point_a, point_b = rmatvec(points_a, weights), rmatvec(points_b, weights)
    face_normal = unit_vector(jnp.cross(differences[1] - differences[0],
                                        differences[2] - differences[0]))
    face_normal = face_normal * jnp.where(dot(face_normal, normal) < 0, -1, 1)
    # From a triangle the closest point is the projection along its normal, so the face normal is
    # that direction exactly, and stays well conditioned as the distance goes to 0 (float32 near
    # contact), where unit(point_b - point_a) divides rounding by the distance.
    closest_direction = unit_vector(point_b - point_a)  # B's point minus A's: −normal when overlapping
    closest_direction = closest_direction * jnp.where(dot(closest_direction, normal) < 0, -1, 1)
    from_closest = jnp.where(jnp.sum(mask) == 3, face_normal, closest_direction)

    moving_normal = select([normal_kind == NormalKind.FROM_CLOSEST, normal_kind == NormalKind.FROM_FACE],
                               [from_closest, face_normal], normal)
    if response is not None:
        def world_support(shape, pose, direction):
            return pose.apply(shape.core_support(rmatvec(pose.rotation_matrix(), direction)))

        smooth = normal_kind == NormalKind.SMOOTH
        support_a, support_b = on_both(world_support, shape_a, (pose_a, normal), shape_b, (pose_b, -normal))
        smooth_normal = normal - matvec(response, support_b - support_a)
        support_a, support_b = on_both(world_support, shape_a, (pose_a, smooth_normal), shape_b,
                                       (pose_b, -smooth_normal))
        point_a = jnp.where(smooth, support_a, point_a)
        point_b = jnp.where(smooth, support_b, point_b)
        moving_normal = jnp.where(smooth, smooth_normal, moving_normal)
    margin_a, margin_b = shape_a.margin(), shape_b.margin()
    # The distance through the primal weights, held: the weights' own derivative moves the point
    # within the closest feature, orthogonally to the normal (normal·(pb_i − pa_i) is the same for
    # every active vertex and the weights sum to 1), so it adds nothing, and a gradient of the
    # distance alone then skips `face_weights` and the normal.
    held = simplex.weights[order]
    distance = dot(normal, rmatvec(differences, held)) - margin_a - margin_b
    return (distance, point_a + margin_a * moving_normal, point_b - margin_b * moving_normal,
            moving_normal)


def zero_tangent(tree):
    def zero(leaf):
        leaf = jnp.asarray(leaf)
        if jnp.issubdtype(leaf.dtype, jnp.inexact):
            return jnp.zeros_like(leaf)
        return np.zeros(leaf.shape, jax.dtypes.float0)

    return jax.tree_util.tree_map(zero, tree)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def differentiable_query(config, mode, shape_a, pose_a, shape_b, pose_b, warm_start,
                          distance_upper_bound) -> DistanceResult:
    return solve(config, mode, shape_a, pose_a, shape_b, pose_b, warm_start,
                 distance_upper_bound).result


def query_tangent(inputs, input_tangents, solution) -> DistanceResult:
    """The tangent `DistanceResult` of one pair's query at its primal `solution` (`_solve.Solution`):
    `witness` differentiated along `input_tangents` of `inputs` (shape_a, pose_a, shape_b, pose_b)."""
    result = solution.result
    dtype = result.distance.dtype
    inputs, input_tangents = cast(inputs, dtype), cast(input_tangents, dtype)
    simplex = jax.lax.stop_gradient(result.simplex)
    kind = solution.normal_kind
    _, (d_distance, d_point_a, d_point_b, d_normal) = jax.jvp(
        lambda *args: witness(*args, simplex, result.normal, kind, solution.normal_response), inputs,
        input_tangents)
    scale = solution.tangent_scale
    return DistanceResult(
        distance=scale * d_distance,
        point_a=scale * d_point_a,
        point_b=scale * d_point_b,
        normal=scale * d_normal,
        status=zero_tangent(result.status),
        iterations=zero_tangent(result.iterations),
        simplex=zero_tangent(result.simplex),
        feature_a=zero_tangent(result.feature_a),
        feature_b=zero_tangent(result.feature_b),
    )


@differentiable_query.defjvp
def _differentiable_query_jvp(config, mode, primals, tangents):
    solution = solve(config, mode, *primals)
    return solution.result, query_tangent(primals[:4], tangents[:4], solution)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def differentiable_signed_rows(config, epa_capacity, shapes_a, poses_a, shapes_b, poses_b) -> DistanceResult:
    """The signed query on T pairs (leading axis T on every input leaf), EPA gathered on the
    overlapping pairs (`_solve.solve_signed_rows`); the tangent rule of each pair as for one pair."""
    return solve_signed_rows(config, shapes_a, poses_a, shapes_b, poses_b, epa_capacity).result


@differentiable_signed_rows.defjvp
def _differentiable_signed_rows_jvp(config, epa_capacity, primals, tangents):
    solution = solve_signed_rows(config, *primals, epa_capacity)
    return solution.result, jax.vmap(query_tangent)(primals, tangents, solution)
