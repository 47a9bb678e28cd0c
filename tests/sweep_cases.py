"""Cases for the signed-distance tests: hand-built polytope contacts, closed forms, degenerate and
invalid input, and sweeps of B through contact, each with float64 references.

Every case is a dict like those of `cases.pairs`: shape_a, pose_a, shape_b, pose_b, kinds, size, ref
(a dict with at least "distance"; "normal" where the reference defines one). Inputs are rounded to
float32 values (held in float64) so that the float32 and float64 runs see the same geometry.

The sweeps rest on one construction. Pick a unit direction u and place B so that A's support point
along u coincides with B's support point along -u. Then D0 = B - A contains the origin on its boundary
and lies in the half-space {x : u·x >= 0}. Translating B by s·u moves D to D0 + s·u, so for s > 0 the
closest point of D to the origin is s·u: the signed distance is exactly s and the normal exactly u.
For s = -t < 0 the depth f(t) is the distance from t·u to the boundary of D0: a concave function with
f(0) = 0 and f(t) <= t (the plane with normal -u is at distance t). Concavity gives the chord lower
bound between known values, and f is non-decreasing on [0, T] when the nearest face at T has an outward
normal m with m·u <= 0, i.e. when the reference normal (= -m) at the deepest position has normal·u > 0.
"""

import functools

import jax.numpy as jnp
import numpy as np

import jaxgjk as jg
from jaxgjk.reference import (
    capsule_capsule,
    capsule_endpoints,
    sphere_box,
    sphere_capsule,
    sphere_sphere,
    support_function,
    support_point,
)

from .query_cases import float32_exact, reference
from .shape_samples import PRIMITIVE_KINDS, random_rotation, random_shape

IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])


def pose(translation, rotation=IDENTITY):
    return jg.Pose(jnp.asarray(np.asarray(translation, np.float64)),
                   jnp.asarray(np.asarray(rotation, np.float64)))


def case(shape_a, pose_a, shape_b, pose_b, kinds, size, ref=None, **extra):
    """A case dict with float32-exact inputs; `ref` defaults to the polytope/smooth reference."""
    shape_a, pose_a, shape_b, pose_b = float32_exact((shape_a, pose_a, shape_b, pose_b))
    if ref is None:
        ref = reference(shape_a, pose_a, shape_b, pose_b, kinds)
    return dict(shape_a=shape_a, pose_a=pose_a, shape_b=shape_b, pose_b=pose_b, kinds=kinds,
                size=size, ref=ref, **extra)


def rotation_about(axis, angle):
    axis = np.asarray(axis, np.float64) / np.linalg.norm(axis)
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis])


def quaternion_product(p, q):
    pw, pv, qw, qv = p[0], p[1:], q[0], q[1:]
    return np.concatenate([[pw * qw - pv @ qv], pw * qv + qw * pv + np.cross(pv, qv)])


def ball_points(rng, count, size):
    """`count` points inside a ball of radius `size` (many of them interior, not hull vertices)."""
    points = rng.normal(size=(count, 3))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    return points * size * rng.uniform(0, 1, size=(count, 1)) ** (1 / 3)


def tetrahedron(size):
    return jg.Polytope(jnp.asarray(size * np.array(
        [[0.0, 0.0, 1.0], [0.94, 0.0, -0.33], [-0.47, 0.82, -0.33], [-0.47, -0.82, -0.33]])))


# -------------------------------------------------------------------------------------------------
# Hand-built polytope contacts (exact reference)
# -------------------------------------------------------------------------------------------------


def _placed_penetrating(shape_a, shape_b, kinds, size, rng, reach=(0.0, 0.8), tries=40):
    """shape_b at a random offset from shape_a, random rotations, kept if it penetrates (ref < -1e-3·size)."""
    for _ in range(tries):
        origin = rng.normal(size=3) * size
        direction = rng.normal(size=3)
        direction /= np.linalg.norm(direction)
        pose_a = pose(origin, random_rotation(rng))
        pose_b = pose(origin + direction * size * rng.uniform(*reach), random_rotation(rng))
        candidate = case(shape_a, pose_a, shape_b, pose_b, kinds, size)
        if candidate["ref"]["distance"] < -1e-3 * size:
            return candidate
    raise RuntimeError("no penetrating placement found")


