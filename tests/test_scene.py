"""`nearby_pairs` (broadphase, then the query on its candidates) against the dense all-pairs query:
the same pairs within the margin, the same results, padding that cannot be mistaken for a pair."""

import jax
import jax.numpy as jnp
import numpy as np

import jaxgjk as jg
from jaxgjk.reference import capsule_capsule, capsule_endpoints, pose_arrays, sphere_box, support_function

from .shape_samples import PRIMITIVE_KINDS, random_shape


def stored(found):
    """(scene, index_a, index_b, result) of the pairs stored, and the padding's result, as NumPy."""
    count = int(found.count)
    assert not found.overflow and count <= found.index_a.shape[0]
    take = lambda part: jax.tree_util.tree_map(lambda leaf: np.asarray(leaf)[part], found.result)  # noqa: E731
    indices = (found.scene, found.index_a, found.index_b)
    scene, index_a, index_b = (np.asarray(index[:count]) for index in indices)
    return scene, index_a, index_b, take(slice(0, count)), take(slice(count, None))


def assert_padding(found, padding):
    count = int(found.count)
    assert np.all(np.asarray(found.index_a[count:]) == -1) and np.all(np.asarray(found.index_b[count:]) == -1)
    if isinstance(padding, jg.DistanceResult):
        assert np.all(padding.distance == np.inf) and np.all(padding.status == jg.Status.BOUND_EXCEEDED)
        assert np.all(padding.feature_a.dimension == jg.FeatureDim.NONE)
        assert np.all(padding.point_a == 0) and np.all(padding.normal == 0)
    else:
        assert not np.any(padding)


def test_nearby_distance_finds_the_pairs_of_the_all_pairs_distance(rng):
    # Mixed kinds and sizes (0.005 to 2) in a 3-unit box; far off, two cubes exactly `margin` apart
    # and two spheres 0.1 apart (closed forms that check each pair gets its own shapes and poses).
    margin = 0.25
    sizes = rng.choice([5e-3, 0.3, 2.0], p=[0.3, 0.6, 0.1], size=38)
    primitives = [random_shape(PRIMITIVE_KINDS[i % 7], rng, size=size) for i, size in enumerate(sizes)]
    primitives += [jg.Box(jnp.full(3, 0.5))] * 2 + [jg.Sphere(jnp.asarray(0.5)), jg.Sphere(jnp.asarray(1.0))]
    far_off = [[20.0, 0, 0], [21.25, 0, 0], [0, 20, 0], [0, 20, 1.6]]
    centres = np.concatenate([rng.uniform(0, 3, (38, 3)), far_off])
    rotations = np.concatenate([rng.normal(size=(38, 4)), rng.normal(size=(4, 4))])
    rotations[38:40] = [1.0, 0, 0, 0]
    shapes, poses = jg.pack(primitives), jg.Pose(jnp.asarray(centres), jnp.asarray(rotations))
    # The reference: every pair, without a bound (an infinite margin; the same compiled kernel).
    all_pairs = 42 * 41 // 2
    dense = jg.nearby_pairs(jg.distance, shapes, poses, margin=np.inf, capacity=all_pairs)
    assert int(dense.count) == all_pairs and np.all(np.asarray(dense.result.status) <= jg.Status.INTERSECTING)
    reference = np.full((42, 42), np.inf)
    reference[np.asarray(dense.index_a), np.asarray(dense.index_b)] = np.asarray(dense.result.distance)
    assert abs(reference[38, 39] - margin) < 1e-15 and abs(reference[40, 41] - 0.1) < 1e-15

    found = jg.nearby_pairs(jg.distance, shapes, poses, margin=margin, capacity=all_pairs)
    _, index_a, index_b, result, padding = stored(found)
    assert_padding(found, padding)
    assert int(found.count) < all_pairs / 3
    near = result.distance <= margin
    pairs = set(zip(index_a[near].tolist(), index_b[near].tolist(), strict=True))
    assert pairs == set(zip(*np.nonzero(reference <= margin), strict=True)) and len(pairs) > 20
    np.testing.assert_allclose(result.distance[near], reference[index_a[near], index_b[near]], rtol=0,
                               atol=1e-12)
    # The others are beyond the margin; those stopped at the bound report a lower bound.
    beyond = ~near
    assert np.all(np.isin(result.status[beyond], [jg.Status.SEPARATED, jg.Status.BOUND_EXCEEDED]))
    assert np.all(result.distance[beyond] <= reference[index_a[beyond], index_b[beyond]] + 1e-12)


