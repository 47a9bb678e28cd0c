"""How fast a specialised query could run written on per-lane scalar components: a probe, not a solver.

    python -m benchmarks.component_probe

Capsule–capsule signed distance and witness points (world frame), written as scalar expressions on
each pair's components — quaternion entries, the rotation matrices' entries, the segments' ends, the
closest points' parameters — and stacked only into the outputs, under `jax.vmap` over the same
batch-major inputs as the package's query: 256 pairs of `cases.make_case("capsule-capsule", 256,
False, seed=0)` tiled to 65 536, float32. Against jaxgjk's `signed_distance` returning (distance,
point_a, point_b) and the whole result; best of 10 calls each, alternating; prints the largest distance
difference from jaxgjk's.

The probe omits what the contract adds (validity, the touching resolution, the simplex, features,
statuses, gradients) and the package's care for degenerate input (a segment on the other's line,
coincident centres): it bounds what the per-component form of the specialised path can gain, it does
not replace the solver (`_scalar_pairs`, which session 21 wrote on the same per-pair scalars).
"""

import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxgjk as jg

from . import cases as C

PAIRS, TILE = 65536, 256
PARALLEL = (64 * float(np.finfo(np.float32).eps)) ** 2  # |p × q|² ≤ this · |p|² |q|²: parallel


def _matrix(quaternion):
    """The entries [row][column] of the rotation of a quaternion given as four scalars."""
    w, x, y, z = quaternion
    norm = jnp.sqrt(w * w + x * x + y * y + z * z)
    w, x, y, z = w / norm, x / norm, y / norm, z / norm
    return [[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]]


def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _cross(a, b):
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def _ratio(numerator, denominator):
    positive = denominator > 0
    return jnp.where(positive, numerator / jnp.where(positive, denominator, 1), 0)


def capsule_pair(shape_a, pose_a, shape_b, pose_b):
    """(distance, point_a (3,), point_b (3,)) of two capsules, world frame, on scalar components."""
    axis_a = [row[2] for row in _matrix([pose_a.rotation[i] for i in range(4)])]
    axis_b = [row[2] for row in _matrix([pose_b.rotation[i] for i in range(4)])]
    d_p = [2 * shape_a.half_length * c for c in axis_a]
    d_q = [2 * shape_b.half_length * c for c in axis_b]
    start_p = [pose_a.translation[i] - shape_a.half_length * axis_a[i] for i in range(3)]
    start_q = [pose_b.translation[i] - shape_b.half_length * axis_b[i] for i in range(3)]
    offset = [p - q for p, q in zip(start_p, start_q, strict=True)]
    a, e, b = _dot(d_p, d_p), _dot(d_q, d_q), _dot(d_p, d_q)
    c, f = _dot(d_p, offset), _dot(d_q, offset)
    normal = _cross(d_p, d_q)
    s = jnp.clip(_ratio(_dot(normal, _cross(d_q, offset)), _dot(normal, normal)), 0, 1)
    s_q0, s_q1 = _ratio(-c, a), _ratio(b - c, a)
    middle = (jnp.clip(jnp.minimum(s_q0, s_q1), 0, 1) + jnp.clip(jnp.maximum(s_q0, s_q1), 0, 1)) / 2
    s = jnp.where(_dot(normal, normal) <= PARALLEL * a * e, middle, s)
    t = jnp.clip(_ratio(b * s + f, e), 0, 1)
    s = jnp.clip(_ratio(b * t - c, a), 0, 1)
    point_p = [p + s * d for p, d in zip(start_p, d_p, strict=True)]
    point_q = [q + t * d for q, d in zip(start_q, d_q, strict=True)]
    gap = [q - p for p, q in zip(point_p, point_q, strict=True)]
    length = jnp.sqrt(_dot(gap, gap))
    unit = [_ratio(g, length) for g in gap]
    return (length - shape_a.radius - shape_b.radius,
            jnp.stack([p + shape_a.radius * u for p, u in zip(point_p, unit, strict=True)]),
            jnp.stack([q - shape_b.radius * u for q, u in zip(point_q, unit, strict=True)]))


def main():
    case = C.make_case("capsule-capsule", TILE, False, seed=0)
    pairs = C.jaxgjk_pairs(case, convert=lambda x: np.asarray(x, np.float32))
    args = jax.tree_util.tree_map(
        lambda x: jnp.asarray(np.tile(x, (PAIRS // TILE,) + (1,) * (np.ndim(x) - 1))), pairs)

    def fromto(*pair):
        result = jg.signed_distance(*pair)
        return result.distance, result.point_a, result.point_b

    kernels = {"components (probe)": capsule_pair, "jaxgjk (distance, point_a, point_b)": fromto,
               "jaxgjk whole result": jg.signed_distance}
    compiled = {name: jax.jit(jax.vmap(kernel)).lower(*args).compile() for name, kernel in kernels.items()}
    difference = jnp.max(jnp.abs(compiled["components (probe)"](*args)[0]
                                 - compiled["jaxgjk (distance, point_a, point_b)"](*args)[0]))
    print(f"largest |distance difference| from jaxgjk's: {float(difference):.1e}")
    best = dict.fromkeys(compiled, np.inf)
    for _ in range(10):
        for name, kernel in compiled.items():
            start = time.perf_counter()
            jax.block_until_ready(kernel(*args))
            best[name] = min(best[name], time.perf_counter() - start)
    for name, seconds in best.items():
        print(f"{name}: {seconds * 1e3:.2f} ms, {PAIRS / seconds / 1e6:.2f} M pairs/s")


if __name__ == "__main__":
    main()
