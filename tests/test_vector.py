"""Array helpers of `_vector` against the NumPy/JAX functions they stand in for, under `jit` and `vmap`."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgjk._vector import gathered_rows, scattered_rows, true_indices, used_first


@pytest.mark.parametrize("length, size", [(1, 1), (5, 3), (56, 32), (168, 32), (20, 40)])
def test_true_indices_is_nonzero_with_a_size(rng, length, size):
    """Every density from none to all True, more True entries than `size` (cut) and fewer (filled)."""
    masks = rng.random((64, length)) < np.linspace(0, 1, 64)[:, None]
    fill = length + 3
    got = jax.jit(jax.vmap(lambda mask: true_indices(mask, size, fill)))(masks)
    for mask, indices in zip(masks, np.asarray(got), strict=True):
        expected = np.full(size, fill)
        found = np.flatnonzero(mask)[:size]
        expected[:len(found)] = found
        np.testing.assert_array_equal(indices, expected)
    assert got.dtype == jnp.int32


def test_used_first_is_a_stable_argsort(rng):
    masks = rng.random((64, 4)) < 0.5
    got = jax.jit(jax.vmap(used_first))(masks)
    np.testing.assert_array_equal(got, np.argsort(~masks, axis=1, kind="stable"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.bool_])
def test_gathered_and_scattered_rows_are_indexing(rng, dtype):
    """`rows[order]` and `zeros.at[order].set(rows)`, bit for bit (signed zeros, infinities and NaNs
    kept), for permutations and for repeated indices (the later row wins a scatter)."""
    rows = rng.normal(size=(64, 4, 3))
    rows[:, 0, 0], rows[:, 1, 1], rows[:, 2, 2], rows[:, 3, 0] = -0.0, np.inf, np.nan, 0.0
    rows = (rows > 0) if dtype == np.bool_ else rows.astype(dtype) if dtype != np.int32 else (
        rng.integers(-9, 9, size=(64, 4, 3)).astype(dtype))
    orders = np.concatenate([np.stack([rng.permutation(4) for _ in range(32)]),
                             rng.integers(0, 4, size=(32, 4))]).astype(np.int32)
    gathered = jax.jit(jax.vmap(gathered_rows))(rows, orders)
    scattered = jax.jit(jax.vmap(scattered_rows))(rows, orders)
    for row, order, got_gathered, got_scattered in zip(rows, orders, np.asarray(gathered),
                                                       np.asarray(scattered), strict=True):
        expected = np.zeros_like(row)
        for i, slot in enumerate(order):
            expected[slot] = row[i]
        assert got_gathered.tobytes() == row[order].tobytes()
        assert got_scattered.tobytes() == expected.tobytes()
    assert gathered.dtype == scattered.dtype == rows.dtype
    flat = jax.jit(jax.vmap(gathered_rows))(rows[:, :, 0], orders)  # rows (K,)
    np.testing.assert_array_equal(flat, np.take_along_axis(rows[:, :, 0], orders, axis=1))
