"""Specialised colliders (`_colliders`, `_curved_colliders`): points, segments and boxes (spheres,
capsules, boxes and their Rounded forms), points against cylinders and ellipsoids, and half-spaces,
against independent float64 closed forms (`reference`), the general GJK/EPA path and finite
differences.

The cases of each kind pair: random poses from deep overlap to far apart, the same configurations
moved along the reference normal to touch exactly or to leave gaps of 1e-3 down to 1e-12 of the size,
coincident poses, degenerate sizes (a point-like sphere, a zero-length capsule, a flat box, a point
cylinder, a disk ellipsoid), parallel, collinear and crossing capsules, a point on each feature of a
cylinder and at its centre, a point at an ellipsoid's centre, on its principal planes and axes, near
the least radius's plane, and needle-, disk- and sphere-like ellipsoids, and the whole set scaled by
1e-4 and 1e4. Every kind pair compiles one specialised kernel per dtype (all cases in one vmapped
batch); the general path runs the cases of every kind pair in one batch per dtype: their cores in the
tests' shared program (`query_cases.run_three_queries`, a `Packed` batch of every kind), and the
gradients in one kernel of `Rounded` `Packed` shapes (`Config(specialised=False)`).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgjk as jg
from jaxgjk._packed import KIND_FIELDS
from jaxgjk.reference import (
    capsule_capsule,
    capsule_endpoints,
    pose_arrays,
    quaternion_to_matrix,
    sphere_box,
    sphere_capsule,
    sphere_cylinder,
    sphere_ellipsoid,
    sphere_sphere,
    support_function,
    support_point,
)

from .query_cases import run_three_queries, three_queries
from .shape_samples import random_polytope_vertices, random_rotation

GENERAL = jg.Config(specialised=False)
TOLERANCE = {np.float32: 1e-4, np.float64: 1e-9}  # × the size of the configuration
GAPS = (0.0, 1e-3, 1e-6, 1e-9, 1e-12)
SCALES = (1e-4, 1e4)


def _make(kind, size):
    """A shape of `kind` with float64 fields of the given (3,) size parameters."""
    r, h, e = size
    if kind == "sphere":
        return jg.Sphere(np.float64(r))
    if kind == "capsule":
        return jg.Capsule(np.float64(r), np.float64(h))
    if kind == "box":
        return jg.Box(np.asarray(e, np.float64))
    if kind == "rounded_box":
        return jg.Rounded(jg.Box(np.asarray(e, np.float64)), np.float64(r))
    if kind == "rounded_point":
        return jg.Rounded(jg.Sphere(np.float64(r)), np.float64(h / 4))
    if kind == "cylinder":
        return jg.Cylinder(np.float64(e[0]), np.float64(e[1]))
    if kind == "rounded_cylinder":
        return jg.Rounded(jg.Cylinder(np.float64(e[0]), np.float64(e[1])), np.float64(r))
    if kind == "ellipsoid":
        return jg.Ellipsoid(np.asarray(e, np.float64))
    if kind == "rounded_ellipsoid":
        return jg.Rounded(jg.Ellipsoid(np.asarray(e, np.float64)), np.float64(r))
    raise ValueError(kind)


def _sizes(kind, rng):
    """Size parameters (radius, half length, half extents) of a random shape of `kind`."""
    return (rng.uniform(0.1, 0.6), rng.uniform(0.2, 1.0), rng.uniform(0.2, 1.0, 3))


CURVED = ("cylinder", "rounded_cylinder", "ellipsoid", "rounded_ellipsoid")


def _reference(kind_a, shape_a, pose_a, kind_b, shape_b, pose_b):
    """Float64 signed distance and normal from the closed forms (either order of the kinds)."""
    if kind_a in ("box", "capsule") + CURVED and kind_b in ("sphere", "rounded_point"):
        flipped = _reference(kind_b, shape_b, pose_b, kind_a, shape_a, pose_a)
        return flipped[0], -flipped[1]
    (_, ta), (_, tb) = pose_arrays(pose_a), pose_arrays(pose_b)
    if kind_b in CURVED:  # a sphere or a rounded point: its whole margin against the curved core
        radius = float(shape_a.margin()) + float(shape_b.margin())
        core = shape_b.shape if kind_b.startswith("rounded") else shape_b
        if "cylinder" in kind_b:
            ref = sphere_cylinder(ta, radius, core.radius, core.half_length, pose_b)
        else:
            ref = sphere_ellipsoid(ta, radius, core.radii, pose_b)
        return ref["distance"], np.asarray(ref["normal"])
    if (kind_a, kind_b) == ("sphere", "sphere"):
        ref = sphere_sphere(ta, shape_a.radius, tb, shape_b.radius)
    elif (kind_a, kind_b) == ("sphere", "capsule"):
        ref = sphere_capsule(ta, shape_a.radius, *capsule_endpoints(shape_b, pose_b), shape_b.radius)
    elif (kind_a, kind_b) == ("capsule", "capsule"):
        ref = capsule_capsule(*capsule_endpoints(shape_a, pose_a), shape_a.radius,
                              *capsule_endpoints(shape_b, pose_b), shape_b.radius)
    elif (kind_a, kind_b) == ("sphere", "box"):
        ref = sphere_box(ta, shape_a.radius, shape_b.half_extents, pose_b)
    elif (kind_a, kind_b) == ("sphere", "rounded_box"):
        ref = sphere_box(ta, float(shape_a.radius) + float(shape_b.radius), shape_b.shape.half_extents,
                         pose_b)
    else:
        raise ValueError((kind_a, kind_b))
    return ref["distance"], np.asarray(ref["normal"])


def _pose(translation, rotation):
    return jg.Pose(np.asarray(translation, np.float64), np.asarray(rotation, np.float64))


def _special_configurations(kind_a, kind_b, rng):
    """Hand-made hard configurations: (size_a, size_b, pose_a, pose_b) tuples."""
    identity = np.array([1.0, 0, 0, 0])
    quarter_x = np.array([np.cos(np.pi / 4), np.sin(np.pi / 4), 0, 0])
    size = (0.3, 0.5, np.array([0.4, 0.3, 0.2]))
    configurations = [(size, size, _pose(np.zeros(3), identity), _pose(np.zeros(3), identity))]
    flat = (0.0, 0.0, np.array([0.5, 0.4, 0.0]))  # a point-like sphere, a point capsule, a flat box
    configurations.append((flat, size, _pose(np.zeros(3), identity), _pose([0.1, 0.2, 0.9], identity)))
    configurations.append((size, flat, _pose(np.zeros(3), identity), _pose([0.05, 0.1, 0.3], quarter_x)))
    if kind_a == kind_b == "capsule":
        for offset in ([0.3, 0, 0], [0.7, 0.1, 0.4], [0, 0, 0.6], [0, 0, 2.0], [0, 0.2, 0]):
            configurations.append((size, size, _pose(np.zeros(3), identity), _pose(offset, identity)))
        configurations.append((size, size, _pose(np.zeros(3), identity), _pose([0, 0, 0.2], quarter_x)))
        configurations.append((size, size, _pose(np.zeros(3), identity), _pose([0.2, 0, 0.1], quarter_x)))
    if "box" in kind_b:  # the sphere's centre on a face, an edge, a corner, at the box's centre
        half = size[2]
        for point in ([0, 0, half[2]], [half[0], half[1], 0], half, [0, 0, 0], half * 0.99):
            configurations.append((size, size, _pose(point, identity), _pose(np.zeros(3), identity)))
    curved = kind_b if kind_b in CURVED else kind_a
    if curved in CURVED:  # a point on every feature and degenerate place of the curved core
        rows = [(size, (0.3, 0.5, np.array([0.4, 0.5, 0.2])), centre) for centre in _curved_points(curved)]
        if "cylinder" in curved:  # the centre of a cylinder whose side and caps tie
            rows.append((size, (0.3, 0.5, np.array([0.4, 0.4, 0.0])), [0, 0, 0]))
        else:  # sphere-, needle- and disk-like ellipsoids
            rows += [(size, (0.3, 0.5, radii), centre) for radii, centre in (
                ([0.3, 0.3, 0.3], [0, 0, 0]), ([0.3, 0.3, 0.3], [0.1, 0, 0.1]),
                ([0.4, 1e-3, 1e-3], [0.1, 0.2, 0]), ([0.4, 1e-3, 1e-3], [0.1, 0, 0]),
                ([0.4, 0.3, 1e-3], [0.1, 0.1, 0.05]), ([0.4, 0.3, 1e-3], [0.1, 0.1, 0]),
                ([0.2, 0.4, 0.3], [0, 0.05, 0.1]))]
        for size_point, size_curved, centre in rows:
            # The point's shape at `centre` in the curved shape's frame (both unrotated, so this holds).
            point_pose, curved_pose = _pose(centre, identity), _pose(np.zeros(3), identity)
            configurations.append((size_point, size_curved, point_pose, curved_pose) if curved == kind_b
                                  else (size_curved, size_point, curved_pose, point_pose))
    return configurations


def _curved_points(kind):
    """Points (curved core's frame) on the features of the core of `_special_configurations`' curved
    shape (cylinder radius 0.4, half length 0.5; ellipsoid radii (0.4, 0.5, 0.2)): centre, axes, cap,
    rim, side, surface, just inside them, beyond them; for the ellipsoid also its least radius's plane
    (on it near the centre, where the closest point leaves it, and 1e-12 off it) and a point on the
    evolute's edge (x = 0.3 on the x axis: e_x x / (e_x² − e_z²) = 1)."""
    if "cylinder" in kind:
        rim = [0.4 * np.cos(0.3), 0.4 * np.sin(0.3), 0.5]
        return [[0, 0, 0], [0, 0, 0.3], [0, 0, 0.9], [0, 0, 0.5], [0.1, -0.2, 0.5], [0.1, -0.2, -0.4], rim,
                [0.6, 0, 0.7], [0.4, 0, 0.1], [0.38, 0.05, 0], [0, 0.9, -0.2], [0.3, 0.3, -0.49]]
    return [[0, 0, 0], [0, 0, 0.1], [0, 0, 0.3], [0.4, 0, 0], [0.05, 0.02, 0], [0.05, 0.02, 1e-12],
            [0.3, 0, 0], [0, 0.7, 0], [0.2, 0.2, 0.1], [0.5, -0.3, 0.25]]


RANDOM_ROWS = 48  # random poses first, then those moved to touch or to tiny gaps, then the hard cases
GENERIC_ROWS = RANDOM_ROWS + 8 * len(GAPS)  # the rows whose normal is unique where they are apart


def _configurations(kind_a, kind_b, rng, count=RANDOM_ROWS):
    """Rows (size_a, size_b, pose_a, pose_b): random, moved along the reference normal, hard cases
    (`_special_configurations`), and the first rows scaled by `SCALES`."""
    rows = []
    for _ in range(count):
        pose_a = _pose(rng.normal(size=3) * 0.3, random_rotation(rng))
        pose_b = _pose(np.asarray(pose_a.translation) + rng.normal(size=3) * rng.uniform(0, 1.5),
                       random_rotation(rng))
        rows.append((_sizes(kind_a, rng), _sizes(kind_b, rng), pose_a, pose_b))
    # The first 8 moved along their normal to touch, or to leave tiny gaps.
    moved = []
    for gap in GAPS:
        for size_a, size_b, pose_a, pose_b in rows[:8]:
            distance, normal = _reference(kind_a, _make(kind_a, size_a), pose_a, kind_b,
                                          _make(kind_b, size_b), pose_b)
            shift = (gap - distance) * normal
            moved.append((size_a, size_b, pose_a, _pose(np.asarray(pose_b.translation) + shift,
                                                        pose_b.rotation)))
    rows += moved + _special_configurations(kind_a, kind_b, rng)
    scaled = []
    for scale in SCALES:
        for size_a, size_b, pose_a, pose_b in rows[:12]:
            scaled.append((tuple(part * scale for part in size_a), tuple(part * scale for part in size_b),
                           _pose(np.asarray(pose_a.translation) * scale, pose_a.rotation),
                           _pose(np.asarray(pose_b.translation) * scale, pose_b.rotation)))
    rows += scaled
    return rows


def _stack(items):
    return jax.tree_util.tree_map(lambda *leaves: np.stack([np.asarray(x) for x in leaves]), *items)


def _round_to_float32(tree):
    return jax.tree_util.tree_map(lambda x: np.asarray(x).astype(np.float32).astype(np.float64), tree)


# The three queries in one compiled program.
QUERIES = jax.jit(jax.vmap(three_queries))


@functools.cache
def _case_batch(kind_a, kind_b, seed):
    rng = np.random.default_rng(seed)
    rows = _configurations(kind_a, kind_b, rng)
    shapes_a = [_make(kind_a, r[0]) for r in rows]
    shapes_b = [_make(kind_b, r[1]) for r in rows]
    inputs = _round_to_float32((_stack(shapes_a), _stack([r[2] for r in rows]), _stack(shapes_b),
                                _stack([r[3] for r in rows])))
    references = []
    for k in range(len(rows)):
        one = jax.tree_util.tree_map(lambda leaf, k=k: leaf[k], inputs)
        references.append(_reference(kind_a, one[0], one[1], kind_b, one[2], one[3]))
    distances = np.array([r[0] for r in references])
    normals = np.array([r[1] for r in references])
    sizes = np.array([max(np.max(r[0][0:2]), np.max(r[0][2]), np.max(r[1][0:2]), np.max(r[1][2]))
                      for r in rows])
    sizes = np.maximum(sizes, np.linalg.norm(np.asarray(inputs[3].translation) -
                                             np.asarray(inputs[1].translation), axis=1))
    return inputs, distances, normals, sizes


PAIRS = [("sphere", "sphere"), ("sphere", "capsule"), ("capsule", "sphere"), ("capsule", "capsule"),
         ("sphere", "box"), ("box", "sphere"), ("sphere", "rounded_box")]
# A point against a curved core, in either order, plain and rounded (the solvers see the cores only).
CURVED_PAIRS = [("sphere", "cylinder"), ("rounded_ellipsoid", "rounded_point")]

# The general path's gradients take every kind pair's cases in one batch: each side a `Rounded` `Packed`
# batch (margin zero where a shape has none) of the core classes its pairs hold, so that they compile
# once, not once per kind pair (a typed general kernel compiles in ~20 s). Each core class held costs
# compile time: the packed sphere, capsule and box alone take half the time those and a cylinder and an
# ellipsoid do (no curved core, so no refinement of the normal).


def _as(tree, dtype):
    return jax.tree_util.tree_map(lambda x: jnp.asarray(x, dtype), tree)


def _core_class(kind):
    """The primitive class of `kind`'s core (its own class where it is not `Rounded`)."""
    template = _make(kind, (0.1, 0.2, np.ones(3)))
    return type(template.shape if kind.startswith("rounded") else template)


def _general_side(kind, shapes, dtype, kinds):
    """`shapes` (a batch of `kind`, stacked) as the general kernels' `Rounded` `Packed` batch of the
    core classes `kinds`."""
    count = len(np.asarray(jax.tree_util.tree_leaves(shapes)[0]))
    core, radius = (shapes.shape, shapes.radius) if kind.startswith("rounded") else (shapes, np.zeros(count))
    rows = [jax.tree_util.tree_map(lambda leaf, k=k: leaf[k], core) for k in range(count)]
    return jg.Rounded(jg.pack(rows, dtype=dtype, kinds=kinds), jnp.asarray(radius, dtype))


def _typed_gradient(kind, gradient):
    """The general kernel's gradient with respect to one `_general_side` row (a `Rounded` `Packed`)
    read as the gradient with respect to the shape of `kind` it was made from."""
    core_class = _core_class(kind)
    core = core_class(**{name: getattr(gradient.shape, packed)
                         for name, packed in KIND_FIELDS[core_class].items()})
    return jg.Rounded(core, gradient.radius) if kind.startswith("rounded") else core


def _concatenate(trees):
    return jax.tree_util.tree_map(lambda *leaves: jnp.concatenate(leaves), *trees)


@functools.cache
def _general_path(function, seed, dtype, pairs):
    """`jit(vmap(function))` of (shape_a, pose_a, shape_b, pose_b) on the general path over the cases
    (`_case_batch(..., seed)`) of every kind pair in `pairs`, in one batch of `_general_side`s.

    Returns {kind pair: its rows of the output}."""
    kinds = tuple({_core_class(kind) for pair in pairs for kind in pair})
    sides = [[], [], [], []]
    for kind_a, kind_b in pairs:
        shape_a, pose_a, shape_b, pose_b = _case_batch(kind_a, kind_b, seed)[0]
        parts = (_general_side(kind_a, shape_a, dtype, kinds), _as(pose_a, dtype),
                 _general_side(kind_b, shape_b, dtype, kinds), _as(pose_b, dtype))
        for side, part in zip(sides, parts, strict=True):
            side.append(part)
    outputs = jax.jit(jax.vmap(function))(*map(_concatenate, sides))
    counts = [len(pose.translation) for pose in sides[1]]
    ends = np.cumsum(counts)
    starts = ends - counts
    return {pair: jax.tree_util.tree_map(lambda leaf, start=start, end=end: leaf[start:end], outputs)
            for pair, start, end in zip(pairs, starts, ends, strict=True)}


def _core_and_rounding(kind, shape):
    """One case's shape of `kind` as its core and the rounding around it (0 where it has none)."""
    return (shape.shape, float(shape.radius)) if kind.startswith("rounded") else (shape, 0.0)


@functools.cache
def _general_signed_distances(seed, dtype, pairs):
    """The general path's signed distances and iterations on the cases (`_case_batch(..., seed)`) of
    every kind pair in `pairs`: the tests' shared program (`run_three_queries`, GJK/EPA on `Packed`
    batches of every kind, compiled once per run) on the cores, less the roundings, as the general
    path measures a `Rounded` shape.

    Returns {kind pair: (signed distances, iterations)}."""
    cases, roundings, ends = [], [], []
    for kind_a, kind_b in pairs:
        inputs = _case_batch(kind_a, kind_b, seed)[0]
        for k in range(len(inputs[1].translation)):
            shape_a, pose_a, shape_b, pose_b = jax.tree_util.tree_map(lambda leaf, k=k: leaf[k], inputs)
            (core_a, rounding_a), (core_b, rounding_b) = (_core_and_rounding(kind_a, shape_a),
                                                          _core_and_rounding(kind_b, shape_b))
            cases.append(dict(shape_a=core_a, pose_a=pose_a, shape_b=core_b, pose_b=pose_b))
            roundings.append(rounding_a + rounding_b)
        ends.append(len(cases))
    result = run_three_queries(cases, dtype)[0]
    distances = result.distance - np.asarray(roundings, dtype)
    starts = [0] + ends[:-1]
    return {pair: (distances[start:end], result.iterations[start:end])
            for pair, start, end in zip(pairs, starts, ends, strict=True)}


def _support_plane_errors(result, inputs):
    """|normal·point_a − h_A(normal)| and |−normal·point_b − h_B(−normal)| (float64 reference)."""
    errors = []
    for k in range(len(result.distance)):
        shape_a, pose_a, shape_b, pose_b = jax.tree_util.tree_map(lambda leaf, k=k: leaf[k], inputs)
        normal = np.asarray(result.normal[k], np.float64)
        error_a = abs(normal @ np.asarray(result.point_a[k]) - support_function(shape_a, pose_a, normal))
        error_b = abs(-normal @ np.asarray(result.point_b[k]) - support_function(shape_b, pose_b, -normal))
        errors.append(max(error_a, error_b))
    return np.array(errors)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind_a,kind_b", PAIRS + CURVED_PAIRS)
def test_specialised_pairs_match_closed_forms_and_the_general_path(kind_a, kind_b, dtype):
    inputs, reference, reference_normals, sizes = _case_batch(kind_a, kind_b, seed=7)
    typed = _as(inputs, dtype)
    tolerance = TOLERANCE[dtype] * sizes
    special, unsigned, hits = QUERIES(*typed)
    distance = np.asarray(special.distance, np.float64)
    np.testing.assert_array_less(np.abs(distance - reference), tolerance)
    # The closed forms run no loop; the general path does. In float32 a curved pair is held to the exact
    # reference alone: the general path's EPA may end at its iteration bound there (MAX_ITERATIONS: a
    # point at a cylinder's centre, as deep below its side as below its caps, is 2e-3 of the size off).
    assert np.all(np.asarray(special.iterations) == 0)
    if dtype == np.float64 or (kind_a, kind_b) in PAIRS:
        compared = tuple(PAIRS + CURVED_PAIRS) if dtype == np.float64 else tuple(PAIRS)
        general, iterations = _general_signed_distances(7, dtype, compared)[kind_a, kind_b]
        np.testing.assert_array_less(np.abs(distance - np.asarray(general, np.float64)), tolerance)
        assert np.all(iterations > 0)
    # Status follows the sign (touching is INTERSECTING).
    status = np.asarray(special.status)
    np.testing.assert_array_equal(status, np.select(
        [distance > 0, distance < 0], [jg.Status.SEPARATED, jg.Status.PENETRATING], jg.Status.INTERSECTING))
    # The contract: distance = normal·(point_b − point_a), points on the supporting planes.
    normal = np.asarray(special.normal, np.float64)
    np.testing.assert_allclose(np.linalg.norm(normal, axis=1), 1, atol=10 * TOLERANCE[dtype])
    gap = np.einsum("ij,ij->i", normal, np.asarray(special.point_b - special.point_a, np.float64))
    np.testing.assert_array_less(np.abs(gap - distance), tolerance)
    np.testing.assert_array_less(_support_plane_errors(special, inputs), tolerance)
    # The normal is the reference's wherever that is unique (not touching, not coincident).
    unique = (np.abs(reference) > 1e-3 * sizes) & (np.arange(len(reference)) < GENERIC_ROWS)
    cosine = np.einsum("ij,ij->i", normal, reference_normals)
    assert np.all(cosine[unique] > 1 - 1e3 * TOLERANCE[dtype])
    # `distance` clamps and reports INTERSECTING for overlapping pairs; `intersect` agrees with the sign
    # everywhere: distances within rounding of the scale are reported as exactly touching by all three.
    np.testing.assert_array_less(np.abs(np.asarray(unsigned.distance) - np.maximum(distance, 0)), tolerance)
    intersecting = np.asarray(unsigned.status) == jg.Status.INTERSECTING
    np.testing.assert_array_equal(intersecting, distance <= 0)
    np.testing.assert_array_equal(np.asarray(hits), distance <= 0)


def _gradients(shape_a, pose_a, shape_b, pose_b, config=None):
    """The signed distance's gradient with respect to each argument (float0 for a `Packed` shape's
    integer fields)."""
    def signed(*args):
        return jg.signed_distance(*args, config=config).distance
    return jax.grad(signed, argnums=(0, 1, 2, 3), allow_int=True)(shape_a, pose_a, shape_b, pose_b)


GRADIENTS = jax.jit(jax.vmap(_gradients))  # the default config: the specialised colliders
_general_gradients = functools.partial(_gradients, config=GENERAL)


@pytest.mark.parametrize("kind_a,kind_b", PAIRS)
def test_specialised_gradients_match_the_general_path_and_finite_differences(kind_a, kind_b):
    inputs, reference, _, sizes = _case_batch(kind_a, kind_b, seed=11)
    special = GRADIENTS(*inputs)
    shape_a, pose_a, shape_b, pose_b = _general_path(_general_gradients, 11, np.float64,
                                                     tuple(PAIRS))[kind_a, kind_b]
    general = (_typed_gradient(kind_a, shape_a), pose_a, _typed_gradient(kind_b, shape_b), pose_b)
    for leaf in jax.tree_util.tree_leaves(special):
        assert np.all(np.isfinite(leaf)), "gradients must be finite at every case (touching, coincident)"
    # Where the distance is differentiable (no tie of features), both paths give the same gradient.
    generic = (np.abs(reference) > 1e-3 * sizes) & (np.arange(len(reference)) < RANDOM_ROWS)
    for ours, theirs in zip(jax.tree_util.tree_leaves(special), jax.tree_util.tree_leaves(general),
                            strict=True):
        ours, theirs = np.asarray(ours)[generic], np.asarray(theirs)[generic]
        np.testing.assert_allclose(ours, theirs, atol=1e-8, rtol=1e-8)
    # Central differences on B's translation, float64, for the same generic cases.
    step = 1e-6
    shape_a, pose_a, shape_b, pose_b = inputs
    for axis in range(3):
        offset = np.zeros(3)
        offset[axis] = step
        plus, _, _ = QUERIES(shape_a, pose_a, shape_b, jg.Pose(pose_b.translation + offset, pose_b.rotation))
        minus, _, _ = QUERIES(shape_a, pose_a, shape_b, jg.Pose(pose_b.translation - offset, pose_b.rotation))
        difference = (np.asarray(plus.distance) - np.asarray(minus.distance)) / (2 * step)
        np.testing.assert_allclose(np.asarray(special[3].translation)[generic, axis], difference[generic],
                                   atol=1e-6)


def _leaves_with(tree, index, value):
    """`tree` with its flattened float leaves' element `index` (a global position) set to `value`."""
    leaves, definition = jax.tree_util.tree_flatten(tree)
    flat = np.concatenate([np.asarray(leaf, np.float64).reshape(len(leaf), -1) for leaf in leaves], axis=1)
    flat = flat.copy()
    flat[:, index] = value
    sizes = np.cumsum([0] + [np.asarray(leaf).reshape(len(leaf), -1).shape[1] for leaf in leaves])
    return jax.tree_util.tree_unflatten(definition, [
        flat[:, start:stop].reshape(np.shape(leaf)) for leaf, start, stop in zip(leaves, sizes, sizes[1:],
                                                                                 strict=False)])


@pytest.mark.parametrize("kind_a,kind_b", CURVED_PAIRS)
def test_curved_gradients_match_central_differences_on_every_field(kind_a, kind_b):
    inputs, reference, _, sizes = _case_batch(kind_a, kind_b, seed=11)
    special = GRADIENTS(*inputs)
    gradient_leaves = jax.tree_util.tree_leaves(special)
    for leaf in gradient_leaves:
        assert np.all(np.isfinite(leaf)), "gradients must be finite at every case (touching, coincident)"
    # Every input number (poses, quaternions unnormalised, and every shape field), float64 central
    # differences, on the cases whose distance is differentiable (random, apart from touching).
    generic = (np.abs(reference) > 1e-3 * sizes) & (np.arange(len(reference)) < RANDOM_ROWS)
    gradient = np.concatenate([np.asarray(leaf).reshape(len(leaf), -1) for leaf in gradient_leaves], axis=1)
    flat = np.concatenate([np.asarray(leaf).reshape(len(leaf), -1)
                           for leaf in jax.tree_util.tree_leaves(inputs)], axis=1)
    step = 1e-6
    for index in range(flat.shape[1]):
        plus = QUERIES(*_leaves_with(inputs, index, flat[:, index] + step))[0].distance
        minus = QUERIES(*_leaves_with(inputs, index, flat[:, index] - step))[0].distance
        difference = (np.asarray(plus) - np.asarray(minus)) / (2 * step)
        np.testing.assert_allclose(gradient[generic, index], difference[generic], atol=1e-6, err_msg=index)


def test_curved_hessians_match_differences_of_the_gradient_and_stay_finite():
    # The normal of a rim or ellipsoid contact moves with the curvature (`NormalKind.SMOOTH`): the
    # Hessian in A's translation is that of the distance; finite at the centre and at touching.
    sphere = jg.Sphere(jnp.float64(0.1))
    identity = jg.Pose.identity(jnp.float64)
    cases = [(jg.Ellipsoid(jnp.array([0.5, 0.3, 0.2])), [[0.6, 0.3, 0.2], [0.2, 0.1, 0.05]]),  # apart, inside
             (jg.Cylinder(jnp.float64(0.3), jnp.float64(0.4)),
              [[0.5, 0.2, 0.6], [0.5, 0.2, 0.1], [0.1, 0.2, 0.7]])]  # rim, side, cap
    step = 1e-6
    for shape, points in cases:
        def signed(translation, shape=shape):
            pose = jg.Pose(translation, identity.rotation)
            return jg.signed_distance(sphere, pose, shape, identity).distance
        hessian, gradient = jax.jit(jax.vmap(jax.hessian(signed))), jax.jit(jax.vmap(jax.grad(signed)))
        points = jnp.asarray(points)
        offsets = step * jnp.eye(3)[:, None, :]
        differences = jnp.stack([gradient(points + offset) - gradient(points - offset) for offset in offsets],
                                axis=1) / (2 * step)
        np.testing.assert_allclose(hessian(points), differences, atol=1e-5)
        # The centre; touching (at the ellipsoid's x end, on the cylinder's side).
        degenerate = jnp.array([[0.0, 0, 0], [0.6, 0, 0], [0.4, 0, 0]])
        assert np.all(np.isfinite(hessian(degenerate)))


def test_spheres_against_flat_ellipsoids_match_the_closed_form_and_central_differences(rng):
    """Ellipsoids with zero radii (a disk, a needle, a point), turned at random, against spheres above
    their flat part (where every point of it supports the normal), beyond their rim or end, and at
    their centre: the distance is the closed form's, and the gradient with respect to both poses and
    to the nonzero radii is the central differences' (float64). A needle or point was once measured
    along one zero axis only (0.07 off), and a disk's contact point was held by its normal's support,
    the disk's centre, which froze the gradient with respect to the disk's rotation."""
    flats = [(0.0, 0.5, 0.0), (0.4, 0.3, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.6)]
    rows = []
    for radii in flats:
        for place in ([0.1, 0.2, 0.15], [0.05, -0.1, -0.3], [0.6, 0.5, 0.1], [0.0, 0.0, 0.0]):  # centre last
            rotation_b = random_rotation(rng)
            centre = quaternion_to_matrix(rotation_b) @ (np.asarray(place) * rng.uniform(0.8, 1.2, 3))
            rows.append((jg.Sphere(np.float64(0.1)), _pose(centre + 0.3, random_rotation(rng)),
                         jg.Ellipsoid(np.asarray(radii)), _pose(np.full(3, 0.3), rotation_b)))
    inputs = jax.tree_util.tree_map(lambda *leaves: np.stack(leaves), *rows)
    distance = np.asarray(QUERIES(*inputs)[0].distance)
    reference = np.array([sphere_ellipsoid(pose_a.translation, 0.1, shape_b.radii, pose_b)["distance"]
                          for _, pose_a, shape_b, pose_b in rows])
    np.testing.assert_allclose(distance, reference, atol=1e-9)
    gradient = jax.tree_util.tree_leaves(GRADIENTS(*inputs))
    assert all(np.all(np.isfinite(leaf)) for leaf in gradient)
    gradient = np.concatenate([np.asarray(leaf).reshape(len(leaf), -1) for leaf in gradient], axis=1)
    flat = np.concatenate([np.asarray(leaf).reshape(len(leaf), -1)
                           for leaf in jax.tree_util.tree_leaves(inputs)], axis=1)
    # Not touching, and not at the centre, where the distance has a kink (|offset across the flat part|).
    generic = (np.abs(reference) > 1e-3) & (np.arange(len(rows)) % 4 != 3)
    step = 1e-6
    for index in range(flat.shape[1]):
        checked = generic & (flat[:, index] != 0)  # a zero radius has no two-sided difference
        plus = QUERIES(*_leaves_with(inputs, index, flat[:, index] + step))[0].distance
        minus = QUERIES(*_leaves_with(inputs, index, flat[:, index] - step))[0].distance
        difference = (np.asarray(plus) - np.asarray(minus)) / (2 * step)
        np.testing.assert_allclose(gradient[checked, index], difference[checked], atol=1e-6, err_msg=index)


def test_hessians_are_finite_at_coincident_centres_and_parallel_capsules():
    capsule = jg.Capsule(jnp.float64(0.2), jnp.float64(0.5))
    sphere = jg.Sphere(jnp.float64(0.3))
    identity = jg.Pose.identity(jnp.float64)
    beside = jg.Pose(jnp.array([0.3, 0.0, 0.0]), jnp.array([1.0, 0, 0, 0]))
    for a, b, pose_b in ((sphere, sphere, identity), (capsule, capsule, beside), (capsule, capsule, identity),
                         (sphere, capsule, identity)):
        def derivatives(pose, a=a, b=b):
            def signed(pose):
                return jg.signed_distance(a, identity, b, pose).distance
            return [derivative(pose) for derivative in (jax.grad(signed), jax.jacfwd(signed),
                                                        jax.jacrev(signed), jax.hessian(signed))]
        for leaf in jax.tree_util.tree_leaves(jax.jit(derivatives)(pose_b)):
            assert np.all(np.isfinite(leaf))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sphere_capsule_path_reports_features_bounds_and_placeholders(dtype):
    """The sphere and capsule pairs' own path (`_scalar_pairs`), on what the closed-form comparisons
    above do not reach: `Rounded` capsules (margin = both radii), the features of zero-radius cores
    (a segment broadside: its edge, ends 0 and 1; end-on: the + end; a point: its vertex), a distance
    bound, and invalid inputs (NaN, a zero quaternion, a negative radius) in the same typed batch."""
    identity = [1.0, 0, 0, 0]
    sideways = [np.cos(np.pi / 4), np.sin(np.pi / 4), 0, 0]  # the capsule's axis along −y
    # (capsule radius, half-length, rounding; its pose; the sphere's radius and centre)
    rows = [((0.0, 0.5, 0.0), ([0, 0, 0], identity), (0.25, [1.0, 0.0, 0.1])),  # broadside: edge
            ((0.0, 0.5, 0.0), ([0, 0, 0], identity), (0.25, [0.0, 0.0, 1.5])),  # beyond the + end
            ((0.1, 0.5, 0.05), ([0, 0, 0], sideways), (0.0, [0.1, 0.1, 0.0])),  # rounded, overlapping
            ((0.1, 0.5, 0.05), ([1, 2, 3], identity), (0.0, [1, 2, 5])),  # beyond the distance bound
            ((0.1, np.nan, 0.0), ([0, 0, 0], identity), (0.25, [1.0, 0, 0])),
            ((0.1, 0.5, 0.0), ([0, 0, 0], [0.0, 0, 0, 0]), (0.25, [1.0, 0, 0])),
            ((-0.1, 0.5, 0.0), ([0, 0, 0], identity), (0.25, [1.0, 0, 0]))]
    capsules = jg.Rounded(jg.Capsule(jnp.asarray([r[0][0] for r in rows], dtype),
                                     jnp.asarray([r[0][1] for r in rows], dtype)),
                          jnp.asarray([r[0][2] for r in rows], dtype))
    poses_a = jg.Pose(jnp.asarray([r[1][0] for r in rows], dtype),
                      jnp.asarray([r[1][1] for r in rows], dtype))
    spheres = jg.Sphere(jnp.asarray([r[2][0] for r in rows], dtype))
    poses_b = jg.Pose(jnp.asarray([r[2][1] for r in rows], dtype), jnp.tile(jnp.asarray(identity, dtype),
                                                                             (len(rows), 1)))

    def queries(*pair):
        return (*three_queries(*pair), jg.distance(*pair, distance_upper_bound=1.0),
                jg.signed_distance(*pair[2:], *pair[:2]))

    signed, unsigned, hits, bounded, swapped = jax.jit(jax.vmap(queries))(capsules, poses_a, spheres, poses_b)
    distance = np.asarray(signed.distance, np.float64)
    tolerance = TOLERANCE[dtype] * 4
    expected = [1.0 - 0.25, 1.5 - 0.5 - 0.25, 0.1 - 0.15, 2 - 0.5 - 0.15]
    np.testing.assert_allclose(distance[:4], expected, atol=tolerance)
    assert list(np.asarray(signed.status)) == [jg.Status.SEPARATED] * 2 + [jg.Status.PENETRATING] + [
        jg.Status.SEPARATED] + [jg.Status.INVALID_INPUT] * 3
    for result in (signed, unsigned, bounded, swapped):  # the documented placeholders
        np.testing.assert_array_equal(np.asarray(result.status)[4:], jg.Status.INVALID_INPUT)
        np.testing.assert_array_equal(np.asarray(result.distance)[4:], 0)
        np.testing.assert_array_equal(np.asarray(result.normal)[4:], [[0, 0, 1]] * 3)
        np.testing.assert_array_equal(np.asarray(result.point_a)[4:], 0)
        np.testing.assert_array_equal(np.asarray(result.feature_a.dimension)[4:], jg.FeatureDim.NONE)
    assert list(np.asarray(hits)) == [False, False, True, False, False, False, False]
    assert list(np.asarray(unsigned.status)[:4]) == [jg.Status.SEPARATED] * 2 + [jg.Status.INTERSECTING,
                                                                                 jg.Status.SEPARATED]
    assert int(np.asarray(bounded.status)[3]) == jg.Status.BOUND_EXCEEDED
    # Features: the zero-radius segment's edge (ends 0 and 1) and its + end, CURVED where rounded.
    dimensions = np.asarray(signed.feature_a.dimension)[:4]
    curved, vertex = jg.FeatureDim.CURVED, jg.FeatureDim.VERTEX
    assert list(dimensions) == [jg.FeatureDim.EDGE, vertex, curved, curved]
    assert list(np.asarray(signed.feature_a.vertices)[0]) == [0, 1, -1, -1]
    assert list(np.asarray(signed.feature_a.vertices)[1]) == [1, -1, -1, -1]
    assert list(np.asarray(signed.feature_b.dimension)[:4]) == [curved, curved, vertex, vertex]
    assert list(np.asarray(swapped.feature_b.dimension)[:4]) == list(dimensions)
    # The exchanged order: the same distances, the normal and the points swapped.
    for got, want in ((swapped.distance, distance), (swapped.normal, -np.asarray(signed.normal)),
                      (swapped.point_a, signed.point_b)):
        np.testing.assert_allclose(np.asarray(got)[:4], np.asarray(want)[:4], atol=tolerance)
    assert np.all(np.asarray(signed.iterations) == 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sphere_box_path_reports_features_bounds_and_placeholders(dtype):
    """Spheres against boxes on the same path (`_scalar_pairs`): the box's features by corner
    (numbered x + 2y + 4z, 1 for the + side) at a face, an edge and a vertex, and from inside; a
    `Rounded` box's CURVED; a distance bound; invalid inputs (a negative or infinite extent, a zero
    quaternion, NaN) in the same typed batch; either order."""
    identity, half = [1.0, 0, 0, 0], [0.5, 0.3, 0.2]
    # (box half extents, rounding, quaternion; the sphere's radius and centre)
    rows = [((half, 0.0, identity), (0.25, [1.0, 0.0, 0.0])),  # the +x face
            ((half, 0.0, identity), (0.25, [1.0, 1.0, 0.0])),  # the (+x, +y) edge
            ((half, 0.0, identity), (0.25, [1.0, 1.0, 1.0])),  # the (+, +, +) corner
            ((half, 0.0, identity), (0.0, [0.4, 0.0, 0.05])),  # inside, nearest the +x face
            ((half, 0.05, identity), (0.25, [1.0, 0.0, 0.0])),  # rounded
            (([0.5, -0.1, 0.2], 0.0, identity), (0.25, [1.0, 0, 0])),
            (([0.5, np.inf, 0.2], 0.0, identity), (0.25, [1.0, 0, 0])),
            ((half, 0.0, [0.0, 0, 0, 0]), (0.25, [1.0, 0, 0])),
            ((half, 0.0, identity), (0.25, [np.nan, 0, 0]))]
    boxes = jg.Rounded(jg.Box(jnp.asarray([r[0][0] for r in rows], dtype)),
                       jnp.asarray([r[0][1] for r in rows], dtype))
    poses_a = jg.Pose(jnp.zeros((len(rows), 3), dtype), jnp.asarray([r[0][2] for r in rows], dtype))
    spheres = jg.Sphere(jnp.asarray([r[1][0] for r in rows], dtype))
    poses_b = jg.Pose(jnp.asarray([r[1][1] for r in rows], dtype), jnp.tile(jnp.asarray(identity, dtype),
                                                                             (len(rows), 1)))

    def queries(*pair):
        return (*three_queries(*pair), jg.distance(*pair, distance_upper_bound=0.3),
                jg.signed_distance(*pair[2:], *pair[:2]))

    signed, unsigned, hits, bounded, swapped = jax.jit(jax.vmap(queries))(boxes, poses_a, spheres, poses_b)
    distance = np.asarray(signed.distance, np.float64)
    expected = [0.25, np.hypot(0.5, 0.7) - 0.25, np.linalg.norm([0.5, 0.7, 0.8]) - 0.25, -0.1, 0.2]
    np.testing.assert_allclose(distance[:5], expected, atol=TOLERANCE[dtype] * 4)
    separated, invalid = jg.Status.SEPARATED, jg.Status.INVALID_INPUT
    statuses = [separated] * 3 + [jg.Status.PENETRATING, separated] + [invalid] * 4
    assert list(np.asarray(signed.status)) == statuses
    np.testing.assert_allclose(np.asarray(signed.normal)[3], [1, 0, 0], atol=TOLERANCE[dtype])
    for result in (signed, unsigned, bounded, swapped):  # the documented placeholders
        np.testing.assert_array_equal(np.asarray(result.status)[5:], invalid)
        np.testing.assert_array_equal(np.asarray(result.distance)[5:], 0)
        np.testing.assert_array_equal(np.asarray(result.normal)[5:], [[0, 0, 1]] * 4)
        np.testing.assert_array_equal(np.asarray(result.point_b)[5:], 0)
        np.testing.assert_array_equal(np.asarray(result.feature_b.dimension)[5:], jg.FeatureDim.NONE)
    assert list(np.asarray(hits)) == [False] * 3 + [True] + [False] * 5
    assert list(np.asarray(bounded.status)[:3]) == [separated] + [jg.Status.BOUND_EXCEEDED] * 2
    face, edge, vertex = jg.FeatureDim.FACE, jg.FeatureDim.EDGE, jg.FeatureDim.VERTEX
    dimensions = list(np.asarray(signed.feature_a.dimension)[:5])
    assert dimensions == [face, edge, vertex, face, jg.FeatureDim.CURVED]
    corners = np.asarray(signed.feature_a.vertices)
    assert [list(corners[k]) for k in range(4)] == [[1, 3, 5, 7], [3, 7, -1, -1], [7, -1, -1, -1],
                                                     [1, 3, 5, 7]]
    assert list(np.asarray(swapped.feature_b.dimension)[:5]) == dimensions
    for got, want in ((swapped.distance, distance), (swapped.normal, -np.asarray(signed.normal)),
                      (swapped.point_a, signed.point_b)):
        np.testing.assert_allclose(np.asarray(got)[:5], np.asarray(want)[:5], atol=TOLERANCE[dtype] * 4)
    assert np.all(np.asarray(signed.iterations) == 0)


# --- half-spaces ------------------------------------------------------------------------------------

def _half_space_partners(rng):
    """One shape of every kind (and composites) to rest on a half-space."""
    vertices = random_polytope_vertices(rng, 12, 0.6)
    return {
        "sphere": jg.Sphere(jnp.float64(0.4)),
        "capsule": jg.Capsule(jnp.float64(0.2), jnp.float64(0.5)),
        "box": jg.Box(jnp.array([0.4, 0.3, 0.2])),
        "cylinder": jg.Cylinder(jnp.float64(0.3), jnp.float64(0.4)),
        "cone": jg.Cone(jnp.float64(0.3), jnp.float64(0.4)),
        "ellipsoid": jg.Ellipsoid(jnp.array([0.5, 0.3, 0.2])),
        "polytope": jg.Polytope(jnp.asarray(vertices)),
        "rounded_box": jg.Rounded(jg.Box(jnp.array([0.3, 0.2, 0.1])), jnp.float64(0.05)),
        "affine_ellipsoid": jg.Affine(jg.Ellipsoid(jnp.array([0.4, 0.3, 0.2])),
                                      jnp.array([[1.0, 0.3, 0], [0, 1, 0], [0.2, 0, 0.7]]),
                                      jnp.array([0.1, 0, 0])),
    }


def _half_space_poses(rng, count):
    """Poses of a shape and of a half-space: the plane tilted at random, the shape at heights from deep
    below to well above it, some exactly touching."""
    heights = np.concatenate([rng.uniform(-0.6, 1.0, count - 4), [0.0, 1e-9, -1e-9, 1e-3]])
    return heights, [(_pose(rng.normal(size=3), random_rotation(rng)),
                      _pose(rng.normal(size=3), random_rotation(rng))) for _ in range(count)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_half_space_against_every_kind_matches_the_support_function(dtype):
    rng = np.random.default_rng(5)
    plane = jg.HalfSpace()
    for name, shape in _half_space_partners(rng).items():
        heights, poses = _half_space_poses(rng, 24)
        placed = []
        for height, (pose_shape, pose_plane) in zip(heights, poses, strict=True):
            # Move the shape along the plane's normal so that its lowest point is `height` above it.
            rotation, translation = pose_arrays(pose_plane)
            normal = rotation[:, 2]
            lowest = -support_function(shape, pose_shape, -normal) - normal @ translation
            moved = np.asarray(pose_shape.translation) + (height - lowest) * normal
            placed.append((_pose(moved, pose_shape.rotation), pose_plane))
        poses_shape = _round_to_float32(_stack([p[0] for p in placed]))
        poses_plane = _round_to_float32(_stack([p[1] for p in placed]))
        reference = []
        for k in range(len(placed)):
            pose_shape = jax.tree_util.tree_map(lambda leaf, k=k: leaf[k], poses_shape)
            plane_pose = jax.tree_util.tree_map(lambda leaf, k=k: leaf[k], poses_plane)
            rotation, translation = pose_arrays(plane_pose)
            normal = rotation[:, 2]
            reference.append(-support_function(shape, pose_shape, -normal) - normal @ translation)
        reference = np.array(reference)
        typed_shape = _as(shape, dtype)
        for order in ("shape_first", "plane_first"):
            if order == "shape_first":
                args = (typed_shape, _as(poses_shape, dtype), plane, _as(poses_plane, dtype))
            else:
                args = (plane, _as(poses_plane, dtype), typed_shape, _as(poses_shape, dtype))
            result, unsigned, hits = jax.jit(jax.vmap(three_queries, in_axes=(None, 0, None, 0)))(*args)
            distance = np.asarray(result.distance, np.float64)
            np.testing.assert_allclose(distance, reference, atol=TOLERANCE[dtype] * 4, err_msg=name)
            normal = np.asarray(result.normal, np.float64)
            gap = np.einsum("ij,ij->i", normal, np.asarray(result.point_b - result.point_a, np.float64))
            np.testing.assert_allclose(gap, distance, atol=TOLERANCE[dtype] * 4, err_msg=name)
            plane_normals = np.stack([quaternion_column(q) for q in np.asarray(poses_plane.rotation)])
            expected_normal = -plane_normals if order == "shape_first" else plane_normals
            np.testing.assert_allclose(normal, expected_normal, atol=10 * TOLERANCE[dtype], err_msg=name)
            np.testing.assert_array_equal(np.asarray(hits), distance <= 0, err_msg=name)
            np.testing.assert_allclose(np.asarray(unsigned.distance), np.maximum(distance, 0),
                                       atol=TOLERANCE[dtype] * 4, err_msg=name)


def quaternion_column(quaternion):
    """The third column (local z in world) of the rotation of `quaternion` (4,)."""
    return pose_arrays(jg.Pose(np.zeros(3), quaternion))[0][:, 2]


def test_half_space_gradients_match_finite_differences():
    rng = np.random.default_rng(9)
    plane = jg.HalfSpace()
    step = 1e-6
    for name, shape in _half_space_partners(rng).items():
        pose_shape = _pose(rng.normal(size=3), random_rotation(rng))
        pose_plane = _pose(rng.normal(size=3) * 0.1 + np.asarray(pose_shape.translation) - [0, 0, 0.3],
                           random_rotation(rng))

        @jax.jit
        def signed(pose_s, pose_p, shape=shape):
            return jg.signed_distance(shape, pose_s, plane, pose_p).distance

        gradient = jax.jit(jax.grad(signed, argnums=(0, 1)))(pose_shape, pose_plane)
        for which in (0, 1):
            for field in ("translation", "rotation"):
                base = [pose_shape, pose_plane]
                values = np.asarray(getattr(base[which], field))
                for index in range(values.size):
                    shifted = []
                    for sign in (1, -1):
                        moved = values.copy()
                        moved[index] += sign * step
                        poses = list(base)
                        poses[which] = jg.Pose(**{**{"translation": base[which].translation,
                                                     "rotation": base[which].rotation},
                                                  field: jnp.asarray(moved)})
                        shifted.append(float(signed(*poses)))
                    difference = (shifted[0] - shifted[1]) / (2 * step)
                    assert abs(float(getattr(gradient[which], field)[index]) - difference) < 1e-6, \
                        (name, which, field, index)


def test_half_space_pairs_that_need_a_bounded_support_raise():
    plane, sphere = jg.HalfSpace(), jg.Sphere(jnp.float32(1))
    pose = jg.Pose.identity()
    with pytest.raises(ValueError, match="both shapes are half-spaces"):
        jg.signed_distance(plane, pose, plane, pose)
    for composite in (jg.ConvexHull((plane, sphere)), jg.MinkowskiSum(sphere, plane),
                      jg.Affine(plane, jnp.eye(3), jnp.zeros(3))):
        with pytest.raises(ValueError, match="HalfSpace inside"):
            jg.distance(sphere, pose, composite, pose)


def test_support_of_a_half_space_is_the_plane_along_its_normal_and_infinite_elsewhere():
    plane = jg.HalfSpace()
    np.testing.assert_array_equal(plane.support(jnp.array([0.0, 0, 2])), [0, 0, 0])
    np.testing.assert_array_equal(plane.support(jnp.zeros(3)), [0, 0, 0])
    assert np.all(np.isinf(plane.support(jnp.array([1.0, 0, 1]))[:1]))
    assert np.isinf(plane.support(jnp.array([0.0, 0, -1]))[2])
    hint = jnp.array([0.3, -0.2, 0.7])
    np.testing.assert_array_equal(plane.core_support_near(jnp.array([0.0, 0, 1]), hint), [0.3, -0.2, 0])


def test_support_points_of_the_references_agree_with_the_shapes():
    # The references read fields only; a quick cross-check of that reading on one shape per kind.
    rng = np.random.default_rng(3)
    for name, shape in _half_space_partners(rng).items():
        direction = rng.normal(size=3)
        local = np.asarray(shape.support(jnp.asarray(direction)))
        expected = support_point(shape, None, direction)
        assert abs(direction @ local - direction @ expected) < 1e-12, name
