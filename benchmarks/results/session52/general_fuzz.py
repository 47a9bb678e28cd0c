"""Session 52's certificate fuzz of the general path (GJK/EPA, `Config(specialised=False)`) on hard pairs.

No reference distance is needed: for any unit u, g(u) = -h_A(u) - h_B(-u) (float64 support functions of
`jaxgjk.reference`) is a lower bound of the true signed distance, equal to it at a valid normal. So per
row, "over" = (sd - g(n)) / size checks the reported normal n against the reported distance sd, and
"under" = (max over probes g(u) - sd) / size finds a distance reported too small; probes: the other
dtype's normal and 32 random perturbations of n at 1e-6..1e-2. The pairs are session 51's generator
(`../session51/normal_fuzz.py`: sizes 1e-3..1e3, poses up to 100 sizes from the origin, rotations
near quarter turns, half of them moved to touch or to ±1e-9..±1e-3 of the size), with flat and
needle cylinders, cones and ellipsoids, flattened 12-vertex polytopes and composites (`Rounded`
polytopes, `Affine` cylinders, a `ConvexHull` of a box and a sphere, a `MinkowskiSum` of a box and a
cylinder) added; float32-valued inputs run in both dtypes. Half-spaces are not covered (the reference
has no half-space support function).

    PYTHONPATH=. python benchmarks/results/session52/general_fuzz.py [ROWS] [PAIRS] [SEED]
"""

import importlib.util
import pathlib
import sys
import zlib

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

import jaxgjk as jg  # noqa: E402
from jaxgjk import reference  # noqa: E402

ROWS = int(sys.argv[1]) if len(sys.argv) > 1 else 256
SEED = int(sys.argv[3]) if len(sys.argv) > 3 else 2
PAIRS = [("cylinder", "box"), ("cylinder", "cylinder"), ("cone", "box"), ("cone", "cone"),
         ("cone", "cylinder"), ("ellipsoid", "ellipsoid"), ("ellipsoid", "box"), ("polytope", "polytope"),
         ("polytope", "box"),
         ("capsule", "cylinder"), ("capsule", "cone"), ("capsule", "ellipsoid"), ("sphere", "cone"),
         ("sphere", "polytope"), ("capsule", "polytope"), ("cylinder", "ellipsoid")]
if len(sys.argv) > 2 and sys.argv[2]:
    PAIRS = [tuple(name.split("-")) for name in sys.argv[2].split(",")]
NUM_VERTICES = 12
PROBES = 32

# Session 51's generator (poses, rotations, float32 values), run with this script's ROWS.
_spec = importlib.util.spec_from_file_location(
    "normal_fuzz", pathlib.Path(__file__).resolve().parents[1] / "session51" / "normal_fuzz.py")
_arguments, sys.argv = sys.argv, sys.argv[:1]
normal_fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(normal_fuzz)
sys.argv = _arguments
normal_fuzz.ROWS = ROWS

GENERAL = jax.jit(jax.vmap(lambda a, pa, b, pb: jg.signed_distance(a, pa, b, pb,
                                                                    config=jg.Config(specialised=False))))


def shapes(kind, rng, size):
    def u(low=0.2, high=1.0, shape=()):
        return size.reshape((-1,) + (1,) * len(shape)) * rng.uniform(low, high, size=(ROWS,) + shape)

    def thin(shape=()):  # 1, or 1e-3 for 8% of the entries: flat and needle shapes
        return np.where(rng.uniform(size=(ROWS,) + shape) > 0.08, 1.0, 1e-3)

    if kind in ("sphere", "box"):
        return normal_fuzz.shapes(kind, rng, size)
    if kind == "capsule":  # 8% of zero length (session 51's: 10%)
        return jg.Capsule(u(0.1, 0.6), u(0.0, 1.0) * (rng.uniform(size=ROWS) > 0.08))
    if kind == "cylinder":
        return jg.Cylinder(u() * thin(), u() * thin())
    if kind == "cone":
        return jg.Cone(u() * thin(), u() * thin())
    if kind == "ellipsoid":
        return jg.Ellipsoid(u(shape=(3,)) * thin((3,)))
    if kind == "polytope":
        vertices = rng.normal(size=(ROWS, NUM_VERTICES, 3)) * thin((1, 3))
        return jg.Polytope(vertices * size[:, None, None] * 0.6)
    if kind == "rounded_polytope":
        return jg.Rounded(shapes("polytope", rng, size), u(0.0, 0.3))
    if kind == "affine_cylinder":  # sheared and stretched by up to 2x, off its origin
        linear = np.eye(3) + 0.5 * rng.uniform(-1, 1, size=(ROWS, 3, 3))
        return jg.Affine(shapes("cylinder", rng, size), linear, u(-0.3, 0.3, shape=(3,)))
    if kind == "hull":  # a box and a sphere beside it
        sphere = jg.Affine(jg.Sphere(u(0.1, 0.5)), np.broadcast_to(np.eye(3), (ROWS, 3, 3)),
                           u(-1.0, 1.0, shape=(3,)))
        return jg.ConvexHull((shapes("box", rng, size), sphere))
    if kind == "minkowski":
        return jg.MinkowskiSum(shapes("box", rng, size), shapes("cylinder", rng, size))
    raise ValueError(kind)


