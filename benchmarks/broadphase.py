"""Scenes: the broadphase (`candidate_pairs`) and the scene call (`nearby_pairs`) on two scenes, float32.

1. N mixed objects (all seven primitive kinds, every size parameter in [0.1, 0.5]: unit-size shapes)
   uniformly in a 20×20×20 box, margin 0.1: the broadphase alone, end to end (`nearby_pairs` with
   `jg.distance`), and the dense all-pairs `jg.distance` (`jg.pairs` over every pair i < j; measured on
   a random sample of the pairs and extrapolated). Checked against float64 brute force: float64 bounds
   of every object, the bounds test over all N(N-1)/2 pairs (NumPy), float64 `jg.distance` on the pairs
   it keeps; every pair that float64 puts within the margin must come out of the float32 call.
2. E environments of one 10-link capsule arm (random joint angles) and 20 obstacles (boxes, spheres,
   cylinders, ellipsoids, capsules at random places), margin 0.1: robot–obstacle pairs and non-adjacent
   link pairs (236 per environment), `nearby_pairs` vmapped over the environments, against MuJoCo's C
   collision pipeline (`mj_kinematics` + `mj_collision`, geoms with margin 0.1, the same pairs through
   contype/conaffinity and excludes) in a Python loop over the environments.

    python -m benchmarks.broadphase [--objects 10000] [--environments 4096] [--repeats 3]
        [--grouped] [--out benchmarks/results/broadphase.md]
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxgjk as jg
from jaxgjk._broadphase import pairs_from_bounds

MARGIN = 0.1
# Pairs per call of the dense all-pairs query: a vmapped GJK loop runs as long as its slowest lane, so
# chunks of a few thousand pairs beat one large batch on a CPU (23.6 k pairs/s in one chunk of 65 536,
# 60 k in chunks of 8 192, measured apart on a loaded machine).
DENSE_CHUNK = 8192
ROBOT_LINKS, OBSTACLES = 10, 20


def timed(call, repeats):
    """(first call s, best wall s, process CPU s of that best run, last output) of `call()`."""
    started = time.perf_counter()
    output = jax.block_until_ready(call())
    first = time.perf_counter() - started
    best, best_cpu = np.inf, np.inf
    for _ in range(repeats):
        started, cpu = time.perf_counter(), time.process_time()
        output = jax.block_until_ready(call())
        wall = time.perf_counter() - started
        if wall < best:
            best, best_cpu = wall, time.process_time() - cpu
    return first, best, best_cpu, output


def random_primitive(kind, rng):
    def u(*shape):
        return rng.uniform(0.1, 0.5, size=shape)

    if kind == "polytope":
        points = rng.normal(size=(16, 3))
        return jg.Polytope(points / np.linalg.norm(points, axis=1, keepdims=True) * u(3))
    return {"sphere": lambda: jg.Sphere(u()), "capsule": lambda: jg.Capsule(u() / 2, u()),
            "box": lambda: jg.Box(u(3)), "cylinder": lambda: jg.Cylinder(u(), u()),
            "cone": lambda: jg.Cone(u(), u()), "ellipsoid": lambda: jg.Ellipsoid(u(3))}[kind]()


def mixed_scene(count, side, rng):
    """`count` packed float32 shapes drawn from a library of 7 kinds × 64, uniform poses in [0, side]³."""
    kinds = ("sphere", "capsule", "box", "cylinder", "cone", "ellipsoid", "polytope")
    library = jg.pack([random_primitive(kind, rng) for kind in kinds for _ in range(64)], dtype=np.float32)
    pick = rng.integers(7 * 64, size=count)
    shapes = jax.tree_util.tree_map(lambda leaf: leaf[pick], library)
    poses = jg.Pose(jnp.asarray(rng.uniform(0, side, (count, 3)), jnp.float32),
                    jnp.asarray(rng.normal(size=(count, 4)), jnp.float32))
    return shapes, poses


def as_float64(tree):
    def cast(leaf):
        return jnp.asarray(leaf, jnp.float64) if jnp.issubdtype(leaf.dtype, jnp.floating) else leaf

    return jax.tree_util.tree_map(cast, tree)


def slots_for(count, step=1024):
    """A capacity for `count` candidates: the next multiple of `step` (what a caller who knows its
    scenes would pass; `retry_on_overflow` rounds up to a power of two instead)."""
    return max(step, -(-int(count) // step) * step)


def brute_force_bound_pairs(lower, upper, margin, rows=256):
    """All pairs i < j whose float64 bounds are within `margin` (NumPy, row blocks)."""
    found_a, found_b = [], []
    for start in range(0, len(lower), rows):
        block = slice(start, start + rows)
        gaps = np.max(np.maximum(lower[None] - upper[block, None], lower[block, None] - upper[None]), axis=-1)
        rows_index, columns = np.nonzero(gaps <= margin)
        keep = columns > rows_index + start
        found_a.append(rows_index[keep] + start)
        found_b.append(columns[keep])
    return np.concatenate(found_a), np.concatenate(found_b)


def pair_keys(index_a, index_b, count):
    return np.asarray(index_a, np.int64) * count + np.asarray(index_b, np.int64)


def many_objects(args, rng, lines):
    count = args.objects
    shapes, poses = mixed_scene(count, 20.0, rng)
    broadphase = jax.jit(lambda s, p, capacity: jg.candidate_pairs(s, p, margin=MARGIN, capacity=capacity),
                         static_argnames="capacity")
    capacity = slots_for(jg.retry_on_overflow(broadphase, shapes, poses, capacity=4096).count)
    compile_b, broad_s, broad_cpu, candidates = timed(lambda: broadphase(shapes, poses, capacity=capacity),
                                                      args.repeats)
    # The broadphase proper on given bounds: the grid's columns (the default) against a plain sweep.
    bounds = jax.jit(jax.vmap(jg.aabb))(shapes, poses)
    sweeps = {}
    for name, cell_size in (("columns (default)", None), ("one column (plain sort and sweep)", np.inf)):
        sweep = jax.jit(lambda lower, upper, cell_size=cell_size: pairs_from_bounds(
            lower, upper, margin=MARGIN, capacity=capacity, cell_size=cell_size))
        sweeps[name] = timed(lambda sweep=sweep: sweep(*bounds), args.repeats)[1:3]
    scene = jax.jit(lambda s, p: jg.nearby_pairs(jg.distance, s, p, margin=MARGIN, capacity=capacity))
    compile_e, end_s, end_cpu, found = timed(lambda: scene(shapes, poses), args.repeats)
    assert not found.overflow
    stored = int(found.count)
    index_a, index_b = np.asarray(found.index_a[:stored]), np.asarray(found.index_b[:stored])
    distances = np.asarray(found.result.distance[:stored])
    near32 = distances <= MARGIN

    # Dense all pairs: jg.pairs on a uniform sample of the pairs i < j, extrapolated.
    all_pairs = count * (count - 1) // 2
    sample = min(args.dense_sample, all_pairs)
    a = rng.integers(count, size=4 * sample)
    b = rng.integers(count, size=4 * sample)
    a, b = np.minimum(a, b)[a != b][:sample], np.maximum(a, b)[a != b][:sample]
    compile_d, dense_s, dense_cpu, _ = timed(
        lambda: jg.pairs(jg.distance, shapes, poses, a, b, chunk_size=DENSE_CHUNK).distance, args.repeats)
    dense_total = dense_s * all_pairs / sample

    # Float64 brute force: exact bounds, the bounds test over all pairs, float64 distances on those.
    started = time.perf_counter()
    shapes64, poses64 = as_float64(shapes), as_float64(poses)
    lower, upper = (np.asarray(bound) for bound in jax.jit(jax.vmap(jg.aabb))(shapes64, poses64))
    ref_a, ref_b = brute_force_bound_pairs(lower, upper, MARGIN)
    exact = np.asarray(jg.pairs(jg.distance, shapes64, poses64, ref_a, ref_b, chunk_size=32768).distance)
    check_s = time.perf_counter() - started
    within64 = exact <= MARGIN
    broad_keys = set(pair_keys(candidates.index_a[:int(candidates.count)],
                               candidates.index_b[:int(candidates.count)], count).tolist())
    missed_by_broadphase = len(set(pair_keys(ref_a, ref_b, count).tolist()) - broad_keys)
    found_keys = set(pair_keys(index_a[near32], index_b[near32], count).tolist())
    reference_keys = pair_keys(ref_a[within64], ref_b[within64], count)
    missing = np.array([key not in found_keys for key in reference_keys.tolist()], bool)
    # float32 GJK decides pairs to ~1e-6·size; pairs that close to the margin may go either way.
    borderline = np.abs(exact[within64] - MARGIN) <= 1e-5
    position = {key: k for k, key in enumerate(pair_keys(index_a, index_b, count).tolist())}
    both = [(position[key], k) for k, key in enumerate(reference_keys.tolist()) if key in position]
    worst = max(abs(float(distances[i]) - float(exact[within64][k])) for i, k in both) if both else 0.0

    lines += [
        f"## {count:,} mixed objects in a 20×20×20 box, margin {MARGIN}", "",
        f"| stage | time (best of {args.repeats}) | CPU time | compile |",
        "| --- | ---: | ---: | ---: |",
        f"| broadphase alone (`candidate_pairs`, capacity {capacity:,}) | {broad_s * 1e3:.1f} ms | "
        f"{broad_cpu * 1e3:.1f} ms | {compile_b:.1f} s |",
        *(f"| … on given bounds, {name} | {wall * 1e3:.1f} ms | {cpu * 1e3:.1f} ms | |"
          for name, (wall, cpu) in sweeps.items()),
        f"| end to end (`nearby_pairs(jg.distance, ...)`) | {end_s * 1e3:.1f} ms | {end_cpu * 1e3:.1f} ms | "
        f"{compile_e:.1f} s |",
        f"| dense all-pairs `jg.distance` ({all_pairs:,} pairs; {sample:,} sampled, extrapolated) | "
        f"{dense_total:.1f} s | {dense_cpu * all_pairs / sample:.1f} s | {compile_d:.1f} s |", "",
        f"- end to end vs dense: **{dense_total / end_s:,.0f}×** faster; broadphase share of end to end: "
        f"**{100 * broad_s / end_s:.1f}%**.",
        f"- dense rate {sample / dense_s:,.0f} pairs/s ({sample:,} uniformly sampled pairs i < j through "
        f"`jg.pairs` in chunks of {DENSE_CHUNK:,}, one packed kernel); end-to-end rate over the candidates "
        f"{stored / end_s:,.0f} pairs/s (capacity {capacity:,} lanes, padding included).",
        f"- candidates {stored:,} (bounds within the margin), pairs within the margin {int(near32.sum()):,}.",
        f"- check against float64 brute force ({check_s:.0f} s): {len(ref_a):,} pairs have float64 bounds "
        f"within the margin, {missed_by_broadphase} of them missing from the float32 broadphase; "
        f"{int(within64.sum()):,} are within the margin by float64 `jg.distance`, "
        f"{int(missing.sum())} of them not reported within it by the float32 call "
        f"({int((missing & borderline).sum())} within 1e-5 of the margin); largest |float32 − float64| "
        f"distance over those pairs {worst:.1e}.", ""]
    if args.grouped:
        # The candidates through jg.pairs outside jit (no bound): one packed kernel, or one per kind pair.
        lines += ["| the candidates through `jg.pairs(jg.distance, ...)` (no bound) | time | CPU time | "
                  "compile |", "| --- | ---: | ---: | ---: |"]
        for grouped in (False, True):
            first, wall, cpu, _ = timed(lambda grouped=grouped: jg.pairs(
                jg.distance, shapes, poses, index_a, index_b, group_by_kind=grouped).distance, args.repeats)
            name = "grouped by kind (a kernel per kind pair)" if grouped else "one packed kernel"
            lines.append(f"| {name} | {wall * 1e3:.1f} ms | {cpu * 1e3:.1f} ms | {first - wall:.1f} s |")
        lines.append("")
    return missed_by_broadphase == 0 and not np.any(missing & ~borderline)


# ------------------------------------------------------------------------------------------------
# Environments: a robot among obstacles
# ------------------------------------------------------------------------------------------------

LINK_LENGTH, LINK_RADIUS = 0.3, 0.05
OBSTACLE_KINDS = ("box", "sphere", "cylinder", "ellipsoid", "capsule")


def rotation_about(axis, angles):
    """(E, 3, 3) rotations by `angles` (E,) about coordinate axis `axis`."""
    c, s = np.cos(angles), np.sin(angles)
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    matrices = np.tile(np.eye(3), (len(angles), 1, 1))
    matrices[:, i, i], matrices[:, i, j], matrices[:, j, i], matrices[:, j, j] = c, -s, s, c
    return matrices


def quaternions(matrices):
    return np.asarray(jg.Pose.from_rotation_matrix(jnp.asarray(matrices)).rotation)


def robot_scenes(environments, rng):
    """Shapes (packed, shared) and poses (E, 30) of the arm's links and the obstacles, MuJoCo sizes."""
    rotation = np.tile(np.eye(3), (environments, 1, 1))
    joint = np.zeros((environments, 3))
    centres, rotations = [], []
    for link in range(ROBOT_LINKS):
        rotation = rotation @ rotation_about(2 if link % 2 == 0 else 1, rng.uniform(-1.2, 1.2, environments))
        centres.append(joint + rotation[:, :, 2] * LINK_LENGTH / 2)
        rotations.append(rotation)
        joint = joint + rotation[:, :, 2] * LINK_LENGTH
    obstacles, sizes = [], []
    for index in range(OBSTACLES):
        kind = OBSTACLE_KINDS[index % len(OBSTACLE_KINDS)]
        u = rng.uniform(0.05, 0.2, 3)
        shape, size = {"box": (jg.Box(u), u), "sphere": (jg.Sphere(u[0]), u[:1]),
                       "cylinder": (jg.Cylinder(u[0], u[1]), u[:2]), "ellipsoid": (jg.Ellipsoid(u), u),
                       "capsule": (jg.Capsule(u[0], u[1]), u[:2])}[kind]
        obstacles.append(shape)
        sizes.append((kind, size))
    links = [jg.Capsule(LINK_RADIUS, LINK_LENGTH / 2 - LINK_RADIUS)] * ROBOT_LINKS
    shapes = jg.pack(links + obstacles, dtype=np.float32)
    obstacle_centres = rng.uniform(-1.2, 1.2, (environments, OBSTACLES, 3)) + [0, 0, 0.8]
    obstacle_rotations = rng.normal(size=(environments, OBSTACLES, 4))
    obstacle_rotations /= np.linalg.norm(obstacle_rotations, axis=-1, keepdims=True)
    link_rotations = quaternions(np.stack(rotations, axis=1))
    translations = np.concatenate([np.stack(centres, axis=1), obstacle_centres], axis=1)
    rotations = np.concatenate([link_rotations, obstacle_rotations], axis=1)
    return shapes, sizes, translations, rotations


