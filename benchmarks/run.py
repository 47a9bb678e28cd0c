"""Benchmark suite: jaxgjk against MuJoCo C, MuJoCo Warp, MJX and Coal, on the same random pairs.

One process runs every implementation on the pairs of ``cases.make_case`` (see ``cases.py``): the
kinds box-box, capsule-box, sphere-box, ellipsoid-ellipsoid, cylinder-box, polytope-polytope
(8/32/128/512 vertices, one shared mesh per case), sphere-sphere, sphere-capsule, capsule-capsule
and box-halfspace (jaxgjk skips it while it has no ``jg.HalfSpace``), each separated and
penetrating (shallow contacts).
Smaller batches are prefixes of larger ones, and the peers run on a prefix too, so results compare
pair by pair.

Queries: ``distance``, ``signed_distance``, ``intersect`` and, for jaxgjk only, ``value_and_grad``
(``jax.value_and_grad`` of the sum over pairs of the vmapped signed distance, with respect to
pose_b; reported as its cost relative to ``signed_distance`` at the same batch size and dtype).

jaxgjk is timed as ``jax.jit(jax.vmap(query))``: compile time (``.lower(...)`` + ``.compile()``) is
measured apart from the runs, which are the compiled executable plus ``jax.block_until_ready``, best
of up to ``--repeats`` runs (fewer when one run exceeds the per-measurement ``--budget``; the tables
mark those).  Batches above ``--chunk`` pairs run as chunk-sized calls in a Python loop (the last one
padded) with one executable.  Separated and penetrating pairs of a case share the executable.
Batch sizes form a ladder: the next size runs only when the measured time predicts that one
run fits in ``--budget`` seconds ("as far as time allows"); runs stop repeating when the next one
would pass the budget.

The peers (``peers.py``) are timed by their own runners on ``--peer-n`` pairs: MuJoCo C and Coal
are single-threaded Python loops over pairs (their per-call overhead is reported), ``mujoco_native``
is the same MuJoCo call in a C loop (MuJoCo's own speed, see ``parity.py``), MuJoCo Warp runs
one CPU kernel launch (serial on CPU), MJX is jitted XLA like jaxgjk (contact routine: no distance
for separated pairs; one collider run serves all three queries).  jaxgjk's XLA executable may use
every core; the JSON records its CPU time / wall time (``cpu_util``).

Accuracy: on the first ``min(--acc-n, peer pairs, batch)`` pairs, max |d - ref| where ref is the
float64 closed form of ``cases.reference_signed_distance`` where it exists, else the per-pair median
of the peers' signed distances (``distance`` compares with max(ref, 0)); ``intersect`` counts flags
that contradict the construction (separated / overlapping).  Also jaxgjk float32 vs float64.

Outputs (``--out``, default ``benchmarks/results``; file stem ``--tag``, default ``cpu``, or
``cpu-quick`` with ``--quick``): ``<tag>.md`` (tables), ``<tag>.json`` (raw records: timings, compile
times, iteration histograms, status counts, deviations, environment), ``<tag>_throughput_<query>.png``
(pairs/s vs batch size per case) and ``<tag>_iterations_<query>.png`` (iteration histograms).

Usage (peers live in their own venv, see ``peers.py``)::

    /work/venv-bench/bin/python -m benchmarks.run            # default suite
    /work/venv-bench/bin/python -m benchmarks.run --quick    # smoke run, small batches
    /work/venv-bench/bin/python -m benchmarks.run --full     # 1e2..1e6, every query x dtype
    /work/venv-bench/bin/python -m benchmarks.run --cases box-box,polytope-polytope/512 \\
        --queries signed_distance --dtypes float32 --no-peers
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import shlex
import sys
import time
import traceback
import warnings

import numpy as np

from . import cases as C
from . import peers as P

QUERIES = ("distance", "signed_distance", "intersect", "value_and_grad")
DTYPES = ("float32", "float64")
PEER_ORDER = ("mujoco", "mujoco_native", "mujoco_warp", "mjx", "coal")
GOOD_STATUS = {"SEPARATED", "INTERSECTING", "PENETRATING"}

# Ladders of batch sizes per (query, dtype) for each mode (a missing entry is not run).  The
# default is sized for ~15 min on an idle 2-core CPU, where XLA compilation (~2-10 s per query,
# dtype and batch size) dominates: only distance/float32 and signed_distance/float32 sweep batch
# sizes.  MJX's mesh collider (SAT over edge pairs) needs minutes per case above
# ``mjx_max_vertices`` vertices (0 = no limit), so those cases skip MJX outside ``--full``.
MODES = {
    "quick": dict(
        plan={(q, d): (1_000,) for q in QUERIES for d in DTYPES if q != "value_and_grad"}
        | {("value_and_grad", "float32"): (1_000,)},
        peer_n=1_000, budget=10.0, mjx_budget=5.0, acc_n=1_000, mjx_max_vertices=32,
        arbiter_n=10),
    "default": dict(
        plan={("distance", "float32"): (1_000, 10_000, 100_000),
              ("signed_distance", "float32"): (1_000, 10_000),
              ("intersect", "float32"): (10_000,), ("value_and_grad", "float32"): (10_000,),
              ("distance", "float64"): (10_000,), ("signed_distance", "float64"): (10_000,),
              ("intersect", "float64"): (10_000,)},
        peer_n=5_000, budget=20.0, mjx_budget=10.0, acc_n=5_000, mjx_max_vertices=32,
        arbiter_n=20),
    "full": dict(
        plan={(q, d): (100, 1_000, 10_000, 100_000, 1_000_000) for q in QUERIES for d in DTYPES},
        peer_n=20_000, budget=120.0, mjx_budget=20.0, acc_n=20_000, mjx_max_vertices=0,
        arbiter_n=50),
}


# --------------------------------------------------------------------------------------------
# jaxgjk inputs and queries


def spec_label(kind: str, nv: int | None) -> str:
    """``box-box`` or ``polytope-polytope/128``."""
    return kind if nv is None else f"{kind}/{nv}"


def _jg_shape(jg, jnp, shape: str, params: dict, dtype):
    a = {k: jnp.asarray(v, dtype) for k, v in params.items()}
    if shape == "sphere":
        return jg.Sphere(a["radius"])
    if shape == "capsule":
        return jg.Capsule(a["radius"], a["half_length"])
    if shape == "box":
        return jg.Box(a["half_extents"])
    if shape == "cylinder":
        return jg.Cylinder(a["radius"], a["half_length"])
    if shape == "ellipsoid":
        return jg.Ellipsoid(a["radii"])
    if shape == "polytope":
        return jg.Polytope(a["vertices"])
    if shape == "halfspace":
        return jg.HalfSpace()
    raise ValueError(shape)


def jaxgjk_supports(kind: str) -> bool:
    """Whether the imported jaxgjk has both shapes of ``kind`` (``HalfSpace`` came later)."""
    import jaxgjk as jg

    return "halfspace" not in kind.split("-") or hasattr(jg, "HalfSpace")


def jaxgjk_args(case: C.Case, idx: np.ndarray, dtype: str) -> tuple:
    """(shape_a, pose_a, shape_b, pose_b) for the pairs ``idx`` of ``case``, as jax arrays.

    Polytope meshes (and half-spaces, which have no parameters) stay unbatched (shared by
    every pair, ``in_axes=None``).
    """
    import jax.numpy as jnp

    import jaxgjk as jg

    sub = C.subset(case, idx)
    return (_jg_shape(jg, jnp, case.shape_a, sub.params_a, dtype),
            jg.Pose(jnp.asarray(sub.pos_a, dtype), jnp.asarray(sub.quat_a, dtype)),
            _jg_shape(jg, jnp, case.shape_b, sub.params_b, dtype),
            jg.Pose(jnp.asarray(sub.pos_b, dtype), jnp.asarray(sub.quat_b, dtype)))


def jaxgjk_batched(case: C.Case, query: str):
    """The batched query over pairs: f(shape_a, pose_a, shape_b, pose_b), to be jitted.

    ``value_and_grad`` returns (sum of signed distances, d sum / d pose_b), i.e. per-pair gradients.
    """
    import jax
    import jax.numpy as jnp

    import jaxgjk as jg

    in_axes = (None if case.shape_a in C.UNBATCHED_SHAPES else 0, 0,
               None if case.shape_b in C.UNBATCHED_SHAPES else 0, 0)
    if query == "value_and_grad":
        sd = jax.vmap(jg.signed_distance, in_axes=in_axes)

        def vag(a, pose_a, b, pose_b):
            return jax.value_and_grad(lambda p: jnp.sum(sd(a, pose_a, b, p).distance))(pose_b)

        return vag
    return jax.vmap(getattr(jg, query), in_axes=in_axes)


def _pieces(n: int, chunk: int) -> list[np.ndarray]:
    """Index arrays of the chunk calls for a batch of n pairs (last one padded with pair 0)."""
    if n <= chunk:
        return [np.arange(n)]
    out = []
    for lo in range(0, n, chunk):
        idx = np.arange(lo, min(lo + chunk, n))
        out.append(np.concatenate([idx, np.zeros(chunk - len(idx), int)]))
    return out


def _timed_runs(fn, repeats: int, budget: float) -> tuple[list[float], list[float], object]:
    """Run ``fn`` up to ``repeats`` times, stopping when the next run would pass ``budget`` s.

    Returns (wall seconds per run, process CPU seconds per run, last output).
    """
    walls, cpus, out = [], [], None
    start = time.perf_counter()
    for _ in range(max(1, repeats)):
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
        if time.perf_counter() - start + walls[-1] > budget:
            break
    return walls, cpus, out


def _status_names() -> dict[int, str]:
    import jaxgjk as jg

    return {int(s): s.name for s in jg.Status}


def summarize_jaxgjk_output(query: str, outs: list, n: int, keep: int, pen: bool) -> dict:
    """Distances of the first ``keep`` pairs, iteration histogram, status counts, NaN counts.

    ``wrong_sign`` counts pairs whose distance contradicts the construction: separated pairs
    with distance <= 0, penetrating pairs with distance > 0.
    """
    import jax

    import jaxgjk as jg

    if query == "intersect":
        flags = np.concatenate([np.asarray(o) for o in outs])[:n]
        return dict(flags=flags[:keep], n_true=int(flags.sum()))
    if query == "value_and_grad":
        values = np.array([float(o[0]) for o in outs])
        grads = [np.concatenate([np.asarray(leaf) for leaf in leaves])[:n]
                 for leaves in zip(*[jax.tree_util.tree_leaves(o[1]) for o in outs], strict=True)]
        nonfinite = np.zeros(n, bool)
        for g in grads:
            nonfinite |= ~np.isfinite(g.reshape(n, -1)).all(axis=1)
        # padding rows (pair 0 repeated) are part of the sums of all chunks but the last
        return dict(value_sum=float(values.sum()), grad_nonfinite_pairs=int(nonfinite.sum()),
                    grad_nonfinite_idx=np.flatnonzero(nonfinite)[:20].tolist(),
                    grad_translation=grads[0][:keep] if grads else None)
    dist = np.concatenate([np.asarray(o.distance) for o in outs])[:n].astype(np.float64)
    iters = np.concatenate([np.asarray(o.iterations) for o in outs])[:n]
    status = np.concatenate([np.asarray(o.status) for o in outs])[:n]
    names = _status_names()
    counts = {names.get(int(k), str(k)): int(v) for k, v in zip(*np.unique(status, return_counts=True),
                                                               strict=True)}
    wrong = (dist > 0) if pen else (dist <= 0)
    bad = ~np.isin(status, [int(jg.Status.SEPARATED), int(jg.Status.INTERSECTING),
                            int(jg.Status.PENETRATING)])
    return dict(distance=dist[:keep], n_nan=int(np.sum(~np.isfinite(dist))),
                wrong_sign=int(wrong.sum()), wrong_sign_idx=np.flatnonzero(wrong)[:20].tolist(),
                bad_status_idx=np.flatnonzero(bad)[:20].tolist(),
                iter_hist=np.bincount(iters).tolist(),
                iter_p50=float(np.percentile(iters, 50)), iter_p99=float(np.percentile(iters, 99)),
                iter_max=int(iters.max()), status_counts=counts)


def run_jaxgjk_ladder(spec, cases_by_pen: dict, query: str, dtype: str, sizes, args,
                      keep: int, log) -> list[dict]:
    """Compile and time one (case spec, query, dtype) over the ladder of batch sizes.

    Separated and penetrating pairs share each executable.  Returns one record per
    (size, penetrating) that ran, with compile and run times, outputs summarized.
    """
    import jax

    records = []
    active = dict.fromkeys(cases_by_pen, True)
    last: dict = dict.fromkeys(cases_by_pen)  # (n, best seconds) of the previous size
    for n in sizes:
        run_pens = []
        for pen in cases_by_pen:
            if not active[pen]:
                continue
            if last[pen] is not None:
                predicted = last[pen][1] * n / last[pen][0]
                if predicted > args.budget:
                    log(f"    {query:<15} {dtype} N={n:<8} {'pen' if pen else 'sep'} skipped: "
                        f"one run predicted {predicted:.0f}s > budget {args.budget:.0f}s")
                    active[pen] = False
                    continue
            run_pens.append(pen)
        if not run_pens:
            break
        chunk_n = min(n, args.chunk)
        fn = jaxgjk_batched(cases_by_pen[run_pens[0]], query)
        t0 = time.perf_counter()
        lowered = jax.jit(fn).lower(*jaxgjk_args(cases_by_pen[run_pens[0]],
                                                 np.arange(chunk_n), dtype))
        t1 = time.perf_counter()
        exe = lowered.compile(compiler_options=args.compiler_options or None)
        t2 = time.perf_counter()
        for pen in run_pens:
            case = cases_by_pen[pen]
            pieces = [jaxgjk_args(case, idx, dtype) for idx in _pieces(n, args.chunk)]
            jax.block_until_ready(pieces)

            def call(pieces=pieces, exe=exe):
                outs = [exe(*p) for p in pieces]
                return jax.block_until_ready(outs)

            walls, cpus, outs = _timed_runs(call, args.repeats, args.budget)
            best = int(np.argmin(walls))
            summary = summarize_jaxgjk_output(query, outs, n, keep, pen)
            del outs, pieces
            rec = dict(impl="jaxgjk", case=spec, penetrating=pen, query=query, dtype=dtype, n=n,
                       chunk=chunk_n, n_calls=len(_pieces(n, args.chunk)),
                       lower_s=t1 - t0, compile_s=t2 - t1, seconds=walls[best], runs=walls,
                       cpu_s=cpus[best], cpu_util=cpus[best] / walls[best],
                       pairs_per_s=n / walls[best], pairs_per_cpu_s=n / max(cpus[best], 1e-9),
                       **summary)
            records.append(rec)
            last[pen] = (n, walls[best])
            extra = ""
            if "iter_p50" in summary:
                bad = {k: v for k, v in summary["status_counts"].items() if k not in GOOD_STATUS}
                extra = (f" it p50/p99 {summary['iter_p50']:.0f}/{summary['iter_p99']:.0f}"
                         + (f" STATUS {bad}" if bad else "")
                         + (f" NaN {summary['n_nan']}" if summary["n_nan"] else "")
                         + (f" WRONG SIGN {summary['wrong_sign']}" if summary["wrong_sign"]
                            else ""))
            if "grad_nonfinite_pairs" in summary and summary["grad_nonfinite_pairs"]:
                extra += f" NONFINITE GRAD {summary['grad_nonfinite_pairs']}"
            log(f"    {query:<15} {dtype} N={n:<8} {'pen' if pen else 'sep'} compile "
                f"{t2 - t0:6.1f}s  best {walls[best]:8.4f}s of {len(walls)}  "
                f"{n / walls[best]:>10.0f} pairs/s  cpu x{cpus[best] / walls[best]:.1f}{extra}")
        del exe, lowered
    return records


# --------------------------------------------------------------------------------------------
# peers


def run_peers_for_case(case: C.Case, peers: list[str], queries: list[str], args, log) -> list[dict]:
    """Every peer on every query for one case; MJX runs its collider once for all queries."""
    out = []
    for p in peers:
        mjx_res = None
        for q in queries:
            if q == "value_and_grad":
                continue
            t0 = time.perf_counter()
            try:
                if (p == "mjx" and args.mjx_max_vertices and case.n_vertices
                        and case.n_vertices > args.mjx_max_vertices):
                    r = dict(distance=np.full(case.n, np.nan), intersect=np.zeros(case.n, bool),
                             seconds=np.nan, per_call_overhead_s=None, cpu_seconds=np.nan,
                             notes=f"skipped: mesh with {case.n_vertices} > "
                                   f"--mjx-max-vertices={args.mjx_max_vertices} vertices",
                             n_timed=0)
                elif p == "mjx":
                    if mjx_res is None:
                        import jax

                        with jax.enable_x64(False):
                            mjx_res = P.run_mjx(case, "signed_distance", args.repeats,
                                                time_budget_s=args.mjx_budget)
                    r = dict(mjx_res)
                    inter = r["intersect"]
                    if q == "distance":
                        r["distance"] = np.where(inter, 0.0, np.nan)
                    elif q == "intersect":
                        r["distance"] = np.full(case.n, np.nan)
                    r["notes"] += "; one collider run serves all queries"
                else:
                    r = P.run_peer(p, case, q, args.repeats)
            except Exception as e:  # noqa: BLE001 - a peer failing must not stop the suite
                r = dict(distance=np.full(case.n, np.nan), intersect=np.zeros(case.n, bool),
                         seconds=np.nan, per_call_overhead_s=None, cpu_seconds=np.nan,
                         notes=f"ERROR {type(e).__name__}: {e}")
                log(f"    {p} {q}: ERROR {type(e).__name__}: {e}")
            n_timed = int(r.get("n_timed", case.n))
            ok = np.isfinite(r["seconds"])
            rec = dict(impl=p, case=None, penetrating=case.penetrating, query=q, n=case.n,
                       n_timed=n_timed, seconds=float(r["seconds"]),
                       pairs_per_s=case.n / r["seconds"] if ok else np.nan,
                       cpu_s=r.get("cpu_seconds", np.nan),
                       pairs_per_cpu_s=case.n / r.get("cpu_seconds", np.nan) if ok else np.nan,
                       per_call_overhead_s=r["per_call_overhead_s"], notes=r["notes"],
                       wall_incl_setup_s=time.perf_counter() - t0,
                       distance=r["distance"], flags=r["intersect"],
                       n_nan=int(np.sum(~np.isfinite(r["distance"][:n_timed]))))
            out.append(rec)
            if ok:
                log(f"    {p:<12} {q:<15} N={case.n:<7} {rec['pairs_per_s']:>10.0f} pairs/s"
                    + (f" (ran {n_timed})" if n_timed < case.n else ""))
            elif not r["notes"].startswith("ERROR") and q == queries[0]:
                log(f"    {p:<12} {r['notes'][:100]}")
    return out


# --------------------------------------------------------------------------------------------
# accuracy


def attach_accuracy(spec: str, pen: bool, case_acc: C.Case, jrecs: list[dict],
                    precs: list[dict], args, log) -> dict:
    """Deviations of every implementation from a trusted reference on the first K pairs.

    Reference per pair: the float64 closed form (cf) where ``cases.reference_signed_distance``
    has one; else the median of the non-MJX peers' signed distances (med) where the float64
    implementations (MuJoCo C, Coal, jaxgjk float64) agree within ``--dispute-tol``; else, for up
    to ``--arbiter-n`` disputed pairs (largest spread first, plus the worst pair of each
    implementation), ``cases.arbiter_signed_distance`` (arb: exact hull for polytopes, dense
    direction search + Nelder-Mead otherwise).  Pairs left without a trusted reference are
    counted and left out.  ``distance`` compares with max(ref, 0).  Intersect flags are checked
    against the construction (all of jaxgjk's N pairs; each peer's pairs).
    """
    k = case_acc.n
    ref_cf = C.reference_signed_distance(case_acc)

    def sd_of(impl, dtype=None):
        for r in (jrecs if impl == "jaxgjk" else precs):
            if (r["impl"] == impl and r["query"] == "signed_distance"
                    and (dtype is None or r.get("dtype") == dtype)
                    and r.get("distance") is not None and len(r["distance"]) >= k):
                return np.asarray(r["distance"][:k], float)
        return None

    # MJX is left out: its colliders are contact routines with approximate depths
    peers_sd = {p: sd_of(p) for p in ("mujoco", "mujoco_warp", "coal")}
    peers_sd = {p: v for p, v in peers_sd.items() if v is not None}
    j32, j64 = sd_of("jaxgjk", "float32"), sd_of("jaxgjk", "float64")
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        med = (np.nanmedian(np.stack(list(peers_sd.values())), axis=0) if peers_sd
               else np.full(k, np.nan))
        f64 = [v for p, v in peers_sd.items() if p != "mujoco_warp"] + (
            [j64] if j64 is not None else [])
        if len(f64) < 2:  # not enough float64 implementations: use what there is
            f64 += [v for v in (peers_sd.get("mujoco_warp"), j32) if v is not None]
        stack = np.stack(f64) if f64 else np.full((1, k), np.nan)
        spread = np.where(np.sum(np.isfinite(stack), 0) >= 2,
                          np.nanmax(stack, 0) - np.nanmin(stack, 0), np.inf)
    has_cf = np.isfinite(ref_cf)
    agreed = ~has_cf & np.isfinite(med) & (spread <= args.dispute_tol)
    disputed = np.flatnonzero(~has_cf & ~agreed)
    arb_idx = np.zeros(0, int)
    if args.arbiter_n and len(disputed):
        order = list(disputed[np.argsort(-np.nan_to_num(spread[disputed], posinf=1e300))])
        picks = order[:args.arbiter_n]
        for v in [*peers_sd.values(), j32, j64]:  # each implementation's worst pair vs med
            if v is not None:
                err = np.abs(v - np.where(np.isfinite(med), med, v))
                err[~np.isin(np.arange(k), disputed)] = -1
                if np.nanmax(err) > args.dispute_tol:
                    picks.append(int(np.nanargmax(err)))
        arb_idx = np.array(sorted(set(int(i) for i in picks)), int)
        t0 = time.perf_counter()
        arb = C.arbiter_signed_distance(case_acc, arb_idx)
        log(f"    arbiter: {len(arb_idx)} of {len(disputed)} disputed pairs "
            f"({'pen' if pen else 'sep'}) in {time.perf_counter() - t0:.1f}s")
    ref = np.where(has_cf, ref_cf, np.where(agreed, med, np.nan))
    if len(arb_idx):
        ref[arb_idx] = arb
    n_cf, n_med, n_arb = int(has_cf.sum()), int(agreed.sum()), len(arb_idx)
    n_out = k - n_cf - n_med - n_arb
    ref_kind = "+".join(f"{name}{c if c < k else ''}" for name, c in
                        (("cf", n_cf), ("med", n_med), ("arb", n_arb)) if c)
    if n_out:
        ref_kind += f" ({n_out} left out)"
    arb_err = {}
    if len(arb_idx):
        for name, v in [*peers_sd.items(), ("jaxgjk float32", j32), ("jaxgjk float64", j64)]:
            if v is not None:
                e = np.abs(v[arb_idx] - arb)
                arb_err[name] = float(np.nanmax(e)) if np.isfinite(e).any() else None

    def dev(d: np.ndarray, query: str) -> tuple[float, int]:
        m = min(len(d), k)
        r = ref[:m] if query == "signed_distance" else np.maximum(ref[:m], 0.0)
        ok = np.isfinite(d[:m]) & np.isfinite(r)
        return (float(np.max(np.abs(d[:m][ok] - r[ok]))) if ok.any() else np.nan), int(ok.sum())

    for rec in jrecs + precs:
        q = rec["query"]
        if q in ("distance", "signed_distance") and rec.get("distance") is not None:
            rec["max_abs_dev"], rec["dev_pairs"] = dev(rec["distance"], q)
            rec["ref"] = ref_kind
        if rec["impl"] == "jaxgjk" and q == "intersect":
            rec["flag_errors"] = rec["n"] - rec["n_true"] if pen else rec["n_true"]
            rec["flag_pairs"] = rec["n"]
        elif rec.get("flags") is not None and np.isfinite(rec["seconds"]):  # peers that ran
            m = min(len(rec["flags"]), rec.get("n_timed", len(rec["flags"])))
            rec["flag_errors"] = int(np.sum(rec["flags"][:m] != pen))
            rec["flag_pairs"] = m
    # jaxgjk float32 vs float64 on the same pairs
    for q in ("distance", "signed_distance"):
        r32 = [r for r in jrecs if r["query"] == q and r["dtype"] == "float32"]
        r64 = [r for r in jrecs if r["query"] == q and r["dtype"] == "float64"]
        if r32 and r64:
            a, b = r32[-1]["distance"], r64[-1]["distance"]
            m = min(len(a), len(b))
            ok = np.isfinite(a[:m]) & np.isfinite(b[:m])
            r32[-1]["dev_vs_f64"] = float(np.max(np.abs(a[:m][ok] - b[:m][ok]))) if ok.any() else None
    return dict(case=spec, penetrating=pen, k=k, ref=ref_kind, n_cf=n_cf, n_med=n_med,
                n_arb=n_arb, n_disputed=len(disputed), n_left_out=n_out,
                arbiter_pairs=arb_idx.tolist(), arbiter_max_err=arb_err)


# --------------------------------------------------------------------------------------------
# reporting


def _fmt_rate(x) -> str:
    if x is None or not np.isfinite(x):
        return "–"
    if x >= 1e6:
        return f"{x / 1e6:.2f}M"
    if x >= 1e3:
        return f"{x / 1e3:.1f}k"
    return f"{x:.0f}"


def _fmt_dev(x) -> str:
    return "–" if x is None or not np.isfinite(x) else f"{x:.1e}"


def _peer_record(records: list[dict], impl: str, case: str, penetrating: bool, query: str) -> dict | None:
    """The peer `impl`'s record of (case, penetrating, query), or None."""
    return next((r for r in records if r["impl"] == impl and r["case"] == case
                 and r["penetrating"] == penetrating and r["query"] == query), None)


