"""Batch helpers: pairwise / pairs / self_pairs agree with one-pair queries, chunked, sharded, and
differentiable."""

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np

import jaxgjk as jg
import jaxgjk._gjk
import jaxgjk._solve


def scene(rng, n, dtype=np.float64):
    boxes = jg.Box(jnp.asarray(rng.uniform(0.2, 0.6, (n, 3)), dtype))
    quaternions = rng.normal(size=(n, 4))
    poses = jg.Pose(jnp.asarray(rng.uniform(-1.5, 1.5, (n, 3)), dtype), jnp.asarray(quaternions, dtype))
    return boxes, poses


def one(tree, i):
    return jax.tree_util.tree_map(lambda leaf: leaf[i], tree)


def test_pairwise_matches_single_queries_and_shared_geometry(rng):
    boxes, poses = scene(rng, 4)
    sphere = jg.Sphere(jnp.asarray(0.3))
    _, sphere_poses = scene(rng, 3)
    result = jg.pairwise(jg.signed_distance, boxes, poses, sphere, sphere_poses)
    assert result.distance.shape == (4, 3) and result.normal.shape == (4, 3, 3)
    single = jax.jit(jg.signed_distance)
    for i in range(4):
        for j in range(3):
            expected = single(one(boxes, i), one(poses, i), sphere, one(sphere_poses, j))
            np.testing.assert_allclose(result.distance[i, j], expected.distance, atol=1e-12)


def test_chunked_equals_unchunked_and_self_pairs_respect_the_mask(rng):
    boxes, poses = scene(rng, 6)
    whole = jg.pairwise(jg.distance, boxes, poses, boxes, poses)
    chunked = jg.pairwise(jg.distance, boxes, poses, boxes, poses, chunk_size=5)
    np.testing.assert_allclose(whole.distance, chunked.distance, rtol=1e-13)  # ulps: batch layout
    allowed = np.ones((6, 6), bool)
    allowed[0, 1] = allowed[1, 0] = False
    index_a, index_b, result = jg.self_pairs(jg.distance, boxes, poses, allowed=allowed)
    assert len(index_a) == 15 - 1 and np.all(index_a < index_b)
    assert (0, 1) not in set(zip(index_a.tolist(), index_b.tolist(), strict=True))
    np.testing.assert_allclose(result.distance, whole.distance[index_a, index_b], rtol=1e-13)
    intersecting = jg.pairs(jg.intersect, boxes, poses, index_a, index_b)
    np.testing.assert_array_equal(intersecting, whole.distance[index_a, index_b] <= 0)


def test_loops_in_groups_under_vmap_equal_one_pair_queries(rng, monkeypatch):
    # On the CPU a vmapped query runs GJK batch-last in groups of `_gjk.CPU_GJK_CHUNK` lanes (the last
    # group padded) and EPA on the overlapping lanes only, `_solve.CPU_EPA_CHUNK` at a time
    # (`_gate.where_active`), each EPA phase after the first on the lanes still running,
    # `_epa.CPU_EPA_TAIL_CHUNK` at a time: the statuses, iterations, values and gradients of one-pair
    # queries.
    monkeypatch.setattr(jaxgjk._solve, "CPU_EPA_CHUNK", 4)
    monkeypatch.setattr(jaxgjk._gjk, "CPU_GJK_CHUNK", 4)
    monkeypatch.setattr(jaxgjk._epa, "EPA_PHASE_STEPS", (3, 6))
    monkeypatch.setattr(jaxgjk._epa, "CPU_EPA_TAIL_CHUNK", 3)
    jax.clear_caches()  # a query's traced program holds the constants: trace it again
    boxes, poses = scene(rng, 13)
    ellipsoid = jg.Ellipsoid(jnp.asarray([0.5, 0.3, 0.4]))
    _, ellipsoid_poses = scene(rng, 13)
    centres = jg.Pose(poses.translation + 0.3 * (ellipsoid_poses.translation - poses.translation),
                      ellipsoid_poses.rotation)  # most pairs overlap

    def signed_and_gradient(box, translation, rotation, centre):
        def signed(translation):
            result = jg.signed_distance(box, jg.Pose(translation, rotation), ellipsoid, centre)
            return result.distance, result

        gradient, result = jax.grad(signed, has_aux=True)(translation)
        return result, gradient

    batched, batched_gradient = jax.jit(jax.vmap(signed_and_gradient))(
        boxes, poses.translation, poses.rotation, centres)
    single = jax.jit(signed_and_gradient)
    penetrating = 0
    for i in range(13):
        result, gradient = single(one(boxes, i), poses.translation[i], poses.rotation[i], one(centres, i))
        assert int(batched.status[i]) == int(result.status)
        assert int(batched.iterations[i]) == int(result.iterations)
        penetrating += int(result.status) == jg.Status.PENETRATING
        np.testing.assert_allclose(batched.distance[i], result.distance, rtol=0, atol=1e-12)
        np.testing.assert_allclose(batched.normal[i], result.normal, rtol=0, atol=1e-12)
        np.testing.assert_allclose(batched_gradient[i], gradient, rtol=0, atol=1e-12)
    assert penetrating >= 8  # several trips of 4 lanes
    gjk_only = jax.jit(jax.vmap(lambda box, translation, rotation, centre: jg.distance(
        box, jg.Pose(translation, rotation), ellipsoid, centre)))(boxes, poses.translation, poses.rotation,
                                                                  centres)
    epa_steps = np.asarray(batched.iterations - gjk_only.iterations)
    assert np.sum(epa_steps > 3) > 3 and np.max(epa_steps) > 6  # the later phases ran, in trips of 3


