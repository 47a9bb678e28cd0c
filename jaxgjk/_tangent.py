"""The tangent rule of the queries (`jax.custom_jvp`).

The loops run only in the primal (`_solve`); the tangent holds the final simplex (or EPA face) fixed —
its support directions in each body's frame and its active vertex set — and differentiates the witness
points as functions of the poses and shape fields: ``d distance = normal · (d point_b − d point_a)`` by
the envelope theorem. Reverse mode comes from transposing this linear rule. The rules take symbolic
zeros: inputs not differentiated are held constant, and with both shapes held (a gradient along the
poses) the support points are the simplex's own, not evaluated again.

Second order (`jax.hessian`, a derivative of a gradient) differentiates that rule again, and with it the
optimum it holds (`moving`): the normal as the solvers' last steps move it (the refined normal's
implicit derivative), the simplex's weights as the projection of the origin onto its moving face, and
its support directions with the normal, held in the world, and its support points along them, so that
a turning body's support point slides over its surface.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import SymbolicZero

from ._contact import NormalKind
from ._packed import on_both
from ._pose import unit_quaternion_components
from ._result import DistanceResult, Simplex
from ._scalars import Rotation, Vec3
from ._simplex import face_weights
from ._solve import cast, solve, solve_signed_rows
from ._vector import dot, matvec, rmatvec, select, unit_vector, used_first


def _used_first(simplex: Simplex):
    """The slots' order with the used ones first (`used_first`) and the mask in that order. Unused
    slots then repeat the first: the face normal of fewer than three points is exactly zero (a safe zero
    for `unit_vector`), not a NaN-prone near-zero from stale slots."""
    order = used_first(simplex.mask)
    return order, simplex.mask[order]


def _in_order(rows, simplex: Simplex, order):
    """The simplex's per-slot `rows` (4, ...) in `order` (`_used_first`), unused slots repeating the
    first."""
    mask = simplex.mask[order].reshape((-1,) + (1,) * (rows.ndim - 1))
    rows = rows[order]
    return jnp.where(mask, rows, rows[0])


def _simplex_supports(shape_a, shape_b, simplex: Simplex, order):
    """Support points (4, 3) of A's and B's cores along the simplex's directions, each in its body's
    frame, in `order` (`_used_first`), unused slots repeating the first."""
    def support_points(shape, directions, hints):
        # The simplex's own points as hints: its directions may expose a whole edge or face.
        return jnp.stack([shape.core_support_near(direction, hint) for direction, hint in zip(
            _in_order(directions, simplex, order), _in_order(hints, simplex, order), strict=True)])

    return on_both(support_points, shape_a, (simplex.directions_a, simplex.points_a),
                   shape_b, (simplex.directions_b, simplex.points_b))


def _stored_supports(simplex: Simplex, order):
    """`_simplex_supports`' values, read from the simplex: its own points (a support along a held
    direction returns the held point, `Shape.core_support_near`)."""
    return _in_order(simplex.points_a, simplex, order), _in_order(simplex.points_b, simplex, order)


def _rotation(pose) -> Rotation:
    """The pose's rotation on the matrix's entries as scalars (`_scalars`), from the quaternion's
    normalised components: reverse mode then sums the cotangents of its readers with adds, where a
    matrix's column slices transpose to pads (slow on XLA:CPU)."""
    return Rotation.of_unit_quaternion(*unit_quaternion_components(pose.rotation)[0])


def _place(rotation: Rotation, translation, local_point):
    """The world point (3,) of a body-frame point (3,)."""
    return rotation.apply(Vec3.of(local_point)).array() + translation


def _placed(rotation: Rotation, translation, local_points):
    """World points (k, 3) of body-frame points (k, 3), slot by slot, not vmapped (`_rotation`)."""
    return jnp.stack([_place(rotation, translation, point) for point in local_points])


