"""World bounds (`aabb`) against float64 support functions, and the broadphase (`candidate_pairs`)
against brute force over all pairs of bounds, on random scenes."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgjk as jg
from jaxgjk._broadphase import _count_dtype, pairs_from_bounds
from jaxgjk.reference import support_function

from .shape_samples import PRIMITIVE_KINDS, random_shape

AXES = np.concatenate([np.eye(3), -np.eye(3)])
aabb = jax.jit(jg.aabb)
pairs_from_bounds_jit = jax.jit(pairs_from_bounds, static_argnames="capacity")


def reference_bounds(shape, pose):
    """(lower (3,), upper (3,)) float64 from the closed-form support functions of jaxgjk.reference."""
    values = support_function(shape, pose, AXES)
    return -values[3:], values[:3]


def random_pose(rng, spread=1.0, dtype=np.float64):
    return jg.Pose(jnp.asarray(rng.uniform(-spread, spread, 3), dtype),
                   jnp.asarray(rng.normal(size=4), dtype))


def composites(rng):
    box, cone = random_shape("box", rng), random_shape("cone", rng)
    linear = np.eye(3) + 0.4 * rng.normal(size=(3, 3))
    return [jg.Rounded(box, jnp.asarray(0.2)), jg.MinkowskiSum(cone, random_shape("ellipsoid", rng)),
            jg.Affine(random_shape("cylinder", rng), jnp.asarray(linear), jnp.asarray([0.3, -0.2, 0.1])),
            jg.ConvexHull((random_shape("sphere", rng), jg.Affine(box, jnp.asarray(linear),
                                                                    jnp.asarray([1.0, 0.0, 0.0]))))]


def test_aabb_of_every_kind_is_its_support_function_along_the_axes(rng):
    shapes = [random_shape(kind, rng) for kind in PRIMITIVE_KINDS] + composites(rng)
    for shape in shapes:
        for _ in range(3):
            pose = random_pose(rng, spread=30.0)
            lower, upper = aabb(shape, pose)
            expected_lower, expected_upper = reference_bounds(shape, pose)
            name = type(shape).__name__
            np.testing.assert_allclose(lower, expected_lower, rtol=0, atol=1e-13, err_msg=name)
            np.testing.assert_allclose(upper, expected_upper, rtol=0, atol=1e-13, err_msg=name)
    # A climbing polytope has its hull's bounds.
    points = rng.normal(size=(30, 3))
    pose = random_pose(rng)
    climbing = jg.ClimbingPolytope.from_points(points)
    expected = reference_bounds(jg.Polytope(jnp.asarray(points)), pose)
    np.testing.assert_allclose(aabb(climbing, pose), expected, rtol=0, atol=1e-13)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_aabb_of_packed_stacks_under_vmap(rng, dtype):
    primitives = [random_shape(kind, rng, dtype=dtype) for kind in PRIMITIVE_KINDS * 2]
    poses = jg.Pose(jnp.asarray(rng.uniform(-100, 100, (len(primitives), 3)), dtype),
                    jnp.asarray(rng.normal(size=(len(primitives), 4)), dtype))
    lower, upper = jax.jit(jax.vmap(jg.aabb))(jg.pack(primitives), poses)
    assert lower.dtype == dtype and lower.shape == (len(primitives), 3)
    for index, shape in enumerate(primitives):
        pose = jax.tree_util.tree_map(lambda leaf, index=index: leaf[index], poses)
        expected_lower, expected_upper = reference_bounds(shape, pose)
        # float32: a few roundings of the coordinates (~100).
        tolerance = 1e-13 if dtype == np.float64 else 1e-4
        np.testing.assert_allclose(lower[index], expected_lower, rtol=0, atol=tolerance)
        np.testing.assert_allclose(upper[index], expected_upper, rtol=0, atol=tolerance)


def test_aabb_of_a_half_space_is_finite_only_across_its_plane():
    half_space, translation = jg.HalfSpace(), jnp.array([1.0, 2.0, 3.0])
    # z <= 3; flipped about x (normal -z): z >= 3; any other rotation: unbounded every way.
    for rotation, lower_z, upper_z in (([1.0, 0, 0, 0], -np.inf, 3.0), ([0.0, 1, 0, 0], 3.0, np.inf),
                                       ([0.3, 0.2, -0.5, 0.1], -np.inf, np.inf)):
        lower, upper = aabb(half_space, jg.Pose(translation, jnp.array(rotation)))
        np.testing.assert_array_equal(lower, [-np.inf, -np.inf, lower_z])
        np.testing.assert_array_equal(upper, [np.inf, np.inf, upper_z])


def test_aabb_of_invalid_input_is_unbounded():
    sphere = jg.Sphere(jnp.asarray(1.0))
    for shape, pose in [(jg.Sphere(jnp.asarray(np.nan)), jg.Pose.identity(jnp.float64)),
                        (jg.Sphere(jnp.asarray(-1.0)), jg.Pose.identity(jnp.float64)),
                        (sphere, jg.Pose(jnp.zeros(3), jnp.zeros(4))),
                        (sphere, jg.Pose(jnp.array([np.inf, 0, 0]), jnp.array([1.0, 0, 0, 0])))]:
        lower, upper = jg.aabb(shape, pose)
        assert np.all(lower == -np.inf) and np.all(upper == np.inf)
    with pytest.raises(ValueError, match="vmap"):
        jg.aabb(jg.Box(jnp.ones((4, 3))), jg.Pose(jnp.zeros((4, 3)), jnp.ones((4, 4))))


# ------------------------------------------------------------------------------------------------
# Scenes and brute force
# ------------------------------------------------------------------------------------------------

SCENE_SIZE = 240
MARGIN = 0.1


def scene(rng, style, n=SCENE_SIZE, dtype=np.float64):
    """(primitives, packed shapes, poses) of `n` mixed kinds: `uniform` unit-size shapes in a box,
    `clustered` in a few tight clusters, `scales` with sizes 1e-3 (45%), 0.5 (50%) and 10 (5%)."""
    sizes = {"uniform": [0.5], "clustered": [0.5], "scales": [1e-3] * 9 + [0.5] * 10 + [10.0]}[style]
    primitives = [random_shape(PRIMITIVE_KINDS[i % 7], rng, size=rng.choice(sizes), dtype=dtype)
                  for i in range(n)]
    if style == "clustered":
        centres = rng.uniform(0, 8, (4, 3))[rng.integers(4, size=n)] + rng.normal(scale=0.6, size=(n, 3))
    else:
        centres = rng.uniform(0, 8, (n, 3))
    poses = jg.Pose(jnp.asarray(centres, dtype), jnp.asarray(rng.normal(size=(n, 4)), dtype))
    return primitives, jg.pack(primitives, dtype=dtype), poses


def scene_bounds(primitives, poses):
    bounds = [reference_bounds(shape, jax.tree_util.tree_map(lambda leaf, i=i: leaf[i], poses))
              for i, shape in enumerate(primitives)]
    return np.array([low for low, _ in bounds]), np.array([high for _, high in bounds])


def bound_gaps(lower, upper, lower_b=None, upper_b=None):
    """Largest per-axis gap between every two boxes (N, M); ≤ margin means within the margin."""
    if lower_b is None:
        lower_b, upper_b = lower, upper
    return np.max(np.maximum(lower_b[None] - upper[:, None], lower[:, None] - upper_b[None]), axis=-1)


def found_pairs(candidates, capacity, one_set=True):
    """The pairs as a set, after checking the layout: `count` pairs, then −1 padding."""
    index_a, index_b = np.asarray(candidates.index_a), np.asarray(candidates.index_b)
    count = int(candidates.count)
    assert index_a.shape == (capacity,) and bool(candidates.overflow) == (count > capacity)
    stored = min(count, capacity)
    assert np.all(index_a[stored:] == -1) and np.all(index_b[stored:] == -1)
    assert np.all(index_a[:stored] >= 0) and np.all(index_b[:stored] >= 0)
    if one_set:
        assert np.all(index_a[:stored] < index_b[:stored])
    pairs = set(zip(index_a[:stored].tolist(), index_b[:stored].tolist(), strict=True))
    assert len(pairs) == stored, "a pair was reported twice"
    return pairs


def assert_same_as_brute_force(pairs, gaps, margin, slack, one_set=True):
    """Every pair with gap ≤ margin found; every pair found has gap ≤ margin + slack (rounding)."""
    required = gaps <= margin
    if one_set:
        required = np.triu(required, 1)
    missing = set(zip(*np.nonzero(required), strict=True)) - {(int(a), int(b)) for a, b in pairs}
    assert not missing, f"{len(missing)} pairs within the margin not found, e.g. {sorted(missing)[:3]}"
    found_gaps = np.array([gaps[a, b] for a, b in pairs]) if pairs else np.zeros(0)
    assert np.all(found_gaps <= margin + slack), f"found a pair {found_gaps.max() - margin} beyond the margin"


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("style", ["uniform", "clustered", "scales"])
def test_candidate_pairs_match_brute_force(rng, style, dtype):
    primitives, shapes, poses = scene(rng, style, dtype=dtype)
    capacity = 4096
    candidates = jg.candidate_pairs(shapes, poses, margin=MARGIN, capacity=capacity)
    assert not candidates.overflow
    lower, upper = scene_bounds(primitives, poses)
    gaps = bound_gaps(lower, upper)
    # The bounds are widened by 32 roundings of their largest coordinate (float32: 8·32·eps ~ 3e-5).
    slack = 1e-12 if dtype == np.float64 else 64 * np.finfo(np.float32).eps * 40
    pairs = found_pairs(candidates, capacity)
    assert_same_as_brute_force(pairs, gaps, MARGIN, slack)
    assert len(pairs) > 100  # the scenes are dense enough to test something


def test_boxes_exactly_at_the_margin_are_candidates_and_beyond_it_not():
    # Unit cubes with exact binary coordinates: box 0 is 0.25 (the margin) from box 1 across a face,
    # from 2 across an edge and from 3 across a corner, and 0.25 + 2^-30 from 4 and 5.
    margin = 0.25
    centres = np.array([[0, 0, 0], [1.25, 0, 0], [0, 1.25, 1.25], [1.25, 1.25, 1.25], [-1.25 - 2**-30, 0, 0],
                        [0, -1.25 - 2**-30, 0], [3.0, 0, 0], [2.5, 0, 0]])
    n = len(centres)
    boxes = jg.Box(jnp.full((n, 3), 0.5))
    poses = jg.Pose(jnp.asarray(centres), jnp.tile(jnp.array([1.0, 0, 0, 0]), (n, 1)))
    pairs = found_pairs(jg.candidate_pairs(boxes, poses, margin=margin, capacity=32), 32)
    gaps = bound_gaps(centres - 0.5, centres + 0.5)
    expected = {(a, b) for a in range(n) for b in range(a + 1, n) if gaps[a, b] <= margin}
    assert {(0, 1), (0, 2), (0, 3)} <= expected and (0, 4) not in expected and (0, 5) not in expected
    assert pairs == expected


def test_overflow_is_counted_and_retry_recovers_every_pair(rng):
    primitives, shapes, poses = scene(rng, "clustered")
    complete = found_pairs(jg.candidate_pairs(shapes, poses, margin=MARGIN, capacity=4096), 4096)
    small = jg.candidate_pairs(shapes, poses, margin=MARGIN, capacity=64)
    assert small.overflow and int(small.count) == len(complete)
    assert found_pairs(small, 64) <= complete
    retried = jg.retry_on_overflow(jg.candidate_pairs, shapes, poses, margin=MARGIN, capacity=64)
    capacity = retried.index_a.shape[0]
    assert capacity >= len(complete) and capacity & (capacity - 1) == 0
    assert found_pairs(retried, capacity) == complete


def test_allowed_mask_and_collision_groups_filter_pairs(rng):
    primitives, shapes, poses = scene(rng, "clustered")
    gaps = bound_gaps(*scene_bounds(primitives, poses))
    allowed = rng.uniform(size=(SCENE_SIZE, SCENE_SIZE)) < 0.5
    # MuJoCo's rule: a robot (contype 1, conaffinity 2) meets obstacles (2, 1), neither itself.
    is_robot = np.arange(SCENE_SIZE) % 3 == 0
    groups = (np.where(is_robot, 1, 2), np.where(is_robot, 2, 1))
    candidates = jg.candidate_pairs(shapes, poses, margin=MARGIN, capacity=4096, allowed=allowed,
                                    groups=groups)
    kept = (allowed | allowed.T) & (is_robot[:, None] != is_robot[None])
    assert_same_as_brute_force(found_pairs(candidates, 4096), np.where(kept, gaps, np.inf), MARGIN, 1e-12)


def test_a_by_b_with_a_shared_shape_and_groups(rng):
    primitives, shapes, poses = scene(rng, "scales")
    sphere = jg.Sphere(jnp.asarray(0.7))
    sphere_poses = jg.Pose(jnp.asarray(rng.uniform(0, 8, (50, 3))), jnp.asarray(rng.normal(size=(50, 4))))
    gaps = bound_gaps(*scene_bounds(primitives, poses), *scene_bounds([sphere] * 50, sphere_poses))
    # Groups per set: B's odd spheres meet nothing.
    even = np.where(np.arange(50) % 2 == 0, 1, 0)
    groups, groups_b = (np.ones(SCENE_SIZE, np.int32), np.ones(SCENE_SIZE, np.int32)), (even, even)
    candidates = jg.candidate_pairs(shapes, poses, margin=MARGIN, capacity=4096, shapes_b=sphere,
                                    poses_b=sphere_poses, groups=groups, groups_b=groups_b)
    pairs = found_pairs(candidates, 4096, one_set=False)
    assert_same_as_brute_force(pairs, np.where(even == 1, gaps, np.inf), MARGIN, 1e-12, one_set=False)
    assert len(pairs) > 50


def test_unbounded_and_nan_bounds_meet_everything_they_may_reach(rng):
    # Boxes in [0, 10]³, plus: a half-space z <= 1 (an axis-aligned plane: one finite bound), a tilted
    # half-space (unbounded on every axis), an infinite slab x in [4, 5], and bounds with a NaN.
    n = 60
    centres = rng.uniform(0, 10, (n, 3))
    lower, upper = centres - 0.3, centres + 0.3
    inf = np.inf
    lower = np.concatenate([lower, [[-inf, -inf, -inf], [-inf, -inf, -inf], [4, -inf, -inf], [np.nan, 0, 0]]])
    upper = np.concatenate([upper, [[inf, inf, 1.0], [inf, inf, inf], [5, inf, inf], [1, 1, 1]]])
    candidates = pairs_from_bounds_jit(jnp.asarray(lower), jnp.asarray(upper), margin=MARGIN, capacity=2048)
    pairs = found_pairs(candidates, 2048)
    sanitized_lower, sanitized_upper = np.where(np.isnan(lower), -inf, lower), upper
    gaps = bound_gaps(sanitized_lower, sanitized_upper)
    assert not np.any(np.isnan(gaps))
    assert_same_as_brute_force(pairs, gaps, MARGIN, 1e-12)
    assert {(a, n + 1) for a in range(n)} <= pairs  # the tilted half-space meets every box
    assert (n, n + 1) in pairs and (n + 1, n + 2) in pairs and (n + 2, n + 3) not in pairs
    # A × B with the unbounded objects in B.
    candidates = pairs_from_bounds_jit(jnp.asarray(lower[:n]), jnp.asarray(upper[:n]), margin=MARGIN,
                                       capacity=2048, lower_b=jnp.asarray(lower[n:]),
                                       upper_b=jnp.asarray(upper[n:]))
    pairs = found_pairs(candidates, 2048, one_set=False)
    assert_same_as_brute_force(pairs, bound_gaps(sanitized_lower[:n], upper[:n], sanitized_lower[n:],
                                                 upper[n:]), MARGIN, 1e-12, one_set=False)


def test_batched_over_environments_equals_one_scene_at_a_time(rng):
    primitives, shapes, poses = scene(rng, "uniform", n=40)
    environments = 5
    batch = jg.Pose(jnp.asarray(rng.uniform(0, 3, (environments, 40, 3))),
                    jnp.asarray(rng.normal(size=(environments, 40, 4))))
    batched = jax.vmap(lambda pose: jg.candidate_pairs(shapes, pose, margin=MARGIN, capacity=256))(batch)
    assert batched.index_a.shape == (environments, 256)
    for environment in range(environments):
        pose = jax.tree_util.tree_map(lambda leaf, e=environment: leaf[e], batch)
        one = jax.tree_util.tree_map(lambda leaf, e=environment: leaf[e], batched)
        gaps = bound_gaps(*scene_bounds(primitives, pose))
        assert_same_as_brute_force(found_pairs(one, 256), gaps, MARGIN, 1e-12)


def test_tiny_sets_and_counts_beyond_int32():
    sphere = jg.Sphere(jnp.asarray(1.0))
    one = jg.Pose(jnp.zeros((1, 3)), jnp.array([[1.0, 0, 0, 0]]))
    candidates = jg.candidate_pairs(sphere, one, margin=0.0, capacity=4)
    assert int(candidates.count) == 0 and np.all(np.asarray(candidates.index_a) == -1)
    two = jg.Pose(jnp.array([[0.0, 0, 0], [2.0, 0, 0]]), jnp.tile(jnp.array([1.0, 0, 0, 0]), (2, 1)))
    assert found_pairs(jg.candidate_pairs(sphere, two, margin=0.0, capacity=4), 4) == {(0, 1)}
    # 65 537 boxes at one place: 2^31 + 65 536 pairs. With x64 the count would be int64 (and the sweep
    # long); without it, the count saturates.
    assert _count_dtype(2**31 - 1) == jnp.int32 and _count_dtype(2**31) == jnp.int64
    with jax.enable_x64(False):
        unit = jnp.ones((65537, 3), jnp.float32)
        saturated = pairs_from_bounds_jit(0 * unit, unit, margin=0.0, capacity=4)
        assert saturated.count == 2**31 - 1 and saturated.overflow and saturated.count.dtype == jnp.int32
    with pytest.raises(ValueError, match="capacity"):
        jg.candidate_pairs(sphere, two, margin=0.0, capacity=0)
    with pytest.raises(ValueError, match="margin"):
        jg.candidate_pairs(sphere, two, margin=-1.0, capacity=4)
