"""Gradients of `distance` and `signed_distance` (issue #4): a NaN/inf sweep and the cost of value_and_grad.

**Sweep.** For every unordered pair of primitive kinds (sphere, capsule, box, cylinder, cone, ellipsoid,
polytope: random hulls of up to 16 masked vertices), `--poses` float32 poses (default 100 000), run as
`jit(vmap(value_and_grad))` in chunks of `--chunk`: the gradient of `signed_distance(...).distance` and
of `distance(...).distance` with respect to both poses and every float shape field (radii, half lengths,
half extents, vertices; masks are bool and not differentiated), counting the poses with any NaN or ±inf
gradient entry and those whose distance itself is NaN or ±inf. The poses mix these categories (A is always
the first kind):

- `random`: sizes ~U(0.25, 1)·s with s in {0.01, 1, 1, 1, 100}, B's centre at U(0, 3)·s from A's in a
  random direction (separated and penetrating), random rotations given as non-unit quaternions
  (norm U(0.5, 2)) throughout;
- `deep`: B's centre within 0.2·s of A's (deep overlap);
- `touching`: `random` poses with B moved by -distance along the normal of a first float32
  signed-distance query, twice (signed distance ~1e-7·s);
- `stacked`: shapes of dyadic sizes (multiples of 1/16, exact in float32), B on top of A along a shared
  z axis (half of them also shifted sideways by up to 1/4), gaps 0, 0, 2^-20 and -1/8, unrotated (exact
  touching) or rotated together: face–face contact where both kinds have a flat face (boxes, cylinders,
  cones, polytopes with flat caps);
- `coincident`: the same pose for A and B, and for a same-kind pair the same shape too;
- `zero size`: A, B or both with some or all sizes zero (radius 0, half extents 0, a polytope in one
  point), at `random` poses or the same pose;
- `degenerate polytope` (pairs with a polytope): vertices coplanar, collinear, all coincident,
  duplicated, 1e-6-sized, or only one or two unmasked rows.

**Cost.** On the pairs of `cases.make_case` (every spec of `cases.all_case_specs()`: box-box,
capsule-box, sphere-box, ellipsoid-ellipsoid, cylinder-box, polytope-polytope with 8/32/128/512
vertices), separated and penetrating batches of `--batch` pairs each, plus `--cost-extra` kind pairs
from the sweep's `random` category (split into separated and penetrating by the sign of the signed
distance), float32: the best of `--repeats` interleaved runs (after a warm-up, `block_until_ready`,
compile timed apart) of `jit(vmap(query))(...).distance` against `jax.value_and_grad` of the summed
batch distance with respect to (pose_a, pose_b), and to poses and every shape field, for `distance` and
for `signed_distance`. The issue's target: value_and_grad ≤ 1.5 × the query.

Writes `results/<tag>.md` (the tables, also printed) and `results/<tag>.json` (the numbers); the inputs
of any bad pose go to `results/raw/<tag>/<pair>_<query>_nonfinite.npz` (gitignored).

    python -m benchmarks.gradients                        # full size
    python -m benchmarks.gradients --poses 2000 --batch 512 --repeats 3 --tag gradients-quick
    python -m benchmarks.gradients --skip-cost --pairs box-box,cone-polytope
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxgjk as jg

from . import cases as C
from . import report
from . import run as R
from .hill_climb import best_times

KINDS = ("sphere", "capsule", "box", "cylinder", "cone", "ellipsoid", "polytope")
PAIRS = [f"{a}-{b}" for i, a in enumerate(KINDS) for b in KINDS[i:]]
CLASSES = {"sphere": jg.Sphere, "capsule": jg.Capsule, "box": jg.Box, "cylinder": jg.Cylinder,
           "cone": jg.Cone, "ellipsoid": jg.Ellipsoid, "polytope": jg.Polytope}
# Size fields of each kind with their trailing shapes (polytopes: vertices and mask, handled apart).
SIZE_FIELDS = {"sphere": {"radius": ()}, "capsule": {"radius": (), "half_length": ()},
               "box": {"half_extents": (3,)}, "cylinder": {"radius": (), "half_length": ()},
               "cone": {"radius": (), "half_height": ()}, "ellipsoid": {"radii": (3,)}}
NUM_VERTICES = 16
# Share of each category in a pair's poses (renormalised over the categories that apply).
CATEGORIES = {"random": 0.35, "deep": 0.1, "touching": 0.15, "stacked": 0.1, "coincident": 0.05,
              "zero size": 0.1, "degenerate polytope": 0.15}
QUERIES = ("signed_distance", "distance")
COST_EXTRA = "capsule-capsule,cone-cone,cylinder-ellipsoid,sphere-polytope"
IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])


# ------------------------------------------------------------------------------------------------
# Random shapes and poses (numpy, float64; a batch of n is a dict of arrays with a leading axis n)


def dyadic(rng, low, high, shape):
    """Multiples of 1/16 in [low, high]: exact in float32, so exact contacts stay exact."""
    return rng.integers(round(low * 16), round(high * 16) + 1, size=shape) / 16.0


def random_fields(kind, rng, n, scale, exact=False):
    """Fields of n random shapes of `kind` with sizes ~U(0.25, 1)·scale (n,), or dyadic ones when exact.

    Polytopes: hulls of up to NUM_VERTICES points on an ellipsoid, a random number (>= 4) of rows
    unmasked (the rest hold junk); exact ones are dyadic prisms with flat caps at z = ±h.
    """
    if kind != "polytope":
        draw = (lambda shape: dyadic(rng, 0.25, 1.0, (n,) + shape)) if exact else (
            lambda shape: rng.uniform(0.25, 1.0, (n,) + shape))
        return {name: draw(shape) * scale.reshape((n,) + (1,) * len(shape))
                for name, shape in SIZE_FIELDS[kind].items()}
    if exact:
        vertices = dyadic(rng, -0.5, 0.5, (n, NUM_VERTICES, 3))
        height = dyadic(rng, 0.25, 0.5, (n, 1))
        z = vertices[:, :, 2]
        vertices[:, :, 2] = np.where(rng.uniform(size=(n, NUM_VERTICES)) < 0.4, np.clip(z, -height, height),
                                     np.where(z < 0, -height, height))
        return {"vertices": vertices, "mask": np.ones((n, NUM_VERTICES), bool)}
    points = rng.normal(size=(n, NUM_VERTICES, 3))
    points /= np.linalg.norm(points, axis=-1, keepdims=True)
    vertices = points * rng.uniform(0.25, 1.0, (n, 1, 3)) * scale[:, None, None]
    mask = np.arange(NUM_VERTICES) < rng.integers(4, NUM_VERTICES + 1, (n, 1))
    vertices = np.where(mask[..., None], vertices, rng.normal(size=vertices.shape) * 10)
    return {"vertices": vertices, "mask": mask}


def zero_size(kind, rng, fields):
    """The fields with some or all sizes zero in every row (a polytope: all vertices at the origin)."""
    n = len(next(iter(fields.values())))
    if kind == "polytope":
        return {"vertices": np.zeros_like(fields["vertices"]), "mask": fields["mask"]}
    widths = [int(np.prod(shape)) for shape in SIZE_FIELDS[kind].values()]
    keep = rng.uniform(size=(n, sum(widths))) < 0.5
    keep[keep.all(axis=1)] = False  # at least one size zero, all of them where the draw kept every one
    columns = np.split(keep, np.cumsum(widths)[:-1], axis=1)
    return {name: np.where(column.reshape(value.shape), value, 0.0)
            for (name, value), column in zip(fields.items(), columns, strict=True)}


def degenerate_polytopes(rng, n, scale):
    """Coplanar, collinear, coincident, duplicated, tiny and one/two-row polytopes, one kind per row."""
    s = scale[:, None, None]
    points = rng.normal(size=(n, NUM_VERTICES, 3)) * s
    flavour = rng.integers(0, 7, n)
    rotated = np.einsum("nij,nvj->nvi", C.quat_to_mat(C.random_quaternions(rng, n)), points * [1, 1, 0])
    line = rng.normal(size=(n, NUM_VERTICES, 1)) * rng.normal(size=(n, 1, 3)) * s
    choices = [rotated,  # coplanar
               line,  # collinear
               np.repeat(points[:, :1], NUM_VERTICES, axis=1),  # all coincident
               np.tile(points[:, :4], (1, NUM_VERTICES // 4, 1)),  # duplicated
               points * 1e-6]  # tiny
    vertices = np.select([flavour[:, None, None] == k for k in range(len(choices))], choices, points)
    mask = np.ones((n, NUM_VERTICES), bool)
    mask[flavour == 5, 1:] = False  # one row left
    mask[flavour == 6, 2:] = False  # two rows left
    vertices = np.where(mask[..., None], vertices, 1e30)
    return {"vertices": vertices, "mask": mask}


def random_rotations(rng, n):
    """(n, 4) random rotations as non-unit quaternions (norm U(0.5, 2)); the library normalises them."""
    return C.random_quaternions(rng, n) * rng.uniform(0.5, 2.0, (n, 1))


def to_shape(kind, fields, dtype=np.float32):
    return CLASSES[kind](**{name: value if value.dtype == bool else value.astype(dtype)
                            for name, value in fields.items()})


def to_pose(translation, rotation, dtype=np.float32):
    return jg.Pose(np.asarray(translation, dtype), np.asarray(rotation, dtype))


def take(tree, index):
    return jax.tree_util.tree_map(lambda leaf: np.asarray(leaf)[index], tree)


def concatenate(trees):
    return jax.tree_util.tree_map(lambda *leaves: np.concatenate(leaves), *trees)


_support = jax.jit(jax.vmap(lambda shape, direction: shape.support(direction), in_axes=(0, None)))


def z_extents(shape):
    """(n,) how far each shape (unrotated) reaches along +z, and along -z, from its support mapping."""
    up = _support(shape, np.array([0.0, 0.0, 1.0], np.float32))[:, 2]
    down = -_support(shape, np.array([0.0, 0.0, -1.0], np.float32))[:, 2]
    return np.asarray(up, np.float64), np.asarray(down, np.float64)


def category_batch(category, kind_a, kind_b, rng, n):
    """(shape_a, pose_a, shape_b, pose_b) for n poses of one category, float32 (see the docstring)."""
    scale = 10.0 ** rng.choice([-2, 0, 0, 0, 2], n)
    if category == "stacked":
        scale = np.ones(n)
    exact = category == "stacked"
    fields_a = random_fields(kind_a, rng, n, scale, exact)
    fields_b = random_fields(kind_b, rng, n, scale, exact)
    if category == "zero size":
        which = rng.integers(0, 3, n)  # A, B or both
        zero_a, zero_b = zero_size(kind_a, rng, fields_a), zero_size(kind_b, rng, fields_b)
        fields_a = {k: np.where(np.expand_dims(which != 1, tuple(range(1, v.ndim))), zero_a[k], v)
                    for k, v in fields_a.items()}
        fields_b = {k: np.where(np.expand_dims(which != 0, tuple(range(1, v.ndim))), zero_b[k], v)
                    for k, v in fields_b.items()}
    if category == "degenerate polytope":
        if kind_a == "polytope":
            fields_a = degenerate_polytopes(rng, n, scale)
        if kind_b == "polytope" and (kind_a != "polytope" or rng.uniform() < 0.5):
            fields_b = degenerate_polytopes(rng, n, scale)
    if category == "coincident" and kind_a == kind_b:
        fields_b = fields_a
    translation_a = rng.normal(size=(n, 3)) * scale[:, None]
    rotation_a = random_rotations(rng, n)
    rotation_b = random_rotations(rng, n)
    direction = C.random_unit_vectors(rng, n)
    reach = scale * rng.uniform(0.0, 3.0, n)
    if category == "deep":
        reach = scale * rng.uniform(0.0, 0.2, n)
    translation_b = translation_a + reach[:, None] * direction
    if category in ("coincident", "zero size", "degenerate polytope"):
        same = (rng.uniform(size=n) < 0.3) | (category == "coincident")
        translation_b = np.where(same[:, None], translation_a, translation_b)
        rotation_b = np.where(same[:, None], rotation_a, rotation_b)
    shape_a, shape_b = to_shape(kind_a, fields_a), to_shape(kind_b, fields_b)
    if category == "stacked":
        _, below_b = z_extents(shape_b)
        above_a, _ = z_extents(shape_a)
        gap = rng.choice([0.0, 0.0, 2.0 ** -20, -0.125], n)
        lateral = dyadic(rng, -0.25, 0.25, (n, 2)) * (rng.uniform(size=(n, 1)) < 0.5)  # curved: 0 touches
        offset = np.concatenate([lateral, (above_a + below_b + gap)[:, None]], 1)
        rotated = rng.uniform(size=n) < 0.5
        rotation_a = np.where(rotated[:, None], rotation_a, IDENTITY)
        rotation_b = rotation_a
        translation_a = np.where(rotated[:, None], translation_a, 0.0)
        unit = rotation_a / np.linalg.norm(rotation_a, axis=1, keepdims=True)
        translation_b = translation_a + np.einsum("nij,nj->ni", C.quat_to_mat(unit), offset)
    return shape_a, to_pose(translation_a, rotation_a), shape_b, to_pose(translation_b, rotation_b)


def category_counts(kind_a, kind_b, total):
    applies = {c: w for c, w in CATEGORIES.items()
               if c != "degenerate polytope" or "polytope" in (kind_a, kind_b)}
    counts = {c: int(total * w / sum(applies.values())) for c, w in applies.items()}
    counts["random"] += total - sum(counts.values())
    return counts


# ------------------------------------------------------------------------------------------------
# Kernels


def float_parts(tree):
    """(float leaves, a function that puts new float leaves back into `tree`); bool leaves (masks) stay."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    is_float = [jnp.issubdtype(jnp.result_type(leaf), jnp.floating) for leaf in leaves]

    def rebuild(floats):
        floats = iter(floats)
        return jax.tree_util.tree_unflatten(
            treedef, [next(floats) if f else leaf for leaf, f in zip(leaves, is_float, strict=True)])

    return [leaf for leaf, f in zip(leaves, is_float, strict=True) if f], rebuild


