"""`_gate.compute_where`: a batch-wide skip that keeps per-pair results; `_gate.update_rows`: work on
the active rows only, gathered a few at a time; `_gate.where_active`: one pair's choice that `vmap`
turns into `update_rows`, with the values and derivatives of a plain `vmap`; `_gate.with_batch_rule`:
a batch rule that takes the arrays a `vmap` outside `jit` gives it."""

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxgjk._gate import compute_where, update_rows, where_active, with_batch_rule


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


def _halvings(x, scale):
    """A loop whose trip count depends on the input (lanes finish apart), with a custom JVP, like the
    queries: x times the number of halvings of |x| · scale below 1, times scale."""
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

    return {"value": f(x, scale) * scale, "trips": count(jnp.abs(x) * scale)}


def _halvings_where_positive(x, scale, fallback, where):
    return where(x > 0, lambda operands: _halvings(*operands), (x, scale),
                 {"value": fallback, "trips": jnp.zeros((), jnp.int32)})


def _plain_where(active, compute, operands, outputs):
    return jax.tree_util.tree_map(lambda new, old: jnp.where(active, new, old), compute(operands), outputs)


SHARED = (0, None, None)  # x batched, scale and fallback shared


def test_where_active_has_the_values_and_derivatives_of_a_plain_vmap():
    gathered = functools.partial(_halvings_where_positive, where=functools.partial(where_active, capacity=4))
    plain = functools.partial(_halvings_where_positive, where=_plain_where)
    rng = np.random.default_rng(0)
    for size in (1, 4, 5, 11):
        x = jnp.asarray(rng.uniform(-50, 50, size))
        for scale, fallback, axes in ((2.0, 0.5, SHARED), (jnp.linspace(1, 2, size), x**2, (0, 0, 0))):
            expected = jax.jit(jax.vmap(plain, in_axes=axes))(x, scale, fallback)
            got = jax.jit(jax.vmap(gathered, in_axes=axes))(x, scale, fallback)
            jax.tree_util.tree_map(np.testing.assert_array_equal, got, expected)

            # Forward mode only: the gathering loop is primal work (a query's custom JVP holds it).
            def total(x, f, scale=scale, fallback=fallback, axes=axes):
                return jnp.sum(jax.vmap(f, in_axes=axes)(x, scale, fallback)["value"] ** 2)

            np.testing.assert_array_equal(jax.jit(jax.jacfwd(total), static_argnums=1)(x, gathered),
                                          jax.jit(jax.jacfwd(total), static_argnums=1)(x, plain))
    x = jnp.asarray(rng.uniform(-50, 50, (3, 7)))
    nested = jax.jit(jax.vmap(jax.vmap(gathered, in_axes=SHARED), in_axes=SHARED))(x, 2.0, 0.5)
    expected = jax.vmap(jax.vmap(plain, in_axes=SHARED), in_axes=SHARED)(x, 2.0, 0.5)
    np.testing.assert_array_equal(nested["value"], expected["value"])
    # One pair: `compute` where active, the fallback elsewhere.
    assert float(gathered(jnp.asarray(-3.0), 2.0, 0.5)["value"]) == 0.5


def test_batch_rule_gathers_rows_of_numpy_arrays_outside_jit():
    """Outside `jit`, `vmap` hands a batch rule the arrays as the caller gave them (NumPy here, as when
    a `Packed` shape is built inside the vmapped function from NumPy fields); the rule's gathers of
    rows by traced indices must work on them (they raised TracerArrayConversionError)."""
    def one_pair(x):
        return 2 * x

    def batched(axis_size, x, flags):
        del flags
        return update_rows(jnp.ones(axis_size, bool), lambda rows: 2 * rows, x, jnp.zeros(x.shape), 2)

    doubled = jax.vmap(lambda x: with_batch_rule(one_pair, batched, x))(np.arange(5.0))
    np.testing.assert_array_equal(doubled, 2 * np.arange(5.0))
