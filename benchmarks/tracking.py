"""Warm-start tracking (seed paper 004, §4.3): GJK distance along slow trajectories, cold vs warm started,
with dense (`Polytope`) vs hill-climbing (`ClimbingPolytope`) support.

Each pair is two random hulls of points on unit spheres (vertex counts 10/20 up to 200/240). A stays at
the origin; B starts `--separation` (35) units away in a random direction and orientation, and each time
step translates it by `--step-length` (1) unit along a random direction (flipped if it would bring the
centres too close, so the pair stays separated) and rotates it by `--step-angle` (10°) about a random axis
through its centre. The warm query passes the previous step's `simplex` as `warm_start` (its first step
is cold). Supports: dense argmax; hill climbing from the best of 14 fixed start vertices; and hill
climbing whose starts also hold the vertices of the previous step's final simplex (Cameron's cached
support vertices, the paper's "enhanced version"; the lookup of those vertices costs O(N) per query).

Timing: one jitted `lax.scan` over the steps of a trajectory, over `--pairs` independent pairs either
vmapped (all pairs in lockstep) or with `lax.map` (one pair after another); compile time excluded, best
of `--repeats` interleaved runs. Mean iterations count the steps after the first (where warm starts apply).

    python -m benchmarks.tracking [--pairs 100] [--steps 50] [--x32] [--out FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import platform

import jax
import jax.numpy as jnp
import numpy as np

from .hill_climb import best_times, sphere_points

VERTEX_COUNTS = ((10, 20), (20, 30), (30, 40), (40, 50), (50, 60), (100, 120), (150, 180), (200, 240))
CACHED = "climbing, cached starts"
SUPPORTS = ("dense", "climbing", CACHED)
SHAPE_OF = {"dense": "dense", "climbing": "climbing", CACHED: "climbing"}
# The paper's motion: 35 units apart, 1-unit translations and 10° rotations per step.
PAPER_MOTION = dict(separation=35.0, step_length=1.0, step_angle_deg=10.0)


def quaternion_multiply(p, q):
    """Hamilton product of (w, x, y, z) quaternions (..., 4)."""
    pw, pv, qw, qv = p[..., :1], p[..., 1:], q[..., :1], q[..., 1:]
    return np.concatenate([pw * qw - np.sum(pv * qv, -1, keepdims=True),
                           pw * qv + qw * pv + np.cross(pv, qv)], -1)


def trajectories(rng, num_pairs, num_steps, separation, step_length, step_angle_deg):
    """B's poses: translations (P, T, 3) and unit quaternions (P, T, 4), world frame (A at the origin).

    Steps that would bring the centres closer than ``min(separation, 2.2)`` (spheres of radius 1) or
    ``separation - 15`` units, whichever is larger, are flipped.
    """
    min_separation = max(min(separation, 2.2), separation - 15)
    translation = separation * sphere_points(rng, num_pairs)
    rotation = rng.normal(size=(num_pairs, 4))
    rotation /= np.linalg.norm(rotation, axis=1, keepdims=True)
    half = np.deg2rad(step_angle_deg) / 2
    translations, rotations = [], []
    for _ in range(num_steps):
        translations.append(translation)
        rotations.append(rotation)
        step = step_length * sphere_points(rng, num_pairs)
        too_close = np.linalg.norm(translation + step, axis=1) < min_separation
        translation = translation + np.where(too_close[:, None], -step, step)
        axes = sphere_points(rng, num_pairs)
        turn = np.concatenate([np.full((num_pairs, 1), np.cos(half)), np.sin(half) * axes], 1)
        rotation = quaternion_multiply(turn, rotation)
    return np.stack(translations, 1), np.stack(rotations, 1)


def stack(shapes):
    return jax.tree_util.tree_map(lambda *leaves: jnp.stack(leaves), *shapes)


def make_shapes(rng, num_pairs, count_a, count_b, dtype):
    """Batched (P leading) dense and climbing polytopes for A and B, of equal N and K within each batch."""
    import jaxgjk as jg
    from jaxgjk._hill_climb import ClimbingPolytope

    out = {}
    for name, count in (("a", count_a), ("b", count_b)):
        clouds = [sphere_points(rng, count) for _ in range(num_pairs)]
        hulls = [jg.convex_hull(points) for points in clouds]
        assert all(hull.num_vertices == count for hull in hulls), "a point on the sphere was not a vertex"
        degree = max(hull.triangle_adjacency.shape[1] for hull in hulls)
        out[name] = {
            "dense": stack([jg.Polytope.from_points(points, dtype) for points in clouds]),
            "climbing": stack([ClimbingPolytope.from_points(points, dtype, max_degree=degree)
                               for points in clouds]),
        }
    return out


def with_cached_starts(shape, cached):
    """`shape` (a ClimbingPolytope) whose walks may also start from the vertices `cached` (4,)."""
    return dataclasses.replace(shape, starts=jnp.concatenate([shape.starts, cached]))


def vertex_indices(shape, points, mask, fallback):
    """Indices (4,) of the vertices equal to `points` (4, 3) where `mask`, else `fallback` (4,)."""
    hits = jnp.all(shape.vertices[None, :, :] == points[:, None, :], axis=-1)
    found = mask & jnp.any(hits, axis=-1)
    return jnp.where(found, jnp.argmax(hits, axis=-1), fallback).astype(jnp.int32)


def track(shape_a, shape_b, translations, rotations, warm, cache):
    """Distances, iterations and statuses (T,) along one trajectory, as one `lax.scan` over the steps.

    warm: pass the previous step's simplex as `warm_start`. cache: (climbing support only) the walks also
    start from the vertices of the previous step's final simplex (Cameron's cached support vertices).
    """
    import jaxgjk as jg

    dtype = translations.dtype
    identity = jg.Pose(jnp.zeros(3, dtype), jnp.asarray([1, 0, 0, 0], dtype))
    no_simplex = jg.Simplex(*(jnp.zeros((4, 3), dtype),) * 4, jnp.zeros(4, dtype), jnp.zeros(4, bool))
    no_cache = (shape_a.starts[:4], shape_b.starts[:4]) if cache else (jnp.zeros(4, jnp.int32),) * 2

    def step(carry, pose):
        previous, cached_a, cached_b = carry
        a, b = (with_cached_starts(shape_a, cached_a), with_cached_starts(shape_b, cached_b)) if cache else (
            shape_a, shape_b)
        result = jg.distance(a, identity, b, jg.Pose(*pose), warm_start=previous if warm else None)
        simplex = result.simplex
        if cache:
            cached_a = vertex_indices(shape_a, simplex.points_a, simplex.mask, cached_a)
            cached_b = vertex_indices(shape_b, simplex.points_b, simplex.mask, cached_b)
        return (simplex, cached_a, cached_b), (result.distance, result.iterations, result.status)

    _, outputs = jax.lax.scan(step, (no_simplex, *no_cache), (translations, rotations))
    return outputs


def run_case(rng, count_a, count_b, num_pairs, num_steps, dtype, repeats, modes, motion):
    import jaxgjk as jg

    shapes = make_shapes(rng, num_pairs, count_a, count_b, dtype)
    poses = trajectories(rng, num_pairs, num_steps, **motion)
    translations, rotations = (jnp.asarray(x, dtype) for x in poses)
    rows, distances, calls = {}, {}, {}
    for support in SUPPORTS:
        for warm in (False, True):
            args = (shapes["a"][SHAPE_OF[support]], shapes["b"][SHAPE_OF[support]], translations, rotations)
            function = functools.partial(track, warm=warm, cache=support == CACHED)
            for mode in modes:
                batched = jax.vmap(function) if mode == "vmap" else (
                    lambda *xs, f=function: jax.lax.map(lambda x: f(*x), xs))
                compiled = jax.jit(batched).lower(*args).compile()
                calls[support, warm, mode] = functools.partial(compiled, *args)
            distance, iterations, status = calls[support, warm, modes[0]]()
            assert np.all(np.asarray(status) == jg.Status.SEPARATED), "a pair stopped early or touched"
            rows[support, warm] = dict(
                counts=f"{count_a}/{count_b}", support=support, warm=warm,
                iterations=float(np.mean(np.asarray(iterations)[:, 1:])),
                first_iterations=float(np.mean(np.asarray(iterations)[:, 0])))
            distances[support, warm] = np.asarray(distance, np.float64)
    for (support, warm, mode), seconds in best_times(calls, repeats).items():
        rows[support, warm][f"{mode}_us"] = seconds / (num_pairs * num_steps) * 1e6
    rows = list(rows.values())
    for row in rows:
        print(row, flush=True)
    reference = distances["dense", False]
    gap = max(float(np.max(np.abs(d - reference))) for d in distances.values())
    for row in rows:
        row["max_gap"] = gap
    return rows


def table(rows, num_pairs, num_steps, dtype, modes, motion) -> str:
    timing = {"vmap": f"µs/query, {num_pairs} pairs vmapped", "map": f"µs/query, {num_pairs} pairs lax.map"}
    lines = [
        f"Tracking: {num_pairs} pairs × {num_steps} steps, centres {motion['separation']:g} apart, steps of "
        f"{motion['step_length']:g} units and {motion['step_angle_deg']:g}°, {np.dtype(dtype).name}, "
        f"{jax.devices()[0].device_kind} ({platform.processor() or platform.machine()}), "
        "best of repeated runs. Iterations: mean GJK iterations per query over steps 2..T; "
        "time: whole trajectories / queries.",
        "",
        "| vertices A/B | support | cold iters | warm iters | iters drop | "
        + " | ".join(f"cold {timing[m]} | warm {timing[m]}" for m in modes) + " | max abs Δd |",
        "| --- | --- | ---: | ---: | ---: | " + " | ".join("---: | ---:" for _ in modes) + " | ---: |",
    ]
    for cold, warm in zip(rows[::2], rows[1::2], strict=True):
        times = " | ".join(f"{cold[f'{m}_us']:.1f} | {warm[f'{m}_us']:.1f}" for m in modes)
        drop = 1 - warm["iterations"] / cold["iterations"]
        lines.append(f"| {cold['counts']} | {cold['support']} | {cold['iterations']:.2f} | "
                     f"{warm['iterations']:.2f} | {drop:.0%} | {times} | {cold['max_gap']:.1e} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--x32", action="store_true", help="float32 (default float64, as the paper)")
    parser.add_argument("--modes", default="vmap,map", help="comma-separated: vmap, map")
    parser.add_argument("--sizes", default=None, help="e.g. 10/20,200/240 (default: all)")
    parser.add_argument("--separation", type=float, default=PAPER_MOTION["separation"])
    parser.add_argument("--step-length", type=float, default=PAPER_MOTION["step_length"])
    parser.add_argument("--step-angle", type=float, default=PAPER_MOTION["step_angle_deg"], help="degrees")
    parser.add_argument("--out", default=None, help="append the Markdown table to this file")
    args = parser.parse_args()
    if not args.x32:
        jax.config.update("jax_enable_x64", True)
    dtype = np.float32 if args.x32 else np.float64
    modes = args.modes.split(",")
    sizes = VERTEX_COUNTS if args.sizes is None else [
        tuple(int(n) for n in size.split("/")) for size in args.sizes.split(",")]
    motion = dict(separation=args.separation, step_length=args.step_length, step_angle_deg=args.step_angle)
    rng = np.random.default_rng(0)
    rows = []
    for count_a, count_b in sizes:
        rows += run_case(rng, count_a, count_b, args.pairs, args.steps, dtype, args.repeats, modes, motion)
    text = table(rows, args.pairs, args.steps, dtype, modes, motion)
    print(text)
    if args.out:
        with open(args.out, "a") as file:
            file.write(text + "\n\n")


if __name__ == "__main__":
    main()