def nonfinite_gradient_kernel(query):
    """jit(vmap): per pair, the number of non-finite entries of the gradient of the distance with respect
    to both poses and every float shape field, and whether the distance itself is finite."""

    def one(*pair):
        floats, rebuild = float_parts(pair)
        value, grads = jax.value_and_grad(lambda fs: query(*rebuild(fs)).distance)(floats)
        bad = sum(jnp.sum(~jnp.isfinite(g)) for g in grads)
        return value, bad, jnp.isfinite(value)

    return jax.jit(jax.vmap(one))


def batched_cost_functions(query, in_axes):
    """The timed functions of one query: the batched distances alone, and value_and_grad of their sum
    with respect to the poses and to poses and shapes."""
    batched = jax.vmap(query, in_axes=in_axes)

    def value(a, pose_a, b, pose_b):
        return batched(a, pose_a, b, pose_b).distance

    def grad_poses(a, pose_a, b, pose_b):
        return jax.value_and_grad(lambda pa, pb: jnp.sum(batched(a, pa, b, pb).distance),
                                  argnums=(0, 1))(pose_a, pose_b)

    def grad_all(*pair):
        floats, rebuild = float_parts(pair)
        return jax.value_and_grad(lambda fs: jnp.sum(batched(*rebuild(fs)).distance))(floats)

    return {"value": value, "poses": grad_poses, "all": grad_all}


