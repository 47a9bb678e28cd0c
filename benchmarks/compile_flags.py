"""Compile and run time of a few kernels under the `XLA_FLAGS` of this process, and their outputs saved
so that two flag settings can be compared bit for bit.

Kernels (float32, 256 pairs, `jit(vmap(query))`, one fresh process per setting): the mixed `Packed`
batch of the seven primitive kinds (`signed_distance` and `distance`) and typed ellipsoids
(`signed_distance`). XLA reads the flags when its backend starts, so set them in the environment:

    XLA_FLAGS=--xla_cpu_use_fusion_emitters=false python -m benchmarks.compile_flags --save older.npz
    python -m benchmarks.compile_flags --save default.npz
    python -m benchmarks.compile_flags --compare default.npz older.npz
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxgjk as jg

PAIRS = 256
RUNS = 5


def _kernels():
    """(name, kernel, arguments) of each kernel timed."""
    rng = np.random.default_rng(0)
    primitives = [jg.Sphere(0.5), jg.Capsule(0.2, 0.4), jg.Box(np.ones(3)), jg.Cylinder(0.3, 0.4),
                  jg.Cone(0.3, 0.4), jg.Ellipsoid(np.array([0.3, 0.4, 0.5])),
                  jg.Polytope(rng.normal(size=(12, 3)))]
    mixed_a = jg.pack([primitives[i % 7] for i in range(PAIRS)], dtype=jnp.float32)
    mixed_b = jg.pack([primitives[(3 * i) % 7] for i in range(PAIRS)], dtype=jnp.float32)
    ellipsoids = jg.Ellipsoid(jnp.tile(jnp.array([0.3, 0.4, 0.5], jnp.float32), (PAIRS, 1)))
    identity = jg.Pose(jnp.zeros((PAIRS, 3), jnp.float32),
                       jnp.tile(jnp.array([1.0, 0.0, 0.0, 0.0], jnp.float32), (PAIRS, 1)))
    poses = jg.Pose(jnp.asarray(rng.normal(size=(PAIRS, 3)), jnp.float32),
                    jnp.asarray(rng.normal(size=(PAIRS, 4)), jnp.float32))
    return [("mixed signed_distance", jax.jit(jax.vmap(jg.signed_distance)),
             (mixed_a, identity, mixed_b, poses)),
            ("mixed distance", jax.jit(jax.vmap(jg.distance)), (mixed_a, identity, mixed_b, poses)),
            ("ellipsoid signed_distance", jax.jit(jax.vmap(jg.signed_distance)),
             (ellipsoids, identity, ellipsoids, poses))]


def measure(save: str | None) -> None:
    print(f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}")
    print("| kernel | compile s | run ms |\n|---|---:|---:|")
    outputs = {}
    for name, kernel, args in _kernels():
        lowered = kernel.lower(*args)
        start = time.perf_counter()
        compiled = lowered.compile()
        compile_seconds = time.perf_counter() - start
        result = jax.block_until_ready(compiled(*args))
        start = time.perf_counter()
        for _ in range(RUNS):
            result = jax.block_until_ready(compiled(*args))
        run_ms = (time.perf_counter() - start) / RUNS * 1e3
        print(f"| {name} | {compile_seconds:.1f} | {run_ms:.1f} |", flush=True)
        for number, leaf in enumerate(jax.tree_util.tree_leaves(result)):
            outputs[f"{name}/{number}"] = np.asarray(leaf)
    if save:
        np.savez(save, **outputs)


def compare(first: str, second: str) -> None:
    a, b = np.load(first), np.load(second)
    differing = [key for key in a.files if not np.array_equal(a[key], b[key], equal_nan=True)]
    print("identical" if not differing else f"{len(differing)} of {len(a.files)} outputs differ: "
          f"{differing[:8]}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--save", help="write the kernels' outputs to this .npz")
    parser.add_argument("--compare", nargs=2, metavar="NPZ", help="compare two saved runs bit for bit")
    args = parser.parse_args(argv)
    if args.compare:
        compare(*args.compare)
    else:
        measure(args.save)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
