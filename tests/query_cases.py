"""Random pairs of posed shapes with float64 reference signed distances, built once per session.

Kinds cover the seven primitives plus flat and needle-thin boxes, a flat polytope and a cube with many
coplanar points; sizes span 1e-3 to 1e3; some pairs sit far from the world origin.
"""

import contextlib
import functools
import os

import jax
import jax.numpy as jnp
import numpy as np

import jaxgjk as jg
from jaxgjk._demo import exported_program
from jaxgjk.reference import signed_distance_polytopes, signed_distance_smooth

from .conftest import CACHE_VARIABLE
from .shape_samples import PRIMITIVE_KINDS, random_polytope_vertices, random_rotation, random_shape

try:
    import fcntl
except ImportError:  # not POSIX: no lock, at worst two workers compile the same program
    fcntl = None

POLYHEDRAL = ("sphere", "capsule", "box", "polytope", "flat_box", "needle_box", "flat_polytope",
              "coplanar_cube")
CURVED = ("cylinder", "cone", "ellipsoid")


def _coplanar_cube(size):
    grid = np.linspace(-1, 1, 4)
    points = np.array([[x, y, z] for x in grid for y in grid for z in grid])
    on_surface = np.max(np.abs(points), axis=1) == 1
    return jg.Polytope(jnp.asarray(points[on_surface] * size))  # 56 points, 8 of them vertices


def three_queries(*pair):
    """`signed_distance`, `distance` and `intersect` of one pair (default config). Under one `jit` the
    three compile as one program, in about half the time of three."""
    return jg.signed_distance(*pair), jg.distance(*pair), jg.intersect(*pair)


def make_shape(kind, rng, size):
    if kind == "flat_box":
        return jg.Box(jnp.asarray(size * np.array([1.0, 0.7, 1e-4])))
    if kind == "needle_box":
        return jg.Box(jnp.asarray(size * np.array([1e-4, 1e-4, 1.0])))
    if kind == "flat_polytope":
        return jg.Polytope(jnp.asarray(random_polytope_vertices(rng, 10, size, flat=True)))
    if kind == "coplanar_cube":
        return _coplanar_cube(0.7 * size)
    return random_shape(kind, rng, size)


def is_polyhedral(kind):
    return kind in POLYHEDRAL


def reference(shape_a, pose_a, shape_b, pose_b, kinds):
    if all(is_polyhedral(k) for k in kinds):
        return signed_distance_polytopes(shape_a, pose_a, shape_b, pose_b)
    return signed_distance_smooth(shape_a, pose_a, shape_b, pose_b)


def float32_exact(tree):
    """`tree` with every float leaf rounded to a float32 value (held in float64), so that the float32
    and float64 runs and the reference all see the same inputs."""
    def round_leaf(leaf):
        leaf = np.asarray(leaf)
        return jnp.asarray(leaf.astype(np.float32).astype(np.float64)) if leaf.dtype.kind == "f" \
            else jnp.asarray(leaf)

    return jax.tree_util.tree_map(round_leaf, tree)


def _pose(rng, translation):
    return float32_exact(jg.Pose(jnp.asarray(translation), jnp.asarray(random_rotation(rng))))


@functools.cache
def pairs(mode, per_kind_pair, seed):
    """Cases for every unordered pair of kinds: mode 'separated', 'touching' (gap 1e-6·size) or
    'penetrating'. Returns a list of dicts (shape_a, pose_a, shape_b, pose_b, kinds, size, ref)."""
    rng = np.random.default_rng(seed)
    kinds = list(PRIMITIVE_KINDS) + ["flat_box", "needle_box", "flat_polytope", "coplanar_cube"]
    kind_pairs = [(a, b) for i, a in enumerate(kinds) for b in kinds[i:]
                  if not (a in POLYHEDRAL[4:] and b in POLYHEDRAL[4:])]
    cases = []
    for kind_a, kind_b in kind_pairs:
        accepted = 0
        for _ in range(4 * per_kind_pair):
            if accepted == per_kind_pair:
                break
            size = 10.0 ** rng.choice([-3, 0, 0, 3])
            far = mode != "touching" and rng.uniform() < 0.25
            shape_a = float32_exact(make_shape(kind_a, rng, size))
            shape_b = float32_exact(make_shape(kind_b, rng, size))
            origin = rng.normal(size=3) * size * (100 if far else 1)
            pose_a = _pose(rng, origin)
            direction = rng.normal(size=3)
            direction /= np.linalg.norm(direction)
            reach = 2.0 if mode != "penetrating" else rng.uniform(0.0, 0.8)
            spread = rng.uniform(1.0, 1.6) if mode != "penetrating" else 1.0
            pose_b = _pose(rng, origin + direction * size * reach * spread)
            ref = reference(shape_a, pose_a, shape_b, pose_b, (kind_a, kind_b))
            if mode == "touching" and ref["distance"] > 0:
                shift = (1e-6 * size - ref["distance"]) * ref["normal"]
                pose_b = float32_exact(jg.Pose(pose_b.translation + shift, pose_b.rotation))
                ref = reference(shape_a, pose_a, shape_b, pose_b, (kind_a, kind_b))
            wanted = {"separated": ref["distance"] > 1e-3 * size, "touching": ref["distance"] > 0,
                      "penetrating": ref["distance"] < -1e-3 * size}[mode]
            if wanted:
                accepted += 1
                cases.append(dict(shape_a=shape_a, pose_a=pose_a, shape_b=shape_b, pose_b=pose_b,
                                  kinds=(kind_a, kind_b), size=size, ref=ref))
    return cases


