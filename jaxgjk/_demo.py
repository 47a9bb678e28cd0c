"""The main job (`python -m jaxgjk`): a large random batch of mixed pairs, timed and checked."""

from __future__ import annotations

import argparse
import hashlib
import os
import pickle
import sys
import time

import jax
import jax.numpy as jnp
import jaxlib
import numpy as np

from ._packed import KINDS, pack
from ._pose import Pose
from ._queries import distance, intersect, signed_distance
from ._result import Status
from ._shapes import Box, Capsule, Cone, Cylinder, Ellipsoid, HalfSpace, Polytope, Sphere
from .reference import signed_distance_smooth

# The bounded kinds: the job's float64 reference measures pairs of bounded shapes.
KIND_NAMES = tuple(kind.__name__.lower() for kind in KINDS if kind is not HalfSpace)
QUERIES = {"signed_distance": signed_distance, "distance": distance, "intersect": intersect}


def random_shape(kind: str, rng: np.random.Generator, num_vertices: int):
    """A random primitive of `kind` with dimensions in [0.2, 1]."""
    def u(*shape):
        return rng.uniform(0.2, 1.0, size=shape)

    if kind == "polytope":
        points = rng.normal(size=(num_vertices, 3))
        points *= u(3) / np.linalg.norm(points, axis=1, keepdims=True)
        return Polytope(points)
    return {"sphere": lambda: Sphere(u()), "capsule": lambda: Capsule(u() / 2, u()),
            "box": lambda: Box(u(3)), "cylinder": lambda: Cylinder(u(), u()),
            "cone": lambda: Cone(u(), u()), "ellipsoid": lambda: Ellipsoid(u(3))}[kind]()


