"""Gradients of `distance` and `signed_distance` (custom JVPs): finite differences, forward vs reverse
mode, second order, batching and jit, NaN-freedom in float32, and a gradient-descent separation.

Every pair is a `jg.Packed` pair, so one compiled kernel serves all seven primitive kinds; its float
fields (radius, height = half_length / half_height, extents = half_extents / radii, vertices) are the
primitives' own fields. Four kernels are compiled (at module level, always called on fixed-size chunks
so that none recompiles), and they dominate the file's run time:

- `JACFWD` (float64): `vmap(jacfwd(outputs))` with the outputs as aux; it also evaluates the
  finite-difference stencils.
- `HESSIAN` (float64): `vmap` of `jax.hessian` of the signed distance (forward over reverse mode: the
  forward pass differentiates the GJK/EPA loops too, whose outputs the tangent rule holds).
- `VMAP_GRAD` (float32, default config): `vmap(value_and_grad(loss))` of a random combination of every
  output of both queries.
- `GRAD_OF_SUM` (float64): `grad(sum(vmap(...)))` of a combination of `JACFWD`'s outputs with weights per
  pair: random ones are checked against `JACFWD` (reverse mode through a batch against forward mode per
  pair), and one-hot ones give the reverse-mode Jacobians row by row (`_reverse_jacobians`). A
  `vmap(jax.jacrev)` kernel beside `HESSIAN` cost ~45 s of trace and lowering and ~75 s of compile on
  this 2-core machine for the same reverse-mode rules (`benchmarks/results/session23`).
"""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgjk as jg

from .shape_samples import PRIMITIVE_KINDS, random_rotation, random_shape

KINDS = PRIMITIVE_KINDS
PAIRS = [(a, b) for i, a in enumerate(KINDS) for b in KINDS[i:]]
NUM_VERTICES = 12
SIDES = ("a", "b")
PACKED_FIELDS = ("radius", "height", "extents", "vertices")
# Each kind's fields as (API name, the `jg.Packed` field that carries it).
FIELDS = {
    "sphere": (("radius", "radius"),),
    "capsule": (("radius", "radius"), ("half_length", "height")),
    "box": (("half_extents", "extents"),),
    "cylinder": (("radius", "radius"), ("half_length", "height")),
    "cone": (("radius", "radius"), ("half_height", "height")),
    "ellipsoid": (("radii", "extents"),),
    "polytope": (("vertices", "vertices"),),
}
OUTPUTS = ("distance", "signed", "point_a", "point_b", "normal")
OUTPUT_WIDTHS = dict(distance=1, signed=1, point_a=3, point_b=3, normal=3)  # components, in OUTPUTS' order
COMBINED_WIDTH = sum(OUTPUT_WIDTHS.values())

# Finite differences (float64). Tolerances tightened so that the primal is accurate far below the
# step: GJK's gap 1e-14 (default 1e-12), EPA's 1e-12 (default 1e-9) with more iterations.
FD_CONFIG = jg.Config(max_gjk_iterations=256, max_epa_iterations=128, gjk_tolerance=1e-14,
                      epa_tolerance=1e-12)
# Step 1e-4 (shapes have size ~1) with Richardson extrapolation of the ±h and ±2h central differences:
# truncation O(h⁴) ~ 1e-16, while the noise, |primal error| / h, stays ~1e-7 even for curved cores,
# where GJK converges to ~1e-11 (it stalls on nearly coincident support points) — with a 1e-6 step that
# noise alone is ~1e-5 relative.
FD_STEP = 1e-4
FD_STEPS = (FD_STEP, -FD_STEP, 2 * FD_STEP, -2 * FD_STEP)
# |AD - FD| / |full gradient of that output|, curved cores included: the loops leave the normal good
# to √gap only there, and `_refine` takes it to rounding.
FD_TOLERANCE = 1e-6
# A feature change within 2h: the two central differences disagree, or the one-sided ones do.
KINK_CENTRAL, KINK_ONE_SIDED = 1e-6, 1e-2
MAX_SKIPPED_FRACTION = 0.03
MAX_UNCONVERGED_FRACTION = 0.05
N_SEPARATED, N_PENETRATING = 3, 3  # configurations per unordered kind pair
WITNESS_KINDS = ("box", "polytope")
N_WITNESS_EXTRA = 6  # more configurations per box/polytope pair and mode, for the witness test

# Second derivatives against differences of the gradient: within FD_TOLERANCE, but for penetrating
# cones against cones and cylinders (EPA's face on two curved slants or rims), whose worst directions
# were 1.5e-6 to 2.5e-5 off in session 35 (cause not found), within this.
SECOND_ORDER_CURVED_PENETRATING = ({frozenset(("cone",)), frozenset(("cone", "cylinder"))}, 1e-4)

CHUNK64 = 128
CHUNK_REVERSE = 64  # GRAD_OF_SUM's batch
CHUNK32 = 256
NAN_RANDOM_PER_PAIR = 2 * CHUNK32  # float32 random poses per kind pair in the NaN sweep


# -------------------------------------------------------------------------------------------------
# The differentiated functions: a pair is a dict `theta` of float arrays (differentiated) and a dict
# `meta` of kind codes and vertex masks (not).
# -------------------------------------------------------------------------------------------------


def _pair(theta, meta):
    def shape(s):
        return jg.Packed(meta[s + ".kind"], theta[s + ".radius"], theta[s + ".height"],
                         theta[s + ".extents"], theta[s + ".vertices"], meta[s + ".mask"])

    def pose(s):
        return jg.Pose(theta[s + ".translation"], theta[s + ".rotation"])

    return shape("a"), pose("a"), shape("b"), pose("b")


