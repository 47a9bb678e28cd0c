"""Hill-climbing support (`ClimbingPolytope`): exact against the dense argmax, and usable in queries."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgjk as jg
from jaxgjk._hill_climb import ClimbingPolytope

NUM_DIRECTIONS = 100_000


def sphere_points(rng, count):
    points = rng.normal(size=(count, 3))
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def cube_surface_points(rng, per_face=200):
    """Corners, edge points and many coplanar points on the faces of [-1, 1]³ (hull: the 8 corners)."""
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], np.float64)
    faces = []
    for axis in range(3):
        for side in (-1.0, 1.0):
            face = rng.uniform(-1, 1, size=(per_face, 3))
            face[:, axis] = side
            faces.append(face)
    edges = rng.uniform(-1, 1, size=(60, 3))
    edges[:, :2] = np.sign(edges[:, :2])
    grid = np.stack(np.meshgrid(*[np.linspace(-1, 1, 5)] * 3), -1).reshape(-1, 3)
    return np.concatenate([corners, *faces, edges, grid])


def prism_points(sides=64, half_height=0.7):
    """A right prism over a regular `sides`-gon: two regular polygons (big coplanar facets)."""
    angles = 2 * np.pi * np.arange(sides) / sides
    ring = np.stack([np.cos(angles), np.sin(angles)], -1)
    return np.concatenate([np.column_stack([ring, np.full(sides, z)]) for z in (-half_height, half_height)])


def sample_directions(rng, count=NUM_DIRECTIONS):
    """Random directions plus exact-tie ones (axes, cube diagonals, lattice directions, zero)."""
    lattice = np.stack(np.meshgrid(*[np.arange(-1, 2)] * 3), -1).reshape(-1, 3).astype(np.float64)
    return np.concatenate([rng.normal(size=(count - len(lattice), 3)), lattice])


def dense_max(vertices, directions):
    """max over vertices of dot(direction, vertex), for each direction (NumPy, chunked)."""
    return np.concatenate([np.max(vertices @ chunk.T, axis=0)
                           for chunk in np.array_split(directions, max(1, len(directions) // 5000))])


def assert_support_values_exact(polytope, directions, support, rtol):
    vertices = np.asarray(polytope.vertices, np.float64)
    got = np.einsum("ij,ij->i", np.asarray(support, np.float64), directions)
    want = dense_max(vertices, directions)
    scale = np.linalg.norm(directions, axis=1) * np.max(np.linalg.norm(vertices, axis=1))
    np.testing.assert_array_less(np.abs(got - want), rtol * scale + 1e-300)


POLYTOPES = {
    "sphere_32": lambda rng: sphere_points(rng, 32),
    "gaussian_512": lambda rng: rng.normal(size=(512, 3)) * [1.0, 0.3, 2.0],
    "sphere_4096": lambda rng: sphere_points(rng, 4096),
    "thin_sphere_1000": lambda rng: sphere_points(rng, 1000) * [1.0, 1.0, 1e-4] + [50.0, -20.0, 3.0],
    "cube_coplanar": cube_surface_points,
    "prism_64": lambda rng: prism_points(),
}


@pytest.mark.parametrize("name", sorted(POLYTOPES))
def test_support_equals_dense_argmax(name, rng):
    polytope = ClimbingPolytope.from_points(POLYTOPES[name](rng))
    directions = sample_directions(rng)
    support = jax.jit(jax.vmap(polytope.core_support))(jnp.asarray(directions))
    assert_support_values_exact(polytope, directions, support, rtol=1e-12)


def test_cube_and_prism_keep_only_corners(rng):
    assert ClimbingPolytope.from_points(cube_surface_points(rng)).vertices.shape == (8, 3)
    assert ClimbingPolytope.from_points(prism_points()).vertices.shape == (128, 3)


def test_walk_from_any_start_is_exact(rng):
    polytope = ClimbingPolytope.from_points(sphere_points(rng, 300))
    directions = sample_directions(rng, 20_000)
    starts = rng.integers(0, 300, size=len(directions))
    support = jax.jit(jax.vmap(polytope.core_support_from))(jnp.asarray(directions), jnp.asarray(starts))
    assert_support_values_exact(polytope, directions, support, rtol=1e-12)
    _, steps = jax.vmap(polytope.support_index)(jnp.asarray(directions))
    assert int(jnp.max(steps)) < polytope.max_steps()


def test_float32_support_within_rounding(rng):
    polytope = ClimbingPolytope.from_points(sphere_points(rng, 1000), dtype=jnp.float32)
    directions = sample_directions(rng, 20_000)
    support = jax.vmap(polytope.core_support)(jnp.asarray(directions, jnp.float32))
    assert support.dtype == jnp.float32
    assert_support_values_exact(polytope, directions, support, rtol=1e-6)


@pytest.mark.parametrize("points", [
    np.array([[0.0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0.5, 0.5, 0]]),  # flat square
    np.array([[0.0, 0, 0], [1, 2, 3], [0.5, 1, 1.5]]),  # segment
    np.array([[0.3, -0.2, 0.1]] * 3),  # point
], ids=["square", "segment", "point"])
def test_degenerate_hulls(points, rng):
    polytope = ClimbingPolytope.from_points(points)
    directions = sample_directions(rng, 2_000)
    support = jax.vmap(polytope.core_support)(jnp.asarray(directions))
    assert_support_values_exact(polytope, directions, support, rtol=1e-12)


def test_zero_direction_gives_a_vertex(rng):
    polytope = ClimbingPolytope.from_points(sphere_points(rng, 50))
    point = polytope.support(jnp.zeros(3))
    assert np.min(np.linalg.norm(np.asarray(polytope.vertices) - np.asarray(point), axis=1)) == 0


def test_stacked_polytopes_batch_under_vmap(rng):
    polytopes = [ClimbingPolytope.from_points(sphere_points(rng, 40), max_degree=16) for _ in range(5)]
    stack = jax.tree_util.tree_map(lambda *leaves: jnp.stack(leaves), *polytopes)
    directions = rng.normal(size=(5, 3))
    support = jax.vmap(lambda p, d: p.core_support(d))(stack, jnp.asarray(directions))
    for polytope, direction, point in zip(polytopes, directions, support, strict=True):
        assert_support_values_exact(polytope, direction[None], point[None], rtol=1e-12)


def test_from_points_rejects_too_small_max_degree(rng):
    with pytest.raises(ValueError, match="max_degree"):
        ClimbingPolytope.from_points(sphere_points(rng, 40), max_degree=2)


def test_check_rejects_float_neighbors(rng):
    polytope = ClimbingPolytope.from_points(sphere_points(rng, 20))
    bad = ClimbingPolytope(polytope.vertices, polytope.neighbors.astype(jnp.float64), polytope.starts)
    with pytest.raises(TypeError, match="a.neighbors"):
        jg.distance(bad, jg.Pose.identity(), jg.Sphere(jnp.asarray(1.0)), jg.Pose.identity())


def random_pose(rng, spread):
    q = rng.normal(size=4)
    return jg.Pose(jnp.asarray(rng.normal(size=3) * spread), jnp.asarray(q / np.linalg.norm(q)))


def test_distance_matches_dense_polytope(rng):
    """Same distances and gradients as `jg.Polytope` of the same vertices, overlapping and separated."""
    points_a, points_b = sphere_points(rng, 200), rng.normal(size=(60, 3))
    climbing_a, climbing_b = (ClimbingPolytope.from_points(p) for p in (points_a, points_b))
    dense_a, dense_b = (jg.Polytope.from_points(p) for p in (points_a, points_b))
    np.testing.assert_array_equal(climbing_a.vertices, dense_a.vertices)
    pose_pairs = [(random_pose(rng, spread), random_pose(rng, spread)) for spread in [0.5, 4.0] * 8]
    stack = lambda poses: jax.tree_util.tree_map(lambda *x: jnp.stack(x), *poses)  # noqa: E731
    poses_a, poses_b = stack([a for a, _ in pose_pairs]), stack([b for _, b in pose_pairs])

    def query(make_a, vertices_a, b):
        def distance(vertices, pose_a, pose_b):
            return jg.distance(make_a(vertices), pose_a, b, pose_b).distance

        value_and_grad = jax.value_and_grad(distance, argnums=(0, 1))
        return jax.jit(jax.vmap(value_and_grad, in_axes=(None, 0, 0)))(vertices_a, poses_a, poses_b)

    make_climbing = lambda v: ClimbingPolytope(v, climbing_a.neighbors, climbing_a.starts)  # noqa: E731
    climbing, (climbing_vertex_grad, climbing_grad) = query(make_climbing, climbing_a.vertices, climbing_b)
    dense, (dense_vertex_grad, dense_grad) = query(jg.Polytope, dense_a.vertices, dense_b)
    assert np.any(dense == 0) and np.any(dense > 0)
    np.testing.assert_allclose(climbing, dense, atol=1e-9)
    np.testing.assert_allclose(climbing_grad.translation, dense_grad.translation, atol=1e-6)
    np.testing.assert_allclose(climbing_grad.rotation, dense_grad.rotation, atol=1e-6)
    np.testing.assert_allclose(climbing_vertex_grad, dense_vertex_grad, atol=1e-6)


def test_gradients_against_a_curved_shape_match_dense_polytope(rng):
    """A climbing polytope is polyhedral like `jg.Polytope`: its faces against an ellipsoid are refined
    the same way, so the signed-distance gradients agree (they differed by 1e-9 when it counted as
    curved, which left the refinement off)."""
    points = rng.normal(size=(80, 3))
    climbing, dense = ClimbingPolytope.from_points(points), jg.Polytope.from_points(points)
    ellipsoid = jg.Ellipsoid(jnp.array([0.6, 0.3, 0.2]))
    poses = jg.Pose(jnp.asarray(rng.normal(size=(8, 3)) * 1.5),
                    jnp.asarray(np.tile([0.9, 0.1, 0.3, 0.2], (8, 1))))

    def gradients(polytope):
        def signed(pose):
            return jg.signed_distance(polytope, jg.Pose.identity(jnp.float64), ellipsoid, pose).distance
        return jax.jit(jax.vmap(jax.grad(signed)))(poses)

    np.testing.assert_allclose(gradients(climbing).translation, gradients(dense).translation, atol=1e-12)