def _largest(records: list[dict], **kw) -> dict | None:
    rs = [r for r in records if all(r.get(k) == v for k, v in kw.items())]
    return max(rs, key=lambda r: r["n"]) if rs else None


def write_markdown(path: str, meta: dict, jrecs: list[dict], precs: list[dict],
                   specs: list[str], queries: list[str], peers: list[str]) -> None:
    """The tables of ``<tag>.md``."""
    L = []
    w = L.append
    w(f"# jaxgjk benchmark — {meta['tag']}\n")
    w(f"Generated {meta['date']} by `{meta['command']}` (mode `{meta['mode']}`, "
      f"total {meta['total_s'] / 60:.1f} min).\n")
    w(f"- device: `{meta['device']}` ({meta['cpu_model']}, {meta['cpu_count']} cores, "
      f"{meta['mem_gib']:.0f} GiB); jax {meta['versions'].get('jax')}, "
      f"jaxgjk {meta['jaxgjk_version']} (source sha256 {meta['jaxgjk_source']['sha256']}, "
      f"newest file {meta['jaxgjk_source']['latest_mtime']}); float32 runs with "
      "`jax_enable_x64` on and float32 inputs")
    w(f"- load average (1 min) at start/end: {meta['loadavg_start']:.1f} / "
      f"{meta['loadavg_end']:.1f} on {meta['cpu_count']} cores"
      + (" — **the machine was shared with other work, timings are noisy and pessimistic**"
         if max(meta['loadavg_start'], meta['loadavg_end']) > 0.75 * meta['cpu_count'] else ""))
    w("- peers: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()
                              if k not in ("jax", "jaxlib", "numpy")))
    w("- jaxgjk: `jax.jit(jax.vmap(query))`"
      + "".join(f", compiled with `{k}={v}`" for k, v in meta.get("compiler_options", {}).items())
      + f", best of up to {meta['repeats']} runs "
      f"(`block_until_ready`), compile (`lower` + `compile`) timed apart; batches above "
      f"{meta['chunk']} pairs run in chunks. Budget {meta['budget']:.0f} s per measurement: "
      "a larger batch is skipped when one run is predicted to exceed it; † = fewer than "
      f"{meta['repeats']} runs fitted. XLA may use every core (see `cpu_util` in the JSON; "
      f"median CPU-time/wall-time of jaxgjk runs here: {meta['jaxgjk_cpu_util_median']:.2f}).")
    w(f"- peers on the first {meta['peer_n']} pairs of the same cases. MuJoCo C and Coal: "
      "single-threaded Python loops over pairs, per-call overhead below; mujoco_native: the same "
      "MuJoCo calls in a C loop (`mujoco_native.c`, 1 thread); MuJoCo Warp: one kernel "
      "launch on Warp's CPU device (serial), float32; MJX: jitted contact colliders (float32), no "
      "distance for separated pairs, no cylinder-box collider, mesh colliders run on a sub-batch "
      "within a time budget and extrapolated (n_timed in the JSON).")
    w(f"- pairs: prefixes of `cases.make_case(kind, {meta['case_n']}, penetrating, "
      f"seed={meta['seed']}, n_vertices)`; pair indices below refer to them.")
    oh = meta.get("per_call_overhead_us", {})
    if oh:
        w("- per-call overhead (µs): " + ", ".join(f"{k} {v:.2f}" for k, v in oh.items()))
    w(f"- accuracy: max |d − ref| over the first {meta['acc_n']} pairs (fewer if the batch is "
      "smaller). ref per pair = float64 closed form (`cf`: sphere-box, box-box, separated "
      "capsule-box); else the median of the non-MJX peers (`med`) where the float64 "
      "implementations (MuJoCo C, Coal, jaxgjk f64) agree within "
      f"{meta['dispute_tol']:g}; else, for up to {meta['arbiter_n']} disputed pairs per case "
      "(largest spread, plus each implementation's worst), an independent float64 arbiter "
      "(`arb`, `cases.arbiter_signed_distance`: exact Minkowski-difference hull for polytopes, "
      "dense direction search + Nelder-Mead otherwise); remaining disputed pairs are left out "
      "(counted in the ref column). `distance` is compared with max(ref, 0). Warp/MJX are "
      "float32; MJX depths are contact approximations.\n")

    def jcell(r, key):
        if r is None:
            return "–"
        dag = "†" if len(r["runs"]) < meta["repeats"] else ""
        return f"{_fmt_rate(r[key])}{dag} @{r['n']:.0e}".replace("e+0", "e")

    for q in queries:
        if q == "value_and_grad":
            continue
        for key, title, expl in (
                ("pairs_per_s", "throughput (pairs per wall-clock second)",
                 "jaxgjk: best of the runs at the largest batch run (@N), XLA on all cores; "
                 "peers: on their pairs, MuJoCo C/Coal/Warp on one thread. ratio = jaxgjk "
                 "float32 / peer (> 1: jaxgjk faster)."),
                ("pairs_per_cpu_s", "throughput per CPU-second (process CPU time, all threads)",
                 "Same runs, pairs divided by the process CPU time of the timed run: less "
                 "sensitive to the machine's load, and per core (jaxgjk's XLA threads are "
                 "summed).")):
            w(f"## {q} — {title}\n")
            w(expl + "\n")
            hdr = ["case", "jaxgjk f32", "jaxgjk f64"] + peers + [f"f32/{p}" for p in peers]
            w("| " + " | ".join(hdr) + " |")
            w("|" + "---|" * len(hdr))
            for spec in specs:
                for pen in (False, True):
                    j32 = _largest(jrecs, case=spec, penetrating=pen, query=q, dtype="float32")
                    j64 = _largest(jrecs, case=spec, penetrating=pen, query=q, dtype="float64")
                    row = [f"{spec} {'pen' if pen else 'sep'}", jcell(j32, key), jcell(j64, key)]
                    rates = []
                    for p in peers:
                        pr = _peer_record(precs, p, spec, pen, q)
                        rate = pr.get(key, np.nan) if pr else np.nan
                        rates.append(rate)
                        row.append(_fmt_rate(rate))
                    for rate in rates:
                        ok = j32 is not None and rate is not None and np.isfinite(rate)
                        row.append(f"{j32[key] / rate:.3g}" if ok else "–")
                    w("| " + " | ".join(row) + " |")
            w("")
        if q == "intersect":
            w(f"## {q} — wrong flags (count / pairs checked) and jaxgjk compile time\n")
            hdr = ["case", "jaxgjk f32", "jaxgjk f64"] + peers + ["compile f32 s", "compile f64 s"]
        else:
            w(f"## {q} — accuracy (max abs deviation), iterations, statuses, compile time\n")
            hdr = (["case", "ref", "jaxgjk f32", "jaxgjk f64", "f32 vs f64"] + peers
                   + ["iters f32 p50/p99/max", "iters f64 p50/p99/max", "statuses (f32; f64)",
                      "compile f32 s", "compile f64 s"])
        w("| " + " | ".join(hdr) + " |")
        w("|" + "---|" * len(hdr))
        for spec in specs:
            for pen in (False, True):
                j32 = _largest(jrecs, case=spec, penetrating=pen, query=q, dtype="float32")
                j64 = _largest(jrecs, case=spec, penetrating=pen, query=q, dtype="float64")
                pr = {p: _peer_record(precs, p, spec, pen, q) for p in peers}
                comp = [f"{j['lower_s'] + j['compile_s']:.1f}" if j else "–" for j in (j32, j64)]
                label = f"{spec} {'pen' if pen else 'sep'}"
                if q == "intersect":
                    def fl(r):
                        return (f"{r['flag_errors']}/{r['flag_pairs']}"
                                if r and "flag_errors" in r else "–")
                    row = [label, fl(j32), fl(j64)] + [fl(pr[p]) for p in peers] + comp
                else:
                    def st(r):
                        if r is None:
                            return "–"
                        s = ", ".join(f"{k[:3]}:{v}" for k, v in r["status_counts"].items())
                        return s + (f", NaN:{r['n_nan']}" if r["n_nan"] else "")

                    def it(r):
                        return (f"{r['iter_p50']:.0f}/{r['iter_p99']:.0f}/{r['iter_max']}"
                                if r else "–")
                    ref = (j32 or j64 or {}).get("ref", "–")
                    row = ([label, ref, _fmt_dev((j32 or {}).get("max_abs_dev")),
                            _fmt_dev((j64 or {}).get("max_abs_dev")),
                            _fmt_dev((j32 or {}).get("dev_vs_f64"))]
                           + [_fmt_dev((pr[p] or {}).get("max_abs_dev")) for p in peers]
                           + [it(j32), it(j64), f"{st(j32)}; {st(j64)}"] + comp)
                w("| " + " | ".join(row) + " |")
        w("")

    arb_cases = [a for a in meta.get("accuracy_cases", []) if a.get("n_arb")]
    if arb_cases:
        names = sorted({n for a in arb_cases for n in a["arbiter_max_err"]},
                       key=lambda n: (n.startswith("jaxgjk"), n))
        w("## Disputed pairs — signed distance error against the arbiter\n")
        w(f"Pairs where the float64 implementations disagree by more than {meta['dispute_tol']:g}; "
          "the most disputed ones (and each implementation's worst) get the independent float64 "
          "arbiter; max |d − arb| over those pairs (signed_distance query).\n")
        hdr = ["case", "disputed / K", "arbitrated"] + names
        w("| " + " | ".join(hdr) + " |")
        w("|" + "---|" * len(hdr))
        for a in arb_cases:
            w(f"| {a['case']} {'pen' if a['penetrating'] else 'sep'} | {a['n_disputed']} / "
              f"{a['k']} | {a['n_arb']} | "
              + " | ".join(_fmt_dev(a["arbiter_max_err"].get(n)) for n in names) + " |")
        w("")

    if "value_and_grad" in queries:
        w("## value_and_grad — cost relative to signed_distance (jaxgjk only)\n")
        w("`jax.value_and_grad` of the sum of the vmapped signed distances w.r.t. pose_b (per-pair "
          "gradients); ratio = vag time / signed_distance time at the same batch size and dtype.\n")
        hdr = ["case", "dtype", "N", "signed_distance pairs/s", "value_and_grad pairs/s",
               "ratio (wall)", "ratio (CPU time)", "non-finite grads", "compile s (vag; sd)"]
        w("| " + " | ".join(hdr) + " |")
        w("|" + "---|" * len(hdr))
        for spec in specs:
            for pen in (False, True):
                for dt in DTYPES:
                    v = _largest(jrecs, case=spec, penetrating=pen, query="value_and_grad",
                                 dtype=dt)
                    if v is None:
                        continue
                    s = next((r for r in jrecs if r["case"] == spec and r["penetrating"] == pen
                              and r["query"] == "signed_distance" and r["dtype"] == dt
                              and r["n"] == v["n"]), None)
                    ratio = f"{v['seconds'] / s['seconds']:.2f}" if s else "–"
                    ratio_cpu = f"{v['cpu_s'] / s['cpu_s']:.2f}" if s else "–"
                    comp_sd = f"{s['lower_s'] + s['compile_s']:.1f}" if s else "–"
                    w(f"| {spec} {'pen' if pen else 'sep'} | {dt} | {v['n']} | "
                      f"{_fmt_rate(s['pairs_per_s']) if s else '–'} | {_fmt_rate(v['pairs_per_s'])}"
                      f" | {ratio} | {ratio_cpu} | {v['grad_nonfinite_pairs']} | "
                      f"{v['lower_s'] + v['compile_s']:.1f}; {comp_sd} |")
        w("")

    sweeps = sorted({(r["query"], r["dtype"]) for r in jrecs
                     if len({x["n"] for x in jrecs if x["query"] == r["query"]
                             and x["dtype"] == r["dtype"]}) > 1})
    for q, dt in sweeps:
        sizes = sorted({r["n"] for r in jrecs if r["query"] == q and r["dtype"] == dt})
        w(f"## jaxgjk {q} {dt} — throughput vs batch size\n")
        w("pairs per wall-clock second (pairs per CPU-second); iterations max over the batch "
          "in brackets: a vmapped loop runs until its slowest pair is done.\n")
        w("| case | " + " | ".join(f"{n:.0e}".replace("e+0", "e") for n in sizes) + " |")
        w("|" + "---|" * (len(sizes) + 1))
        for spec in specs:
            for pen in (False, True):
                cells = []
                for n in sizes:
                    r = next((x for x in jrecs if x["case"] == spec and x["penetrating"] == pen
                              and x["query"] == q and x["dtype"] == dt and x["n"] == n), None)
                    cells.append(f"{_fmt_rate(r['pairs_per_s'])} ({_fmt_rate(r['pairs_per_cpu_s'])})"
                                 + (f" [{r['iter_max']}]" if "iter_max" in r else "") if r else "–")
                w(f"| {spec} {'pen' if pen else 'sep'} | " + " | ".join(cells) + " |")
        w("")

    anomalies = meta.get("anomalies", [])
    w("## Anomalies\n")
    w("\n".join(f"- {a}" for a in anomalies) if anomalies else "None found.")
    w("")
    w("## Peer notes\n")
    for p, note in meta.get("peer_notes", {}).items():
        w(f"- **{p}**: {note}")
    w("")
    with open(path, "w") as f:
        f.write("\n".join(L))