def witness(shape_a, pose_a, shape_b, pose_b, simplex: Simplex, normal, normal_kind, response,
            shapes_held: bool = False):
    """Distance, witness points and normal as smooth functions of the shapes and poses, with the final
    simplex's support directions and vertex set held fixed (the tangent rule differentiates this).

    `shapes_held` (static): the derivative is along the poses alone, so the support points, functions
    of the shapes and the held directions only, are the simplex's own points (`_stored_supports`),
    not evaluated again.

    `normal` (3,) is the primal normal: the distance is ``normal · (point_b − point_a) − margins``,
    whose derivative is the envelope-theorem gradient. On a smooth contact (`NormalKind.SMOOTH`) the
    normal moves instead by the implicit function theorem, ``normal − response · w(normal)`` with
    `response` (3, 3) world frame (`_refine.Refinement.response`), and the points are the supports
    along it, sliding over the curved surfaces. `response` None: no smooth contact is possible.
    """
    order, mask = _used_first(simplex)
    supports = _stored_supports if shapes_held else functools.partial(_simplex_supports, shape_a, shape_b)
    local_a, local_b = supports(simplex, order)
    rotation_a, rotation_b = _rotation(pose_a), _rotation(pose_b)
    points_a = _placed(rotation_a, pose_a.translation, local_a)
    points_b = _placed(rotation_b, pose_b.translation, local_b)
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
    if shapes_held:  # the simplex's own slots (zero weights outside the mask): no gathers into `order`
        held, slots_a, slots_b = simplex.weights, *(jnp.where(simplex.mask[:, None], points, 0)
                                                    for points in (simplex.points_a, simplex.points_b))
    else:
        held, slots_a, slots_b = simplex.weights[order], local_a, local_b
    # Each body's held point placed once (its slots combined in the body's frame): a gradient of the
    # distance alone then rotates one point per body, not one per slot.
    held_a = _place(rotation_a, jnp.sum(held) * pose_a.translation, rmatvec(slots_a, held))
    held_b = _place(rotation_b, jnp.sum(held) * pose_b.translation, rmatvec(slots_b, held))
    distance = dot(normal, held_b - held_a) - margin_a - margin_b
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


def _split(inputs, input_tangents):
    """The free leaves of `inputs` (a tangent that is not a `SymbolicZero`) and their tangents, the
    held leaves, `rebuild(free, held)` -> inputs, and whether the shapes (inputs 0 and 2) are held: a
    derivative along the poses alone (trace time)."""
    leaves, tree = jax.tree_util.tree_flatten(inputs)
    tangents = tree.flatten_up_to(input_tangents)
    frees = [not isinstance(tangent, SymbolicZero) for tangent in tangents]
    owners = [index for index, item in enumerate(inputs) for _ in jax.tree_util.tree_leaves(item)]
    shapes_held = not any(free for free, owner in zip(frees, owners, strict=True) if owner in (0, 2))

    def rebuild(free, held):
        free, held = iter(free), iter(held)
        return tree.unflatten([next(free) if is_free else next(held) for is_free in frees])

    return ([leaf for leaf, free in zip(leaves, frees, strict=True) if free],
            [tangent for tangent, free in zip(tangents, frees, strict=True) if free],
            [leaf for leaf, free in zip(leaves, frees, strict=True) if not free], rebuild, shapes_held)


def query_tangent(inputs, input_tangents, solution, batched: bool = False) -> DistanceResult:
    """The tangent `DistanceResult` of one pair's query at its primal `solution` (`_solve.Solution`):
    `witness` differentiated along `input_tangents` of `inputs` (shape_a, pose_a, shape_b, pose_b),
    whose `SymbolicZero` leaves hold theirs fixed (no work along them; with both shapes held, `witness`
    reads the simplex's support points). `batched` (static): T pairs, leading axis T on every leaf."""
    dtype = solution.result.distance.dtype
    free, tangents, held, rebuild, shapes_held = _split(cast(inputs, dtype), input_tangents)

    def one_pair(free, tangents, held, solution):
        result = solution.result
        kind = solution.normal_kind
        simplex = jax.tree_util.tree_map(jnp.asarray, result.simplex)  # a closed form's may hold constants
        _, (d_distance, d_point_a, d_point_b, d_normal) = jax.jvp(
            lambda *free: witness(*rebuild(free, held), simplex, result.normal, kind,
                                  solution.normal_response, shapes_held),
            free, cast(tangents, dtype))
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

    return (jax.vmap(one_pair) if batched else one_pair)(free, tangents, held, solution)


