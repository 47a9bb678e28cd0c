"""Trace time of batched query kernels: the CPU seconds JAX spends turning `jit(vmap(query))` into its
program (`jax.jit(...).trace`), before lowering and XLA's compile, which it adds to every first call.

Kernels: `compile_flags.py`'s three (mixed `Packed` `signed_distance` and `distance`, typed ellipsoid
`signed_distance`; float32, 256 pairs), the three queries of the general path on typed boxes (float64,
64 pairs), `vmap(value_and_grad)` of the mixed signed distance, and a nested `vmap` (8 poses of B,
each against the 256 mixed pairs). Each is traced `--repeats` times in this process with JAX's caches
cleared in between; the least CPU time is kept (this machine is shared: process time, not wall).

    python -m benchmarks.trace_time [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxgjk as jg
from benchmarks.compile_flags import _kernels as compile_flags_kernels

GENERAL = jg.Config(specialised=False)
TYPED_PAIRS = 64
NESTED_POSES = 8


def _three_queries(a, pose_a, b, pose_b):
    return (jg.signed_distance(a, pose_a, b, pose_b, config=GENERAL),
            jg.distance(a, pose_a, b, pose_b, config=GENERAL),
            jg.intersect(a, pose_a, b, pose_b, config=GENERAL))


def _signed(a, pose_a, b, pose_b):
    return jg.signed_distance(a, pose_a, b, pose_b).distance


def _kernels():
    """(name, function, arguments) of each kernel traced."""
    kernels = [(name, kernel, args) for name, kernel, args in compile_flags_kernels()]
    mixed = kernels[0][2]
    rng = np.random.default_rng(0)
    poses = jg.Pose(jnp.asarray(rng.normal(size=(TYPED_PAIRS, 3))),
                    jnp.asarray(rng.normal(size=(TYPED_PAIRS, 4))))
    boxes = jg.Box(jnp.ones((TYPED_PAIRS, 3)))
    shape_a, pose_a, shape_b, poses_b = mixed

    def against_mixed(pose_b):
        return jax.vmap(_signed, in_axes=(0, 0, 0, None))(shape_a, pose_a, shape_b, pose_b)

    return kernels + [
        ("general three queries, boxes, float64", jax.jit(jax.vmap(_three_queries)),
         (boxes, poses, boxes, poses)),
        ("mixed vmap(value_and_grad) signed", jax.jit(jax.vmap(jax.value_and_grad(_signed, argnums=(1, 3)))),
         mixed),
        ("nested vmap signed", jax.jit(jax.vmap(against_mixed)),
         (jax.tree_util.tree_map(lambda leaf: leaf[:NESTED_POSES], poses_b),)),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    jax.config.update("jax_enable_x64", True)
    kernels = _kernels()
    kernels[0][1].trace(*kernels[0][2])  # JAX's own first-use costs, outside the measurements
    print(f"| kernel | trace CPU s (best of {args.repeats}) |\n|---|---:|")
    for name, kernel, arguments in kernels:
        best = np.inf
        for _ in range(args.repeats):
            jax.clear_caches()
            start = time.process_time()
            kernel.trace(*arguments)
            best = min(best, time.process_time() - start)
        print(f"| {name} | {best:.2f} |", flush=True)


if __name__ == "__main__":
    main()
