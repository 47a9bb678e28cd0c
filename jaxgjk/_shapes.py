"""Convex shapes, each read only through its support mapping (local frame).

Every shape is a pytree whose leaves are arrays, so a stack of shapes of one kind (leading batch axes on
every leaf) batches under `jax.vmap`. The methods below act on one shape (no batch axes).

Spheres, capsules and `Rounded` shapes are a *core* (a point, a segment, a shape) swept by a ball of radius
`margin()`: GJK and EPA run on the cores and the radii are added analytically afterwards, which makes
sphere and capsule queries exact and well conditioned (Coal and van den Bergen 2004, §4.3.5, do the same).
"""

from __future__ import annotations

import abc

import jax
import jax.numpy as jnp
import numpy as np

from ._checks import check_array, float_leaves, is_nonnegative
from ._dataclass import pytree_dataclass
from ._features import (
    Feature,
    FeatureDim,
    box_feature,
    feature_without_vertices,
    segment_feature,
    vertex_set_feature,
)
from ._gate import compute_where
from ._tolerance import SIDE_TIE_ROUNDINGS, VERTEX_TIE_ROUNDINGS, epsilon, float_dtype
from ._vector import cofactor_matrix, dot, first_argmax, first_argmin, select, unit_vector


class Shape(abc.ABC):
    """Interface of every shape: a convex set read through its support mapping, in its local frame.

    Adding a shape kind (a checklist; only the first two items are required):
    1. Here, a `@pytree_dataclass` subclass whose fields are arrays (sizes in local lengths), with the
       four abstract methods: `core_support`, `reach`, `is_valid` and `check`.
    2. Say what is special about it, where it is: `margin` (a ball radius sweeping the core;
       `usually_rounded` where that radius is a field that is rarely zero), `may_curve` (False for
       a polyhedral core: spares it the normal refinement), `core_feature` and `core_ruling` (flat
       and straight parts, for the feature reports and the refinement),
       `core_support_near` (vertex ties), `core_side_normals` and `core_point_like` (how the
       refinement follows a straight side, or a composite's one smooth point), `center` (when the
       origin is not inside the core).
    3. Optional, each in one place: a row of `_packed.KIND_FIELDS` to mix it into `pack` batches; an
       exact rule in `_bounds` (otherwise `aabb` takes six support calls); a specialised solver in
       `_colliders` (otherwise GJK/EPA run on it); a case in `_demo.random_shape` for the main job.
    4. Tests: add it to `tests/shape_samples.PRIMITIVE_KINDS` (and `random_shape`); the contract
       tests (`tests/test_shapes.py`) then run it, and the query tests pair it with every other kind,
       against the oracle, which needs the kind's support function and support point written out
       again from its fields (`reference._local_support_function`, `_local_support_point`).
    """

    def support(self, direction):
        """A point (3,) of the shape maximising ``dot(direction, point)``, local frame.

        Any direction (3,), zero included, gives a point of the shape.
        """
        return self.core_support(direction) + self.margin() * unit_vector(direction)

    @abc.abstractmethod
    def core_support(self, direction):
        """Support point (3,) of the core: the shape with its margin (ball radius) taken off."""

    def core_support_near(self, direction, hint):
        """`core_support`, but where `direction` (3,) exposes several vertices that tie to rounding (an
        edge or face, a straight side's two ends), the one nearest `hint` (3,): re-evaluating a stored
        support direction then returns the stored point, whichever way a differently compiled dot
        product rounds the tie (the tangent rules hold the simplex's directions), and one direction
        reaches both ends of a side (`_refine`). The same as `core_support` for shapes without ties."""
        del hint
        return self.core_support(direction)

    def margin(self):
        """Radius () of the ball that sweeps the core (zero for shapes without one)."""
        return jnp.zeros((), self.dtype())

    def may_curve(self) -> bool:
        """Whether the core's support point can move continuously with the direction (a curved core
        surface somewhere): a trace-time bool. Polyhedral cores (points, segments, boxes, polytopes)
        say False, which spares them `_refine`."""
        return True

    def polyhedral_core(self):
        """() bool array: the core is a polytope (its support point is piecewise constant); the
        run-time form of `not may_curve()`, which a packed shape decides per kind."""
        return jnp.asarray(not self.may_curve())

    def feature(self, direction, relative_tolerance: float) -> Feature:
        """The feature of the shape exposed by the unit `direction` (3,), local frame (`_features`).

        A positive margin rounds every feature: CURVED. `relative_tolerance` is relative to the size.
        """
        rounded = feature_without_vertices(FeatureDim.CURVED)
        curved = self.margin() > 0
        if self.usually_rounded():  # the core's feature only where some lane of a batch is not rounded
            core = compute_where(~curved, lambda operands: operands[0].core_feature(
                operands[1], relative_tolerance), (self, direction))
        else:
            core = self.core_feature(direction, relative_tolerance)
        return jax.tree_util.tree_map(lambda curved_feature, flat: jnp.where(curved, curved_feature, flat),
                                      rounded, core)

    def usually_rounded(self) -> bool:
        """Whether a field of the shape sweeps its core by a ball that is rarely zero (a rounded shape's
        radius), a trace-time bool: `feature` then computes the core's feature only where some pair of
        a batch has a zero margin (under vmap, a vertex search over a rounded box's corners costs more
        than the rest of a specialised query's result). A capsule's feature is a closed form
        (`_features.segment_feature`), cheap enough to compute always."""
        return False

    def core_feature(self, direction, relative_tolerance: float) -> Feature:
        """The feature of the core exposed by `direction`; NONE unless a shape says more."""
        return feature_without_vertices(FeatureDim.NONE)

    def core_point_like(self, direction, relative_tolerance: float):
        """() bool: `direction` (3,) exposes one point of the core, where its support point moves
        smoothly with the direction (a vertex or a curved point; what `_refine` needs of a shape that
        holds the contact by a point). From `core_feature`; composites, whose features are NONE, say
        it from their parts'."""
        dimension = self.core_feature(direction, relative_tolerance).dimension
        return (dimension == FeatureDim.VERTEX) | (dimension == FeatureDim.CURVED)

    def core_ruling(self, direction, relative_tolerance: float):
        """Where `direction` exposes a straight segment of a curved core (a cylinder's side): a turn
        (3,) that, added to `direction` or taken from it, moves the support to the segment's two ends
        without moving it across the curved direction. Zero elsewhere (and for shapes without one)."""
        return jnp.zeros(3, self.dtype())

    def core_side_normals(self):
        """Where the straight sides of a curved core face: (axis (3,), height (), linear (3, 3)) such
        that the unit directions exposing a side are those u with ``unit(linearᵀ u) · axis = height``:
        a circle of directions (a cylinder's sides face across its axis, height 0; a cone's slants at
        a fixed angle to it) seen through `linear` (the identity, or the maps of `Affine` images). A
        zero axis for shapes without straight sides."""
        return jnp.zeros(3, self.dtype()), jnp.zeros((), self.dtype()), jnp.eye(3, dtype=self.dtype())

    def center(self):
        """A point (3,) inside the core, near its middle (GJK's first search direction uses it)."""
        return jnp.zeros(3, self.dtype())

    @abc.abstractmethod
    def reach(self):
        """() the largest distance from the local origin to a point of the shape (margin included; an
        upper bound from the pieces for `Affine` and `MinkowskiSum`): the scale of the rounding errors
        of a query on it (`_tolerance.touching_resolution`)."""

    @abc.abstractmethod
    def is_valid(self):
        """Run-time validity () bool: finite fields, non-negative sizes, a non-empty vertex set."""

    @abc.abstractmethod
    def check(self, name: str) -> None:
        """Trace-time check of field shapes and dtypes; errors name the argument `name`."""

    def dtype(self):
        """The floating dtype of the shape's fields."""
        return float_dtype(*float_leaves(self))


