"""Tests of the NumPy convex hull preprocessing (`jaxgjk._hull`).

The reference is scipy's Qhull (`scipy.spatial.ConvexHull`) for the vertex sets of clouds in general
position; everything else is checked against invariants that need no second engine: Euler's
formula on the merged facets, supporting planes, convex counter-clockwise facets, a closed outward
triangulation, edges and adjacency consistent with the facets, and hill climbing that reaches the
brute-force support point.
"""

from fractions import Fraction

import numpy as np
import pytest
from scipy.spatial import ConvexHull
from scipy.spatial.transform import Rotation

from jaxgjk._hull import Hull, _Orientation, convex_hull

EPS = np.finfo(np.float64).eps
CORNERS = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float)


# ----------------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------------


def cloud(kind: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "cube":
        return rng.uniform(-1.0, 1.0, (n, 3))
    if kind == "sphere":
        g = rng.normal(size=(n, 3))
        return g / np.linalg.norm(g, axis=1, keepdims=True)
    if kind == "gauss":
        return rng.normal(size=(n, 3)) * [3.0, 1.0, 0.5] + [10.0, -2.0, 0.0]
    raise ValueError(kind)


def cube_with_coplanar_points(seed: int, per_face=150, per_edge=30, inside=200) -> np.ndarray:
    """The 8 corners of [-1, 1]^3, points on its faces and edges (exactly), a face lattice, and
    interior points, shuffled."""
    rng = np.random.default_rng(seed)
    parts = [CORNERS]
    for axis in range(3):
        for side in (-1.0, 1.0):
            q = rng.uniform(-1.0, 1.0, (per_face, 3))
            q[:, axis] = side
            parts.append(q)
            a, b = (k for k in range(3) if k != axis)
            for s1 in (-1.0, 1.0):
                q = rng.uniform(-1.0, 1.0, (per_edge, 3))
                q[:, axis], q[:, a] = side, s1
                parts.append(q)
    g = np.linspace(-1.0, 1.0, 5)
    lattice = np.stack(np.meshgrid(g, g, g), axis=-1).reshape(-1, 3)
    parts.append(lattice[np.any(np.abs(lattice) == 1.0, axis=1)])
    parts.append(rng.uniform(-0.99, 0.99, (inside, 3)))
    points = np.concatenate(parts)
    rng.shuffle(points)
    return points


def row_set(a: np.ndarray) -> set:
    return set(map(tuple, np.asarray(a).tolist()))


def climb(vertices, adjacency, direction, start) -> int:
    """Hill climbing: move to the best neighbour while it strictly improves."""
    v = start
    while True:
        nbrs = adjacency[v][adjacency[v] >= 0]
        if nbrs.size == 0:
            return v
        w = nbrs[np.argmax(vertices[nbrs] @ direction)]
        if vertices[w] @ direction <= vertices[v] @ direction:
            return v
        v = int(w)


def check_invariants(h: Hull, points: np.ndarray, slack: float = 4.0) -> None:
    """Everything a Hull promises, checked without a reference implementation."""
    points = np.asarray(points, dtype=np.float64)
    x = h.vertices
    num_v, num_e, num_f = h.num_vertices, h.num_edges, h.num_faces
    # Allowance for rounding in n . x when coordinates are large compared with the hull.
    round_off = 64 * EPS * max(1.0, np.abs(points).max())

    # Vertices: input rows, no duplicates, read-only arrays.
    np.testing.assert_array_equal(x, points[h.indices])
    assert len(row_set(x)) == num_v
    for name in ("vertices", "faces", "triangles", "edges", "adjacency", "face_normals"):
        assert not getattr(h, name).flags.writeable

    # Edges: unique, i < j, sorted. Adjacency: symmetric, the same graph, K = max degree.
    assert h.edges.shape == (num_e, 2)
    assert np.all(h.edges[:, 0] < h.edges[:, 1])
    assert len(row_set(h.edges)) == num_e
    adj = h.adjacency
    pairs = {(v, int(w)) for v in range(num_v) for w in adj[v][adj[v] >= 0]}
    assert all((w, v) in pairs for v, w in pairs)
    assert {(min(p), max(p)) for p in pairs} == row_set(h.edges)
    degree = (adj >= 0).sum(axis=1)
    assert adj.shape[1] == max(1, degree.max())
    assert np.all(adj[adj < 0] == -1)
    np.testing.assert_array_equal(h.edge_segments(), x[h.edges])
    assert h.edge_segments().shape == (num_e, 2, 3)

    if num_f:
        n, off = h.face_normals, h.face_offsets
        np.testing.assert_allclose(np.linalg.norm(n, axis=1), 1.0, atol=1e-12)
        # Every vertex on or inside every facet plane; every input point within a few tol.
        assert (x @ n.T - off).max() <= 1e-6 * h.tol + round_off
        assert (points @ n.T - off).max() <= slack * h.tol + round_off
        loops = h.face_indices()
        assert [len(lp) for lp in loops] == h.face_sizes.tolist()
        assert all(p.shape == (len(lp), 3) for p, lp in zip(h.face_polygons(), loops, strict=True))
        for k, loop in enumerate(loops):
            q = x[loop]
            # Corners lie on the plane (within tol) and turn left about the outward normal.
            dev = q @ n[k] - off[k]
            assert dev.min() >= -slack * h.tol - round_off and dev.max() <= round_off
            turn = np.cross(q - np.roll(q, 1, axis=0), np.roll(q, -1, axis=0) - q) @ n[k]
            assert np.all(turn > 0), f"facet {k} is not strictly convex and counter-clockwise"
        # Edges are exactly the facets' boundary edges, each shared by two facets.
        use: dict = {}
        for k, loop in enumerate(loops):
            for a, b in zip(loop, np.roll(loop, -1), strict=True):
                use.setdefault((min(a, b), max(a, b)), []).append(k)
        assert set(use) == row_set(h.edges)
        assert all(len(faces) == 2 for faces in use.values())

    if h.dim == 3:
        assert num_v - num_e + num_f == 2, "Euler's formula on the merged facets"
        tri = h.triangles
        # Closed, consistently oriented: every directed edge once, with its reverse.
        directed = row_set(tri[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2))
        assert len(directed) == 3 * len(tri)
        assert all((b, a) in directed for a, b in directed)
        assert set(np.unique(tri).tolist()) == set(range(num_v))
        # Outward: positive signed volume (up to rounding: needles have almost none), and each
        # triangle turns like its facet.
        diameter = np.linalg.norm(np.ptp(x, axis=0))
        assert h.volume() > -64 * EPS * diameter**3
        tn = np.cross(x[tri[:, 1]] - x[tri[:, 0]], x[tri[:, 2]] - x[tri[:, 0]])
        assert np.all(np.einsum("ij,ij->i", tn, h.face_normals[h.triangle_faces]) > 0)
        # Facet diagonals are not hull edges.
        tri_edges = row_set(np.sort(tri[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1))
        assert row_set(h.edges) <= tri_edges
        assert len(tri_edges) - num_e == len(tri) - num_f  # one diagonal per extra triangle
    elif h.dim == 2:
        assert num_f == 2 and num_e == num_v >= 3
        np.testing.assert_array_equal(h.faces[0][::-1], h.faces[1])
        np.testing.assert_allclose(h.face_normals[0], -h.face_normals[1])
        assert h.volume() == 0.0
    elif h.dim == 1:
        assert num_v == 2 and num_f == 0 and h.edges.tolist() == [[0, 1]]
    else:
        assert num_v == 1 and num_e == 0 and num_f == 0


def check_support_climb(h: Hull, seed: int, adjacency=None, trials: int = 40) -> None:
    """Hill climbing from random vertices reaches the brute-force maximum."""
    rng = np.random.default_rng(seed)
    adj = h.triangle_adjacency if adjacency is None else adjacency
    x = h.vertices
    for _ in range(trials):
        d = rng.normal(size=3)
        v = climb(x, adj, d, int(rng.integers(h.num_vertices)))
        scale = np.linalg.norm(d) * max(1.0, np.abs(x).max())
        assert x[v] @ d >= (x @ d).max() - 64 * EPS * scale


# ----------------------------------------------------------------------------------------------
# General position: Qhull's vertex set
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["cube", "sphere", "gauss"])
@pytest.mark.parametrize("n", [4, 5, 12, 100, 700, 2000])
def test_vertices_match_scipy(kind, n):
    seed = 1000 * n + len(kind)
    points = cloud(kind, n, seed)
    h = convex_hull(points)
    ref = ConvexHull(points)
    assert h.dim == 3
    np.testing.assert_array_equal(np.sort(h.indices), np.sort(ref.vertices))
    np.testing.assert_allclose(h.volume(), ref.volume, rtol=1e-12)
    # In general position every facet is a triangle.
    assert h.num_faces == len(ref.simplices) == 2 * h.num_vertices - 4
    assert np.all(h.face_sizes == 3)
    check_invariants(h, points)
    check_support_climb(h, seed)
    check_support_climb(h, seed, adjacency=h.adjacency)  # nothing merged: same graph


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_scale_and_translation_do_not_change_the_hull(scale):
    points = cloud("gauss", 500, 7)
    moved = points * scale + np.array([3.0, -1.0, 2.0]) * scale
    h = convex_hull(moved)
    np.testing.assert_array_equal(np.sort(h.indices), np.sort(ConvexHull(points).vertices))
    assert h.tol == pytest.approx(1e-9 * np.linalg.norm(np.ptp(moved, axis=0)))
    check_invariants(h, moved)


# ----------------------------------------------------------------------------------------------
# Coplanar and collinear points, duplicates
# ----------------------------------------------------------------------------------------------


def assert_is_cube(h: Hull, corners: np.ndarray) -> None:
    assert h.dim == 3
    assert row_set(h.vertices) == row_set(corners)
    assert (h.num_vertices, h.num_edges, h.num_faces) == (8, 12, 6)
    assert np.all(h.face_sizes == 4)
    assert len(h.triangles) == 12
    assert np.all((h.adjacency >= 0).sum(axis=1) == 3)


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_cube_with_points_on_faces_and_edges(scale):
    points = cube_with_coplanar_points(seed=3) * scale
    h = convex_hull(points)
    assert_is_cube(h, CORNERS * scale)
    np.testing.assert_array_equal(np.abs(h.face_normals).max(axis=1), 1.0)  # exact axes
    np.testing.assert_allclose(h.face_offsets, scale)
    assert h.volume() == pytest.approx(8 * scale**3)
    check_invariants(h, points)
    check_support_climb(h, 3, adjacency=h.adjacency)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rotated_cube_with_nearly_coplanar_points(seed):
    """After a rotation the face points are coplanar only up to rounding: tol merges them."""
    rotation = Rotation.random(random_state=seed).as_matrix()
    local = cube_with_coplanar_points(seed)
    points = local @ rotation.T + [5.0, -3.0, 1.0]
    h = convex_hull(points)
    assert_is_cube(h, points[np.all(np.abs(local) == 1.0, axis=1)])
    check_invariants(h, points)
    check_support_climb(h, seed)
    check_support_climb(h, seed, adjacency=h.adjacency)


def test_integer_lattice():
    g = np.arange(-3.0, 4.0)
    points = np.stack(np.meshgrid(g, g, g), axis=-1).reshape(-1, 3)
    h = convex_hull(points)
    assert_is_cube(h, CORNERS * 3)
    check_invariants(h, points)


def test_prism_with_collinear_points_on_edges():
    """A triangular prism with many points on its 9 edges: 6 vertices, 5 facets (2 triangles,
    3 rectangles), 9 edges."""
    rng = np.random.default_rng(11)
    tri = np.array([[0.0, 0.0], [4.0, 0.0], [1.0, 3.0]])
    ends = [np.c_[tri, np.full(3, z)] for z in (0.0, 2.0)]
    parts = [ends[0], ends[1]]
    segments = [(ends[z][i], ends[z][(i + 1) % 3]) for z in (0, 1) for i in range(3)]
    segments += [(ends[0][i], ends[1][i]) for i in range(3)]
    for a, b in segments:
        t = rng.uniform(0.0, 1.0, (40, 1))
        parts.append(a + t * (b - a))
    points = np.concatenate(parts)
    rng.shuffle(points)
    h = convex_hull(points)
    assert row_set(h.vertices) == row_set(np.concatenate(ends))
    assert (h.num_vertices, h.num_edges, h.num_faces) == (6, 9, 5)
    assert sorted(h.face_sizes.tolist()) == [3, 3, 4, 4, 4]
    check_invariants(h, points)


def test_duplicated_points():
    points = cloud("gauss", 300, 5)
    rng = np.random.default_rng(5)
    repeated = np.concatenate([points, points, points[:100]])
    order = rng.permutation(len(repeated))
    repeated = repeated[order]
    h = convex_hull(repeated)
    assert row_set(h.vertices) == row_set(points[ConvexHull(points).vertices])
    # `indices` points at the first occurrence of each vertex.
    for i, v in zip(h.indices, h.vertices, strict=True):
        assert i == np.nonzero(np.all(repeated == v, axis=1))[0][0]
    check_invariants(h, repeated)


def test_near_duplicates_within_tol_are_merged():
    points = cloud("sphere", 200, 9)
    rng = np.random.default_rng(9)
    jittered = points + rng.normal(size=points.shape) * 1e-13
    both = np.concatenate([points, jittered])
    h = convex_hull(both)
    assert h.num_vertices == 200
    assert np.all(np.min(np.linalg.norm(h.vertices[:, None] - points[None], axis=2), 1) < 1e-12)
    check_invariants(h, both)


def test_octahedron_with_face_centres_and_edge_midpoints():
    octa = np.concatenate([np.eye(3), -np.eye(3)])
    faces = [
        np.array([sx * np.eye(3)[0], sy * np.eye(3)[1], sz * np.eye(3)[2]])
        for sx in (-1, 1)
        for sy in (-1, 1)
        for sz in (-1, 1)
    ]
    extra = [f.mean(axis=0) for f in faces]
    extra += [
        (octa[i] + octa[j]) / 2
        for i in range(6)
        for j in range(6)
        if i < j and abs(octa[i] @ octa[j]) < 0.5
    ]
    points = np.concatenate([octa, np.array(extra), [[0.0, 0.0, 0.0]]])
    h = convex_hull(points)
    assert row_set(h.vertices) == row_set(octa)
    assert (h.num_vertices, h.num_edges, h.num_faces) == (6, 12, 8)
    check_invariants(h, points)


# ----------------------------------------------------------------------------------------------
# Near-degenerate clouds (regressions found by fuzzing)
# ----------------------------------------------------------------------------------------------


def _rotated(points, seed):
    return points @ Rotation.random(random_state=seed).as_matrix().T


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("thickness", [1e-12, 1e-10, 1e-8, 1e-6])
def test_nearly_collinear_clouds(seed, thickness):
    """Regression: a needle thicker than tol once produced a degenerate initial simplex (its
    plane came from a thin triangle's float cross product)."""
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(200, 3))
    q[:, 1:] *= thickness
    points = _rotated(q, seed) + rng.normal(size=3)
    h = convex_hull(points)
    check_invariants(h, points)
    if h.dim == 3:
        check_support_climb(h, seed)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("noise", [1e-11, 1e-9, 1e-8, 1e-7])
