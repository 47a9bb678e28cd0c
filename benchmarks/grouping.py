"""Mixed kinds: one packed kernel for the whole batch against one typed kernel per pair of kinds.

The batch is the main job's (`python -m jaxgjk`): random pairs of all seven primitive kinds, sizes
0.2–1, centres 0–2.5 apart. `packed` is `jg.pairs(query, packed_shapes, ...)` (one compile, every
support call evaluates all kinds, and each vmapped while_loop runs until its slowest lane is done);
`grouped` is the same call with ``group_by_kind=True`` (a compile per kind pair and group-size bucket).
Compile time is the first call minus a steady-state call; throughput is the best of `--repeats` calls.

    python -m benchmarks.grouping [--pairs 16384,65536] [--queries distance,signed_distance]
        [--kinds sphere,capsule,box]
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import numpy as np

import jaxgjk as jg
from jaxgjk._demo import KIND_NAMES, random_pairs

QUERIES = {"distance": jg.distance, "signed_distance": jg.signed_distance}


def timed(call, repeats):
    """(first call seconds, best steady-state seconds) of `call()`."""
    started = time.perf_counter()
    jax.block_until_ready(call())
    first = time.perf_counter() - started
    best = np.inf
    for _ in range(repeats):
        started = time.perf_counter()
        jax.block_until_ready(call())
        best = min(best, time.perf_counter() - started)
    return first, best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", default="16384,65536")
    parser.add_argument("--queries", default="distance,signed_distance")
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    parser.add_argument("--kinds", default=",".join(KIND_NAMES),
                        help="the primitive kinds drawn (e.g. sphere,capsule,box: the specialised ones)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "grouping.md"))
    args = parser.parse_args()
    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    rows = []
    for query_name in args.queries.split(","):
        for count in (int(n) for n in args.pairs.split(",")):
            kinds = args.kinds.split(",")
            shape_a, pose_a, shape_b, pose_b = random_pairs(count, kinds, np.dtype(args.dtype))
            # One library (the main job's packed pairs) indexed by explicit pairs.
            shapes = jax.tree_util.tree_map(lambda a, b: np.concatenate([a, b]), shape_a, shape_b)
            poses = jax.tree_util.tree_map(lambda a, b: np.concatenate([a, b]), pose_a, pose_b)
            index_a, index_b = np.arange(count), np.arange(count, 2 * count)
            arguments = (QUERIES[query_name], shapes, poses, index_a, index_b)
            times = {mode: timed(lambda grouped=mode == "grouped", arguments=arguments: jg.pairs(
                *arguments, group_by_kind=grouped).distance, args.repeats) for mode in ("packed", "grouped")}
            # Kinds (i, j) and (j, i) share a kernel (the lesser kind first).
            groups = len({tuple(sorted(pair)) for pair in zip(np.asarray(shapes.kind)[index_a].tolist(),
                                                               np.asarray(shapes.kind)[index_b].tolist(),
                                                               strict=True)})
            (first_p, run_p), (first_g, run_g) = times["packed"], times["grouped"]
            rows.append(f"| {query_name} | {args.dtype} | {count:,} | {count / run_p:,.0f} | "
                        f"{count / run_g:,.0f} | {run_p / run_g:.2f} | {first_p - run_p:.1f} | "
                        f"{first_g - run_g:.1f} ({groups} kernels) |")
            print(rows[-1], flush=True)
    table = "\n".join([
        "| query | dtype | pairs | packed pairs/s | grouped pairs/s | grouped speed-up | packed compile s "
        "| grouped compile s |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |", *rows])
    header = (f"# Packed vs grouped by kind\n\nDevice: {jax.devices()[0].device_kind}; load average at "
              f"end {os.getloadavg()[0]:.1f}. Command: `python -m benchmarks.grouping "
              f"--pairs {args.pairs} --queries {args.queries} --dtype {args.dtype} --kinds {args.kinds} "
              f"--out {os.path.relpath(args.out)}`.\n\n")
    with open(args.out, "w") as handle:
        handle.write(header + table + "\n")
    print(table)


if __name__ == "__main__":
    main()
