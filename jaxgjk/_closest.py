"""Closest points between the primitive cores: points, segments and boxes (one pair, no loops).

Each function works on one pair of (3,) vectors in a common frame and returns the parameters of the
closest points, which the colliders (`_colliders`) turn into witness points and simplices. Degenerate
inputs (a segment of zero length, parallel segments, a box of zero extent) are exact special cases, not
divisions by zero: parallel segments give the middle of their overlap, so a capsule lying on another
gets a symmetric contact.
"""

from __future__ import annotations

import jax.numpy as jnp

from ._tolerance import PARALLEL_ROUNDINGS, epsilon
from ._vector import dot


def _safe_ratio(numerator, denominator):
    """numerator / denominator where the denominator is positive, else 0."""
    positive = denominator > 0
    return jnp.where(positive, numerator / jnp.where(positive, denominator, 1), 0)


def point_segment(point, start, end):
    """Parameter t () in [0, 1] of the point of the segment [start, end] closest to `point` (3,)."""
    direction = end - start
    return jnp.clip(_safe_ratio(dot(point - start, direction), dot(direction, direction)), 0, 1)


def nearly_parallel(direction_p, direction_q):
    """Whether two directions (3,) are parallel to within rounding: |p × q| ≤ c·eps·|p|·|q| with c =
    `PARALLEL_ROUNDINGS` (then the closest points of segments along them are not unique to rounding,
    and their parallelogram of differences is flat to rounding). Zero directions count as parallel."""
    normal = jnp.cross(direction_p, direction_q)
    bound = PARALLEL_ROUNDINGS * epsilon(jnp.result_type(direction_p))
    return dot(normal, normal) <= bound**2 * dot(direction_p, direction_p) * dot(direction_q, direction_q)


def segment_segment(start_p, end_p, start_q, end_q):
    """Parameters (s, t) () in [0, 1] of a closest pair P(s), Q(t) of the segments P = [start_p, end_p]
    and Q = [start_q, end_q] (3,) each: P(s) = start_p + s (end_p − start_p).

    The squared distance is a convex quadratic on the unit square: its unconstrained minimiser's s,
    clamped, then the t nearest P(s), clamped, then the s nearest Q(t), clamped, is a minimiser. The
    minimiser's s is ``(d_p × d_q)·(d_q × r) / |d_p × d_q|²`` (r = start_p − start_q; Lagrange's
    identity turns the usual ``(b f − c e)/(a e − b²)`` into cross products, which keep their relative
    accuracy for nearly parallel segments, where the dot-product form cancels). Parallel segments
    (within rounding): the middle of the part of P that lies over Q, or the nearest ends where they do
    not overlap. A point-like segment is projected onto the other.
    """
    d_p, d_q = end_p - start_p, end_q - start_q
    offset = start_p - start_q
    a, e, b = dot(d_p, d_p), dot(d_q, d_q), dot(d_p, d_q)
    c, f = dot(d_p, offset), dot(d_q, offset)
    normal = jnp.cross(d_p, d_q)
    s_skew = jnp.clip(_safe_ratio(dot(normal, jnp.cross(d_q, offset)), dot(normal, normal)), 0, 1)
    # Parallel: the interval of P's parameter lying over Q (projections of Q's ends onto P's line).
    s_q0, s_q1 = _safe_ratio(-c, a), _safe_ratio(b - c, a)
    low = jnp.clip(jnp.minimum(s_q0, s_q1), 0, 1)
    high = jnp.clip(jnp.maximum(s_q0, s_q1), 0, 1)
    s = jnp.where(nearly_parallel(d_p, d_q), (low + high) / 2, s_skew)
    t = jnp.clip(_safe_ratio(b * s + f, e), 0, 1)
    s = jnp.clip(_safe_ratio(b * t - c, a), 0, 1)
    return s, t


def point_box(point, half_extents):
    """The point of the box [−h, h] (h = `half_extents` (3,)) closest to `point` (3,) (box frame), and
    whether `point` lies inside (closed box)."""
    closest = jnp.clip(point, -half_extents, half_extents)
    return closest, jnp.all(jnp.abs(point) <= half_extents)