def test_cube_faces_with_noise_near_tol(seed, noise):
    """Regressions: reflex corners within tol on merged facets; tilted planes of sliver seeds."""
    rng = np.random.default_rng(seed)
    q = rng.uniform(-1.0, 1.0, (300, 3))
    q[np.arange(300), rng.integers(0, 3, 300)] = rng.choice([-1.0, 1.0], 300)
    points = _rotated(q + rng.normal(size=q.shape) * noise, seed)
    h = convex_hull(points)
    check_invariants(h, points)
    check_support_climb(h, seed)


@pytest.mark.parametrize("seed", range(6))
def test_clusters_of_near_duplicates(seed):
    """Pairs of points 1e-16..1e-6 apart: short edges and sliver triangles everywhere."""
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(60, 3))
    points = np.concatenate([q, q + rng.normal(size=q.shape) * 10.0 ** rng.uniform(-16, -6)])
    points = points * 10.0 ** rng.uniform(-3, 3) + rng.normal(size=3) * 10.0 ** rng.uniform(-3, 3)
    h = convex_hull(points)
    check_invariants(h, points)
    check_support_climb(h, seed)


def test_cylinder_caps_and_rulings():
    """Points on three circles: every point is a vertex, and each cap is one facet."""
    rng = np.random.default_rng(4)
    theta = rng.uniform(0.0, 2 * np.pi, 600)
    height = rng.choice([-1.0, 1.0, 0.25], 600)
    points = _rotated(np.c_[np.cos(theta), np.sin(theta), height], 4)
    h = convex_hull(points)
    assert h.num_vertices == 600
    caps = sorted(h.face_sizes.tolist())[-2:]
    assert caps == sorted([(height == -1.0).sum(), (height == 1.0).sum()])
    check_invariants(h, points)
    check_support_climb(h, 4)