@functools.cache
def polytope_cases(seed=11):
    """Polytope-polytope contacts with many coplanar or degenerate Minkowski features (exact ref).

    Groups (the case's "group" field): face_to_face, vertex_in_face, edge_edge, coincident, deep,
    random_hull.
    """
    rng = np.random.default_rng(seed)
    cases = []
    box, poly = ("box", "box"), ("polytope", "polytope")
    for size in (1e-3, 1.0, 1e3):
        # Identical axis-aligned boxes offset along x: the Minkowski difference has coplanar faces.
        half = size * np.array([0.5, 0.7, 0.9])
        for overlap in (0.002, 0.3, 1.0, 1.9):
            for lateral in ((0, 0), (0.2, 0.1), (0.7, -0.4)):
                offset = np.array([2 * half[0] - overlap * half[0], lateral[0] * half[1],
                                   lateral[1] * half[2]])
                cases.append(case(jg.Box(jnp.asarray(half)), pose(np.zeros(3)),
                                  jg.Box(jnp.asarray(half)), pose(offset), box, size,
                                  group="face_to_face"))
        # The same, with one common rotation and translation (parallel faces in a rotated frame).
        rotation = random_rotation(rng)
        matrix = np.asarray(jg.Pose(jnp.zeros(3), jnp.asarray(rotation)).rotation_matrix())
        origin = rng.normal(size=3) * size
        for overlap in (0.01, 0.5):
            offset = matrix @ np.array([2 * half[0] - overlap * half[0], 0.1 * half[1], 0])
            cases.append(case(jg.Box(jnp.asarray(half)), pose(origin, rotation),
                              jg.Box(jnp.asarray(half)), pose(origin + offset, rotation), box, size,
                              group="face_to_face"))
        # A vertex of B pushed into the top face of A (A axis-aligned, z half-extent 0.5·size).
        top = jg.Box(jnp.asarray(size * np.array([1.0, 1.0, 0.5])))
        for shape_b, kind_b in ((jg.Box(jnp.asarray(size * np.array([0.3, 0.4, 0.5]))), "box"),
                                (tetrahedron(0.6 * size), "polytope")):
            for depth in (0.001, 0.05, 0.2):
                rotation = random_rotation(rng)
                lowest = support_point(shape_b, pose(np.zeros(3), rotation), np.array([0, 0, -1.0]))
                target = np.array([rng.uniform(-0.3, 0.3) * size, rng.uniform(-0.3, 0.3) * size,
                                   (0.5 - depth) * size])
                cases.append(case(top, pose(np.zeros(3)), shape_b, pose(target - lowest, rotation),
                                  ("box", kind_b), size, group="vertex_in_face"))
        # Edge on edge: cubes turned 45° about x (A, edge up along x) and about y (B, edge down
        # along y), B above A; also with a small random tilt.
        cube = jg.Box(jnp.asarray(size * np.full(3, 0.5)))
        reach = size * 0.5 * np.sqrt(2)
        for depth in (0.001, 0.1):
            for tilt in (0.0, 0.05):
                tilt_rotation = rotation_about(rng.normal(size=3), tilt)
                rotation_a = quaternion_product(tilt_rotation, rotation_about([1, 0, 0], np.pi / 4))
                rotation_b = rotation_about([0, 1, 0], np.pi / 4)
                cases.append(case(cube, pose(np.zeros(3), rotation_a), cube,
                                  pose([0, 0, 2 * reach - depth * size], rotation_b), box, size,
                                  group="edge_edge"))
        # Identical shapes in the same pose: the depth is the smallest width (box: 2·min h).
        for shape, kinds in ((jg.Box(jnp.asarray(size * np.array([0.4, 0.9, 0.6]))), box),
                             (tetrahedron(size), poly),
                             (jg.Polytope(jnp.asarray(ball_points(rng, 20, size))), poly)):
            same = pose(rng.normal(size=3) * size, random_rotation(rng))
            cases.append(case(shape, same, shape, same, kinds, size, group="coincident"))
        # Deep: one shape well inside the other.
        outer = jg.Box(jnp.asarray(size * np.array([1.0, 1.2, 0.8])))
        for inner, kind in ((jg.Box(jnp.asarray(size * np.array([0.1, 0.2, 0.15]))), "box"),
                            (tetrahedron(0.2 * size), "polytope"),
                            (jg.Polytope(jnp.asarray(ball_points(rng, 30, 0.3 * size))), "polytope")):
            for _ in range(2):
                centre = rng.uniform(-0.4, 0.4, size=3) * size
                cases.append(case(outer, pose(np.zeros(3), random_rotation(rng)), inner,
                                  pose(centre, random_rotation(rng)), ("box", kind), size,
                                  group="deep"))
                cases.append(case(inner, pose(centre, random_rotation(rng)), outer,
                                  pose(np.zeros(3), random_rotation(rng)), (kind, "box"), size,
                                  group="deep"))
        # Random hulls of 4 to 64 points (interior points included) against boxes, tetrahedra, hulls.
        for count in (4, 8, 16, 32, 64):
            hull = jg.Polytope(jnp.asarray(ball_points(rng, count, size)))
            others = ((jg.Box(jnp.asarray(size * rng.uniform(0.3, 1.0, 3))), "box"),
                      (tetrahedron(size), "polytope"),
                      (jg.Polytope(jnp.asarray(ball_points(rng, int(rng.integers(4, 65)), size))),
                       "polytope"))
            for other, kind in others:
                found = _placed_penetrating(hull, other, ("polytope", kind), size, rng)
                found["group"] = "random_hull"
                cases.append(found)
    return cases