CHUNK = 256  # pairs per call of `_queries`
NUM_VERTICES = 64  # every batch's padded vertex count (the largest polytope of the cases: 56)
_FILLER = dict(shape_a=jg.Sphere(1.0), pose_a=jg.Pose.from_translation(np.zeros(3)),
               shape_b=jg.Sphere(1.0), pose_b=jg.Pose.from_translation(np.array([3.0, 0.0, 0.0])))
_PROGRAMS = {}  # dtype name → (the compiled `three_queries` batch program, its result's structure)


@contextlib.contextmanager
def _one_process_at_a_time(name):
    """Held by one process of the run at a time: an exclusive lock on the file `name` in the run's cache
    directory (no lock without that directory, or without `fcntl`)."""
    directory = os.environ.get(CACHE_VARIABLE)
    if directory is None or fcntl is None:
        yield
        return
    with open(os.path.join(directory, f"{name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _queries(inputs):
    """`jit(vmap(three_queries))` for batches like `inputs`, traced and compiled once per run: the traced
    program is kept in the run's cache directory (conftest.py) and the modules after the first load it
    there, as they load its compiled code from the run's persistent compilation cache (tracing it took
    10-13 s per module and dtype). A process's first call holds a lock until the program is compiled,
    so that two workers needing it at once do not both compile it (a minute each, side by side): the
    second waits, then loads it."""
    dtype = np.dtype(inputs[1].translation.dtype).name
    leaves = jax.tree_util.tree_leaves(inputs)
    if dtype not in _PROGRAMS:
        with _one_process_at_a_time(f"three-queries-{dtype}"):
            program, structure, _ = exported_program(jax.vmap(three_queries), inputs,
                                                     os.environ.get(CACHE_VARIABLE), "three-queries")
            _PROGRAMS[dtype] = jax.jit(program.call).lower(*leaves).compile(), structure
    compiled, structure = _PROGRAMS[dtype]
    return jax.tree_util.tree_unflatten(structure, compiled(*leaves))


def run_three_queries(cases, dtype):
    """`three_queries` on every case (dicts with shape_a, pose_a, shape_b, pose_b): the signed distance,
    distance and intersect results as NumPy arrays (leading axis: cases).

    The cases run as `Packed` batches of every kind (`Packed.KINDS`, `NUM_VERTICES`) of `CHUNK` pairs,
    the last one padded with a separated pair of spheres, so that one program per dtype serves every
    test module that calls this, traced and compiled once per run (`_queries`): the general path's
    program takes a minute to compile."""
    padded = list(cases) + [_FILLER] * (-len(cases) % CHUNK)
    outputs = []
    for start in range(0, len(padded), CHUNK):
        chunk = padded[start:start + CHUNK]

        def shapes(key, chunk=chunk):
            return jg.pack([c[key] for c in chunk], num_vertices=NUM_VERTICES, dtype=dtype,
                           kinds=jg.Packed.KINDS)

        def poses(key, chunk=chunk):
            return jax.tree_util.tree_map(
                lambda *leaves: jnp.asarray(np.stack([np.asarray(leaf, np.float64) for leaf in leaves]),
                                            dtype), *[c[key] for c in chunk])

        outputs.append(jax.device_get(_queries((shapes("shape_a"), poses("pose_a"), shapes("shape_b"),
                                                poses("pose_b")))))
    joined = jax.tree_util.tree_map(lambda *leaves: np.concatenate(leaves), *outputs)
    return jax.tree_util.tree_map(lambda leaf: leaf[:len(cases)], joined)


def tolerance(case, dtype):
    """Allowed |error|: float64 1e-8·size (polyhedral pairs) or 1e-6·size (curved); float32 1e-4·size."""
    if dtype == np.float32:
        return 1e-4 * case["size"]
    return (1e-8 if all(is_polyhedral(k) for k in case["kinds"]) else 1e-6) * case["size"]
