"""Derivatives along the poses alone (the shapes held) against the same derivatives taken with the
shapes' tangents too: the tangent rule then reads the simplex's support points instead of evaluating
them again (`_tangent.witness`'s `shapes_held`), and its own derivative moves them with the optimum
(`_tangent._moving_simplex`). First and second order, float64, curved and flat contacts, separated and
penetrating, through the closed forms and the general path."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgjk as jg

from .shape_samples import random_rotation, random_shape

# Kind pairs and query: closed forms with a curved contact and with flat features, and the general path
# on curved cores (GJK and the normal's refinement; its signed kernels, EPA included, took 110 s to
# compile here, against 60 s for `distance`).
CASES = (("sphere", "ellipsoid", "signed_distance"), ("capsule", "box", "signed_distance"),
         ("ellipsoid", "cylinder", "distance"))
POSES = 6  # per kind pair: half separated, half penetrating


def _cases(kinds, rng):
    """A stacked batch of POSES (shape_a, pose_a, shape_b, pose_b), float64."""
    rows = []
    for number in range(POSES):
        reach = 2.2 if number % 2 == 0 else 0.5
        direction = rng.normal(size=3)
        pose_b = jg.Pose(jnp.asarray(reach * direction / np.linalg.norm(direction)),
                         jnp.asarray(random_rotation(rng)))
        pose_a = jg.Pose(jnp.asarray(0.1 * rng.normal(size=3)), jnp.asarray(random_rotation(rng)))
        rows.append((random_shape(kinds[0], rng), pose_a, random_shape(kinds[1], rng), pose_b))
    return jax.tree_util.tree_map(lambda *leaves: jnp.stack(leaves), *rows)


def _of_poses(query, shape_a, shape_b, shapes_move):
    """`query`'s distance as a function of (pose_a, pose_b); with `shapes_move`, the shapes carry
    tangents too (zero: they are shifted by 0 times a pose component), so the tangent rule evaluates
    the supports again, as for a derivative along the shapes."""
    def signed(pose_a, pose_b):
        a, b = shape_a, shape_b
        if shapes_move:
            zero = 0 * pose_b.translation[0]
            a, b = jax.tree_util.tree_map(lambda leaf: leaf + zero, (a, b))
        return getattr(jg, query)(a, pose_a, b, pose_b).distance
    return signed


def _derivatives(query, shapes_move):
    """vmap-ready: the first and second derivatives of `_of_poses` at one pair (one program): the
    Hessian as `jax.hessian` takes it, forward over reverse mode, whose primal is the gradient (a
    separate `jax.jacfwd` for the first derivatives made the program a third larger; forward mode along
    held shapes meets reverse mode in test_box_colliders.py, test_colliders.py and test_refine.py)."""
    def at(shape_a, pose_a, shape_b, pose_b):
        distance = _of_poses(query, shape_a, shape_b, shapes_move)

        def gradient(pose_a, pose_b):
            first = jax.jacrev(distance, argnums=(0, 1))(pose_a, pose_b)
            return first, first

        second, first = jax.jacfwd(gradient, argnums=(0, 1), has_aux=True)(pose_a, pose_b)
        return first, second
    return at


@pytest.mark.parametrize("case", CASES, ids="-".join)
def test_pose_derivatives_match_those_with_the_shapes(case):
    """First and second derivatives along the poses, the shapes held, equal those with the shapes'
    (zero) tangents to 1e-9 and are finite."""
    *kinds, query = case
    rng = np.random.default_rng(sum(map(ord, "".join(kinds))))
    pair = _cases(kinds, rng)
    held = jax.jit(jax.vmap(_derivatives(query, False)))(*pair)
    moving = jax.jit(jax.vmap(_derivatives(query, True)))(*pair)
    for x, y in zip(jax.tree_util.tree_leaves(held), jax.tree_util.tree_leaves(moving), strict=True):
        assert np.all(np.isfinite(x))
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-9)