# -------------------------------------------------------------------------------------------------
# Curved pairs with closed forms
# -------------------------------------------------------------------------------------------------


@functools.cache
def closed_form_cases(seed=12):
    """Sphere-sphere, sphere-box, sphere-capsule and capsule-capsule penetrations with closed-form
    references; capsule-box with the exact rounded-polytope reference."""
    rng = np.random.default_rng(seed)
    cases = []
    for size in (1e-3, 1.0, 1e3):
        for index in range(8):
            # Sphere-sphere (the last one concentric: cores coincide, depth r_a + r_b).
            ra, rb = size * rng.uniform(0.3, 1.0, 2)
            ca = rng.normal(size=3) * size
            direction = rng.normal(size=3)
            direction /= np.linalg.norm(direction)
            cb = ca + direction * (ra + rb) * (rng.uniform(0.05, 0.95) if index < 7 else 0.0)
            sa, sb, pa, pb = float32_exact((jg.Sphere(jnp.asarray(ra)), jg.Sphere(jnp.asarray(rb)),
                                            pose(ca), pose(cb)))
            ref = sphere_sphere(pa.translation, sa.radius, pb.translation, sb.radius)
            if index == 7:
                ref["normal"] = None  # any unit vector is a deepest direction
            cases.append(case(sa, pa, sb, pb, ("sphere", "sphere"), size, ref, group="closed_form"))
            # Sphere-box: sphere centre near or inside the box (the last: centre at the box centre).
            half = size * rng.uniform(0.3, 1.0, 3)
            rotation = random_rotation(rng)
            radius = size * rng.uniform(0.2, 0.8)
            local = rng.uniform(-1.1, 1.1, 3) * half if index < 7 else np.zeros(3)
            box_pose = pose(ca, rotation)
            centre = np.asarray(box_pose.apply(jnp.asarray(local)))
            sa, sb, pa, pb = float32_exact((jg.Sphere(jnp.asarray(radius)), jg.Box(jnp.asarray(half)),
                                            pose(centre), box_pose))
            ref = sphere_box(pa.translation, sa.radius, sb.half_extents, pb)
            if ref["distance"] < -1e-3 * size:
                cases.append(case(sa, pa, sb, pb, ("sphere", "box"), size, ref, group="closed_form"))
            # Capsule-capsule (index 5: coaxial cores, centres coincident, so D is a segment through
            # the origin; 6: crossing cores; 7: parallel overlapping cores).
            capsule_a = jg.Capsule(jnp.asarray(size * rng.uniform(0.2, 0.6)),
                                   jnp.asarray(size * rng.uniform(0.2, 1.0)))
            capsule_b = jg.Capsule(jnp.asarray(size * rng.uniform(0.2, 0.6)),
                                   jnp.asarray(size * rng.uniform(0.2, 1.0)))
            rotation_a, rotation_b = random_rotation(rng), random_rotation(rng)
            offset = rng.normal(size=3) * size * 0.4
            if index in (5, 6):
                offset = np.zeros(3)
            if index == 5:
                rotation_b = rotation_a
            if index == 7:
                rotation_b = rotation_a
                axis = np.asarray(pose(np.zeros(3), rotation_a).rotation_matrix())[:, 2]
                across = np.cross(axis, rng.normal(size=3))
                offset = 0.3 * size * across / np.linalg.norm(across)
            sa, sb, pa, pb = float32_exact((capsule_a, capsule_b, pose(ca, rotation_a),
                                            pose(ca + offset, rotation_b)))
            ref = capsule_capsule(*capsule_endpoints(sa, pa), sa.radius,
                                  *capsule_endpoints(sb, pb), sb.radius)
            if index in (5, 6):
                ref["normal"] = None  # coaxial or crossing cores: the deepest direction is not unique
            if ref["distance"] < -1e-3 * size:
                cases.append(case(sa, pa, sb, pb, ("capsule", "capsule"), size, ref,
                                  group="closed_form"))
            # Sphere-capsule (the last: the sphere's centre at the capsule's, a point on a segment).
            centre = ca + offset + rng.normal(size=3) * 0.3 * size
            sa, pa = float32_exact((jg.Sphere(jnp.asarray(radius)), pose(centre)))
            if index == 7:
                pa = pose(np.asarray(pb.translation))
            ref = sphere_capsule(pa.translation, sa.radius, *capsule_endpoints(sb, pb), sb.radius)
            if index == 7:
                ref["normal"] = None  # any direction across the axis is a deepest one
            if ref["distance"] < -1e-3 * size:
                cases.append(case(sa, pa, sb, pb, ("sphere", "capsule"), size, ref,
                                  group="closed_form"))
            # Capsule-box (exact rounded-polytope reference).
            found = _placed_penetrating(capsule_a, jg.Box(jnp.asarray(half)), ("capsule", "box"),
                                        size, rng)
            found["group"] = "closed_form"
            cases.append(found)
    return cases