def nearest_tied_vertex(vertices, scores, direction, hint):
    """The vertex of `vertices` (N, 3) nearest `hint` (3,) among those whose `scores` (N,) (dot
    products with `direction` (3,); -inf for padding) are the largest to a few roundings."""
    rounding = (VERTEX_TIE_ROUNDINGS * epsilon(scores.dtype) * jnp.sqrt(dot(direction, direction))
                * jnp.max(jnp.abs(vertices)))
    tied = scores >= jnp.max(scores) - rounding
    offsets = vertices - hint
    return vertices[first_argmin(jnp.where(tied, dot(offsets, offsets), jnp.inf))]


def _side_tied(gap, direction, size):
    """() bool: the two ends of a straight side, whose values along `direction` (3,) differ by `gap` (),
    tie to `SIDE_TIE_ROUNDINGS` roundings of |direction| · `size` ()."""
    length = jnp.sqrt(dot(direction, direction))  # per component: a short reduction is a library call
    return jnp.abs(gap) <= SIDE_TIE_ROUNDINGS * epsilon(direction.dtype) * length * size


def _axial_end(direction, half_length, hint=None):
    """() z of the end of the segment from −`half_length` to +`half_length` on the z axis that `direction`
    (3,) exposes: the upper one where z ≥ 0, or, where the ends tie and a `hint` (3,) is given, the one
    on the hint's side."""
    upward = direction[2] >= 0
    if hint is not None:
        # The ends' values along the direction differ by 2 · half_length · z.
        tied = _side_tied(2 * half_length * direction[2], direction, half_length)
        upward = jnp.where(tied, hint[2] >= 0, upward)
    return jnp.where(upward, half_length, -half_length)