def test_gradient_through_pairwise(rng):
    boxes, poses = scene(rng, 3)
    others, other_poses = scene(rng, 3)

    def loss(translations):
        moved = jg.Pose(translations, poses.rotation)
        return jnp.sum(jg.pairwise(jg.signed_distance, boxes, moved, others, other_poses).distance)

    grad = jax.grad(loss)(poses.translation)
    assert np.all(np.isfinite(grad))
    step = 1e-6
    bump = jnp.zeros_like(poses.translation).at[1, 2].set(step)
    numeric = (loss(poses.translation + bump) - loss(poses.translation - bump)) / (2 * step)
    np.testing.assert_allclose(grad[1, 2], numeric, rtol=1e-5, atol=1e-7)


def test_sharded_over_four_host_devices_equals_unsharded():
    script = textwrap.dedent("""
        import jax, jax.numpy as jnp, numpy as np
        import jaxgjk as jg
        assert jax.device_count() == 4
        rng = np.random.default_rng(0)
        boxes = jg.Box(jnp.asarray(rng.uniform(0.2, 0.6, (9, 3)), jnp.float32))
        poses = jg.Pose(jnp.asarray(rng.uniform(-1.5, 1.5, (9, 3)), jnp.float32),
                        jnp.asarray(rng.normal(size=(9, 4)), jnp.float32))
        plain = jg.pairwise(jg.signed_distance, boxes, poses, boxes, poses)
        sharded = jg.pairwise(jg.signed_distance, boxes, poses, boxes, poses, shard=True, chunk_size=40)
        # Equal up to float32 rounding: XLA vectorises differently at another per-device batch size.
        np.testing.assert_allclose(plain.distance, sharded.distance, rtol=1e-6, atol=1e-7)
        print("ok")
    """)
    flags = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
    env = dict(os.environ, XLA_FLAGS=flags, JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-2000:]


def test_grouped_by_kind_equals_one_packed_kernel(rng):
    """group_by_kind runs one typed kernel per pair of kinds (box–sphere pairs as sphere–box, the
    sides exchanged back) and puts the results back in order."""
    shapes = jg.pack([jg.Sphere(jnp.asarray(0.3)), jg.Box(jnp.asarray([0.4, 0.2, 0.3])),
                      jg.Box(jnp.asarray([0.2, 0.5, 0.1])), jg.Sphere(jnp.asarray(0.1))], dtype=np.float64)
    _, poses = scene(rng, 4)
    index_a, index_b = np.nonzero(~np.eye(4, dtype=bool))  # both orders of every kind pair
    for query in (jg.distance, jg.signed_distance):
        packed = jg.pairs(query, shapes, poses, index_a, index_b)
        grouped = jg.pairs(query, shapes, poses, index_a, index_b, group_by_kind=True)
        np.testing.assert_allclose(grouped.distance, packed.distance, rtol=1e-12, atol=1e-12)
        for field in ("point_a", "point_b", "normal"):
            np.testing.assert_allclose(getattr(grouped, field), getattr(packed, field), rtol=1e-9,
                                       atol=1e-9, err_msg=field)
        for side in ("feature_a", "feature_b"):
            np.testing.assert_array_equal(getattr(grouped, side).dimension,
                                          getattr(packed, side).dimension, err_msg=side)
    # The exchanged simplex is A's and B's: as a warm start it reproduces the distance at once.
    def take(tree, index):
        return jax.tree_util.tree_map(lambda leaf: leaf[index], tree)

    a, b = take(shapes, index_a), take(shapes, index_b)
    pose_a, pose_b = take(poses, index_a), take(poses, index_b)
    grouped = jg.pairs(jg.distance, shapes, poses, index_a, index_b, group_by_kind=True)
    warm = jax.jit(jax.vmap(lambda *args: jg.distance(*args[:4], warm_start=args[4])))(
        a, pose_a, b, pose_b, grouped.simplex)
    np.testing.assert_allclose(warm.distance, grouped.distance, rtol=1e-9, atol=1e-12)
    assert np.all(warm.iterations <= 2)
    np.testing.assert_array_equal(jg.pairs(jg.intersect, shapes, poses, index_a, index_b,
                                           group_by_kind=True),
                                  jg.pairs(jg.intersect, shapes, poses, index_a, index_b))
