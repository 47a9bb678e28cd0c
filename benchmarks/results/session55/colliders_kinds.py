"""Compile cost of test_colliders' packed general-path kernels by the core kinds their batches hold.

    PYTHONPATH=. python benchmarks/results/session55/colliders_kinds.py {sd32,grad64} {three,five}

The cases of test_colliders' PAIRS (sphere, capsule and box pairs, seed 7) as `Rounded` `Packed`
batches of sphere, capsule and box ("three") or of those and a cylinder and an ellipsoid ("five"), then
`jit(vmap(...))` of the float32 signed distance (`sd32`) or of the float64 gradients (`grad64`),
`Config(specialised=False)`: trace + lower and compile seconds, fusions in the optimised program, and
the float outputs saved to /tmp/<which>_<kinds>.npy to compare the two batches' answers.
"""

import sys
import time

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)

import jaxgjk as jg  # noqa: E402
from tests import test_colliders as tc  # noqa: E402

which, kinds_name = sys.argv[1], sys.argv[2]
kinds = dict(three=(jg.Sphere, jg.Capsule, jg.Box),
             five=(jg.Sphere, jg.Capsule, jg.Box, jg.Cylinder, jg.Ellipsoid))[kinds_name]


def signed(shape_a, pose_a, shape_b, pose_b):
    return jg.signed_distance(shape_a, pose_a, shape_b, pose_b, config=tc.GENERAL)


function, dtype = dict(sd32=(signed, np.float32), grad64=(tc._general_gradients, np.float64))[which]
sides = [[], [], [], []]
for kind_a, kind_b in tc.PAIRS:
    shape_a, pose_a, shape_b, pose_b = tc._case_batch(kind_a, kind_b, 7)[0]
    parts = (tc._general_side(kind_a, shape_a, dtype, kinds), tc._as(pose_a, dtype),
             tc._general_side(kind_b, shape_b, dtype, kinds), tc._as(pose_b, dtype))
    for side, part in zip(sides, parts, strict=True):
        side.append(part)
arguments = list(map(tc._concatenate, sides))
started = time.perf_counter()
lowered = jax.jit(jax.vmap(function)).lower(*arguments)
traced = time.perf_counter()
compiled = lowered.compile()
done = time.perf_counter()
print(which, kinds_name, f"trace+lower {traced - started:.1f} s, compile {done - traced:.1f} s, "
      f"fusions {compiled.as_text().count('fusion(')}")
floats = [np.asarray(leaf, np.float64).ravel() for leaf in jax.tree_util.tree_leaves(compiled(*arguments))
          if np.asarray(leaf).dtype.kind == "f"]
np.save(f"/tmp/{which}_{kinds_name}.npy", np.concatenate(floats))
