"""Dtype-aware numerical constants: the one place where tolerances are chosen."""

from __future__ import annotations

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
    """A positive number far below any meaningful squared length, far above underflow."""
    return float(jnp.finfo(dtype).tiny) * 1e6


def gjk_tolerance(dtype) -> float:
    """Default relative duality-gap tolerance of GJK.

    GJK stops once ``|v| - dot(v, w)/|v| <= tol * max|w|`` (van den Bergen 2004, §4.3.3), so the distance is
    within ``tol`` times the size of the Minkowski difference. float64: 1e-12; float32: 1e-6 (~8 eps).
    """
    return 1e-12 if np.dtype(dtype) == np.float64 else 1e-6


def epa_tolerance(dtype) -> float:
    """Default relative tolerance of EPA's gap between the nearest face and the new support point."""
    return 1e-11 if np.dtype(dtype) == np.float64 else 1e-5


def epa_iterations(dtype) -> int:
    """Default EPA iteration bound: float32 reaches its tolerance in fewer steps than float64."""
    return 96 if np.dtype(dtype) == np.float64 else 32
