"""Skipping work that no pair of a batch needs, under `vmap` as well as for one pair."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def traced_once(compute):
    """`compute` (a function of a pytree of arrays), traced once per shape of its operands: the gates
    below call it several times on one pair's shapes (for its output shapes, in a loop's body, for one
    pair and under `vmap`), and nested gates multiply those traces. Later calls and `vmap` work on the
    traced program (`jax.jit` keeps it; `inline` puts its operations in the caller's program, so the
    compiled program is the same)."""
    return jax.jit(compute, inline=True)


def compute_where(active, compute, operands):
    """`compute(operands)` (a pytree) where `active` (() bool), zeros of the same structure elsewhere.

    Under `vmap` a `lax.cond` on a batched predicate becomes a select that runs both branches for every
    pair. A while loop of at most one trip keeps a batch-wide trip count instead: `vmap` turns its
    predicate into "any pair still running" and keeps each pair's carry where its own predicate is
    false, so the body runs once for the whole batch if some pair is `active` and not at all otherwise.
    `compute` must read its inputs from `operands` only: they travel in the loop's carry through an
    optimization barrier, which keeps XLA from hoisting the work out of the loop as loop-invariant.
    """
    compute = traced_once(compute)
    active = jnp.asarray(active)
    # Zeros batched like `active` under `vmap` (a select between two zeros: the same values), so
    # that the loop's batching rule settles its carry's layout in one pass over `compute`, not two.
    zeros = jax.tree_util.tree_map(
        lambda leaf: jnp.where(active, jnp.zeros(leaf.shape, leaf.dtype), jnp.zeros((), leaf.dtype)),
        jax.eval_shape(compute, operands))

    def body(carry):
        _, carried, _ = jax.lax.optimization_barrier(carry)
        return jnp.zeros((), bool), carried, compute(carried)

    return jax.lax.while_loop(lambda carry: carry[0], body, (active, operands, zeros))[2]


def update_rows(active, compute_rows, operands, outputs, capacity: int):
    """`outputs` (a pytree, leading axis T on every leaf) with each row where `active` (T,) bool replaced
    by what `compute_rows` gives for that row of `operands` (a pytree, leading axis T): `compute_rows`
    maps a group of rows of the operands (leading axis `capacity`) to the same rows of `outputs` (a
    one-row function under `jax.vmap`, or a loop written for a batch, as GJK's).

    The active rows are gathered `capacity` at a time and `compute_rows` runs on those lanes only, in
    a loop of ceil(count / capacity) trips (none where no row is active). Under an outer `vmap` the loop
    runs as many trips as the batch's busiest member needs. Lanes past the last active row recompute the
    last row and are dropped. Not differentiable (a while loop): use it for primal work only.
    """
    size = active.shape[0]
    capacity = max(1, min(capacity, size))
    count = jnp.sum(active, dtype=jnp.int32)

    def update(outputs):
        order = jnp.nonzero(active, size=size + capacity, fill_value=size)[0].astype(jnp.int32)

        def body(carry):
            start, outputs = carry
            rows = jax.lax.dynamic_slice(order, (start,), (capacity,))
            taken = jax.tree_util.tree_map(lambda leaf: leaf[jnp.minimum(rows, size - 1)], operands)
            computed = compute_rows(taken)
            outputs = jax.tree_util.tree_map(lambda out, new: out.at[rows].set(new, mode="drop"), outputs,
                                             computed)
            return start + capacity, outputs

        return jax.lax.while_loop(lambda carry: carry[0] < count, body,
                                  (jnp.zeros((), jnp.int32), outputs))[1]

    # The active rows' indices (a running count and a scatter over the whole batch) only where there
    # are any: a batch that `where_active` finds all decided skips them.
    return jax.lax.cond(count > 0, update, lambda outputs: outputs, outputs)


def with_batch_rule(one_pair, batched, operands):
    """`one_pair(operands)` (a pytree of one pair's arrays), whose `vmap` runs
    `batched(axis_size, operands, flags)` instead (`jax.custom_batching.custom_vmap`): `flags` has the
    structure of `operands` with a bool per leaf, whether it carries the batch axis (leading); `batched`
    returns the outputs with the batch axis leading on every leaf. A `vmap` over no batched operand
    (a forward-mode rule's) runs `one_pair`.
    """
    # On the flat leaves: `custom_vmap`'s forward-mode rule fails on None subtrees (jax #9066).
    leaves, tree = jax.tree_util.tree_flatten(operands)

    def flat_one_pair(*leaves):
        return one_pair(jax.tree_util.tree_unflatten(tree, leaves))

    wrapped = jax.custom_batching.custom_vmap(flat_one_pair)

    @wrapped.def_vmap
    def rule(axis_size, in_batched, *leaves):
        # Outside `jit` a batched leaf arrives as the user gave it, possibly a NumPy array, which a
        # traced index (the batched rule's row gathers) cannot index.
        leaves = [jnp.asarray(leaf) for leaf in leaves]
        if not any(in_batched):  # the same pair in every lane
            outputs = flat_one_pair(*leaves)
            return outputs, jax.tree_util.tree_map(lambda _: False, outputs)
        outputs = batched(axis_size, jax.tree_util.tree_unflatten(tree, leaves),
                          jax.tree_util.tree_unflatten(tree, in_batched))
        return outputs, jax.tree_util.tree_map(lambda _: True, outputs)

    return wrapped(*leaves)


def broadcast_lanes(tree, flags, axis_size: int):
    """`tree` with the batch axis (leading, `axis_size`) on every leaf: those not batched (`flags`, a
    bool per leaf) broadcast."""
    return jax.tree_util.tree_map(
        lambda leaf, batched: leaf if batched else jnp.broadcast_to(leaf, (axis_size,) + jnp.shape(leaf)),
        tree, flags)


def split_shared(tree, flags):
    """The batched leaves of `tree` (a list, in order; `flags` a bool per leaf) and `rebuild`, which
    makes the tree again from such a list (a row of it, or a group of rows) and the shared leaves:
    shared operands (a robot's hulls) stay out of gathered or grouped rows."""
    leaves, definition = jax.tree_util.tree_flatten(tree)
    leaf_flags = jax.tree_util.tree_leaves(flags)

    def rebuild(rows):
        rows = iter(rows)
        return jax.tree_util.tree_unflatten(definition, [
            next(rows) if batched else leaf for leaf, batched in zip(leaves, leaf_flags, strict=True)])

    return [leaf for leaf, batched in zip(leaves, leaf_flags, strict=True) if batched], rebuild


def where_active(active, compute, operands, outputs, capacity: int):
    """One pair's `compute(operands)` where `active` (() bool), else `outputs` (a pytree of its
    structure). Under `vmap` it becomes `update_rows` over the batch (`jax.custom_batching.custom_vmap`):
    only the active lanes run `compute`, gathered `capacity` at a time, so a lane waits for the slowest
    of its group, not of the whole batch, and inactive lanes cost nothing. Values, forward-mode
    derivatives and nested `vmap` as a plain `vmap`; no reverse mode (a while loop, as `update_rows`):
    primal work, such as a query's loops under its custom JVP.
    """
    compute = traced_once(compute)

    def one_pair(operands):
        active, operands, outputs = operands
        return jax.tree_util.tree_map(lambda new, old: jnp.where(active, new, old), compute(operands),
                                      outputs)

    def batched(axis_size, operands, flags):
        (active, operands, outputs), (active_flag, operand_flags, output_flags) = operands, flags
        rows, rebuild = split_shared(operands, operand_flags)
        return update_rows(broadcast_lanes(active, active_flag, axis_size),
                           jax.vmap(lambda row: compute(rebuild(row))), rows,
                           broadcast_lanes(outputs, output_flags, axis_size), capacity)

    return with_batch_rule(one_pair, batched, (active, operands, outputs))
