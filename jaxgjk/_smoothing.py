"""Randomized smoothing of the signed distance (Montaut, Le Lidec, Petrik, Sivic, Carpentier 2023,
"Differentiable collision detection: a randomized smoothing approach").

The smoothed distance is the expectation of the signed distance over Gaussian perturbations of B's pose:
translation ``t_B + scale·ε`` and rotation ``q_B ⊗ exp(rotation_scale·η)``. Its gradient is informative
where the exact gradient is piecewise constant (polytope faces) or undefined (feature changes).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from ._pose import Pose, _quaternion_multiply
from ._queries import signed_distance

_METHODS = ("first_order", "zeroth_order")


def _rotation_quaternion(rotation_vector):
    """Unit quaternion (4,) of the rotation vector (3,) (axis · angle), smooth at zero."""
    angle_sq = jnp.sum(rotation_vector**2)
    safe = angle_sq > 0
    angle = jnp.sqrt(jnp.where(safe, angle_sq, 1))
    # sin(θ/2)/θ → 1/2 at θ = 0 (double where keeps reverse mode NaN-free).
    half_sinc = jnp.where(safe, jnp.sin(angle / 2) / angle, 0.5)
    return jnp.concatenate([jnp.cos(jnp.where(safe, angle, 0) / 2)[None], half_sinc * rotation_vector])


def _perturbed_distances(a, pose_a, b, pose_b, translation_noise, rotation_noise, config):
    """Signed distances (S,) with B's pose perturbed by each row of the noises (S, 3)."""
    def one(dt, dr):
        rotation = _quaternion_multiply(pose_b.unit_rotation(), _rotation_quaternion(dr))
        return signed_distance(a, pose_a, b, Pose(pose_b.translation + dt, rotation),
                               config=config).distance

    return jax.vmap(one)(translation_noise, rotation_noise)


@functools.partial(jax.custom_jvp, nondiff_argnums=(6, 7))
def _zeroth_order(a, pose_a, b, pose_b, translation_noise, rotation_noise, scale, config):
    return jnp.mean(_perturbed_distances(a, pose_a, b, pose_b, translation_noise, rotation_noise,
                                         config))


@_zeroth_order.defjvp
def _zeroth_order_jvp(scale, config, primals, tangents):
    a, pose_a, b, pose_b, translation_noise, rotation_noise = primals
    da, dpose_a, db, dpose_b = tangents[:4]
    # The other inputs (rotations, shape fields) take the mean exact derivative; one jvp gives the
    # values as well, so the perturbed queries run once.
    frozen = (da, Pose(jnp.zeros_like(dpose_a.translation), dpose_a.rotation), db,
              Pose(jnp.zeros_like(dpose_b.translation), dpose_b.rotation))
    values, d_values = jax.jvp(
        lambda *args: _perturbed_distances(*args, translation_noise, rotation_noise, config),
        (a, pose_a, b, pose_b), frozen)
    # Gaussian-smoothing estimator for translations (the noise comes in antithetic pairs, which
    # cancels the baseline): ∇_t E[f(t + σε)] = E[f(t + σε) ε] / σ. Moving A by dt moves B by −dt
    # relative to it.
    gradient_b = jnp.mean(values[:, None] * translation_noise, axis=0) / scale**2
    d_translation = jnp.dot(gradient_b, dpose_b.translation - dpose_a.translation)
    return jnp.mean(values), d_translation + jnp.mean(d_values)


def smoothed_signed_distance(a, pose_a, b, pose_b, *, key, num_samples: int = 32, scale=1e-2,
                             rotation_scale=0.0, method: str = "first_order", config=None):
    """Signed distance () averaged over Gaussian perturbations of B's pose; differentiable.

    Args:
        a, pose_a, b, pose_b: as `signed_distance` (one pair).
        key: a `jax.random` key; the same key gives the same samples (a deterministic function).
        num_samples: number of perturbations (rounded up to even: the samples come in ± pairs).
        scale: standard deviation of the translation noise (length units).
        rotation_scale: standard deviation of the rotation noise (radians, rotation vector in B's frame).
        method: "first_order" — the gradient is the mean of exact gradients at the perturbed poses;
            "zeroth_order" — the translation gradient is the Gaussian-smoothing estimator
            E[f(t + σε) ε]/σ, which needs only distance values (other inputs: mean exact gradients).
    """
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    half = (num_samples + 1) // 2
    key_t, key_r = jax.random.split(key)
    dtype = jnp.result_type(pose_b.translation)
    translation = scale * jax.random.normal(key_t, (half, 3), dtype)
    rotation = rotation_scale * jax.random.normal(key_r, (half, 3), dtype)
    translation = jnp.concatenate([translation, -translation])
    rotation = jnp.concatenate([rotation, -rotation])
    if method == "first_order":
        return jnp.mean(_perturbed_distances(a, pose_a, b, pose_b, translation, rotation, config))
    return _zeroth_order(a, pose_a, b, pose_b, translation, rotation, scale, config)
