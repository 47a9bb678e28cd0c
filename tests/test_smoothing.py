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


def smoothed(pose_b, method, scale, rotation_scale):
    """The smoothed signed distance of the two boxes (256 samples), B at `pose_b`."""
    return jg.smoothed_signed_distance(
        BOX, POSE_A, BOX, pose_b, key=jax.random.PRNGKey(0), num_samples=256, scale=scale,
        rotation_scale=rotation_scale, method=method, config=CONFIG)


# One compiled program per method for the value and one for the gradient w.r.t. B's pose: the noise
# scales are arguments, so every case of the file reuses them (one program per case and scale took
# eight compiles, ~7 s each on a 2-core CPU).
SMOOTHED = jax.jit(smoothed, static_argnames="method")
SMOOTHED_GRADIENT = jax.jit(jax.grad(smoothed), static_argnames="method")


@pytest.mark.parametrize("method", ["first_order", "zeroth_order"])
def test_small_noise_recovers_the_exact_value_and_gradient(method):
    pose_b = jg.Pose(jnp.array([2.5, 0.3, 0.1]), jnp.array([1.0, 0, 0, 0]))
    exact = jax.jit(lambda p: jg.signed_distance(BOX, POSE_A, BOX, p).distance)(pose_b)
    # Face-to-face boxes: any rotation brings a corner closer, so rotation noise is left out here.
    value = SMOOTHED(pose_b, method, 1e-4, 0.0)
    np.testing.assert_allclose(value, exact, atol=1e-8)
    gradient = SMOOTHED_GRADIENT(pose_b, method, 1e-3, 0.0).translation
    np.testing.assert_allclose(gradient, [1, 0, 0], atol=0.15 if method == "zeroth_order" else 1e-6)


def test_estimators_agree_and_are_informative_at_a_kink():
    # Face-to-face at a box corner region: the exact gradient jumps; the smoothed one blends.
    pose_b = jg.Pose(jnp.array([2.05, 2.0, 0.0]), jnp.array([1.0, 0, 0, 0]))
    first = SMOOTHED_GRADIENT(pose_b, "first_order", 0.1, 0.1).translation
    zeroth = SMOOTHED_GRADIENT(pose_b, "zeroth_order", 0.1, 0.1).translation
    assert np.all(np.isfinite(first)) and np.all(np.isfinite(zeroth))
    np.testing.assert_allclose(first, zeroth, atol=0.25)  # Monte Carlo, 256 samples
    assert first[0] > 0.1 and first[1] > 0.1  # both directions separate the boxes


def test_gradient_finite_at_touching_and_coincident():
    # Gradients are jitted here and above: eagerly, the loops' partial evaluation compiles operation
    # by operation (hundreds of small XLA programs, each holding memory mappings: see conftest).
    for translation in ([2.0, 0.0, 0.0], [0.0, 0.0, 0.0]):
        pose_b = jg.Pose(jnp.array(translation), jnp.array([1.0, 0, 0, 0]))
        for method in ("first_order", "zeroth_order"):
            grad = SMOOTHED_GRADIENT(pose_b, method, 0.01, 0.01)
            assert all(np.all(np.isfinite(leaf)) for leaf in jax.tree_util.tree_leaves(grad))