# -------------------------------------------------------------------------------------------------
# Degenerate shapes and invalid input
# -------------------------------------------------------------------------------------------------


def degenerate_cases():
    """Valid but degenerate shapes, with the exact (rounded-)polytope reference and the "statuses"
    allowed: PENETRATING for every pair with depth > 0 (cores coinciding included); a touching pair
    (depth 0) may be reported INTERSECTING, or DEGENERATE by EPA on a flat D."""
    overlap_ok = (jg.Status.PENETRATING,)
    touch_ok = (jg.Status.INTERSECTING, jg.Status.PENETRATING, jg.Status.DEGENERATE)
    box = jg.Box(jnp.asarray([1.0, 0.8, 0.6]))
    point = np.array([0.3, -0.2, 0.1])
    rotation = np.array([0.9, 0.1, -0.3, 0.2])
    box_pose = pose([0.5, 0.2, -0.1], rotation)
    world_point = np.asarray(box_pose.apply(jnp.asarray(point)))
    square = np.array([[1, 1, 0], [-1, 1, 0], [-1, -1, 0], [1, -1, 0], [0.5, 0.2, 0]]) * 0.7
    items = [
        ("zero box inside box", jg.Box(jnp.zeros(3)), pose(world_point), box, box_pose, overlap_ok),
        ("box around zero box", box, box_pose, jg.Box(jnp.zeros(3)), pose(world_point), overlap_ok),
        ("zero box inside sphere", jg.Box(jnp.zeros(3)), pose([0.1, 0.2, 0.3]),
         jg.Sphere(jnp.asarray(0.9)), pose([0.2, 0.1, 0.3]), overlap_ok),
        ("zero box at sphere centre", jg.Box(jnp.zeros(3)), pose([0.1, 0.2, 0.3]),
         jg.Sphere(jnp.asarray(0.9)), pose([0.1, 0.2, 0.3]), overlap_ok),
        ("zero boxes coincide", jg.Box(jnp.zeros(3)), pose([0.1, 0.2, 0.3]),
         jg.Box(jnp.zeros(3)), pose([0.1, 0.2, 0.3], rotation), touch_ok),
        ("zero-radius sphere inside box", jg.Sphere(jnp.asarray(0.0)), pose(world_point), box,
         box_pose, overlap_ok),
        ("coplanar polytope through box", jg.Polytope(jnp.asarray(square)), pose([0, 0, 0.2]),
         jg.Box(jnp.asarray([0.5, 0.5, 0.5])), pose(np.zeros(3)), overlap_ok),
        ("coplanar polytopes in one plane", jg.Polytope(jnp.asarray(square)),
         pose([0, 0, 0.2]), jg.Polytope(jnp.asarray(square[::-1] * 0.6)),
         pose([0.3, 0.1, 0.2], rotation_about([0, 0, 1], 0.4)), touch_ok),
        ("flat polytopes crossing", jg.Polytope(jnp.asarray(square)), pose(np.zeros(3)),
         jg.Polytope(jnp.asarray(square)), pose([0.1, 0, 0], rotation_about([1, 0, 0], np.pi / 2)),
         overlap_ok),
        ("coincident-vertex polytope inside box", jg.Polytope(jnp.asarray(np.tile(point, (6, 1)))),
         box_pose, box, box_pose, overlap_ok),
        ("coincident-vertex polytopes coincide", jg.Polytope(jnp.asarray(np.tile(point, (5, 1)))),
         pose(np.zeros(3)), jg.Polytope(jnp.asarray(np.tile(point, (3, 1)))), pose(np.zeros(3)),
         touch_ok),
        ("zero-length capsule and sphere", jg.Capsule(jnp.asarray(0.5), jnp.asarray(0.0)),
         pose([0, 0, 0], rotation), jg.Sphere(jnp.asarray(0.4)), pose([0.3, 0.4, 0.0]), overlap_ok),
        ("zero-length capsule inside box", jg.Capsule(jnp.asarray(0.2), jnp.asarray(0.0)),
         pose(world_point, rotation), box, box_pose, overlap_ok),
        ("zero-length capsules coincide", jg.Capsule(jnp.asarray(0.2), jnp.asarray(0.0)),
         pose([1.0, 2.0, 3.0]), jg.Capsule(jnp.asarray(0.3), jnp.asarray(0.0)),
         pose([1.0, 2.0, 3.0], rotation), overlap_ok),
    ]
    cases = []
    for name, shape_a, pose_a, shape_b, pose_b, statuses in items:
        kinds = tuple(type(s).__name__.lower() for s in (shape_a, shape_b))
        cases.append(case(shape_a, pose_a, shape_b, pose_b, kinds, 1.0, name=name,
                          statuses=tuple(int(s) for s in statuses)))
    return cases


