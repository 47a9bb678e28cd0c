"""Closest-feature reports: constructed vertex–face, edge–edge, face–face contacts, and random hulls."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgjk as jg
from jaxgjk._features import FeatureDim, box_feature
from jaxgjk._tolerance import feature_tolerance

from .shape_samples import random_rotation

DISTANCE = jax.jit(jax.vmap(jg.distance, in_axes=(None, 0, None, 0)))
SIGNED = jax.jit(jax.vmap(jg.signed_distance, in_axes=(None, 0, None, 0)))
CUBE = np.ones(3)


def rotation_between(u, v):
    """(3, 3) rotation taking the unit vector along `u` to the one along `v` (not opposite)."""
    u, v = np.asarray(u, float) / np.linalg.norm(u), np.asarray(v, float) / np.linalg.norm(v)
    axis, cos = np.cross(u, v), u @ v
    skew = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + skew + skew @ skew / (1 + cos)


# Rotations turning a cube's corner 7 = (+,+,+) to -x (towards a body at its -x side) or to +x, and
# an edge to -x (its z edge, by 45° about z) or a y edge to +x (45° about y).
CORNER_TO_MINUS_X = rotation_between([1, 1, 1], [-1, 0, 0])
CORNER_TO_PLUS_X = rotation_between([1, 1, 1], [1, 0, 0])
Z_EDGE_TO_X = rotation_between([1, 1, 0], [1, 0, 0])
Y_EDGE_TO_X = rotation_between([1, 0, 1], [1, 0, 0])


def poses(rows, dtype):
    """A stacked Pose from (rotation matrix (3, 3) or quaternion (4,), translation (3,)) rows."""
    made = [jg.Pose(jnp.asarray(t, dtype), jnp.asarray(r, dtype)) if np.shape(r) == (4,)
            else jg.Pose.from_rotation_matrix(jnp.asarray(r, dtype), jnp.asarray(t, dtype))
            for r, t in rows]
    return jax.tree_util.tree_map(lambda *leaves: jnp.stack(leaves), *made)


def features(result, body):
    feature = result.feature_a if body == "a" else result.feature_b
    return np.asarray(feature.dimension), np.asarray(feature.vertices), np.asarray(feature.num_vertices)


# (name, pose of A, pose of B, gap along x, dimension of A's feature, of B's, A's vertices, B's vertices)
# Box corners are numbered x + 2y + 4z (bit 1: + side). A is the unit cube; B sits at +x.
I3 = np.eye(3)
BOX_CASES = [
    ("face-face", (I3, np.zeros(3)), (I3, [2.0, 0.3, 0.1]),
     FeatureDim.FACE, FeatureDim.FACE, [1, 3, 5, 7], [0, 2, 4, 6]),
    ("face-vertex", (I3, np.zeros(3)), (CORNER_TO_MINUS_X, [1 + np.sqrt(3), 0.1, 0.2]),
     FeatureDim.FACE, FeatureDim.VERTEX, [1, 3, 5, 7], [7, -1, -1, -1]),
    ("face-edge", (I3, np.zeros(3)), (Z_EDGE_TO_X.T, [1 + np.sqrt(2), 0.1, 0.2]),
     FeatureDim.FACE, FeatureDim.EDGE, [1, 3, 5, 7], None),
    ("edge-edge", (Z_EDGE_TO_X, np.zeros(3)), (Y_EDGE_TO_X.T, [2 * np.sqrt(2), 0.0, 0.0]),
     FeatureDim.EDGE, FeatureDim.EDGE, [3, 7, -1, -1], None),
    ("vertex-face", (CORNER_TO_PLUS_X, np.zeros(3)), (I3, [1 + np.sqrt(3), 0.2, -0.1]),
     FeatureDim.VERTEX, FeatureDim.FACE, [7, -1, -1, -1], [0, 2, 4, 6]),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("depth", [-0.25, 0.25])
def test_box_contacts_report_their_features(dtype, depth):
    """Each configuration at a gap of 0.25 (distance) and an overlap of 0.25 (signed distance)."""
    cube = jg.Box(jnp.asarray(CUBE, dtype))
    pose_a = poses([case[1] for case in BOX_CASES], dtype)
    pose_b = poses([(case[2][0], np.asarray(case[2][1]) + [depth, 0, 0]) for case in BOX_CASES], dtype)
    result = (DISTANCE if depth > 0 else SIGNED)(cube, pose_a, cube, pose_b)
    np.testing.assert_allclose(result.distance, depth, atol=1e-5)
    dims_a, vertices_a, _ = features(result, "a")
    dims_b, vertices_b, _ = features(result, "b")
    for index, (name, _, _, dim_a, dim_b, listed_a, listed_b) in enumerate(BOX_CASES):
        assert (dims_a[index], dims_b[index]) == (dim_a, dim_b), name
        for listed, got in ((listed_a, vertices_a[index]), (listed_b, vertices_b[index])):
            if listed is not None:
                assert list(got) == listed, name
    # The witness points are the listed corners (vertices) or lie on the listed edges.
    for body, dims, listed, points, pose in (("a", dims_a, vertices_a, result.point_a, pose_a),
                                             ("b", dims_b, vertices_b, result.point_b, pose_b)):
        for index in np.flatnonzero(dims < FeatureDim.FACE):
            ends = np.asarray(cube.corners())[listed[index][: int(dims[index]) + 1]]
            local = local_point(pose, index, points)
            assert distance_to_segment(local, ends[0], ends[-1]) < 1e-5, (body, BOX_CASES[index][0])


def local_point(pose, index, points):
    """points[index] (world) in the frame of the index-th pose of the stack `pose`."""
    one = jax.tree_util.tree_map(lambda leaf: leaf[index], pose)
    return np.asarray(one.inverse().apply(jnp.asarray(points[index])))


def distance_to_segment(point, start, end):
    point, start, end = (np.asarray(x, np.float64) for x in (point, start, end))
    axis = end - start
    t = np.clip((point - start) @ axis / max(axis @ axis, 1e-300), 0, 1)
    return np.linalg.norm(point - start - t * axis)


def distance_to_triangle(point, corners):
    """Euclidean distance from `point` to the triangle `corners` (3, 3) (projection or an edge)."""
    origin, u, v = corners[0], corners[1] - corners[0], corners[2] - corners[0]
    gram = np.array([[u @ u, u @ v], [u @ v, v @ v]])
    s, t = np.linalg.solve(gram, [(point - origin) @ u, (point - origin) @ v])
    if s >= 0 and t >= 0 and s + t <= 1:
        return np.linalg.norm(point - origin - s * u - t * v)
    return min(distance_to_segment(point, corners[i], corners[(i + 1) % 3]) for i in range(3))


def test_random_hulls_report_the_feature_holding_the_witness(rng):
    """Generic random hull pairs: one of vertex/edge/face per body with at most 2 dimensions between
    them, and each witness point lies on the feature its indices name."""
    hull_a, hull_b = (jg.Polytope.from_points(points / np.linalg.norm(points, axis=1, keepdims=True),
                                              np.float64) for points in rng.normal(size=(2, 40, 3)))
    count = 200
    directions = rng.normal(size=(count, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    rows_b = [(random_rotation(rng), direction * rng.uniform(3.5, 5.0)) for direction in directions]
    pose_a = poses([(I3, np.zeros(3))] * count, np.float64)
    pose_b = poses(rows_b, np.float64)
    result = DISTANCE(hull_a, pose_a, hull_b, pose_b)
    assert np.all(np.asarray(result.status) == jg.Status.SEPARATED)
    dims = np.stack([features(result, "a")[0], features(result, "b")[0]], axis=1)
    assert np.all(dims >= FeatureDim.VERTEX) and np.all(dims <= FeatureDim.FACE)
    assert np.all(dims.sum(axis=1) <= 2)
    seen = {tuple(pair) for pair in dims}
    assert {(0, 2), (2, 0), (1, 1)} <= seen
    for body, hull, points, pose in (("a", hull_a, result.point_a, pose_a), ("b", hull_b, result.point_b,
                                                                             pose_b)):
        dim, listed, num = features(result, body)
        assert np.all(num == dim + 1)
        for index in range(count):
            local = local_point(pose, index, points)
            corners = np.asarray(hull.vertices)[listed[index][: num[index]]]
            gap = (distance_to_triangle(local, corners) if dim[index] == FeatureDim.FACE
                   else distance_to_segment(local, corners[0], corners[-1]))
            assert gap < 1e-9, (body, index, dim[index])


def test_curved_and_composite_shapes():
    """Curved surfaces report CURVED, the flat parts of cylinders and cones their dimension, an affine
    image the feature of its shape; overlap reports NONE. The primitives run as one packed batch."""
    box = jg.Box(jnp.asarray(CUBE))
    above = [2.5, 0.1, 0.2]
    axis_to_x, axis_to_minus_x, axis_to_y = (rotation_between([0, 0, 1], v) for v in ([1, 0, 0], [-1, 0, 0],
                                                                                      [0, 1, 0]))
    cases = [  # shape, its pose (B is the cube at `above` unless said), dimensions of A's and B's features
        (jg.Sphere(jnp.asarray(0.5)), I3, FeatureDim.CURVED, FeatureDim.FACE),
        (jg.Sphere(jnp.asarray(0.0)), I3, FeatureDim.VERTEX, FeatureDim.FACE),
        (jg.Ellipsoid(jnp.asarray([0.5, 0.4, 0.3])), I3, FeatureDim.CURVED, FeatureDim.FACE),
        (jg.Cylinder(jnp.asarray(0.5), jnp.asarray(0.7)), axis_to_x, FeatureDim.FACE, FeatureDim.FACE),
        (jg.Cylinder(jnp.asarray(0.5), jnp.asarray(0.7)), axis_to_y, FeatureDim.EDGE, FeatureDim.FACE),
        (jg.Cylinder(jnp.asarray(0.5), jnp.asarray(0.7)), rotation_between([0, 0, 1], [1, 1, 1]),
         FeatureDim.CURVED, FeatureDim.FACE),
        (jg.Cone(jnp.asarray(0.5), jnp.asarray(0.7)), axis_to_x, FeatureDim.VERTEX, FeatureDim.FACE),
        (jg.Cone(jnp.asarray(0.5), jnp.asarray(0.7)), axis_to_minus_x, FeatureDim.FACE, FeatureDim.FACE),
        (jg.Capsule(jnp.asarray(0.0), jnp.asarray(0.7)), axis_to_y, FeatureDim.EDGE, FeatureDim.FACE),
        (jg.Capsule(jnp.asarray(0.0), jnp.asarray(0.7)), axis_to_x, FeatureDim.VERTEX, FeatureDim.FACE),
        (jg.Capsule(jnp.asarray(0.2), jnp.asarray(0.7)), axis_to_y, FeatureDim.CURVED, FeatureDim.FACE),
        (jg.Box(jnp.asarray([1.0, 0.2, 0.2])), I3, FeatureDim.FACE, FeatureDim.FACE),
        (jg.Box(jnp.asarray([2.0, 0.2, 0.2])), I3, FeatureDim.NONE, FeatureDim.NONE),  # overlapping
    ]
    packed = jg.pack([case[0] for case in cases], dtype=np.float64)
    count = len(cases)
    pose_a = poses([(case[1], np.zeros(3)) for case in cases], np.float64)
    pose_b = poses([(I3, above)] * count, np.float64)
    result = jax.jit(jax.vmap(jg.distance))(packed, pose_a, jax.tree_util.tree_map(
        lambda leaf: jnp.broadcast_to(leaf, (count, *leaf.shape)), box), pose_b)
    got = np.stack([features(result, "a")[0], features(result, "b")[0]], axis=1)
    expected = np.array([case[2:] for case in cases])
    assert np.array_equal(got, expected), np.flatnonzero(np.any(got != expected, axis=1))
    assert list(np.asarray(result.feature_a.vertices[11])) == [1, 3, 5, 7]
    # An affine image reports its shape's feature; a convex hull of shapes reports none.
    identity, placed = jg.Pose.identity(), jg.Pose(jnp.asarray(above), jnp.asarray([1.0, 0, 0, 0]))
    stretched = jg.Affine(box, jnp.diag(jnp.asarray([0.5, 2.0, 1.0])), jnp.zeros(3))
    result = jax.jit(jg.distance)(stretched, identity, box, placed)
    assert int(result.feature_a.dimension) == FeatureDim.FACE
    assert list(np.asarray(result.feature_a.vertices)) == [1, 3, 5, 7]
    result = jax.jit(jg.distance)(jg.ConvexHull((box, jg.Sphere(jnp.asarray(0.5)))), identity, box,
                                  jg.Pose(jnp.asarray([3.5, 0, 0]), jnp.asarray([1.0, 0, 0, 0])))
    assert int(result.feature_a.dimension) == FeatureDim.NONE


def test_rounded_shapes_features_in_batches_with_and_without_a_zero_radius():
    """`Rounded` boxes search their core's vertices only where some pair of a batch has a zero radius
    (`Shape.usually_rounded`), capsules have theirs in closed form (`_features.segment_feature`): the
    same features in a typed batch mixing zero and positive radii, in one where every radius is
    positive (the search skipped), and for one pair."""
    box = jg.Box(jnp.asarray(CUBE))
    above = [2.5, 0.1, 0.2]
    axis_to_x, axis_to_y = (rotation_between([0, 0, 1], v) for v in ([1, 0, 0], [0, 1, 0]))
    cases = [(0.0, axis_to_y, FeatureDim.EDGE), (0.2, axis_to_y, FeatureDim.CURVED),
             (0.0, axis_to_x, FeatureDim.VERTEX), (0.3, axis_to_x, FeatureDim.CURVED)]
    query = jax.jit(jax.vmap(jg.distance, in_axes=(0, 0, None, 0)))

    def dimensions(shapes, rotations):
        result = query(shapes, poses([(r, np.zeros(3)) for r in rotations], np.float64), box,
                       poses([(I3, above)] * len(rotations), np.float64))
        return list(features(result, "a")[0]), features(result, "a")[1]

    capsules = jg.Capsule(jnp.asarray([c[0] for c in cases]), jnp.full(len(cases), 0.7))
    got, vertices = dimensions(capsules, [c[1] for c in cases])
    assert got == [c[2] for c in cases]
    assert list(vertices[0]) == [0, 1, -1, -1] and list(vertices[1]) == [-1] * 4
    rounded = jg.Capsule(jnp.asarray([0.2, 0.3]), jnp.full(2, 0.7))  # every radius positive
    assert dimensions(rounded, [axis_to_y, axis_to_x])[0] == [FeatureDim.CURVED] * 2
    one = jax.jit(jg.distance)(jg.Capsule(jnp.asarray(0.0), jnp.asarray(0.7)),
                               jg.Pose.from_rotation_matrix(jnp.asarray(axis_to_y), jnp.zeros(3)), box,
                               jg.Pose.from_translation(jnp.asarray(above)))
    assert int(one.feature_a.dimension) == FeatureDim.EDGE
    plates = jg.Rounded(jg.Box(jnp.tile(jnp.asarray([0.5, 0.5, 0.5]), (2, 1))), jnp.asarray([0.0, 0.1]))
    got, vertices = dimensions(plates, [I3, I3])
    assert got == [FeatureDim.FACE, FeatureDim.CURVED] and list(vertices[0]) == [1, 3, 5, 7]


def test_invalid_input_reports_no_feature():
    box = jg.Box(jnp.asarray([1.0, 1.0, -1.0]))
    pose = poses([case[2] for case in BOX_CASES], np.float64)  # the batch size of the box test: no compile
    result = SIGNED(box, pose, box, pose)
    assert np.all(np.asarray(result.status) == jg.Status.INVALID_INPUT)
    assert np.all(np.asarray(result.feature_a.dimension) == FeatureDim.NONE)
    assert np.all(np.asarray(result.feature_b.dimension) == FeatureDim.NONE)


def test_coplanar_vertex_lists_name_the_whole_face(rng):
    """A hull face with many vertices (a 12-gon prism cap) reports FACE with all of them counted."""
    angles = np.linspace(0, 2 * np.pi, 12, endpoint=False)
    ring = np.stack([np.cos(angles), np.sin(angles), np.zeros(12)], axis=1)
    prism = jg.Polytope(jnp.asarray(np.concatenate([ring + [0, 0, 0.5], ring - [0, 0, 0.5]])))
    pose_b = jg.Pose.from_euler_xyz(jnp.asarray(rng.uniform(-0.1, 0.1, 3) * [0, 0, 1]),
                                    jnp.asarray([0.1, 0.0, 1.5]))
    result = jg.distance(prism, jg.Pose.identity(), prism, pose_b)
    assert int(result.feature_a.dimension) == int(result.feature_b.dimension) == FeatureDim.FACE
    assert int(result.feature_a.num_vertices) == int(result.feature_b.num_vertices) == 12
    assert list(np.asarray(result.feature_a.vertices)) == [0, 1, 2, 3]
    assert list(np.asarray(result.feature_b.vertices)) == [12, 13, 14, 15]


def _box_feature_reference(half, direction, relative_tolerance):
    """`vertex_set_feature`'s rule on a box's eight corners in float64 NumPy: (dimension, exposed
    corners (8,) bool, and the smallest distance of any of its decisions from its tolerance, relative
    to that tolerance)."""
    corners = np.array([[half[i] if (c >> i) & 1 else -half[i] for i in range(3)] for c in range(8)])
    tolerance = relative_tolerance * np.max(np.abs(half))
    below = np.max(corners @ direction) - corners @ direction
    exposed = below <= tolerance
    offsets = corners - corners[np.argmax(exposed)]
    lengths = np.where(exposed, np.linalg.norm(offsets, axis=1), 0)
    length = np.max(lengths)
    axis = offsets[np.argmax(lengths)] / length if length > 0 else np.zeros(3)
    width = np.max(np.where(exposed, np.linalg.norm(offsets - np.outer(offsets @ axis, axis), axis=1), 0))
    dimension = (FeatureDim.VERTEX if length <= tolerance else
                 FeatureDim.EDGE if width <= tolerance else FeatureDim.FACE)
    measured = np.concatenate([below, [length, width]])
    margin = np.min(np.abs(measured - tolerance)) / tolerance if tolerance > 0 else np.inf  # a point
    return dimension, exposed, margin


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_box_feature_matches_the_rule_on_its_corners_at_any_scale(dtype, rng):
    """`box_feature` (closed form) against the exposed face of the box's eight corners in float64:
    random, flat, needle and point boxes at sizes 1e-30 to 1e30 (whose squared lengths leave
    float32's range), along random directions, axes, directions in a coordinate plane and directions
    a fraction of the tolerance off an axis; rows within half a tolerance of any of the rule's
    decisions (where rounding may decide) are left out."""
    relative_tolerance = feature_tolerance(dtype)
    count = 4000
    half = rng.uniform(0.1, 1.0, (count, 3))
    form = rng.integers(0, 4, count)
    half[form == 1, 2] = 0  # flat
    half[form == 2, 1:] *= relative_tolerance / 10  # needle
    half[form == 3] = 0  # a point
    half *= 10.0 ** rng.uniform(-30, 30, (count, 1))
    direction = rng.normal(size=(count, 3))
    towards = rng.integers(0, 4, count)
    direction[towards == 1, 1:] = 0  # an axis
    direction[towards == 2, 2] = 0  # in a coordinate plane (an edge exposed)
    off_axis = towards == 3
    direction[off_axis, 1:] = rng.normal(size=(np.sum(off_axis), 2)) * relative_tolerance * rng.choice(
        [0.1, 3.0], (np.sum(off_axis), 1))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    half, direction = half.astype(dtype), direction.astype(dtype)

    feature = jax.jit(jax.vmap(lambda h, d: box_feature(h, d, relative_tolerance)))(half, direction)
    checked = 0
    for row in range(count):
        dimension, exposed, margin = _box_feature_reference(
            half[row].astype(np.float64), direction[row].astype(np.float64), relative_tolerance)
        if margin < 0.5:
            continue
        checked += 1
        listed = list(np.flatnonzero(exposed)[:4]) + [-1] * (4 - min(4, np.sum(exposed)))
        assert int(feature.dimension[row]) == dimension, (half[row], direction[row])
        assert list(np.asarray(feature.vertices[row])) == listed, (half[row], direction[row])
        assert int(feature.num_vertices[row]) == np.sum(exposed), (half[row], direction[row])
    assert checked >= count // 2, checked
