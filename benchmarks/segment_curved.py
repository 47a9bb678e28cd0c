"""Does a capsule (segment core) against a cylinder or an ellipsoid have a short method that beats GJK/EPA?

The candidate: the signed distance of a point to a convex set is convex along the segment, so for
separated pairs a golden-section search over the segment's parameter s of the point solvers' distance
(`_curved_colliders`: the cylinder's closed form, the ellipsoid's Newton solve) gives the distance.
It needs `--steps` evaluations for a bracket of 0.618^steps, and it gives the distance to rounding but
the closest point (hence the normal and the gradients) only to √eps of the segment's length (a
minimum is flat). It says nothing where the cores overlap: there the depth of the segment is not the
deepest depth of its points, and the general path (EPA) must run anyway.

Measured here, float32, `cases.make_case(kind, 256, penetrating, 0)` tiled to `--pairs`: throughput
(pairs per CPU second, best of `--repeats`) of the general path's `signed_distance` and `distance`
(separated and penetrating pairs) and of the golden-section search (separated pairs), with its largest
distance difference from the general path's `distance`.

    python -m benchmarks.segment_curved [--pairs 65536] [--steps 40]
"""

from __future__ import annotations

import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np

import jaxgjk as jg
from jaxgjk._curved_colliders import ellipsoid_closest

from . import specialised

KINDS = ("capsule-cylinder", "capsule-ellipsoid")
GOLDEN = (np.sqrt(5) - 1) / 2


def _point_distance(curved, point):
    """Signed distance () of `point` (3,) to the curved core (its frame)."""
    if isinstance(curved, jg.Ellipsoid):
        closest, outward = ellipsoid_closest(point, curved.radii)
        return jnp.dot(outward, point - closest)
    beyond_side = jnp.sqrt(point[0] ** 2 + point[1] ** 2) - curved.radius
    beyond_cap = jnp.abs(point[2]) - curved.half_length
    outside = jnp.sqrt(jnp.maximum(beyond_side, 0) ** 2 + jnp.maximum(beyond_cap, 0) ** 2)
    return jnp.where((beyond_side > 0) | (beyond_cap > 0), outside, jnp.maximum(beyond_side, beyond_cap))


def golden_section(steps):
    """The separated signed distance of a capsule (A) and a cylinder or ellipsoid (B) by golden-section
    search over A's segment."""
    def distance(capsule, pose_a, curved, pose_b):
        rotation = pose_b.rotation_matrix().T
        axis = pose_a.rotation_matrix()[:, 2] * capsule.half_length
        start = rotation @ (pose_a.translation - axis - pose_b.translation)
        step = rotation @ (2 * axis)

        def along(s):
            return _point_distance(curved, start + s * step)

        def narrow(_, bracket):
            low, high = bracket
            left, right = high - GOLDEN * (high - low), low + GOLDEN * (high - low)
            keep_left = along(left) < along(right)
            return jnp.where(keep_left, low, left), jnp.where(keep_left, right, high)

        low, high = jax.lax.fori_loop(0, steps, narrow, (jnp.zeros_like(start[0]), jnp.ones_like(start[0])))
        return along((low + high) / 2) - capsule.radius

    return distance


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=65536)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"`python -m benchmarks.segment_curved --pairs {args.pairs} --steps {args.steps}"
          f" --repeats {args.repeats}`; load average at start {os.getloadavg()[0]:.1f}\n")
    print("| case | general signed | general distance | golden section | its max error |")
    print("|---|---|---|---|---|")
    for kind in KINDS:
        for penetrating in (False, True):
            _, inputs = specialised.batch(kind, penetrating, args.pairs)
            rates = [args.pairs / specialised.measure(specialised.query(query, False), inputs,
                                                      args.repeats)[1] / 1e6
                     for query in (jg.signed_distance, jg.distance)]
            search = "–", "–"
            if not penetrating:
                found = jax.jit(jax.vmap(golden_section(args.steps)))(*inputs)
                exact = jax.jit(jax.vmap(specialised.query(jg.distance, False)))(*inputs).distance
                error = float(np.max(np.abs(np.asarray(found) - np.asarray(exact))))
                rate = args.pairs / specialised.measure(golden_section(args.steps), inputs, args.repeats)[1]
                search = f"{rate / 1e6:.3f}M", f"{error:.1e}"
            print(f"| {kind} {'pen' if penetrating else 'sep'} | {rates[0]:.3f}M | {rates[1]:.3f}M | "
                  f"{search[0]} | {search[1]} |", flush=True)


if __name__ == "__main__":
    main()