def _axial_side_normals(dtype, height=0.0):
    """`Shape.core_side_normals` of straight sides whose normals make the angle asin(`height`) with z."""
    return jnp.array([0, 0, 1], dtype), jnp.asarray(height, dtype), jnp.eye(3, dtype=dtype)


def _axial_turn(exposes_side, direction):
    """`Shape.core_ruling` of a shape whose straight sides run along z with the support's height
    following the sign of the direction's z: a turn along +z as long as the direction's largest
    component (so ± it reaches both ends) where `exposes_side` (), zero elsewhere."""
    return jnp.where(exposes_side, jnp.array([0, 0, 1], direction.dtype) * jnp.max(jnp.abs(direction)), 0)


@pytree_dataclass
class Sphere(Shape):
    """Ball centred at the origin. radius: () length."""

    radius: jnp.ndarray

    def may_curve(self):
        return False

    def core_support(self, direction):
        return jnp.zeros_like(direction)

    def core_feature(self, direction, relative_tolerance):
        return feature_without_vertices(FeatureDim.VERTEX)

    def margin(self):
        return jnp.asarray(self.radius, self.dtype())

    def reach(self):
        return self.margin()

    def is_valid(self):
        return is_nonnegative(self.radius)

    def check(self, name):
        check_array(f"{name}.radius", self.radius, ())


@pytree_dataclass
class Capsule(Shape):
    """Segment from (0, 0, -half_length) to (0, 0, +half_length) swept by a ball of `radius` (both ())."""

    radius: jnp.ndarray
    half_length: jnp.ndarray

    def may_curve(self):
        return False

    def core_support(self, direction):
        return self.core_support_near(direction, None)

    def core_support_near(self, direction, hint):
        return jnp.zeros_like(direction).at[2].set(_axial_end(direction, self.half_length, hint))

    def core_feature(self, direction, relative_tolerance):
        return segment_feature(jnp.asarray(self.half_length, direction.dtype), direction[2],
                               relative_tolerance)

    def core_ruling(self, direction, relative_tolerance):
        # The segment itself is the side (straight in an `Affine` image, where the margin curves).
        return _axial_turn(self.core_feature(direction, relative_tolerance).dimension == FeatureDim.EDGE,
                           direction)

    def core_side_normals(self):
        return _axial_side_normals(self.dtype())

    def margin(self):
        return jnp.asarray(self.radius, self.dtype())

    def reach(self):
        return jnp.asarray(self.half_length + self.radius, self.dtype())

    def is_valid(self):
        return is_nonnegative(self.radius, self.half_length)

    def check(self, name):
        check_array(f"{name}.radius", self.radius, ())
        check_array(f"{name}.half_length", self.half_length, ())