def _outputs(theta, meta, config=FD_CONFIG):
    shape_a, pose_a, shape_b, pose_b = _pair(theta, meta)
    unsigned = jg.distance(shape_a, pose_a, shape_b, pose_b, config=config)
    signed = jg.signed_distance(shape_a, pose_a, shape_b, pose_b, config=config)
    return dict(distance=unsigned.distance, signed=signed.distance, point_a=signed.point_a,
                point_b=signed.point_b, normal=signed.normal), (unsigned, signed)


def _outputs_with_aux(theta, meta):
    outputs, (unsigned, signed) = _outputs(theta, meta)
    aux = dict(outputs, status=signed.status, simplex_mask=signed.simplex.mask,
               simplex_points_a=signed.simplex.points_a, simplex_points_b=signed.simplex.points_b)
    return outputs, aux


def _signed(theta, meta):
    """The signed distance alone (FD_CONFIG)."""
    shape_a, pose_a, shape_b, pose_b = _pair(theta, meta)
    return jg.signed_distance(shape_a, pose_a, shape_b, pose_b, config=FD_CONFIG).distance


NUM_LOSS_TERMS = 20


def _loss(theta, meta, weights):
    """A random linear combination (weights (20,)) of every output of both queries (default config)."""
    _, (unsigned, signed) = _outputs(theta, meta, jg.Config())
    terms = jnp.concatenate([unsigned.distance[None], signed.distance[None], unsigned.point_a,
                             unsigned.point_b, unsigned.normal, signed.point_a, signed.point_b,
                             signed.normal])
    return jnp.dot(weights, terms)


def _combined_outputs(theta, meta, weights):
    """A linear combination (weights (COMBINED_WIDTH,)) of the outputs of `_outputs`, in OUTPUTS' order
    (float64, FD_CONFIG)."""
    outputs = _outputs(theta, meta)[0]
    return jnp.dot(weights, jnp.concatenate([jnp.atleast_1d(outputs[name]) for name in OUTPUTS]))


JACFWD = jax.jit(jax.vmap(jax.jacfwd(_outputs_with_aux, has_aux=True)))
HESSIAN = jax.jit(jax.vmap(jax.hessian(_signed)))
VMAP_GRAD = jax.jit(jax.vmap(jax.value_and_grad(_loss)))
GRAD_OF_SUM = jax.jit(jax.grad(lambda theta, meta, weights: jnp.sum(
    jax.vmap(_combined_outputs)(theta, meta, weights))))


# -------------------------------------------------------------------------------------------------
# Building batches
# -------------------------------------------------------------------------------------------------


def _random_pose(rng, translation):
    """A pose with a random, deliberately non-unit quaternion (norm in [0.5, 2])."""
    rotation = random_rotation(rng) * rng.uniform(0.5, 2.0)
    return jg.Pose(jnp.asarray(translation, jnp.float64), jnp.asarray(rotation))


def _stack(configs, dtype=np.float64):
    """(theta, meta) with a leading batch axis from a list of (shape_a, pose_a, shape_b, pose_b)."""
    theta, meta = {}, {}
    for side, shape_index, pose_index in (("a", 0, 1), ("b", 2, 3)):
        packed = jg.pack([c[shape_index] for c in configs], num_vertices=NUM_VERTICES,
                         dtype=np.float64)
        for name in PACKED_FIELDS:
            theta[f"{side}.{name}"] = np.asarray(getattr(packed, name), dtype)
        theta[f"{side}.translation"] = np.stack(
            [np.asarray(c[pose_index].translation) for c in configs]).astype(dtype)
        theta[f"{side}.rotation"] = np.stack(
            [np.asarray(c[pose_index].rotation) for c in configs]).astype(dtype)
        meta[f"{side}.kind"] = np.asarray(packed.kind)
        meta[f"{side}.mask"] = np.asarray(packed.mask)
    return theta, meta


def _take(tree, index):
    return {key: value[index] for key, value in tree.items()}


def _run_chunked(kernel, chunk, *batches):
    """`kernel` over the leading axis of its arguments (dicts of arrays, or arrays), in fixed-size
    chunks (the last one padded with copies of lane 0), so that the kernel compiles once."""
    size = len(jax.tree_util.tree_leaves(batches[0])[0])
    pad = (-size) % chunk
    padded = jax.tree_util.tree_map(
        lambda v: np.concatenate([v, np.repeat(v[:1], pad, axis=0)]), batches)
    results = []
    for start in range(0, size + pad, chunk):
        lanes = jax.tree_util.tree_map(lambda v, start=start: v[start:start + chunk], padded)
        results.append(jax.device_get(kernel(*lanes)))
    return jax.tree_util.tree_map(lambda *leaves: np.concatenate(leaves)[:size], *results)


def _candidate(kind_a, kind_b, rng, mode):
    shape_a, shape_b = random_shape(kind_a, rng), random_shape(kind_b, rng)
    direction = rng.normal(size=3)
    direction /= np.linalg.norm(direction)
    reach = rng.uniform(1.5, 3.0) if mode == "separated" else rng.uniform(0.0, 0.8)
    origin = rng.normal(size=3)
    return (shape_a, _random_pose(rng, origin), shape_b, _random_pose(rng, origin + reach * direction))


