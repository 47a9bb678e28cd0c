"""Parity benchmark: jaxgjk against MuJoCo's native C ``mj_geomDistance``, scenario by scenario.

A scenario is a kind pair of ``cases.py`` (``sphere-sphere``, ``box-box``, ``polytope-polytope/32``,
...), separated and penetrating.  For each: ``--tile`` (256) random pairs of ``cases.make_case``
(shapes and poses), repeated ``--pairs / --tile`` times into one batch of ``--pairs`` (65 536) pairs.
On that batch:

* **jaxgjk**, float32 (JAX's default, x64 off): ``jax.jit(jax.vmap(query))`` for each of
  ``--queries`` (polytope meshes shared, ``in_axes=None``, as ``run.py``), built twice: returning the
  full ``DistanceResult`` (kernel ``distance``, ``signed_distance``) and returning only what
  ``mj_geomDistance`` returns, the distance and the two witness points (``distance/fromto``,
  ``signed_distance/fromto``; XLA drops the outputs nobody reads).  Compile (``lower`` + ``compile``)
  is timed apart; then one untimed call (its results are checked), then the best of ``--repeats``
  calls, each ``jax.block_until_ready``'d (fewer when the next would pass ``--budget`` seconds).
  Separated and penetrating pairs share each executable.  ``value_and_grad``: the gradient w.r.t.
  pose_b of the summed signed distances, timed the same way, reported over ``signed_distance``.
* **cold compiles**: the kernels of ``--cold-kernels`` compiled again, each in a fresh Python
  process (import jax and jaxgjk, build the inputs, ``jax.jit(f).lower(*args).compile()``, each
  step timed; persistent compilation cache off).
* **MuJoCo** 4.0 ``mj_geomDistance`` in a C loop on one thread (``peers.run_mujoco_native``,
  ``mujoco_native.c``): the same pairs, float64, distmax 10 (0 for ``intersect``), ``--pairs`` calls
  per pass (the model holds the ``--tile`` distinct pairs), one warm-up pass, then the best of
  ``--repeats`` passes timed by ``clock_gettime(CLOCK_MONOTONIC)``; with ``fromto`` and without.
* **ratio** = jaxgjk pairs/s (wall clock, XLA on every core) / MuJoCo pairs/s (one core, with
  ``fromto``).  MuJoCo has one routine: the ``distance`` ratio compares jaxgjk's GJK-only query with
  MuJoCo's signed one (they agree on separated pairs).
* **correctness**, on the distinct pairs: max |jaxgjk - MuJoCo| (``distance`` against max(MuJoCo,
  0)), both against the float64 closed form of ``cases.reference_signed_distance`` where it exists,
  witness points against MuJoCo's ``fromto``, statuses, iterations, and whether every copy of a pair
  in the batch gave the same answer.

Writes ``results/<tag>.json`` (every number) and ``results/<tag>.md`` (tables).  Resumable: what
is already in ``<tag>.json`` is kept and what runs now replaces its part (a scenario's MuJoCo
numbers, the kernels of ``--kernels``, the cold compiles of ``--cold-kernels``), so a long
baseline runs as several commands, each under 10 minutes, with the same ``--tag``: a few
scenarios each, a slow scenario's kernels in turn (``--kernels``), its cold compiles on their own
(``--no-cold``, then ``--cold-only``).  ``--fresh`` starts over.  The tables list every command
that contributed, with its load average and jaxgjk source hash.

Needs only jaxgjk's own venv (jax, numpy, scipy, mujoco) and gcc.  Run it from the repository root;
it measures the jaxgjk of its own checkout::

    python -m benchmarks.parity --scenarios sphere-sphere,box-box
    python -m benchmarks.parity --tile 64 --pairs 4096 --repeats 2 --no-cold --tag parity-smoke
"""

from __future__ import annotations

import argparse
import copy
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import time

import numpy as np

from . import cases as C
from . import peers as P
from . import report
from . import run as R

_HERE = os.path.dirname(os.path.abspath(__file__))

SCENARIOS = ("sphere-sphere", "sphere-capsule", "capsule-capsule", "sphere-box", "capsule-box",
             "box-box", "box-halfspace", "sphere-cylinder", "sphere-ellipsoid", "cylinder-box",
             "ellipsoid-ellipsoid",
             "polytope-polytope/8", "polytope-polytope/32", "polytope-polytope/128",
             "polytope-polytope/512")
QUERIES = ("distance", "signed_distance", "intersect")
COLD_KERNELS = ("distance", "signed_distance", "value_and_grad")
DTYPE = "float32"
SETTINGS = ("tile", "pairs", "repeats", "budget", "seed", "mj_layout")  # must agree to merge


def parse_scenario(label: str) -> tuple[str, int | None]:
    """``"polytope-polytope/32"`` -> (kind, 32); ``"box-box"`` -> (kind, None)."""
    kind, _, nv = label.partition("/")
    if kind not in C.KINDS or (kind == "polytope-polytope") != bool(nv):
        raise ValueError(f"unknown scenario {label!r}; e.g. {', '.join(SCENARIOS)}")
    return kind, int(nv) if nv else None


def kernels_for(queries: list[str]) -> list[str]:
    """Kernel names timed for ``queries``: each query, its ``/fromto`` twin, then value_and_grad."""
    out = []
    for q in queries:
        out += [q] if q == "intersect" else [q, f"{q}/fromto"]
    return out + ["value_and_grad"]


