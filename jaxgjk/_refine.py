"""Newton refinement of the normal where a curved core holds the contact.

GJK and EPA bound the signed distance by support planes, so on a curved surface they converge in the
distance (gap ``tol``) but only to ~√tol in the normal: the distance is stationary in the normal. The
gradient of the distance is the normal (envelope theorem), so it inherits that √tol error (1e-6 in
float64 separated, 4e-5 penetrating with the default tolerances). The signed distance is

    sd = max over unit n of g(n),   g(n) = min over x in D of n·x = n · w(n),
    w(n) = s_B(−n) − s_A(n)  (D = B − A, A's frame),

for separated and overlapping shapes alike (the least overlap along any direction, by the separating
axis theorem). Where both supports are smooth at the maximiser, g is smooth there with Riemannian
gradient P w and Hessian P J P − g P (P = I − n nᵀ, J = dw/dn from the support mappings' derivatives),
and a few Newton steps take the normal to rounding (Absil, Mahony, Sepulchre 2008, §6.2). A flat
feature of a polyhedral core (an edge or a face, whose vertices the final simplex holds exactly) fixes
the normal to its plane or to its normal, so Newton runs on the remaining free directions. Every step
is kept only if g, a certified bound on sd, does not drop beyond rounding, so a misread feature can
never make the answer worse than the loops'.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._dataclass import pytree_dataclass
from ._features import FeatureDim, exposed_span, exposed_vertices
from ._minkowski import RelativePair
from ._result import Simplex
from ._shapes import unit_vector
from ._simplex import closest_point
from ._tolerance import epsilon

NEWTON_STEPS = 2  # from the loops' ~√tol the error squares each step: 1e-6 → 1e-12 → rounding
MAX_STEP = 0.25  # radians; a Newton step further than this is cut to it (a trust region)


@pytree_dataclass
class Refinement:
    """A refined contact (one pair).

    Fields:
        accepted: () bool, whether a refined normal replaced the loops' one.
        normal: (3,) unit normal, A's frame (A to B).
        signed: () g(normal): the core signed distance it certifies (a lower bound on sd, tight to
            rounding once converged).
        simplex: the final simplex re-evaluated at the refined normal (curved cores at one direction,
            flat features keeping their vertices), with its closest-point weights and face.
        smooth: () bool, accepted with both bodies point-like (a vertex or a curved point each): the
            normal is then the smooth maximiser of g, and `response` says how it moves.
        response: (3, 3) T H⁻¹ Tᵀ at the refined normal, A's frame (T the tangent basis, H the
            Riemannian Hessian of g): by the implicit function theorem on P w = 0, a change δw of
            w (at the fixed normal) moves the normal by −response · δw. Zero unless `smooth`.
    """

    accepted: jnp.ndarray
    normal: jnp.ndarray
    signed: jnp.ndarray
    simplex: Simplex
    smooth: jnp.ndarray
    response: jnp.ndarray


def _support_difference(pair: RelativePair, normal):
    """w(n) = s_B(−n) − s_A(n), A's frame, with the support points it came from."""
    point = pair.point_from_directions(normal, -pair.rotation.T @ normal)
    return point.point, point


def _moves(shape, direction):
    """() bool: the core's support point moves as the direction turns there (a curved surface).

    One derivative, along a tangent made with a fixed direction of no special alignment: a curved
    surface moves its support along every tangent but those of its straight lines (a cylinder's or a
    cone's), which this misses only where such a line lies along that one tangent (never for a
    cylinder's axis; at two azimuths of a cone's slant)."""
    turn = jnp.cross(direction, jnp.array([0.48, 0.6, 0.64], direction.dtype))
    return jnp.any(jax.jvp(shape.core_support, (direction,), (turn,))[1] != 0)


