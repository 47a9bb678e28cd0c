"""Dtype-aware numerical constants and exact rescaling: the one place where tolerances, rounding
allowances and the loops' fixed capacities are chosen.

A rounding allowance is a count of roundings: the constant times `epsilon` of the dtype times the
scale the compared quantity is relative to (named at each constant). The counts are powers of two
with room above the few roundings each computation carries."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def float_dtype(*values) -> np.dtype:
    """The floating dtype that `values` promote to (float32 unless float64 inputs and x64 are on)."""
    dtype = jnp.result_type(*values) if values else jnp.result_type(float)
    if not jnp.issubdtype(dtype, jnp.floating):
        dtype = jnp.result_type(float)
    return np.dtype(dtype)


def epsilon(dtype) -> float:
    """Machine epsilon of `dtype` (2.2e-16 for float64, 1.2e-7 for float32)."""
    return float(jnp.finfo(dtype).eps)


def tiny(dtype) -> float:
    """The least squared length that is normalised: far below any meaningful squared length, yet
    large enough that derivatives of ``x / |x|`` (which carry ``|x|⁻³``) stay finite in `dtype`
    (float32: ~2e-23, float64: ~3e-203)."""
    return float(jnp.finfo(dtype).max) ** (-2 / 3) * 1e3


def power_of_two_scale(largest):
    """(scale, inverse): powers of two with ``largest * scale`` in [1, 2), kept normal numbers (within
    2^±(range − 3)), and 1 where `largest` is 0. Multiplying by them is exact, so quantities computed in
    those units are bit-for-bit the same wherever the original ones neither under- nor overflow:
    products of up to four lengths (areas, volumes) stay within float32's range at any scale."""
    finfo = jnp.finfo(largest.dtype)
    clipped = jnp.clip(jnp.where(largest > 0, largest, 1), 2.0 ** (finfo.minexp + 3),
                       2.0 ** (finfo.maxexp - 3))
    # 2^floor(log2 largest): the float's exponent bits with the mantissa cleared.
    integer = jnp.int32 if finfo.bits == 32 else jnp.int64
    exponent_bits = np.array(-(1 << finfo.nmant)).astype(integer)
    inverse = jax.lax.bitcast_convert_type(jax.lax.bitcast_convert_type(clipped, integer) & exponent_bits,
                                           largest.dtype)
    return 1 / inverse, inverse


# Rounding allowances (times epsilon and the scale named).
TOUCHING_ROUNDINGS = 64  # |signed distance| within this many roundings of the pair's scale is touching
# GJK's |v|² must shrink by more than this many roundings of itself, or the step made no progress.
GJK_PROGRESS_ROUNDINGS = 4
# A stall with w behind v's plane means contact only where |v| is within this many roundings of D's size.
STALL_CONTACT_ROUNDINGS = 256
# |ab × ac| carries ~eps·|ab|·|ac| of rounding: a triangle below this many is too flat to project on.
FLAT_TRIANGLE_ROUNDINGS = 16
# |p × q| ≤ this many roundings of |p||q|: parallel directions (segments' closest points not unique).
PARALLEL_ROUNDINGS = 16
# Dot products with one direction that tie within this many roundings of |direction|·max|vertex|.
VERTEX_TIE_ROUNDINGS = 16
# The two ends of a straight side (a segment's, a cylinder's side, a cone's slant) tie along a direction
# within this many roundings of |direction|·size: `_refine` reads them at a normal it put on the side's
# circle in another body's frame, through `Affine` maps (well inside the feature tolerances, 1e-6 and 1e-3).
SIDE_TIE_ROUNDINGS = 1024
# A map M is a similarity (MᵀM = s²I) where MᵀM is within this many roundings of s² of it.
SIMILARITY_ROUNDINGS = 16
# Separating-axis values of two boxes that tie within this many roundings of the pair's lengths.
BOX_AXIS_ROUNDINGS = 32
# A support point within this many roundings of the polytope's extent of a face's plane does not see it.
EPA_COPLANAR_ROUNDINGS = 16
# A new EPA face nearer than the nearest by more than the gap and this many roundings of D's size:
# rounding broke the polytope's convexity, and the step is refused.
EPA_CONSISTENCY_ROUNDINGS = 16
# EPA's gap within this many roundings of D's size: converged on a flat face (no curved gap left).
EPA_FLAT_GAP_ROUNDINGS = 8
# A refined normal is kept while g, a certified bound, drops by no more than this many roundings of the
# pair's size (a later, converged Newton step that ties is still taken).
REFINE_ACCEPT_ROUNDINGS = 16

