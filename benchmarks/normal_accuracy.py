"""Distance gradients against an independent exact normal, every ordered pair of the seven primitive kinds.

The gradient of `signed_distance` with respect to B's translation is the contact normal, so it is
compared with `tests/exact_normal.py` (float64 SLSQP + Newton polish on a piecewise-smooth support
description, nothing of jaxgjk's algorithms). Cases per ordered kind pair: `--cases` random shapes
(`shape_samples.random_shape`, size ~1) at random poses, B's centre at distance uniform in [0, 2.5]
from A's along a random direction (far to deep), inputs rounded to float32 values; kept where the
reference resolved a KKT point whose normal is unique (its second-best local maximum at least 1e-4
lower). `--wrap affine` maps both shapes by x ↦ L x + o (L a rotation times a diagonal in [0.6, 1.4],
o ~ N(0, 0.1²)); `--wrap rounded` sweeps both by a ball of radius 0.1. Every case runs through one
packed kernel per dtype: jit(vmap(grad)) of the default `signed_distance`.

Reports, per kind pair: cases, how many gradients agree with the exact normal to 1e-6 (float64) and
1e-3 (float32), and the worst error of each; `--exchange` adds the largest float64 difference between
the gradient w.r.t. B's translation of the pair (A, B) and of the pair (B, A) (the same function: the
pair (B, A) reports the opposite normal, and its distance is the same).

    python -m benchmarks.normal_accuracy [--cases 64] [--wrap plain|affine|rounded] [--exchange] \
        [--cache FILE] [--out benchmarks/results/normal_accuracy.md]

imports the checkout's `jaxgjk` (or the one under $JAXGJK_ROOT, e.g. an exported older commit; the
reference is read from that jaxgjk too, so an export from before `jaxgjk/reference.py` existed needs
this checkout's copy of that file).
"""

from __future__ import annotations

import argparse
import functools
import os
import pickle
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

# JAXGJK_ROOT (optional): the parent directory of an older jaxgjk to measure instead of this checkout's.
if "JAXGJK_ROOT" in os.environ:
    sys.path.insert(0, os.environ["JAXGJK_ROOT"])
import jaxgjk as jg  # noqa: E402
from jaxgjk.reference import support_function  # noqa: E402
from tests.exact_normal import exact_normal  # noqa: E402
from tests.shape_samples import PRIMITIVE_KINDS, random_rotation, random_shape  # noqa: E402

jax.config.update("jax_enable_x64", True)

TOLERANCE = {np.float64: 1e-6, np.float32: 1e-3}
UNIQUE_MARGIN = 1e-4


def f32_exact(value):
    return np.asarray(value, np.float64).astype(np.float32).astype(np.float64)


def _wrap(wrap, rng):
    """Random parameters of the wrapper `wrap` (empty for plain shapes)."""
    if wrap == "affine":
        rotation = np.asarray(jg.Pose(jnp.zeros(3), jnp.asarray(random_rotation(rng))).rotation_matrix())
        linear = f32_exact(rotation * rng.uniform(0.6, 1.4, 3))
        return dict(linear=linear, offset=f32_exact(rng.normal(size=3) * 0.1))
    if wrap == "rounded":
        return dict(radius=np.float64(0.1))
    return {}


def _wrapped(primitive, parameters, dtype):
    """`primitive` (plain or packed) inside the wrapper `parameters` describe, fields of `dtype`."""
    if "linear" in parameters:
        return jg.Affine(primitive, jnp.asarray(parameters["linear"], dtype),
                         jnp.asarray(parameters["offset"], dtype))
    if "radius" in parameters:
        return jg.Rounded(primitive, jnp.asarray(parameters["radius"], dtype))
    return primitive