@pytree_dataclass
class Box(Shape):
    """Axis-aligned box centred at the origin. half_extents: (3,) half side lengths."""

    half_extents: jnp.ndarray

    def may_curve(self):
        return False

    def core_support(self, direction):
        # Ties (zero components) resolve to the + side, so the support is always a vertex.
        return jnp.where(direction >= 0, self.half_extents, -self.half_extents).astype(direction.dtype)

    def corners(self):
        """(8, 3) corners; corner ``x + 2y + 4z`` has coordinate +half_extent where its bit is 1."""
        bits = (np.arange(8)[:, None] >> np.arange(3)) & 1
        return jnp.asarray(2 * bits - 1, self.dtype()) * self.half_extents

    def core_feature(self, direction, relative_tolerance):
        return box_feature(self.half_extents, direction, relative_tolerance)

    def reach(self):
        h = self.half_extents  # written out: a reduction over three is slow on XLA:CPU (box-half-space 1.3x)
        return jnp.sqrt(h[..., 0] ** 2 + h[..., 1] ** 2 + h[..., 2] ** 2)

    def is_valid(self):
        return is_nonnegative(self.half_extents)

    def check(self, name):
        check_array(f"{name}.half_extents", self.half_extents, (3,))


@pytree_dataclass
class Cylinder(Shape):
    """Cylinder of axis z, flat caps at z = ±half_length. radius, half_length: ()."""

    radius: jnp.ndarray
    half_length: jnp.ndarray

    def core_support(self, direction):
        return self.core_support_near(direction, None)

    def core_support_near(self, direction, hint):
        radial = self.radius * unit_vector(direction.at[2].set(0))
        return radial.at[2].set(_axial_end(direction, self.half_length, hint))

    def core_feature(self, direction, relative_tolerance):
        # A cap (direction along the axis), a side segment (direction across it), else a rim point;
        # a zero radius leaves a segment (caps are its end points), a zero length a disk.
        tolerance = relative_tolerance * jnp.maximum(self.radius, self.half_length)
        along_axis = jnp.linalg.norm(direction[:2]) <= relative_tolerance
        across_axis = jnp.abs(direction[2]) <= relative_tolerance
        return feature_without_vertices(select(
            [along_axis & (self.radius > tolerance), across_axis & (self.half_length > tolerance),
             self.radius <= tolerance],
            [FeatureDim.FACE, FeatureDim.EDGE, FeatureDim.VERTEX], FeatureDim.CURVED))

    def core_ruling(self, direction, relative_tolerance):
        # The side's segment: the radial part follows the direction's xy alone, so ±z keeps it.
        return _axial_turn(self.core_feature(direction, relative_tolerance).dimension == FeatureDim.EDGE,
                           direction)

    def core_side_normals(self):
        return _axial_side_normals(self.dtype())

    def reach(self):
        return jnp.sqrt(jnp.asarray(self.radius**2 + self.half_length**2, self.dtype()))

    def is_valid(self):
        return is_nonnegative(self.radius, self.half_length)

    def check(self, name):
        check_array(f"{name}.radius", self.radius, ())
        check_array(f"{name}.half_length", self.half_length, ())