def separation(shape_a, pose_a, shape_b, pose_b, u):
    """g(u) for one pair and unit directions u (K, 3) or (3,)."""
    return (-reference.support_function(shape_a, pose_a, u)
            - reference.support_function(shape_b, pose_b, -u))


def row(tree, index):
    return jax.tree_util.tree_map(lambda leaf: np.asarray(leaf)[index], tree)


def certify(pairs, size, result, other_normal, rng):
    """(over, under) per row (ROWS,), -inf for invalid input."""
    distance = np.asarray(result.distance, np.float64)
    normal = np.asarray(result.normal, np.float64)
    status = np.asarray(result.status)
    over, under = np.full(ROWS, -np.inf), np.full(ROWS, -np.inf)
    for index in range(ROWS):
        if status[index] == jg.Status.INVALID_INPUT:
            continue
        pair = row(pairs, index)
        unit = normal[index] / np.linalg.norm(normal[index])
        over[index] = (distance[index] - separation(*pair, unit)) / size[index]
        probes = np.concatenate([other_normal[index][None],
                                 unit + 10.0 ** rng.uniform(-6, -2, size=(PROBES, 1))
                                 * rng.normal(size=(PROBES, 3))])
        probes /= np.linalg.norm(probes, axis=1, keepdims=True)
        under[index] = (np.max(separation(*pair, probes)) - distance[index]) / size[index]
    return over, under


def main():
    print(f"rows {ROWS}, seed {SEED}: over = (sd - g(n)) / size, under = (max g(probe) - sd) / size")
    for kind_a, kind_b in PAIRS:
        jax.clear_caches()  # a process holds at most vm.max_map_count kernel mappings
        rng = np.random.default_rng(zlib.crc32(f"{SEED}-{kind_a}-{kind_b}".encode()))
        pairs, size = normal_fuzz.cases(kind_a, kind_b, rng, make_shapes=shapes, reach=2.0)
        first = GENERAL(*pairs)
        target = size * rng.choice([0.0, 1e-9, 1e-6, -1e-6, 1e-3, -1e-3], size=ROWS)
        valid = np.isfinite(np.asarray(first.distance))
        shift = np.where(valid, (target - np.asarray(first.distance)) * (np.arange(ROWS) < ROWS // 2), 0)
        moved = np.asarray(pairs[3].translation) + shift[:, None] * np.nan_to_num(np.asarray(first.normal))
        pairs = normal_fuzz.as_float32_values(pairs[:3] + (jg.Pose(moved, pairs[3].rotation),))
        results = {}
        for dtype in (jnp.float64, jnp.float32):
            typed = jax.tree_util.tree_map(lambda leaf, dtype=dtype: leaf.astype(dtype), pairs)
            results[dtype] = GENERAL(*typed)
        for dtype, other in ((jnp.float64, jnp.float32), (jnp.float32, jnp.float64)):
            result = results[dtype]
            over, under = certify(pairs, size, result, np.asarray(results[other].normal, np.float64), rng)
            status = np.asarray(result.status)
            worst_over, worst_under = int(np.argmax(over)), int(np.argmax(under))
            print(f"{kind_a}-{kind_b} {np.dtype(dtype).name}: over {over[worst_over]:.1e} (row {worst_over}, "
                  f"status {status[worst_over]}), under {under[worst_under]:.1e} (row {worst_under}, status "
                  f"{status[worst_under]}), statuses {np.bincount(status, minlength=6).tolist()}", flush=True)


if __name__ == "__main__":
    main()
