"""Benchmark suite: jaxgjk against MuJoCo C, MuJoCo Warp, MJX and Coal, on the same random pairs.

One process runs every implementation on the pairs of ``cases.make_case`` (see ``cases.py``): the
kinds box-box, capsule-box, sphere-box, ellipsoid-ellipsoid, cylinder-box, polytope-polytope
(8/32/128/512 vertices, one shared mesh per case), sphere-sphere, sphere-capsule, capsule-capsule
and box-halfspace, each separated and penetrating (shallow contacts).
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

The suite runs here; ``accuracy.py`` arbitrates the deviations and ``report.py`` writes the tables and
plots.

Outputs (``--out``, default ``benchmarks/results``; file stem ``--tag``, default ``cpu``, or
``cpu-quick`` with ``--quick``): ``<tag>.md`` (tables), ``<tag>.json`` (raw records: timings, compile
times, iteration histograms, status counts, deviations, environment), ``<tag>_throughput_<query>.png``
(pairs/s vs batch size per case) and ``<tag>_iterations_<query>.png`` (iteration histograms).

Usage (peers live in their own venv, see ``peers.py``)::

    .venv-bench/bin/python -m benchmarks.run            # default suite
    .venv-bench/bin/python -m benchmarks.run --quick    # smoke run, small batches
    .venv-bench/bin/python -m benchmarks.run --full     # 1e2..1e6, every query x dtype
    .venv-bench/bin/python -m benchmarks.run --cases box-box,polytope-polytope/512 \\
        --queries signed_distance --dtypes float32 --no-peers
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import sys
import time
import traceback
import warnings

import numpy as np

from . import cases as C
from . import peers as P
from .accuracy import GOOD_STATUS, attach_accuracy, find_anomalies
from .report import DTYPES, QUERIES, cpu_model, jaxgjk_source_id, jsonable, make_plots, write_markdown

PEER_ORDER = ("mujoco", "mujoco_native", "mujoco_warp", "mjx", "coal")

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

    return C.jaxgjk_pairs(C.subset(case, idx), lambda value: jnp.asarray(value, dtype))


def jaxgjk_in_axes(case: C.Case) -> tuple:
    """`jax.vmap`'s in_axes for `jaxgjk_args`' (shape_a, pose_a, shape_b, pose_b): shared shapes None."""
    return (None if case.shape_a in C.UNBATCHED_SHAPES else 0, 0,
            None if case.shape_b in C.UNBATCHED_SHAPES else 0, 0)


def jaxgjk_batched(case: C.Case, query: str):
    """The batched query over pairs: f(shape_a, pose_a, shape_b, pose_b), to be jitted.

    ``value_and_grad`` returns (sum of signed distances, d sum / d pose_b), i.e. per-pair gradients.
    """
    import jax
    import jax.numpy as jnp

    import jaxgjk as jg

    in_axes = jaxgjk_in_axes(case)
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
    compiled = None  # (chunk, executable, lowering start, compile start, compile end)
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
        if compiled is None or compiled[0] != chunk_n:  # sizes above the chunk share one program
            fn = jaxgjk_batched(cases_by_pen[run_pens[0]], query)
            t0 = time.perf_counter()
            lowered = jax.jit(fn).lower(*jaxgjk_args(cases_by_pen[run_pens[0]],
                                                     np.arange(chunk_n), dtype))
            t1 = time.perf_counter()
            compiled = (chunk_n, lowered.compile(compiler_options=args.compiler_options or None),
                        t0, t1, time.perf_counter())
        _, exe, t0, t1, t2 = compiled
        for pen in run_pens:
            case = cases_by_pen[pen]
            pieces = [jaxgjk_args(case, idx % case.n, dtype) for idx in _pieces(n, args.chunk)]
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


# --------------------------------------------------------------------------------------------
# reporting


# --------------------------------------------------------------------------------------------
# main


def _parse_sizes(s: str) -> tuple[int, ...]:
    return tuple(int(float(v)) for v in s.split(",") if v)


def _arguments(argv):
    """The options, with the mode's defaults filled in: (args, mode name, plan, specs, queries, tag)."""
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
    ap.add_argument("--distinct", type=int, default=None,
                    help="distinct pairs per case (default: the largest batch); larger batches "
                         "repeat them, pair i being pair i mod distinct")
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
    return args, mode_name, plan, specs, queries, tag