def kernel_fn(case: C.Case, kernel: str):
    """The batched function of ``kernel`` over ``case``'s pairs: f(shape_a, pose_a, shape_b, pose_b).

    ``<query>/fromto`` returns (distance, point_a, point_b) only, like ``mj_geomDistance``.
    """
    query, _, variant = kernel.partition("/")
    fn = R.jaxgjk_batched(case, query)
    if variant != "fromto":
        return fn

    def fromto(*args):
        res = fn(*args)
        return res.distance, res.point_a, res.point_b

    return fromto


def tiled_case(kind: str, nv: int | None, penetrating: bool, tile: int, pairs: int,
               seed: int) -> tuple[C.Case, C.Case]:
    """(the ``tile`` distinct pairs, the batch: those pairs repeated to ``pairs`` pairs)."""
    case = C.make_case(kind, tile, penetrating, seed, nv)
    return case, C.subset(case, np.tile(np.arange(tile), pairs // tile))


# --------------------------------------------------------------------------------------------
# cold compiles (one fresh process per kernel)


def cold_compile_child(spec: dict) -> dict:
    """In a fresh process: time importing, building the inputs, lowering and compiling a kernel."""
    t0 = time.perf_counter()
    import jax

    jax.config.update("jax_enable_x64", False)
    import jaxgjk

    t1 = time.perf_counter()
    _, batch = tiled_case(spec["kind"], spec["n_vertices"], False, spec["tile"], spec["pairs"],
                          spec["seed"])
    args = jax.block_until_ready(R.jaxgjk_args(batch, np.arange(batch.n), DTYPE))
    t2 = time.perf_counter()
    lowered = jax.jit(kernel_fn(batch, spec["kernel"])).lower(*args)
    t3 = time.perf_counter()
    lowered.compile()
    t4 = time.perf_counter()
    return dict(import_s=t1 - t0, inputs_s=t2 - t1, lower_s=t3 - t2, compile_s=t4 - t3,
                jaxgjk_path=os.path.dirname(jaxgjk.__file__),
                cache_dir=jax.config.jax_compilation_cache_dir,
                cache_enabled=bool(jax.config.jax_enable_compilation_cache))


def cold_compile(kind: str, nv: int | None, kernel: str, args) -> dict:
    """Run ``cold_compile_child`` in a new interpreter; add its whole wall time (``process_s``)."""
    spec = dict(kind=kind, n_vertices=nv, kernel=kernel, tile=args.tile, pairs=args.pairs,
                seed=args.seed)
    env = dict(os.environ, JAX_ENABLE_COMPILATION_CACHE="false")
    t0 = time.perf_counter()
    try:
        # From this checkout's root, so that the child measures this checkout's jaxgjk.
        done = subprocess.run([sys.executable, "-m", "benchmarks.parity", "--cold-child",
                               json.dumps(spec)], capture_output=True, text=True, env=env,
                              cwd=os.path.dirname(_HERE), timeout=args.cold_timeout)
    except subprocess.TimeoutExpired:
        return dict(error=f"timed out after {args.cold_timeout} s")
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        return dict(error=done.stderr.strip().splitlines()[-1] if done.stderr.strip() else
                    f"exit {done.returncode}", process_s=wall)
    rec = json.loads(done.stdout.strip().splitlines()[-1])
    rec["process_s"] = wall
    return rec


# --------------------------------------------------------------------------------------------
# measurements


def mujoco_row(case: C.Case, batch: C.Case, layout: str, queries: list[str], repeats: int) -> dict:
    """MuJoCo native on the batch: timings, and values and fromto of the distinct pairs.

    layout ``tile``: a model with the geoms of the distinct pairs (``case``), each pass loops over
    the batch's pairs; ``full``: a model with all the batch's geoms (2 per pair; slow to build).
    """
    if layout == "tile":
        run_case, reps = case, batch.n // case.n
    else:
        run_case, reps = batch, 1

    def native(query, fromto=False):
        return P.run_mujoco_native(run_case, query, repeats, tile=reps, fromto=fromto)

    signed, plain = native("signed_distance", fromto=True), native("signed_distance")
    out = dict(signed=signed["raw"][:case.n], fromto=signed["fromto"][:case.n])
    timing = dict(rate=batch.n / signed["seconds"], rate_no_fromto=batch.n / plain["seconds"],
                  rate_cpu=batch.n / signed["cpu_seconds"],
                  runs=signed["runs"], runs_no_fromto=plain["runs"], layout=layout,
                  cpu_util=signed["cpu_seconds"] / signed["seconds"], notes=signed["notes"])
    if "intersect" in queries:
        inter = native("intersect")
        out["flags"] = inter["intersect"][:case.n]
        timing["rate_intersect"] = batch.n / inter["seconds"]
    out["timing"] = timing
    return out


def _numpy_outputs(kernel: str, out) -> dict:
    """Device outputs of ``kernel`` -> numpy arrays over the whole batch."""
    import jax

    query, _, variant = kernel.partition("/")
    if query == "intersect":
        return dict(flags=np.asarray(out))
    if query == "value_and_grad":
        value, grad = out
        leaves = [np.asarray(g).reshape(len(np.asarray(g)), -1)
                  for g in jax.tree_util.tree_leaves(grad)]
        finite = np.all(np.isfinite(np.concatenate(leaves, axis=1)), axis=1)
        return dict(value=float(value), grad_nonfinite=int(np.sum(~finite)))
    if variant == "fromto":
        distance, point_a, point_b = out
        return dict(distance=np.asarray(distance, np.float64),
                    point_a=np.asarray(point_a, np.float64), point_b=np.asarray(point_b, np.float64))
    return dict(distance=np.asarray(out.distance, np.float64),
                point_a=np.asarray(out.point_a, np.float64),
                point_b=np.asarray(out.point_b, np.float64),
                status=np.asarray(out.status), iterations=np.asarray(out.iterations))


def time_kernel(exe, call_args, repeats: int, budget: float) -> tuple[dict, object]:
    """One untimed call (its output is returned), then ``run._timed_runs``: best of ``repeats``.

    When the first call alone takes longer than ``budget``, it is the measurement
    (``first_only``): on such slow calls one-time costs are lost in the noise.
    """
    import jax

    c0, t0 = time.process_time(), time.perf_counter()
    first = jax.block_until_ready(exe(*call_args))
    first_s, first_cpu = time.perf_counter() - t0, time.process_time() - c0
    if first_s > budget:
        walls, cpus = [first_s], [first_cpu]
    else:
        walls, cpus, _ = R._timed_runs(lambda: jax.block_until_ready(exe(*call_args)), repeats,
                                       budget)
    best = int(np.argmin(walls))
    return dict(first_s=first_s, first_only=first_s > budget, runs=walls, cpu_runs=cpus,
                seconds=walls[best], cpu_s=cpus[best], cpu_util=cpus[best] / walls[best]), first


def _max_abs(a: np.ndarray, b: np.ndarray) -> float | None:
    ok = np.isfinite(a) & np.isfinite(b)
    return float(np.max(np.abs(a[ok] - b[ok]))) if ok.any() else None


def arbitrate(case: C.Case, d: np.ndarray, mj_d: np.ndarray, ref: np.ndarray, k: int,
              cache: dict) -> dict | None:
    """The ``k`` pairs where jaxgjk and MuJoCo disagree most, against the float64 arbiter.

    Only where ``ref`` has no closed form; ``cases.arbiter_signed_distance`` is independent of
    GJK/EPA (exact hull for polytopes).  ``cache`` maps pair index -> arbiter value (shared by
    the kernels of a row).  Returns the pairs, their three values and both max errors.
    """
    gap = np.where(np.isfinite(d) & np.isfinite(mj_d) & ~np.isfinite(ref), np.abs(d - mj_d), -1.0)
    idx = [int(i) for i in np.argsort(-gap)[:k] if gap[i] > 0]
    if not idx:
        return None
    todo = [i for i in idx if i not in cache]
    if todo:
        cache.update(zip(todo, C.arbiter_signed_distance(case, todo).tolist(), strict=True))
    arb = np.array([cache[i] for i in idx])
    return dict(pairs=idx, jaxgjk=d[idx].tolist(), mujoco=mj_d[idx].tolist(), arbiter=arb.tolist(),
                jaxgjk_err=float(np.max(np.abs(d[idx] - arb))),
                mujoco_err=float(np.max(np.abs(mj_d[idx] - arb))))


def check_kernel(kernel: str, res: dict, case: C.Case, mj: dict, ref: np.ndarray,
                 arbiter_n: int, arbiter_cache: dict) -> dict:
    """Correctness numbers of one kernel's outputs on the distinct pairs (the first tile)."""
    import jaxgjk as jg

    tile, penetrating = case.n, case.penetrating
    query = kernel.partition("/")[0]
    if query == "value_and_grad":
        return dict(grad_nonfinite=res["grad_nonfinite"], value_finite=bool(np.isfinite(res["value"])))
    if query == "intersect":
        flags = res["flags"]
        spread = int(np.sum(flags.reshape(-1, tile) != flags[:tile]))
        return dict(tile_mismatches=spread, flag_errors=int(np.sum(flags[:tile] != penetrating)),
                    vs_mujoco_flags=int(np.sum(flags[:tile] != mj["flags"])))
    dist_all = res["distance"]
    d = dist_all[:tile]
    copies = dist_all.reshape(-1, tile)
    signed = query == "signed_distance"
    mj_d = mj["signed"] if signed else np.maximum(mj["signed"], 0.0)
    ref_d = ref if signed else np.maximum(ref, 0.0)
    wrong = (d > 0) if penetrating else (d <= 0)
    if not signed and penetrating:
        wrong = d != 0
    out = dict(vs_mujoco=_max_abs(d, mj_d), vs_ref=_max_abs(d, ref_d),
               tile_spread=float(np.nanmax(np.abs(copies - d))) if np.isfinite(copies).any() else None,
               n_nan=int(np.sum(~np.isfinite(d))), wrong_sign=int(np.sum(wrong)))
    if signed and arbiter_n:
        out["arbiter"] = arbitrate(case, d, mj_d, ref, arbiter_n, arbiter_cache)
    if signed:  # witness points against MuJoCo's fromto (only defined for signed queries)
        found = np.any(mj["fromto"] != 0.0, axis=1)
        gap = np.maximum(np.linalg.norm(res["point_a"][:tile] - mj["fromto"][:, :3], axis=1),
                         np.linalg.norm(res["point_b"][:tile] - mj["fromto"][:, 3:], axis=1))
        out["witness_vs_mujoco"] = float(np.max(gap[found])) if found.any() else None
    if "status" in res:
        names = {int(s): s.name for s in jg.Status}
        status, iters = res["status"][:tile], res["iterations"][:tile]
        out["status_counts"] = {names.get(int(k), str(k)): int(v)
                                for k, v in zip(*np.unique(status, return_counts=True), strict=True)}
        out["iterations"] = dict(p50=float(np.percentile(iters, 50)),
                                 p99=float(np.percentile(iters, 99)), max=int(iters.max()))
    return out


def run_scenario(label: str, args, log) -> dict:
    """MuJoCo and jaxgjk on one scenario's separated and penetrating batches (and cold compiles)."""
    import jax

    import jaxgjk as jg

    kind, nv = parse_scenario(label)
    load0 = os.getloadavg()[0]
    t_start = time.perf_counter()
    cases = {pen: tiled_case(kind, nv, pen, args.tile, args.pairs, args.seed) for pen in (False, True)}
    rows, mj_data, refs = {}, {}, {}
    for pen, (case, batch) in cases.items():
        mj_data[pen] = mj = mujoco_row(case, batch, args.mj_layout, args.queries, args.repeats)
        refs[pen] = ref = C.reference_signed_distance(case)
        key = "pen" if pen else "sep"
        rows[key] = dict(
            penetrating=pen, mujoco=mj["timing"], collider=P.mujoco_collider(case),
            ref="cf" if np.isfinite(ref).all() else ("partial cf" if np.isfinite(ref).any() else None),
            mujoco_vs_ref=_max_abs(mj["signed"], ref), jaxgjk={}, checks={})
        log(f"  {label} {key}: MuJoCo native {mj['timing']['rate'] / 1e6:.3f} M pairs/s "
            f"({mj['timing']['rate_no_fromto'] / 1e6:.3f} without fromto, "
            f"{mj['timing']['rate_cpu'] / 1e6:.3f} per CPU-s); {rows[key]['collider']}")
    entry = dict(scenario=label, kind=kind, n_vertices=nv, rows=rows, compile={}, cold={},
                 jaxgjk_skipped=None)
    if args.mujoco_only or not R.jaxgjk_supports(kind):
        entry["jaxgjk_skipped"] = ("--mujoco-only" if args.mujoco_only else
                                   f"this jaxgjk has no jg.HalfSpace ({jg.__version__})")
        log(f"  {label}: jaxgjk skipped: {entry['jaxgjk_skipped']}")
    else:
        inputs = {pen: jax.block_until_ready(R.jaxgjk_args(batch, np.arange(batch.n), DTYPE))
                  for pen, (_, batch) in cases.items()}
        arbiter_cache: dict = {False: {}, True: {}}
        for kernel in args.kernels:
            t0 = time.perf_counter()
            lowered = jax.jit(kernel_fn(cases[False][1], kernel)).lower(*inputs[False])
            t1 = time.perf_counter()
            exe = lowered.compile()
            t2 = time.perf_counter()
            entry["compile"][kernel] = dict(lower_s=t1 - t0, compile_s=t2 - t1)
            for pen in (False, True):
                timing, out = time_kernel(exe, inputs[pen], args.repeats, args.budget)
                timing["rate"] = args.pairs / timing["seconds"]
                timing["rate_cpu"] = args.pairs / timing["cpu_s"]
                row = rows["pen" if pen else "sep"]
                # ratios use MuJoCo's pass of the same command, even after merging commands
                timing["mujoco_rate"] = row["mujoco"]["rate"]
                timing["mujoco_rate_cpu"] = row["mujoco"]["rate_cpu"]
                row["jaxgjk"][kernel] = timing
                row["checks"][kernel] = check_kernel(kernel, _numpy_outputs(kernel, out),
                                                     cases[pen][0], mj_data[pen], refs[pen],
                                                     args.arbiter_n, arbiter_cache[pen])
                del out
                log(f"  {label} {'pen' if pen else 'sep'}: {kernel:<22} compile {t2 - t0:5.1f} s, "
                    f"best {timing['seconds']:.4f} s of {len(timing['runs'])} -> "
                    f"{timing['rate'] / 1e3:9.1f} k pairs/s (cpu x{timing['cpu_util']:.1f})")
            del exe, lowered
        del inputs
        jax.clear_caches()
        if not args.no_cold:
            entry["cold"] = cold_compiles(label, args, log)
    entry.update(loadavg_start=load0, loadavg_end=os.getloadavg()[0],
                 seconds=time.perf_counter() - t_start)
    return entry


def cold_compiles(label: str, args, log) -> dict:
    """``cold_compile`` of every kernel of ``--cold-kernels`` for the scenario."""
    import jaxgjk as jg

    kind, nv = parse_scenario(label)
    out = {}
    for kernel in args.cold_kernels:
        out[kernel] = rec = cold_compile(kind, nv, kernel, args)
        log(f"  {label}: cold {kernel:<16} "
            + (f"ERROR {rec['error']}" if "error" in rec else
               f"lower+compile {rec['lower_s'] + rec['compile_s']:5.1f} s "
               f"(import {rec['import_s']:.1f} s, process {rec['process_s']:.1f} s)"))
        if "jaxgjk_path" in rec and rec["jaxgjk_path"] != os.path.dirname(jg.__file__):
            raise RuntimeError(f"cold child imported {rec['jaxgjk_path']}, not "
                               f"{os.path.dirname(jg.__file__)}")
    return out


# --------------------------------------------------------------------------------------------
# environment, store, report


def environment() -> dict:
    """Machine, versions and the jaxgjk source hash of this process."""
    import jax

    import jaxgjk as jg

    try:
        gcc = subprocess.run(["gcc", "--version"], capture_output=True, text=True).stdout
        gcc = gcc.splitlines()[0] if gcc else "?"
    except OSError:
        gcc = "missing"
    try:
        mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        mem_gib = float("nan")
    versions = {k: v for k, v in P.peer_versions().items() if v != "missing"}
    import mujoco

    opt = P.build_mj_model(C.make_case("sphere-sphere", 1, False, 0)).opt
    return dict(cpu_model=report.cpu_model(), cpu_count=os.cpu_count(),
                cpus_usable=len(os.sched_getaffinity(0)), mem_gib=mem_gib,
                platform=platform.platform(), python=sys.version.split()[0], gcc=gcc,
                versions=versions, jax_device=str(jax.devices()[0]), jaxgjk_version=jg.__version__,
                jaxgjk_source=report.jaxgjk_source_id(), xla_flags=os.environ.get("XLA_FLAGS", ""),
                jaxgjk_git=git_state(os.path.dirname(jg.__file__)),
                mujoco_ccd=dict(tolerance=float(opt.ccd_tolerance), iterations=int(opt.ccd_iterations),
                                nativeccd="off" if opt.disableflags & mujoco.mjtDisableBit.mjDSBL_NATIVECCD
                                else "on"),
                mujoco_compile=" ".join(shlex.quote(a) for a in
                                        P.native_compile_command("benchmarks/build/mujoco_native")))


def git_state(path: str) -> dict:
    """HEAD of the checkout holding ``path``, the last commit that touched it, uncommitted edits."""
    def git(*a):
        done = subprocess.run(["git", "-C", path, *a], capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else None

    return dict(head=git("rev-parse", "--short", "HEAD"),
                last_commit=git("log", "-1", "--format=%h %ad", "--date=short", "--", "."),
                dirty=bool(git("status", "--porcelain", "--", ".")))


def load_store(path: str, fresh: bool) -> dict:
    """The results stored under ``path`` (``{"runs": [...], "scenarios": {...}}``), or empty."""
    if fresh or not os.path.exists(path):
        return dict(runs=[], scenarios={})
    with open(path) as f:
        return json.load(f)


def run_records(entry: dict) -> list[dict]:
    """The records of a scenario that name the command (index into runs) that measured them.

    The entry itself (MuJoCo, load), each jaxgjk kernel's timing, each compile, each cold compile.
    """
    return ([entry] + [t for row in entry["rows"].values() for t in row["jaxgjk"].values()]
            + list(entry["compile"].values()) + list(entry["cold"].values()))


def merge_entry(old: dict | None, new: dict) -> dict:
    """A scenario's stored entry updated with a new measurement of some of its kernels.

    MuJoCo's numbers, the load and the skip note come from ``new``; jaxgjk's timings, checks and
    compile times of kernels that ``new`` did not measure are kept from ``old``.
    """
    if old is None:
        return new
    out = dict(new, compile=old["compile"] | new["compile"], cold=old["cold"] | new["cold"])
    for key, row in out["rows"].items():
        prev = old["rows"].get(key, {})
        row["jaxgjk"] = prev.get("jaxgjk", {}) | row["jaxgjk"]
        row["checks"] = prev.get("checks", {}) | row["checks"]
    return out


def save_store(store: dict, prefix: str) -> None:
    """Write ``<prefix>.json`` (runs no record refers to any more are dropped) and the tables."""
    store = copy.deepcopy(store)
    records = [r for e in store["scenarios"].values() for r in run_records(e)]
    used = sorted({r["run"] for r in records})
    renumber = {old: new for new, old in enumerate(used)}
    for r in records:
        r["run"] = renumber[r["run"]]
    store["runs"] = [store["runs"][i] for i in used]
    with open(prefix + ".json", "w") as f:
        json.dump(report.jsonable(store), f, indent=1)
    with open(prefix + ".md", "w") as f:
        f.write(markdown(store))


def _ordered(scenarios: dict) -> list[dict]:
    rank = {s: i for i, s in enumerate(SCENARIOS)}
    return sorted(scenarios.values(), key=lambda e: (rank.get(e["scenario"], len(rank)), e["scenario"]))


def _rate(x) -> str:
    return report.fmt_rate(x) if x is not None else "–"


def _ratio(x) -> str:
    if x is None or not np.isfinite(x):
        return "–"
    return f"{x:.3g}"


def _rates_and_ratios(row: dict, query: str, rate: str, runs: list[dict]) -> tuple[str, str]:
    """Table cells "full / fromto" of jaxgjk's ``rate`` for ``query`` and of its ratio to MuJoCo's.

    † marks a rate from fewer timed calls than its command's ``--repeats``.
    """
    timings = [row["jaxgjk"].get(k, {}) for k in (query, f"{query}/fromto")]
    rates = [t.get(rate) for t in timings]
    mj = [t.get(f"mujoco_{rate}") for t in timings]
    return (" / ".join(_rate(r) + ("†" if t and len(t["runs"]) < runs[t["run"]]["options"]["repeats"]
                                   else "")
                       for r, t in zip(rates, timings, strict=True)),
            " / ".join(_ratio(r / m if r else None) for r, m in zip(rates, mj, strict=True)))


def _sec(x) -> str:
    return "–" if x is None else f"{x:.1f}"


def markdown(store: dict) -> str:
    """The tables of ``<tag>.md`` from the stored runs and scenarios."""
    runs, entries = store["runs"], _ordered(store["scenarios"])
    L: list[str] = []
    w = L.append
    w("# Parity: jaxgjk against MuJoCo's native `mj_geomDistance`\n")
    w("Produced by (each command ran the scenarios listed; the script merges them into this file):\n")
    for i, r in enumerate(runs):
        w(f"{i + 1}. `{r['command']}` — {r['date']}, {r['total_s'] / 60:.1f} min, load average "
          f"(1 min) {r['loadavg_start']:.1f} at start / {r['loadavg_end']:.1f} at end, jaxgjk source "
          f"{r['env']['jaxgjk_source']['sha256']}: {', '.join(r['scenarios'])}")
    env = runs[-1]["env"] if runs else {}
    opts = runs[-1]["options"] if runs else {}
    w("")
    hashes = {r["env"]["jaxgjk_source"]["sha256"] for r in runs}
    settings = {json.dumps({k: r["options"][k] for k in SETTINGS}, sort_keys=True) for r in runs}
    if len(hashes) > 1:
        w(f"**Warning: the commands measured different jaxgjk sources ({', '.join(sorted(hashes))}).**\n")
    if len(settings) > 1:
        w("**Warning: the commands used different settings; see the JSON.**\n")
    if env:
        v = env["versions"]
        w(f"- machine: {env['cpu_model']}, {env['cpu_count']} cores ({env['cpus_usable']} usable), "
          f"{env['mem_gib']:.0f} GiB, {env['platform']}; shared with other work, so timings are "
          "noisy: compare ratios measured in the same run (the load average of each scenario is "
          "in the JSON)")
        w(f"- versions: python {env['python']}, jax {v.get('jax')}, jaxlib {v.get('jaxlib')}, numpy "
          f"{v.get('numpy')}, mujoco {v.get('mujoco')}, {env['gcc']}; jaxgjk {env['jaxgjk_version']} "
          f"(sha256 of its sources {env['jaxgjk_source']['sha256']}, newest file "
          f"{env['jaxgjk_source']['latest_mtime']}; git: last commit touching `jaxgjk/` "
          f"{env.get('jaxgjk_git', {}).get('last_commit')}"
          + (", with uncommitted edits" if env.get("jaxgjk_git", {}).get("dirty") else "")
          + f"); XLA_FLAGS `{env['xla_flags']}`")
        w(f"- pairs: per scenario, `cases.make_case(kind, {opts['tile']}, penetrating, "
          f"seed={opts['seed']}, n_vertices)` ({opts['tile']} distinct pairs: random sizes, poses and "
          f"shared polytope meshes), repeated {opts['pairs'] // opts['tile']} times: "
          f"{opts['pairs']} pairs per batch and per MuJoCo pass")
        w(f"- jaxgjk: float32 inputs, `jax_enable_x64` off; `jax.jit(jax.vmap(query))` on the whole "
          f"batch, XLA on every core; compile (`lower` + `compile`) timed apart; one untimed call, "
          f"then the best of up to {opts['repeats']} calls with `jax.block_until_ready` (fewer when "
          f"the next would pass {opts['budget']:.0f} s). \"full\" returns the whole `DistanceResult`, "
          "\"fromto\" only (distance, point_a, point_b), what `mj_geomDistance` gives. vag = "
          "`jax.value_and_grad` of the summed signed distances w.r.t. pose_b, time / "
          "`signed_distance` (full) time")
        w(f"- MuJoCo: `mj_geomDistance` in our C loop `benchmarks/mujoco_native.c`, built with "
          f"`{env['mujoco_compile']}`; 1 thread, float64, distmax {P.DISTMAX:g} (0 for intersect), "
          + ("options: nativeccd {nativeccd}, ccd_tolerance {tolerance:g}, ccd_iterations "
             "{iterations} (MuJoCo's defaults); ".format(**env["mujoco_ccd"])
             if "mujoco_ccd" in env else "")
          + (f"the model holds the {2 * opts['tile']} geoms of the distinct pairs"
             if opts.get("mj_layout", "tile") == "tile" else
             f"the model holds all {2 * opts['pairs']} geoms of the batch")
          + f" (poses written into `mjData` once), a pass calls it for the {opts['pairs']} pairs "
          "of the batch; "
          f"{P.NATIVE_WARMUP} untimed warm-up pass, then the best of {opts['repeats']} passes, each "
          "timed by `clock_gettime(CLOCK_MONOTONIC)` around the whole pass (the C loop; no Python "
          "inside). The MuJoCo column is with `fromto` (witness points) written; the JSON also has "
          "it without")
        w("- ratio = jaxgjk pairs/s (2 cores) / MuJoCo pairs/s (1 core, with fromto); > 1: jaxgjk "
          "faster. Each ratio uses MuJoCo's pass measured by the same command as the jaxgjk "
          "kernel (a scenario measured in parts shows its last command's MuJoCo rate). MuJoCo "
          "has one routine (signed): the `distance` ratios set jaxgjk's GJK-only query against it")
        w("- cold compile: `lower` + `compile` of the kernel in a fresh Python process (nothing "
          "compiled before, persistent compilation cache off); the JSON also has the import and "
          "whole-process times\n")

    w("## Throughput (pairs per second, wall clock) and ratios to MuJoCo\n")
    w("The targets' measure. Both sides slow down when other work holds the cores; the next "
      "table is less sensitive to that. † = fewer timed calls than asked fitted in the budget "
      "(one: the first call, when it alone exceeded the budget). vag / sd = value_and_grad time "
      "over signed_distance (full) time, wall clock / CPU time (‡: timed by different commands).\n")
    def rate_table(mujoco_heading, rate, last_heading, last_cell):
        """One row per scenario and side: MuJoCo's `rate`, jaxgjk's distance and signed_distance
        (full / fromto) with their ratios, and `last_cell(row)`."""
        w(f"| scenario | {mujoco_heading} | jaxgjk distance full / fromto | ratio | jaxgjk "
          f"signed_distance full / fromto | ratio | {last_heading} |")
        w("|---|---|---|---|---|---|---|")
        for e in entries:
            for key, row in e["rows"].items():
                dist, sd = (_rates_and_ratios(row, q, rate, runs) for q in ("distance", "signed_distance"))
                w(f"| {e['scenario']} {key} | {_rate(row['mujoco'][rate])} | {dist[0]} | {dist[1]} | "
                  f"{sd[0]} | {sd[1]} | {last_cell(row)} |")

    def grad_over_signed(row):
        vag, sdt = row["jaxgjk"].get("value_and_grad"), row["jaxgjk"].get("signed_distance")
        if not (vag and sdt):
            return "–"
        return (f"{_ratio(vag['seconds'] / sdt['seconds'])} / {_ratio(vag['cpu_s'] / sdt['cpu_s'])}"
                + ("‡" if vag["run"] != sdt["run"] else ""))

    def cpu_shares(row):
        share = row["jaxgjk"].get("signed_distance", {}).get("cpu_util")
        return f"{row['mujoco']['cpu_util']:.2f} / {'–' if share is None else f'{share:.2f}'}"

    rate_table("MuJoCo C 1 core", "rate", "vag / sd", grad_over_signed)
    w("\n## Throughput per CPU-second\n")
    w("Pairs divided by the process CPU time of the same timed call or pass (all threads): "
      "MuJoCo's is its speed on a core of its own, jaxgjk's its work per core, so the ratios "
      "here compare one core with one core. CPU share = CPU time / wall time: below 1 for "
      "MuJoCo, it waited for a core; jaxgjk's is the cores XLA kept busy (signed_distance, full).\n")
    rate_table("MuJoCo C", "rate_cpu", "CPU share MuJoCo / jaxgjk", cpu_shares)
    inter = [(e, key, row) for e in entries for key, row in e["rows"].items()
             if "intersect" in row["jaxgjk"]]
    if inter:
        w("\n`intersect` (MuJoCo: `mj_geomDistance` with distmax 0, which lets its colliders stop "
          "early on separated pairs):\n")
        w("| scenario | MuJoCo C 1 core | jaxgjk | ratio |")
        w("|---|---|---|---|")
        for e, key, row in inter:
            mj, jr = row["mujoco"].get("rate_intersect"), row["jaxgjk"]["intersect"]["rate"]
            w(f"| {e['scenario']} {key} | {_rate(mj)} | {_rate(jr)} | "
              f"{_ratio(jr / mj if mj else None)} |")
    skipped = [e for e in entries if e.get("jaxgjk_skipped")]
    for e in skipped:
        w(f"\n{e['scenario']}: jaxgjk skipped ({e['jaxgjk_skipped']}); MuJoCo measured.")

    w("\n## Correctness (on the distinct pairs)\n")
    w("Max |Δ| of the signed distances (`distance`: against max(·, 0)); ref = float64 closed form "
      "(`cases.reference_signed_distance`), – where there is none; arbiter = where there is none, "
      "max error of each side on the pairs where they disagree most (up to `--arbiter-n` per row), "
      "against `cases.arbiter_signed_distance` (float64, independent of GJK/EPA). witness = max distance of "
      "jaxgjk's point_a / point_b from MuJoCo's fromto (signed_distance; not unique on flat "
      "contacts). copies = max |Δ| between copies of a pair in the batch (0 expected).\n")
    w("| scenario | MuJoCo routine | sd: jg−MuJoCo | sd: jg−ref | MuJoCo−ref | arbiter: jg / MuJoCo "
      "| distance: jg−MuJoCo | witness | copies | statuses (sd) | iterations sd p50/p99/max | bad |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for e in entries:
        for key, row in e["rows"].items():
            sd, di = row["checks"].get("signed_distance", {}), row["checks"].get("distance", {})
            spreads = [c.get("tile_spread") for c in row["checks"].values() if c.get("tile_spread")
                       is not None]
            bad = sum(c.get("n_nan", 0) + c.get("wrong_sign", 0) + c.get("grad_nonfinite", 0)
                      + c.get("flag_errors", 0) for c in row["checks"].values())
            it = sd.get("iterations")
            arb = sd.get("arbiter")
            w(f"| {e['scenario']} {key} | {row['collider']} | {report.fmt_dev(sd.get('vs_mujoco'))} | "
              f"{report.fmt_dev(sd.get('vs_ref'))} | {report.fmt_dev(row.get('mujoco_vs_ref'))} | "
              + (f"{report.fmt_dev(arb['jaxgjk_err'])} / {report.fmt_dev(arb['mujoco_err'])} | " if arb
                 else "– | ") +
              f"{report.fmt_dev(di.get('vs_mujoco'))} | {report.fmt_dev(sd.get('witness_vs_mujoco'))} | "
              f"{report.fmt_dev(max(spreads)) if spreads else '–'} | "
              + (", ".join(f"{k}:{v}" for k, v in sd.get("status_counts", {}).items()) or "–")
              + f" | {'/'.join(f'{it[k]:.0f}' for k in ('p50', 'p99', 'max')) if it else '–'} | "
              f"{bad if row['checks'] else '–'} |")
    w("\nbad = NaN distances + wrong signs (separated ≤ 0, penetrating > 0, `distance` ≠ 0 when "
      "penetrating) + non-finite gradients + wrong intersect flags, over all kernels.\n")

    w("## Compile times (seconds)\n")
    w("warm = in the benchmark process (after other kernels), `lower` + `compile`; cold = fresh "
      "process, `lower` + `compile`.\n")
    kernels = [k for k in kernels_for(list(QUERIES)) if any(k in e["compile"] for e in entries)]
    cold = [k for k in kernels if any(k in e["cold"] for e in entries)]
    w("| scenario | " + " | ".join(f"warm {k}" for k in kernels)
      + "".join(f" | cold {k}" for k in cold) + " |")
    w("|---" * (1 + len(kernels) + len(cold)) + "|")
    for e in entries:
        warm = [e["compile"].get(k) for k in kernels]
        colds = [e["cold"].get(k) for k in cold]
        w(f"| {e['scenario']} | "
          + " | ".join(_sec(c["lower_s"] + c["compile_s"]) if c else "–" for c in warm)
          + "".join(" | " + ("error" if c and "error" in c else
                             _sec(c["lower_s"] + c["compile_s"]) if c else "–") for c in colds)
          + " |")
    return "\n".join(L) + "\n"


def main(argv=None) -> int:
    """CLI; see the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS),
                    help="comma-separated kind pairs, e.g. sphere-sphere,polytope-polytope/32")
    ap.add_argument("--queries", default="distance,signed_distance",
                    help=f"comma-separated subset of {','.join(QUERIES)}")
    ap.add_argument("--tile", type=int, default=256, help="distinct pairs per scenario")
    ap.add_argument("--pairs", type=int, default=65536, help="pairs per batch (a multiple of --tile)")
    ap.add_argument("--repeats", type=int, default=5, help="timed calls / passes (best is kept)")
    ap.add_argument("--budget", type=float, default=20.0,
                    help="seconds of timed jaxgjk calls per measurement (at least one call)")
    ap.add_argument("--kernels", default=None,
                    help="timed kernels (default: every kernel of --queries, then value_and_grad); "
                         "those not run keep their stored results")
    ap.add_argument("--cold-kernels", default=None,
                    help="kernels compiled again in fresh processes (default: those of "
                         f"{','.join(COLD_KERNELS)} that --queries times)")
    ap.add_argument("--no-cold", action="store_true", help="skip the fresh-process compiles")
    ap.add_argument("--cold-only", action="store_true",
                    help="only the fresh-process compiles, added to the stored scenarios")
    ap.add_argument("--cold-timeout", type=float, default=480.0)
    ap.add_argument("--arbiter-n", type=int, default=3,
                    help="pairs per row (largest |jaxgjk - MuJoCo| where no closed form exists) "
                         "given the float64 arbiter of cases.py; 0: none")
    ap.add_argument("--mj-layout", choices=("tile", "full"), default="tile",
                    help="MuJoCo model: the distinct pairs' geoms (tile) or all the batch's (full)")
    ap.add_argument("--mujoco-only", action="store_true", help="skip jaxgjk (MuJoCo checks)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=os.path.join(_HERE, "results"))
    ap.add_argument("--tag", default="parity", help="file stem under --out")
    ap.add_argument("--fresh", action="store_true",
                    help="drop the scenarios already stored under --tag")
    ap.add_argument("--cold-child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.cold_child is not None:
        print(json.dumps(cold_compile_child(json.loads(args.cold_child))))
        return 0
    args.queries = [q for q in args.queries.split(",") if q]
    scenarios = [s for s in args.scenarios.split(",") if s]
    for s in scenarios:
        try:
            parse_scenario(s)
        except ValueError as e:
            ap.error(str(e))
    if any(q not in QUERIES for q in args.queries):
        ap.error(f"--queries must be among {QUERIES}")
    args.kernels = ([k for k in args.kernels.split(",") if k] if args.kernels
                    else kernels_for(args.queries))
    if args.no_cold:
        args.cold_kernels = []
    elif args.cold_kernels is None:
        args.cold_kernels = [k for k in COLD_KERNELS if k in kernels_for(args.queries)]
    else:
        args.cold_kernels = [k for k in args.cold_kernels.split(",") if k]
    for option in ("kernels", "cold_kernels"):
        if any(k not in kernels_for(args.queries) for k in getattr(args, option)):
            ap.error(f"--{option.replace('_', '-')} must be among {kernels_for(args.queries)}")
    if args.tile < 1 or args.pairs % args.tile:
        ap.error("--pairs must be a positive multiple of --tile")
    if args.cold_only and args.no_cold:
        ap.error("--cold-only and --no-cold contradict each other")

    import jax

    jax.config.update("jax_enable_x64", False)
    t_start = time.perf_counter()
    load_start = os.getloadavg()[0]

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - t_start:7.1f}s] {msg}", flush=True)

    env = environment()
    log(f"jaxgjk {env['jaxgjk_source']['path']} (source {env['jaxgjk_source']['sha256']}); "
        f"{env['cpu_count']} cores, load {load_start:.1f}; MuJoCo runner {P.mujoco_native_binary()}")
    os.makedirs(args.out, exist_ok=True)
    prefix = os.path.join(args.out, args.tag)
    store = load_store(prefix + ".json", args.fresh)
    missing = [s for s in scenarios if s not in store["scenarios"]]
    if args.cold_only and missing:
        ap.error(f"--cold-only: {', '.join(missing)} not yet measured under --tag {args.tag}")
    run_meta = dict(command="python -m benchmarks.parity " + " ".join(
                        shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv)),
                    date=datetime.datetime.now().isoformat(timespec="seconds"),
                    loadavg_start=load_start, scenarios=scenarios, env=env,
                    options=dict(tile=args.tile, pairs=args.pairs, repeats=args.repeats,
                                 budget=args.budget, queries=args.queries, seed=args.seed,
                                 kernels=args.kernels, arbiter_n=args.arbiter_n,
                                 mj_layout=args.mj_layout, mode="cold-only" if args.cold_only
                                 else "mujoco-only" if args.mujoco_only else "all",
                                 cold_kernels=args.cold_kernels))
    store["runs"].append(run_meta)
    run_index = len(store["runs"]) - 1
    for label in scenarios:
        log(f"== {label}")
        old = store["scenarios"].get(label)
        if args.cold_only:
            cold = cold_compiles(label, args, log)
            for rec in cold.values():
                rec["run"] = run_index
            entry = dict(old, cold=old["cold"] | cold)
        else:
            entry = run_scenario(label, args, log)
            for rec in run_records(entry):
                rec["run"] = run_index
            entry = merge_entry(old, entry)
        store["scenarios"][label] = entry
        run_meta.update(loadavg_end=os.getloadavg()[0], total_s=time.perf_counter() - t_start)
        save_store(store, prefix)  # after every scenario: an interrupted run keeps what it did
    log(f"wrote {prefix}.md and {prefix}.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
