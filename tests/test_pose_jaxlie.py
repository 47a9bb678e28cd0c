"""Pose ↔ jaxlie's SE3 layout (``wxyz_xyz``: [qw, qx, qy, qz, x, y, z]): without jaxlie (arrays and a
duck-typed object), and against jaxlie itself where it is installed (the test extra brings it)."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgjk as jg


def _random_layout(rng, *batch):
    quaternions = rng.normal(size=(*batch, 4))
    quaternions /= np.linalg.norm(quaternions, axis=-1, keepdims=True)
    return np.concatenate([quaternions, rng.normal(size=(*batch, 3))], axis=-1)


def test_round_trip_without_jaxlie(rng):
    layout = _random_layout(rng, 5)
    pose = jg.Pose.from_wxyz_xyz(jnp.asarray(layout))
    np.testing.assert_array_equal(pose.rotation, layout[:, :4])
    np.testing.assert_array_equal(pose.translation, layout[:, 4:])
    np.testing.assert_array_equal(pose.wxyz_xyz, layout)

    @dataclasses.dataclass
    class FakeSE3:  # anything with a `wxyz_xyz` attribute, as jaxlie.SE3 has
        wxyz_xyz: np.ndarray

    np.testing.assert_array_equal(jg.Pose.from_wxyz_xyz(FakeSE3(layout[0])).wxyz_xyz, layout[0])
    with pytest.raises(ValueError, match=r"\(\.\.\., 7\)"):
        jg.Pose.from_wxyz_xyz(jnp.zeros(6))


def test_layout_is_differentiable(rng):
    layout = jnp.asarray(_random_layout(rng))
    point = jnp.asarray(rng.normal(size=3))
    grad = jax.grad(lambda v: jnp.sum(jg.Pose.from_wxyz_xyz(v).apply(point)))(layout)
    np.testing.assert_allclose(grad[4:], np.ones(3))  # d(sum of R p + t)/dt


def test_matches_jaxlie(rng):
    jaxlie = pytest.importorskip("jaxlie")
    layout = jnp.asarray(_random_layout(rng, 4))
    points = jnp.asarray(rng.normal(size=(4, 3)))
    se3 = jaxlie.SE3(layout)
    pose = jg.Pose.from_wxyz_xyz(se3)
    np.testing.assert_allclose(pose.apply(points), jax.vmap(lambda t, p: t.apply(p))(se3, points), atol=1e-12)
    np.testing.assert_allclose(pose.rotation_matrix(), se3.rotation().as_matrix(), atol=1e-12)
    other = jaxlie.SE3(jnp.asarray(_random_layout(rng, 4)))
    composed = pose.compose(jg.Pose.from_wxyz_xyz(other))
    expected = jax.vmap(lambda a, b: a @ b)(se3, other)
    np.testing.assert_allclose(composed.apply(points), jax.vmap(lambda t, p: t.apply(p))(expected, points),
                               atol=1e-12)
    ours = jg.Pose.from_euler_xyz(jnp.array([0.1, 0.2, 0.3]), jnp.ones(3))
    back = jaxlie.SE3(ours.wxyz_xyz)
    np.testing.assert_allclose(back.translation(), np.ones(3))
    np.testing.assert_allclose(back.rotation().as_matrix(), ours.rotation_matrix(), atol=1e-12)
