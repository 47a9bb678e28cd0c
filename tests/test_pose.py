"""Poses: constructors agree with each other and with SciPy's rotations; apply/inverse/compose."""

import jax
import jax.numpy as jnp
import numpy as np
from scipy.spatial.transform import Rotation

import jaxgjk as jg


def test_rotation_matrix_matches_scipy(rng):
    quaternions = rng.normal(size=(50, 4))
    for q in quaternions:
        expected = Rotation.from_quat(q[[1, 2, 3, 0]]).as_matrix()  # SciPy: (x, y, z, w)
        got = jg.Pose(jnp.zeros(3), jnp.asarray(q)).rotation_matrix()  # normalised internally
        np.testing.assert_allclose(got, expected, atol=1e-12)


def test_from_euler_xyz_is_x_then_y_then_z(rng):
    for angles in rng.uniform(-np.pi, np.pi, size=(20, 3)):
        expected = Rotation.from_euler("xyz", angles).as_matrix()  # lowercase: extrinsic x, y, z
        pose = jg.Pose.from_euler_xyz(jnp.asarray(angles), jnp.ones(3))
        np.testing.assert_allclose(pose.rotation_matrix(), expected, atol=1e-12)
        np.testing.assert_allclose(pose.translation, np.ones(3))


def test_from_matrix_round_trip_including_half_turns(rng):
    matrices = [Rotation.random(random_state=int(s)).as_matrix() for s in rng.integers(1e6, size=20)]
    matrices += [np.diag([1.0, -1, -1]), np.diag([-1.0, 1, -1]), np.diag([-1.0, -1, 1]), np.eye(3)]
    for matrix in matrices:
        m44 = np.eye(4)
        m44[:3, :3] = matrix
        m44[:3, 3] = [1, 2, 3]
        pose = jg.Pose.from_matrix(jnp.asarray(m44))
        np.testing.assert_allclose(pose.rotation_matrix(), matrix, atol=1e-12)
        np.testing.assert_allclose(jnp.linalg.norm(pose.rotation), 1, atol=1e-12)
        np.testing.assert_allclose(pose.translation, [1, 2, 3])


def test_apply_inverse_compose(rng):
    pose_1 = jg.Pose(jnp.asarray(rng.normal(size=3)), jnp.asarray(rng.normal(size=4)))
    pose_2 = jg.Pose(jnp.asarray(rng.normal(size=3)), jnp.asarray(rng.normal(size=4)))
    points = jnp.asarray(rng.normal(size=(7, 3)))
    np.testing.assert_allclose(pose_1.inverse().apply(pose_1.apply(points)), points, atol=1e-12)
    np.testing.assert_allclose(pose_1.compose(pose_2).apply(points),
                               pose_1.apply(pose_2.apply(points)), atol=1e-12)
    identity = jg.Pose.identity(jnp.float64)
    np.testing.assert_allclose(identity.apply(points), points)


def test_zero_quaternion_is_identity_and_gradient_finite():
    pose = jg.Pose(jnp.zeros(3), jnp.zeros(4))
    np.testing.assert_allclose(pose.rotation_matrix(), np.eye(3))
    grad = jax.grad(lambda q: jnp.sum(jg.Pose(jnp.zeros(3), q).rotation_matrix()))(jnp.zeros(4))
    assert np.all(np.isfinite(grad))


def test_batched_poses_apply():
    poses = jg.Pose(jnp.arange(6.0).reshape(2, 3), jnp.tile(jnp.array([1.0, 0, 0, 0]), (2, 1)))
    np.testing.assert_allclose(poses.apply(jnp.ones((2, 3))), np.arange(6.0).reshape(2, 3) + 1)