def _run_case(kind: str, nv: int | None, plan: dict, peers: list[str], queries: list[str], max_n: int,
              args, log) -> tuple[list[dict], list[dict], list[dict]]:
    """jaxgjk's ladders and the peers on one case, separated and penetrating, then the accuracy of
    each on its first pairs: (jaxgjk records, peer records, accuracy summaries)."""
    spec = spec_label(kind, nv)
    t_case = time.perf_counter()
    log(f"== {spec}")
    distinct = min(max_n, args.distinct) if args.distinct else max_n
    cases = {pen: C.make_case(kind, distinct, pen, args.seed, nv) for pen in (False, True)}
    spec_jrecs: list[dict] = []
    spec_precs: list[dict] = []
    for dt in DTYPES:  # float32, the peers, then float64
        for q in QUERIES:
            if (q, dt) not in plan:
                continue
            try:
                spec_jrecs += run_jaxgjk_ladder(spec, cases, q, dt, plan[(q, dt)], args, args.acc_n, log)
            except Exception as e:  # noqa: BLE001 - report, continue with the suite
                log(f"    jaxgjk {q} {dt}: ERROR {type(e).__name__}: {e}")
                traceback.print_exc()
        if dt == "float32" and peers:
            for pen in (False, True):
                pcase = C.subset(cases[pen], slice(0, args.peer_n))
                for r in run_peers_for_case(pcase, peers, queries, args, log):
                    r["case"] = spec
                    spec_precs.append(r)
    accuracy = []
    for pen in (False, True):
        largest = {}
        for r in spec_jrecs:  # accuracy on the largest batch of each (query, dtype)
            key = (r["query"], r["dtype"])
            if r["penetrating"] == pen and (key not in largest or r["n"] > largest[key]["n"]):
                largest[key] = r
        k = min([args.acc_n] + [len(r["distance"]) for r in largest.values() if "distance" in r
                                and r["distance"] is not None]
                + ([args.peer_n] if peers else []))
        accuracy.append(attach_accuracy(spec, pen, C.subset(cases[pen], slice(0, k)),
                                        list(largest.values()),
                                        [r for r in spec_precs if r["penetrating"] == pen], args, log))
    log(f"   {spec} done in {time.perf_counter() - t_case:.0f}s")
    return spec_jrecs, spec_precs, accuracy


def _peer_summary(peers: list[str], precs: list[dict]) -> tuple[dict, dict]:
    """Each peer's notes (from its last signed_distance case) and median per-call overhead (µs)."""
    notes, overhead = {}, {}
    for p in peers:
        rs = [r for r in precs if r["impl"] == p and np.isfinite(r["seconds"])]
        if rs:
            sd = [r for r in rs if r["query"] == "signed_distance"] or rs
            notes[p] = sd[-1]["notes"] + " (notes of its last signed_distance case)"
            o = [r["per_call_overhead_s"] for r in rs if r["per_call_overhead_s"] is not None]
            if o:
                overhead[p] = 1e6 * float(np.median(o))
    return notes, overhead


def main(argv=None) -> int:
    """CLI entry point; see the module docstring."""
    args, mode_name, plan, specs, queries, tag = _arguments(argv)
    os.makedirs(args.out, exist_ok=True)

    t_start = time.perf_counter()
    load_start = os.getloadavg()[0]
    log_lines: list[str] = []

    def log(msg: str) -> None:
        stamp = f"[{time.perf_counter() - t_start:7.1f}s] "
        print(stamp + msg, flush=True)
        log_lines.append(stamp + msg)

    import jax

    # x64 on for the whole process when a float64 run is planned, before anything is traced:
    # float32 runs get float32 inputs (jaxgjk follows the input dtype).  Toggling x64 between
    # traces breaks some of them (value_and_grad float64 after float32: int32/int64 index mix
    # inside jax's scatter).  Without float64 runs x64 stays off, as a float32 user (on a GPU,
    # say) runs it.  MJX always runs with x64 off (see run_peers_for_case).
    jax.config.update("jax_enable_x64", any(dtype == "float64" for _, dtype in plan))
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
        case_jrecs, case_precs, case_accuracy = _run_case(kind, nv, plan, peers, queries, max_n, args, log)
        jrecs += case_jrecs
        precs += case_precs
        acc_meta += case_accuracy

    total = time.perf_counter() - t_start
    anomalies = find_anomalies(jrecs, precs)
    cpu_utils = [r["cpu_util"] for r in jrecs]
    peer_notes, overhead = _peer_summary(peers, precs)
    try:
        mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        mem_gib = float("nan")
    meta = dict(tag=tag, mode=mode_name, date=datetime.datetime.now().isoformat(timespec="seconds"),
                command="python -m benchmarks.run " + " ".join(shlex.quote(a) for a in
                                                               (argv or sys.argv[1:])),
                device=str(device), device_kind=device.device_kind, platform=device.platform,
                x64=bool(jax.config.jax_enable_x64),
                cpu_model=cpu_model(), cpu_count=os.cpu_count(), mem_gib=mem_gib,
                python=sys.version.split()[0], versions=P.peer_versions(),
                jaxgjk_version=jg.__version__, jaxgjk_source=source_id, loadavg_start=load_start,
                loadavg_end=os.getloadavg()[0], total_s=total, repeats=args.repeats,
                compiler_options=args.compiler_options,
                budget=args.budget, mjx_budget=args.mjx_budget, chunk=args.chunk,
                peer_n=args.peer_n if peers else 0, acc_n=args.acc_n, seed=args.seed,
                case_n=max_n, distinct=args.distinct, dispute_tol=args.dispute_tol, arbiter_n=args.arbiter_n,
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
        json.dump(jsonable(dict(meta=meta, jaxgjk=jrecs, peers=precs, log=log_lines)), f,
                  indent=1)
    files.append(prefix + ".json")
    log(f"total {total / 60:.1f} min; wrote " + ", ".join(files))
    for a in anomalies:
        print("ANOMALY:", a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
