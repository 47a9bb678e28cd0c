"""Trace-time checks of argument shapes and dtypes, and run-time validity tests shared by the shapes."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def check_array(name: str, value, shape: tuple, *, floating: bool = True) -> None:
    """Raise at trace time unless `value` is a real (or, with ``floating=False``, bool) array of `shape`.

    A ``None`` entry of `shape` matches any positive length. Queries take one pair: batch axes are
    rejected here, with a pointer to `jax.vmap`.
    """
    dtype = jnp.result_type(value)
    if floating and not (np.issubdtype(dtype, np.floating) or np.issubdtype(dtype, np.integer)):
        raise TypeError(f"{name} must hold real numbers, got dtype {dtype}")
    if not floating and dtype != np.bool_:
        raise TypeError(f"{name} must be a bool array, got dtype {dtype}")
    got = tuple(np.shape(value))
    matches = len(got) == len(shape) and all(
        (want is None and size > 0) or want == size for want, size in zip(shape, got, strict=True)
    )
    if not matches:
        wanted = tuple("N" if want is None else want for want in shape)
        raise ValueError(
            f"{name} must have shape {wanted}, got {got} (queries take one pair; batch with "
            "jax.vmap or jaxgjk.pairwise / jaxgjk.pairs)"
        )


def is_nonnegative(*values):
    """() bool: every entry of `values` finite and ≥ 0."""
    return jnp.all(jnp.stack([jnp.all((v >= 0) & jnp.isfinite(v)) for v in values]))


def float_leaves(tree) -> list:
    """The leaves of `tree` that are not boolean (masks are bool)."""
    return [leaf for leaf in jax.tree_util.tree_leaves(tree) if jnp.result_type(leaf) != jnp.bool_]