def one(tree, index):
    return jax.tree_util.tree_map(lambda leaf: leaf[index], tree)


def test_nearby_intersect_between_two_sets_and_retry_on_overflow(rng):
    boxes = jg.Box(jnp.asarray(rng.uniform(0.1, 0.5, (30, 3)), jnp.float32))
    box_poses = jg.Pose(jnp.asarray(rng.uniform(0, 3, (30, 3)), jnp.float32),
                        jnp.asarray(rng.normal(size=(30, 4)), jnp.float32))
    sphere = jg.Sphere(jnp.asarray(0.3, jnp.float32))
    centres = rng.uniform(0, 3, (20, 3))
    sphere_poses = jg.Pose(jnp.asarray(centres, jnp.float32),
                           jnp.tile(jnp.array([1.0, 0, 0, 0], jnp.float32), (20, 1)))
    found = jg.retry_on_overflow(jg.nearby_pairs, jg.intersect, boxes, box_poses, margin=0.0, capacity=8,
                                 shapes_b=sphere, poses_b=sphere_poses)
    assert found.index_a.shape[0] >= 16
    _, index_a, index_b, result, padding = stored(found)
    assert_padding(found, padding)
    # Closed form (float64) of every pair; float32 decides pairs more than 1e-5 from touching.
    reference = np.array([[sphere_box(centres[j], 0.3, boxes.half_extents[i], one(box_poses, i))["distance"]
                           for j in range(20)] for i in range(30)])
    overlapping = set(zip(index_a[result].tolist(), index_b[result].tolist(), strict=True))
    assert set(zip(*np.nonzero(reference < -1e-5), strict=True)) <= overlapping
    assert overlapping <= set(zip(*np.nonzero(reference < 1e-5), strict=True)) and len(overlapping) > 10
    # Under vmap (each scene with its own capacity): the same, and nothing where the boxes moved away.
    moved = jg.Pose(box_poses.translation + jnp.array([100.0, 0, 0], jnp.float32), box_poses.rotation)
    twice = jax.tree_util.tree_map(lambda *leaves: jnp.stack(leaves), box_poses, moved)
    batched = jax.jit(jax.vmap(lambda pose: jg.nearby_pairs(
        jg.intersect, boxes, pose, margin=0.0, capacity=found.index_a.shape[0], shapes_b=sphere,
        poses_b=sphere_poses)))(twice)
    for scene, expected in ((0, overlapping), (1, set())):
        _, index_a, index_b, result, padding = stored(one(batched, scene))
        assert_padding(one(batched, scene), padding)
        assert set(zip(index_a[result].tolist(), index_b[result].tolist(), strict=True)) == expected


