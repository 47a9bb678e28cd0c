"""Array helpers of `_vector` against the NumPy/JAX functions they stand in for, under `jit` and `vmap`."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgjk._features import MAX_FEATURE_VERTICES, _listed
from jaxgjk._vector import first_argmax, halving_max, running_count, true_indices, used_first


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


@pytest.mark.parametrize("length", [1, 40, 64, 65, 100, 408, 4999])
def test_running_count_is_cumsum(rng, length):
    """One product up to 64 entries, blocks of 8 beyond (a length that is not a multiple of 8 too;
    4999: blocks of blocks); every density, under `vmap` and for one mask."""
    masks = rng.random((64, length)) < np.linspace(0, 1, 64)[:, None]
    got = jax.jit(jax.vmap(running_count))(masks)
    np.testing.assert_array_equal(got, np.cumsum(masks, axis=1))
    np.testing.assert_array_equal(jax.jit(running_count)(masks[-1]), np.arange(1, length + 1))
    assert got.dtype == jnp.int32


def test_used_first_is_a_stable_argsort(rng):
    masks = rng.random((64, 4)) < 0.5
    got = jax.jit(jax.vmap(used_first))(masks)
    np.testing.assert_array_equal(got, np.argsort(~masks, axis=1, kind="stable"))


@pytest.mark.parametrize("length", [3, 8, 9, 32, 200])
def test_listed_is_nonzero_with_a_size(rng, length):
    """A feature's first vertex indices and their count, both of `_listed`'s forms (scalars up to 8
    entries, an array beyond), every density."""
    masks = rng.random((64, length)) < np.linspace(0, 1, 64)[:, None]
    indices, counts = jax.jit(jax.vmap(_listed))(masks)
    expected = jax.vmap(lambda mask: jnp.nonzero(mask, size=MAX_FEATURE_VERTICES, fill_value=-1)[0])(masks)
    np.testing.assert_array_equal(indices, expected)
    np.testing.assert_array_equal(counts, masks.sum(axis=1))
    assert indices.dtype == counts.dtype == jnp.int32


@pytest.mark.parametrize("length", [1, 2, 7, 9, 32, 33, 100])
def test_halving_max_and_first_argmax_are_max_and_argmax(rng, length):
    """Odd and even lengths, ties (rounded values), a NaN in some lanes, and -0 against +0."""
    values = np.round(rng.normal(size=(length, 64)), 1).astype(np.float32)
    values[rng.integers(length), :8] = np.nan
    values[:, 8:16] = np.where(rng.random((length, 8)) < 0.5, -0.0, 0.0)
    got_max = jax.jit(halving_max)(values)
    np.testing.assert_array_equal(got_max, np.max(values, axis=0))
    got_index = jax.jit(first_argmax)(values)
    nan_lane = np.isnan(values).any(axis=0)  # no entry equals a NaN maximum: index 0
    expected = np.where(nan_lane, 0, np.argmax(np.nan_to_num(values, nan=-np.inf), axis=0))
    np.testing.assert_array_equal(got_index, expected)
