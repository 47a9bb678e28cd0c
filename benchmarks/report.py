"""Reporting of the benchmark suite (`run`): the Markdown tables, the plots, and the run's environment."""

from __future__ import annotations

import datetime
import math
import os
import platform

import numpy as np

QUERIES = ("distance", "signed_distance", "intersect", "value_and_grad")
DTYPES = ("float32", "float64")


def fmt_rate(x) -> str:
    if x is None or not np.isfinite(x):
        return "–"
    if x >= 1e6:
        return f"{x / 1e6:.2f}M"
    if x >= 1e3:
        return f"{x / 1e3:.1f}k"
    return f"{x:.0f}"


def fmt_dev(x) -> str:
    return "–" if x is None or not np.isfinite(x) else f"{x:.1e}"


def _peer_record(records: list[dict], impl: str, case: str, penetrating: bool, query: str) -> dict | None:
    """The peer `impl`'s record of (case, penetrating, query), or None."""
    return next((r for r in records if r["impl"] == impl and r["case"] == case
                 and r["penetrating"] == penetrating and r["query"] == query), None)


def _largest(records: list[dict], **kw) -> dict | None:
    rs = [r for r in records if all(r.get(k) == v for k, v in kw.items())]
    return max(rs, key=lambda r: r["n"]) if rs else None


def _table_head(header: list[str]) -> list[str]:
    """A Markdown table's header and rule."""
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]


def _case_rows(jrecs: list[dict], specs: list[str], query: str):
    """(spec, penetrating, row label, jaxgjk float32 record, float64 record) for each case's rows."""
    for spec in specs:
        for pen in (False, True):
            yield (spec, pen, f"{spec} {'pen' if pen else 'sep'}",
                   _largest(jrecs, case=spec, penetrating=pen, query=query, dtype="float32"),
                   _largest(jrecs, case=spec, penetrating=pen, query=query, dtype="float64"))


def _header(meta: dict) -> list[str]:
    """How the run was made: command, machine, load, methods."""
    L = []
    w = L.append
    w(f"# jaxgjk benchmark — {meta['tag']}\n")
    w(f"Generated {meta['date']} by `{meta['command']}` (mode `{meta['mode']}`, "
      f"total {meta['total_s'] / 60:.1f} min).\n")
    kind = f"{meta['device_kind']}; host " if meta.get("platform", "cpu") != "cpu" else ""
    w(f"- device: `{meta['device']}` ({kind}{meta['cpu_model']}, {meta['cpu_count']} cores, "
      f"{meta['mem_gib']:.0f} GiB); jax {meta['versions'].get('jax')}, "
      f"jaxgjk {meta['jaxgjk_version']} (source sha256 {meta['jaxgjk_source']['sha256']}, "
      f"newest file {meta['jaxgjk_source']['latest_mtime']}); float32 runs with "
      f"`jax_enable_x64` {'on' if meta.get('x64', True) else 'off'} and float32 inputs")
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
    distinct = meta.get("distinct") or meta["case_n"]
    w(f"- pairs: prefixes of `cases.make_case(kind, {distinct}, penetrating, "
      f"seed={meta['seed']}, n_vertices)`; pair indices below refer to them"
      + (f"; batches above {distinct} pairs repeat them (pair i is pair i mod {distinct})."
         if distinct < meta["case_n"] else "."))
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
    return L


def _rate_tables(q: str, meta: dict, jrecs: list[dict], precs: list[dict], specs: list[str],
                 peers: list[str]) -> list[str]:
    """Throughput of `q` per wall-clock second and per CPU-second, jaxgjk against each peer."""
    L = []
    w = L.append

    def jcell(r, key):
        if r is None:
            return "–"
        dag = "†" if len(r["runs"]) < meta["repeats"] else ""
        return f"{fmt_rate(r[key])}{dag} @{r['n']:.0e}".replace("e+0", "e")

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
        L += _table_head(hdr)
        for spec, pen, label, j32, j64 in _case_rows(jrecs, specs, q):
            row = [label, jcell(j32, key), jcell(j64, key)]
            rates = []
            for p in peers:
                pr = _peer_record(precs, p, spec, pen, q)
                rate = pr.get(key, np.nan) if pr else np.nan
                rates.append(rate)
                row.append(fmt_rate(rate))
            for rate in rates:
                ok = j32 is not None and rate is not None and np.isfinite(rate)
                row.append(f"{j32[key] / rate:.3g}" if ok else "–")
            w("| " + " | ".join(row) + " |")
        w("")
    return L


def _detail_table(q: str, jrecs: list[dict], precs: list[dict], specs: list[str],
                  peers: list[str]) -> list[str]:
    """Accuracy, iterations, statuses and compile times of `q` (wrong flags for `intersect`)."""
    L = []
    w = L.append
    if q == "intersect":
        w(f"## {q} — wrong flags (count / pairs checked) and jaxgjk compile time\n")
        hdr = ["case", "jaxgjk f32", "jaxgjk f64"] + peers + ["compile f32 s", "compile f64 s"]
    else:
        w(f"## {q} — accuracy (max abs deviation), iterations, statuses, compile time\n")
        hdr = (["case", "ref", "jaxgjk f32", "jaxgjk f64", "f32 vs f64"] + peers
               + ["iters f32 p50/p99/max", "iters f64 p50/p99/max", "statuses (f32; f64)",
                  "compile f32 s", "compile f64 s"])
    L += _table_head(hdr)
    for spec, pen, label, j32, j64 in _case_rows(jrecs, specs, q):
        pr = {p: _peer_record(precs, p, spec, pen, q) for p in peers}
        comp = [f"{j['lower_s'] + j['compile_s']:.1f}" if j else "–" for j in (j32, j64)]
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
            row = ([label, ref, fmt_dev((j32 or {}).get("max_abs_dev")),
                    fmt_dev((j64 or {}).get("max_abs_dev")),
                    fmt_dev((j32 or {}).get("dev_vs_f64"))]
                   + [fmt_dev((pr[p] or {}).get("max_abs_dev")) for p in peers]
                   + [it(j32), it(j64), f"{st(j32)}; {st(j64)}"] + comp)
        w("| " + " | ".join(row) + " |")
    w("")
    return L


