"""The shape contract, run by every kind (`Shape`'s checklist): support mappings maximal over sampled
points, a point of the shape for every direction, independent of the direction's length, batched; the
reach bounds every point; exposed vertices are support points; checks reject batch axes."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgjk as jg

from .shape_samples import PRIMITIVE_KINDS, random_rotation, random_shape, sample_points


def composite_shapes(rng):
    box = random_shape("box", rng)
    ellipsoid = random_shape("ellipsoid", rng)
    linear = rng.normal(size=(3, 3)) + 2 * np.eye(3)
    return {
        "affine": jg.Affine(ellipsoid, jnp.asarray(linear), jnp.asarray(rng.normal(size=3))),
        "minkowski": jg.MinkowskiSum(box, random_shape("cone", rng)),
        "rounded": jg.Rounded(box, jnp.asarray(0.2)),
        "hull": jg.ConvexHull((random_shape("capsule", rng), jg.Affine(
            box, jnp.eye(3), jnp.array([1.5, 0.0, 0.0])))),
        "masked_polytope": jg.Polytope(
            jnp.asarray(np.vstack([rng.normal(size=(6, 3)), 100 + np.zeros((2, 3))])),
            jnp.array([True] * 6 + [False] * 2)),
    }


def all_shapes(rng):
    shapes = {kind: random_shape(kind, rng) for kind in PRIMITIVE_KINDS}
    shapes.update(composite_shapes(rng))
    return shapes


@jax.jit
def _supports(shape, directions):
    return jax.vmap(shape.support)(directions)


@pytest.mark.parametrize("name", list(PRIMITIVE_KINDS) + ["affine", "minkowski", "rounded", "hull",
                                                          "masked_polytope"])
def test_support_is_maximal_over_sampled_points(name, rng):
    shape = all_shapes(np.random.default_rng(7))[name]
    points = sample_points(shape, rng, 4000)
    directions = rng.normal(size=(300, 3))
    directions[:6] = np.vstack([np.eye(3), -np.eye(3)])  # axis directions hit ties on flat faces
    support = np.asarray(_supports(shape, jnp.asarray(directions)))
    support_values = np.sum(directions * support, axis=1)
    sampled_best = np.max(directions @ points.T, axis=1)
    scale = np.max(np.linalg.norm(points, axis=1))
    norms = np.linalg.norm(directions, axis=1)
    assert np.all(support_values >= sampled_best - 1e-6 * scale * norms)
    # The support point belongs to the shape: no sampled direction does better than its value.
    sample_values = np.max(directions @ np.vstack([points, support]).T, axis=1)
    assert np.all(support_values >= sample_values - 1e-6 * scale * norms)


@pytest.mark.parametrize("name", list(PRIMITIVE_KINDS) + ["affine", "rounded", "hull"])
def test_zero_direction_gives_a_point_of_the_shape(name, rng):
    shape = all_shapes(np.random.default_rng(7))[name]
    point = np.asarray(shape.support(jnp.zeros(3)))
    assert np.all(np.isfinite(point))
    # A point of a convex set: every direction's support value is at least its projection.
    directions = rng.normal(size=(500, 3))
    values = np.sum(directions * np.asarray(_supports(shape, jnp.asarray(directions))), axis=1)
    assert np.all(values >= directions @ point - 1e-9)


def test_support_of_primitives_matches_closed_form():
    d = jnp.array([0.3, -0.4, 1.2])
    np.testing.assert_allclose(jg.Sphere(2.0).support(d), 2 * d / jnp.linalg.norm(d), rtol=1e-12)
    np.testing.assert_allclose(jg.Box(jnp.array([1.0, 2, 3])).support(d), [1, -2, 3])
    np.testing.assert_allclose(jg.Capsule(0.5, 2.0).support(d),
                               np.array([0, 0, 2.0]) + 0.5 * d / jnp.linalg.norm(d), rtol=1e-12)
    np.testing.assert_allclose(jg.Cylinder(1.0, 2.0).support(d), [0.6, -0.8, 2.0], rtol=1e-12)
    np.testing.assert_allclose(jg.Cone(1.0, 2.0).support(d), [0, 0, 2.0])
    np.testing.assert_allclose(jg.Cone(1.0, 2.0).support(-d), [-0.6, 0.8, -2.0], rtol=1e-12)


@pytest.mark.parametrize("name", list(PRIMITIVE_KINDS) + ["affine", "minkowski", "rounded", "hull"])
def test_support_ignores_the_direction_length(name, rng):
    """float32: a direction's length, from 1e-15 to 1e18, does not change its support point. GJK's
    search direction shrinks to ~eps·size near contact (1e-13 on millimetre shapes); a support that
    squares it underflows and answers as for a zero direction (a float32 sweep found it)."""
    shape = jax.tree_util.tree_map(lambda leaf: jnp.asarray(leaf, jnp.float32),
                                   all_shapes(np.random.default_rng(7))[name])
    directions = jnp.asarray(rng.normal(size=(50, 3)), jnp.float32)
    unit = np.asarray(_supports(shape, directions))
    for length in (1e-15, 1e-10, 1e10, 1e18):
        np.testing.assert_allclose(_supports(shape, directions * length), unit, rtol=1e-5, atol=1e-6,
                                   err_msg=f"direction length {length:g}")


@pytest.mark.parametrize("batch_shape", [(), (1,), (3, 2)])
def test_batched_shapes_under_vmap(batch_shape, rng):
    half_extents = rng.uniform(0.5, 1.5, size=batch_shape + (3,))
    directions = rng.normal(size=batch_shape + (3,))

    def support(shape, direction):
        return shape.support(direction)

    for _ in batch_shape:
        support = jax.vmap(support)
    got = support(jg.Box(jnp.asarray(half_extents)), jnp.asarray(directions))
    np.testing.assert_allclose(got, np.where(directions >= 0, half_extents, -half_extents))


def test_core_support_near_keeps_the_hinted_vertex_of_a_tie(rng):
    """A direction exposing a face of a rotated cube (its four vertices' scores equal up to rounding):
    `core_support_near` returns whichever of them is hinted, for plain, climbing and packed polytopes,
    and a maximising vertex whatever the hint."""
    q = rng.normal(size=4)
    rotation = np.asarray(jg.Pose(jnp.zeros(3), jnp.asarray(q / np.linalg.norm(q))).rotation_matrix())
    cube = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    vertices = cube @ rotation.T
    direction = jnp.asarray(rotation[:, 0])
    face = vertices[cube[:, 0] > 0]
    shapes = {"polytope": jg.Polytope(jnp.asarray(vertices)),
              "climbing": jg.ClimbingPolytope.from_points(vertices),
              "packed": jg.pack([jg.Polytope(jnp.asarray(vertices))], num_vertices=10)}
    shapes["packed"] = jax.tree_util.tree_map(lambda leaf: leaf[0], shapes["packed"])
    for name, shape in shapes.items():
        near = jax.jit(jax.vmap(shape.core_support_near, in_axes=(None, 0)))
        np.testing.assert_allclose(near(direction, jnp.asarray(face)), face, atol=1e-12, err_msg=name)
        far = near(direction, jnp.asarray(-3 * vertices))
        np.testing.assert_allclose(far @ np.asarray(direction), 1.0, atol=1e-12, err_msg=name)


def test_core_support_near_keeps_the_hinted_end_of_a_straight_side(rng):
    """Directions exposing a straight side, whose two ends tie up to rounding: a capsule's segment, a
    cylinder's side, a cone's slant, and the side of an `Affine` capsule (its margin turns with the
    direction, so turning the direction cannot reach the ends; `_refine` holds them by hints).
    `core_support_near` returns the end nearer the hint; tilted off the side, the support whatever the
    hint."""
    radius, half = jnp.asarray(0.3), jnp.asarray(0.5)
    azimuth, up = np.array([0.6, 0.8, 0.0]), np.array([0.0, 0.0, 1.0])
    rotation = np.asarray(jg.Pose(jnp.zeros(3), jnp.asarray(random_rotation(rng))).rotation_matrix())
    linear, offset = rotation * [0.7, 1.3, 1.0], np.array([0.1, -0.2, 0.05])
    segment = [half * up, -half * up]
    cases = {
        "capsule": (jg.Capsule(radius, half), azimuth, segment),
        "cylinder": (jg.Cylinder(radius, half), azimuth, [radius * azimuth + end for end in segment]),
        "cone": (jg.Cone(radius, half), np.array([2 * half * 0.6, 2 * half * 0.8, radius]),
                 [half * up, radius * azimuth - half * up]),
        # Lᵀ d ∝ the capsule's own side direction; its ends are L (±half·z + radius·azimuth) + offset.
        "affine capsule": (jg.Affine(jg.Capsule(radius, half), jnp.asarray(linear), jnp.asarray(offset)),
                           np.linalg.solve(linear.T, azimuth),
                           [linear @ (end + radius * azimuth) + offset for end in segment]),
    }
    for name, (shape, direction, ends) in cases.items():
        near = jax.jit(jax.vmap(shape.core_support_near, in_axes=(None, 0)))
        direction = jnp.asarray(direction / np.linalg.norm(direction))
        ends = np.stack(ends)
        hints = ends + 0.2 * rng.normal(size=ends.shape) * np.linalg.norm(ends[0] - ends[1])
        np.testing.assert_allclose(near(direction, jnp.asarray(hints)), ends, atol=1e-12, err_msg=name)
        tilted = direction + 1e-3 * jnp.asarray(ends[0] - ends[1])  # towards the first end
        support = shape.core_support(tilted)
        np.testing.assert_allclose(near(tilted, jnp.asarray(hints)), np.stack([support, support]),
                                   atol=1e-12, err_msg=name)


ALL_NAMES = list(PRIMITIVE_KINDS) + ["affine", "minkowski", "rounded", "hull", "masked_polytope"]


@pytest.mark.parametrize("name", ALL_NAMES)
def test_reach_bounds_every_support_point_tightly(name, rng):
    shape = all_shapes(np.random.default_rng(7))[name]
    directions = np.vstack([np.eye(3), -np.eye(3), rng.normal(size=(2000, 3))])
    lengths = np.linalg.norm(np.asarray(_supports(shape, jnp.asarray(directions))), axis=1)
    reach = float(shape.reach())
    assert np.max(lengths) <= reach * (1 + 1e-12)
    if name not in ("affine", "minkowski", "hull"):  # composites bound it by their pieces
        assert np.max(lengths) >= reach * (1 - 2e-2)  # attained, up to the directions sampled


@pytest.mark.parametrize("name", ["box", "polytope", "masked_polytope"])
def test_exposed_vertices_are_support_points(name, rng):
    """The vertices a feature lists maximise the direction, and the support point is among them."""
    shape = all_shapes(np.random.default_rng(7))[name]
    vertices = np.asarray(shape.corners() if name == "box" else shape.vertices)
    directions = np.vstack([np.eye(3), -np.eye(3), rng.normal(size=(200, 3))])
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    features = jax.jit(jax.vmap(lambda d: shape.feature(d, 1e-9)))(jnp.asarray(directions))
    support = np.asarray(_supports(shape, jnp.asarray(directions)))
    for direction, point, listed in zip(directions, support, np.asarray(features.vertices), strict=True):
        listed = vertices[listed[listed >= 0]]
        assert len(listed) > 0
        np.testing.assert_allclose(listed @ direction, point @ direction, atol=1e-9)
        assert np.min(np.linalg.norm(listed - point, axis=1)) <= 1e-12


@pytest.mark.parametrize("name", ALL_NAMES)
def test_checks_accept_the_shape_and_reject_batch_axes(name):
    shape = all_shapes(np.random.default_rng(7))[name]
    shape.check("shape")
    assert bool(shape.is_valid())
    stacked = jax.tree_util.tree_map(lambda leaf: jnp.stack([leaf, leaf]), shape)
    with pytest.raises(ValueError, match="jax.vmap"):
        stacked.check("shape")


def test_structures_of_different_kinds_never_compare_equal():
    # jaxlib 0.10 compares dataclass-node structures by field names only; a jit cache then handed
    # a Cylinder the program traced for a Capsule (same fields) whenever their hashes met in a bucket.
    shapes = all_shapes(np.random.default_rng(7))
    structures = {name: jax.tree.structure(shape) for name, shape in shapes.items()}
    for name, structure in structures.items():
        assert structure == jax.tree.structure(jax.tree.map(lambda leaf: leaf, shapes[name]))
        assert [other for other in structures if structures[other] == structure] == [name]