@pytree_dataclass
class Cone(Shape):
    """Cone of axis z: base disk of `radius` at z = -half_height, apex at z = +half_height (both ())."""

    radius: jnp.ndarray
    half_height: jnp.ndarray

    def core_support(self, direction):
        return self.core_support_near(direction, None)

    def core_support_near(self, direction, hint):
        apex = jnp.zeros_like(direction).at[2].set(self.half_height)
        rim = (self.radius * unit_vector(direction.at[2].set(0))).at[2].set(-self.half_height)
        gap = jnp.dot(direction, apex) - jnp.dot(direction, rim)
        upper = gap >= 0
        if hint is not None:  # a slant's ends tie: the one nearer the hint
            nearer_apex = jnp.sum((hint - apex) ** 2) <= jnp.sum((hint - rim) ** 2)
            upper = jnp.where(_side_tied(gap, direction, jnp.maximum(self.radius, self.half_height)),
                              nearer_apex, upper)
        return jnp.where(upper, apex, rim)

    def core_feature(self, direction, relative_tolerance):
        # The base (direction along -z), a slant segment (apex and rim tie), the apex, or a rim point.
        sideways = jnp.linalg.norm(direction[:2])
        apex_height = direction[2] * self.half_height
        rim_height = self.radius * sideways - direction[2] * self.half_height
        tolerance = relative_tolerance * jnp.maximum(self.radius, self.half_height)
        return feature_without_vertices(select(
            [(sideways <= relative_tolerance) & (direction[2] < 0),
             jnp.abs(apex_height - rim_height) <= tolerance, apex_height > rim_height],
            [FeatureDim.FACE, FeatureDim.EDGE, FeatureDim.VERTEX], FeatureDim.CURVED))

    def core_ruling(self, direction, relative_tolerance):
        # A slant from the apex to the rim point facing the direction: more +z exposes the apex, less
        # the rim point, and the rim point follows the direction's xy alone.
        return _axial_turn(self.core_feature(direction, relative_tolerance).dimension == FeatureDim.EDGE,
                           direction)

    def core_side_normals(self):
        # The slant's outward normal is (2h cos φ, 2h sin φ, r) / √(4h² + r²).
        radius, half = jnp.asarray(self.radius, self.dtype()), jnp.asarray(self.half_height, self.dtype())
        length = jnp.sqrt(radius**2 + 4 * half**2)
        return _axial_side_normals(self.dtype(), radius / jnp.where(length > 0, length, 1))

    def center(self):
        return jnp.zeros(3, self.dtype()).at[2].set(-self.half_height / 2)

    def reach(self):
        return jnp.sqrt(jnp.asarray(self.radius**2 + self.half_height**2, self.dtype()))

    def is_valid(self):
        return is_nonnegative(self.radius, self.half_height)

    def check(self, name):
        check_array(f"{name}.radius", self.radius, ())
        check_array(f"{name}.half_height", self.half_height, ())


@pytree_dataclass
class Ellipsoid(Shape):
    """Ellipsoid x²/a² + y²/b² + z²/c² ≤ 1 with radii (3,) = (a, b, c)."""

    radii: jnp.ndarray

    def core_support(self, direction):
        # s(d) = D² d / |D d| with D = diag(radii): the maximiser of d·x on the ellipsoid.
        return self.radii * unit_vector(self.radii * direction)

    def core_feature(self, direction, relative_tolerance):
        return feature_without_vertices(FeatureDim.CURVED)

    def reach(self):
        return jnp.maximum(jnp.maximum(self.radii[..., 0], self.radii[..., 1]), self.radii[..., 2])

    def is_valid(self):
        return is_nonnegative(self.radii)

    def check(self, name):
        check_array(f"{name}.radii", self.radii, (3,))


