"""What the normal refinement costs where it runs: compile time, fusions in the compiled program and
float32 throughput of jit(vmap(query)), refinement on and off, a few kind pairs.

Pairs from `epa_convergence.random_batch` (seed 1: separated and overlapping). Throughput is the best
of `--repeats` timed calls; compile time is `.lower(...).compile()`. Run it once on this checkout and
once on an older one (JAXGJK_ROOT=<exported jaxgjk parent>) to compare.

    python -m benchmarks.refine_cost [--pairs 2000] [--kinds ell-ell,cyl-cone,cone-cone,box-cone]
        [--query signed_distance|distance]

XLA:CPU compiles each fusion on its own, so the fusion count follows the compile time without the
machine's noise (box-cylinder `distance`: 525 fusions with refinement, 200 without, session 53).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time

# JAXGJK_ROOT (optional): the parent directory of an older jaxgjk to measure instead of this checkout's.
if "JAXGJK_ROOT" in os.environ:
    sys.path.insert(0, os.environ["JAXGJK_ROOT"])

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import jaxgjk as jg  # noqa: E402

from .epa_convergence import cast, random_batch  # noqa: E402
from .refine_normal import best_time  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--kinds", default="ell-ell,cyl-cone,cone-cone,box-cone")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--query", default="signed_distance", choices=("signed_distance", "distance"))
    args = parser.parse_args()
    query = getattr(jg, args.query)
    print(f"jaxgjk from {os.path.dirname(jg.__file__)}, {args.query}, {args.pairs} pairs, float32")
    print("| pair | refine | compile (s) | fusions | pairs/s |\n|---|---|---|---|---|")
    for pair in args.kinds.split(","):
        inputs = cast(random_batch(*pair.split("-"), args.pairs), jnp.float32)
        for refine in (False, True):
            config = jg.Config(refine_normal=refine)
            kernel = jax.jit(jax.vmap(lambda a, pa, b, pb, c=config: query(a, pa, b, pb, config=c)))
            start = time.perf_counter()
            compiled = kernel.lower(*inputs).compile()
            compile_time = time.perf_counter() - start
            fusions = len(re.findall(r"fusion\(", compiled.as_text()))
            rate = args.pairs / best_time(compiled, inputs, args.repeats)
            print(f"| {pair} | {refine} | {compile_time:.1f} | {fusions} | {rate:.3g} |", flush=True)


if __name__ == "__main__":
    main()