def make_cases(kind_a, kind_b, count, wrap, seed):
    """Random cases of one ordered kind pair with their exact normals (float64, world frame)."""
    rng = np.random.default_rng([seed, PRIMITIVE_KINDS.index(kind_a), PRIMITIVE_KINDS.index(kind_b),
                                 ("plain", "affine", "rounded").index(wrap)])
    cases = []
    for _ in range(count):
        shapes = [jax.tree_util.tree_map(f32_exact, random_shape(kind, rng)) for kind in (kind_a, kind_b)]
        wrappers = [_wrap(wrap, rng) for _ in shapes]
        origin = rng.normal(size=3)
        direction = rng.normal(size=3)
        direction /= np.linalg.norm(direction)
        poses = [(f32_exact(origin), f32_exact(random_rotation(rng))),
                 (f32_exact(origin + rng.uniform(0, 2.5) * direction), f32_exact(random_rotation(rng)))]
        posed = [_wrapped(shape, w, np.float64) for shape, w in zip(shapes, wrappers, strict=True)]
        reference = exact_normal(posed[0], jg.Pose(*map(jnp.asarray, poses[0])), posed[1],
                                 jg.Pose(*map(jnp.asarray, poses[1])))
        if reference["resolved"] and reference["margin"] > UNIQUE_MARGIN and reference["check"] < 1e-9:
            cases.append(dict(shapes=shapes, wrappers=wrappers, poses=poses, normal=reference["normal"],
                              signed=reference["signed"], active=reference["active"]))
    return cases


@functools.cache
def _kernel(exchange):
    def gradient(a, pose_a, b, pose_b):
        def signed(translation):
            if exchange:
                return jg.signed_distance(b, jg.Pose(translation, pose_b.rotation), a, pose_a).distance
            return jg.signed_distance(a, pose_a, b, jg.Pose(translation, pose_b.rotation)).distance
        return jax.grad(signed)(pose_b.translation)
    return jax.jit(jax.vmap(gradient))


