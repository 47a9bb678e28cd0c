"""Throughput of `jit(vmap(query))` on one batch against the same query run over equal chunks
(`jaxgjk._gate.vmapped_in_chunks`, which EPA uses on the CPU).

    python -m benchmarks.chunking polytope-polytope 32 pen signed_distance 2048,4096,8192

Arguments: case kind, polytope vertex count (0 otherwise), sep or pen, query, chunk sizes (comma
separated; empty: the plain `vmap` only). 256 distinct float32 pairs (`cases.make_case`, seed 0) tiled to
65 536; each kernel compiled apart (time printed), one untimed call, best of 3 timed calls. "maxdiff"
is the largest |distance difference| from the plain `vmap` (rounding of differently vectorised code).
"""

import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxgjk as jg
from jaxgjk._gate import vmapped_in_chunks

from . import cases as C

PAIRS, TILE = 65536, 256


def _float32(tree):
    def cast(x):
        return jnp.asarray(x, jnp.float32) if jnp.issubdtype(jnp.asarray(x).dtype, jnp.floating) else x

    return jax.tree_util.tree_map(cast, tree)


def main(argv):
    kind, vertices, mode, query, chunks = argv
    case = C.make_case(kind, TILE, mode == "pen", 0, int(vertices) or None)
    args = _float32(C.jaxgjk_pairs(C.subset(case, np.tile(np.arange(TILE), PAIRS // TILE)), jnp.asarray))
    in_axes = (None if case.shape_a in C.UNBATCHED_SHAPES else 0, 0,
               None if case.shape_b in C.UNBATCHED_SHAPES else 0, 0)
    reference = None
    for chunk in [None] + [int(c) for c in chunks.split(",") if c]:
        start = time.perf_counter()
        one_pair = getattr(jg, query) if chunk is None else vmapped_in_chunks(getattr(jg, query), chunk)
        kernel = jax.jit(jax.vmap(one_pair, in_axes=in_axes)).lower(*args).compile()
        compile_s = time.perf_counter() - start
        jax.block_until_ready(kernel(*args))
        best = np.inf
        for _ in range(3):
            start = time.perf_counter()
            out = jax.block_until_ready(kernel(*args))
            best = min(best, time.perf_counter() - start)
        distance = np.asarray(out.distance)
        reference = distance if reference is None else reference
        print(f"{kind}/{vertices} {mode} {query} chunk={chunk}: {PAIRS / best / 1e3:.1f} k/s, compile "
              f"{compile_s:.1f} s, maxdiff {np.max(np.abs(distance - reference)):.1e}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