def _disputed_pairs(meta: dict) -> list[str]:
    """Signed distance errors against the arbiter on the pairs the float64 implementations dispute."""
    L = []
    w = L.append
    arb_cases = [a for a in meta.get("accuracy_cases", []) if a.get("n_arb")]
    if arb_cases:
        names = sorted({n for a in arb_cases for n in a["arbiter_max_err"]},
                       key=lambda n: (n.startswith("jaxgjk"), n))
        w("## Disputed pairs — signed distance error against the arbiter\n")
        w(f"Pairs where the float64 implementations disagree by more than {meta['dispute_tol']:g}; "
          "the most disputed ones (and each implementation's worst) get the independent float64 "
          "arbiter; max |d − arb| over those pairs (signed_distance query).\n")
        hdr = ["case", "disputed / K", "arbitrated"] + names
        L += _table_head(hdr)
        for a in arb_cases:
            w(f"| {a['case']} {'pen' if a['penetrating'] else 'sep'} | {a['n_disputed']} / "
              f"{a['k']} | {a['n_arb']} | "
              + " | ".join(fmt_dev(a["arbiter_max_err"].get(n)) for n in names) + " |")
        w("")
    return L


def _gradient_cost(jrecs: list[dict], specs: list[str]) -> list[str]:
    """The cost of `value_and_grad` relative to `signed_distance` (jaxgjk only)."""
    L = []
    w = L.append
    w("## value_and_grad — cost relative to signed_distance (jaxgjk only)\n")
    w("`jax.value_and_grad` of the sum of the vmapped signed distances w.r.t. pose_b (per-pair "
      "gradients); ratio = vag time / signed_distance time at the same batch size and dtype.\n")
    hdr = ["case", "dtype", "N", "signed_distance pairs/s", "value_and_grad pairs/s",
           "ratio (wall)", "ratio (CPU time)", "non-finite grads", "compile s (vag; sd)"]
    L += _table_head(hdr)
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
                  f"{fmt_rate(s['pairs_per_s']) if s else '–'} | {fmt_rate(v['pairs_per_s'])}"
                  f" | {ratio} | {ratio_cpu} | {v['grad_nonfinite_pairs']} | "
                  f"{v['lower_s'] + v['compile_s']:.1f}; {comp_sd} |")
    w("")
    return L


def _size_sweeps(jrecs: list[dict], specs: list[str]) -> list[str]:
    """jaxgjk throughput against batch size, per query and dtype swept."""
    L = []
    w = L.append
    sweeps = sorted({(r["query"], r["dtype"]) for r in jrecs
                     if len({x["n"] for x in jrecs if x["query"] == r["query"]
                             and x["dtype"] == r["dtype"]}) > 1})
    for q, dt in sweeps:
        sizes = sorted({r["n"] for r in jrecs if r["query"] == q and r["dtype"] == dt})
        w(f"## jaxgjk {q} {dt} — throughput vs batch size\n")
        w("pairs per wall-clock second (pairs per CPU-second); iterations max over the batch "
          "in brackets: a vmapped loop runs until its slowest pair is done.\n")
        L += _table_head(["case"] + [f"{n:.0e}".replace("e+0", "e") for n in sizes])
        for spec in specs:
            for pen in (False, True):
                cells = []
                for n in sizes:
                    r = next((x for x in jrecs if x["case"] == spec and x["penetrating"] == pen
                              and x["query"] == q and x["dtype"] == dt and x["n"] == n), None)
                    cells.append(f"{fmt_rate(r['pairs_per_s'])} ({fmt_rate(r['pairs_per_cpu_s'])})"
                                 + (f" [{r['iter_max']}]" if "iter_max" in r else "") if r else "–")
                w(f"| {spec} {'pen' if pen else 'sep'} | " + " | ".join(cells) + " |")
        w("")
    return L


def _anomalies_and_notes(meta: dict) -> list[str]:
    """The anomalies found and the peers' notes."""
    L = []
    w = L.append
    anomalies = meta.get("anomalies", [])
    w("## Anomalies\n")
    w("\n".join(f"- {a}" for a in anomalies) if anomalies else "None found.")
    w("")
    w("## Peer notes\n")
    for p, note in meta.get("peer_notes", {}).items():
        w(f"- **{p}**: {note}")
    w("")
    return L


def write_markdown(path: str, meta: dict, jrecs: list[dict], precs: list[dict],
                   specs: list[str], queries: list[str], peers: list[str]) -> None:
    """The tables of ``<tag>.md``."""
    lines = _header(meta)
    for q in queries:
        if q != "value_and_grad":
            lines += _rate_tables(q, meta, jrecs, precs, specs, peers)
            lines += _detail_table(q, jrecs, precs, specs, peers)
    lines += _disputed_pairs(meta)
    if "value_and_grad" in queries:
        lines += _gradient_cost(jrecs, specs)
    lines += _size_sweeps(jrecs, specs) + _anomalies_and_notes(meta)
    with open(path, "w") as f:
        f.write("\n".join(lines))


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


def jsonable(x):
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return None  # per-pair arrays are not stored
    if isinstance(x, (np.floating, float)):
        return None if not np.isfinite(x) else float(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


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
