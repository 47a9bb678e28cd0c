"""The specialised colliders against the general GJK/EPA path and MuJoCo C.

For each kind of `--kinds` (default box-box, capsule-box) and each of separated / penetrating pairs
(`cases.make_case`, 256 pairs, seed 0, tiled to `--pairs`), float32: compile time and throughput of
``jax.jit(jax.vmap(query))`` for `signed_distance` and `distance`, specialised (the default Config) and
general (``Config(specialised=False)``); the specialised solver alone (its contact on the prepared
pair, no world-frame result) to split the cost; and MuJoCo C's colliders (`mj_geomDistance`, one
thread, Python loop, its per-call overhead subtracted) on the same 256 pairs. Throughput is pairs
per second of process CPU time (all threads), i.e. per core, which a loaded machine distorts less
than wall time; best of `--repeats` calls.

    python -m benchmarks.specialised [--kinds box-box,capsule-box] [--pairs 65536]
        [--out benchmarks/results/specialised.md]
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxgjk as jg
from jaxgjk import _scalar_pairs as scalar_pairs
from jaxgjk._colliders import specialised_contact
from jaxgjk._contact import QueryMode
from jaxgjk._solve import prepare
from jaxgjk._tolerance import touching_resolution

from . import cases, peers

KINDS = ("box-box", "capsule-box")
SHAPES = {"sphere": jg.Sphere, "capsule": jg.Capsule, "box": jg.Box, "cylinder": jg.Cylinder,
          "ellipsoid": jg.Ellipsoid}  # their fields in the order of `cases.SHAPE_PARAMS`


def batch(kind, penetrating, pairs):
    """float32 shapes and poses of `pairs` pairs: the 256 pairs of the case, tiled."""
    case = cases.make_case(kind, 256, penetrating, 0)

    def tiled(values):
        return jnp.asarray(np.tile(values, (pairs // 256,) + (1,) * (values.ndim - 1)), np.float32)

    def shape(name, params):
        return SHAPES[name](*(tiled(params[field]) for field in cases.SHAPE_PARAMS[name]))

    name_a, name_b = kind.split("-")
    return case, (shape(name_a, case.params_a), jg.Pose(tiled(case.pos_a), tiled(case.quat_a)),
                  shape(name_b, case.params_b), jg.Pose(tiled(case.pos_b), tiled(case.quat_b)))


def measure(function, args, repeats):
    """(compile seconds, CPU seconds per call, wall seconds per call), best of `repeats` calls."""
    start = time.perf_counter()
    compiled = jax.jit(jax.vmap(function)).lower(*args).compile()
    compile_seconds = time.perf_counter() - start
    jax.block_until_ready(compiled(*args))
    cpu, wall = np.inf, np.inf
    for _ in range(repeats):
        cpu_start, wall_start = time.process_time(), time.perf_counter()
        jax.block_until_ready(compiled(*args))
        cpu, wall = min(cpu, time.process_time() - cpu_start), min(wall, time.perf_counter() - wall_start)
    return compile_seconds, cpu, wall


def solver_alone(shape_a, pose_a, shape_b, pose_b):
    """The specialised contact of the prepared pair (and a curved one's normal response); for sphere
    and capsule pairs and a sphere with a box, whose query is one stage (`_scalar_pairs`), the whole
    signed query."""
    if scalar_pairs.handles(jg.Config(), shape_a, shape_b):
        return scalar_pairs.solve(jg.Config(), QueryMode.SIGNED, shape_a, pose_a, shape_b, pose_b, None)
    prepared = prepare(shape_a, pose_a, shape_b, pose_b)
    return specialised_contact(True, prepared.pair, touching_resolution(prepared.scale))


def query(function, specialised):
    config = jg.Config(specialised=specialised)
    return lambda shape_a, pose_a, shape_b, pose_b: function(shape_a, pose_a, shape_b, pose_b, config=config)


def mujoco_rates(case, copies=20):
    """MuJoCo C pairs per CPU second on the case's pairs (tiled `copies` times): as measured (a Python
    call per pair) and with the per-call overhead subtracted; None where MuJoCo is absent."""
    try:
        run = peers.run_mujoco(cases.subset(case, np.tile(np.arange(case.n), copies)), "signed_distance",
                               repeats=5)
    except ImportError:
        return None
    per_pair = run["cpu_seconds"] / (case.n * copies)
    return 1 / per_pair, 1 / (per_pair - run["per_call_overhead_s"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated kinds of cases.py")
    parser.add_argument("--pairs", type=int, default=65536)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="benchmarks/results/specialised.md")
    args = parser.parse_args(argv)
    load_start = os.getloadavg()[0]
    rows = []
    kinds = args.kinds.split(",")
    colliders = {}
    for kind in kinds:
        for penetrating in (False, True):
            case, inputs = batch(kind, penetrating, args.pairs)
            label = f"{kind} {'pen' if penetrating else 'sep'}"
            row = {"case": label, "mujoco": mujoco_rates(case)}
            colliders[kind] = peers.mujoco_collider(case)
            for name, function in [("signed", query(jg.signed_distance, True)),
                                   ("signed general", query(jg.signed_distance, False)),
                                   ("distance", query(jg.distance, True)),
                                   ("distance general", query(jg.distance, False)),
                                   ("solver alone", solver_alone)]:
                row[name] = measure(function, inputs, args.repeats)
                compile_seconds, cpu_seconds, _ = row[name]
                print(f"{label} {name}: compile {compile_seconds:.1f} s, "
                      f"{args.pairs / cpu_seconds:,.0f} pairs/CPU s", flush=True)
            rows.append(row)
    load_end = os.getloadavg()[0]

    def rate(entry):
        return f"{args.pairs / entry[1] / 1e6:.3f}M"

    lines = [
        f"# Specialised colliders ({', '.join(kinds)}): throughput and compile time",
        "",
        f"`python -m benchmarks.specialised --kinds {args.kinds} --pairs {args.pairs} "
        f"--repeats {args.repeats}`",
        "",
        f"- cpu ({os.cpu_count()} cores), jax {jax.__version__}, float32, {args.pairs} pairs per call "
        "(`cases.make_case(kind, 256, penetrating, 0)` tiled); load average (1 min) at start/end: "
        f"{load_start:.1f} / {load_end:.1f} — a shared machine: absolute numbers are pessimistic, "
        "ratios within a row were measured minutes apart.",
        "- throughput: pairs per second of process CPU time (all threads), best of the calls; compile: "
        "`lower` + `compile` of `jax.jit(jax.vmap(query))`.",
        "- solver alone: the specialised contact of the prepared pair (`_colliders.specialised_contact`), "
        "without the world-frame result and closest features of the query.",
        f"- MuJoCo C: `mj_geomDistance` ({'; '.join(f'{k}: {v}' for k, v in colliders.items())}; "
        "float64, one thread) on "
        "the 256 pairs tiled 20 times, pairs per CPU second as measured (a Python call each) and with "
        "the per-call overhead (`peers.run_mujoco`, measured apart; noisy under load) subtracted; the ratio "
        "uses the former, which counts a Python call per pair (~0.35 µs) against MuJoCo.",
        "",
        "| case | signed | signed general | speed-up | distance | distance general | solver alone | "
        "MuJoCo C (no call) | signed / MuJoCo | compile signed (general) | compile solver |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        signed, general = row["signed"], row["signed general"]
        mujoco = row["mujoco"]
        lines.append(
            f"| {row['case']} | {rate(signed)} | {rate(general)} | {general[1] / signed[1]:.1f}× | "
            f"{rate(row['distance'])} | {rate(row['distance general'])} | {rate(row['solver alone'])} | "
            + (f"{mujoco[0] / 1e6:.3f}M ({mujoco[1] / 1e6:.3f}M) | "
               f"{args.pairs / signed[1] / mujoco[0]:.2f} | " if mujoco else "– | – | ")
            + f"{signed[0]:.1f} s ({general[0]:.1f} s) | {row['solver alone'][0]:.1f} s |")
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as file:
        file.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
