"""Skipping work that no pair of a batch needs, under `vmap` as well as for one pair."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def compute_where(active, compute, operands):
    """`compute(operands)` (a pytree) where `active` (() bool), zeros of the same structure elsewhere.

    Under `vmap` a `lax.cond` on a batched predicate becomes a select that runs both branches for every
    pair. A while loop of at most one trip keeps a batch-wide trip count instead: `vmap` turns its
    predicate into "any pair still running" and keeps each pair's carry where its own predicate is
    false, so the body runs once for the whole batch if some pair is `active` and not at all otherwise.
    `compute` must read its inputs from `operands` only: they travel in the loop's carry through an
    optimization barrier, which keeps XLA from hoisting the work out of the loop as loop-invariant.
    """
    zeros = jax.tree_util.tree_map(lambda leaf: jnp.zeros(leaf.shape, leaf.dtype),
                                   jax.eval_shape(compute, operands))

    def body(carry):
        _, carried, _ = jax.lax.optimization_barrier(carry)
        return jnp.zeros((), bool), carried, compute(carried)

    return jax.lax.while_loop(lambda carry: carry[0], body, (jnp.asarray(active), operands, zeros))[2]
