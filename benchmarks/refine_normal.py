"""Normal refinement on curved contacts: normal (= distance gradient) error and cost, on and off.

For each kind pair, `--pairs` random poses (sizes 0.2–1, B offset by N(0, 0.4²) per axis: separated and
overlapping, seed 1, `epa_convergence.random_batch`) run through jit(vmap(signed_distance)) at the
default Config with `refine_normal` True and False, float32 and float64. The reference normal is jaxgjk
float64 with refinement and tight loops (GJK gap 1e-14, EPA gap 1e-12, 400 EPA steps): an accuracy study
of the defaults, not an independent check (tests/test_refine.py holds one). Throughput: float32, best of
`--repeats` timed calls of `distance` and `signed_distance`.

    python -m benchmarks.refine_normal [--pairs 2000] [--out benchmarks/results/refine_normal.md]
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxgjk as jg

from .epa_convergence import cast, random_batch

jax.config.update("jax_enable_x64", True)

DEFAULT_PAIRS = "ell-ell,sph-ell,box-ell,cyl-box,cyl-cyl,cyl-cone"
REFERENCE = jg.Config(gjk_tolerance=1e-14, epa_tolerance=1e-12, max_epa_iterations=400,
                      max_gjk_iterations=256)


def kernel(query, config):
    return jax.jit(jax.vmap(lambda a, pa, b, pb: query(a, pa, b, pb, config=config)))


def best_time(function, args, repeats):
    jax.block_until_ready(function(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(function(*args))
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--kinds", default=DEFAULT_PAIRS)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    lines = [f"# Normal refinement: error and cost ({args.pairs} random pairs per kind pair, "
             f"{jax.devices()[0].device_kind}, jax {jax.__version__})", "",
             "Normal error: p99 (max) over the pairs of |normal − reference| (the distance gradient "
             "w.r.t. B's translation is the normal); float32 inputs are the float64 ones rounded, and "
             "near-degenerate poses (a centre near an ellipsoid's medial axis) amplify that rounding. "
             "Throughput: float32 pairs/s, refinement on / off, best of the timed calls (a noisy 2-core "
             "machine: on/off ratios vary ±20% between runs).", "",
             "| pair | f64 off | f64 on | f32 off | f32 on | distance on/off (pairs/s) | "
             "signed on/off (pairs/s) |", "|---|---|---|---|---|---|---|"]
    for pair in args.kinds.split(","):
        kind_a, kind_b = pair.split("-")
        batch = random_batch(kind_a, kind_b, args.pairs)
        reference = kernel(jg.signed_distance, REFERENCE)(*cast(batch, jnp.float64)).normal
        errors, rates = {}, {}
        for dtype in (jnp.float32, jnp.float64):
            inputs = cast(batch, dtype)
            for refine in (False, True):
                config = jg.Config(refine_normal=refine)
                signed = kernel(jg.signed_distance, config)
                result = signed(*inputs)
                error = np.linalg.norm(np.asarray(result.normal, np.float64) - np.asarray(reference), axis=1)
                errors[dtype, refine] = f"{np.percentile(error, 99):.1e} ({np.max(error):.1e})"
                if dtype == jnp.float32:
                    distance = kernel(jg.distance, config)
                    rates["distance", refine] = args.pairs / best_time(distance, inputs, args.repeats)
                    rates["signed", refine] = args.pairs / best_time(signed, inputs, args.repeats)
        row = (f"| {pair} | {errors[jnp.float64, False]} | {errors[jnp.float64, True]} | "
               f"{errors[jnp.float32, False]} | {errors[jnp.float32, True]} | "
               f"{rates['distance', True]:,.0f} / {rates['distance', False]:,.0f} | "
               f"{rates['signed', True]:,.0f} / {rates['signed', False]:,.0f} |")
        print(row, flush=True)
        lines.append(row)
    text = "\n".join(lines) + "\n"
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(text)


if __name__ == "__main__":
    main()
