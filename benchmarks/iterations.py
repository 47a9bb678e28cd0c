"""Iteration counts per pair of kinds: GJK (`distance`) and GJK + EPA (`signed_distance`).

Under `vmap` the slowest lane sets the cost of a batch, so the p99 and max matter as much as the mean.
Pairs are the main job's (`python -m jaxgjk`: sizes 0.2–1, centres 0–2.5 apart, random orientations,
16-vertex polytopes), `--pairs` in all, grouped by unordered kind pair after one packed jit(vmap(query)).

    python -m benchmarks.iterations [--pairs 50000] [--dtype float32]
"""

from __future__ import annotations

import argparse
import itertools
import os

import jax
import numpy as np

import jaxgjk as jg
from jaxgjk._demo import KIND_NAMES, random_pairs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=50000)
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "iterations.md"))
    args = parser.parse_args()
    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    shape_a, pose_a, shape_b, pose_b = random_pairs(args.pairs, KIND_NAMES, np.dtype(args.dtype))
    kinds = np.sort(np.stack([np.asarray(shape_a.kind), np.asarray(shape_b.kind)], axis=1), axis=1)
    results = {name: jax.jit(jax.vmap(query))(shape_a, pose_a, shape_b, pose_b)
               for name, query in (("distance", jg.distance), ("signed_distance", jg.signed_distance))}
    rows = []
    for kind_a, kind_b in itertools.combinations_with_replacement(range(len(KIND_NAMES)), 2):
        part = np.flatnonzero((kinds[:, 0] == kind_a) & (kinds[:, 1] == kind_b))
        cells = []
        for result in results.values():
            counts = np.asarray(result.iterations)[part]
            cells.append(f"{counts.mean():.1f} / {np.percentile(counts, 99):.0f} / {counts.max()}")
        signed = results["signed_distance"]
        penetrating = np.mean(np.asarray(signed.distance)[part] < 0)
        unconverged = np.sum(np.isin(np.asarray(signed.status)[part],
                                     [jg.Status.MAX_ITERATIONS, jg.Status.DEGENERATE]))
        rows.append(f"| {KIND_NAMES[kind_a]}–{KIND_NAMES[kind_b]} | {len(part)} | {cells[0]} | {cells[1]} | "
                    f"{penetrating:.0%} | {unconverged} |")
    table = "\n".join([
        "| kinds | pairs | distance: GJK iterations mean / p99 / max | signed_distance: GJK + EPA mean / p99 "
        "/ max | penetrating | MAX_ITERATIONS or DEGENERATE |",
        "| --- | ---: | --- | --- | ---: | ---: |", *rows])
    header = (f"# Iterations per pair of kinds\n\n{args.pairs} random pairs of the seven kinds "
              f"(~{args.pairs // 25} per kind pair), {args.dtype}, default Config. Command: "
              f"`python -m benchmarks.iterations --pairs {args.pairs} "
              f"--dtype {args.dtype}`.\n\n")
    with open(args.out, "w") as handle:
        handle.write(header + table + "\n")
    print(table)


if __name__ == "__main__":
    main()
