"""`_gate.compute_where`: a batch-wide skip that keeps per-pair results; `_gate.update_rows`: work on
the active rows only, gathered a few at a time."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxgjk._gate import compute_where, update_rows


def _counting_square():
    calls = []

    def square(active, x):
        def compute(operand):
            jax.debug.callback(lambda: calls.append(1))
            return operand**2

        return compute_where(active, compute, x)

    return square, calls


def test_values_where_active_zeros_elsewhere_one_pair_and_batched():
    square, _ = _counting_square()
    assert float(jax.jit(square)(True, 3.0)) == 9.0
    assert float(jax.jit(square)(False, 3.0)) == 0.0
    batched = jax.jit(jax.vmap(square))(jnp.array([True, False, True]), jnp.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(batched, [1.0, 0.0, 9.0])


def test_a_batch_without_active_pairs_skips_the_work():
    square, calls = _counting_square()
    kernel = jax.jit(jax.vmap(square))
    jax.block_until_ready(kernel(jnp.zeros(4, bool), jnp.arange(4.0)))
    jax.effects_barrier()
    assert calls == []
    jax.block_until_ready(kernel(jnp.arange(4) == 2, jnp.arange(4.0)))
    jax.effects_barrier()
    assert calls == [1]  # one trip for the whole batch


def test_update_rows_replaces_the_active_rows_only_in_trips_of_capacity():
    trips = []

    def negate_active(active, x):
        def compute(row):
            jax.debug.callback(lambda: trips.append(1))
            return -row

        return update_rows(active, compute, x, x, 2)

    kernel = jax.jit(negate_active)
    x = jnp.arange(7.0)
    active = jnp.array([False, True, True, False, True, False, True])
    np.testing.assert_array_equal(kernel(active, x), [0, -1, -2, 3, -4, 5, -6])
    jax.effects_barrier()
    assert trips == [1, 1]  # four active rows: two trips of two lanes
    trips.clear()
    np.testing.assert_array_equal(kernel(jnp.zeros(7, bool), x), x)
    jax.effects_barrier()
    assert trips == []
    # Under an outer vmap each member gathers its own rows; the busiest sets the trips.
    batched = jax.jit(jax.vmap(negate_active))(jnp.stack([active, jnp.arange(7) == 5]), jnp.stack([x, x]))
    np.testing.assert_array_equal(batched, [[0, -1, -2, 3, -4, 5, -6], [0, 1, 2, 3, 4, -5, 6]])
