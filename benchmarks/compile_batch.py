"""Compile time of `jit(vmap(query))` against the batch size: it should not grow with the batch.

For each scenario (``kind:query``, kinds as in `cases.make_case`), 256 random pairs tiled to each batch
size, float32; `lower` + `compile` timed in this process after one small warm-up compile (so that
XLA's start-up is not counted), each size compiled afresh. Prints a markdown table.

    python -m benchmarks.compile_batch [--scenarios ellipsoid-ellipsoid:distance,...] [--sizes 256,65536]
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from . import cases as C
from . import run as R

SCENARIOS = "ellipsoid-ellipsoid:distance,cylinder-box:distance,polytope-polytope:signed_distance"


def compile_seconds(kind: str, query: str, pairs: int) -> float:
    """Seconds to lower and compile `jit(vmap(query))` on `pairs` float32 pairs of `kind`."""
    case = C.make_case(kind, 256, False, 0, 32 if kind.startswith("polytope") else None)
    batch = C.subset(case, np.tile(np.arange(256), pairs // 256))
    args = R.jaxgjk_args(batch, np.arange(batch.n), "float32")
    start = time.perf_counter()
    jax.jit(R.jaxgjk_batched(case, query)).lower(*args).compile()
    return time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default=SCENARIOS)
    parser.add_argument("--sizes", default="256,65536", help="batch sizes, multiples of 256")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    jax.jit(lambda x: jnp.sin(x) * 2).lower(1.0).compile()
    print("| scenario | " + " | ".join(f"{n} pairs (s)" for n in sizes) + " | load |")
    print("|---|" + "---:|" * len(sizes) + "---:|")
    for scenario in args.scenarios.split(","):
        kind, query = scenario.split(":")
        seconds = [compile_seconds(kind, query, n) for n in sizes]
        print(f"| {kind} {query} | " + " | ".join(f"{s:.2f}" for s in seconds)
              + f" | {os.getloadavg()[0]:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