@pytree_dataclass
class Polytope(Shape):
    """Convex hull of the vertices whose mask is true.

    Fields:
        vertices: (N, 3) local coordinates.
        mask: (N,) bool, or None for all vertices; false rows are padding and are ignored.
    """

    vertices: jnp.ndarray
    mask: jnp.ndarray | None = None

    @staticmethod
    def from_points(points, dtype=None) -> Polytope:
        """The convex hull of `points` (N, 3) as a polytope of its extreme points only.

        Preprocessing in float64 NumPy (`_hull.convex_hull`: quickhull, O(n log n) expected, robust
        to duplicate and coplanar points). `hull()` gives its faces, edges and adjacency.
        """
        from ._hull import convex_hull

        hull = convex_hull(points)
        dtype = dtype or float_dtype(jnp.asarray(points))
        return Polytope(jnp.asarray(hull.vertices, dtype))

    def hull(self):
        """The `_hull.Hull` of the (unmasked) vertices: faces, triangles, edges, adjacency (NumPy)."""
        from ._hull import convex_hull

        vertices = np.asarray(self.vertices, np.float64)
        if self.mask is not None:
            vertices = vertices[np.asarray(self.mask)]
        return convex_hull(vertices)

    def _scores(self, direction):
        scores = dot(self.vertices, direction)
        if self.mask is None:
            return scores
        return jnp.where(self.mask, scores, -jnp.inf)

    def may_curve(self):
        return False

    def core_support(self, direction):
        return self.vertices[first_argmax(self._scores(direction))].astype(direction.dtype)

    def core_support_near(self, direction, hint):
        vertex = nearest_tied_vertex(self.vertices, self._scores(direction), direction, hint)
        return vertex.astype(direction.dtype)

    def core_feature(self, direction, relative_tolerance):
        return vertex_set_feature(self.vertices, self.mask, direction, relative_tolerance)

    def center(self):
        if self.mask is None:
            return jnp.mean(self.vertices, axis=0)
        weights = self.mask.astype(self.vertices.dtype)
        return weights @ self.vertices / jnp.maximum(jnp.sum(weights), 1)

    def reach(self):
        lengths = jnp.sqrt(jnp.sum(self.vertices**2, axis=-1))
        return jnp.max(lengths if self.mask is None else jnp.where(self.mask, lengths, 0))

    def is_valid(self):
        finite = jnp.all(jnp.isfinite(self.vertices), axis=-1)
        if self.mask is None:
            return jnp.all(finite)
        return jnp.any(self.mask) & jnp.all(finite | ~self.mask)

    def check(self, name):
        check_array(f"{name}.vertices", self.vertices, (None, 3))
        if self.mask is not None:
            check_array(f"{name}.mask", self.mask, (np.shape(self.vertices)[0],), floating=False)


