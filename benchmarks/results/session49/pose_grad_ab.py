"""Gradients along the poses alone (float64), the working tree against 120c669 (session 49's start).

    PYTHONPATH=. python benchmarks/results/session49/pose_grad_ab.py

`jax.grad` of `signed_distance` and of `distance` w.r.t. (pose_a, pose_b), the shapes held: every kind
pair of `cases.KINDS` (16 separated and 16 penetrating pairs each, vmapped) and the composites
(`Rounded`, `Affine`, `MinkowskiSum`, `ConvexHull`, `HalfSpace`, 3 poses each, against a capsule).
Prints the largest absolute difference per (query, kind).
"""

import tempfile

import jax
import jax.numpy as jnp
import numpy as np

import jaxgjk
from benchmarks import ab_inprocess as A
from benchmarks import cases as C
from benchmarks.run import jaxgjk_in_axes

COMPOSITES = ("Rounded", "Affine", "MinkowskiSum", "ConvexHull", "HalfSpace")


def composite(module, name, rng):
    """A composite shape `name` of `module` (a jaxgjk package) with parameters from `rng`."""
    box = module.Box(jnp.asarray(rng.uniform(0.2, 0.8, 3)))
    ellipsoid = module.Ellipsoid(jnp.asarray(rng.uniform(0.3, 0.9, 3)))
    linear = jnp.asarray(np.eye(3) + 0.3 * rng.normal(size=(3, 3)))
    offset = jnp.asarray(0.1 * rng.normal(size=3))
    return {"Rounded": lambda: module.Rounded(box, jnp.asarray(0.1)),
            "Affine": lambda: module.Affine(module.Cylinder(jnp.asarray(0.4), jnp.asarray(0.6)), linear,
                                            offset),
            "MinkowskiSum": lambda: module.MinkowskiSum(box, ellipsoid),
            "ConvexHull": lambda: module.ConvexHull((box, module.Sphere(jnp.asarray(0.5)))),
            "HalfSpace": module.HalfSpace}[name]()


def pose_gradients(module, query, in_axes, shape_a, pose_a, shape_b, pose_b):
    """vmap over pairs of `jax.grad` of `query`'s distance w.r.t. (pose_a, pose_b)."""
    def one_pair(shape_a, pose_a, shape_b, pose_b):
        def distance(pose_a, pose_b):
            return getattr(module, query)(shape_a, pose_a, shape_b, pose_b).distance
        return jax.grad(distance, argnums=(0, 1))(pose_a, pose_b)

    batched = one_pair if in_axes is None else jax.vmap(one_pair, in_axes=in_axes)  # None: one pair
    return jax.jit(batched)(shape_a, pose_a, shape_b, pose_b)


def largest_difference(new, old):
    """The largest absolute difference between the leaves of two gradients."""
    return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y))))
               for x, y in zip(jax.tree_util.tree_leaves(new), jax.tree_util.tree_leaves(old), strict=True))


def main():
    jax.config.update("jax_enable_x64", True)
    worst = {}
    with tempfile.TemporaryDirectory() as directory:
        base = A.base_package("120c669", directory)
        for query in ("signed_distance", "distance"):
            for kind in C.KINDS:
                extra = {"n_vertices": 16} if kind.startswith("polytope") else {}
                for seed, penetrating in ((1, False), (2, True)):
                    case = C.make_case(kind, 16, penetrating, seed=seed, **extra)
                    args = C.jaxgjk_pairs(case, lambda value: jnp.asarray(value, jnp.float64))
                    axes = jaxgjk_in_axes(case)
                    new = pose_gradients(jaxgjk, query, axes, *args)
                    old = pose_gradients(base, query, axes, *(A.in_module(x, base) for x in args))
                    worst[query, kind] = max(worst.get((query, kind), 0), largest_difference(new, old))
            for name in COMPOSITES:
                for seed in range(3):
                    rng = np.random.default_rng(100 + seed)
                    rotation = rng.normal(size=4)
                    pose_b = jaxgjk.Pose(jnp.asarray(rng.normal(size=3)),
                                         jnp.asarray(rotation / np.linalg.norm(rotation)))
                    pose_a = jaxgjk.Pose(jnp.zeros(3), jnp.asarray([1.0, 0, 0, 0]))
                    pairs = [(module, composite(module, name, np.random.default_rng(100 + seed)),
                              module.Capsule(jnp.asarray(0.3), jnp.asarray(0.5)))
                             for module in (jaxgjk, base)]
                    new, old = (pose_gradients(module, query, None, shape_a, A.in_module(pose_a, module),
                                               shape_b, A.in_module(pose_b, module))
                                for module, shape_a, shape_b in pairs)
                    worst[query, name] = max(worst.get((query, name), 0), largest_difference(new, old))
    for (query, kind), difference in sorted(worst.items(), key=lambda item: item[1]):
        print(query, kind, f"{difference:.2e}")


if __name__ == "__main__":
    main()
