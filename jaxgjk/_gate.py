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


def update_rows(active, compute, operands, outputs, capacity: int):
    """`outputs` (a pytree, leading axis T on every leaf) with each row where `active` (T,) bool replaced
    by `compute` of that row of `operands` (a pytree, leading axis T): `compute` maps one row's operands
    to one row of `outputs`.

    The active rows are gathered `capacity` at a time and `compute` runs vmapped on those lanes only, in
    a loop of ceil(count / capacity) trips (none where no row is active). Under an outer `vmap` the loop
    runs as many trips as the batch's busiest member needs. Lanes past the last active row recompute the
    last row and are dropped. Not differentiable (a while loop): use it for primal work only.
    """
    size = active.shape[0]
    capacity = max(1, min(capacity, size))
    order = jnp.nonzero(active, size=size + capacity, fill_value=size)[0].astype(jnp.int32)

    def body(carry):
        start, outputs = carry
        rows = jax.lax.dynamic_slice(order, (start,), (capacity,))
        taken = jax.tree_util.tree_map(lambda leaf: leaf[jnp.minimum(rows, size - 1)], operands)
        computed = jax.vmap(compute)(taken)
        outputs = jax.tree_util.tree_map(lambda out, new: out.at[rows].set(new, mode="drop"), outputs,
                                         computed)
        return start + capacity, outputs

    count = jnp.sum(active, dtype=jnp.int32)
    return jax.lax.while_loop(lambda carry: carry[0] < count, body, (jnp.zeros((), jnp.int32), outputs))[1]


def vmapped_in_chunks(function, chunk: int):
    """`function` (of pytrees of arrays, one pair) whose `vmap` over more than `chunk` pairs runs as a
    loop over equal chunks of at most `chunk` pairs (the last pair repeated to fill the last one), each
    chunk one `vmap` of `function` (`jax.custom_batching.custom_vmap`; the values of a plain `vmap`).

    On XLA:CPU a loop state of 65 536 pairs streams through memory once per fused op and every pair
    waits for the batch's slowest, while a chunk's stays in cache and waits for its own slowest.
        """
    def call(*args):
        # On the flat leaves: `custom_vmap`'s forward-mode rule fails on None subtrees (jax #9066).
        leaves, tree = jax.tree_util.tree_flatten(args)

        def on_leaves(*leaves):
            return function(*jax.tree_util.tree_unflatten(tree, leaves))

        wrapped = jax.custom_batching.custom_vmap(on_leaves)

        @wrapped.def_vmap
        def rule(axis_size, in_batched, *leaves):
            if not any(in_batched):  # the same pair in every lane (a forward-mode rule's)
                outputs = on_leaves(*leaves)
                return outputs, jax.tree_util.tree_map(lambda _: False, outputs)
            in_axes = [0 if batched else None for batched in in_batched]
            count = -(-axis_size // chunk)
            width = -(-axis_size // count)

            def on_rows(rows):
                rows = iter(rows)
                chunk_leaves = [next(rows) if batched else leaf
                                for leaf, batched in zip(leaves, in_batched, strict=True)]
                return jax.vmap(on_leaves, in_axes=in_axes)(*chunk_leaves)

            rows = [leaf for leaf, batched in zip(leaves, in_batched, strict=True) if batched]
            if count == 1:
                outputs = on_rows(rows)
            else:
                filled = count * width
                rows = [jnp.concatenate([row, jnp.repeat(row[-1:], filled - axis_size, axis=0)])
                        .reshape((count, width) + row.shape[1:]) for row in rows]
                outputs = jax.tree_util.tree_map(
                    lambda leaf: leaf.reshape((filled,) + leaf.shape[2:])[:axis_size],
                    jax.lax.map(on_rows, rows))
            return outputs, jax.tree_util.tree_map(lambda _: True, outputs)

        return wrapped(*leaves)

    return call