def _body(shape, direction, simplex_directions, points, simplex_mask, feature_tolerance):
    """How one body holds the contact: (point_like, curved, flat, dimension, axis, plane_normal).

    point_like: its core feature there is a vertex or a curved point (no flat directions).
    curved: its support moves with the direction at `direction`.
    flat: a polyhedral edge or face (the support is still at `direction` and at every simplex
        direction of the body, so the simplex's `points` (4, 3) are its exact vertices).
    """
    core = shape.core_feature(direction, feature_tolerance)
    curved = _moves(shape, direction)
    polyhedral = ~curved & ~jnp.any(simplex_mask & jax.vmap(lambda d: _moves(shape, d))(simplex_directions))
    point_like = (core.dimension == FeatureDim.VERTEX) | (core.dimension == FeatureDim.CURVED)
    flat = ((core.dimension == FeatureDim.EDGE) | (core.dimension == FeatureDim.FACE)) & polyhedral
    exposed, tolerance = exposed_vertices(points, simplex_mask, direction, feature_tolerance)
    dimension, axis, plane_normal = exposed_span(points, exposed, tolerance)
    # The simplex must hold the feature the shape reports (it may hold only part of a face).
    flat = flat & (dimension == core.dimension)
    return point_like, curved, flat, dimension, axis, plane_normal


def _tangent_basis(normal, edge, one_free):
    """(3, 2) orthonormal tangent directions at `normal`; with `one_free`, the first is ⊥ `edge` and the
    second is zeroed (the normal must stay ⊥ the edge)."""
    helper = jnp.where(jnp.abs(normal[0]) < 0.6, jnp.array([1, 0, 0], normal.dtype),
                       jnp.array([0, 1, 0], normal.dtype))
    first = unit_vector(jnp.where(one_free, jnp.cross(edge, normal), jnp.cross(normal, helper)))
    second = jnp.where(one_free, 0, jnp.cross(normal, first))
    return jnp.stack([first, second], axis=1)


