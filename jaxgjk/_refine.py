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
feature of a polyhedral core (an edge or a face, whose vertices the final simplex holds exactly, or
supports at directions tipped from the normal where it holds fewer) or a
straight side of a curved core (a cylinder's side, a cone's slant) constrains the normal: a face fixes
it; an edge keeps it perpendicular, and a side on the circle of directions that expose such sides
(`Shape.core_side_normals`: n·k = c, a great circle for an edge or a cylinder, a small one for a cone,
or such a circle seen through an `Affine` map M, unit(Mᵀn)·k = c, a curve that is no circle where M is
not a similarity); two of them fix it to where their circles meet, and Newton runs along what is left
free. Along a curve γ through n with unit tangent t, g's second derivative is tᵀJt + γ''·w (−g on a
great circle, where γ'' = −n), and each step is put back on the curve. Where the maximiser is a kink
of g (both cores' sides hold it, each along its own circle), Newton's steps do not reach it, and
where EPA ran out of steps the circles' meeting point is tried too. Every step
is kept only if g, a certified bound on sd, does not drop beyond rounding, so a misread feature can
never make the answer worse than the loops'.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from ._dataclass import pytree_dataclass
from ._features import FeatureDim, exposed_span, exposed_vertices
from ._minkowski import RelativePair
from ._packed import on_both
from ._result import Simplex
from ._simplex import face_weights
from ._tolerance import MAX_STEP, NEWTON_STEPS, REFINE_ACCEPT_ROUNDINGS, SIMILARITY_ROUNDINGS, epsilon
from ._vector import cofactor_matrix, perpendicular, select, unit_vector


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
    point = pair.point_from_directions(normal, -pair.rotation.T @ normal, packed_once=True)
    return point.point, point


@pytree_dataclass
class _Hold:
    """How one body holds the contact (local frame of the body).

    Fields:
        point_like: () bool, its core feature there is a vertex or a curved point (no flat direction).
        curved: () bool, the core is not a polytope (`Shape.polyhedral_core`).
        flat: () bool, an edge or face of a polytope core, which the simplex's points hold exactly.
        ruled: () bool, the straight side of a curved core (`Shape.core_ruling`), or of a rounded
            `Affine` image.
        face: () bool, `flat` and a face.
        axis: (3,) where an edge or a straight side holds the contact, the axis k of the circle of
            directions u that keep holding it (unit(linearᵀ u)·k = height): the edge's unit direction,
            or the shape's `core_side_normals`; zero otherwise.
        height: () that circle's height c (zero for an edge).
        linear: (3, 3) the map M the circle is seen through (the identity, or the shape's
            `core_side_normals` map; a frame change multiplies it).
        plane: (3,) unit normal of the face, either sign; zero unless `face`.
        directions: (3, 3) support directions (local frame) of a flat feature's spanning vertices: the
            simplex's, or the probes' where the simplex holds less of the feature (`_hold`).
        hints: (3, 3) points near the held feature's vertices, to pick them where they tie at the
            refined normal: a flat feature's spanning vertices, a straight side's two ends.
        count: () int32 vertices of the held feature: 1 point-like, 2 edge or straight side, 3 face.
    """

    point_like: jnp.ndarray
    curved: jnp.ndarray
    flat: jnp.ndarray
    ruled: jnp.ndarray
    face: jnp.ndarray
    axis: jnp.ndarray
    height: jnp.ndarray
    linear: jnp.ndarray
    plane: jnp.ndarray
    directions: jnp.ndarray
    hints: jnp.ndarray
    count: jnp.ndarray

    def rotated(self, rotation) -> _Hold:
        """The same hold with its circle and plane in another frame (`rotation` (3, 3) maps to it; B's
        hold, made along −n, takes −R so that its circle holds n); `directions` and `hints` stay in
        the body's frame, where its supports take them."""
        return _Hold(self.point_like, self.curved, self.flat, self.ruled, self.face, self.axis,
                     self.height, rotation @ self.linear, rotation @ self.plane, self.directions,
                     self.hints, self.count)

    def circle(self):
        """(axis, height, linear): the circle of directions that keep holding the contact."""
        return self.axis, self.height, self.linear

    def feature_directions(self, direction):
        """(3, 3) support directions of the held feature's vertices at the refined `direction` (3,)
        (the first `count` rows): a point-like core's and a straight side's (its ends tie there) that
        one, a flat feature's vertices as `_hold` found them."""
        return jnp.where(self.point_like | self.ruled, direction, self.directions)


def _hold(shape, direction, points, directions, simplex_mask, feature_tolerance) -> _Hold:
    """How `shape` holds the contact along `direction` (3,), given the body's simplex support points
    (4, 3) and their support directions (4, 3) under `simplex_mask` (4,) (all in its local frame)."""
    core = shape.core_feature(direction, feature_tolerance)
    polyhedral = shape.polyhedral_core()
    curved = ~polyhedral
    edge_or_face = (core.dimension == FeatureDim.EDGE) | (core.dimension == FeatureDim.FACE)
    dimension, axis, plane, spanning, points, directions = _flat_span(
        shape, direction, points, directions, simplex_mask, feature_tolerance,
        polyhedral & edge_or_face, core.dimension)
    # The simplex must hold the feature the shape reports (it may hold only part of a face).
    flat = edge_or_face & polyhedral & (dimension == core.dimension)
    ruling = shape.core_ruling(direction, feature_tolerance)
    # Near the side's ends: a rounded `Affine` image's margin turns with the direction, so these are
    # its ends only approximately, but near enough to pick each end where they tie.
    ends = jax.vmap(shape.core_support)(jnp.stack([direction + ruling, direction - ruling]))
    side_axis, side_height, side_linear = shape.core_side_normals()
    ruled = (curved & jnp.any(ruling != 0) & jnp.any(ends[0] != ends[1]) & jnp.any(side_axis != 0)
             & (jnp.abs(side_height) < 1))
    circle_axis = select([flat & (dimension == FeatureDim.EDGE), ruled], [axis, side_axis],
                             jnp.zeros(3, axis.dtype))
    face = flat & (dimension == FeatureDim.FACE)
    point_like = shape.core_point_like(direction, feature_tolerance)
    count = select([point_like, face], [1, 3], 2).astype(jnp.int32)
    hints = jnp.where(ruled, ends[jnp.array([0, 1, 1])], points[spanning])
    return _Hold(point_like, curved, flat, ruled, face, circle_axis, jnp.where(ruled, side_height, 0),
                 jnp.where(ruled, side_linear, jnp.eye(3, dtype=side_linear.dtype)),
                 jnp.where(face, plane, 0), directions[spanning], hints, count)


def _flat_span(shape, direction, points, directions, simplex_mask, feature_tolerance, flat_core,
               core_dimension):
    """The span (`exposed_span`: dimension, axis, plane normal, three spanning indices) of the points
    exposed along `direction` (3,), and the points (N, 3) and support directions (N, 3) those indices
    refer to: the simplex's (4, 3), or, where a flat core feature (`flat_core`, of dimension
    `core_dimension`) spans more than the simplex holds of it, those with four probes appended.

    EPA's best support plane, where it ran out of steps, leaves a one-point simplex, and a segment
    simplex can hold one edge of a face: the feature's other vertices then come from the probes,
    `direction` tipped by ``feature_tolerance / 4`` either way along two perpendiculars. A tip that
    small keeps the support within the band of vertices that make up the feature (a vertex below it
    by ``feature_tolerance`` times the core's size cannot overtake one of the feature by turning the
    direction less than that over the core's extent), and on a feature it exposes the vertex farthest
    along the tip: two opposite tips give an edge's two ends, two pairs three corners of a face.
    """
    exposed, tolerance = exposed_vertices(points, simplex_mask, direction, feature_tolerance)
    span = exposed_span(points, exposed, tolerance)
    first = perpendicular(direction)
    second = jnp.cross(direction, first)
    probes = direction + 0.25 * feature_tolerance * jnp.stack([first, -first, second, -second])
    probed_points = jnp.concatenate([points, jax.vmap(shape.core_support)(probes)])
    probed_directions = jnp.concatenate([directions, probes])
    probed_mask = jnp.concatenate([simplex_mask, jnp.ones(4, bool)])
    exposed, tolerance = exposed_vertices(probed_points, probed_mask, direction, feature_tolerance)
    probed_span = exposed_span(probed_points, exposed, tolerance)
    short = flat_core & (span[0] < core_dimension)
    return jax.tree_util.tree_map(lambda probed, held: jnp.where(short, probed, held), probed_span, span) + (
        probed_points, probed_directions)


def _feature_simplex(pair: RelativePair, a: _Hold, b: _Hold, normal, simplex: Simplex) -> Simplex:
    """The simplex of D spanned by the two held features at the refined `normal` (A's frame), with the
    affine weights of the origin's projection onto its span.

    D's face exposed by the normal is the Minkowski sum of the two features, and the projection lies
    in it but not necessarily in the triangle of three of its vertices (a box face is held by three of
    its four corners), so the weights are affine (`face_weights`), never clamped to the simplex. Three
    pairings span that face: a face with the other feature's first vertex, or, for two edges or
    sides, three corners of their parallelogram ((0, 0), (0, 1), (1, 0)).
    """
    directions_a = a.feature_directions(normal)
    directions_b = b.feature_directions(-pair.rotation.T @ normal)
    # A flat feature's directions expose a whole edge or face, a straight side's direction both its
    # ends (ties to rounding): the hints pick the vertices held.
    hints_a, hints_b = a.hints, b.hints
    slot = jnp.arange(4)
    mask = slot < jnp.minimum(a.count * b.count, 3)
    index_a = jnp.where(a.face, slot, slot // b.count)
    index_b = jnp.where(a.face, 0, slot % b.count)
    index_a, index_b = jnp.where(mask, index_a, 0), jnp.where(mask, index_b, 0)
    points = pair.points_from_directions(directions_a[index_a], directions_b[index_b], hints_a[index_a],
                                         hints_b[index_b], packed_once=True)
    weights = face_weights(points.point, mask)
    return Simplex(points.direction_a, points.direction_b, points.point_a, points.point_b, weights, mask)


def _onto_circle(direction, axis, height, linear):
    """A point of the curve {u unit : unit(linearᵀ u)·axis = height} (`axis` (3,) unit, `linear` (3, 3)
    invertible) near `direction` (3,): through `linear`, the circle's point nearest linearᵀ direction
    (the nearest point itself where `linear` is orthogonal), a smooth retraction onto the curve."""
    inner = linear.T @ direction
    across = unit_vector(inner - jnp.dot(inner, axis) * axis)
    on = height * axis + jnp.sqrt(jnp.maximum(1 - height**2, 0)) * across
    cofactor, determinant = cofactor_matrix(linear)
    return unit_vector(determinant * (cofactor @ on))  # linear⁻ᵀ on, times det² > 0


def _circle_normal(direction, axis, height, linear):
    """(3,) the gradient at `direction` (3,) of unit(linearᵀ u)·axis − height (scaled): normal to the
    curve within the tangent plane, M (k − c unit(Mᵀu)) (k − c u for a circle)."""
    return linear @ (axis - height * unit_vector(linear.T @ direction))


def _curve_bend(direction, axis, height, linear):
    """−γ'' (3,) at `direction` (3,), a point of the curve n(θ) = unit(linear⁻ᵀ u(θ)) for u(θ) on the
    circle {u unit : u·axis = height}, in the units of a unit-speed step (n_θθ / |n_θ|²: the Newton step
    along the curve is the same in any parametrisation): (n − c k) / (1 − c²) on a circle. Closed form:
    with v = det² linear⁻ᵀ u (a positive multiple) and r = |v|, n_θ = (v_θ − n r_θ) / r and n_θθ =
    (v_θθ − n r_θθ) / r − 2 n_θ r_θ / r, where u_θ = k × (u − c k) and u_θθ = −(u − c k)."""
    cofactor, determinant = cofactor_matrix(linear)
    inner = unit_vector(linear.T @ direction)
    radial = inner - height * axis
    v, v_1, v_2 = (determinant * (cofactor @ x) for x in (inner, jnp.cross(axis, radial), -radial))
    r = jnp.linalg.norm(v)
    safe_r = jnp.where(r > 0, r, 1)
    n = v / safe_r
    r_1 = jnp.dot(n, v_1)
    n_1 = (v_1 - n * r_1) / safe_r
    r_2 = jnp.dot(n_1, v_1) + jnp.dot(n, v_2)
    n_2 = (v_2 - n * r_2) / safe_r - 2 * n_1 * r_1 / safe_r
    speed_sq = jnp.dot(n_1, n_1)
    return -n_2 / jnp.where(speed_sq > 0, speed_sq, 1)


def _plain_circle(axis, height, linear):
    """Whether the curve {u unit : unit(linearᵀ u)·axis = height} is the circle {u·k = height} (height
    zero, or `linear` a similarity), and its axis k (3,) = unit(linear axis) there."""
    gram = linear.T @ linear
    scale = jnp.trace(gram) / 3
    similar = (jnp.max(jnp.abs(gram - scale * jnp.eye(3, dtype=gram.dtype)))
               <= SIMILARITY_ROUNDINGS * epsilon(gram.dtype) * scale)
    return (height == 0) | similar, unit_vector(linear @ axis)


def _circles_meet(axis_a, height_a, axis_b, height_b, normal):
    """Where the circles {u unit : u·axis = height} of two holds (axes (3,) unit) meet, the one on
    `normal`'s side of their axes' plane: ((3,) direction, () bool whether they meet at all)."""
    across = jnp.cross(axis_a, axis_b)
    sine2 = jnp.dot(across, across)
    cosine = jnp.dot(axis_a, axis_b)
    sine2_safe = jnp.where(sine2 > 0, sine2, 1)
    # u = p k_a + q k_b + r (k_a × k_b) with u·k_a = c_a, u·k_b = c_b and |u| = 1.
    p = (height_a - cosine * height_b) / sine2_safe
    q = (height_b - cosine * height_a) / sine2_safe
    rest = 1 - (p * height_a + q * height_b)
    r = jnp.sqrt(jnp.maximum(rest, 0) / sine2_safe) * jnp.where(jnp.dot(across, normal) < 0, -1, 1)
    return p * axis_a + q * axis_b + r * across, (sine2 > 0) & (rest >= 0)


def _tangent_basis(normal, edge, one_free):
    """(3, 2) orthonormal tangent directions at `normal`; with `one_free`, the first is ⊥ `edge` and the
    second is zeroed (the normal must stay on the circle about the edge: its tangent there)."""
    helper = jnp.where(jnp.abs(normal[0]) < 0.6, jnp.array([1, 0, 0], normal.dtype),
                       jnp.array([0, 1, 0], normal.dtype))
    first = unit_vector(jnp.where(one_free, jnp.cross(edge, normal), jnp.cross(normal, helper)))
    second = jnp.where(one_free, 0, jnp.cross(normal, first))
    return jnp.stack([first, second], axis=1)


def _evaluate(pair: RelativePair, direction, basis):
    """g, w, Tᵀ J T (2, 2) and the magnitude () of the numbers involved, at `direction` (3,), A's frame
    (J = dw/dn along the tangent basis `basis` (3, 2) only)."""
    (value, support), linear = jax.linearize(lambda n: _support_difference(pair, n), direction)
    curvature = basis.T @ jnp.stack([linear(basis[:, 0])[0], linear(basis[:, 1])[0]], axis=1)
    scale = jnp.max(jnp.abs(jnp.stack([support.point_a, pair.rotation @ support.point_b,
                                       pair.translation])))
    return jnp.dot(direction, value), value, curvature, scale


def _inverse_hessian(curvature, g, one_free, bend=None):
    """H⁻¹ (2, 2) of the Riemannian Hessian H = sym(Tᵀ J T) − g I of g in the tangent basis, and whether
    H is negative definite (a maximum). With `one_free`, the normal moves along a curve γ only (the
    basis's first direction t), where the second derivative is t·J·t − `bend`, bend = −γ''·w (g itself
    on a great circle, where γ'' = −n)."""
    dtype = curvature.dtype
    hessian = (curvature + curvature.T) / 2 - g * jnp.eye(2, dtype=dtype)
    along = curvature[0, 0] - (g if bend is None else bend)
    hessian = jnp.where(one_free, jnp.diag(jnp.array([along, -1], dtype)), hessian)
    determinant = hessian[0, 0] * hessian[1, 1] - hessian[0, 1] * hessian[1, 0]
    definite = (hessian[0, 0] < 0) & (determinant > 0)
    adjugate = jnp.array([[hessian[1, 1], -hessian[0, 1]], [-hessian[1, 0], hessian[0, 0]]])
    return jnp.where(definite, adjugate / jnp.where(definite, determinant, 1), 0), definite


def smooth_response(pair: RelativePair, normal):
    """`Refinement.response` (3, 3), A's frame, at an exact `normal` (3,) of cores that both hold the
    contact at a point (a vertex or a curved point; the specialised colliders' curved contacts), and
    whether g is at a strict maximum there (else the response is zero)."""
    basis = _tangent_basis(normal, jnp.zeros(3, normal.dtype), False)
    g, _, curvature, _ = _evaluate(pair, normal, basis)
    inverse, definite = _inverse_hessian(curvature, g, False)
    return basis @ inverse @ basis.T, definite


def nearest_side_direction(pair: RelativePair, normal):
    """The direction (3,), A's frame, nearest `normal` that exposes a straight side of either core
    (`Shape.core_side_normals`; `normal` where neither has one). Where the deepest directions form a
    whole circle (a sphere centred on a cylinder's axis), EPA runs out of steps off that circle by up
    to ~1e-4 rad, where each core holds a single point, not its side; the first Newton proposal is
    then this direction, kept only if g does not drop there."""
    def onto(shape, direction):
        """(the nearest direction exposing the core's side, how near it is: −inf without a side)."""
        axis, height, linear = shape.core_side_normals()
        on = _onto_circle(direction, axis, height, linear)
        return on, jnp.where(jnp.any(axis != 0), jnp.dot(on, direction), -jnp.inf)

    on_a, closeness_a = onto(pair.shape_a, normal)
    on_b, closeness_b = onto(pair.shape_b, -pair.rotation.T @ normal)  # B is held along −n
    return select([jnp.isfinite(closeness_a) & (closeness_a >= closeness_b), jnp.isfinite(closeness_b)],
                  [on_a, -pair.rotation @ on_b], normal)


def _sides_meet(pair: RelativePair, normal):
    """Where the two cores' circles of side normals meet, on `normal`'s side ((3,) A's frame), and
    whether both cores have plain circles that meet (()). Both sides hold the contact there: a short
    segment at a cylinder's centre, across its axis, holds by its length only there, and on the
    cylinder's circle alone g has a kink at it, which Newton's steps do not find."""
    (axis_a, height_a, linear_a), (axis_b, height_b, linear_b) = (pair.shape_a.core_side_normals(),
                                                                  pair.shape_b.core_side_normals())
    plain_a, axis_in_a = _plain_circle(axis_a, height_a, linear_a)
    plain_b, axis_in_b = _plain_circle(axis_b, height_b, -pair.rotation @ linear_b)  # B held along −n
    met, meet = _circles_meet(axis_in_a, height_a, axis_in_b, height_b, normal)
    return met, jnp.any(axis_a != 0) & jnp.any(axis_b != 0) & plain_a & plain_b & meet


def refine(pair: RelativePair, normal, simplex: Simplex, feature_tolerance, active,
           stopped_short=False) -> Refinement:
    """Refine the loops' `normal` (3,), A's frame, where a curved core holds the contact.

    Args:
        pair: the cores, B in A's frame.
        normal: (3,) unit normal from GJK (separated) or EPA (overlapping), A to B.
        simplex: GJK's final simplex or EPA's nearest face (their vertices hold any flat feature).
        feature_tolerance: relative tolerance of the feature reports (`_features`).
        active: () bool; False returns the inputs unchanged (accepted False).
        stopped_short: () bool, the loops ran out of steps (`MAX_ITERATIONS`): after EPA, `normal` is
            its best support plane's, whose g is the loops' distance, the first proposal is
            `nearest_side_direction`, and where the cores' sides meet (`_sides_meet`) is the answer
            if g is larger there than where Newton's steps end. Elsewhere the
            loops' distance can exceed g at their normal, and a proposal that only raises g may lower
            the answer (a capsule against an ellipsoid at 1e-6 depth: 4e-7 too deep).
    """
    dtype = normal.dtype
    mask = simplex.mask
    a, b_local = on_both(functools.partial(_hold, simplex_mask=mask, feature_tolerance=feature_tolerance),
                         pair.shape_a, (normal, simplex.points_a, simplex.directions_a), pair.shape_b,
                         (-pair.rotation.T @ normal, simplex.points_b, simplex.directions_b))
    b = b_local.rotated(-pair.rotation)  # A's frame, its circle holding n (B is held along −n)
    # The directions the normal may take: a face fixes it; an edge or side keeps it on a circle
    # n·k = c (or such a circle seen through a map), so two of them fix it to where their circles
    # meet (plain circles), one leaves one free direction.
    has_circle_a, has_circle_b = jnp.any(a.axis != 0), jnp.any(b.axis != 0)
    plain_a, axis_a = _plain_circle(*a.circle())
    plain_b, axis_b = _plain_circle(*b.circle())
    met, circles_meet = _circles_meet(axis_a, a.height, axis_b, b.height, normal)
    on_face = a.face | b.face
    on_circles = has_circle_a & has_circle_b
    on_circle = (has_circle_a | has_circle_b) & ~on_circles & ~on_face
    circle = jax.tree_util.tree_map(lambda of_a, of_b: jnp.where(has_circle_a, of_a, of_b), a.circle(),
                                    b.circle())
    plane = jnp.where(a.face, a.plane, b.plane)
    applicable = (active & (a.curved | b.curved) & (a.point_like | a.flat | a.ruled)
                  & (b.point_like | b.flat | b.ruled) & ~(a.face & b.face)
                  & ~(on_circles & ~on_face & ~(circles_meet & plain_a & plain_b)))
    start = select([on_face, on_circles, on_circle],
                       [plane * jnp.where(jnp.dot(plane, normal) < 0, -1, 1), met,
                        _onto_circle(normal, *circle)],
                       jnp.where(stopped_short, nearest_side_direction(pair, normal), normal))
    start = jnp.where(jnp.any(start != 0), start, normal)
    no_free_direction = on_face | on_circles

    def tangent_basis(direction):
        return _tangent_basis(direction, _circle_normal(direction, *circle), on_circle)

    def evaluate(direction):
        return _evaluate(pair, direction, tangent_basis(direction))

    def inverse_hessian(direction, value, curvature, g):
        """Tangent basis T (3, 2), H⁻¹ (2, 2) in it, and whether H is negative definite (a maximum)."""
        basis = tangent_basis(direction)
        bend = jnp.dot(_curve_bend(direction, *circle), value)
        return (basis,) + _inverse_hessian(curvature, g, on_circle, bend)

    def newton_step(direction, value, curvature, g):
        # Maximising: the step is −H⁻¹ grad, valid where H is negative definite.
        basis, inverse, definite = inverse_hessian(direction, value, curvature, g)
        step = -(inverse @ (basis.T @ value))
        length = jnp.linalg.norm(step)
        step = step * jnp.minimum(1, MAX_STEP / jnp.where(length > 0, length, 1))
        moved = unit_vector(direction + basis @ step)
        moved = jnp.where(on_circle, _onto_circle(moved, *circle), moved)
        return jnp.where(definite & ~no_free_direction & jnp.any(moved != 0), moved, direction)

    g0, value0, curvature0, _ = evaluate(normal)

    def body(_, carry):
        best, g_best, value_best, curvature_best, proposal = carry
        g, value, curvature, scale = evaluate(proposal)
        # Rounding of g is ~eps·scale: a later, converged step is kept even when it ties.
        accept = g >= g_best - REFINE_ACCEPT_ROUNDINGS * epsilon(dtype) * scale
        best, g_best, value_best, curvature_best = jax.tree_util.tree_map(
            lambda new, old: jnp.where(accept, new, old), (proposal, g, value, curvature),
            (best, g_best, value_best, curvature_best))
        return best, g_best, value_best, curvature_best, newton_step(best, value_best, curvature_best,
                                                                    g_best)

    best, g_best, value_best, curvature_best, _ = jax.lax.fori_loop(0, NEWTON_STEPS + 1, body,
                                                          (normal, g0, value0, curvature0, start))
    # Where EPA ran out of steps, also where the cores' sides meet, if g is larger there (a kink).
    met, meet = _sides_meet(pair, normal)
    g_met = jnp.dot(met, _support_difference(pair, met)[0])
    at_kink = stopped_short & meet & (g_met > g_best)
    basis, inverse, definite = inverse_hessian(best, value_best, curvature_best, g_best)
    best, g_best = jnp.where(at_kink, met, best), jnp.where(at_kink, g_met, g_best)
    accepted = applicable & jnp.any(best != normal)
    smooth = accepted & a.point_like & b.point_like & definite & ~at_kink  # no smooth maximum at a kink
    response = jnp.where(smooth, basis @ inverse @ basis.T, 0)

    refined = _feature_simplex(pair, a, b_local, best, simplex)
    simplex = jax.tree_util.tree_map(lambda new, old: jnp.where(accepted, new, old), refined, simplex)
    return Refinement(accepted, jnp.where(accepted, best, normal), jnp.where(accepted, g_best, g0),
                      simplex, smooth, response)