def test_far_from_origin_uses_an_ulp_floor():
    """A tiny cloud at 1e4 from the origin: coordinates are only known to ~1e-12, so tol is too."""
    points = cloud("cube", 300, 2) * 1e-4 + 1.8e4
    h = convex_hull(points)
    assert h.tol >= 16 * EPS * np.abs(points).max()
    check_invariants(h, points)


def test_rel_tol_changes_merging():
    """A box whose top is bent by 1e-6 of its size: merged at rel_tol=1e-5, kept at 1e-9."""
    box = CORNERS.copy()
    bent = np.concatenate([box, [[0.0, 0.0, 1.0 + 2e-6]]])
    fine = convex_hull(bent)
    coarse = convex_hull(bent, rel_tol=1e-5)
    assert fine.num_vertices == 9 and fine.num_faces == 9  # four triangles on top
    assert coarse.num_vertices == 8 and coarse.num_faces == 6
    check_invariants(fine, bent)
    check_invariants(coarse, bent)


# ----------------------------------------------------------------------------------------------
# Degenerate dimensions
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("noise", [0.0, 1e-13, 1e-11])
def test_coplanar_points_give_a_flat_two_sided_polygon(noise):
    rng = np.random.default_rng(8)
    flat = np.c_[rng.normal(size=(300, 2)), rng.normal(size=300) * noise]
    rotation = Rotation.random(random_state=8).as_matrix()
    points = flat @ rotation.T + [1.0, 2.0, 3.0]
    h = convex_hull(points)
    assert h.dim == 2
    ref = ConvexHull(flat[:, :2])
    assert set(h.indices.tolist()) == set(ref.vertices.tolist())
    assert h.num_vertices - h.num_edges + h.num_faces == 2
    # Front facet counter-clockwise about its normal, which is the plane's normal.
    np.testing.assert_allclose(np.abs(h.face_normals[0] @ rotation[:, 2]), 1.0, atol=1e-9)
    assert len(h.triangles) == 2 * (h.num_vertices - 2)
    assert np.all((h.adjacency >= 0).sum(axis=1) == 2)
    check_invariants(h, points)