def find_anomalies(jrecs: list[dict], precs: list[dict], tol32: float = 1e-4,
                   tol64: float = 1e-8) -> list[str]:
    """Human-readable list: bad statuses, NaNs, non-finite grads, wrong flags, large deviations.

    Deviations: against a closed-form reference, more than ``tol32`` (float32) / ``tol64``
    (float64); against the peers' median, more than max(``tol32``, 10 x the smallest deviation of
    a non-MJX peer on the same case and query) -- the median is only as good as the peers.  Peer
    deviations are listed above ``tol32`` (MJX's contact depths are not: they are approximate by
    design).  Pair indices (first 20) refer to ``cases.make_case(kind, case_n, penetrating, seed,
    n_vertices)`` with ``case_n`` and ``seed`` from the report's metadata.
    """
    out = []

    def best_peer_dev(r):
        devs = [p.get("max_abs_dev") for p in precs if p["case"] == r["case"]
                and p["penetrating"] == r["penetrating"] and p["query"] == r["query"]
                and p["impl"] != "mjx"]
        devs = [d for d in devs if d is not None and np.isfinite(d)]
        return min(devs) if devs else np.nan

    for r in jrecs:
        where = (f"jaxgjk {r['query']} {r['dtype']} {r['case']} "
                 f"{'pen' if r['penetrating'] else 'sep'} N={r['n']}")
        bad = {k: v for k, v in r.get("status_counts", {}).items() if k not in GOOD_STATUS}
        if bad:
            out.append(f"{where}: statuses {bad} (pairs {r.get('bad_status_idx')})")
        if r.get("n_nan"):
            out.append(f"{where}: {r['n_nan']} NaN distances")
        if r.get("wrong_sign"):
            out.append(f"{where}: {r['wrong_sign']} distances of the wrong sign for the "
                       f"construction (pairs {r.get('wrong_sign_idx')})")
        if r.get("grad_nonfinite_pairs"):
            out.append(f"{where}: {r['grad_nonfinite_pairs']} pairs with non-finite gradients "
                       f"(pairs {r.get('grad_nonfinite_idx')})")
        if r.get("flag_errors"):
            out.append(f"{where}: {r['flag_errors']}/{r['flag_pairs']} wrong intersect flags")
        d = r.get("max_abs_dev")
        if d is None or not np.isfinite(d):
            continue
        if r.get("ref") == "cf":
            tol = tol32 if r["dtype"] == "float32" else tol64
        else:
            tol = max(tol32, 10 * np.nan_to_num(best_peer_dev(r), nan=tol32))
        if d > tol:
            out.append(f"{where}: max |d - ref({r['ref']})| = {d:.2e} > {tol:.1e} "
                       f"(best peer {best_peer_dev(r):.1e})")
    for r in precs:
        if r["impl"] == "mjx" and r["query"] != "signed_distance":
            continue  # one collider run serves every query
        where = f"{r['impl']} {r['query']} {r['case']} {'pen' if r['penetrating'] else 'sep'}"
        if r.get("flag_errors"):
            out.append(f"{where}: {r['flag_errors']}/{r['flag_pairs']} wrong overlap flags")
        if r["notes"].startswith("ERROR"):
            out.append(f"{where}: {r['notes'][:160]}")
        d = r.get("max_abs_dev")
        if r["impl"] != "mjx" and d is not None and np.isfinite(d) and d > tol32:
            out.append(f"{where}: max |d - ref({r['ref']})| = {d:.2e} > {tol32:g}")
    return out