def chunked(kernel, batch, chunk):
    """`kernel` over the leading axis of `batch` in calls of exactly `chunk` rows (the last padded)."""
    n = len(jax.tree_util.tree_leaves(batch)[0])
    outs = [kernel(*take(batch, index)) for index in R._pieces(n, chunk)]
    return jax.tree_util.tree_map(lambda *leaves: np.concatenate(leaves)[:n], *jax.device_get(outs))


# ------------------------------------------------------------------------------------------------
# Part 1: the sweep


def sweep_pair(name, total, chunk, seed, raw_dir, log):
    kind_a, kind_b = name.split("-")
    chunk = min(chunk, total)
    rng = np.random.default_rng([seed, PAIRS.index(name)])
    forward = jax.jit(jax.vmap(jg.signed_distance))
    batches, labels = [], []
    for category, count in category_counts(kind_a, kind_b, total).items():
        if not count:
            continue
        batch = category_batch(category, kind_a, kind_b, rng, count)
        if category == "touching":
            for _ in range(2):  # B moved by -distance along the normal: signed distance ~0
                result = chunked(forward, batch, chunk)
                translation = (np.asarray(batch[3].translation, np.float64)
                               - result.distance[:, None].astype(np.float64) * result.normal)
                batch = (*batch[:3], to_pose(translation, batch[3].rotation))
        batches.append(batch)
        labels += [category] * count
    batch, labels = concatenate(batches), np.array(labels)
    row = dict(pair=name, poses=total, categories=category_counts(kind_a, kind_b, total))
    for query in QUERIES:
        start = time.perf_counter()
        kernel = nonfinite_gradient_kernel(getattr(jg, query)).lower(*take(batch, np.arange(chunk))).compile()
        compiled = time.perf_counter()
        value, bad_entries, finite_value = chunked(kernel, batch, chunk)
        bad = (bad_entries > 0) | ~finite_value
        row[query] = dict(
            seconds=time.perf_counter() - compiled, compile_s=compiled - start,
            bad_poses=int(bad.sum()), grad_poses=int(np.sum(bad_entries > 0)),
            grad_entries=int(bad_entries.sum()), value_poses=int(np.sum(~finite_value)),
            bad_by_category={str(c): int(np.sum(bad & (labels == c))) for c in np.unique(labels[bad])},
            penetrating=int(np.sum(value < 0)),
            near_zero=int(np.sum(np.abs(value) <= 1e-5 * np.maximum(size(batch[0]), size(batch[2])))))
        if bad.any():
            os.makedirs(raw_dir, exist_ok=True)
            path = os.path.join(raw_dir, f"{name}_{query}_nonfinite.npz")
            flat = jax.tree_util.tree_leaves_with_path(take(batch, np.flatnonzero(bad)))
            # lane: index in the sweep's batch (chunks of `chunk`); vectorised rounding can make a
            # borderline result depend on the batch it runs in.
            np.savez(path, labels=labels[bad], lane=np.flatnonzero(bad), chunk=chunk,
                     **{jax.tree_util.keystr(key): leaf for key, leaf in flat})
            row[query]["inputs"] = os.path.relpath(path)
        log(f"  {name:<20} {query:<15} {total} poses: {row[query]['bad_poses']} bad "
            f"({row[query]['bad_by_category']}), {row[query]['seconds']:.1f} s "
            f"(+{row[query]['compile_s']:.1f} s compile)")
    return row