def test_square_with_points_on_its_sides():
    rng = np.random.default_rng(6)
    t = rng.uniform(-1.0, 1.0, 200)
    side = rng.integers(0, 4, 200)
    xy = np.where(
        side[:, None] < 2,
        np.c_[np.where(side == 0, -1.0, 1.0), t],
        np.c_[t, np.where(side == 2, -1.0, 1.0)],
    )
    corners = np.array([[-1.0, -1.0], [1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]])
    points = np.c_[np.concatenate([xy, corners, rng.uniform(-0.9, 0.9, (50, 2))]), np.zeros(254)]
    h = convex_hull(points)
    assert h.dim == 2 and h.num_vertices == 4
    assert row_set(h.vertices) == row_set(np.c_[corners, np.zeros(4)])
    check_invariants(h, points)


@pytest.mark.parametrize("noise", [0.0, 1e-12])
def test_collinear_points_give_a_segment(noise):
    rng = np.random.default_rng(1)
    t = rng.uniform(-2.0, 3.0, 100)
    points = np.outer(t, [1.0, 2.0, -0.5]) + [4.0, 0.0, 1.0] + rng.normal(size=(100, 3)) * noise
    h = convex_hull(points)
    assert h.dim == 1
    assert set(h.indices.tolist()) == {int(np.argmin(t)), int(np.argmax(t))}
    assert h.faces.shape == (0, 0) and h.triangles.shape == (0, 3)
    assert h.face_normals.shape == (0, 3) and h.face_offsets.shape == (0,)
    np.testing.assert_array_equal(h.adjacency, [[1], [0]])
    check_invariants(h, points)


