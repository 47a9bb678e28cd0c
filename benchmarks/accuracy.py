"""Accuracy arbitration of the benchmark suite (`run`): every implementation against a trusted float64
reference per pair, and the anomalies worth a look."""

from __future__ import annotations

import time
import warnings

import numpy as np

from . import cases as C

GOOD_STATUS = {"SEPARATED", "INTERSECTING", "PENETRATING"}


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
