"""The normal refinement on curved cores (`jaxgjk._refine`), against an independent reference.

A sphere against an ellipsoid reduces to the closest point of an ellipsoid to the sphere's centre p:
x_i = a_i² p_i / (a_i² + t) with Σ (a_i p_i / (a_i² + t))² = 1, one root t in (−min a_i², ∞) whether p
is outside (t > 0) or inside (t < 0) (Eberly, "Distance from a point to an ellipse, an ellipsoid, or a
hyperellipsoid", 2011). Bisection in float64 gives the normal to rounding, where GJK and EPA alone give it
only to √tolerance (1e-6 and 4e-5 with the float64 defaults).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgjk as jg
from jaxgjk.reference import support_function

from .query_cases import run_three_queries
from .shape_samples import random_rotation

N_CASES = 16


def _closest_on_ellipsoid(radii, point):
    """Closest point of the ellipsoid surface to `point` (local frame), by bisection on t."""
    def excess(t):
        return np.sum((radii * point / (radii ** 2 + t)) ** 2) - 1

    low, high = -np.min(radii) ** 2, 1.0
    while excess(high) > 0:
        high *= 2
    for _ in range(200):
        middle = (low + high) / 2
        if middle in (low, high):
            break
        low, high = (middle, high) if excess(middle) > 0 else (low, middle)
    t = (low + high) / 2
    return radii ** 2 * point / (radii ** 2 + t)


@functools.cache
def cases(inside):
    """Ellipsoid A at a random pose, sphere B with its centre outside (or inside) A; float64 arrays and
    the reference signed distance and normal (A to B)."""
    rng = np.random.default_rng(7 if inside else 8)
    rows = []
    while len(rows) < N_CASES:
        radii = rng.uniform(0.3, 1.0, 3)
        local = rng.normal(size=3)
        reach = rng.uniform(0.2, 0.8) * np.min(radii) if inside else rng.uniform(1.2, 2.0) * np.max(radii)
        local *= reach / np.linalg.norm(local)
        pose = jg.Pose(jnp.asarray(rng.normal(size=3)), jnp.asarray(random_rotation(rng)))
        matrix = np.asarray(pose.rotation_matrix())
        closest = _closest_on_ellipsoid(radii, local)
        gap = np.linalg.norm(local - closest)
        radius = rng.uniform(0.05, 0.2)
        outward = (local - closest) / gap if not inside else (closest - local) / gap
        signed = (gap if not inside else -gap) - radius
        centre = matrix @ local + np.asarray(pose.translation)
        rows.append(dict(radii=radii, pose=pose, radius=radius, centre=centre, signed=signed,
                         normal=matrix @ outward))
    return rows


@functools.cache
def _kernel(refine_normal):
    # The general path: refinement serves it (an ellipsoid and a sphere have a specialised solver).
    config = jg.Config(refine_normal=refine_normal, specialised=False)

    def query(radii, translation, rotation, radius, centre):
        return jg.signed_distance(jg.Ellipsoid(radii), jg.Pose(translation, rotation), jg.Sphere(radius),
                                  jg.Pose(centre, jnp.array([1.0, 0, 0, 0], centre.dtype)), config=config)

    return jax.jit(jax.vmap(query))


def _run(rows, dtype, refine_normal=True):
    def stack(key):
        return jnp.asarray(np.stack([np.asarray(row[key]) for row in rows]), dtype)

    translation = jnp.asarray(np.stack([np.asarray(r["pose"].translation) for r in rows]), dtype)
    rotation = jnp.asarray(np.stack([np.asarray(r["pose"].rotation) for r in rows]), dtype)
    return _kernel(refine_normal)(stack("radii"), translation, rotation, stack("radius"), stack("centre"))


@pytest.mark.parametrize("inside", [False, True], ids=["separated", "penetrating"])
def test_normal_to_rounding_float64(inside):
    """float64, default config: the normal within 1e-10 of the reference and the signed distance within
    1e-12 (the loops alone leave the normal 1e-6 off separated and 4e-5 penetrating)."""
    rows = cases(inside)
    result = _run(rows, jnp.float64)
    normal_error = np.linalg.norm(np.asarray(result.normal) - np.stack([r["normal"] for r in rows]), axis=1)
    distance_error = np.abs(np.asarray(result.distance) - np.array([r["signed"] for r in rows]))
    assert np.max(normal_error) <= 1e-10, normal_error
    assert np.max(distance_error) <= 1e-12, distance_error


@pytest.mark.parametrize("inside", [False, True], ids=["separated", "penetrating"])
def test_without_refinement_the_loops_normal(inside):
    """`Config(refine_normal=False)` keeps the loops' normal: the same distances to the loops'
    tolerance, normals only to about its square root."""
    rows = cases(inside)
    result = _run(rows, jnp.float64, refine_normal=False)
    normal_error = np.linalg.norm(np.asarray(result.normal) - np.stack([r["normal"] for r in rows]), axis=1)
    distance_error = np.abs(np.asarray(result.distance) - np.array([r["signed"] for r in rows]))
    assert np.max(distance_error) <= 1e-8, distance_error
    assert 1e-9 < np.max(normal_error) <= 1e-4, normal_error


def test_normal_float32():
    """float32: the refined normal within 2e-6 of the reference (the loops leave ~1e-3)."""
    rows = cases(False) + cases(True)
    result = _run(rows, jnp.float32)
    normal_error = np.linalg.norm(np.asarray(result.normal, np.float64)
                                  - np.stack([r["normal"] for r in rows]), axis=1)
    assert np.max(normal_error) <= 2e-6, normal_error


FLAT_CURVED_PAIRS = [(flat, curved) for flat in ("box", "polytope")
                     for curved in ("ellipsoid", "cone", "cylinder")]
N_FLAT_CURVED = 48  # per kind pair, half separated, half overlapping


def test_witnesses_of_flat_against_curved_contacts():
    """A polytope's edge or face against a curved core, float64: each witness point on its shape's
    support plane along the normal (the float64 reference's support function) and
    ``dot(normal, point_b − point_a) = distance``, to 1e-9. Where the refinement holds the two features
    (all but a cone's slant against an edge, which EPA's best support points answer), the points are
    the exact pair: point_b − point_a = distance · normal. (A face is held by three of its vertices and
    the contact may lie outside their triangle, so the weights must be affine; an edge's held vertices
    tie along the normal, so they must not be re-chosen.) The tests' shared program answers
    (`run_three_queries`)."""
    from .shape_samples import random_shape

    rng = np.random.default_rng(11)
    cases, curved_kinds = [], []
    for flat, curved in FLAT_CURVED_PAIRS:
        for index in range(N_FLAT_CURVED):
            shape_a, shape_b = random_shape(flat, rng), random_shape(curved, rng)
            curved_kinds.append(curved)
            direction = rng.normal(size=3)
            reach = rng.uniform(1.5, 2.5) if index % 2 else rng.uniform(0.0, 0.8)
            origin = rng.normal(size=3)
            pose_a = jg.Pose(origin, random_rotation(rng))
            pose_b = jg.Pose(origin + reach * direction / np.linalg.norm(direction), random_rotation(rng))
            cases.append(dict(shape_a=shape_a, pose_a=pose_a, shape_b=shape_b, pose_b=pose_b))

    result = run_three_queries(cases, np.float64)[0]
    n = result.normal
    checks = dict(gap=result.point_b - result.point_a - result.distance[:, None] * n,
                  plane_a=np.array([np.dot(n[k], result.point_a[k])
                                    - support_function(case["shape_a"], case["pose_a"], n[k])
                                    for k, case in enumerate(cases)]),
                  plane_b=np.array([-np.dot(n[k], result.point_b[k])
                                    - support_function(case["shape_b"], case["pose_b"], -n[k])
                                    for k, case in enumerate(cases)]))
    converged = (result.status == jg.Status.SEPARATED) | (result.status == jg.Status.PENETRATING)
    assert np.mean(converged) >= 0.95, np.bincount(result.status)
    overlapping = result.distance < 0
    assert np.sum(overlapping) >= len(overlapping) // 3
    gap = np.linalg.norm(checks["gap"], axis=1)
    along_normal = np.abs(np.sum(checks["gap"] * result.normal, axis=1))
    exact_pair = ~overlapping | (np.array(curved_kinds) != "cone")
    for name, error, where in (("plane_a", np.abs(checks["plane_a"]), converged),
                               ("plane_b", np.abs(checks["plane_b"]), converged),
                               ("along normal", along_normal, converged),
                               ("point_b - point_a - distance normal", gap, converged & exact_pair)):
        worst = np.argmax(np.where(where, error, -1))
        assert error[worst] <= 1e-9, (name, error[worst], worst, curved_kinds[worst])


def test_face_held_by_three_corners_gives_the_contact_outside_their_triangle():
    """A box's top face held by three of its corners whose triangle misses the contact (the fourth
    corner's half), an ellipsoid core above it: the refined simplex's witnesses are the exact pair
    (affine weights over the face, not the triangle's nearest point)."""
    from jaxgjk._minkowski import RelativePair
    from jaxgjk._refine import refine

    box, ball = jg.Box(jnp.ones(3)), jg.Ellipsoid(jnp.full(3, 0.3))
    pair = RelativePair(box, ball, jnp.eye(3), jnp.array([0.6, 0.6, 1.5]))
    corners = jnp.array([[1.0, -1, 1], [-1, 1, 1], [-1, -1, 1], [-1, -1, 1]])
    down = jnp.broadcast_to(jnp.array([0.0, 0, -1]), (4, 3))
    simplex = jg.Simplex(directions_a=corners, directions_b=down, points_a=corners,
                         points_b=jax.vmap(ball.core_support)(down), weights=jnp.array([0.5, 0.5, 0, 0]),
                         mask=jnp.array([True, True, True, False]))
    loops_normal = jnp.array([1e-9, 0, 1]) / jnp.linalg.norm(jnp.array([1e-9, 0, 1]))
    refined = jax.jit(lambda: refine(pair, loops_normal, simplex, 1e-6, jnp.asarray(True)))()
    assert refined.accepted
    np.testing.assert_allclose(refined.normal, [0, 0, 1], atol=1e-15)
    np.testing.assert_allclose(refined.signed, 0.2, atol=1e-15)
    weights = refined.simplex.weights
    np.testing.assert_allclose(weights @ refined.simplex.points_a, [0.6, 0.6, 1], atol=1e-15)
    np.testing.assert_allclose(weights @ refined.simplex.points_b + pair.translation, [0.6, 0.6, 1.2],
                               atol=1e-15)


# -------------------------------------------------------------------------------------------------
# Gradients against the independent exact normal (`exact_normal`): a cone's slant against every kind,
# `Affine` images of curved shapes, and composites of curved pieces, at the default config. The
# gradient of the signed distance w.r.t. B's translation is the normal; forward and reverse mode and
# central differences of the distance (step 1e-5: truncation and noise ~1e-10) must all give it.
# -------------------------------------------------------------------------------------------------

FD = 1e-5


def _gradient_rows(a, pose_a, b, pose_b, forward):
    """Distance, reverse-mode gradient and (with `forward`, else the gradient again) forward-mode
    Jacobian w.r.t. B's translation (3,) each. Forward mode is checked on the composites' kernel only:
    `test_gradients.test_jacfwd_matches_jacrev` checks it on every primitive pair, and each mode adds
    to the compile time, which dominates these tests."""
    def signed(translation):
        return jg.signed_distance(a, pose_a, b, jg.Pose(translation, pose_b.rotation)).distance

    value, gradient = jax.value_and_grad(signed)(pose_b.translation)
    return value, gradient, jax.jacfwd(signed)(pose_b.translation) if forward else gradient


GRADIENT_ROWS = jax.jit(jax.vmap(_gradient_rows, in_axes=(0, 0, 0, 0, None)), static_argnums=4)


def _slant_case(rng, cone, other, penetration, affine=None):
    """Poses (A's, B's) placing `other` (B) against a point of `cone`'s (A's) slant, along the slant's
    normal, B's support point there at signed offset `penetration` · (−1) from it (A at the origin);
    with `affine` (linear (3, 3), offset (3,)), against the slant of the cone's `Affine` image."""
    linear, offset = affine or (np.eye(3), np.zeros(3))
    radius, half = float(cone.radius), float(cone.half_height)
    azimuth = rng.uniform(0, 2 * np.pi)
    radial = np.array([np.cos(azimuth), np.sin(azimuth), 0.0])
    normal = np.linalg.solve(linear.T, [2 * half * radial[0], 2 * half * radial[1], radius])
    normal /= np.linalg.norm(normal)
    along = rng.uniform(0.2, 0.8)
    point = linear @ ((1 - along) * np.array([0, 0, half]) + along * (radius * radial - [0, 0, half]))
    point = point + offset
    rotation = random_rotation(rng)
    matrix = np.asarray(jg.Pose(jnp.zeros(3), jnp.asarray(rotation)).rotation_matrix())
    contact = point - penetration * normal
    support_b = np.asarray(other.support(jnp.asarray(-matrix.T @ normal)))
    return (np.zeros(3), np.array([1.0, 0, 0, 0])), (contact - matrix @ support_b, rotation)


def _check_against_exact(cases, labels, a, b, pose_a, pose_b, forward=False):
    """`cases`: their exact normals (N, 3), `labels` their names; a, b, poses: the stacked inputs."""
    offsets = np.concatenate([np.zeros((1, 3)), FD * np.eye(3), -FD * np.eye(3)])
    count = len(cases)
    repeat = functools.partial(jax.tree_util.tree_map, lambda leaf: jnp.repeat(leaf, 7, axis=0))
    shifted = jg.Pose(jnp.repeat(pose_b.translation, 7, axis=0) + jnp.tile(jnp.asarray(offsets), (count, 1)),
                      jnp.repeat(pose_b.rotation, 7, axis=0))
    outputs = GRADIENT_ROWS(repeat(a), repeat(pose_a), repeat(b), shifted, forward)
    value, gradient, jacobian = (np.asarray(x).reshape((count, 7) + np.shape(x)[1:]) for x in outputs)
    exact = np.stack(cases)
    central = (value[:, 1:4] - value[:, 4:7]) / (2 * FD)
    errors = dict(exact=np.linalg.norm(gradient[:, 0] - exact, axis=1),
                  forward=np.max(np.abs(jacobian[:, 0] - gradient[:, 0]), axis=1),
                  central=np.linalg.norm(central - gradient[:, 0], axis=1))
    for name, limit in (("exact", 1e-6), ("forward", 1e-10), ("central", 1e-6)):
        bad = np.flatnonzero(errors[name] > limit)
        assert not len(bad), (name, [(labels[i], f"{errors[name][i]:.1e}") for i in bad])


def _stack(rows):
    return jax.tree_util.tree_map(lambda *leaves: jnp.asarray(np.stack(leaves)), *rows)


def test_cone_slant_and_affine_gradients_are_the_exact_normal():
    """float64: a cone's slant against each of the seven kinds (cone first, then second), separated and
    penetrating, and `Affine` images (never similarities) of curved shapes (an ellipsoid, a ball, a
    cylinder's side, a cone's rim and slant, a capsule's side, straight under a margin that curves)
    against each kind: the distance gradient is the exact normal to 1e-6 and central differences agree
    to 1e-6 (the loops alone: ~1e-5 off on the slants and the capsule's side)."""
    from .exact_normal import exact_normal
    from .shape_samples import PRIMITIVE_KINDS, random_shape

    rng = np.random.default_rng(21)
    identity = (np.eye(3), np.zeros(3))
    rows, normals, labels = [], [], []

    def add(a, linear_offset, pose_a, b, pose_b, swap=False):
        if swap:  # the cone second: the same geometry seen from the other side
            a, pose_a, b, pose_b = b, pose_b, a, pose_a
            linear_offset = identity
        poses = [jg.Pose(*(jnp.asarray(x, jnp.float64) for x in p)) for p in (pose_a, pose_b)]
        posed_a = jg.Affine(a, jnp.asarray(linear_offset[0]), jnp.asarray(linear_offset[1]))
        reference = exact_normal(posed_a, poses[0], b, poses[1])
        if not (reference["resolved"] and reference["margin"] > 1e-4):
            return False  # no certified unique normal: redraw
        rows.append((jg.pack([a], dtype=np.float64, num_vertices=12, kinds=jg.Packed.KINDS), linear_offset,
                     poses[0], jg.pack([b], dtype=np.float64, num_vertices=12, kinds=jg.Packed.KINDS),
                     poses[1]))
        normals.append(reference["normal"])
        labels.append(f"{type(a).__name__}{'' if linear_offset is identity else ' (Affine)'}–"
                      f"{type(b).__name__} {'penetrating' if reference['signed'] < 0 else 'separated'}")
        return True

    for index, kind in enumerate(PRIMITIVE_KINDS):
        for penetration in (-0.2, 0.05):
            cone = jg.Cone(jnp.asarray(rng.uniform(0.4, 0.8)), jnp.asarray(rng.uniform(0.4, 0.8)))
            other = random_shape(kind, rng, 0.5)
            pose_a, pose_b = _slant_case(rng, cone, other, penetration)
            assert add(cone, identity, pose_a, other, pose_b, swap=bool(index % 2) and kind != "cone")
    for index, kind in enumerate(PRIMITIVE_KINDS):  # the slant of an `Affine` cone
        cone = jg.Cone(jnp.asarray(rng.uniform(0.4, 0.8)), jnp.asarray(rng.uniform(0.4, 0.8)))
        rotation = np.asarray(jg.Pose(jnp.zeros(3), jnp.asarray(random_rotation(rng))).rotation_matrix())
        linear = (rotation * rng.uniform(0.7, 1.3, 3), rng.normal(size=3) * 0.1)
        other = random_shape(kind, rng, 0.5)
        pose_a, pose_b = _slant_case(rng, cone, other, (-0.2, 0.05)[index % 2], linear)
        assert add(cone, linear, pose_a, other, pose_b)
    curved = (jg.Ellipsoid(jnp.asarray([0.5, 0.3, 0.4])), jg.Sphere(jnp.asarray(0.4)),
              jg.Cylinder(jnp.asarray(0.4), jnp.asarray(0.3)), jg.Cone(jnp.asarray(0.4), jnp.asarray(0.3)),
              jg.Capsule(jnp.asarray(0.2), jnp.asarray(0.4)))
    for inner in curved:
        for kind in PRIMITIVE_KINDS:
            rotation = np.asarray(jg.Pose(jnp.zeros(3), jnp.asarray(random_rotation(rng))).rotation_matrix())
            linear = (rotation * rng.uniform(0.7, 1.3, 3), rng.normal(size=3) * 0.1)
            direction, reach = rng.normal(size=3), rng.uniform(0.3, 1.5)
            if isinstance(inner, jg.Capsule):  # B across the capsule's middle, overlapping its side
                direction, reach = np.cross(linear[0][:, 2], direction), 0.3
            pose_b = (direction / np.linalg.norm(direction) * reach, random_rotation(rng))
            origin = (np.zeros(3), np.array([1.0, 0, 0, 0]))
            while not add(inner, linear, origin, random_shape(kind, rng, 0.5), pose_b):
                pose_b = (pose_b[0] * 1.1 + 0.1 * rng.normal(size=3), random_rotation(rng))
    packed_a, linear, pose_a, packed_b, pose_b = (
        _stack([row[k] for row in rows]) for k in range(5))
    squeeze = functools.partial(jax.tree_util.tree_map, lambda leaf: leaf[:, 0])
    a = jg.Affine(squeeze(packed_a), linear[0], linear[1])
    _check_against_exact(normals, labels, a, squeeze(packed_b), pose_a, pose_b)


def test_composite_gradients_are_the_exact_normal():
    """float64: the convex hull of a MinkowskiSum (ellipsoid ⊕ ball) and a longer ellipsoid, against an
    ellipsoid, separated and penetrating, where one member's smooth point holds the contact (the
    patches between members are redrawn): gradient = exact normal to 1e-6, jacfwd = jacrev, central
    differences agree."""
    from .exact_normal import exact_normal

    rng = np.random.default_rng(22)
    rows, normals, labels = [], [], []
    while len(rows) < 8:
        hull = jg.ConvexHull((jg.MinkowskiSum(jg.Ellipsoid(jnp.asarray(rng.uniform(0.3, 0.6, 3))),
                                              jg.Sphere(jnp.asarray(rng.uniform(0.05, 0.2)))),
                              jg.Ellipsoid(jnp.asarray(rng.uniform(0.2, 0.4, 3) * [2.5, 1, 1]))))
        other = jg.Ellipsoid(jnp.asarray(rng.uniform(0.2, 0.5, 3)))
        direction = rng.normal(size=3)
        reach = rng.uniform(0.9, 1.5) if len(rows) % 2 else rng.uniform(0.2, 0.5)
        poses = (jg.Pose(jnp.zeros(3), jnp.asarray([1.0, 0, 0, 0])),
                 jg.Pose(jnp.asarray(reach * direction / np.linalg.norm(direction)),
                         jnp.asarray(random_rotation(rng))))
        reference = exact_normal(hull, poses[0], other, poses[1])
        # Pieces 0 (the sum: ellipsoid ⊕ ball) and 1 (the long ellipsoid): one of them alone.
        if reference["resolved"] and reference["margin"] > 1e-4 and len(reference["active"][0]) == 1:
            rows.append((hull, other, *poses))
            normals.append(reference["normal"])
            labels.append(f"member {reference['active'][0][0]} {reference['signed']:.2f}")
    _check_against_exact(normals, labels, *_stack(rows), forward=True)


def test_rounded_packed_flat_core_against_a_curved_one_gradients_are_the_exact_normal():
    """float64: a `Rounded` packed shape holding a flat core feature (a box's or polytope's face or
    edge, a capsule's segment) against a `Rounded` ellipsoid, penetrating: the gradient is the exact
    normal to 1e-6. `Rounded` once took a packed core's `polyhedral_core` from the trace-time
    `may_curve()` (True for a packed shape), so the flat side counted as curved, the refinement never
    ran and the gradient kept EPA's √tolerance error (up to 6e-5)."""
    from .exact_normal import exact_normal
    from .shape_samples import random_shape

    rng = np.random.default_rng(23)
    radius = jnp.asarray(0.1)
    shapes_a, shapes_b, poses_a, poses_b, normals, labels = [], [], [], [], [], []
    for kind in ("box", "polytope", "capsule") * 2:
        while True:
            a, b = random_shape(kind, rng, 0.5), random_shape("ellipsoid", rng, 0.5)
            direction = rng.normal(size=3)
            poses = (jg.Pose(jnp.zeros(3), jnp.asarray(random_rotation(rng))),
                     jg.Pose(jnp.asarray(rng.uniform(0.2, 0.6) * direction / np.linalg.norm(direction)),
                             jnp.asarray(random_rotation(rng))))
            reference = exact_normal(jg.Rounded(a, radius), poses[0], jg.Rounded(b, radius), poses[1])
            if reference["resolved"] and reference["margin"] > 1e-4 and reference["signed"] < 0:
                break
        shapes_a.append(a)
        shapes_b.append(b)
        poses_a.append(poses[0])
        poses_b.append(poses[1])
        normals.append(reference["normal"])
        labels.append(f"{kind}–ellipsoid {reference['signed']:.2f}")
    radii = jnp.full(len(normals), radius)
    _check_against_exact(normals, labels, jg.Rounded(jg.pack(shapes_a, dtype=np.float64), radii),
                         jg.Rounded(_stack(shapes_b), radii), _stack(poses_a), _stack(poses_b))


def test_refined_kernel_makes_no_library_calls():
    """The refinement runs per lane inside vmapped loops: a `jnp.linalg` call there lowers to a LAPACK
    custom call per lane, which deadlocked a 65 536-pair `distance` kernel on XLA:CPU. The lowered
    vmapped gradient of a pair of `Affine` images with straight sides (a cone, a capsule: the map's
    inverse is used) has no custom call at all."""
    linear = jnp.diag(jnp.array([1.0, 2.0, 1.0]))
    a = jg.Affine(jg.Cone(jnp.asarray(0.4), jnp.asarray(0.3)), linear, jnp.zeros(3))
    b = jg.Affine(jg.Capsule(jnp.asarray(0.2), jnp.asarray(0.4)), linear, jnp.zeros(3))
    pose_a = jg.Pose(jnp.zeros(3), jnp.array([1.0, 0, 0, 0]))

    def gradient(pose_b):
        return jax.value_and_grad(lambda translation: jg.signed_distance(
            a, pose_a, b, jg.Pose(translation, pose_b.rotation)).distance)(pose_b.translation)

    poses_b = jg.Pose(jnp.zeros((4, 3)), jnp.tile(jnp.array([1.0, 0, 0, 0]), (4, 1)))
    assert "custom_call" not in jax.jit(jax.vmap(gradient)).lower(poses_b).as_text()
