"""Throughput and results of one tree, separated and penetrating, for alternating A/B runs.

    cd TREE && PYTHONPATH=. python /work/main/benchmarks/results/session41/ab.py \
        polytope-polytope/32,ellipsoid-ellipsoid signed_distance,distance OUT.npz 16384

Per scenario, mode and query: `parity.tiled_case` (256 distinct float32 pairs, seed 0, tiled to N),
the parity benchmark's `jit(vmap(query))` kernel, compile timed apart, one untimed call, the best of
five. Every leaf of the results goes to OUT.npz; `python ab.py --compare A.npz B.npz` lists the leaves
that differ between two trees' files.
"""

import sys
import time

import jax
import numpy as np

from benchmarks import parity
from benchmarks import run as R


def measure(scenarios, queries, out_path, pairs):
    results = {}
    for scenario in scenarios:
        kind, n_vertices = parity.parse_scenario(scenario)
        for penetrating in (False, True):
            _, batch = parity.tiled_case(kind, n_vertices, penetrating, 256, pairs, seed=0)
            args = R.jaxgjk_args(batch, np.arange(batch.n), parity.DTYPE)
            for query in queries:
                start = time.perf_counter()
                kernel = jax.jit(R.jaxgjk_batched(batch, query)).lower(*args).compile()
                compile_s = time.perf_counter() - start
                result = jax.block_until_ready(kernel(*args))
                best = np.inf
                for _ in range(5):
                    start = time.perf_counter()
                    jax.block_until_ready(kernel(*args))
                    best = min(best, time.perf_counter() - start)
                tag = f"{scenario}:{'pen' if penetrating else 'sep'}:{query}"
                print(f"{tag:45s} {pairs / best / 1e3:8.1f} k/s  compile {compile_s:5.1f} s", flush=True)
                for i, leaf in enumerate(jax.tree_util.tree_leaves(result)):
                    results[f"{tag}:{i}"] = np.asarray(leaf)
    np.savez(out_path, **results)


def compare(path_a, path_b):
    a, b = np.load(path_a), np.load(path_b)
    differ = [key for key in a.files if not np.array_equal(a[key], b[key], equal_nan=True)]
    print(f"{len(a.files)} leaves, {len(differ)} differ: {differ}")


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        compare(sys.argv[2], sys.argv[3])
    else:
        measure(sys.argv[1].split(","), sys.argv[2].split(","), sys.argv[3],
                int(sys.argv[4]) if len(sys.argv) > 4 else 16384)
