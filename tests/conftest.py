"""Test configuration: float64 available (inputs choose the dtype), a seeded generator per test, compiled
programs released after each test module."""

import gc

import jax
import numpy as np
import pytest

jax.config.update("jax_enable_x64", True)


@pytest.fixture
def rng(request):
    """A NumPy generator seeded from the test's name (stable across runs; printed on failure)."""
    seed = sum(map(ord, request.node.name)) % 2**32
    request.node.user_properties.append(("seed", seed))
    return np.random.default_rng(seed)


@pytest.fixture(autouse=True, scope="module")
def release_compiled_programs():
    """Drop every compiled program once a module is done. XLA:CPU maps each kernel of a program into
    memory separately (~200-1000 mappings per query compiled), and a process has at most
    vm.max_map_count (65530) of them: a whole test run in one process hit it and LLVM segfaulted
    while compiling."""
    yield
    jax.clear_caches()
    gc.collect()