def make_plots(prefix: str, jrecs: list[dict], precs: list[dict], specs: list[str],
               peers: list[str]) -> list[str]:
    """``<prefix>_throughput_<query>.png`` and ``<prefix>_iterations_<query>.png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    ncol = 5
    nrow = math.ceil(len(specs) / ncol)
    colors = {"float32": "tab:blue", "float64": "tab:orange", "mujoco": "tab:green",
              "mujoco_native": "tab:olive", "mujoco_warp": "tab:red", "mjx": "tab:purple",
              "coal": "tab:brown"}
    for q in QUERIES:
        rs = [r for r in jrecs if r["query"] == q]
        if not rs:
            continue
        fig, axes = plt.subplots(nrow, ncol, figsize=(3.3 * ncol, 2.9 * nrow), squeeze=False)
        for ax, spec in zip(axes.flat, specs, strict=False):
            for dt in DTYPES:
                for pen, ls, mk in ((False, "-", "o"), (True, "--", "s")):
                    pts = sorted((r["n"], r["pairs_per_s"]) for r in rs if r["case"] == spec
                                 and r["dtype"] == dt and r["penetrating"] == pen)
                    if pts:
                        ax.plot(*zip(*pts, strict=True), ls=ls, marker=mk, ms=3,
                                color=colors[dt], label=f"jaxgjk {dt[5:]} {'pen' if pen else 'sep'}")
            for p in peers:
                for pen, mk in ((False, "o"), (True, "s")):
                    pr = next((r for r in precs if r["impl"] == p and r["case"] == spec
                               and r["penetrating"] == pen and r["query"] == q), None)
                    if pr and np.isfinite(pr["pairs_per_s"]):
                        ax.plot([pr["n"]], [pr["pairs_per_s"]], marker=mk, ls="none", ms=6,
                                color=colors[p], mfc=colors[p] if not pen else "none",
                                label=f"{p} {'pen' if pen else 'sep'}")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(spec, fontsize=9)
            ax.tick_params(labelsize=7)
            ax.grid(True, which="both", alpha=0.3)
        for ax in axes.flat[len(specs):]:
            ax.axis("off")
        handles, labels = {}, []
        for ax in axes.flat:
            for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
                handles.setdefault(lab, h)
        labels = list(handles)
        bottom = min(0.4, 0.8 / fig.get_figheight())  # room for the legend (inches -> fraction)
        fig.legend([handles[k] for k in labels], labels, loc="lower center", ncol=6, fontsize=7)
        fig.supxlabel("batch size (pairs)", fontsize=9, y=bottom * 0.8)
        fig.supylabel("pairs / s (wall clock)", fontsize=9)
        fig.suptitle(f"{q}: throughput vs batch size (solid/filled = separated, "
                     "dashed/hollow = penetrating)", fontsize=10)
        fig.tight_layout(rect=(0, bottom, 1, 1))
        path = f"{prefix}_throughput_{q}.png"
        fig.savefig(path, dpi=72)
        plt.close(fig)
        files.append(path)

        if q not in ("distance", "signed_distance"):
            continue
        fig, axes = plt.subplots(nrow, ncol, figsize=(3.3 * ncol, 2.7 * nrow), squeeze=False)
        for ax, spec in zip(axes.flat, specs, strict=False):
            for dt in DTYPES:
                for pen, ls in ((False, "-"), (True, "--")):
                    r = _largest(jrecs, case=spec, penetrating=pen, query=q, dtype=dt)
                    if r is None:
                        continue
                    h = np.asarray(r["iter_hist"], float)
                    ax.step(np.arange(len(h)), h / h.sum(), where="mid", ls=ls, color=colors[dt],
                            label=f"{dt[5:]} {'pen' if pen else 'sep'}")
            ax.set_title(spec, fontsize=9)
            ax.tick_params(labelsize=7)
            ax.legend(fontsize=6)
        for ax in axes.flat[len(specs):]:
            ax.axis("off")
        fig.supxlabel("iterations (GJK + EPA) per pair", fontsize=9)
        fig.supylabel("fraction of pairs", fontsize=9)
        fig.suptitle(f"jaxgjk {q}: iteration histograms at the largest batch", fontsize=10)
        fig.tight_layout()
        path = f"{prefix}_iterations_{q}.png"
        fig.savefig(path, dpi=72)
        plt.close(fig)
        files.append(path)
    return files


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return None  # per-pair arrays are not stored
    if isinstance(x, (np.floating, float)):
        return None if not np.isfinite(x) else float(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


# --------------------------------------------------------------------------------------------
# main


def jaxgjk_source_id() -> dict:
    """sha256 over jaxgjk's *.py files as imported, and their latest modification time."""
    import hashlib

    import jaxgjk

    root = os.path.dirname(jaxgjk.__file__)
    h, latest = hashlib.sha256(), 0.0
    for name in sorted(os.listdir(root)):
        if name.endswith(".py"):
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                h.update(name.encode() + b"\0" + f.read())
            latest = max(latest, os.path.getmtime(path))
    return dict(sha256=h.hexdigest()[:16], path=root,
                latest_mtime=datetime.datetime.fromtimestamp(latest).isoformat(timespec="seconds"))


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (else `platform.processor()`)."""
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or "cpu"


def _parse_sizes(s: str) -> tuple[int, ...]:
    return tuple(int(float(v)) for v in s.split(",") if v)


def main(argv=None) -> int:
    """CLI entry point; see the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="batch 1e3, peers on 1e3 pairs")
    mode.add_argument("--full", action="store_true",
                      help="every query x dtype over 1e2..1e6, peers on 2e4 pairs")
    ap.add_argument("--cases", default=None,
                    help="comma-separated subset, e.g. box-box,polytope-polytope/512")
    ap.add_argument("--queries", default=",".join(QUERIES))
    ap.add_argument("--dtypes", default=",".join(DTYPES))
    ap.add_argument("--sizes", default=None,
                    help="override every ladder with these batch sizes, e.g. 1e3,1e4")
    ap.add_argument("--peers", default=None, help="comma-separated subset of peers")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--peer-n", type=int, default=None, help="pairs per case for the peers")
    ap.add_argument("--acc-n", type=int, default=None, help="pairs used for accuracy")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds allowed for the timed runs of one measurement")
    ap.add_argument("--mjx-budget", type=float, default=None)
    ap.add_argument("--mjx-max-vertices", type=int, default=None,
                    help="skip MJX on meshes with more vertices (0: never skip)")
    ap.add_argument("--arbiter-n", type=int, default=None,
                    help="disputed pairs per case given an independent float64 reference")
    ap.add_argument("--dispute-tol", type=float, default=1e-5,
                    help="float64 implementations agreeing within this trust the peers' median")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--compiler-option", action="append", default=[], metavar="KEY=VALUE",
                    help="XLA option for jaxgjk's compiles, e.g. xla_cpu_experimental_ynn_fusion_type= "
                         "(repeatable)")
    ap.add_argument("--chunk", type=int, default=65536)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "results"))
    ap.add_argument("--tag", default=None, help="file stem (default cpu / cpu-quick / cpu-full)")
    ap.add_argument("--no-plots", action="store_true")
    args = ap.parse_args(argv)
    args.compiler_options = dict(option.split("=", 1) for option in args.compiler_option)

    mode_name = "quick" if args.quick else "full" if args.full else "default"
    mode_cfg = MODES[mode_name]
    for key in ("peer_n", "budget", "mjx_budget", "acc_n", "mjx_max_vertices", "arbiter_n"):
        if getattr(args, key) is None:
            setattr(args, key, mode_cfg[key])
    queries = [q for q in args.queries.split(",") if q]
    dtypes = [d for d in args.dtypes.split(",") if d]
    plan = {k: v for k, v in mode_cfg["plan"].items() if k[0] in queries and k[1] in dtypes}
    if args.sizes:
        plan = {k: _parse_sizes(args.sizes) for k in plan}
        plan |= {(q, d): _parse_sizes(args.sizes) for q in queries for d in dtypes
                 if q != "value_and_grad" or (q, d) in mode_cfg["plan"]}
    all_specs = [spec_label(k, nv) for k, nv in C.all_case_specs()]
    specs = all_specs if not args.cases else [s for s in args.cases.split(",") if s]
    for s in specs:
        if s not in all_specs:
            ap.error(f"unknown case {s!r}; choose from {all_specs}")
    tag = args.tag or {"default": "cpu", "quick": "cpu-quick", "full": "cpu-full"}[mode_name]
    os.makedirs(args.out, exist_ok=True)

    t_start = time.perf_counter()
    load_start = os.getloadavg()[0]
    log_lines: list[str] = []

    def log(msg: str) -> None:
        stamp = f"[{time.perf_counter() - t_start:7.1f}s] "
        print(stamp + msg, flush=True)
        log_lines.append(stamp + msg)

    import jax

    # x64 on for the whole process, before anything is traced: float32 runs get float32 inputs
    # (jaxgjk follows the input dtype).  Toggling x64 between traces breaks some of them
    # (value_and_grad float64 after float32: int32/int64 index mix inside jax's scatter).
    # MJX alone runs with x64 off (see run_peers_for_case), as it is meant to run in float32.
    jax.config.update("jax_enable_x64", True)
    import jaxgjk as jg

    source_id = jaxgjk_source_id()
    warnings.filterwarnings("once", message="scatter inputs have incompatible types")

    peers = [] if args.no_peers else P.available_peers()
    if args.peers and not args.no_peers:
        peers = [p for p in args.peers.split(",") if p in peers]
    peers = [p for p in PEER_ORDER if p in peers]
    device = jax.devices()[0]
    log(f"mode {mode_name}; device {device} ({device.device_kind}); {os.cpu_count()} cores; "
        f"load {load_start:.1f}; jaxgjk source {source_id}; peers {peers}; cases {len(specs)}; plan "
        + "; ".join(f"{q}/{d}: {','.join(f'{n:.0e}' for n in s)}" for (q, d), s in plan.items()))

    jrecs: list[dict] = []
    precs: list[dict] = []
    acc_meta = []
    max_n = max([max(s) for s in plan.values()] + [args.peer_n if peers else 0])
    spec_pairs = [(k, nv) for k, nv in C.all_case_specs() if spec_label(k, nv) in specs]
    for kind, nv in spec_pairs:
        spec = spec_label(kind, nv)
        t_case = time.perf_counter()
        log(f"== {spec}")
        cases = {pen: C.make_case(kind, max_n, pen, args.seed, nv) for pen in (False, True)}
        spec_jrecs: list[dict] = []
        keep = args.acc_n
        if not jaxgjk_supports(kind):
            log(f"    jaxgjk: skipped, this jaxgjk has no {kind} (no jg.HalfSpace)")
        for dt in DTYPES:  # float32, the peers, then float64
            for q in QUERIES:
                if (q, dt) not in plan or not jaxgjk_supports(kind):
                    continue
                try:
                    spec_jrecs += run_jaxgjk_ladder(spec, cases, q, dt, plan[(q, dt)], args,
                                                    keep, log)
                except Exception as e:  # noqa: BLE001 - report, continue with the suite
                    log(f"    jaxgjk {q} {dt}: ERROR {type(e).__name__}: {e}")
                    traceback.print_exc()
            if dt == "float32" and peers:
                for pen in (False, True):
                    pcase = C.subset(cases[pen], slice(0, args.peer_n))
                    for r in run_peers_for_case(pcase, peers, queries, args, log):
                        r["case"] = spec
                        precs.append(r)
        for pen in (False, True):
            jr = [r for r in spec_jrecs if r["penetrating"] == pen]
            pr = [r for r in precs if r["case"] == spec and r["penetrating"] == pen]
            largest = {}
            for r in jr:  # accuracy on the largest batch of each (query, dtype)
                key = (r["query"], r["dtype"])
                if key not in largest or r["n"] > largest[key]["n"]:
                    largest[key] = r
            k = min([args.acc_n] + [len(r["distance"]) for r in largest.values() if "distance" in r
                                    and r["distance"] is not None]
                    + ([args.peer_n] if peers else []))
            acc_meta.append(attach_accuracy(spec, pen, C.subset(cases[pen], slice(0, k)),
                                            list(largest.values()), pr, args, log))
        jrecs += spec_jrecs
        log(f"   {spec} done in {time.perf_counter() - t_case:.0f}s")

    total = time.perf_counter() - t_start
    anomalies = find_anomalies(jrecs, precs)
    cpu_utils = [r["cpu_util"] for r in jrecs]
    peer_notes, overhead = {}, {}
    for p in peers:
        rs = [r for r in precs if r["impl"] == p and np.isfinite(r["seconds"])]
        if rs:
            sd = [r for r in rs if r["query"] == "signed_distance"] or rs
            peer_notes[p] = sd[-1]["notes"] + " (notes of its last signed_distance case)"
            o = [r["per_call_overhead_s"] for r in rs if r["per_call_overhead_s"] is not None]
            if o:
                overhead[p] = 1e6 * float(np.median(o))
    try:
        mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        mem_gib = float("nan")
    meta = dict(tag=tag, mode=mode_name, date=datetime.datetime.now().isoformat(timespec="seconds"),
                command="python -m benchmarks.run " + " ".join(shlex.quote(a) for a in
                                                               (argv or sys.argv[1:])),
                device=str(device), device_kind=device.device_kind, platform=device.platform,
                cpu_model=cpu_model(), cpu_count=os.cpu_count(), mem_gib=mem_gib,
                python=sys.version.split()[0], versions=P.peer_versions(),
                jaxgjk_version=jg.__version__, jaxgjk_source=source_id, loadavg_start=load_start,
                loadavg_end=os.getloadavg()[0], total_s=total, repeats=args.repeats,
                compiler_options=args.compiler_options,
                budget=args.budget, mjx_budget=args.mjx_budget, chunk=args.chunk,
                peer_n=args.peer_n if peers else 0, acc_n=args.acc_n, seed=args.seed,
                case_n=max_n, dispute_tol=args.dispute_tol, arbiter_n=args.arbiter_n,
                plan={f"{q}/{d}": list(s) for (q, d), s in plan.items()},
                jaxgjk_cpu_util_median=float(np.median(cpu_utils)) if cpu_utils else float("nan"),
                per_call_overhead_us=overhead, peer_notes=peer_notes, anomalies=anomalies,
                accuracy_cases=acc_meta)
    prefix = os.path.join(args.out, tag)
    write_markdown(prefix + ".md", meta, jrecs, precs, specs, queries, peers)
    files = [prefix + ".md"]
    if not args.no_plots:
        try:
            files += make_plots(prefix, jrecs, precs, specs, peers)
        except Exception as e:  # noqa: BLE001 - plots are optional (matplotlib missing)
            log(f"plots skipped: {type(e).__name__}: {e}")
    with open(prefix + ".json", "w") as f:
        json.dump(_jsonable(dict(meta=meta, jaxgjk=jrecs, peers=precs, log=log_lines)), f,
                  indent=1)
    files.append(prefix + ".json")
    log(f"total {total / 60:.1f} min; wrote " + ", ".join(files))
    for a in anomalies:
        print("ANOMALY:", a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