def invalid_cases():
    """Invalid input: every one must give INVALID_INPUT and the documented placeholders."""
    nan, inf = float("nan"), float("inf")
    sphere = jg.Sphere(jnp.asarray(0.5))
    box = jg.Box(jnp.asarray([0.5, 0.4, 0.3]))
    good = pose([0.1, 0.0, 0.0], [0.9, 0.1, -0.3, 0.2])
    items = [
        ("NaN in pose_a translation", box, pose([nan, 0, 0]), box, good),
        ("NaN in pose_b rotation", box, good, box, pose(np.zeros(3), [nan, 0, 0, 1])),
        ("inf in pose_b translation", sphere, good, box, pose([0, inf, 0])),
        ("zero quaternion in pose_a", box, pose(np.zeros(3), np.zeros(4)), box, good),
        ("zero quaternion in pose_b", sphere, good, box, pose(np.zeros(3), np.zeros(4))),
        ("negative radius", jg.Sphere(jnp.asarray(-0.5)), good, box, pose(np.zeros(3))),
        ("negative half extent", jg.Box(jnp.asarray([0.5, -0.4, 0.3])), good, box,
         pose(np.zeros(3))),
        ("NaN radius", jg.Capsule(jnp.asarray(nan), jnp.asarray(0.3)), good, box, pose(np.zeros(3))),
        ("NaN polytope vertex", jg.Polytope(jnp.asarray([[0, 0, 0], [1, 0, 0], [0, nan, 0],
                                                         [0, 0, 1.0]])), good, box, pose(np.zeros(3))),
        ("empty polytope mask", jg.Polytope(jnp.asarray(np.eye(3)), jnp.zeros(3, bool)), good, box,
         pose(np.zeros(3))),
    ]
    return [dict(shape_a=a, pose_a=pa, shape_b=b, pose_b=pb, kinds=("invalid", "invalid"), size=1.0,
                 ref=None, name=name) for name, a, pa, b, pb in items]


# -------------------------------------------------------------------------------------------------
# Sweeps through contact
# -------------------------------------------------------------------------------------------------

