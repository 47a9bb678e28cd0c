"""`_gate.compute_where`: a batch-wide skip that keeps per-pair results; `_gate.update_rows`: work on
the active rows only, gathered a few at a time; `_gate.vmapped_in_chunks`: a vmap run chunk by chunk,
with the values and derivatives of a plain one."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxgjk._gate import compute_where, update_rows, vmapped_in_chunks


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


def _halvings(x, scale, offset):
    """A loop whose trip count depends on the input (lanes finish apart), with a custom JVP, like the
    queries: the number of halvings of |x| · scale below 1, times x, plus an optional offset."""
    def count(y):
        return jax.lax.while_loop(lambda c: c[0] >= 1, lambda c: (c[0] / 2, c[1] + 1), (y, 0))[1]

    @jax.custom_jvp
    def f(x, scale):
        return x * count(jnp.abs(x) * scale)

    @f.defjvp
    def f_jvp(primals, tangents):
        x, scale = primals
        trips = count(jnp.abs(x) * scale)
        return x * trips, tangents[0] * trips + 0 * tangents[1]

    value = f(x, scale) * scale
    return {"value": value if offset is None else value + offset, "trips": count(jnp.abs(x) * scale)}


SHARED = (0, None, None)  # x batched, scale and offset shared


def test_vmapped_in_chunks_has_the_values_and_derivatives_of_a_plain_vmap():
    chunked = vmapped_in_chunks(_halvings, 4)
    rng = np.random.default_rng(0)
    for size in (1, 4, 5, 11):
        x = jnp.asarray(rng.uniform(-50, 50, size))
        for scale, offset, axes in ((2.0, None, SHARED), (jnp.linspace(1, 2, size), 0.5, (0, 0, None))):
            expected = jax.vmap(_halvings, in_axes=axes)(x, scale, offset)
            got = jax.jit(jax.vmap(chunked, in_axes=axes))(x, scale, offset)
            jax.tree_util.tree_map(np.testing.assert_array_equal, got, expected)

            def total(x, f, scale=scale, offset=offset, axes=axes):
                return jnp.sum(jax.vmap(f, in_axes=axes)(x, scale, offset)["value"] ** 2)

            np.testing.assert_array_equal(jax.jit(jax.grad(total), static_argnums=1)(x, chunked),
                                          jax.grad(total)(x, _halvings))
            np.testing.assert_array_equal(jax.jit(jax.jacfwd(total), static_argnums=1)(x, chunked),
                                          jax.jacfwd(total)(x, _halvings))
    # Chunks are visible as a loop over them, only above the chunk size; nested vmaps compose.
    assert "scan" not in str(jax.make_jaxpr(jax.vmap(chunked, in_axes=SHARED))(jnp.ones(4), 2.0, None))
    assert "scan" in str(jax.make_jaxpr(jax.vmap(chunked, in_axes=SHARED))(jnp.ones(5), 2.0, None))
    x = jnp.asarray(rng.uniform(-50, 50, (3, 7)))
    nested = jax.jit(jax.vmap(jax.vmap(chunked, in_axes=SHARED), in_axes=SHARED))(x, 2.0, None)
    expected = jax.vmap(jax.vmap(_halvings, in_axes=SHARED), in_axes=SHARED)(x, 2.0, None)
    np.testing.assert_array_equal(nested["value"], expected["value"])
