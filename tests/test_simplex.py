"""The closest-point sub-algorithm, one test per Voronoi region (named after the surviving vertices),
in float64 and float32, plus degenerate simplices."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxgjk._simplex import closest_point, face_weights

ALL = jnp.array([True, True, True, True])


def run(points, mask=ALL, dtype=np.float64):
    point, weights, face = closest_point(jnp.asarray(points, dtype), jnp.asarray(mask))
    return np.asarray(point), np.asarray(weights), tuple(np.flatnonzero(np.asarray(face)))


# Tetrahedron above the origin with vertex 0 nearest: a shifted standard simplex.
TETRA = np.array([[0.0, 0, 1], [1, 0, 2], [0, 1, 2], [0, 0, 3]])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_region_vertex_0(dtype):
    point, weights, face = run(TETRA, dtype=dtype)
    assert face == (0,)
    np.testing.assert_allclose(point, [0, 0, 1], atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_region_edge_01(dtype):
    points = np.array([[-1.0, 1, 0], [1, 1, 0], [0, 3, 1], [0, 3, -1]])
    point, weights, face = run(points, dtype=dtype)
    assert face == (0, 1)
    np.testing.assert_allclose(point, [0, 1, 0], atol=1e-6)
    np.testing.assert_allclose(weights, [0.5, 0.5, 0, 0], atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_region_triangle_123(dtype):
    points = np.array([[0.0, 0, 5], [-1, -1, 1], [2, -1, 1], [-1, 2, 1]])
    point, weights, face = run(points, dtype=dtype)
    assert face == (1, 2, 3)
    np.testing.assert_allclose(point, [0, 0, 1], atol=1e-6)
    np.testing.assert_allclose(weights.sum(), 1, atol=1e-6)


def test_region_tetrahedron_contains_origin():
    points = np.array([[1.0, 1, 1], [-1, -1, 1], [1, -1, -1], [-1, 1, -1]])
    point, weights, face = run(points)
    assert face == (0, 1, 2, 3)
    np.testing.assert_allclose(point, 0, atol=1e-12)
    np.testing.assert_allclose(weights, 0.25)


def test_mask_restricts_the_simplex():
    points = np.array([[0.0, 0, 1], [5, 5, 5], [1, 0, 1], [0, 1, 1]])
    _, _, face = run(points, mask=[False, True, True, True])
    assert 0 not in face


@pytest.mark.parametrize("degenerate", ["coincident", "collinear", "coplanar"])
def test_degenerate_simplices_give_finite_hull_points(degenerate, rng):
    base = rng.normal(size=3) + 3
    if degenerate == "coincident":
        points = np.tile(base, (4, 1))
    elif degenerate == "collinear":
        points = base + np.outer([0, 1, 2, 3], [1.0, 0.5, 0.2])
    else:
        points = np.column_stack([rng.normal(size=(4, 2)), np.full(4, 2.0)])
    point, weights, _ = run(points)
    assert np.all(np.isfinite(point)) and np.all(weights >= 0)
    np.testing.assert_allclose(weights.sum(), 1, atol=1e-12)
    np.testing.assert_allclose(weights @ points, point, atol=1e-12)
    # Never farther than the nearest vertex.
    assert np.linalg.norm(point) <= np.min(np.linalg.norm(points, axis=1)) + 1e-12


def test_random_simplices_match_brute_force_qp(rng):
    from scipy.optimize import minimize

    for _ in range(50):
        points = rng.normal(size=(4, 3)) + rng.normal(size=3) * 2
        point, _, _ = run(points)
        result = minimize(lambda w, p=points: np.sum((w @ p) ** 2), np.full(4, 0.25),
                          constraints=[{"type": "eq", "fun": lambda w: np.sum(w) - 1}],
                          bounds=[(0, 1)] * 4, method="SLSQP", options={"ftol": 1e-15})
        assert np.linalg.norm(point) <= np.linalg.norm(result.x @ points) + 1e-7


def test_face_weights_project_onto_the_face():
    points = jnp.array([[-1.0, -1, 2], [2, -1, 2], [-1, 2, 2], [0, 0, 0]])
    weights = face_weights(points, jnp.array([True, True, True, False]))
    np.testing.assert_allclose(weights @ points, [0, 0, 2], atol=1e-12)


def test_last_only_is_the_closest_point_of_the_faces_through_vertex_3():
    """GJK's sub-algorithm (`last_only`, 8 candidates) against brute force over the faces of the
    masked vertices that contain vertex 3: the closest point of each face's affine hull, kept where
    it lies inside the face (float64, random simplices, some masks partial)."""
    rng = np.random.default_rng(3)
    points = rng.normal(size=(400, 4, 3)) + rng.normal(size=(400, 1, 3))
    masks = rng.random((400, 4)) < 0.8
    masks[:, 3] = True
    point, weights, face = jax.jit(jax.vmap(lambda p, m: closest_point(p, m, last_only=True)))(
        jnp.asarray(points), jnp.asarray(masks))
    for simplex, mask, got, got_face in zip(points, masks, np.asarray(point), np.asarray(face),
                                            strict=True):
        best = np.inf
        others = [k for k in range(3) if mask[k]]
        for size in range(len(others) + 1):
            for chosen in itertools.combinations(others, size):
                vertices = simplex[list(chosen) + [3]]
                # The affine hull's closest point: weights λ (Σλ = 1) minimising |Σ λ_i v_i|.
                gram = np.block([[vertices @ vertices.T, np.ones((len(vertices), 1))],
                                 [np.ones((1, len(vertices))), np.zeros((1, 1))]])
                solution = np.linalg.lstsq(gram, np.r_[np.zeros(len(vertices)), 1.0], rcond=None)[0]
                if np.all(solution[:-1] > 0):
                    best = min(best, np.linalg.norm(solution[:-1] @ vertices))
        assert got_face[3]
        assert np.linalg.norm(got) == pytest.approx(best, rel=1e-9, abs=1e-12)
