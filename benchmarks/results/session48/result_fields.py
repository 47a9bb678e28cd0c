"""What each part of the whole result costs: `jit(vmap(signed_distance))` returning subsets of its fields.

    PYTHONPATH=. python benchmarks/results/session48/result_fields.py [SCENARIO] [pen]

65 536 float32 pairs of a parity scenario (default sphere-sphere, separated); XLA drops the work that
no returned field needs. Three rounds, each the best of ten calls per subset, in ms.
"""

import sys
import time

import jax
import jax.numpy as jnp

from benchmarks import cases as C
from benchmarks import parity as P

POINTS = ("distance", "point_a", "point_b")
SUBSETS = {
    "whole": None,
    "fromto": POINTS,
    "+normal,status,iterations": POINTS + ("normal", "status", "iterations"),
    "+features": POINTS + ("normal", "status", "iterations", "feature_a", "feature_b"),
    "+simplex": POINTS + ("normal", "status", "iterations", "simplex"),
    "simplex only": ("simplex",),
    "features only": ("feature_a", "feature_b"),
}


def main():
    kind = sys.argv[1] if len(sys.argv) > 1 else "sphere-sphere"
    _, batch = P.tiled_case(kind, None, sys.argv[2:] == ["pen"], 256, 65536, 0)
    args = C.jaxgjk_pairs(batch, convert=lambda a: jnp.asarray(a, jnp.float32))
    query = P.kernel_fn(batch, "signed_distance")
    kernels = {name: jax.jit(lambda *a, fields=fields: query(*a) if fields is None
                             else tuple(getattr(query(*a), field) for field in fields))
               for name, fields in SUBSETS.items()}
    for kernel in kernels.values():
        jax.block_until_ready(kernel(*args))
    for _ in range(3):
        line = []
        for name, kernel in kernels.items():
            times = []
            for _ in range(10):
                start = time.perf_counter()
                jax.block_until_ready(kernel(*args))
                times.append(time.perf_counter() - start)
            line.append(f"{name} {min(times) * 1e3:.2f}")
        print(" | ".join(line), flush=True)


if __name__ == "__main__":
    main()
