"""Throughput of `jit(vmap(query))` on one batch against the same query run over equal chunks
(`jax.lax.map(..., batch_size=chunk)`: a loop over chunks, each one `vmap`).

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

from . import cases as C

PAIRS, TILE = 65536, 256


def _float32(tree):
    def cast(x):
        return jnp.asarray(x, jnp.float32) if jnp.issubdtype(jnp.asarray(x).dtype, jnp.floating) else x

    return jax.tree_util.tree_map(cast, tree)


def in_chunks(query, in_axes, chunk: int):
    """`query` over the batch as a `lax.map` over chunks of `chunk` pairs (PAIRS a multiple of it)."""
    def run(*args):
        shared = [arg for arg, axis in zip(args, in_axes, strict=True) if axis is None]

        def one_pair(batched):
            rows, common = iter(batched), iter(shared)
            return query(*[next(common) if axis is None else next(rows) for axis in in_axes])

        return jax.lax.map(one_pair, [arg for arg, axis in zip(args, in_axes, strict=True) if axis == 0],
                           batch_size=chunk)

    return run


def main(argv):
    kind, vertices, mode, query, chunks = argv
    case = C.make_case(kind, TILE, mode == "pen", 0, int(vertices) or None)
    args = _float32(C.jaxgjk_pairs(C.subset(case, np.tile(np.arange(TILE), PAIRS // TILE)), jnp.asarray))
    in_axes = (None if case.shape_a in C.UNBATCHED_SHAPES else 0, 0,
               None if case.shape_b in C.UNBATCHED_SHAPES else 0, 0)
    reference = None
    for chunk in [None] + [int(c) for c in chunks.split(",") if c]:
        start = time.perf_counter()
        kernel = jax.jit(jax.vmap(getattr(jg, query), in_axes=in_axes) if chunk is None
                         else in_chunks(getattr(jg, query), in_axes, chunk)).lower(*args).compile()
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