def allowed_pairs():
    """(30, 30) bool: non-adjacent link pairs and link–obstacle pairs (not obstacle–obstacle)."""
    count = ROBOT_LINKS + OBSTACLES
    allowed = np.zeros((count, count), bool)
    allowed[:ROBOT_LINKS, :] = True
    allowed[:, :ROBOT_LINKS] = True
    allowed[np.arange(count), np.arange(count)] = False
    for link in range(ROBOT_LINKS - 1):
        allowed[link, link + 1] = allowed[link + 1, link] = False
    return allowed


def mujoco_model(sizes):
    import mujoco

    bodies = [f'<body name="link{i}"><freejoint/><geom type="capsule" size="{LINK_RADIUS} '
              f'{LINK_LENGTH / 2 - LINK_RADIUS}" contype="1" conaffinity="1" margin="{MARGIN}"/></body>'
              for i in range(ROBOT_LINKS)]
    bodies += [f'<body name="obstacle{i}"><freejoint/><geom type="{kind}" size="{" ".join(map(str, size))}" '
               f'contype="2" conaffinity="1" margin="{MARGIN}"/></body>'
               for i, (kind, size) in enumerate(sizes)]
    excludes = [f'<exclude body1="link{i}" body2="link{i + 1}"/>' for i in range(ROBOT_LINKS - 1)]
    xml = (f"<mujoco><worldbody>{''.join(bodies)}</worldbody><contact>{''.join(excludes)}</contact>"
           "</mujoco>")
    return mujoco.MjModel.from_xml_string(xml)


