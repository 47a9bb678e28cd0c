"""The colliders on aligned and degenerate inputs, where rounding decides: B turned as A to
within 0 to 1e-8 per quaternion component, then by a quarter turn about a random axis or not; sizes
with zero or tiny (1e-6, 1e-3) components (flat and needle boxes, segment capsules, disk, needle and
point ellipsoids); centres coincident or apart.

    python -m benchmarks.degenerate [--seed S] [--pairs capsule-box,box-box,...] [--count N]

Per kind pair, float64 and float32: the signed distance of the specialised path against the general
path (`Config(specialised=False)`), and where they differ by more than the tests' tolerance (1e-9 in
float64, 1e-4 in float32, sizes ~1) the float64 reference (`jaxgjk.reference`) says which is off.
Float64 only: `jax.grad` of the specialised signed distance with respect to every pose component
and size against central differences (step 1e-6), where the distance is smooth there (its one-sided
differences agree to 1e-5) and not touching; a mismatch beyond 1e-5 is reported with the general
path's gradient. Session 36 found two wrong answers and a frozen gradient this way
(`results/session36/README.md`).

Pairs without a specialised collider (`GENERAL_PAIRS`, run when `--pairs` names them; float64, the
default config, so the general path) against the support-function reference: a row is flagged where
the reported signed distance exceeds the separation along its own normal (the normal does not
certify it) or lies below the reference's (deeper than a direction the reference found), by more than
1e-7. Session 37 found EPA ending off a circle of deepest directions this way
(`results/session37/README.md`):

    python -m benchmarks.degenerate --seed 11 --count 128 --pairs capsule-cylinder,cylinder-box,...
"""

import argparse

import jax
import jax.numpy as jnp
import numpy as np

import jaxgjk as jg
from jaxgjk.reference import signed_distance_polytopes, signed_distance_smooth, support_function

PAIRS = ("sphere-sphere", "sphere-capsule", "capsule-capsule", "sphere-box", "capsule-box", "box-box",
         "sphere-cylinder", "sphere-ellipsoid")
GENERAL_PAIRS = ("capsule-cylinder", "cylinder-box", "cylinder-cylinder", "capsule-ellipsoid",
                 "box-ellipsoid", "ellipsoid-ellipsoid", "cone-box", "sphere-cone", "cone-cylinder")
POLYHEDRAL = ("sphere", "capsule", "box")  # kinds the exact hull reference takes
TOLERANCE = {np.float64: 1e-9, np.float32: 1e-4}
QUARTER_TURNS = np.array([[1.0, 0, 0, 0], [1, 1, 0, 0], [1, 0, 1, 0], [1, 0, 0, 1]]) / np.array(
    [[1.0], [np.sqrt(2)], [np.sqrt(2)], [np.sqrt(2)]])


def _shape(kind, sizes):
    """A shape of `kind` from three sizes (traced or not)."""
    return {"sphere": lambda: jg.Sphere(sizes[0]), "capsule": lambda: jg.Capsule(0.4 * sizes[0], sizes[1]),
            "box": lambda: jg.Box(sizes), "cylinder": lambda: jg.Cylinder(sizes[0], sizes[1]),
            "ellipsoid": lambda: jg.Ellipsoid(sizes), "cone": lambda: jg.Cone(sizes[0], sizes[1])}[kind]()


def _multiply(p, q):
    """Hamilton products (N, 4) of quaternions (N, 4), (w, x, y, z)."""
    (pw, px, py, pz), (qw, qx, qy, qz) = p.T, q.T
    return np.stack([pw * qw - px * qx - py * qy - pz * qz, pw * qx + px * qw + py * qz - pz * qy,
                     pw * qy - px * qz + py * qw + pz * qx, pw * qz + px * qy - py * qx + pz * qw], axis=1)


def inputs(rng, count):
    """(count, 20) rows: A's translation and quaternion, B's, A's three sizes, B's three."""
    sizes = rng.uniform(0.1, 1.0, (count, 6))
    sizes = np.where(rng.random((count, 6)) < 0.3, rng.choice([0.0, 0.0, 1e-6, 1e-3], (count, 6)), sizes)
    rotation_a = rng.normal(size=(count, 4))
    nearly = rotation_a + rng.choice([0, 1e-16, 1e-14, 1e-10, 1e-8], (count, 1)) * rng.normal(size=(count, 4))
    rotation_b = _multiply(nearly, QUARTER_TURNS[rng.integers(4, size=count)])
    translation_a = rng.normal(size=(count, 3))
    offset = rng.integers(2, size=(count, 1)) * rng.choice([1e-3, 0.1, 0.5, 1.0], (count, 1))
    translation_b = translation_a + offset * rng.normal(size=(count, 3))
    return np.concatenate([translation_a, rotation_a, translation_b, rotation_b, sizes], axis=1)


def signed(pair, config=None):
    """The signed distance of one row (20,) of `inputs` for the kind pair `pair` ('a-b')."""
    kind_a, kind_b = pair.split("-")

    def of_row(row):
        return jg.signed_distance(_shape(kind_a, row[14:17]), jg.Pose(row[:3], row[3:7]),
                                  _shape(kind_b, row[17:20]), jg.Pose(row[7:10], row[10:14]),
                                  config=config).distance
    return of_row