def _contract(jacobian_block, direction, out_ndim):
    """Directional derivative: sum over the input axes of a jacobian block (out..., in...)."""
    axes = tuple(range(out_ndim, jacobian_block.ndim))
    return np.sum(jacobian_block * direction, axis=axes) if axes else jacobian_block * direction


# -------------------------------------------------------------------------------------------------
# The finite-difference study, computed once and shared by the tests that assert on it.
# -------------------------------------------------------------------------------------------------


@functools.cache
def fd_study():
    """Random separated and penetrating configurations for every unordered pair of kinds (A/B order
    random), one random direction per pose component and per shape field of each side, derivatives
    from `JACFWD` against Richardson-extrapolated central differences.

    Returns dict(configs=[...], rows=[...]): each row one (configuration, input group, output).
    """
    rng = np.random.default_rng(7)
    candidates, labels = [], []
    for mode in ("separated", "penetrating"):
        for kind_a, kind_b in PAIRS:
            wanted = N_SEPARATED if mode == "separated" else N_PENETRATING
            if kind_a in WITNESS_KINDS and kind_b in WITNESS_KINDS:
                wanted += N_WITNESS_EXTRA
            for _ in range(3 * wanted):
                a, b = (kind_a, kind_b) if rng.uniform() < 0.5 else (kind_b, kind_a)
                candidates.append(_candidate(a, b, rng, mode))
                labels.append(dict(pair=(kind_a, kind_b), kinds=(a, b), mode=mode, wanted=wanted))
    theta, meta = _stack(candidates)
    jac, aux = _run_chunked(JACFWD, CHUNK64, theta, meta)

    counts = {}
    configs = []
    for index, label in enumerate(labels):
        signed = aux["signed"][index]
        in_mode = signed > 0.02 if label["mode"] == "separated" else signed < -0.02
        key = (label["pair"], label["mode"])
        if in_mode and counts.get(key, 0) < label["wanted"]:
            counts[key] = counts.get(key, 0) + 1
            configs.append(dict(label, index=index, status=int(aux["status"][index])))
    for (pair, mode), count in counts.items():
        assert count >= 1, (pair, mode)

    groups = []  # (config number, theta key, field name, direction)
    for number, config in enumerate(configs):
        for side, kind in zip(SIDES, config["kinds"], strict=True):
            names = [("translation", "translation"), ("rotation", "rotation")] + list(FIELDS[kind])
            for name, key in names:
                key = f"{side}.{key}"
                direction = rng.normal(size=theta[key].shape[1:])
                if key.endswith("vertices"):
                    direction = direction * meta[f"{side}.mask"][config["index"]][:, None]
                groups.append((number, key, f"{side}.{name}", direction / np.linalg.norm(direction)))
    # Stencil lanes, ordered by mode so that chunks of separated pairs never run EPA.
    order = sorted(range(len(groups)), key=lambda g: configs[groups[g][0]]["mode"] != "separated")
    lanes = [(g, step) for g in order for step in range(len(FD_STEPS))]
    source = np.array([configs[groups[g][0]]["index"] for g, _ in lanes])
    fd_theta = {k: v[source].copy() for k, v in theta.items()}
    for lane, (g, step) in enumerate(lanes):
        fd_theta[groups[g][1]][lane] += FD_STEPS[step] * groups[g][3]
    fd_jac, fd_aux = _run_chunked(JACFWD, CHUNK64, fd_theta, _take(meta, source))
    lane_of = {lane_key: lane for lane, lane_key in enumerate(lanes)}

    rows = []
    for g, (number, key, name, direction) in enumerate(groups):
        config = configs[number]
        index = config["index"]
        for output in OUTPUTS:
            blocks = {k: jac[output][k][index] for k in theta}
            out_ndim = np.ndim(aux[output][index])
            scale = math.sqrt(sum(float(np.sum(b ** 2)) for b in blocks.values()))
            ad = _contract(blocks[key], direction, out_ndim)
            f0 = aux[output][index]
            f = [fd_aux[output][lane_of[(g, step)]] for step in range(len(FD_STEPS))]
            central_h = (f[0] - f[1]) / (2 * FD_STEP)
            central_2h = (f[2] - f[3]) / (4 * FD_STEP)
            fd = _richardson(f)
            plus, minus = (f[0] - f0) / FD_STEP, (f0 - f[1]) / FD_STEP
            norm = np.linalg.norm
            floor = max(scale, 1e-12)
            rows.append(dict(
                config=number, pair=config["pair"], kinds=config["kinds"], mode=config["mode"],
                status=config["status"], group=name, output=output, ad=ad, fd=fd, scale=scale,
                error=float(norm(ad - fd)) / floor,
                jump=max(float(norm(plus)), float(norm(minus))) > 10 * floor,
                kink=(float(norm(central_h - central_2h)) > KINK_CENTRAL * floor
                      or float(norm(plus - minus)) > KINK_ONE_SIDED * floor),
                stencil_status=[int(fd_aux["status"][lane_of[(g, s)]]) for s in range(4)],
                key=key, direction=direction))
            if output == "signed":  # the gradient's differences along the direction: the Hessian's
                rows[-1]["gradient_fd"] = {k: _richardson([fd_jac["signed"][k][lane_of[(g, step)]]
                                                           for step in range(len(FD_STEPS))]) for k in theta}
    signed_kink = {(r["config"], r["group"]): r["kink"] for r in rows if r["output"] == "signed"}
    for row in rows:
        row["feature_change"] = signed_kink[(row["config"], row["group"])]
    for config in configs:
        index = config["index"]
        config["simplex"] = (aux["simplex_mask"][index], aux["simplex_points_a"][index],
                             aux["simplex_points_b"][index])
        config["jacobian"] = {o: {k: jac[o][k][index] for k in theta} for o in OUTPUTS}
        config["theta"] = _take(theta, index)
        config["meta"] = _take(meta, index)
    return dict(configs=configs, rows=rows)