def refine(pair: RelativePair, normal, simplex: Simplex, feature_tolerance, active) -> Refinement:
    """Refine the loops' `normal` (3,), A's frame, where a curved core holds the contact.

    Args:
        pair: the cores, B in A's frame.
        normal: (3,) unit normal from GJK (separated) or EPA (overlapping), A to B.
        simplex: GJK's final simplex or EPA's nearest face (their vertices hold any flat feature).
        feature_tolerance: relative tolerance of the feature reports (`_features`).
        active: () bool; False returns the inputs unchanged (accepted False).
    """
    dtype = normal.dtype
    mask = simplex.mask
    point_like_a, curved_a, flat_a, dimension_a, axis_a, plane_a = _body(
        pair.shape_a, normal, simplex.directions_a, simplex.points_a, mask, feature_tolerance)
    point_like_b, curved_b, flat_b, dimension_b, axis_b, plane_b = _body(
        pair.shape_b, -pair.rotation.T @ normal, simplex.directions_b, simplex.points_b, mask,
        feature_tolerance)
    axis_b, plane_b = pair.rotation @ axis_b, pair.rotation @ plane_b  # to A's frame
    applicable = (active & (curved_a | curved_b) & (point_like_a | flat_a) & (point_like_b | flat_b)
                  & ~(flat_a & flat_b))
    # One flat body at most: its face fixes the normal, its edge leaves one free direction.
    dimension = jnp.where(flat_a, dimension_a, jnp.where(flat_b, dimension_b, FeatureDim.VERTEX))
    axis = jnp.where(flat_a, axis_a, axis_b)
    plane = jnp.where(flat_a, plane_a, plane_b)
    on_face = dimension == FeatureDim.FACE
    on_edge = dimension == FeatureDim.EDGE
    start = jnp.select([on_face, on_edge],
                       [plane * jnp.sign(jnp.dot(plane, normal)),
                        unit_vector(normal - jnp.dot(normal, axis) * axis)], normal)
    start = jnp.where(jnp.any(start != 0), start, normal)

    def evaluate(direction):
        def difference(n):
            value, support = _support_difference(pair, n)
            return value, (value, support)

        jacobian, (value, support) = jax.jacfwd(difference, has_aux=True)(direction)
        scale = jnp.max(jnp.abs(jnp.stack([support.point_a, pair.rotation @ support.point_b,
                                           pair.translation])))
        return jnp.dot(direction, value), value, jacobian, scale

    def inverse_hessian(direction, jacobian, g):
        """Tangent basis T (3, 2), H⁻¹ (2, 2) in it, and whether H is negative definite (a maximum)."""
        basis = _tangent_basis(direction, axis, on_edge)
        hessian = basis.T @ ((jacobian + jacobian.T) / 2) @ basis - g * jnp.eye(2, dtype=dtype)
        hessian = jnp.where(on_edge, jnp.diag(jnp.array([hessian[0, 0], -1], dtype)), hessian)
        determinant = hessian[0, 0] * hessian[1, 1] - hessian[0, 1] * hessian[1, 0]
        definite = (hessian[0, 0] < 0) & (determinant > 0)
        adjugate = jnp.array([[hessian[1, 1], -hessian[0, 1]], [-hessian[1, 0], hessian[0, 0]]])
        return basis, jnp.where(definite, adjugate / jnp.where(definite, determinant, 1), 0), definite

    def newton_step(direction, value, jacobian, g):
        # Maximising: the step is −H⁻¹ grad, valid where H is negative definite.
        basis, inverse, definite = inverse_hessian(direction, jacobian, g)
        step = -(inverse @ (basis.T @ value))
        length = jnp.linalg.norm(step)
        step = step * jnp.minimum(1, MAX_STEP / jnp.where(length > 0, length, 1))
        moved = unit_vector(direction + basis @ step)
        return jnp.where(definite & ~on_face & jnp.any(moved != 0), moved, direction)

    g0, value0, jacobian0, _ = evaluate(normal)

    def body(_, carry):
        best, g_best, value_best, jacobian_best, proposal = carry
        g, value, jacobian, scale = evaluate(proposal)
        # Rounding of g is ~eps·scale: a later, converged step is kept even when it ties.
        accept = g >= g_best - 16 * epsilon(dtype) * scale
        best, g_best, value_best, jacobian_best = jax.tree_util.tree_map(
            lambda new, old: jnp.where(accept, new, old), (proposal, g, value, jacobian),
            (best, g_best, value_best, jacobian_best))
        return best, g_best, value_best, jacobian_best, newton_step(best, value_best, jacobian_best,
                                                                    g_best)

    best, g_best, _, jacobian_best, _ = jax.lax.fori_loop(0, NEWTON_STEPS + 1, body,
                                                          (normal, g0, value0, jacobian0, start))
    accepted = applicable & jnp.any(best != normal)
    basis, inverse, definite = inverse_hessian(best, jacobian_best, g_best)
    smooth = accepted & point_like_a & point_like_b & definite
    response = jnp.where(smooth, basis @ inverse @ basis.T, 0)

    # The simplex at the refined normal: a point-like core at that one direction in every slot.
    directions_a = jnp.where(point_like_a, jnp.broadcast_to(best, (4, 3)), simplex.directions_a)
    directions_b = jnp.where(point_like_b, jnp.broadcast_to(-pair.rotation.T @ best, (4, 3)),
                             simplex.directions_b)
    points = pair.points_from_directions(directions_a, directions_b)
    _, weights, face = closest_point(points.point, simplex.mask)
    refined = Simplex(directions_a, directions_b, points.point_a, points.point_b, weights,
                      face & simplex.mask)
    simplex = jax.tree_util.tree_map(lambda new, old: jnp.where(accepted, new, old), refined, simplex)
    return Refinement(accepted, jnp.where(accepted, best, normal), jnp.where(accepted, g_best, g0),
                      simplex, smooth, response)