# Fixed capacities of the loops' arrays.
# EPA runs in phases that end after these many steps (and at its iteration bound), each on arrays sized
# for its last step; a pair still running at the end of a phase moves on to the next, larger arrays.
# Two phases before the full arrays ran penetrating pairs 1.3-1.5x faster than one of 24 steps, for
# ~14% more compile (one more copy of the step; `benchmarks/results/session27/README.md`).
EPA_PHASE_STEPS = (16, 32)
EPA_MAX_HORIZON = 32  # horizon edges one EPA step can join to its new vertex (more: the step is refused)
EPA_FOLD_RINGS = 2  # rings of neighbours searched for faces that a new EPA vertex would fold over
NEWTON_STEPS = 2  # refinement steps: from the loops' ~√tol the error squares, 1e-6 → 1e-12 → rounding
MAX_STEP = 0.25  # radians; a refinement step further than this is cut to it (a trust region)
# On the CPU a vmapped signed query runs EPA on its overlapping pairs, this many at a time
# (`_gate.where_active`).
CPU_EPA_CHUNK = 2048
# ... and the pairs that an EPA phase leaves running, this many at a time into the next phase.
CPU_EPA_TAIL_CHUNK = 256
# On the CPU a vmapped `intersect` runs the solvers only on the pairs that a bound of the distance leaves
# undecided (`_solve.overlaps`): two boxes' exact contact (a closed form) this many at a time; the pairs
# through GJK `CPU_GJK_CHUNK` at a time.
CPU_INTERSECT_CHUNK = 256
# On the CPU a vmapped GJK loop runs with the batch as its last axis in groups of this many lanes
# (`_gjk._iterate`): a group's state stays in cache across its steps.
CPU_GJK_CHUNK = 4096
# Reductions over at most this many entries of one pair's arrays (a box's corners) are written as a
# chain of element-wise operations (`_vector.leading_max`): under vmap they become reductions over a
# short trailing axis, which XLA:CPU hands to a library kernel behind copies.
SHORT_REDUCTION = 8


def touching_resolution(scale):
    """The least |signed distance| () that a query tells apart from touching, for a pair of scale
    `scale` () (its relative offset and its shapes' reach, `_solve.prepare`): 64 roundings of it
    (1.4e-14·scale float64, 7.6e-6·scale float32). Every solver's result carries rounding errors of
    eps·scale times a small factor (~45 measured where GJK and EPA meet a cone's rim), so a smaller
    distance has no reliable sign; all three queries report it as touching
    (distance 0, INTERSECTING), whichever compiled program computed it."""
    return TOUCHING_ROUNDINGS * epsilon(scale.dtype) * scale


def gjk_tolerance(dtype) -> float:
    """Default relative duality-gap tolerance of GJK.

    GJK stops once ``|v| - dot(v, w)/|v| <= tol * max|w|`` (van den Bergen 2004, §4.3.3), so the distance is
    within ``tol`` times the size of the Minkowski difference. float64: 1e-12; float32: 1e-6 (~8 eps).
    """
    return 1e-12 if np.dtype(dtype) == np.float64 else 1e-6


def epa_tolerance(dtype) -> float:
    """Default relative tolerance of EPA's gap between the nearest face and the new support point.

    The depth is then within ``tol`` times the size of the Minkowski difference. On polytopes EPA ends
    exactly; on curved surfaces the gap shrinks by a roughly constant factor per step (each step cuts
    one small patch), so every extra digit costs ~6 steps: float64 stops at 1e-9, float32 at 1e-5.
    """
    return 1e-9 if np.dtype(dtype) == np.float64 else 1e-5


def epa_iterations(dtype) -> int:
    """Default EPA iteration bound, enough for the default tolerance on all but a few percent of pairs
    of two ellipsoids (the slowest case: p99 ~130 float64, ~65 float32 steps)."""
    return 128 if np.dtype(dtype) == np.float64 else 64


def feature_tolerance(dtype) -> float:
    """Default relative tolerance of the closest-feature reports: vertices within this fraction of the
    shape's size of the supporting plane belong to the feature (also an angle, in radians, for the
    flat parts of cylinders and cones). float64: 1e-6; float32: 1e-3 (normals are good to ~1e-5)."""
    return 1e-6 if np.dtype(dtype) == np.float64 else 1e-3