def random_pairs(num_pairs: int, kinds, dtype, seed: int = 0, num_vertices: int = 16):
    """Packed shapes and poses for `num_pairs` random pairs; B's centre is 0–2.5 units from A's."""
    rng = np.random.default_rng(seed)
    library = [random_shape(kind, rng, num_vertices) for kind in kinds for _ in range(32)]
    shapes = pack(library, dtype=dtype)
    index_a = rng.integers(len(library), size=num_pairs)
    index_b = rng.integers(len(library), size=num_pairs)

    def poses(offset):
        q = rng.normal(size=(num_pairs, 4))
        return Pose(jnp.asarray(offset, dtype), jnp.asarray(q / np.linalg.norm(q, axis=1,
                                                                                keepdims=True), dtype))

    direction = rng.normal(size=(num_pairs, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    centre = rng.uniform(-50, 50, size=(num_pairs, 3))  # away from the origin: exercises A's frame
    pose_a = poses(centre)
    pose_b = poses(centre + direction * rng.uniform(0, 2.5, size=(num_pairs, 1)))
    take = lambda index: jax.tree_util.tree_map(lambda leaf: leaf[index], shapes)  # noqa: E731
    return take(index_a), pose_a, take(index_b), pose_b


def reference_pair(host_inputs, index: int) -> tuple:
    """Pair `index` of a packed batch (shape_a, pose_a, shape_b, pose_b) held in NumPy arrays, as
    shapes of its own kinds and poses with float64 fields: what `jaxgjk.reference` reads (a float32
    run's inputs are measured exactly, in float64)."""
    def row_as_float64(leaf):
        leaf = leaf[index]
        return leaf.astype(np.float64) if np.issubdtype(leaf.dtype, np.floating) else leaf

    shape_a, pose_a, shape_b, pose_b = jax.tree_util.tree_map(row_as_float64, tuple(host_inputs))
    return shape_a.primitives()[int(shape_a.kind)], pose_a, shape_b.primitives()[int(shape_b.kind)], pose_b


def default_cache_dir() -> str:
    """Where the main job keeps compiled kernels: $XDG_CACHE_HOME/jaxgjk (default ~/.cache/jaxgjk)."""
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "jaxgjk")


def use_compilation_cache(directory: str) -> None:
    """Turn on JAX's persistent compilation cache in `directory`, for every compiled program (JAX's
    default skips those that compile in under a second)."""
    jax.config.update("jax_compilation_cache_dir", directory)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def _program_key(query: str, leaves, structure) -> str:
    """What the traced program depends on: the package's sources, JAX and the device, the query, the
    inputs' tree structure (a `Packed` batch's kinds are part of it) and their shapes and dtypes."""
    digest = hashlib.sha256()
    root = os.path.dirname(os.path.abspath(__file__))
    for folder, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            if name.endswith(".py"):
                with open(os.path.join(folder, name), "rb") as source:
                    digest.update(name.encode() + source.read())
    digest.update(repr((jax.__version__, jaxlib.__version__, jax.devices()[0].device_kind, query,
                        str(structure), [(leaf.shape, str(leaf.dtype)) for leaf in leaves])).encode())
    return digest.hexdigest()[:32]


def exported_program(function, inputs, cache_dir: str | None, name: str):
    """`function` (pytrees in, a pytree out) traced for the shapes of `inputs` (a tuple of pytrees) as a
    `jax.export.Exported` program on their leaves; returns (the program, its result's tree structure,
    how it was made). Call it as ``jax.jit(program.call)(*leaves)``.

    With `cache_dir`, the traced program is kept there (one file named after `name`, the package's
    sources and the inputs' structure, shapes and dtypes) and a later call, in this process or another,
    loads it instead of tracing; the same program compiles to the same key of JAX's persistent
    compilation cache, so its compiled code comes from there too. Without the optional `flatbuffers`
    package (what `jax.export` serialises with) nothing is kept."""
    from jax import export

    leaves, structure = jax.tree_util.tree_flatten(inputs)
    traced = {}

    def flat(*leaves):
        outputs, traced["structure"] = jax.tree_util.tree_flatten(
            function(*jax.tree_util.tree_unflatten(structure, leaves)))
        return outputs

    path = None
    if cache_dir is not None:
        path = os.path.join(cache_dir, f"{name}-{_program_key(name, leaves, structure)}.pickle")
        try:
            with open(path, "rb") as saved:
                result_structure, serialized = pickle.load(saved)
            return (export.deserialize(bytearray(serialized)), result_structure,
                    "traced program loaded from the cache")
        except (OSError, EOFError, ImportError, ValueError, pickle.UnpicklingError):
            pass
    program = export.export(jax.jit(flat))(*leaves)
    try:
        serialized = None if path is None else program.serialize()
    except ImportError:
        serialized = None
    if serialized is None:
        return program, traced["structure"], "traced"
    os.makedirs(cache_dir, exist_ok=True)
    partial = f"{path}.{os.getpid()}.partial"  # processes saving at once each write their own
    with open(partial, "wb") as saving:
        pickle.dump((traced["structure"], serialized), saving)
    os.replace(partial, path)
    return program, traced["structure"], "traced and saved to the cache"


def compiled_kernel(query: str, inputs, cache_dir: str | None):
    """`jit(vmap(query))` compiled for the shapes of `inputs` (a tuple of pytrees), taking their leaves
    and giving the result's leaves; returns (compiled, the result's tree structure, how it was made).

    With `cache_dir`, the traced program is kept there (`exported_program`, one file of ~0.4 MB) and a
    later run loads it instead of tracing (~1.5 s of the ~4 s a second run took to its first answer);
    the compiled code itself comes from JAX's persistent cache."""
    program, result_structure, how = exported_program(jax.vmap(QUERIES[query]), inputs, cache_dir,
                                                      f"main-job-{query}")
    return jax.jit(program.call).lower(*jax.tree_util.tree_leaves(inputs)).compile(), result_structure, how


def _progress(done: int, total: int, start: float) -> None:
    width = 30
    filled = width * done // total
    rate = done / max(time.perf_counter() - start, 1e-9)
    print(f"\r  [{'#' * filled}{'.' * (width - filled)}] {done}/{total} pairs, {rate:,.0f} pairs/s",
          end="", file=sys.stderr, flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jaxgjk",
        description="Evaluate a large random batch of mixed convex pairs with jit(vmap(query)), "
        "report throughput, and check a sample against the float64 reference (jaxgjk.reference).")
    parser.add_argument("--pairs", type=int, default=100_000, help="number of pairs (100000)")
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    parser.add_argument("--kinds", nargs="+", choices=KIND_NAMES, default=list(KIND_NAMES),
                        help="shape kinds to draw from (all)")
    # distance by default: EPA is slow on CPU; `--query signed_distance` runs it.
    parser.add_argument("--query", choices=tuple(QUERIES), default="distance")
    parser.add_argument("--chunk", type=int, default=32_768, help="pairs per compiled call")
    parser.add_argument("--check", type=int, default=200, help="pairs checked against float64")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache-dir", default=default_cache_dir(),
                        help="JAX's persistent compilation cache: a later run loads the compiled "
                        "kernels instead of compiling them (default: %(default)s)")
    parser.add_argument("--no-cache", action="store_true", help="compile without the persistent cache")
    args = parser.parse_args(argv)

    jax.config.update("jax_enable_x64", True)  # so that --dtype float64 is float64 (inputs set the dtype)
    if not args.no_cache:
        use_compilation_cache(args.cache_dir)
    dtype = np.dtype(args.dtype)
    print(f"jaxgjk main job: {args.pairs:,} random pairs of {', '.join(args.kinds)}; "
          f"query {args.query}; {args.dtype}; device {jax.devices()[0].device_kind} "
          f"({jax.default_backend()}, {jax.device_count()} device(s))")
    shape_a, pose_a, shape_b, pose_b = random_pairs(args.pairs, args.kinds, dtype, args.seed)
    chunk = min(args.chunk, args.pairs)

    def piece(tree, start):
        return jax.tree_util.tree_map(lambda leaf: leaf[start:start + chunk], tree)

    def padded(tree, start):  # the last chunk is padded to the compiled size by repeating pairs
        index = np.minimum(np.arange(start, start + chunk), args.pairs - 1)
        return jax.tree_util.tree_map(lambda leaf: leaf[index], tree)

    inputs = (shape_a, pose_a, shape_b, pose_b)
    started = time.perf_counter()
    cache_dir = None if args.no_cache else args.cache_dir
    compiled, result_structure, how = compiled_kernel(args.query, piece(inputs, 0), cache_dir)
    compile_seconds = time.perf_counter() - started
    jax.block_until_ready(compiled(*jax.tree_util.tree_leaves(piece(inputs, 0))))  # warm-up

    outputs = []
    started = time.perf_counter()
    for start in range(0, args.pairs, chunk):
        outputs.append(compiled(*jax.tree_util.tree_leaves(padded(inputs, start))))
        jax.block_until_ready(outputs[-1])
        _progress(min(start + chunk, args.pairs), args.pairs, started)
    seconds = time.perf_counter() - started
    print(file=sys.stderr)
    result = jax.tree_util.tree_unflatten(result_structure, [
        np.concatenate(leaves)[:args.pairs] for leaves in zip(*outputs, strict=True)])

    print(f"compile {compile_seconds:.2f} s ({how}); run {seconds:.3f} s; "
          f"throughput {args.pairs / seconds:,.0f} pairs/s")
    if args.query == "intersect":
        print(f"intersecting: {int(np.sum(result)):,} of {args.pairs:,}")
        values = result
    else:
        statuses = {Status(code).name: int(count) for code, count in
                    enumerate(np.bincount(result.status, minlength=len(Status))) if count}
        iterations = result.iterations
        print(f"status {statuses}; iterations mean {iterations.mean():.1f}, "
              f"p99 {np.percentile(iterations, 99):.0f}, max {iterations.max()}")
        values = result.distance

    sample = np.random.default_rng(args.seed + 1).choice(args.pairs, min(args.check, args.pairs),
                                                          replace=False)
    started = time.perf_counter()
    host_inputs = jax.tree_util.tree_map(np.asarray, inputs)
    reference = np.array([signed_distance_smooth(*reference_pair(host_inputs, int(index)))["distance"]
                          for index in sample])
    checked = f"check: {len(sample)} pairs vs the float64 reference (jaxgjk.reference, " \
              f"{time.perf_counter() - started:.1f} s)"
    if args.query == "intersect":
        decided = np.abs(reference) > 1e-4
        errors = (values[sample] != (reference <= 0)) & decided
        passed = not np.any(errors)
        print(f"{checked}, {int(np.sum(errors))} disagree")
    else:
        expected = reference if args.query == "signed_distance" else np.maximum(reference, 0)
        worst = float(np.max(np.abs(values[sample] - expected)))
        tolerance = 1e-3 if dtype == np.float32 else 1e-6  # shapes are 0.2–1 units in size
        passed = worst <= tolerance
        print(f"{checked}, worst |error| {worst:.2e} (tolerance {tolerance:.0e})")
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1
