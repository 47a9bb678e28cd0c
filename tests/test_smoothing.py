"""Randomized smoothing: tends to the exact signed distance, smooth gradients, both estimators agree."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgjk as jg

BOX = jg.Box(jnp.ones(3))
# Separated or shallow pairs only: a small EPA capacity keeps the compiled kernels small.
CONFIG = jg.Config(max_epa_iterations=24)
POSE_A = jg.Pose(jnp.zeros(3), jnp.array([1.0, 0, 0, 0]))


def smoothed(pose_b, method, scale, samples=256, rotation_scale=None):
    return jg.smoothed_signed_distance(
        BOX, POSE_A, BOX, pose_b, key=jax.random.PRNGKey(0), num_samples=samples, scale=scale,
        rotation_scale=scale if rotation_scale is None else rotation_scale, method=method,
        config=CONFIG)


@pytest.mark.parametrize("method", ["first_order", "zeroth_order"])
def test_small_noise_recovers_the_exact_value_and_gradient(method):
    pose_b = jg.Pose(jnp.array([2.5, 0.3, 0.1]), jnp.array([1.0, 0, 0, 0]))
    exact = jax.jit(lambda p: jg.signed_distance(BOX, POSE_A, BOX, p).distance)(pose_b)
    # Face-to-face boxes: any rotation brings a corner closer, so rotation noise is left out here.
    value = jax.jit(lambda p: smoothed(p, method, 1e-4, 256, 0.0))(pose_b)
    np.testing.assert_allclose(value, exact, atol=1e-8)
    gradient = jax.jit(jax.grad(lambda p: smoothed(p, method, 1e-3, 256, 0.0)))(pose_b).translation
    np.testing.assert_allclose(gradient, [1, 0, 0], atol=0.15 if method == "zeroth_order" else 1e-6)


def test_estimators_agree_and_are_informative_at_a_kink():
    # Face-to-face at a box corner region: the exact gradient jumps; the smoothed one blends.
    pose_b = jg.Pose(jnp.array([2.05, 2.0, 0.0]), jnp.array([1.0, 0, 0, 0]))
    first = jax.jit(jax.grad(lambda p: smoothed(p, "first_order", 0.1, 256)))(pose_b).translation
    zeroth = jax.jit(jax.grad(lambda p: smoothed(p, "zeroth_order", 0.1, 256)))(pose_b).translation
    assert np.all(np.isfinite(first)) and np.all(np.isfinite(zeroth))
    np.testing.assert_allclose(first, zeroth, atol=0.25)  # Monte Carlo, 256 samples
    assert first[0] > 0.1 and first[1] > 0.1  # both directions separate the boxes


def test_gradient_finite_at_touching_and_coincident():
    # Gradients are jitted here and above: eagerly, the loops' partial evaluation compiles operation
    # by operation (hundreds of small XLA programs, each holding memory mappings: see conftest).
    for translation in ([2.0, 0.0, 0.0], [0.0, 0.0, 0.0]):
        pose_b = jg.Pose(jnp.array(translation), jnp.array([1.0, 0, 0, 0]))
        for method in ("first_order", "zeroth_order"):
            grad = jax.jit(jax.grad(lambda p, m=method: smoothed(p, m, 0.01, 256)))(pose_b)
            assert all(np.all(np.isfinite(leaf)) for leaf in jax.tree_util.tree_leaves(grad))