def test_two_points_and_three_collinear_points():
    h = convex_hull([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    assert h.dim == 1 and h.num_vertices == 2
    h = convex_hull([[0.0, 0.0, 0.0], [2.0, 2.0, 2.0], [1.0, 1.0, 1.0]])
    assert h.dim == 1 and h.indices.tolist() == [0, 1]


@pytest.mark.parametrize("count", [1, 7])
def test_single_point_and_coincident_points(count):
    points = np.tile([[1.5, -2.0, 0.25]], (count, 1))
    h = convex_hull(points)
    assert h.dim == 0
    np.testing.assert_array_equal(h.vertices, [[1.5, -2.0, 0.25]])
    assert h.indices.tolist() == [0]
    assert h.edges.shape == (0, 2) and h.faces.shape == (0, 0) and h.triangles.shape == (0, 3)
    np.testing.assert_array_equal(h.adjacency, [[-1]])
    check_invariants(h, points)


def test_tetrahedron():
    points = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    h = convex_hull(points)
    assert (h.num_vertices, h.num_edges, h.num_faces) == (4, 6, 4)
    assert h.volume() == pytest.approx(1 / 6)
    check_invariants(h, points)


# ----------------------------------------------------------------------------------------------
# Input validation, the result type, the exact predicate
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        np.zeros((0, 3)),
        np.zeros((4, 2)),
        np.zeros(3),
        np.zeros((2, 3, 1)),
        [[0.0, 0.0, np.nan]],
        [[0.0, np.inf, 0.0], [1.0, 1.0, 1.0]],
        [["a", "b", "c"]],
        np.zeros((3, 3), dtype=complex),
        [[0.0, 1.0, 2.0], [1.0, 2.0]],
    ],
)
def test_invalid_points_raise_value_error(bad):
    with pytest.raises(ValueError, match="points"):
        convex_hull(bad)


