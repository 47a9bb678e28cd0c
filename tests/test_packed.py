"""`jg.pack` batches evaluate only the kinds they hold (`Packed.kinds`): the same answers, values and
gradients, as a batch packed with every kind, a lane of a kind outside the set is INVALID_INPUT, and
`kinds=` rejects sets that leave a shape's kind out; two packed sides of the same kinds evaluate a method
once, stacked (`on_both`), with the answers of one call per side."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgjk as jg
from jaxgjk._packed import on_both

from .shape_samples import random_rotation

PAIRS = 48


def _batch(rng, dtype):
    """Mixed spheres, capsules, boxes and half-spaces (A) against spheres, capsules and boxes (B),
    deep, touching-near and separated, with their poses."""
    makers = [lambda: jg.Sphere(rng.uniform(0.1, 0.5)),
              lambda: jg.Capsule(rng.uniform(0.1, 0.4), rng.uniform(0.1, 0.5)),
              lambda: jg.Box(rng.uniform(0.1, 0.5, 3))]
    shapes_a = [jg.HalfSpace() if k % 8 == 7 else makers[k % 3]() for k in range(PAIRS)]
    shapes_b = [makers[(k // 3) % 3]() for k in range(PAIRS)]

    def poses(distance):
        directions = rng.normal(size=(PAIRS, 3))
        directions /= np.linalg.norm(directions, axis=1, keepdims=True)
        return jg.Pose(jnp.asarray(directions * distance[:, None], dtype),
                       jnp.asarray(np.stack([random_rotation(rng) for _ in range(PAIRS)]), dtype))

    return shapes_a, poses(np.zeros(PAIRS)), shapes_b, poses(rng.uniform(0.0, 1.5, PAIRS))


@jax.jit
@jax.vmap
def _signed_and_gradient(shape_a, pose_a, shape_b, pose_b):
    def signed(pose_a, pose_b):
        result = jg.signed_distance(shape_a, pose_a, shape_b, pose_b)
        return result.distance, result

    (_, result), gradient = jax.value_and_grad(signed, argnums=(0, 1), has_aux=True)(pose_a, pose_b)
    return result, gradient


def test_pack_records_the_kinds_it_holds():
    assert jg.pack([jg.Box(jnp.ones(3)), jg.Sphere(1.0), jg.Box(jnp.ones(3))]).kinds == (0, 2)
    everything = jg.pack([jg.Sphere(1.0)], kinds=jg.Packed.KINDS)
    assert everything.kinds == tuple(range(len(jg.Packed.KINDS)))
    assert jg.pack([jg.Sphere(1.0)], kinds=[jg.Box, jg.Sphere]).kinds == (0, 2)
    with pytest.raises(ValueError, match="leaves out"):
        jg.pack([jg.Sphere(1.0), jg.Capsule(1.0, 1.0)], kinds=[jg.Sphere])
    with pytest.raises(TypeError, match="kinds"):
        jg.pack([jg.Sphere(1.0)], kinds=[jg.Sphere, jg.Rounded])
    bad = dataclasses.replace(jg.pack([jg.Sphere(1.0)]), kinds=(2, 0))
    with pytest.raises(ValueError, match="kinds"):
        jg.signed_distance(bad, jg.Pose.identity(), bad, jg.Pose.identity())


def test_only_the_kinds_held_answer_as_every_kind(rng):
    """The kernel of the kinds present against the one of all eight, on the same pairs (float64; the
    selection does not depend on the dtype, and the present kinds' float32 kernels meet the closed
    forms in test_scales.py and test_colliders.py): statuses equal, values and pose gradients to
    rounding (the two programs round differently)."""
    dtype = np.float64
    shapes_a, pose_a, shapes_b, pose_b = _batch(rng, dtype)
    present = _signed_and_gradient(jg.pack(shapes_a, dtype=dtype), pose_a, jg.pack(shapes_b, dtype=dtype),
                                   pose_b)
    every = _signed_and_gradient(jg.pack(shapes_a, dtype=dtype, kinds=jg.Packed.KINDS), pose_a,
                                 jg.pack(shapes_b, dtype=dtype, kinds=jg.Packed.KINDS), pose_b)
    statuses = np.asarray(present[0].status)
    np.testing.assert_array_equal(statuses, np.asarray(every[0].status))
    assert {jg.Status.SEPARATED, jg.Status.PENETRATING} <= set(statuses.tolist())
    leaves = zip(jax.tree_util.tree_leaves(present), jax.tree_util.tree_leaves(every), strict=True)
    for ours, theirs in leaves:
        ours, theirs = np.asarray(ours), np.asarray(theirs)
        if np.issubdtype(ours.dtype, np.floating):
            np.testing.assert_allclose(ours, theirs, atol=1e-10, rtol=1e-10)
        else:
            np.testing.assert_array_equal(ours, theirs)


def test_a_lane_of_a_kind_outside_the_set_is_invalid(rng):
    shapes_a, pose_a, shapes_b, pose_b = _batch(rng, np.float64)
    packed_a, packed_b = jg.pack(shapes_a), jg.pack(shapes_b)
    cone = jg.Packed.KINDS.index(jg.Cone)
    outside = dataclasses.replace(packed_a, kind=packed_a.kind.at[5].set(cone))
    result, _ = _signed_and_gradient(outside, pose_a, packed_b, pose_b)
    reference, _ = _signed_and_gradient(packed_a, pose_a, packed_b, pose_b)
    status = np.asarray(result.status)
    assert status[5] == jg.Status.INVALID_INPUT
    np.testing.assert_array_equal(np.delete(status, 5), np.delete(np.asarray(reference.status), 5))



def test_both_sides_at_once_equal_one_call_per_side(rng):
    """`on_both` on two packed batches of the same kinds (stacked: the method's operations once in the
    program) and of different kinds (one call per side), under `jit(vmap)`: the support points and
    features of each side's own call, float64."""
    shapes_a, _, shapes_b, _ = _batch(rng, np.float64)
    directions = jnp.asarray(rng.normal(size=(2, PAIRS, 3)))

    def method(shape, direction):
        return shape.core_support(direction), shape.feature(direction / jnp.linalg.norm(direction), 1e-6)

    def both(a, b, d, e):
        return on_both(method, a, (d,), b, (e,))

    def each(a, b, d, e):
        return method(a, d), method(b, e)

    every = jg.Packed.KINDS
    same_kinds = (jg.pack(shapes_a, kinds=every), jg.pack(shapes_b, kinds=every), True)
    for packed_a, packed_b, stacked in [same_kinds, (jg.pack(shapes_a), jg.pack(shapes_b), False)]:
        arguments = (packed_a, packed_b, directions[0], directions[1])
        sizes = [len(jax.make_jaxpr(jax.vmap(f))(*arguments).jaxpr.eqns) for f in (both, each)]
        assert (sizes[0] < sizes[1] / 1.5) if stacked else (sizes[0] == sizes[1]), sizes
        ours, theirs = (jax.jit(jax.vmap(f))(*arguments) for f in (both, each))
        for x, y in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs), strict=True):
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-14, atol=1e-14)