def size(shape):
    """(n,) the largest size field (polytopes: vertex coordinate) of each shape in a batch."""
    if isinstance(shape, jg.Polytope):
        fields = [np.where(np.asarray(shape.mask)[..., None], shape.vertices, 0)]
    else:
        fields = jax.tree_util.tree_leaves(shape)
    return np.max([np.abs(np.asarray(f)).reshape(len(f), -1).max(axis=1) for f in fields], axis=0)


# ------------------------------------------------------------------------------------------------
# Part 2: the cost of value_and_grad


def cost_batches(spec, n, seed):
    """{"sep"/"pen": (shape_a, pose_a, shape_b, pose_b) of n pairs}, and the vmap in_axes."""
    if spec in PAIRS:
        kind_a, kind_b = spec.split("-")
        rng = np.random.default_rng([seed, 1000 + PAIRS.index(spec)])
        pool = category_batch("random", kind_a, kind_b, rng, 8 * n)
        sd = np.asarray(jax.jit(jax.vmap(jg.signed_distance))(*pool).distance)
        split = {"sep": np.flatnonzero(sd > 0)[:n], "pen": np.flatnonzero(sd < 0)[:n]}
        return {k: take(pool, v) for k, v in split.items() if len(v) == n}, 0
    kind, n_vertices = spec.split("/") if "/" in spec else (spec, None)
    n_vertices = None if n_vertices is None else int(n_vertices)
    out = {}
    for pen in (False, True):
        case = C.make_case(kind, n, pen, seed, n_vertices)
        out["pen" if pen else "sep"] = R.jaxgjk_args(case, np.arange(n), "float32")
    polytope = kind == "polytope-polytope"
    return out, (None if polytope else 0, 0, None if polytope else 0, 0)