def _richardson(values):
    """The derivative from `values` at the FD_STEPS: Richardson extrapolation of the ±h and ±2h central
    differences."""
    central_h = (values[0] - values[1]) / (2 * FD_STEP)
    central_2h = (values[2] - values[3]) / (4 * FD_STEP)
    return (4 * central_h - central_2h) / 3


def _unconverged(row):
    return row["status"] == jg.Status.MAX_ITERATIONS


def _describe(row):
    return (f"{row['kinds']} {row['mode']} d{row['output']}/d{row['group']}: AD {row['ad']} FD "
            f"{row['fd']} rel.err {row['error']:.2e} status {row['status']} stencil "
            f"{row['stencil_status']}")


def _check_rows(rows, lipschitz=True):
    """No jumps where the output is Lipschitz (the distances; witness points and normals may jump
    where the signed distance changes feature); rows near a feature change skipped; the rest within
    `FD_TOLERANCE`. Returns the number of skipped rows."""
    if lipschitz:
        jumps = [r for r in rows if r["jump"] and not _unconverged(r)]
    else:
        jumps = [r for r in rows if r["jump"] and not r["feature_change"] and not _unconverged(r)]
    assert not jumps, ("the output jumps by far more than its gradient within 2e-4 (the gradient "
                       "cannot match):\n" + "\n".join(map(_describe, jumps[:8])))
    skipped = [r["kink"] or r["jump"] or (not lipschitz and r["feature_change"]) for r in rows]
    checked = [r for r, skip in zip(rows, skipped, strict=True) if not skip and not _unconverged(r)]
    assert checked, "every row skipped"
    bad = sorted([r for r in checked if r["error"] > FD_TOLERANCE], key=lambda r: -r["error"])
    assert not bad, f"{len(bad)} of {len(checked)} derivatives off:\n" + "\n".join(
        map(_describe, bad[:8]))
    return sum(skipped)


# -------------------------------------------------------------------------------------------------
# Finite differences
# -------------------------------------------------------------------------------------------------


def _fd_rows(pair, mode):
    rows = [r for r in fd_study()["rows"] if r["pair"] == pair and r["mode"] == mode
            and r["output"] in ("distance", "signed")]
    groups = {r["group"].split(".")[1] for r in rows}
    assert groups == {"translation", "rotation"} | {n for k in pair for n, _ in FIELDS[k]}
    return rows


@pytest.mark.parametrize("pair", PAIRS, ids=["-".join(p) for p in PAIRS])
def test_separated_gradients_match_finite_differences(pair):
    """d distance and d signed_distance along random directions of each pose's translation and
    quaternion and of each shape field agree with central differences to 1e-6 of the gradient's norm,
    away from feature changes (those rows are skipped, and counted in `test_few_skipped`)."""
    _check_rows(_fd_rows(pair, "separated"))


@pytest.mark.parametrize("pair", PAIRS, ids=["-".join(p) for p in PAIRS])
def test_penetrating_gradients_match_finite_differences(pair):
    """As above for overlapping pairs (EPA): d signed_distance matches, d distance is 0."""
    _check_rows(_fd_rows(pair, "penetrating"))


def test_few_skipped():
    """Configurations within a step of a feature change (skipped above) are a few percent at most;
    EPA runs that hit the iteration bound (excluded above) are rare."""
    rows = [r for r in fd_study()["rows"] if r["output"] in ("distance", "signed")]
    for mode in ("separated", "penetrating"):
        in_mode = [r for r in rows if r["mode"] == mode]
        skipped = sum(r["kink"] and not r["jump"] for r in in_mode)
        assert skipped <= MAX_SKIPPED_FRACTION * len(in_mode), (mode, skipped, len(in_mode))
    configs = fd_study()["configs"]
    unconverged = sum(c["status"] == jg.Status.MAX_ITERATIONS for c in configs)
    assert unconverged <= MAX_UNCONVERGED_FRACTION * len(configs), unconverged


def _feature_class(simplex):
    """'vertex-face' / 'edge-edge' from the distinct support points of each body in the final simplex
    (or EPA face)."""
    mask, points_a, points_b = simplex
    unique_a = len(np.unique(points_a[mask], axis=0))
    unique_b = len(np.unique(points_b[mask], axis=0))
    return {(1, 3): "vertex-face", (3, 1): "vertex-face", (2, 2): "edge-edge"}.get(
        (unique_a, unique_b), f"{unique_a}-{unique_b}")


def test_witness_gradients_polytopes():
    """Jacobians (jacfwd) of point_a, point_b and normal match central differences for box and polytope
    pairs, separated and penetrating, in the generic vertex–face and edge–edge cases."""
    study = fd_study()
    classes = {}
    rows = []
    for number, config in enumerate(study["configs"]):
        if not all(k in WITNESS_KINDS for k in config["kinds"]):
            continue
        feature = _feature_class(config["simplex"])
        classes[(feature, config["mode"])] = classes.get((feature, config["mode"]), 0) + 1
        if feature in ("vertex-face", "edge-edge"):
            rows += [r for r in study["rows"] if r["config"] == number
                     and r["output"] in ("point_a", "point_b", "normal")]
    for feature in ("vertex-face", "edge-edge"):
        assert sum(n for (f, _), n in classes.items() if f == feature) >= 4, classes
    skipped = _check_rows(rows, lipschitz=False)
    assert skipped <= MAX_SKIPPED_FRACTION * len(rows), (skipped, len(rows))