def gradients(cases, dtype, exchange=False):
    """(N, 3) gradients of the signed distance w.r.t. B's translation (w.r.t. the second shape's
    translation of the exchanged pair when `exchange`, the pair (B, A))."""
    def body(index):
        shapes = jg.pack([c["shapes"][index] for c in cases], dtype=dtype)
        parameters = cases[0]["wrappers"][index]
        stacked = {key: np.stack([c["wrappers"][index][key] for c in cases]) for key in parameters}
        return _wrapped(shapes, stacked, dtype)

    def poses(index):
        return jg.Pose(*(jnp.asarray(np.stack([c["poses"][index][k] for c in cases]), dtype) for k in (0, 1)))

    return np.asarray(_kernel(exchange)(body(0), poses(0), body(1), poses(1)), np.float64)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=64)
    parser.add_argument("--wrap", default="plain", choices=("plain", "affine", "rounded"))
    parser.add_argument("--kinds", default=",".join(PRIMITIVE_KINDS))
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--exchange", action="store_true")
    parser.add_argument("--cache", default=None, help="pickle of the reference cases (read or written)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    pairs = [(a, b) for a in kinds for b in kinds]
    start = time.perf_counter()
    if args.cache and os.path.exists(args.cache):
        with open(args.cache, "rb") as file:
            by_pair = pickle.load(file)
    else:
        by_pair = {pair: make_cases(*pair, args.cases, args.wrap, args.seed) for pair in pairs}
        if args.cache:
            with open(args.cache, "wb") as file:
                pickle.dump(by_pair, file)
    reference_time = time.perf_counter() - start
    everything = [c for pair in pairs for c in by_pair[pair]]
    exact = np.stack([c["normal"] for c in everything])
    errors, timings, found = {}, {}, {}
    for dtype in (np.float64, np.float32):
        start = time.perf_counter()
        found[dtype] = gradients(everything, dtype)
        errors[dtype] = np.linalg.norm(found[dtype] - exact, axis=1)
        timings[dtype] = time.perf_counter() - start
    # g (float64) at a normal, and the float32 resolution of the distance (eps · the pair's scale).
    posed = [[_wrapped(shape, w, np.float64) for shape, w in zip(c["shapes"], c["wrappers"], strict=True)]
             for c in everything]
    poses = [[jg.Pose(*map(jnp.asarray, pose)) for pose in c["poses"]] for c in everything]

    def g(index, normal):
        (a, b), (pose_a, pose_b) = posed[index], poses[index]
        return -support_function(a, pose_a, normal) - support_function(b, pose_b, -normal)

    # The reference is a best-of-starts local search: where jaxgjk's float64 normal certifies a larger
    # g (less depth), the reference missed the maximum; those cases are counted and left out.
    missed = np.array([g(i, found[np.float64][i] / np.linalg.norm(found[np.float64][i]))
                       > c["signed"] + 1e-12 for i, c in enumerate(everything)])
    resolution = np.array([np.finfo(np.float32).eps * max(
        float(a.reach()), float(b.reach()), np.linalg.norm(c["poses"][1][0] - c["poses"][0][0]))
        for (a, b), c in zip(posed, everything, strict=True)])
    # A float32 normal off by more than 1e-3 is a near-tie when g there is within a few float32
    # resolutions of the maximum: float32 cannot tell the two directions apart.
    tie = np.zeros(len(everything))
    for i in np.flatnonzero(errors[np.float32] > TOLERANCE[np.float32]):
        normal = found[np.float32][i] / np.linalg.norm(found[np.float32][i])
        tie[i] = (everything[i]["signed"] - g(i, normal)) / resolution[i]
    if args.exchange:
        swapped = gradients(everything, np.float64, exchange=True)
        exchange_error = np.linalg.norm(swapped - gradients(everything, np.float64), axis=1)
    lines = [f"# Distance gradients against the exact normal ({args.wrap}, {args.cases} tries per ordered "
             f"kind pair, seed {args.seed}, jax {jax.__version__}, "
             f"jaxgjk from {os.path.dirname(jg.__file__)})",
             "",
             f"    {' '.join(['python -m benchmarks.normal_accuracy'] + sys.argv[1:])}", "",
             f"Reference {reference_time:.0f} s; jaxgjk (compile + run) float64 {timings[np.float64]:.0f} s, "
             f"float32 {timings[np.float32]:.0f} s.", "",
             "Reference beaten (jaxgjk's float64 normal certifies a larger g: left out): "
             f"{int(np.sum(missed))}. "
             "f32 tie: for float32 gradients off by more than 1e-3, the largest g(exact) − g(float32 normal) "
             "in float32 resolutions of the distance (eps · max(reach, offset)); ≤ a few is a near-tie.", "",
             "| pair | cases | f64 ≤ 1e-6 | f64 worst | f32 ≤ 1e-3 | f32 worst | f32 tie |"
             + (" exchange worst |" if args.exchange else ""),
             "|---|---|---|---|---|---|---|" + ("---|" if args.exchange else "")]
    offset = 0
    totals = np.zeros(3, int)
    for pair in pairs:
        count = len(by_pair[pair])
        rows = np.arange(offset, offset + count)
        offset += count
        rows = rows[~missed[rows]]
        count = len(rows)
        if not count:
            continue
        good = [int(np.sum(errors[d][rows] <= TOLERANCE[d])) for d in (np.float64, np.float32)]
        totals += (count, *good)
        line = (f"| {pair[0]}–{pair[1]} | {count} | {good[0]} | {np.max(errors[np.float64][rows]):.1e} | "
                f"{good[1]} | {np.max(errors[np.float32][rows]):.1e} | {np.max(tie[rows]):.2g} |")
        if args.exchange:
            line += f" {np.max(exchange_error[rows]):.1e} |"
        lines.append(line)
    kept = ~missed
    lines.append(f"| all | {totals[0]} | {totals[1]} | {np.max(errors[np.float64][kept]):.1e} | "
                 f"{totals[2]} | "
                 f"{np.max(errors[np.float32][kept]):.1e} | {np.max(tie[kept]):.2g} |"
                 + (f" {np.max(exchange_error[kept]):.1e} |" if args.exchange else ""))
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as file:
            file.write(text)


if __name__ == "__main__":
    main()
