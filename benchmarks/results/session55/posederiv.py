"""test_pose_derivatives' ellipsoid–cylinder `distance` program, its first derivatives by a separate
`jax.jacfwd` (`orig`, session 54) or as the primal of the Hessian's forward-over-reverse pass (`merged`).

    PYTHONPATH=. python benchmarks/results/session55/posederiv.py {orig,merged}

Prints trace + lower and compile seconds and the optimised program's fusions; saves the outputs to
/tmp/pd_<variant>.npy to compare the two.
"""

import sys
import time

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)

from tests import test_pose_derivatives as tp  # noqa: E402

variant = sys.argv[1]
kinds, query = ("ellipsoid", "cylinder"), "distance"
pair = tp._cases(kinds, np.random.default_rng(sum(map(ord, "".join(kinds)))))


def separate(shape_a, pose_a, shape_b, pose_b):
    distance = tp._of_poses(query, shape_a, shape_b, False)
    return (jax.jacfwd(distance, argnums=(0, 1))(pose_a, pose_b),
            jax.hessian(distance, argnums=(0, 1))(pose_a, pose_b))


function = separate if variant == "orig" else tp._derivatives(query, False)
started = time.perf_counter()
lowered = jax.jit(jax.vmap(function)).lower(*pair)
traced = time.perf_counter()
compiled = lowered.compile()
done = time.perf_counter()
print(variant, f"trace+lower {traced - started:.1f} s, compile {done - traced:.1f} s, "
      f"fusions {compiled.as_text().count('fusion(')}")
np.save(f"/tmp/pd_{variant}.npy",
        np.concatenate([np.asarray(leaf).ravel() for leaf in jax.tree_util.tree_leaves(compiled(*pair))]))