@pytree_dataclass
class Affine(Shape):
    """Image of `shape` under x ↦ linear @ x + offset. linear: (3, 3); offset: (3,)."""

    shape: Shape
    linear: jnp.ndarray
    offset: jnp.ndarray

    def core_support(self, direction):
        # s(d) = L s_inner(Lᵀ d) + offset (van den Bergen 2004, §4.3.4).
        return self.linear @ self.shape.support(self.linear.T @ direction) + self.offset

    def core_support_near(self, direction, hint):
        # The shape breaks its ties towards the hint's preimage (a singular map has none: any hint
        # still gives a support point).
        inner_direction = self.linear.T @ direction
        inverse_transpose, _ = self._inverse_transpose()
        inner = (self.shape.core_support_near(inner_direction, inverse_transpose.T @ (hint - self.offset))
                 + self.shape.margin() * unit_vector(inner_direction))
        return self.linear @ inner + self.offset

    def _inverse_transpose(self):
        """`linear`⁻ᵀ (3, 3), zero where `linear` is singular, and () bool whether it is invertible."""
        cofactor, determinant = cofactor_matrix(self.linear)
        invertible = determinant != 0
        return jnp.where(invertible, cofactor / jnp.where(invertible, determinant, 1), 0), invertible

    def core_feature(self, direction, relative_tolerance):
        # An invertible map sends the face exposed by Lᵀd to the face exposed by d.
        return self.shape.feature(unit_vector(self.linear.T @ direction), relative_tolerance)

    def polyhedral_core(self):
        return self.shape.polyhedral_core() & (self.shape.margin() == 0)

    def core_point_like(self, direction, relative_tolerance):
        # The image of the whole shape, margin included: a ball's sweep of the core's point is an
        # ellipsoid's point, of its edge or face a straight side or a flat patch (not point-like).
        return self.shape.core_point_like(unit_vector(self.linear.T @ direction), relative_tolerance)

    def core_ruling(self, direction, relative_tolerance):
        # The shape's turn r at Lᵀd, brought to d's side: Lᵀ(d ± t) = Lᵀd ± r. A margin turns with it:
        # d ± t then exposes only near the ends of a rounded side (`_refine` holds them by ties).
        inner = self.shape.core_ruling(self.linear.T @ direction, relative_tolerance)
        return self._inverse_transpose()[0] @ inner

    def core_side_normals(self):
        # d exposes a side where Lᵀd does on the shape: the shape's circle, seen through L as well.
        axis, height, linear = self.shape.core_side_normals()
        return jnp.where(self._inverse_transpose()[1], axis, 0), height, self.linear @ linear

    def center(self):
        return self.linear @ self.shape.center() + self.offset

    def reach(self):
        # |L x + o| ≤ ‖L‖_F |x| + |o|.
        return jnp.sqrt(jnp.sum(self.linear**2)) * self.shape.reach() + jnp.sqrt(jnp.sum(self.offset**2))

    def is_valid(self):
        finite = jnp.all(jnp.isfinite(self.linear)) & jnp.all(jnp.isfinite(self.offset))
        return finite & self.shape.is_valid()

    def check(self, name):
        self.shape.check(f"{name}.shape")
        check_array(f"{name}.linear", self.linear, (3, 3))
        check_array(f"{name}.offset", self.offset, (3,))


@pytree_dataclass
class MinkowskiSum(Shape):
    """{x + y : x in a, y in b}. The cores add, and so do the margins."""

    a: Shape
    b: Shape

    def core_support(self, direction):
        return self.a.core_support(direction) + self.b.core_support(direction)

    def may_curve(self):
        return self.a.may_curve() or self.b.may_curve()

    def polyhedral_core(self):
        return self.a.polyhedral_core() & self.b.polyhedral_core()

    def core_point_like(self, direction, relative_tolerance):
        return (self.a.core_point_like(direction, relative_tolerance)
                & self.b.core_point_like(direction, relative_tolerance))

    def margin(self):
        return self.a.margin() + self.b.margin()

    def center(self):
        return self.a.center() + self.b.center()

    def reach(self):
        return self.a.reach() + self.b.reach()

    def is_valid(self):
        return self.a.is_valid() & self.b.is_valid()

    def check(self, name):
        self.a.check(f"{name}.a")
        self.b.check(f"{name}.b")


@pytree_dataclass
class Rounded(Shape):
    """`shape` swept by a ball of `radius` () (its Minkowski sum with the ball)."""

    shape: Shape
    radius: jnp.ndarray

    def core_support(self, direction):
        return self.shape.core_support(direction)

    def core_support_near(self, direction, hint):
        return self.shape.core_support_near(direction, hint)

    def core_feature(self, direction, relative_tolerance):
        return self.shape.core_feature(direction, relative_tolerance)

    def usually_rounded(self):
        return True

    def core_ruling(self, direction, relative_tolerance):
        return self.shape.core_ruling(direction, relative_tolerance)

    def core_side_normals(self):
        return self.shape.core_side_normals()

    def core_point_like(self, direction, relative_tolerance):
        return self.shape.core_point_like(direction, relative_tolerance)

    def may_curve(self):
        return self.shape.may_curve()

    def polyhedral_core(self):
        # The inner shape's own answer, per lane for a packed one: the default, `not may_curve()`,
        # is a trace-time bool that a packed shape holding any curved kind makes False everywhere.
        return self.shape.polyhedral_core()

    def margin(self):
        return self.shape.margin() + self.radius

    def center(self):
        return self.shape.center()

    def reach(self):
        return self.shape.reach() + self.radius

    def is_valid(self):
        return self.shape.is_valid() & is_nonnegative(self.radius)

    def check(self, name):
        self.shape.check(f"{name}.shape")
        check_array(f"{name}.radius", self.radius, ())


