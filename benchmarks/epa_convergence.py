"""EPA on curved and flat cores: iterations, depth error, statuses and throughput per kind pair.

For each kind pair, `--pairs` random overlapping-or-near poses (sizes 0.2–1, A at the origin, B offset by
N(0, 0.4²) per axis, random orientations, seed 1) run through jit(vmap(signed_distance)) at the default
Config in float32 and float64. The reference is jaxgjk float64 with a 1e-12 EPA gap and 400 steps on the
same inputs (an accuracy study of the defaults, not an independent check: tests/ hold those). Only the
pairs the reference finds penetrating are counted. Throughput is the best of `--repeats` timed calls.

    python -m benchmarks.epa_convergence [--pairs 300] [--kinds ell-ell,box-box,...]
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

import jaxgjk as jg  # noqa: E402

KINDS = {
    "ell": lambda rng: jg.Ellipsoid(rng.uniform(0.2, 1, 3)),
    "cyl": lambda rng: jg.Cylinder(rng.uniform(0.2, 1), rng.uniform(0.2, 1)),
    "cone": lambda rng: jg.Cone(rng.uniform(0.2, 1), rng.uniform(0.2, 1)),
    "box": lambda rng: jg.Box(rng.uniform(0.2, 1, 3)),
    "sph": lambda rng: jg.Sphere(rng.uniform(0.2, 1)),
    "cap": lambda rng: jg.Capsule(rng.uniform(0.2, 1), rng.uniform(0.2, 1)),
}
DEFAULT_PAIRS = "ell-ell,cyl-cone,box-ell,cone-cone,sph-cyl,sph-cone,cap-cap,box-box"


def random_batch(kind_a, kind_b, count, seed=1):
    rng = np.random.default_rng(seed)

    def rotations():
        q = rng.normal(size=(count, 4))
        return q / np.linalg.norm(q, axis=1, keepdims=True)

    shapes_a = [KINDS[kind_a](rng) for _ in range(count)]
    shapes_b = [KINDS[kind_b](rng) for _ in range(count)]
    stack = lambda shapes: jax.tree_util.tree_map(lambda *leaves: np.stack(leaves), *shapes)  # noqa: E731
    pose_a = jg.Pose(np.zeros((count, 3)), rotations())
    pose_b = jg.Pose(rng.normal(size=(count, 3)) * 0.4, rotations())
    return stack(shapes_a), pose_a, stack(shapes_b), pose_b


def cast(tree, dtype):
    return jax.tree_util.tree_map(lambda leaf: jnp.asarray(leaf, dtype), tree)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=300)
    parser.add_argument("--kinds", default=DEFAULT_PAIRS)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    reference = jax.jit(jax.vmap(lambda *q: jg.signed_distance(
        *q, config=jg.Config(max_epa_iterations=400, epa_tolerance=1e-12))))
    query = jax.jit(jax.vmap(jg.signed_distance))
    print("| pair | dtype | iterations p50/p99/max | max depth error | statuses | pairs/s |")
    print("| --- | --- | --- | ---: | --- | ---: |")
    for name in args.kinds.split(","):
        batch = random_batch(*name.split("-"), args.pairs)
        expected = np.asarray(reference(*cast(batch, jnp.float64)).distance)
        penetrating = expected < 0
        for dtype in (jnp.float32, jnp.float64):
            inputs = cast(batch, dtype)
            result = jax.block_until_ready(query(*inputs))
            best = np.inf
            for _ in range(args.repeats):
                start = time.perf_counter()
                jax.block_until_ready(query(*inputs))
                best = min(best, time.perf_counter() - start)
            iterations = np.asarray(result.iterations)[penetrating]
            error = np.abs(np.asarray(result.distance, np.float64) - expected)[penetrating]
            codes, counts = np.unique(np.asarray(result.status)[penetrating], return_counts=True)
            statuses = ", ".join(f"{jg.Status(int(c)).name} {n}" for c, n in zip(codes, counts, strict=True))
            print(f"| {name} | {np.dtype(dtype).name} | {np.percentile(iterations, 50):.0f}/"
                  f"{np.percentile(iterations, 99):.0f}/{iterations.max()} | {error.max():.1e} | "
                  f"{statuses} | {args.pairs / best:,.0f} |")


if __name__ == "__main__":
    main()