def test_witness_gradients_smooth_contacts():
    """Jacobians of point_a, point_b and normal match central differences where an ellipsoid meets an
    ellipsoid or a sphere, separated and penetrating: the normal turns and the points slide over the
    curved surfaces (implicit function theorem at the refined normal, `_refine`)."""
    study = fd_study()
    rows = [r for r in study["rows"] if set(r["kinds"]) <= {"sphere", "ellipsoid"}
            and "ellipsoid" in r["kinds"] and r["output"] in ("point_a", "point_b", "normal")]
    assert {r["mode"] for r in rows} == {"separated", "penetrating"}
    skipped = _check_rows(rows, lipschitz=False)
    assert skipped <= MAX_SKIPPED_FRACTION * len(rows), (skipped, len(rows))


# -------------------------------------------------------------------------------------------------
# Forward vs reverse mode, second order
# -------------------------------------------------------------------------------------------------


def _reverse_jacobians(theta, meta):
    """Every output's Jacobian per pair by reverse mode: `GRAD_OF_SUM` with one-hot weights picking one
    output component in every pair, so each run gives that row of every pair's Jacobian (the rows of
    `jax.jacrev`, whose `vmap` over the one-hot cotangents runs here as one run per row).

    Returns {output: {theta key: (pairs, *output shape, *input shape)}}."""
    size = len(meta["a.kind"])
    rows = []
    for component in range(COMBINED_WIDTH):
        weights = np.zeros((size, COMBINED_WIDTH))
        weights[:, component] = 1.0
        rows.append(_run_chunked(GRAD_OF_SUM, CHUNK_REVERSE, theta, meta, weights))
    jacobians, start = {}, 0
    for name, width in OUTPUT_WIDTHS.items():
        if width == 1:
            jacobians[name] = rows[start]
        else:
            jacobians[name] = {key: np.stack([row[key] for row in rows[start:start + width]], axis=1)
                               for key in theta}
        start += width
    return jacobians


@functools.cache
def second_order_study():
    """Reverse-mode Jacobians (`_reverse_jacobians`) and `HESSIAN` at one separated and one penetrating
    configuration of the study per kind pair."""
    chosen = {}
    for config in fd_study()["configs"]:
        chosen.setdefault((config["pair"], config["mode"]), config)
    chosen = list(chosen.values())
    assert len(chosen) == 2 * len(PAIRS)
    theta = {k: np.stack([c["theta"][k] for c in chosen]) for k in chosen[0]["theta"]}
    meta = {k: np.stack([c["meta"][k] for c in chosen]) for k in chosen[0]["meta"]}
    hessian = _run_chunked(HESSIAN, len(chosen), theta, meta)
    return chosen, _reverse_jacobians(theta, meta), hessian


def test_jacfwd_matches_jacrev():
    """Reverse mode (`_reverse_jacobians`) equals `jax.jacfwd` (float64, jit, vmap) for every output
    w.r.t. every pose component and shape field, to 1e-10 of the Jacobian's norm. The two modes run
    the solver in two compiled programs, whose rounding differs, so this also tests that the primal
    normal is accurate to far below that on curved cores (`_refine`), not only to √gap as the loops
    leave it."""
    chosen, jacrev, _ = second_order_study()
    bad = []
    for number, config in enumerate(chosen):
        for output in OUTPUTS:
            forward = config["jacobian"][output]
            scale = max(1.0, math.sqrt(sum(float(np.sum(b ** 2)) for b in forward.values())))
            worst = max(float(np.max(np.abs(jacrev[output][k][number] - forward[k])))
                        for k in forward)
            if worst > 1e-10 * scale:
                bad.append((config["kinds"], config["mode"], output, worst / scale))
    assert not bad, f"{len(bad)} (pair, output) Jacobians differ:\n" + "\n".join(map(str, bad[:12]))


def test_hessian_matches_differences_of_the_gradient():
    """`HESSIAN` along each input group's random direction (pose components and shape fields of either
    side) equals the Richardson central differences of the gradient (`JACFWD` at the study's stencil)
    to `FD_TOLERANCE` of its norm (`SECOND_ORDER_CURVED_PENETRATING` excepted) at the second-order
    study's configurations, separated and penetrating, every kind pair; rows at a feature change
    skipped, as for the first derivatives."""
    study = fd_study()
    chosen, _, hessian = second_order_study()
    bad, checked = [], 0
    loose_pairs, loose_tolerance = SECOND_ORDER_CURVED_PENETRATING
    for number, config in enumerate(chosen):
        loose = config["mode"] == "penetrating" and frozenset(config["kinds"]) in loose_pairs
        tolerance = loose_tolerance if loose else FD_TOLERANCE
        study_number = next(n for n, c in enumerate(study["configs"]) if c is config)
        for row in study["rows"]:
            if row["config"] != study_number or row["output"] != "signed":
                continue
            if row["kink"] or row["jump"] or _unconverged(row):
                continue
            checked += 1
            errors, norms = [], []
            for key, differences in row["gradient_fd"].items():
                block = hessian[key][row["key"]][number]  # (*key's shape, *row key's shape)
                along = _contract(block, row["direction"], np.ndim(differences))
                errors.append(np.sum((along - differences) ** 2))
                norms.append(np.sum(differences ** 2))
            error = math.sqrt(sum(errors)) / max(1.0, math.sqrt(sum(norms)))
            if error > tolerance:
                bad.append((config["kinds"], config["mode"], row["group"], error))
    assert checked >= 4 * len(chosen), checked
    assert not bad, f"{len(bad)} of {checked} Hessian directions off:\n" + "\n".join(map(str, bad[:12]))


