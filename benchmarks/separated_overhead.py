"""What `signed_distance` costs over `distance` on separated pairs (where EPA never runs).

    python -m benchmarks.separated_overhead [--scenarios ellipsoid-ellipsoid,polytope-polytope/32]
        [--repeats 8]

Per scenario: 256 separated float32 pairs (`cases.make_case`, seed 0) tiled to 65 536 (polytope meshes
shared), `jax.jit(jax.vmap(query))` for both queries with the default config, then `--repeats`
rounds that call each kernel once in turn, best call kept. Alternating the two in one process keeps
the machine's drift out of their ratio, which separate runs of `benchmarks.parity` do not (issue 15
asks for the signed query within 10% of `distance` there).
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxgjk as jg

from . import cases

PAIRS, TILE = 65536, 256
QUERIES = ("distance", "signed_distance")


def kernels(kind: str, n_vertices: int):
    """The two compiled kernels of `QUERIES` and their arguments, on the scenario's separated batch."""
    case = cases.make_case(kind, TILE, False, 0, **({"n_vertices": n_vertices} if n_vertices else {}))
    shape_a, pose_a, shape_b, pose_b = cases.jaxgjk_pairs(case, lambda x: np.asarray(x, np.float32))
    shared = kind == "polytope-polytope"

    def tiled(tree):
        return jax.tree_util.tree_map(
            lambda x: jnp.asarray(np.tile(x, (PAIRS // TILE,) + (1,) * (x.ndim - 1))), tree)

    arguments = (shape_a if shared else tiled(shape_a), tiled(pose_a),
                 shape_b if shared else tiled(shape_b), tiled(pose_b))
    axes = (None if shared else 0, 0, None if shared else 0, 0)
    return {query: jax.jit(jax.vmap(getattr(jg, query), in_axes=axes)).lower(*arguments).compile()
            for query in QUERIES}, arguments


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default="ellipsoid-ellipsoid,polytope-polytope/32,polytope-polytope/8,"
                                               "cylinder-box")
    parser.add_argument("--repeats", type=int, default=8)
    args = parser.parse_args(argv)
    print(f"{PAIRS} separated float32 pairs, {jax.devices()[0].device_kind}; best of {args.repeats} "
          "alternating calls, pairs/s")
    for scenario in args.scenarios.split(","):
        kind, _, vertices = scenario.partition("/")
        compiled, arguments = kernels(kind, int(vertices or 0))
        best = dict.fromkeys(QUERIES, np.inf)
        for query in QUERIES:
            jax.block_until_ready(compiled[query](*arguments))
        for _ in range(args.repeats):
            for query in QUERIES:
                start = time.perf_counter()
                jax.block_until_ready(compiled[query](*arguments))
                best[query] = min(best[query], time.perf_counter() - start)
        rates = {query: PAIRS / best[query] for query in QUERIES}
        print(f"{scenario}: distance {rates['distance'] / 1e3:.1f} k, signed_distance "
              f"{rates['signed_distance'] / 1e3:.1f} k, signed / distance "
              f"{rates['signed_distance'] / rates['distance']:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
