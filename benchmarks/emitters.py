"""Do the tests' XLA:CPU code generator and the users' default one give the same answers?

The test suite ran with ``--xla_cpu_use_fusion_emitters=false`` until session 35 (it compiles faster;
with jaxlib 0.10.2 it gave one degenerate capsule–box pair a wrong depth, so the tests now run XLA's
default, the MLIR fusion emitters, as users do). The two round differently where they
vectorise differently, and a comparison near a tie can then decide differently, so a result the tests
pass under one generator is not by itself checked under the other. This script saves every output of
`signed_distance` and `distance` on the `cases` scenarios (separated and penetrating, float32 and
float64, `jit(vmap(query))`) under the ``XLA_FLAGS`` of its process, and compares two saves: per
scenario, the largest difference of each output and the pairs whose status differs.

    XLA_FLAGS=--xla_cpu_use_fusion_emitters=false python -m benchmarks.emitters --save older.npz
    python -m benchmarks.emitters --save default.npz
    python -m benchmarks.emitters --compare default.npz older.npz
"""

from __future__ import annotations

import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np

import jaxgjk as jg

from . import cases

SCENARIOS = cases.KINDS
PAIRS = 1024
FIELDS = ("distance", "point_a", "point_b", "normal", "status")


def save(path: str) -> None:
    jax.config.update("jax_enable_x64", True)

    def queries(*pair):
        return jg.signed_distance(*pair), jg.distance(*pair)

    outputs = {"xla_flags": np.asarray(os.environ.get("XLA_FLAGS", ""))}
    kernels = {}  # by in_axes: one jitted kernel, compiled once per input structure, shape and dtype
    for scenario in SCENARIOS:
        n_vertices = 8 if scenario == "polytope-polytope" else None
        for penetrating in (False, True):
            case = cases.make_case(scenario, PAIRS, penetrating, seed=11, n_vertices=n_vertices)
            for dtype in (np.float32, np.float64):
                pairs = jax.tree_util.tree_map(lambda x, dtype=dtype: jnp.asarray(x, dtype),
                                               cases.jaxgjk_pairs(case))
                # Shared leaves (a polytope's vertices) unbatched.
                axes = jax.tree_util.tree_map(lambda x: 0 if x.shape[:1] == (PAIRS,) else None, pairs)
                if str(axes) not in kernels:
                    kernels[str(axes)] = jax.jit(jax.vmap(queries, in_axes=axes))
                results = kernels[str(axes)](*pairs)
                for query, result in zip(("signed_distance", "distance"), results, strict=True):
                    for field in FIELDS:
                        mode = "pen" if penetrating else "sep"
                        key = f"{scenario}|{mode}|{np.dtype(dtype).name}|{query}|{field}"
                        outputs[key] = np.asarray(getattr(result, field))
        print(f"{scenario} done", flush=True)
    np.savez(path, **outputs)


def _largest_difference(a, b, row: str, *fields: str) -> float:
    return max(float(np.max(np.abs(a[f"{row}|{f}"].astype(np.float64) - b[f"{row}|{f}"].astype(np.float64))))
               for f in fields)


def compare(path_a: str, path_b: str) -> None:
    a, b = np.load(path_a), np.load(path_b)
    for label, path, saved in (("A", path_a, a), ("B", path_b, b)):
        print(f"{label}: {path} (XLA_FLAGS={str(saved['xla_flags'])!r})")
    print()
    print("| scenario | mode | dtype | query | max abs diff: distance / points / normal | statuses differ |")
    print("|---|---|---|---|---|---:|")
    for row in sorted({key.rsplit("|", 1)[0] for key in a.files if key != "xla_flags"}):
        distance, points, normal = (_largest_difference(a, b, row, *fields)
                                    for fields in (("distance",), ("point_a", "point_b"), ("normal",)))
        statuses = int(np.sum(a[f"{row}|status"] != b[f"{row}|status"]))
        print(f"| {' | '.join(row.split('|'))} | {distance:.1e} / {points:.1e} / {normal:.1e} | {statuses} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--save", metavar="FILE")
    action.add_argument("--compare", nargs=2, metavar=("A", "B"))
    args = parser.parse_args()
    if args.save:
        save(args.save)
    else:
        compare(*args.compare)


if __name__ == "__main__":
    main()