def test_hessian_is_finite():
    """`jax.hessian` of the signed distance (float64, jit, vmap) w.r.t. poses and shape fields runs and
    is finite, separated and penetrating, for every kind pair."""
    chosen, _, hessian = second_order_study()
    finite = [all(np.all(np.isfinite(leaf[n])) for leaf in jax.tree_util.tree_leaves(hessian))
              for n in range(len(chosen))]
    assert all(finite), [(c["kinds"], c["mode"]) for c, ok in zip(chosen, finite, strict=True) if not ok]
    assert any(np.any(leaf != 0) for leaf in jax.tree_util.tree_leaves(hessian))


# -------------------------------------------------------------------------------------------------
# Batching, float32, degenerate inputs
# -------------------------------------------------------------------------------------------------


def _dyadic(rng, low, high, size=None):
    """Random multiples of 1/16 in [low, high]: exact in float32, so exact contacts stay exact."""
    return rng.integers(round(low * 16), round(high * 16) + 1, size=size) / 16.0


def _dyadic_shape(kind, rng):
    if kind == "sphere":
        return jg.Sphere(_dyadic(rng, 0.25, 1.0))
    if kind == "capsule":
        return jg.Capsule(_dyadic(rng, 0.25, 0.5), _dyadic(rng, 0.25, 1.0))
    if kind == "box":
        return jg.Box(_dyadic(rng, 0.25, 1.0, 3))
    if kind == "cylinder":
        return jg.Cylinder(_dyadic(rng, 0.25, 1.0), _dyadic(rng, 0.25, 1.0))
    if kind == "cone":
        return jg.Cone(_dyadic(rng, 0.25, 1.0), _dyadic(rng, 0.25, 1.0))
    if kind == "ellipsoid":
        return jg.Ellipsoid(_dyadic(rng, 0.25, 1.0, 3))
    return jg.Polytope(_dyadic(rng, -1.0, 1.0, (NUM_VERTICES, 3)))


def _z_extent(shape, side):
    """Identity pose: how far the shape reaches along +z (side=+1) or -z (side=-1)."""
    if isinstance(shape, jg.Sphere):
        return float(shape.radius)
    if isinstance(shape, jg.Capsule):
        return float(shape.radius + shape.half_length)
    if isinstance(shape, jg.Box):
        return float(shape.half_extents[2])
    if isinstance(shape, jg.Cylinder):
        return float(shape.half_length)
    if isinstance(shape, jg.Cone):
        return float(shape.half_height)
    if isinstance(shape, jg.Ellipsoid):
        return float(shape.radii[2])
    return float(np.max(side * np.asarray(shape.vertices)[:, 2]))


IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])


def _stacked_on_top(shape_a, shape_b, offset_xy, gap):
    """B above A along z, both unrotated, `gap` between them (0: exactly touching)."""
    height = _z_extent(shape_a, 1) + _z_extent(shape_b, -1) + gap
    return (shape_a, jg.Pose(np.zeros(3), IDENTITY), shape_b,
            jg.Pose(np.array([offset_xy[0], offset_xy[1], height]), IDENTITY))


def _zero_size_shapes(rng):
    """Every kind with some or all of its sizes zero."""
    a = _dyadic(rng, 0.25, 1.0)
    return [jg.Sphere(0.0), jg.Capsule(0.0, 0.0), jg.Capsule(0.0, a), jg.Capsule(a, 0.0),
            jg.Box(np.zeros(3)), jg.Box(np.array([a, 0.0, 0.0])), jg.Box(np.array([a, a, 0.0])),
            jg.Cylinder(0.0, 0.0), jg.Cylinder(0.0, a), jg.Cylinder(a, 0.0),
            jg.Cone(0.0, 0.0), jg.Cone(0.0, a), jg.Cone(a, 0.0),
            jg.Ellipsoid(np.zeros(3)), jg.Ellipsoid(np.array([a, 0.0, 0.0])),
            jg.Ellipsoid(np.array([a, a, 0.0])), jg.Polytope(np.zeros((4, 3)))]


def _degenerate_polytopes(rng):
    """Coplanar, collinear, coincident and duplicated vertex sets, and masked ones with 1 or 2 rows."""
    plane = rng.normal(size=(8, 3)) * [1, 1, 0]
    line = rng.normal(size=(6, 1)) * rng.normal(size=3)
    point = np.repeat(rng.normal(size=(1, 3)), 5, axis=0)
    duplicated = np.repeat(rng.normal(size=(4, 3)), 3, axis=0)
    square = np.array([[1, 1, 0], [1, -1, 0], [-1, 1, 0], [-1, -1, 0]], float) * 0.5
    masked = np.vstack([rng.normal(size=(2, 3)), np.full((4, 3), 1e30)])
    return [jg.Polytope(plane), jg.Polytope(line), jg.Polytope(point), jg.Polytope(duplicated),
            jg.Polytope(square), jg.Polytope(masked, np.array([True] + [False] * 5)),
            jg.Polytope(masked, np.array([True, True] + [False] * 4))]


