"""Hill-climbing support (`ClimbingPolytope`) against the dense argmax (`Polytope`), vmapped over directions.

For each vertex count N, a polytope of N random points on the unit sphere (all of them hull vertices) and
a batch of random directions; times the jitted, vmapped `core_support` of each (compile excluded, best of
`--repeats` interleaved runs after a warm-up) and reports the walk's moves. Writes a Markdown table.

    python -m benchmarks.hill_climb [--directions 10000] [--x64] [--out FILE]
"""

from __future__ import annotations

import argparse
import functools
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np

VERTEX_COUNTS = (32, 64, 128, 256, 512, 1024, 2048, 4096)


def sphere_points(rng, count):
    points = rng.normal(size=(count, 3))
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def best_times(calls, repeats):
    """Fastest of `repeats` runs of each zero-argument call, timed in interleaved rounds (a busy machine
    then slows every variant alike)."""
    for call in calls.values():
        jax.block_until_ready(call())
    best = dict.fromkeys(calls, np.inf)
    for _ in range(repeats):
        for key, call in calls.items():
            start = time.perf_counter()
            jax.block_until_ready(call())
            best[key] = min(best[key], time.perf_counter() - start)
    return best


def compiled_support(shape, directions):
    return jax.jit(jax.vmap(lambda s, d: s.core_support(d), in_axes=(None, 0))).lower(
        shape, directions).compile()


def run(num_directions, dtype, repeats, seed=0):
    import jaxgjk as jg
    from jaxgjk._hill_climb import ClimbingPolytope

    rng = np.random.default_rng(seed)
    rows = []
    for count in VERTEX_COUNTS:
        points = sphere_points(rng, count)
        dense, climbing = jg.Polytope.from_points(points, dtype), ClimbingPolytope.from_points(points, dtype)
        assert dense.vertices.shape[0] == count
        directions = jnp.asarray(rng.normal(size=(num_directions, 3)), dtype)
        times = best_times({name: functools.partial(compiled_support(shape, directions), shape, directions)
                            for name, shape in (("dense", dense), ("climb", climbing))}, repeats)
        dense_time, climb_time = times["dense"], times["climb"]
        _, steps = jax.jit(jax.vmap(climbing.support_index))(directions)
        # Exactness on this batch: the support values agree with the dense argmax.
        dense_points = jax.vmap(dense.core_support)(directions)
        climb_points = jax.vmap(climbing.core_support)(directions)
        gap = float(jnp.max(jnp.abs(jnp.sum((dense_points - climb_points) * directions, axis=1))))
        rows.append(dict(count=count, degree=int(climbing.neighbors.shape[1]),
                         dense_us=dense_time * 1e6, climb_us=climb_time * 1e6,
                         mean_steps=float(jnp.mean(steps)), max_steps=int(jnp.max(steps)), gap=gap))
        print(rows[-1], flush=True)
    return rows


def table(rows, num_directions, dtype) -> str:
    lines = [
        f"Support of {num_directions} random directions (one vmapped, jitted call), {np.dtype(dtype).name}, "
        f"{jax.devices()[0].device_kind} ({platform.processor() or platform.machine()}), "
        "best of repeated runs.",
        "",
        "| vertices N | max degree K | dense argmax (µs) | hill climbing (µs) | speed-up | mean moves "
        "| max moves | max value gap |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        lines.append(
            f"| {row['count']} | {row['degree']} | {row['dense_us']:.0f} | {row['climb_us']:.0f} "
            f"| {row['dense_us'] / row['climb_us']:.2f}× | {row['mean_steps']:.2f} | {row['max_steps']} "
            f"| {row['gap']:.1e} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--directions", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--x64", action="store_true", help="float64 (default float32)")
    parser.add_argument("--out", default=None, help="append the Markdown table to this file")
    args = parser.parse_args()
    if args.x64:
        jax.config.update("jax_enable_x64", True)
    dtype = np.float64 if args.x64 else np.float32
    text = table(run(args.directions, dtype, args.repeats), args.directions, dtype)
    print(text)
    if args.out:
        with open(args.out, "a") as file:
            file.write(text + "\n\n")


if __name__ == "__main__":
    main()
