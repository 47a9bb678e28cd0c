"""What writing a query's outputs alone costs: the ceiling they put on a batch kernel's throughput.

    python -m benchmarks.output_floor [--pairs 65536] [--repeats 20]

For a batch of `--pairs` float32 pairs, a jitted kernel writes arrays of exactly the shapes and dtypes
of `jax.vmap(jaxgjk.signed_distance)`'s outputs, each a broadcast of one input value (no geometry), once
for the whole `DistanceResult` and once for (distance, point_a, point_b) only, what MuJoCo's
`mj_geomDistance` returns. One untimed call, then the best of `--repeats`. No query can run faster than
the kernel that only writes its outputs, so the first line bounds every whole-result kernel on this
machine (`README.md`, Speed).
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np

import jaxgjk as jg

from . import run


def output_shapes(pairs: int):
    """The leaves (`jax.ShapeDtypeStruct`) of `vmap(signed_distance)`'s result on `pairs` sphere pairs,
    and the names of the result's fields in leaf order."""
    sphere = jg.Sphere(jnp.ones(pairs, jnp.float32))
    poses = jg.Pose(jnp.zeros((pairs, 3), jnp.float32), jnp.zeros((pairs, 4), jnp.float32))
    result = jax.eval_shape(jax.vmap(jg.signed_distance), sphere, poses, sphere, poses)
    paths, _ = zip(*jax.tree_util.tree_flatten_with_path(result)[0], strict=True)
    return jax.tree_util.tree_leaves(result), [jax.tree_util.keystr(path[:1]) for path in paths]


def writer(leaves, value):
    """A call (no arguments, returns when done) of a jitted kernel that writes arrays shaped and typed
    as `leaves`, each from `value` (pairs,) float32."""
    def kernel(value):
        return [jnp.broadcast_to(value.reshape(value.shape + (1,) * (len(leaf.shape) - 1)) * (i + 1),
                                 leaf.shape).astype(leaf.dtype) for i, leaf in enumerate(leaves)]
    compiled = jax.jit(kernel)
    return lambda: jax.block_until_ready(compiled(value))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=65536)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args(argv)
    leaves, names = output_shapes(args.pairs)
    value = jnp.asarray(np.random.default_rng(0).random(args.pairs, np.float32))
    points = [leaf for leaf, name in zip(leaves, names, strict=True)
              if name in (".distance", ".point_a", ".point_b")]
    print(f"{args.pairs} pairs, {jax.devices()[0].device_kind}")
    for label, chosen in (("whole DistanceResult", leaves), ("distance, point_a, point_b", points)):
        size = sum(int(np.prod(leaf.shape)) * leaf.dtype.itemsize for leaf in chosen) / args.pairs
        call = writer(chosen, value)
        call()  # compiles
        seconds = min(run._timed_runs(call, args.repeats, budget=float("inf"))[0])
        print(f"{label}: {size:.0f} bytes a pair, {seconds * 1e3:.2f} ms, "
              f"{args.pairs / seconds / 1e6:.1f} M pairs/s at most")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