@pytest.mark.parametrize("rel_tol", [0.0, -1e-9, 1e-14, 0.5, np.nan])
def test_invalid_rel_tol_raises(rel_tol):
    with pytest.raises(ValueError, match="rel_tol"):
        convex_hull(np.eye(3), rel_tol=rel_tol)


def test_accepts_lists_integers_and_float32():
    ints = [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]]
    h = convex_hull(ints)
    assert h.vertices.dtype == np.float64 and h.num_vertices == 5
    h32 = convex_hull(np.asarray(ints, dtype=np.float32))
    np.testing.assert_array_equal(h32.vertices, h.vertices)


def test_hull_is_frozen():
    h = convex_hull(np.eye(3).tolist() + [[0.0, 0.0, 0.0]])
    with pytest.raises(AttributeError):
        h.vertices = np.zeros((1, 3))
    with pytest.raises(ValueError):
        h.vertices[0, 0] = 1.0


def test_exact_orientation_matches_rational_arithmetic():
    """The integer fallback agrees with Fractions, including exactly coplanar quadruples."""
    rng = np.random.default_rng(12)
    base = rng.normal(size=(30, 3)) * 10.0 ** rng.integers(-3, 3, (30, 1))
    u, v = rng.normal(size=3), rng.normal(size=3)
    planar = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.5, 0.25, 0.25]])
    pts = np.concatenate([base, planar, np.outer([1.0, 2.0, -3.0], u) + v])
    pts = np.ldexp(pts, -int(np.frexp(np.abs(pts).max())[1]))
    orient = _Orientation(pts)

    def rational(i):
        return [Fraction(float(c)) for c in pts[i]]

    quads = [tuple(rng.choice(len(pts), 4, replace=False)) for _ in range(400)]
    quads += [(30, 31, 32, 33), (34, 35, 36, 0)]
    signs = set()
    for a, b, c, p in quads:
        ra, rb, rc, rp = rational(a), rational(b), rational(c), rational(p)
        u_, v_, w_ = ([q[k] - ra[k] for k in range(3)] for q in (rb, rc, rp))
        det = (
            w_[0] * (u_[1] * v_[2] - u_[2] * v_[1])
            + w_[1] * (u_[2] * v_[0] - u_[0] * v_[2])
            + w_[2] * (u_[0] * v_[1] - u_[1] * v_[0])
        )
        expected = (det > 0) - (det < 0)
        assert orient.exact(int(a), int(b), int(c), int(p)) == expected
        signs.add(expected)
    assert signs == {-1, 0, 1}


def test_large_cloud_matches_scipy():
    """50k uniform points (about 150 hull vertices): conflict lists discard the interior fast."""
    points = cloud("cube", 50_000, 13)
    h = convex_hull(points)
    np.testing.assert_array_equal(np.sort(h.indices), np.sort(ConvexHull(points).vertices))
