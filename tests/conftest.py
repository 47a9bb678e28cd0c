"""Test configuration: float64 available (inputs choose the dtype), a seeded generator per test."""

import os
import sys

import jax
import numpy as np
import pytest

jax.config.update("jax_enable_x64", True)
sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture
def rng(request):
    """A NumPy generator seeded from the test's name (stable across runs; printed on failure)."""
    seed = sum(map(ord, request.node.name)) % 2**32
    request.node.user_properties.append(("seed", seed))
    return np.random.default_rng(seed)