def _special_cases(rng):
    """Contacts and degenerate inputs, with the kind pair each belongs to: exactly touching stacks,
    face–face boxes and cylinders, coincident identical shapes, zero-size shapes and degenerate
    polytopes (each against every kind, at random poses and at coincident poses)."""
    cases = []
    kind_of = {jg.Sphere: "sphere", jg.Capsule: "capsule", jg.Box: "box", jg.Cylinder: "cylinder",
               jg.Cone: "cone", jg.Ellipsoid: "ellipsoid", jg.Polytope: "polytope"}

    def add(config, label):
        kinds = tuple(sorted((kind_of[type(config[0])], kind_of[type(config[2])]),
                             key=KINDS.index))
        cases.append((config, kinds, label))

    for kind_a, kind_b in PAIRS:
        for gap in (0.0, 0.0, 0.0, -0.25, 2.0 ** -20):
            offset = _dyadic(rng, -0.25, 0.25, 2)
            add(_stacked_on_top(_dyadic_shape(kind_a, rng), _dyadic_shape(kind_b, rng), offset, gap),
                "touching (exact)" if gap == 0 else "stacked")
    for kind in KINDS:  # coincident identical shapes
        for _ in range(4):
            shape = random_shape(kind, rng)
            pose = _random_pose(rng, rng.normal(size=3))
            add((shape, pose, shape, pose), "coincident")
        shape = _dyadic_shape(kind, rng)
        add((shape, jg.Pose(np.zeros(3), IDENTITY), shape, jg.Pose(np.zeros(3), IDENTITY)),
            "coincident")
    for _ in range(8):  # face–face: aligned boxes and cylinders, unrotated and rotated together
        for kind in ("box", "cylinder"):
            shape_a, shape_b = _dyadic_shape(kind, rng), _dyadic_shape(kind, rng)
            for gap in (0.0, -0.125, 2.0 ** -20):
                config = _stacked_on_top(shape_a, shape_b, _dyadic(rng, -0.25, 0.25, 2), gap)
                add(config, "face-face")
                rotation = random_rotation(rng)
                pose_a = jg.Pose(np.zeros(3), rotation)
                add((shape_a, pose_a, shape_b,
                     jg.Pose(np.asarray(pose_a.apply(np.asarray(config[3].translation))), rotation)),
                    "face-face")
    others = [random_shape(k, rng) for k in KINDS] + [_dyadic_shape(k, rng) for k in KINDS]
    for label, specials in (("zero size", _zero_size_shapes(rng)),
                            ("degenerate polytope", _degenerate_polytopes(rng))):
        for special in specials:
            for other in others + specials[:3]:
                pose = _random_pose(rng, rng.normal(size=3))
                add((special, pose, other, _random_pose(rng, rng.normal(size=3) * 0.7)), label)
                add((other, pose, special, pose), label)  # same pose: centred on each other
                if rng.uniform() < 0.3:
                    add((special, pose, special, pose), label)
    return cases


def _random_cases(rng, per_pair):
    """`per_pair` random poses per kind pair: mostly near contact, some overlapping or far apart."""
    cases = []
    for kind_a, kind_b in PAIRS:
        for _ in range(per_pair):
            a, b = (kind_a, kind_b) if rng.uniform() < 0.5 else (kind_b, kind_a)
            size = 10.0 ** rng.choice([-2, 0, 0, 0, 2])
            shape_a, shape_b = random_shape(a, rng, size), random_shape(b, rng, size)
            direction = rng.normal(size=3)
            direction /= np.linalg.norm(direction)
            origin = rng.normal(size=3) * size
            reach = size * rng.uniform(0.0, 3.0)
            cases.append(((shape_a, _random_pose(rng, origin), shape_b,
                           _random_pose(rng, origin + reach * direction)), (kind_a, kind_b),
                          "random"))
    return cases


@functools.cache
def nan_sweep_cases():
    rng = np.random.default_rng(11)
    special = _special_cases(rng)
    # Touching pairs: random pairs moved along the normal to signed distance 0 (in float64).
    touching = _random_cases(rng, 8)
    theta, meta = _stack([c for c, _, _ in touching])
    _, aux = _run_chunked(JACFWD, CHUNK64, theta, meta)
    shifted = []
    for n, ((shape_a, pose_a, shape_b, pose_b), kinds, _) in enumerate(touching):
        translation = np.asarray(pose_b.translation) - aux["signed"][n] * aux["normal"][n]
        shifted.append(((shape_a, pose_a, shape_b, jg.Pose(translation, pose_b.rotation)), kinds,
                        "touching (shifted)"))
    return special + shifted + _random_cases(rng, NAN_RANDOM_PER_PAIR)


def _weights(rng, count):
    return rng.normal(size=(count, NUM_LOSS_TERMS)).astype(np.float32)


