"""Closest points between the primitive cores: points and segments (one pair, no loops).

Each function works on one pair of vectors in a common frame and returns the parameters of the closest
points, which the colliders (`_colliders`, `_scalar_pairs`) turn into witness points and simplices.
Points and segments are `Vec3`s of per-pair scalars (`_scalars`). Degenerate inputs (a segment of zero
length, parallel segments) are exact special cases, not divisions by zero: parallel segments give the
middle of their overlap, so a capsule lying on another gets a symmetric contact.
"""

from __future__ import annotations

import jax.numpy as jnp

from ._scalars import Vec3
from ._tolerance import PARALLEL_ROUNDINGS, epsilon


def safe_ratio(numerator, denominator):
    """numerator / denominator where the denominator is positive, else 0 (`numerator` finite).

    Zero by an infinite denominator, so that the division is the last operation: XLA:CPU computes a
    division once and reads it where it is used, where it copies the cheaper operations after it into
    every use (a closed-form query's every output)."""
    return numerator / jnp.where(denominator > 0, denominator, jnp.inf)


def point_segment(point: Vec3, start: Vec3, end: Vec3):
    """Parameter t () in [0, 1] of the point of the segment [start, end] closest to `point`."""
    direction = end - start
    return jnp.clip(safe_ratio((point - start).dot(direction), direction.dot(direction)), 0, 1)


def nearly_parallel(direction_p: Vec3, direction_q: Vec3):
    """Whether two directions are parallel to within rounding: |p × q| ≤ c·eps·|p|·|q| with c =
    `PARALLEL_ROUNDINGS` (then the closest points of segments along them are not unique to rounding,
    and their parallelogram of differences is flat to rounding). Zero directions count as parallel."""
    normal = direction_p.cross(direction_q)
    bound = PARALLEL_ROUNDINGS * epsilon(jnp.result_type(direction_p.x))
    lengths_sq = direction_p.dot(direction_p) * direction_q.dot(direction_q)
    return safe_ratio(normal.dot(normal), lengths_sq) <= bound**2


def segment_segment(start_p: Vec3, end_p: Vec3, start_q: Vec3, end_q: Vec3):
    """Parameters (s, t) () in [0, 1] of a closest pair P(s), Q(t) of the segments P = [start_p, end_p]
    and Q = [start_q, end_q]: P(s) = start_p + s (end_p − start_p).

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
    a, e, b = d_p.dot(d_p), d_q.dot(d_q), d_p.dot(d_q)
    c, f = d_p.dot(offset), d_q.dot(offset)
    normal = d_p.cross(d_q)
    s_skew = jnp.clip(safe_ratio(normal.dot(d_q.cross(offset)), normal.dot(normal)), 0, 1)
    # Parallel: the interval of P's parameter lying over Q (projections of Q's ends onto P's line).
    s_q0, s_q1 = safe_ratio(-c, a), safe_ratio(b - c, a)
    low = jnp.clip(jnp.minimum(s_q0, s_q1), 0, 1)
    high = jnp.clip(jnp.maximum(s_q0, s_q1), 0, 1)
    s = jnp.where(nearly_parallel(d_p, d_q), (low + high) / 2, s_skew)
    t = jnp.clip(safe_ratio(b * s + f, e), 0, 1)
    s = jnp.clip(safe_ratio(b * t - c, a), 0, 1)
    return s, t
