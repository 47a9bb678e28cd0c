"""Penetrating `signed_distance` throughput and results of one tree, for alternating A/B runs.

    cd TREE && PYTHONPATH=. python /work/main/benchmarks/results/session40/ab_epa.py \
        polytope-polytope/32,ellipsoid-ellipsoid,cylinder-box OUT.npz 16384

Per scenario: `parity.tiled_case` (256 distinct float32 pairs, seed 0, tiled to N), the parity
benchmark's `jit(vmap(signed_distance))` kernel, compile timed apart, one untimed call, the best of
five. Every leaf of the results goes to OUT.npz, so two trees' files can be compared leaf by leaf.
"""

import sys
import time

import jax
import numpy as np

from benchmarks import parity
from benchmarks import run as R

scenarios, out_path = sys.argv[1].split(","), sys.argv[2]
pairs = int(sys.argv[3]) if len(sys.argv) > 3 else 4096
results = {}
for scenario in scenarios:
    kind, n_vertices = parity.parse_scenario(scenario)
    _, batch = parity.tiled_case(kind, n_vertices, True, 256, pairs, seed=0)
    args = R.jaxgjk_args(batch, np.arange(batch.n), parity.DTYPE)
    start = time.perf_counter()
    kernel = jax.jit(R.jaxgjk_batched(batch, "signed_distance")).lower(*args).compile()
    compile_s = time.perf_counter() - start
    result = jax.block_until_ready(kernel(*args))
    best = np.inf
    for _ in range(5):
        start = time.perf_counter()
        jax.block_until_ready(kernel(*args))
        best = min(best, time.perf_counter() - start)
    print(f"{scenario} pen: {pairs / best / 1e3:.1f} k/s (compile {compile_s:.1f} s)", flush=True)
    for i, leaf in enumerate(jax.tree_util.tree_leaves(result)):
        results[f"{scenario}_{i}"] = np.asarray(leaf)
np.savez(out_path, **results)