_GRID = 0.3 * np.linspace(-1, 1, 41) ** 3  # dense near contact: ±3.75e-5 next to 0
SWEEP_OFFSETS = np.sort(np.concatenate([_GRID, [-2e-6, 2e-6]]))  # in units of size; 43 positions
# Penetrating positions where curved pairs get a (slow) smooth reference: s ≈ -0.3, -0.13, -0.04, -0.005.
SMOOTH_REFERENCE_INDICES = (0, 5, 10, 15)
SWEEP_KIND_PAIRS = [(a, b) for i, a in enumerate(PRIMITIVE_KINDS) for b in PRIMITIVE_KINDS[i:]]
POLYHEDRAL_KINDS = ("sphere", "capsule", "box", "polytope")


@functools.cache
def sweeps(seed=13):
    """One sweep per unordered pair of the 7 primitive kinds (28), float64.

    Each is a dict: kinds, size, shape_a, pose_a, shape_b, rotation_b, direction u (3,), contact
    (3,) (B's translation at contact), offsets (P,) (s·size), ref (P,) (reference signed distance,
    NaN where not computed), lower/upper (P,) (bounds on the signed distance), ref_normal_deep (3,)
    and monotone (bool: the signed distance is non-decreasing in s).
    """
    rng = np.random.default_rng(seed)
    results = []
    for index, kinds in enumerate(SWEEP_KIND_PAIRS):
        size = (1.0, 1e-3, 1e3)[index % 3]
        shape_a = float32_exact(random_shape(kinds[0], rng, size))
        shape_b = float32_exact(random_shape(kinds[1], rng, size))
        pose_a = float32_exact(pose(rng.normal(size=3) * size, random_rotation(rng)))
        rotation_b = np.asarray(float32_exact(pose(np.zeros(3), random_rotation(rng))).rotation)
        u = rng.normal(size=3)
        u /= np.linalg.norm(u)
        point_a = support_point(shape_a, pose_a, u)
        contact = point_a - support_point(shape_b, pose(np.zeros(3), rotation_b), -u)
        offsets = SWEEP_OFFSETS * size
        polyhedral = all(k in POLYHEDRAL_KINDS for k in kinds)
        ref = np.full(len(offsets), np.nan)
        normals = np.full((len(offsets), 3), np.nan)
        ref[offsets >= 0] = offsets[offsets >= 0]  # exact by construction
        penetrating = np.nonzero(offsets < 0)[0] if polyhedral else SMOOTH_REFERENCE_INDICES
        for k in penetrating:
            value = reference(shape_a, pose_a, shape_b, pose(contact + offsets[k] * u, rotation_b),
                              kinds)
            ref[k], normals[k] = value["distance"], value["normal"]
        # Bounds: s <= sd (the plane with normal u); sd <= chord through the known values (concavity).
        known = np.nonzero(np.isfinite(ref))[0]
        upper = np.interp(offsets, offsets[known], ref[known])
        lower = np.minimum(offsets, upper)
        deep = normals[0]
        if polyhedral:
            monotone = bool(np.all(np.diff(ref) >= -1e-12 * size))
        else:
            monotone = bool(deep @ u > 0.05)
        results.append(dict(kinds=kinds, size=size, shape_a=shape_a, pose_a=pose_a, shape_b=shape_b,
                            rotation_b=rotation_b, direction=u, contact=contact, offsets=offsets,
                            ref=ref, lower=lower, upper=upper, ref_normal_deep=deep,
                            monotone=monotone))
    return results


def sweep_cases(sweep, dtype):
    """The sweep's positions as case dicts for a run in `dtype`, with references adjusted for the
    rounding of B's translation to float32 (first order: the normal is u near contact)."""
    cases = []
    for k, offset in enumerate(sweep["offsets"]):
        translation = sweep["contact"] + offset * sweep["direction"]
        rounded = translation.astype(dtype).astype(np.float64)
        shift = float(sweep["direction"] @ (rounded - translation))
        cases.append(dict(shape_a=sweep["shape_a"], pose_a=sweep["pose_a"], shape_b=sweep["shape_b"],
                          pose_b=pose(rounded, sweep["rotation_b"]), kinds=sweep["kinds"],
                          size=sweep["size"], ref={"distance": sweep["ref"][k] + shift},
                          lower=sweep["lower"][k] + shift - abs(shift),
                          upper=sweep["upper"][k] + shift + abs(shift)))
    return cases


def support_gap(case, normal):
    """h_A(n) + h_B(-n) (posed support functions): the overlap of the shapes' extents along n, i.e. the
    translation of B along n beyond which the plane with normal n separates them."""
    return float(support_function(case["shape_a"], case["pose_a"], normal)
                 + support_function(case["shape_b"], case["pose_b"], -np.asarray(normal)))