@pytree_dataclass
class ConvexHull(Shape):
    """Convex hull of the union of `shapes` (a non-empty tuple of shapes)."""

    shapes: tuple

    def _member_supports(self, direction):
        """Each member's support point (M, 3), their values along `direction` (M,), and the winner ()."""
        points = jnp.stack([shape.support(direction) for shape in self.shapes])
        values = points @ direction
        return points, values, jnp.argmax(values)

    def core_support(self, direction):
        points, _, winner = self._member_supports(direction)
        return points[winner]

    def core_point_like(self, direction, relative_tolerance):
        # One member's point, clear of the others' support planes (a tie is a flat patch between them);
        # a member's margin sweeps its core's point to a smooth one, its edge to a straight side.
        _, values, winner = self._member_supports(direction)
        clear = jnp.sum(values >= values[winner] - relative_tolerance * self.reach()) == 1
        point_like = [shape.core_point_like(direction, relative_tolerance) for shape in self.shapes]
        return clear & jnp.stack(point_like)[winner]

    def center(self):
        return jnp.mean(jnp.stack([shape.center() for shape in self.shapes]), axis=0)

    def reach(self):
        return jnp.max(jnp.stack([shape.reach() for shape in self.shapes]))

    def is_valid(self):
        return jnp.all(jnp.stack([shape.is_valid() for shape in self.shapes]))

    def check(self, name):
        if not isinstance(self.shapes, (tuple, list)) or not self.shapes:
            raise ValueError(f"{name}.shapes must be a non-empty tuple of shapes")
        for index, shape in enumerate(self.shapes):
            if not isinstance(shape, Shape):
                raise TypeError(f"{name}.shapes[{index}] must be a shape, got {type(shape).__name__}")
            shape.check(f"{name}.shapes[{index}]")


@pytree_dataclass
class HalfSpace(Shape):
    """The half-space z ≤ 0 of its local frame: boundary plane z = 0, outward normal +z (a floor, a
    table top, a wall, placed by its pose like every shape). It has no fields.

    Unbounded, so its support exists only along +z, where every point of the boundary plane is a
    maximiser: `support` returns the origin there (and, for `core_support_near`, the hint's projection
    onto the plane), and a point at infinity (infinite components) along any other direction. Queries
    never run GJK on it: the signed distance of any shape to a half-space is exact from that shape's
    one support point along the plane's normal (`_colliders`). Pairs that would need a bounded support
    — two half-spaces, or a `ConvexHull` or `MinkowskiSum` holding one — raise at trace time.
    """

    def core_support(self, direction):
        horizontal = jnp.where(direction[:2] > 0, jnp.inf, jnp.where(direction[:2] < 0, -jnp.inf, 0))
        downward = jnp.all(direction[:2] == 0) & (direction[2] < 0)
        return jnp.concatenate([horizontal, jnp.where(downward, -jnp.inf, 0)[None]]).astype(direction.dtype)

    def core_support_near(self, direction, hint):
        along_normal = jnp.all(direction[:2] == 0) & (direction[2] > 0)
        return jnp.where(along_normal, hint.at[2].set(0), self.core_support(direction))

    def margin(self):
        # Weakly typed, so that it takes the dtype of whatever it meets (a half-space has no fields).
        return jnp.asarray(0.0)

    def may_curve(self):
        return False

    def core_feature(self, direction, relative_tolerance):
        return feature_without_vertices(FeatureDim.FACE)

    def reach(self):
        return jnp.asarray(0.0)  # unbounded: the scale of its queries is the other shape's and the poses'

    def is_valid(self):
        return jnp.asarray(True)

    def check(self, name):
        del name