def test_nearby_signed_distance_over_a_batch_of_scenes(rng):
    # Scenes of 12 capsules (a robot's links, say), their sizes varying from scene to scene; links 0-1
    # and 1-2 may not collide (adjacent), the rest may.
    scenes = 4
    radii, half_lengths = rng.uniform(0.05, 0.2, (scenes, 12)), rng.uniform(0.1, 0.4, (scenes, 12))
    capsules = jg.Capsule(jnp.asarray(radii), jnp.asarray(half_lengths))
    poses = jg.Pose(jnp.asarray(rng.uniform(0, 1.5, (scenes, 12, 3))),
                    jnp.asarray(rng.normal(size=(scenes, 12, 4))))
    allowed = np.ones((12, 12), bool)
    allowed[0, 1] = allowed[1, 0] = allowed[1, 2] = allowed[2, 1] = False
    margin = 0.05
    found = jg.nearby_pairs_batched(jg.signed_distance, capsules, poses, margin=margin, capacity=128,
                                    allowed=allowed)
    scene, index_a, index_b, result, padding = stored(found)
    assert_padding(found, padding)
    assert np.all(np.diff(scene) >= 0) and np.all(np.asarray(found.scene[int(found.count):]) == -1)
    penetrating = 0
    for environment in range(scenes):
        capsule = one(capsules, environment)
        ends = [capsule_endpoints(one(capsule, i), one(one(poses, environment), i)) for i in range(12)]
        reference = np.full((12, 12), np.inf)
        for a in range(12):
            for b in range(a + 1, 12):
                if allowed[a, b]:
                    reference[a, b] = capsule_capsule(*ends[a], radii[environment, a], *ends[b],
                                                      radii[environment, b])["distance"]
        near = (result.distance <= margin) & (scene == environment)
        pairs = set(zip(index_a[near].tolist(), index_b[near].tolist(), strict=True))
        assert pairs == set(zip(*np.nonzero(reference <= margin), strict=True))
        np.testing.assert_allclose(result.distance[near], reference[index_a[near], index_b[near]], atol=1e-9)
        penetrating += int(np.sum(result.distance[near] < 0))
    assert penetrating > 3


def test_gradient_of_a_scene_penalty_matches_central_differences(rng):
    # A clearance penalty over the pairs within the margin, differentiated through nearby_pairs.
    capsules = jg.Capsule(jnp.asarray(rng.uniform(0.05, 0.2, 12)), jnp.asarray(rng.uniform(0.1, 0.4, 12)))
    rotations = jnp.asarray(rng.normal(size=(12, 4)))
    translations = jnp.asarray(rng.uniform(0, 1.5, (12, 3)))
    margin = 0.2

    def penalty(translations):
        found = jg.nearby_pairs(jg.distance, capsules, jg.Pose(translations, rotations), margin=margin,
                                capacity=64)
        return jnp.sum(jnp.where(found.result.distance <= margin, (margin - found.result.distance) ** 2, 0))

    assert penalty(translations) > 0.1
    gradient = jax.jit(jax.grad(penalty))(translations)
    step = 1e-6
    for index in rng.choice(36, 8, replace=False):
        move = jnp.zeros(36).at[index].set(step).reshape(12, 3)
        central = (penalty(translations + move) - penalty(translations - move)) / (2 * step)
        np.testing.assert_allclose(gradient.reshape(-1)[index], central, rtol=0, atol=1e-7)


def test_nearby_pairs_with_a_floor_flat_and_tilted(rng):
    # Two scenes of 30 boxes over a half-space: a level floor z <= 0 (axis-aligned: the broadphase keeps
    # only the boxes near it) and a tilted one (unbounded every way: every box is a candidate).
    boxes = jg.Box(jnp.asarray(rng.uniform(0.1, 0.5, (30, 3))))
    poses = jg.Pose(jnp.asarray(rng.uniform([-3, -3, -0.5], [3, 3, 2.5], (2, 30, 3))),
                    jnp.asarray(rng.normal(size=(2, 30, 4))))
    floors = jg.Pose(jnp.zeros((2, 1, 3)), jnp.asarray([[[1.0, 0, 0, 0]], [[0.95, 0.2, -0.1, 0]]]))
    margin = 0.1
    found = jg.nearby_pairs_batched(jg.distance, boxes, poses, margin=margin, capacity=64,
                                    shapes_b=jg.HalfSpace(), poses_b=floors)
    scene, index_a, index_b, result, padding = stored(found)
    assert_padding(found, padding)
    assert np.all(index_b == 0) and np.sum(scene == 1) == 30 and np.sum(scene == 0) < 30
    for environment in range(2):
        normal = pose_arrays(one(one(floors, environment), 0))[0][:, 2]
        # Signed distance of each box to the plane: its lowest point along the normal.
        reference = np.array([-support_function(one(boxes, i), one(one(poses, environment), i), -normal)
                              for i in range(30)])
        near = (scene == environment) & (result.distance <= margin)
        assert set(index_a[near].tolist()) == set(np.flatnonzero(reference <= margin).tolist())
        np.testing.assert_allclose(result.distance[near], np.maximum(reference[index_a[near]], 0), atol=1e-12)
