"""Session 51's search for wrong normals in the specialised colliders (float32 and float64).

Per kind pair, ROWS random hard pairs (sizes 1e-3..1e3, flat boxes, zero-length capsules, rotations
within 1e-8..1e-2 rad of quarter turns, offsets along an axis, poses up to 100 sizes from the origin,
half of them moved along the general path's float64 normal to a signed distance of 0, ±1e-9..±1e-3 of
the size), `jit(vmap(signed_distance))` as users run it. For each, the general GJK/EPA path in
float64 on the same (float32-valued) inputs gives the signed distance sd, and the reported normal n
is scored by its shortfall sd − g(n) over the size, g(n) = −h_A(n) − h_B(−n) from jaxgjk's support
mappings in float64: a lower bound of sd for every unit n, equal to it at a valid normal, so ties
(several valid normals) score 0. Also printed: the largest |distance − sd| over the size (d64, d32).

    PYTHONPATH=. python benchmarks/results/session51/normal_fuzz.py [ROWS] [PAIRS] [SEED]

PAIRS: comma-separated `kind_a-kind_b` (kinds: sphere, capsule, box, cylinder, ellipsoid,
halfspace, rounded_box), default all below; the generator is seeded per (SEED, pair).
"""

import sys
import zlib

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

import jaxgjk as jg  # noqa: E402

ROWS = int(sys.argv[1]) if len(sys.argv) > 1 else 2048
SEED = int(sys.argv[3]) if len(sys.argv) > 3 else 1
PAIRS = [("sphere", "sphere"), ("sphere", "capsule"), ("capsule", "capsule"), ("sphere", "box"),
         ("capsule", "box"), ("box", "box"), ("sphere", "cylinder"), ("sphere", "ellipsoid"),
         ("rounded_box", "rounded_box"), ("capsule", "rounded_box")]
PAIRS += [(b, a) for a, b in PAIRS if a != b]
if len(sys.argv) > 2 and sys.argv[2]:
    PAIRS = [tuple(name.split("-")) for name in sys.argv[2].split(",")]


def shapes(kind, rng, size):
    def u(low=0.2, high=1.0, shape=()):
        return size.reshape((-1,) + (1,) * len(shape)) * rng.uniform(low, high, size=(ROWS,) + shape)

    if kind == "sphere":
        return jg.Sphere(u())
    if kind == "capsule":
        return jg.Capsule(u(0.1, 0.6), u(0.0, 1.0) * (rng.uniform(size=ROWS) > 0.1))
    if kind == "box":
        return jg.Box(u(shape=(3,)) * (rng.uniform(size=(ROWS, 3)) > 0.08))
    if kind == "cylinder":
        return jg.Cylinder(u(), u())
    if kind == "ellipsoid":
        return jg.Ellipsoid(u(shape=(3,)))
    if kind == "rounded_box":
        return jg.Rounded(jg.Box(u(shape=(3,))), u(0.0, 0.3))
    raise ValueError(kind)


def multiply(p, q):
    w1, x1, y1, z1 = p.T
    w2, x2, y2, z2 = q.T
    return np.stack([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2], 1)


def rotations(rng):
    random = rng.normal(size=(ROWS, 4))
    random /= np.linalg.norm(random, axis=1, keepdims=True)
    angles = (rng.integers(0, 4, size=(ROWS, 3)) * (np.pi / 2)
              + 10.0 ** rng.uniform(-8, -2, size=(ROWS, 3)) * rng.choice([-1, 1, 0], size=(ROWS, 3)))
    about = []
    for axis in range(3):
        quaternion = np.zeros((ROWS, 4))
        quaternion[:, 0], quaternion[:, 1 + axis] = np.cos(angles[:, axis] / 2), np.sin(angles[:, axis] / 2)
        about.append(quaternion)
    aligned = multiply(multiply(about[0], about[1]), about[2])
    return np.where((rng.uniform(size=ROWS) < 0.4)[:, None], aligned, random)