def test_no_nan_in_gradients_float32():
    """`vmap(grad)` (jit) of a random combination of every output of both queries, float32, w.r.t.
    poses and shape fields: finite for random poses of every kind pair, exact and shifted touching
    contacts, coincident identical shapes, face–face contacts, zero-size shapes and degenerate
    polytopes (non-unit quaternions throughout)."""
    cases = nan_sweep_cases()
    theta, meta = _stack([c for c, _, _ in cases], np.float32)
    weights = _weights(np.random.default_rng(0), len(cases))
    values, grads = _run_chunked(VMAP_GRAD, CHUNK32, theta, meta, weights)
    finite = np.ones(len(cases), bool)
    for leaf in grads.values():
        finite &= np.all(np.isfinite(leaf.reshape(len(cases), -1)), axis=1)
    bad_values = sorted({(cases[n][1], cases[n][2]) for n in np.flatnonzero(~np.isfinite(values))})
    bad = sorted({(cases[n][1], cases[n][2]) for n in np.flatnonzero(~finite)})
    assert not bad, (f"{np.sum(~finite)} of {len(cases)} lanes with non-finite gradients: {bad[:8]}; "
                     f"non-finite values in {np.sum(~np.isfinite(values))}: {bad_values[:8]}")
    assert not bad_values, bad_values
    per_pair = {}
    for _, kinds, _ in cases:
        per_pair[kinds] = per_pair.get(kinds, 0) + 1
    assert len(per_pair) == len(PAIRS) and min(per_pair.values()) >= NAN_RANDOM_PER_PAIR


def test_no_nan_in_forward_mode_on_degenerate_inputs_float64():
    """`jacfwd` (float64) of every output at the contact and degenerate cases of the sweep: finite."""
    cases = [c for c in nan_sweep_cases() if c[2] != "random"]
    theta, meta = _stack([c for c, _, _ in cases])
    jac, aux = _run_chunked(JACFWD, CHUNK64, theta, meta)
    finite = np.ones(len(cases), bool)
    for leaf in jax.tree_util.tree_leaves((jac, {o: aux[o] for o in OUTPUTS})):
        finite &= np.all(np.isfinite(leaf.reshape(len(cases), -1)), axis=1)
    bad = sorted({(cases[n][1], cases[n][2]) for n in np.flatnonzero(~finite)})
    assert not bad, f"{np.sum(~finite)} of {len(cases)} lanes non-finite: {bad[:10]}"


def test_grad_of_vmapped_sum_matches_forward_mode_per_pair():
    """`grad(sum(vmap(f)))`, f a random combination of every output, equals the same combination of
    `vmap(jacfwd)`'s Jacobians (float64, jit), mixed kinds and sizes 1e-2 to 1e2 in one batch, to
    1e-10 of each pair's gradient norm. Float64 because the two modes are two programs: in float32
    each is only as close to the exact gradient as float32 allows (1e-3 relative for a 100-unit deep
    cone–ellipsoid overlap here), so their agreement would measure rounding, not the batching."""
    rng = np.random.default_rng(3)
    cases = _random_cases(rng, 4)
    theta, meta = _stack([c for c, _, _ in cases])
    jacobian, _ = _run_chunked(JACFWD, CHUNK64, theta, meta)
    weights = rng.normal(size=(len(cases), COMBINED_WIDTH))
    grads = _run_chunked(GRAD_OF_SUM, CHUNK_REVERSE, theta, meta, weights)
    # The Jacobians' rows in `_combined_outputs`' order, (pairs, 11, *input shape) per input.
    expected = {key: np.einsum("no,no...->n...", weights, np.concatenate(
        [jacobian[name][key].reshape(len(cases), -1, *np.shape(value)[1:]) for name in OUTPUTS], axis=1))
        for key, value in theta.items()}
    scale = np.maximum(1.0, np.sqrt(sum(np.sum(v.reshape(len(cases), -1) ** 2, axis=1)
                                        for v in expected.values())))
    worst = np.max([np.max(np.abs(grads[key] - expected[key]).reshape(len(cases), -1), axis=1)
                    for key in theta], axis=0)
    bad = [(cases[n][1], worst[n] / scale[n]) for n in np.flatnonzero(worst > 1e-10 * scale)]
    assert not bad, f"{len(bad)} of {len(cases)} pairs differ: {bad[:12]}"


def test_gradient_ascent_on_signed_distance_separates_boxes():
    """Overlapping boxes: moving B along +grad of the signed distance w.r.t. its translation (descent on
    the penetration depth) raises the signed distance by at least the step each time (it is
    max_u u·t − h_A(u) − h_B(−u), so the gradient is a supporting direction) and separates every
    pair within depth/step + 1 steps. Float32, 256 random pairs at once."""
    rng = np.random.default_rng(5)
    configs = []
    for _ in range(CHUNK32):
        direction = rng.normal(size=3)
        direction /= np.linalg.norm(direction)
        configs.append((random_shape("box", rng), _random_pose(rng, np.zeros(3)),
                        random_shape("box", rng),
                        _random_pose(rng, direction * rng.uniform(0.0, 0.6))))
    theta, meta = _stack(configs, np.float32)
    weights = np.zeros((CHUNK32, NUM_LOSS_TERMS), np.float32)
    weights[:, 1] = 1  # the signed distance
    step = 0.1
    signed, grads = VMAP_GRAD(theta, meta, weights)
    signed = np.asarray(signed)
    assert np.all(signed < 0)
    max_steps = int(np.ceil(-signed.min() / step)) + 1
    for _ in range(max_steps):
        theta["b.translation"] = theta["b.translation"] + step * np.asarray(grads["b.translation"])
        previous = signed
        signed, grads = VMAP_GRAD(theta, meta, weights)
        signed = np.asarray(signed)
        assert np.all(np.isfinite(np.asarray(grads["b.translation"])))
        assert np.all(signed >= previous + 0.99 * step - 1e-5), np.min(signed - previous)
    assert np.all(signed > 0), np.sum(signed <= 0)
