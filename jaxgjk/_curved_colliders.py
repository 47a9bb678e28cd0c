"""Exact contacts of a point core (a sphere's, a `Rounded` point's) with a cylinder or an ellipsoid core.

A is the point (A's origin), B the curved core; the work is done in B's frame, where the point is
``p = −Rᵀ t`` (``x_A = R x_B + t``). Both solvers find B's closest surface point q to p, inside or
outside, and its outward normal o: the normal (A → B) is −o, the signed distance ``o·(p − q)``.

Cylinder: a closed form in the cylinder's radial and axial coordinates. Outside, the closest point
clamps them (a rim point beyond both, a side point beyond the side only, a cap point beyond the cap
only); inside, the least of the side depth and the two cap depths decides (a tie goes to the cap).
A point on the axis has no radial direction: it takes B's +x (a side contact there is a tie over the
whole circle).

Ellipsoid (radii e): with q = e∘w, |w| = 1, the Lagrange condition of min |q − p|² is
``w_i = e_i y_i / (u + d_i)`` in the first octant (y = |p|, d_i = e_i² − e_min², u = λ + e_min² ≥ 0 for
the multiplier λ), and u is the root of |w(u)| = 1 (Eberly, "Distance from a point to an ellipse, an
ellipsoid, or a hyperellipsoid", 2011, derives the same equation; he solves it by bisection). Written
this way it is the secular equation of a trust-region step, which Newton solves on 1/|w(u)| − 1, a
concave increasing function of u (Moré and Sorensen, "Computing a trust region step", 1983): from a
point left of the root every Newton iterate stays left of it and they increase to it, so a fixed count
of steps from the lower bound ``max(0, max_i e_i y_i − d_i)`` (where one term alone reaches 1) needs no
other safeguard than the bracket [that bound, |e∘y|]. The one case without a root is Moré and
Sorensen's hard case: p on the principal plane of the least radius, inside the region where the
closest point leaves that plane (|w(0)| < 1, the point near the centre). Then u = 0 and the least
radius's axis takes the rest of w's unit length, on its + side (the closest point is not unique
there: ±). Radii that are zero (a disk, a needle, a point) fit the same equations: their w_i vanish,
and in the hard case the normal is the point's offset along their axes.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ._colliders import TRIANGLE_SLOTS, by_slot, closed_contact, is_apart, padded_simplex
from ._contact import Contact, NormalKind
from ._minkowski import RelativePair
from ._vector import dot, select, unit_vector

ELLIPSOID_STEPS = 12  # Newton steps: 8–10 reached rounding on every float32/float64 case tried
_CAP_ANGLES = np.pi / 2 + 2 * np.pi / 3 * np.arange(3)  # a cap's triangle of rim points
_CAP_CIRCLE = np.stack([np.cos(_CAP_ANGLES), np.sin(_CAP_ANGLES)], axis=1)  # (3, 2) on the unit circle


def _cap_weights(x, y):
    """The affine weights (3,) of the point (x, y) () over the unit circle's inscribed equilateral
    triangle (the rows v_k of `_CAP_CIRCLE`): 1/3 + (2/3) v_k·(x, y), as Σ v_k v_kᵀ = 3/2 I."""
    circle = jnp.asarray(_CAP_CIRCLE, jnp.result_type(x))
    return 1 / 3 + 2 / 3 * (circle[:, 0] * x + circle[:, 1] * y)


def _root(x):
    """√x () for x ≥ 0, with a finite derivative at 0 (the solvers' values are differentiated too: a
    Hessian differentiates the tangent rule, which reads the primal normal)."""
    positive = x > 0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, x, 1)), 0)


def point_cylinder(pair: RelativePair, core_a, core_b, resolution) -> Contact:
    """A point (A's origin) and B's core cylinder (axis B's z). The simplex holds B's feature: a rim
    point (its support direction, the outward normal there), the side's segment at the contact's
    angle (its two ends), or three rim points of the cap (the cap's plane, as a box face is held)."""
    del core_a
    dtype = pair.translation.dtype
    radius, half_length = core_b.radius, core_b.half_length
    point = -pair.rotation.T @ pair.translation
    radial = _root(point[0] ** 2 + point[1] ** 2)
    across = jnp.where(radial > 0, point[:2] / jnp.where(radial > 0, radial, 1), jnp.array([1, 0], dtype))
    up = jnp.where(point[2] >= 0, 1, -1).astype(dtype)
    beyond_side, beyond_cap = radial - radius, jnp.abs(point[2]) - half_length
    rim = (beyond_side > 0) & (beyond_cap > 0)
    # Outside, beyond the side only; inside, nearer the side than the caps.
    side = (~rim & (beyond_side > 0)) | ((beyond_side <= 0) & (beyond_cap <= 0) & (beyond_side > beyond_cap))
    cap = ~rim & ~side
    rim_distance = jnp.sqrt(jnp.where(rim, beyond_side**2 + beyond_cap**2, 1))
    distance = select([rim, side], [rim_distance, beyond_side], beyond_cap)
    zero = jnp.zeros((), dtype)
    outward = select([rim, side], [jnp.concatenate([across * beyond_side, (up * beyond_cap)[None]])
                                       / rim_distance, jnp.concatenate([across, zero[None]])],
                         jnp.stack([zero, zero, up]))
    closest = jnp.concatenate([jnp.where(cap, point[:2], radius * across),
                               jnp.where(side, point[2], up * half_length)[None]])
    normal = -pair.rotation @ outward

    # B's feature: slots (3, 3) of support directions and points, weights of `closest` over them.
    ends = jnp.array([-1, 1, 1], dtype)
    side_directions = jnp.concatenate([jnp.broadcast_to(across, (3, 2)), ends[:, None]], axis=1)
    along = jnp.where(half_length > 0, (point[2] + half_length) / jnp.where(half_length > 0, 2 * half_length,
                                                                              1), 0.5)
    rim_circle = jnp.asarray(_CAP_CIRCLE, dtype)
    cap_directions = jnp.concatenate([rim_circle, jnp.broadcast_to(up, (3, 1))], axis=1)
    inside_disk = jnp.where(radius > 0, point[:2] / jnp.where(radius > 0, radius, 1), 0)
    cap_weights = _cap_weights(inside_disk[0], inside_disk[1])
    directions_b = select([rim, side], [jnp.broadcast_to(outward, (3, 3)), side_directions],
                              cap_directions)
    points_b = select([rim, side], [jnp.broadcast_to(closest, (3, 3)),
                                        jnp.concatenate([jnp.broadcast_to(radius * across, (3, 2)),
                                                         (ends * half_length)[:, None]], axis=1)],
                          jnp.concatenate([radius * rim_circle, jnp.broadcast_to(up * half_length, (3, 1))],
                                          axis=1))  # the supports of `directions_b`
    weights = select([rim, side], [jnp.array([1, 0, 0], dtype), jnp.stack([1 - along, along, zero])],
                         cap_weights)
    apart = is_apart(closest - point, resolution)
    kind = select([cap, apart & rim, apart], [NormalKind.FROM_FACE, NormalKind.SMOOTH,
                                                  NormalKind.FROM_CLOSEST], NormalKind.FIXED)
    return _held_contact(distance, normal, (directions_b, points_b, weights), select([rim, side], [1, 2], 3),
                         closest, kind)


def _held_contact(distance, normal, feature, count, closest, kind) -> Contact:
    """The contact of A's point core (its origin) with B's `feature` (B's frame: support directions
    (3, 3), their supports (3, 3), the closest point's weights (3,)) over its first `count` () slots;
    `normal` (3,) A's frame, `closest` (3,) B's point."""
    directions_b, points_b, weights = feature
    zeros = jnp.zeros((3, 3), normal.dtype)
    simplex = padded_simplex(jnp.broadcast_to(normal, (3, 3)), zeros, directions_b, points_b, weights,
                             jnp.arange(3) < count)
    return closed_contact(distance, normal, simplex, zeros[0], closest, kind)


def ellipsoid_closest(point, radii):
    """The point (3,) of the ellipsoid surface Σ x_i²/radii_i² = 1 closest to `point` (3,), inside or
    outside (the module docstring's method), and the unit outward normal (3,) there (ellipsoid frame;
    radii (3,) ≥ 0). A point on the least radius's principal plane whose closest point leaves that
    plane gets the one on its + side."""
    dtype = point.dtype
    y = jnp.abs(point)
    signs = jnp.where(point >= 0, 1, -1).astype(dtype)
    least = jnp.arange(3) == jnp.argmin(radii)
    # e_min and `low` written out, not `jnp.min`/`jnp.max`: 1.3x the sphere-ellipsoid rate (argmin and
    # the flags' reductions written out lost that again: a reduction is computed once, its inputs too).
    e_min = jnp.minimum(jnp.minimum(radii[0], radii[1]), radii[2])
    # e_i² − e_min², exactly zero on the least radius's axis and on those that tie with it (as a
    # difference of squares XLA may contract it to an FMA that leaves e_min²'s rounding error).
    d = (radii - e_min) * (radii + e_min)
    ey = radii * y
    low = jnp.maximum(jnp.maximum(jnp.maximum(ey[0] - d[0], ey[1] - d[1]), ey[2] - d[2]), 0)
    high = jnp.maximum(_root(dot(ey, ey)), low)

    def scaled(u):
        """w(u) (3,), and u + d (3,) with 1 where it is 0 (the least radius's axes at u = 0, where
        w_i is 0: the hard case, or a zero radius)."""
        positive = u + d > 0
        shifted_safe = jnp.where(positive, u + d, 1)
        return jnp.where(positive, ey / shifted_safe, 0), shifted_safe

    def newton(_, u):
        # ψ(u) = 1/|w| − 1, ψ'(u) = Σ w_i²/(u + d_i) / |w|³; every |w_i| ≤ 1 for u ≥ low.
        w, shifted_safe = scaled(u)
        length = _root(dot(w, w))
        slope = dot(w, w / shifted_safe)
        step = jnp.where(slope > 0, (length - 1) * length**2 / jnp.where(slope > 0, slope, 1), 0)
        return jnp.clip(u + step, low, high)

    u = jax.lax.fori_loop(0, ELLIPSOID_STEPS, newton, low)
    w, shifted_safe = scaled(u)
    hard = u <= 0
    fill = _root(1 - dot(w, w))
    w = jnp.where(hard & least, fill, w)
    closest = signs * radii * unit_vector(w)
    # The outward normal ∝ x_i / e_i² = y_i / (u + d_i), written without divisions by small numbers:
    # times u where u > 0; in the hard case times e_min (the least axis then holds w/e = fill/e_min),
    # or, where the ellipsoid is flat (e_min = 0: a disk, a needle, a point), the point's offset across
    # it, along the zero radii's axes (the closest point lies in the others' span).
    hard_normal = jnp.where(least, fill, jnp.where(d > 0, e_min * y / shifted_safe, 0))
    hard_normal = jnp.where(e_min > 0, hard_normal, jnp.where(d > 0, 0, y))
    normal = unit_vector(signs * jnp.where(hard, hard_normal, u * y / shifted_safe))
    return closest, jnp.where(jnp.any(normal != 0), normal, least.astype(dtype))


def point_ellipsoid(pair: RelativePair, core_a, core_b, resolution) -> Contact:
    """A point (A's origin) and B's core ellipsoid. The simplex holds B's feature: the closest point by
    its support direction (its outward normal) on the curved surface; where zero radii flatten the
    ellipsoid and the closest point lies inside the flat part, whose points all support the normal,
    that part: three rim points of a disk (its plane, as a cylinder's cap is held), the two ends of a
    needle, or the point itself."""
    del core_a
    dtype = pair.translation.dtype
    radii = core_b.radii
    point = -pair.rotation.T @ pair.translation
    closest, outward = ellipsoid_closest(point, radii)
    normal = -pair.rotation @ outward
    zero = radii == 0
    on_flat = jnp.any(zero) & jnp.all(zero | (outward == 0))
    disk, needle = on_flat & (jnp.sum(zero) == 1), on_flat & (jnp.sum(zero) == 2)

    # A disk across its zero axis k: in its plane's axes i, j, the rim point (e_i cos φ, e_j sin φ)
    # supports the direction (e_j cos φ, e_i sin φ), and the affine weights of the closest point are
    # the cap's (`point_cylinder`) at its coordinates in the unit circle.
    unit_i, unit_j = (jnp.roll(zero, shift).astype(dtype) for shift in (1, 2))  # axes k + 1, k + 2
    e_i, e_j = dot(radii, unit_i), dot(radii, unit_j)
    cos, sin = (jnp.asarray(_CAP_CIRCLE[:, k, None], dtype) for k in (0, 1))
    disk_directions = cos * e_j * unit_i + sin * e_i * unit_j
    disk_points = cos * e_i * unit_i + sin * e_j * unit_j
    disk_weights = _cap_weights(dot(closest, unit_i) / jnp.where(e_i > 0, e_i, 1),
                                dot(closest, unit_j) / jnp.where(e_j > 0, e_j, 1))
    # A needle along its one nonzero axis: its two ends, weighted by the closest point's place.
    along_axis = (~zero).astype(dtype)
    half = dot(radii, along_axis)
    ends = jnp.array([-1, 1, 1], dtype)[:, None] * along_axis
    along = jnp.where(half > 0, (dot(closest, along_axis) + half) / jnp.where(half > 0, 2 * half, 1), 0.5)

    directions_b = select([disk, needle], [disk_directions, ends], jnp.broadcast_to(outward, (3, 3)))
    points_b = select([disk, needle], [disk_points, ends * half], jnp.broadcast_to(closest, (3, 3)))
    weights = select([disk, needle], [disk_weights, by_slot(TRIANGLE_SLOTS, 1 - along, along)],
                     jnp.array([1, 0, 0], dtype))
    apart = is_apart(closest - point, resolution)
    kind = select([disk, on_flat & apart, apart], [NormalKind.FROM_FACE, NormalKind.FROM_CLOSEST,
                                                   NormalKind.SMOOTH], NormalKind.FIXED)
    return _held_contact(dot(outward, point - closest), normal, (directions_b, points_b, weights),
                         select([disk, needle], [3, 2], 1), closest, kind)