def cases(kind_a, kind_b, rng, make_shapes=None, reach=3.0):
    """ROWS pairs of `make_shapes(kind, rng, size)` (default `shapes`), B's centre up to `reach` sizes
    from A's, as float32 values, and their sizes."""
    make_shapes = make_shapes or shapes
    size = 10.0 ** rng.choice([-3, 0, 0, 0, 3], size=ROWS)
    shape_a, shape_b = make_shapes(kind_a, rng, size), make_shapes(kind_b, rng, size)
    direction = rng.normal(size=(ROWS, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    axis = np.eye(3)[rng.integers(0, 3, ROWS)] * rng.choice([-1, 1], size=(ROWS, 1))
    axis += 1e-6 * rng.normal(size=(ROWS, 3)) * (rng.uniform(size=ROWS) < 0.5)[:, None]
    direction = np.where((rng.uniform(size=ROWS) < 0.35)[:, None], axis, direction)
    origin = rng.normal(size=(ROWS, 3)) * size[:, None] * 10.0 ** rng.choice([0, 0, 2], size=(ROWS, 1))
    pose_a = jg.Pose(origin, rotations(rng))
    offset = direction * (rng.uniform(0.0, reach, size=ROWS) * size)[:, None]
    pose_b = jg.Pose(origin + offset, rotations(rng))
    return as_float32_values((shape_a, pose_a, shape_b, pose_b)), size


def as_float32_values(tree):
    return jax.tree_util.tree_map(lambda leaf: jnp.asarray(np.asarray(leaf, np.float32), jnp.float64), tree)


def query(config):
    return jax.jit(jax.vmap(lambda a, pa, b, pb: jg.signed_distance(a, pa, b, pb, config=config)))


SPECIALISED, GENERAL = query(jg.Config()), query(jg.Config(specialised=False))


@jax.jit
@jax.vmap
def separation(shape_a, pose_a, shape_b, pose_b, normal):
    normal = normal / jnp.linalg.norm(normal)
    reach_a = normal @ pose_a.apply(shape_a.support(pose_a.rotation_matrix().T @ normal))
    reach_b = -normal @ pose_b.apply(shape_b.support(pose_b.rotation_matrix().T @ -normal))
    return -reach_a - reach_b


def main():
    print(f"rows {ROWS}, seed {SEED}; shortfall = (sd - g(normal)) / size, max over the rows")
    print("| pair | shortfall f64 | shortfall f32 | d64 | d32 |\n|---|---:|---:|---:|---:|")
    for kind_a, kind_b in PAIRS:
        rng = np.random.default_rng(zlib.crc32(f"{SEED}-{kind_a}-{kind_b}".encode()))
        pairs, size = cases(kind_a, kind_b, rng)
        first = GENERAL(*pairs)
        target = size * rng.choice([0.0, 1e-9, 1e-6, -1e-6, 1e-3, -1e-3], size=ROWS)
        shift = (target - np.asarray(first.distance)) * (np.arange(ROWS) < ROWS // 2)
        moved = np.asarray(pairs[3].translation) + shift[:, None] * np.asarray(first.normal)
        pairs = as_float32_values(pairs[:3] + (jg.Pose(moved, pairs[3].rotation),))
        reference = np.asarray(GENERAL(*pairs).distance)
        row = []
        for dtype in (jnp.float64, jnp.float32):
            typed = jax.tree_util.tree_map(lambda leaf, dtype=dtype: leaf.astype(dtype), pairs)
            result = SPECIALISED(*typed)
            normal = jnp.asarray(result.normal, jnp.float64)
            row.append(np.max((reference - np.asarray(separation(*pairs, normal))) / size))
        for dtype in (jnp.float64, jnp.float32):
            typed = jax.tree_util.tree_map(lambda leaf, dtype=dtype: leaf.astype(dtype), pairs)
            distance = np.asarray(SPECIALISED(*typed).distance, np.float64)
            row.append(np.max(np.abs(distance - reference) / size))
        print(f"| {kind_a}-{kind_b} | " + " | ".join(f"{value:.1e}" for value in row) + " |", flush=True)


if __name__ == "__main__":
    main()
