"""Touching and near-touching pairs: `signed_distance`, `distance` and `intersect` give one consistent
answer, the status matches the sign, and both hold under rigid motions of the whole configuration.

The cases are the sweeps of `sweep_cases` (B moved along u through contact, for every pair of the
seven primitive kinds at sizes 1, 1e-3 and 1e3; the signed distance is exactly s on the separated
side), and ladders of exact gaps from 1e-3 down to 1e-15 of the size (float64; 1e-6 float32). They
run packed (`jg.pack`), so the general GJK/EPA path serves every kind pair; the specialised colliders
are held to the same rule in test_colliders.py.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgjk as jg

from .query_cases import run_three_queries
from .shape_samples import PRIMITIVE_KINDS, random_shape
from .sweep_cases import pose, rotation_about, sweeps

DTYPES = [np.float64, np.float32]
GAPS = {np.float64: 10.0 ** -np.arange(3, 16), np.float32: 10.0 ** -np.arange(3, 7)}
# The smallest gap (× the scale, `_scales`) whose sign every kind pair gets right (measured: the largest
# wrong one 9.7e-15 float64, 9.1e-6 float32): a distance within 64 roundings of the pair's scale is
# touching by definition (README, "Touching"), and GJK resolves gaps down to that.
RESOLVED = {np.float64: 3e-14, np.float32: 3e-5}


@jax.jit
def _rigid_motions(quaternions):
    """The rotation matrices (n, 3, 3) of quaternions (n, 4)."""
    return jax.vmap(lambda q: jg.Pose(jnp.zeros(3, q.dtype), q).rotation_matrix())(quaternions)


@jax.jit
def _moved(poses, rotations, translations):
    """Poses (leaves (n, ...)) after the world moves by rotations (n, 3, 3) and translations (n, 3)."""
    moved = jax.vmap(lambda rotation, pose: jg.Pose.from_rotation_matrix(rotation).compose(pose))(
        rotations, poses)
    return jg.Pose(moved.translation + translations, moved.rotation)


def _stacked_poses(cases, key, dtype=np.float64):
    """The poses `key` of `cases` as one Pose with leaves (n, ...)."""
    return jg.Pose(jnp.asarray(np.stack([np.asarray(c[key].translation) for c in cases]), dtype),
                   jnp.asarray(np.stack([np.asarray(c[key].rotation) for c in cases]), dtype))


def _run(cases, dtype):
    """The three queries on every case: (signed, status, distance, distance status, intersect)."""
    signed, unsigned, hits = run_three_queries(cases, dtype)
    return (np.asarray(signed.distance, np.float64), np.asarray(signed.status),
            np.asarray(unsigned.distance, np.float64), np.asarray(unsigned.status), np.asarray(hits))


@functools.cache
def _cases(dtype):
    """Sweep positions and gap ladders (with exact signed distances where known: NaN elsewhere), and
    the same configurations moved rigidly as a whole."""
    rng = np.random.default_rng(20)
    cases, exact = [], []
    for sweep in sweeps():
        offsets = np.concatenate([sweep["offsets"], GAPS[dtype] * sweep["size"]])
        for k, offset in enumerate(offsets):
            translation = sweep["contact"] + offset * sweep["direction"]
            cases.append(dict(shape_a=sweep["shape_a"], pose_a=sweep["pose_a"], shape_b=sweep["shape_b"],
                              pose_b=pose(translation, sweep["rotation_b"]), size=sweep["size"],
                              kinds=sweep["kinds"], gap=offset if k >= len(sweep["offsets"]) else np.nan))
            exact.append(offset if offset > 0 else np.nan)
    # A random rigid motion of each case (a quaternion of random norm, a translation).
    quaternions, translations = zip(*[(rng.normal(size=4), rng.normal(size=3) * 3) for _ in cases],
                                    strict=True)
    rotations, translations = _rigid_motions(jnp.asarray(np.stack(quaternions))), np.stack(translations)
    moved_a, moved_b = (jax.device_get(_moved(_stacked_poses(cases, key), rotations, translations))
                        for key in ("pose_a", "pose_b"))
    moved = [dict(case, pose_a=jg.Pose(moved_a.translation[k], moved_a.rotation[k]),
                  pose_b=jg.Pose(moved_b.translation[k], moved_b.rotation[k]))
             for k, case in enumerate(cases)]
    return cases, moved, np.array(exact)


def _scales(cases):
    """Each case's scale (): its shapes' size or its poses' coordinates, whichever is larger — the
    inputs themselves are rounded to that (a pair of size 1e-3 moved 3 away is known to 3 eps only)."""
    return np.array([max(c["size"], *(np.abs(np.asarray(c[key].translation, np.float64)).max()
                                      for key in ("pose_a", "pose_b"))) for c in cases])


def _consistency_failures(cases, results, dtype):
    """Every position: the three queries agree and the status matches the sign."""
    signed, status, unsigned, unsigned_status, hits = results
    tolerance = (1e-4 if dtype == np.float32 else 1e-9) * _scales(cases)
    overlapping = {jg.Status.PENETRATING, jg.Status.DEGENERATE, jg.Status.MAX_ITERATIONS}
    failures = []
    for k, case in enumerate(cases):
        name = f"{case['kinds']} size={case['size']:g} sd={signed[k]:.6g}"
        if signed[k] > 0 and status[k] != jg.Status.SEPARATED:
            failures.append(f"{name}: positive but {jg.Status(int(status[k])).name}")
        if signed[k] == 0 and status[k] != jg.Status.INTERSECTING:
            failures.append(f"{name}: touching but {jg.Status(int(status[k])).name}")
        if signed[k] < 0 and status[k] not in overlapping:
            failures.append(f"{name}: negative but {jg.Status(int(status[k])).name}")
        if hits[k] != (signed[k] <= 0):
            failures.append(f"{name}: intersect says {bool(hits[k])}")
        if (unsigned_status[k] == jg.Status.INTERSECTING) != (signed[k] <= 0):
            failures.append(f"{name}: distance says {jg.Status(int(unsigned_status[k])).name}")
        if not abs(unsigned[k] - max(signed[k], 0)) <= tolerance[k]:
            failures.append(f"{name}: distance {unsigned[k]:.6g}")
    return failures


@pytest.mark.parametrize("dtype", DTYPES)
def test_three_queries_agree_through_contact_and_under_rigid_motions(dtype):
    cases, moved, exact = _cases(dtype)
    here, there = _run(cases, dtype), _run(moved, dtype)
    failures = _consistency_failures(cases, here, dtype) + _consistency_failures(moved, there, dtype)
    # Moving the whole configuration does not change the answer beyond the float tolerance, nor its
    # sign where the exact distance is beyond what the dtype resolves.
    scale = np.maximum(_scales(cases), _scales(moved))
    resolved = np.abs(np.nan_to_num(exact, nan=0.0)) > RESOLVED[dtype] * scale
    for k in np.nonzero(resolved & ((here[0] > 0) != (there[0] > 0)))[0]:
        failures.append(f"{cases[k]['kinds']} size={cases[k]['size']:g} s={exact[k]:.3g}: sign "
                        f"{here[0][k]:.6g} here, {there[0][k]:.6g} moved")
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:30])


@pytest.mark.parametrize("dtype", DTYPES)
def test_gaps_beyond_the_resolution_are_separated_with_their_value(dtype):
    cases, moved, _ = _cases(dtype)
    for batch, results in ((cases, _run(cases, dtype)), (moved, _run(moved, dtype))):
        signed, status, unsigned, _, hits = results
        gaps = np.array([c["gap"] for c in batch])
        size, scale = np.array([c["size"] for c in batch]), _scales(batch)
        ladder = np.isfinite(gaps)
        resolved = ladder & (gaps > RESOLVED[dtype] * scale)
        wrong = resolved & ~((signed > 0) & (status == jg.Status.SEPARATED) & (unsigned > 0) & ~hits)
        assert not np.any(wrong), [f"{batch[k]['kinds']} size={size[k]:g} gap/size={gaps[k] / size[k]:.0e}: "
                                   f"sd={signed[k]:.3g}" for k in np.nonzero(wrong)[0][:20]]
        # Within the float tolerance of the gap where it is resolved: float32 1e-4 × the scale; float64
        # 1e-8 (1e-10 measured, except the rims of a cylinder and a cone at size 1e-3: GJK's convergence
        # on that thin patch of D stalls 6e-9 × the scale from the gap).
        error = np.abs(signed - gaps) / scale
        tolerance = 1e-4 if dtype == np.float32 else 1e-8
        assert np.all(error[resolved] <= tolerance), np.max(error[resolved])


def _farthest_point(shape):
    """A point (3,) of `shape` farthest from its local origin: the farthest of its support points along
    the axes and 4 000 other directions (a corner, a rim point, an end of the longest axis, ...)."""
    directions = np.concatenate([np.eye(3), -np.eye(3), np.random.default_rng(0).normal(size=(4000, 3))])
    points = np.asarray(jax.vmap(shape.support)(jnp.asarray(directions)))
    return points[np.argmax(np.linalg.norm(points, axis=1))]


def _turning(vector, target):
    """A quaternion (4,) turning the direction of `vector` (3,) onto the unit `target` (3,)."""
    unit = vector / np.linalg.norm(vector)
    axis = np.cross(unit, target)
    if np.linalg.norm(axis) < 1e-9:  # parallel or opposite: any perpendicular axis
        axis = np.cross(unit, np.eye(3)[np.argmin(np.abs(unit))])
    return rotation_about(axis, np.arccos(np.clip(unit @ target, -1, 1)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_intersect_where_the_separation_along_the_centres_nearly_touches(dtype):
    """`intersect` skips the solvers where the shapes' separation along the line of their centres (one
    support point each) exceeds twice the touching resolution. Each kind pair here has its two points
    farthest from the centres facing each other on that line, so that separation is the distance (and
    the bounding spheres' gap); at gaps of a few resolutions either side of touching, `intersect` says
    what `signed_distance` ≤ 0 says."""
    rng = np.random.default_rng(21)
    x = np.eye(3)[0]
    cases = []
    for i, kind_a in enumerate(PRIMITIVE_KINDS):
        for kind_b in PRIMITIVE_KINDS[i:]:
            shape_a, shape_b = random_shape(kind_a, rng), random_shape(kind_b, rng)
            reach = float(shape_a.reach()) + float(shape_b.reach())
            resolution = 64 * np.finfo(dtype).eps * reach
            rotation_a = _turning(_farthest_point(shape_a), x)
            rotation_b = _turning(_farthest_point(shape_b), -x)
            for gap in np.array([-3, -1, 0, 1, 1.5, 2, 2.5, 3, 5]) * resolution:
                cases.append(dict(shape_a=shape_a, pose_a=pose(np.zeros(3), rotation_a), shape_b=shape_b,
                                  pose_b=pose((reach + gap) * x, rotation_b)))
    count = len(cases)
    signed, _, _, _, hits = _run(cases, dtype)
    assert np.sum(signed > 0) > 0.3 * count and np.sum(signed <= 0) > 0.3 * count
    np.testing.assert_array_equal(hits, signed <= 0)