def mujoco_pairs(data):
    """Geom pairs (i < j) with a contact within the margin."""
    geoms = np.sort(np.asarray(data.contact.geom[:data.ncon]), axis=1)
    return {(int(a), int(b)) for (a, b), dist in zip(geoms, data.contact.dist[:data.ncon], strict=True)
            if dist <= MARGIN}


def environments_scene(args, rng, lines):
    environments = args.environments
    shapes, sizes, translations, rotations = robot_scenes(environments, rng)
    allowed = allowed_pairs()
    per_environment = int(np.triu(allowed, 1).sum())
    poses = jg.Pose(jnp.asarray(translations, jnp.float32), jnp.asarray(rotations, jnp.float32))

    @jax.jit
    def count_only(poses):
        return jax.vmap(lambda pose: jg.candidate_pairs(shapes, pose, margin=MARGIN, capacity=1,
                                                        allowed=allowed).count)(poses)

    counts = np.asarray(count_only(poses))
    pool = slots_for(counts.sum())
    batched = jax.jit(lambda poses: jg.nearby_pairs_batched(jg.distance, shapes, poses, margin=MARGIN,
                                                            capacity=pool, allowed=allowed))
    compile_s, wall, cpu, found = timed(lambda: batched(poses), args.repeats)
    assert not found.overflow
    # For comparison: jax.vmap over the scenes, each with the capacity of the busiest.
    capacity = 1 << int(max(counts.max(), 1) - 1).bit_length()
    mapped = jax.jit(jax.vmap(lambda pose: jg.nearby_pairs(jg.distance, shapes, pose, margin=MARGIN,
                                                           capacity=capacity, allowed=allowed)))
    compile_v, wall_v, cpu_v, found_v = timed(lambda: mapped(poses), args.repeats)
    assert not np.any(found_v.overflow)
    stored = int(found.count)
    near = np.asarray(found.result.distance[:stored]) <= MARGIN
    scene_of, pair_a, pair_b = (np.asarray(index[:stored])[near] for index in
                                (found.scene, found.index_a, found.index_b))

    import mujoco

    model = mujoco_model(sizes)
    data = mujoco.MjData(model)
    qpos = np.concatenate([translations, rotations], axis=-1).reshape(environments, -1)
    data.qpos[:] = qpos[0]
    mujoco.mj_kinematics(model, data)
    assert np.allclose(data.geom_xpos, translations[0]), "MuJoCo placed the geoms elsewhere"

    def loop(collide):
        started, cpu_started = time.perf_counter(), time.process_time()
        for environment in range(environments):
            data.qpos[:] = qpos[environment]
            mujoco.mj_kinematics(model, data)
            if collide:
                mujoco.mj_collision(model, data)
        return time.perf_counter() - started, time.process_time() - cpu_started

    kinematics_s = min(loop(False)[0] for _ in range(args.repeats))
    mujoco_s, mujoco_cpu = min(loop(True) for _ in range(args.repeats))
    empty = mujoco.MjModel.from_xml_string("<mujoco/>")
    empty_data = mujoco.MjData(empty)
    started = time.perf_counter()
    for _ in range(environments):
        mujoco.mj_collision(empty, empty_data)
    call_overhead = (time.perf_counter() - started) / environments
    collision_s = mujoco_s - kinematics_s
    # Agreement: the pairs within the margin per environment, MuJoCo's against ours.
    agree, ours_only, theirs_only = 0, 0, 0
    for environment in range(environments):
        data.qpos[:] = qpos[environment]
        mujoco.mj_kinematics(model, data)
        mujoco.mj_collision(model, data)
        theirs = mujoco_pairs(data)
        keep = scene_of == environment
        ours = set(zip(pair_a[keep].tolist(), pair_b[keep].tolist(), strict=True))
        agree += len(ours & theirs)
        ours_only += len(ours - theirs)
        theirs_only += len(theirs - ours)
    total_pairs = environments * per_environment

    def row(name, wall, cpu):
        cpu = "" if cpu is None else f"{cpu * 1e3:.1f} ms"
        return (f"| {name} | {wall * 1e3:.1f} ms | {cpu} | {environments / wall:,.0f} | "
                f"{total_pairs / wall:,.0f} |")

    lines += [
        f"## {environments:,} environments × (a {ROBOT_LINKS}-link capsule arm + {OBSTACLES} obstacles), "
        f"margin {MARGIN}", "",
        f"{per_environment} pairs per environment (non-adjacent links, links × obstacles); candidates per "
        f"environment: mean {counts.mean():.1f}, max {counts.max()}, {counts.sum():,} in all; within the "
        f"margin: {int(near.sum()):,} in all.", "",
        "| pipeline | time | CPU time | environments/s | pairs/s |",
        "| --- | ---: | ---: | ---: | ---: |",
        row(f"jaxgjk `nearby_pairs_batched(jg.distance, ...)`, float32, {pool:,} slots (compile "
            f"{compile_s:.1f} s)", wall, cpu),
        row(f"jaxgjk `vmap(nearby_pairs(jg.distance, ...))`, float32, {capacity} slots per environment "
            f"(compile {compile_v:.1f} s)", wall_v, cpu_v),
        row("MuJoCo C `mj_kinematics` + `mj_collision`, float64, Python loop", mujoco_s, mujoco_cpu),
        row("MuJoCo C `mj_collision` alone (the loop minus a loop without it)", collision_s, None), "",
        f"- pairs/s counts the {per_environment} pairs of each environment that either pipeline considers.",
        f"- Python overhead of one binding call (`mj_collision` on an empty model): "
        f"{call_overhead * 1e6:.2f} µs ({call_overhead * environments * 1e3:.1f} ms per {environments:,} "
        "calls); the kinematics loop "
        f"(copying qpos, `mj_kinematics`) took {kinematics_s * 1e3:.1f} ms.",
        f"- agreement on the pairs within the margin: {agree:,} both, {ours_only} jaxgjk only, "
        f"{theirs_only} MuJoCo only (MuJoCo keeps a contact when its distance is below the margin; its "
        "box, cylinder and ellipsoid colliders are its own).", ""]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--environments", type=int, default=4096)
    parser.add_argument("--dense-sample", type=int, default=65_536)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--grouped", action="store_true",
                        help="also time the candidates through jg.pairs with group_by_kind (28 compiles)")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "broadphase.md"))
    args = parser.parse_args()
    jax.config.update("jax_enable_x64", True)  # for the float64 check; the scenes are float32
    rng = np.random.default_rng(args.seed)
    command = (f"python -m benchmarks.broadphase --objects {args.objects} --environments "
               f"{args.environments} --dense-sample {args.dense_sample} --repeats {args.repeats}"
               + " --grouped" * args.grouped)
    lines = [f"# Scenes and broadphase\n\nCommand: `{command}`\n\nDevice: {jax.devices()[0].device_kind}, "
             f"{os.cpu_count()} cores; load average at start {os.getloadavg()[0]:.1f}.", ""]
    passed = many_objects(args, rng, lines)
    print("\n".join(lines), flush=True)
    if args.environments:
        environments_scene(args, rng, lines)
    lines.append(f"Load average at end {os.getloadavg()[0]:.1f}. Check: {'PASS' if passed else 'FAIL'}.")
    with open(args.out, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