def _moving_simplex(inputs, input_tangents, solution, normal_tangent) -> Simplex:
    """The tangent of the final simplex's weights, support directions and support points (zero
    elsewhere) as the optimum moves along `input_tangents`, its normal along `normal_tangent` (3,): the
    directions follow the normal, held in the world, the points are the supports along them, and the
    weights project the origin onto the moving face (`face_weights`)."""
    result = solution.result
    simplex = jax.tree_util.tree_map(jnp.asarray, result.simplex)
    order, mask = _used_first(simplex)

    def optimum(normal, *inputs):
        shape_a, pose_a, shape_b, pose_b = inputs

        def following(pose, directions):
            # The held directions, moving as Rᵀ(±|d| normal) does (each row, in the body's frame).
            rotation = pose.rotation_matrix()
            along = jax.lax.stop_gradient(directions @ rotation.T @ result.normal)  # (4,): about ±|d|
            moved = along[:, None] * normal @ rotation
            return directions + (moved - jax.lax.stop_gradient(moved))

        moved = Simplex(following(pose_a, simplex.directions_a), following(pose_b, simplex.directions_b),
                        simplex.points_a, simplex.points_b, simplex.weights, simplex.mask)
        local_a, local_b = _simplex_supports(shape_a, shape_b, moved, order)
        points_a = _placed(_rotation(pose_a), pose_a.translation, local_a)
        points_b = _placed(_rotation(pose_b), pose_b.translation, local_b)

        def in_slots(rows):  # rows in `order` back to the simplex's slots
            return jnp.zeros_like(rows).at[order].set(rows)

        # The support points move too: a first-order rule along the poses alone reads them from
        # the simplex (`witness`'s `shapes_held`), and its own derivative needs theirs.
        return (moved.directions_a, moved.directions_b, in_slots(local_a), in_slots(local_b),
                in_slots(face_weights(points_b - points_a, mask)))

    dtype = result.distance.dtype
    _, (d_directions_a, d_directions_b, d_points_a, d_points_b, d_weights) = jax.jvp(
        optimum, (result.normal, *cast(inputs, dtype)), (normal_tangent, *cast(input_tangents, dtype)))
    scale = solution.tangent_scale
    return dataclasses.replace(zero_tangent(simplex), directions_a=scale * d_directions_a,
                               directions_b=scale * d_directions_b, points_a=scale * d_points_a,
                               points_b=scale * d_points_b, weights=scale * d_weights)


@jax.custom_jvp
def moving(solution, inputs):
    """`solution` (a `Solution` of `inputs`) as it is; under a derivative along `inputs` (shape_a,
    pose_a, shape_b, pose_b), its distance and witness points move as `query_tangent` says, its normal
    as the solvers' own derivative does (the loops' or closed form's last steps: the refined normal's
    implicit derivative), and its simplex as `_moving_simplex` does. The tangent rule, differentiated
    again, then gives second derivatives."""
    return solution


@moving.defjvp
def _moving_jvp(primals, tangents):
    solution, inputs = primals
    solution_tangent, input_tangents = tangents
    normal_tangent = solution_tangent.result.normal
    d_result = dataclasses.replace(
        query_tangent(inputs, input_tangents, solution), normal=normal_tangent,
        simplex=_moving_simplex(inputs, input_tangents, solution, normal_tangent))
    return solution, dataclasses.replace(zero_tangent(solution), result=d_result)


@functools.partial(differentiable_query.defjvp, symbolic_zeros=True)
def _differentiable_query_jvp(config, mode, primals, tangents):
    solution = moving(solve(config, mode, *primals), primals[:4])
    return solution.result, query_tangent(primals[:4], tangents[:4], solution)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def differentiable_signed_rows(config, epa_capacity, shapes_a, poses_a, shapes_b, poses_b) -> DistanceResult:
    """The signed query on T pairs (leading axis T on every input leaf), EPA gathered on the
    overlapping pairs (`_solve.solve_signed_rows`); the tangent rule of each pair as for one pair."""
    return solve_signed_rows(config, shapes_a, poses_a, shapes_b, poses_b, epa_capacity).result


@functools.partial(differentiable_signed_rows.defjvp, symbolic_zeros=True)
def _differentiable_signed_rows_jvp(config, epa_capacity, primals, tangents):
    solution = jax.vmap(moving)(solve_signed_rows(config, *primals, epa_capacity), primals)
    return solution.result, query_tangent(primals, tangents, solution, batched=True)