def cost_spec(spec, n, repeats, seed, log):
    batches, in_axes = cost_batches(spec, n, seed)
    rows = []
    for query in QUERIES:
        calls, compile_s = {}, {}
        for variant, function in batched_cost_functions(getattr(jg, query), in_axes).items():
            start = time.perf_counter()
            compiled = jax.jit(function).lower(*batches["sep"]).compile()
            compile_s[variant] = time.perf_counter() - start
            for side, batch in batches.items():
                calls[side, variant] = (lambda compiled=compiled, batch=batch: compiled(*batch))
        times = best_times(calls, repeats)
        for side in batches:
            row = dict(spec=spec, side=side, query=query, n=n, compile_s=compile_s,
                       us_per_pair={v: times[side, v] / n * 1e6 for v in ("value", "poses", "all")})
            row["ratio"] = {v: times[side, v] / times[side, "value"] for v in ("poses", "all")}
            rows.append(row)
            log(f"  {spec:<22} {side} {query:<15} {row['us_per_pair']['value']:8.2f} µs/pair, "
                f"value_and_grad ×{row['ratio']['poses']:.2f} (poses) ×{row['ratio']['all']:.2f} (all)")
    return rows


# ------------------------------------------------------------------------------------------------
# Report


def markdown(meta, sweep_rows, cost_rows):
    lines = [f"# Gradients: NaN/inf sweep and value_and_grad cost — {meta['tag']}", "",
             f"Generated {meta['date']} by `{meta['command']}` in {meta['total_s'] / 60:.1f} min on "
             f"{meta['device']} ({meta['cpu_model']}, {meta['cpu_count']} cores; load average "
             f"{meta['load_start']:.1f} at start, {meta['load_end']:.1f} at end); jax {jax.__version__}, "
             f"jaxgjk source sha256 {meta['jaxgjk_source']['sha256']}. float32, x64 off.", ""]
    if sweep_rows:
        first = sweep_rows[0]
        lines += [
            "## Non-finite gradients", "",
            f"{first['poses']} poses per kind pair (A = first kind), gradient of `.distance` with respect "
            "to both poses and every shape field, `jit(vmap(value_and_grad))` in chunks of "
            f"{meta['chunk']}. Categories (share of the poses): "
            + ", ".join(f"{c} {w:.0%}" for c, w in CATEGORIES.items())
            + " (degenerate polytopes only in pairs with a polytope; see the script's docstring). "
            "grad = poses with any NaN/inf gradient entry, value = poses whose distance is NaN/inf; "
            "pen = signed distance < 0; |d|≈0: |signed distance| ≤ 1e-5·size; s = seconds for all poses "
            "(compile excluded).", "",
            "| pair | poses | signed_distance: grad | value | distance: grad | value | pen | \\|d\\|≈0 "
            "| s (signed_distance) | s (distance) |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        rows = sweep_rows + [dict(
            pair="**all**", poses=sum(r["poses"] for r in sweep_rows),
            **{q: {k: sum(r[q][k] for r in sweep_rows) for k in ("grad_poses", "value_poses", "seconds",
                                                               "penetrating", "near_zero")}
               for q in QUERIES})]
        for row in rows:
            sd, d = row["signed_distance"], row["distance"]
            lines.append(f"| {row['pair']} | {row['poses']} | {sd['grad_poses']} | {sd['value_poses']} | "
                         f"{d['grad_poses']} | {d['value_poses']} | {sd['penetrating']} | {sd['near_zero']} "
                         f"| {sd['seconds']:.1f} | {d['seconds']:.1f} |")
        bad = [(r["pair"], q, r[q]) for r in sweep_rows for q in QUERIES if r[q]["bad_poses"]]
        if bad:
            lines += ["", "Bad poses by category: " + "; ".join(
                f"{pair} {q}: {info['bad_by_category']} ({info['grad_entries']} non-finite gradient "
                f"entries; inputs in `{info['inputs']}`)" for pair, q, info in bad)]
        lines.append("")
    if cost_rows:
        lines += [
            "## Cost of value_and_grad", "",
            f"Batches of {cost_rows[0]['n']} pairs, float32, `jit(vmap(query))(...).distance` (µs per pair) "
            "against `jax.value_and_grad` of the summed distance with respect to (pose_a, pose_b) "
            "(\"poses\") and to both poses and every shape field (\"all\"); ratio = value_and_grad time / "
            f"query time, best of {meta['repeats']} interleaved runs after a warm-up, compile excluded. "
            "sep / pen: separated / penetrating pairs (`cases.make_case`; the last rows come from the "
            "sweep's `random` category, split by sign). Target: ratio ≤ 1.5.", "",
            "| pairs | | distance µs/pair | ×poses | ×all | signed_distance µs/pair | ×poses | ×all |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        keyed = {(r["spec"], r["side"], r["query"]): r for r in cost_rows}
        for spec, side in dict.fromkeys((r["spec"], r["side"]) for r in cost_rows):
            cells = []
            for query in QUERIES[::-1]:
                r = keyed[spec, side, query]
                cells.append(f"{r['us_per_pair']['value']:.2f} | {r['ratio']['poses']:.2f} | "
                             f"{r['ratio']['all']:.2f}")
            lines.append(f"| {spec} | {side} | " + " | ".join(cells) + " |")
        ratios = [r["ratio"][v] for r in cost_rows for v in ("poses", "all")]
        lines += ["", f"Ratios over all rows: median {np.median(ratios):.2f}, max {np.max(ratios):.2f}; "
                  f"{sum(x > 1.5 for x in ratios)} of {len(ratios)} above 1.5.", ""]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--poses", type=int, default=100_000, help="poses per kind pair in the sweep")
    parser.add_argument("--chunk", type=int, default=4096, help="pairs per sweep call")
    parser.add_argument("--pairs", default=",".join(PAIRS), help="sweep kind pairs (default: all)")
    parser.add_argument("--batch", type=int, default=4096, help="pairs per batch in the cost part")
    parser.add_argument("--cost-specs", default=",".join(R.spec_label(k, nv) for k, nv in C.all_case_specs()))
    parser.add_argument("--cost-extra", default=COST_EXTRA, help="sweep kind pairs also timed")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-sweep", action="store_true")
    parser.add_argument("--skip-cost", action="store_true")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    parser.add_argument("--tag", default="gradients", help="file stem of the outputs")
    args = parser.parse_args(argv)
    for name in args.pairs.split(","):
        if name not in PAIRS:
            parser.error(f"unknown pair {name!r}; choose from {PAIRS}")

    start, load_start = time.perf_counter(), os.getloadavg()[0]
    source_id = report.jaxgjk_source_id()  # the sources as imported now (they may change during the run)

    def log(message):
        print(f"[{time.perf_counter() - start:7.1f}s] {message}", flush=True)

    raw_dir = os.path.join(args.out, "raw", args.tag)
    sweep_rows, cost_rows = [], []
    if not args.skip_sweep:
        log(f"sweep: {args.poses} poses per pair, chunks of {args.chunk}")
        sweep_rows = [sweep_pair(name, args.poses, args.chunk, args.seed, raw_dir, log)
                      for name in args.pairs.split(",")]
    if not args.skip_cost:
        specs = [s for s in (args.cost_specs.split(",") + args.cost_extra.split(",")) if s]
        log(f"cost: {specs}, batches of {args.batch}")
        for spec in specs:
            cost_rows += cost_spec(spec, args.batch, args.repeats, args.seed, log)
    meta = dict(tag=args.tag, date=datetime.datetime.now().isoformat(timespec="seconds"),
                command="python -m benchmarks.gradients " + " ".join(
                    shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv)),
                total_s=time.perf_counter() - start, device=str(jax.devices()[0]),
                cpu_model=report.cpu_model(), cpu_count=os.cpu_count(),
                load_start=load_start, load_end=os.getloadavg()[0], jaxgjk_source=source_id,
                chunk=args.chunk, repeats=args.repeats)
    text = markdown(meta, sweep_rows, cost_rows)
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"{args.tag}.md"), "w") as file:
        file.write(text)
    with open(os.path.join(args.out, f"{args.tag}.json"), "w") as file:
        json.dump(report.jsonable(dict(meta=meta, sweep=sweep_rows, cost=cost_rows)), file, indent=1)
    bad = sum(r[q]["bad_poses"] for r in sweep_rows for q in QUERIES)
    log(f"wrote {args.out}/{args.tag}.md and .json; {bad} poses with a non-finite gradient or value")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