def _reference(pair, row):
    kind_a, kind_b = pair.split("-")
    arguments = (_shape(kind_a, row[14:17]), jg.Pose(row[:3], row[3:7]),
                 _shape(kind_b, row[17:20]), jg.Pose(row[7:10], row[10:14]))
    exact = kind_a in POLYHEDRAL and kind_b in POLYHEDRAL
    return (signed_distance_polytopes if exact else signed_distance_smooth)(*arguments)["distance"]


def compare_values(pair, rows):
    for dtype in (np.float64, np.float32):
        typed = jnp.asarray(rows, dtype)
        special = np.asarray(jax.jit(jax.vmap(signed(pair)))(typed), np.float64)
        general = np.asarray(jax.jit(jax.vmap(signed(pair, jg.Config(specialised=False))))(typed), np.float64)
        apart = np.nonzero(np.abs(special - general) > TOLERANCE[dtype])[0]
        off = {"specialised": 0, "general": 0}
        for index in apart:
            reference = _reference(pair, np.asarray(typed[index], np.float64))
            specialised_off = abs(special[index] - reference) > abs(general[index] - reference)
            off["specialised" if specialised_off else "general"] += 1
        print(f"{pair} {dtype.__name__}: {len(rows)} rows, worst |specialised - general| "
              f"{np.max(np.abs(special - general)):.1e}; beyond {TOLERANCE[dtype]:g}: {len(apart)} "
              f"(farther from the reference: the specialised path on {off['specialised']}, the general "
              f"path on {off['general']})", flush=True)


def compare_gradients(pair, rows, step=1e-6):
    value = jax.jit(jax.vmap(signed(pair)))
    gradient = np.asarray(jax.jit(jax.vmap(jax.grad(signed(pair))))(rows))
    general = np.asarray(jax.jit(jax.vmap(jax.grad(signed(pair, jg.Config(specialised=False)))))(rows))
    distance = np.asarray(value(rows))
    wrong = 0
    for column in range(rows.shape[1]):
        shift = np.zeros(rows.shape[1])
        shift[column] = step
        plus, minus = np.asarray(value(rows + shift)), np.asarray(value(rows - shift))
        central = (plus - minus) / (2 * step)
        right, left = (plus - distance) / step, (distance - minus) / step
        smooth = (np.abs(right - left) < 1e-5) & (np.abs(distance) > 1e-4) & (rows[:, column] != 0)
        for index in np.nonzero(smooth & (np.abs(gradient[:, column] - central) > 1e-5))[0]:
            wrong += 1
            print(f"  {pair} row {index} input {column}: gradient {gradient[index, column]:.6f}, differences "
                  f"{central[index]:.6f}, general path {general[index, column]:.6f}; sizes "
                  f"{np.array2string(rows[index, 14:], precision=3)}")
    print(f"{pair} float64 gradients: {wrong} of {rows.size} inputs off by more than 1e-5", flush=True)


def check_general(pair, rows, tolerance=1e-7):
    """A general-path pair's signed distances against its own normal and the support-function reference."""
    kind_a, kind_b = pair.split("-")

    def of_row(row):
        result = jg.signed_distance(_shape(kind_a, row[14:17]), jg.Pose(row[:3], row[3:7]),
                                    _shape(kind_b, row[17:20]), jg.Pose(row[7:10], row[10:14]))
        return result.distance, result.normal, result.status

    distance, normal, status = map(np.asarray, jax.jit(jax.vmap(of_row))(jnp.asarray(rows)))
    flagged = []
    for index, row in enumerate(rows):
        shape_a, pose_a = _shape(kind_a, row[14:17]), jg.Pose(row[:3], row[3:7])
        shape_b, pose_b = _shape(kind_b, row[17:20]), jg.Pose(row[7:10], row[10:14])
        reference = signed_distance_smooth(shape_a, pose_a, shape_b, pose_b)["distance"]
        along = -(support_function(shape_b, pose_b, -normal[index])
                  + support_function(shape_a, pose_a, normal[index]))  # the separation along the normal
        if distance[index] > along + tolerance or distance[index] < reference - tolerance:
            flagged.append((float(distance[index] - max(reference, along)), index, int(status[index])))
    flagged.sort(key=lambda item: -abs(item[0]))
    worst = ", ".join(f"row {index} off {error:.1e} (status {code})" for error, index, code in flagged[:3])
    print(f"{pair} float64: {len(rows)} rows, statuses {np.bincount(status, minlength=7).tolist()}; flagged "
          f"{len(flagged)}{': ' + worst if flagged else ''}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=512, help="rows per kind pair")
    parser.add_argument("--pairs", default=",".join(PAIRS))
    arguments = parser.parse_args()
    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(arguments.seed)
    for pair in arguments.pairs.split(","):
        rows = inputs(rng, arguments.count)
        if pair in GENERAL_PAIRS:
            check_general(pair, rows)
            continue
        compare_values(pair, rows)
        compare_gradients(pair, rows[: arguments.count // 8])


if __name__ == "__main__":
    main()
