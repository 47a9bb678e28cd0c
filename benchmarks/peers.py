"""Peer (third-party) convex collision runners for the jaxgjk benchmark suite.

Every runner takes a ``cases.Case`` (see ``benchmarks/cases.py`` for the neutral numpy case
format: kind, per-pair shape parameters, poses as positions (N,3) and unit quaternions (N,4) in
(w, x, y, z) order) and a query, and returns results in the jaxgjk convention::

    run_<peer>(case, query, repeats=3) -> dict(
        distance=np.ndarray (N,) float64,  # signed distance: > 0 separation, < 0 -depth;
                                           # NaN where the peer gives no value for the pair
        intersect=np.ndarray (N,) bool,    # overlap flag (always filled)
        seconds=float,                     # wall time of the timed region for all N pairs
                                           # (min over ``repeats``), setup/compile excluded
        per_call_overhead_s=float | None,  # cost of one near-empty call (binding/dispatch)
        cpu_seconds=float,                 # process CPU time of the timed run counted in
                                           # ``seconds`` (all threads; robust to a loaded box)
        notes=str)                         # what was timed, precision, threads, caveats
    (+ ``n_timed=int`` from ``run_mjx`` when it ran only the first n_timed < N pairs.)

Queries: ``"signed_distance"`` (negative inside), ``"distance"`` (clamped at 0 when
overlapping; peers without a cheaper unsigned mode run their signed routine and clamp) and
``"intersect"`` (boolean; ``distance`` is NaN unless the peer's boolean path gives a value).

Peers (each imported lazily; ``available_peers()`` lists those that import):

* ``mujoco``  -- MuJoCo C ``mj_geomDistance`` per pair in a Python loop (single thread).
  Model with 2N geoms (pair i = geoms 2i, 2i+1), poses written to ``d.geom_xpos/xmat`` once.
  MuJoCo's own collider table decides the algorithm (``mujoco_collider``): analytic routines
  for sphere-sphere, sphere-capsule, capsule-capsule, sphere-box, capsule-box and plane-box,
  native GJK/EPA (``mjc_ccd``, "nativeccd", on by default) for the rest, box-box included.
  float64; polytope meshes are stored by MuJoCo in float32.
* ``mujoco_native`` -- the same ``mj_geomDistance`` calls on the same model and poses, but in a
  tight C loop of our own (``mujoco_native.c``, built with the system ``gcc -O2`` against the
  ``libmujoco`` and headers of the installed ``mujoco`` wheel, into ``benchmarks/build/``, on
  first use): MuJoCo's own speed without Python's per-call overhead.  Same results as
  ``mujoco``, bit for bit (``--selfcheck`` checks it).
* ``mujoco_warp`` -- MuJoCo Warp GJK/EPA (``collision_gjk.ccd``/``gjk_phase``) for every kind,
  one Warp thread per pair in a custom kernel mirroring MJWarp's ``ccd_kernel_builder`` (geom
  types compile-time, origin shifted to geom 1, MuJoCo's ccd_tolerance/ccd_iterations, mesh
  hull + adjacency graph from the compiled MjModel), device ``"cpu"`` (Warp runs CPU kernels
  on one thread).  float32.
* ``mjx`` -- MuJoCo XLA (JAX backend) colliders of ``collision_driver`` (vmapped over pairs by
  MJX itself), jitted.  These are *contact* routines, not distance routines: for separated pairs
  they return placeholder/lower-bound values, so only negative (contact) values are reported
  and separated pairs get NaN.  No cylinder-box collider.  float32.  Its mesh collider (SAT
  over all edge pairs) is so slow for big meshes that ``run_mjx`` runs a sub-batch within a
  time budget and extrapolates (see ``n_timed``).
* ``coal`` -- Coal (ex hpp-fcl) ``coal.distance`` / ``coal.collide`` per pair in a Python loop
  (single thread), float64 GJK/EPA (analytic for some primitive pairs).

Self-check: ``python -m benchmarks.peers --selfcheck [--n 2000]`` prints per-kind throughput
(pairs/s) of every available peer and the max abs disagreement with a reference (float64
closed form where ``cases.reference_signed_distance`` has one, else the per-pair median of the
peers), and checks that ``mujoco_native`` returns the Python loop's distances exactly (exit
status 1 if not).  Kinds a peer lacks (half-spaces outside MuJoCo C) are reported as skipped.
Run it in the peers' venv, kept apart from jaxgjk's own so peer pins cannot break it:

    python3 -m venv .venv-bench
    .venv-bench/bin/pip install jax==0.10.2 jaxlib==0.10.2 numpy scipy \
        mujoco==4.0.0 mujoco-mjx==3.17.0 mujoco-warp==4.0.0 coal==3.0.3

(mujoco-mjx 3.17.0 does not pin jax, so all four peers share one venv; warp-lang 1.19.0 comes
with mujoco-warp.)
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import importlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from . import cases as C

QUERIES = ("distance", "signed_distance", "intersect")
DISTMAX = 10.0  # MuJoCo distmax: larger than any separation the generator produces

_MJ_TYPE = {"sphere": "sphere", "capsule": "capsule", "box": "box", "cylinder": "cylinder",
            "ellipsoid": "ellipsoid", "polytope": "mesh", "halfspace": "plane"}


def _check_query(query: str) -> None:
    if query not in QUERIES:
        raise ValueError(f"query must be one of {QUERIES}, got {query!r}")


def _best_time(fn, repeats: int, cpu: list | None = None) -> tuple[float, object]:
    """Run ``fn`` ``repeats`` times; return (min wall seconds, last result).

    If ``cpu`` is a list, the process CPU time (all threads) of the fastest run is appended.
    """
    best, best_cpu, out = np.inf, np.nan, None
    for _ in range(max(1, repeats)):
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        t = time.perf_counter() - t0
        if t < best:
            best, best_cpu = t, time.process_time() - c0
    if cpu is not None:
        cpu.append(best_cpu)
    return best, out


def _skipped(case: C.Case, notes: str) -> dict:
    """The result of a peer that has no routine for the case: NaN everywhere, ``notes`` says why."""
    return _result(np.full(case.n, np.nan), np.zeros(case.n, bool), np.nan, None, notes)


def _has_halfspace(case: C.Case) -> bool:
    return "halfspace" in (case.shape_a, case.shape_b)


def _result(dist, intersect, seconds, overhead, notes, cpu_seconds=np.nan) -> dict:
    return dict(distance=np.asarray(dist, dtype=np.float64),
                intersect=np.asarray(intersect, dtype=bool), seconds=float(seconds),
                per_call_overhead_s=None if overhead is None else float(overhead), notes=notes,
                cpu_seconds=float(cpu_seconds))


def _finish(raw: np.ndarray, query: str) -> tuple[np.ndarray, np.ndarray]:
    """Peer distances -> (distance for ``query``, intersect flags).

    For ``signed_distance`` ``raw`` is signed and overlap means ``raw < 0``; for ``distance``
    the peer may report 0 for any overlap, so overlap means ``raw <= 0``.
    """
    if query == "distance":
        return np.maximum(raw, 0.0), raw <= 0.0
    return raw, raw < 0.0


# --------------------------------------------------------------------------------------------
# MuJoCo model shared by mujoco / mujoco_warp / mjx


def _fmt(x) -> str:
    return " ".join(f"{float(v):.17g}" for v in np.ravel(x))


def _geom_xml(shape: str, params: dict, i: int, mesh: str) -> str:
    if shape == "polytope":
        return f'<geom type="mesh" mesh="{mesh}"/>'
    if shape == "halfspace":  # the collider treats a plane as the half-space below it, unbounded
        return '<geom type="plane" size="0 0 1"/>'
    if shape == "sphere":
        size = [params["radius"][i]]
    elif shape in ("capsule", "cylinder"):
        size = [params["radius"][i], params["half_length"][i]]
    elif shape == "box":
        size = params["half_extents"][i]
    else:
        size = params["radii"][i]
    return f'<geom type="{_MJ_TYPE[shape]}" size="{_fmt(size)}"/>'


def build_mj_model(case: C.Case, n_pairs: int | None = None):
    """MjModel with geoms 2i (A_i), 2i+1 (B_i) for the first ``n_pairs`` pairs (default all).

    Polytopes become mesh assets ``mesh_a``/``mesh_b`` (MuJoCo keeps their convex hull).
    """
    import mujoco

    n = case.n if n_pairs is None else n_pairs
    assets = []
    for tag, shape, params in (("a", case.shape_a, case.params_a),
                               ("b", case.shape_b, case.params_b)):
        if shape == "polytope":
            assets.append(f'<mesh name="mesh_{tag}" vertex="{_fmt(params["vertices"])}"/>')
    geoms = []
    for i in range(n):
        geoms.append(_geom_xml(case.shape_a, case.params_a, i, "mesh_a"))
        geoms.append(_geom_xml(case.shape_b, case.params_b, i, "mesh_b"))
    xml = ("<mujoco><asset>" + "".join(assets) + "</asset><worldbody>" + "".join(geoms)
           + "</worldbody></mujoco>")
    return mujoco.MjModel.from_xml_string(xml)


def geom_world_poses(case: C.Case, m) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """World poses of the MuJoCo geoms of A and B: (pos_a (N,3), mat_a (N,3,3), pos_b, mat_b).

    MuJoCo re-centres mesh vertices (stored ``v`` with original ``R(mesh_quat) v + mesh_pos``),
    so a mesh geom's frame is the case frame composed with that offset.
    """
    out = []
    for side, shape, pos, rot in (("a", case.shape_a, case.pos_a, case.rotmat_a()),
                                  ("b", case.shape_b, case.pos_b, case.rotmat_b())):
        if shape == "polytope":
            mid = 0 if side == "a" or case.shape_a != "polytope" else 1
            r_mesh = C.quat_to_mat(m.mesh_quat[mid])
            pos = pos + rot @ m.mesh_pos[mid]
            rot = rot @ r_mesh
        out += [pos, rot]
    return out[0], out[1], out[2], out[3]


# --------------------------------------------------------------------------------------------
# MuJoCo (C)


def _mujoco_overhead(n: int = 20000) -> float:
    """Seconds per ``mj_geomDistance`` call on two far-apart spheres with distmax 0."""
    import mujoco

    m = mujoco.MjModel.from_xml_string(
        '<mujoco><worldbody><geom size=".1"/><geom pos="5 0 0" size=".1"/></worldbody></mujoco>')
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)
    f = mujoco.mj_geomDistance
    t0 = time.perf_counter()
    for _ in range(n):
        f(m, d, 0, 1, 0.0, None)
    return (time.perf_counter() - t0) / n


_MJ_ANALYTIC = {"sphere-sphere": "mjc_SphereSphere", "sphere-capsule": "mjc_SphereCapsule",
                "capsule-capsule": "mjc_CapsuleCapsule", "sphere-box": "mjc_SphereBox",
                "capsule-box": "mjc_CapsuleBox", "box-halfspace": "mjc_PlaneBox",
                "sphere-cylinder": "mjc_SphereCylinder"}


def mujoco_collider(case: C.Case) -> str:
    """The MuJoCo routine behind ``mj_geomDistance`` for the case's geom types.

    From MuJoCo's collider table (``mjCOLLISIONFUNC``); with the default ``nativeccd`` flag,
    ``mj_geomDistance`` sends ``mjc_Convex`` and ``mjc_BoxBox`` pairs to GJK/EPA (``mjc_ccd``).
    """
    name = _MJ_ANALYTIC.get(case.kind)
    return f"analytic {name}" if name else "GJK/EPA, nativeccd mjc_ccd"


def _mj_geom_poses(case: C.Case, m) -> tuple[np.ndarray, np.ndarray]:
    """(geom_xpos (2N,3), geom_xmat (2N,9) row-major) of ``build_mj_model(case)``'s geoms."""
    pa, ra, pb, rb = geom_world_poses(case, m)
    n = case.n
    xpos = np.empty((2 * n, 3))
    xmat = np.empty((2 * n, 3, 3))
    xpos[0::2], xpos[1::2], xmat[0::2], xmat[1::2] = pa, pb, ra, rb
    return xpos, xmat.reshape(2 * n, 9)


def _mujoco_distmax(query: str) -> float:
    """``DISTMAX`` for distances; 0 for ``intersect`` (colliders exit early on separation)."""
    return 0.0 if query == "intersect" else DISTMAX


def _mujoco_finish(signed: np.ndarray, query: str) -> tuple[np.ndarray, np.ndarray]:
    """``mj_geomDistance`` values -> (distance for ``query``, intersect flags)."""
    if query == "intersect":
        return np.full(len(signed), np.nan), signed < 0.0
    return _finish(signed, query)


def run_mujoco(case: C.Case, query: str = "signed_distance", repeats: int = 3) -> dict:
    """MuJoCo C ``mj_geomDistance`` over the N pairs (Python loop, one thread).

    ``signed_distance``/``distance`` use distmax = ``DISTMAX``; ``intersect`` uses distmax = 0
    (colliders exit early on separation) and returns NaN distances.
    """
    import mujoco

    _check_query(query)
    m = build_mj_model(case)
    d = mujoco.MjData(m)
    d.geom_xpos[:], d.geom_xmat[:] = _mj_geom_poses(case, m)
    n = case.n
    distmax = _mujoco_distmax(query)
    f = mujoco.mj_geomDistance
    out = np.empty(n)

    def loop():
        for i in range(n):
            out[i] = f(m, d, 2 * i, 2 * i + 1, distmax, None)
        return out.copy()

    cpu: list = []
    seconds, signed = _best_time(loop, repeats, cpu)
    dist, inter = _mujoco_finish(signed, query)
    notes = (f"mujoco {mujoco.__version__} mj_geomDistance ({mujoco_collider(case)}), Python loop "
             f"over pairs, 1 thread, float64, distmax={distmax}; timed region = the loop")
    return _result(dist, inter, seconds, _mujoco_overhead(), notes, cpu[0])


# --------------------------------------------------------------------------------------------
# MuJoCo (C), native loop

_HERE = os.path.dirname(os.path.abspath(__file__))
NATIVE_SOURCE = os.path.join(_HERE, "mujoco_native.c")
NATIVE_BUILD_DIR = os.path.join(_HERE, "build")  # ignored by git; rebuilt when anything changes
NATIVE_CFLAGS = ("-O2", "-std=c11", "-D_POSIX_C_SOURCE=199309L")
NATIVE_WARMUP = 1  # untimed passes over all pairs before the timed ones
_NATIVE_MAGIC = 0x6A67626E6174766E  # must match MAGIC in mujoco_native.c


def _mujoco_wheel_files() -> tuple[str, str]:
    """(include directory, libmujoco.so path) shipped in the installed ``mujoco`` wheel."""
    import mujoco

    root = os.path.dirname(os.path.abspath(mujoco.__file__))
    libs = sorted(glob.glob(os.path.join(root, "libmujoco.so.*")))
    include = os.path.join(root, "include")
    if not libs or not os.path.isfile(os.path.join(include, "mujoco", "mujoco.h")):
        raise RuntimeError(f"no libmujoco.so.* or include/mujoco/mujoco.h in {root}")
    return include, libs[-1]


def native_compile_command(output: str) -> list[str]:
    """The gcc command line that builds ``mujoco_native.c`` into ``output``."""
    include, lib = _mujoco_wheel_files()
    return ["gcc", *NATIVE_CFLAGS, "-I", include, NATIVE_SOURCE, "-o", output, lib,
            f"-Wl,-rpath,{os.path.dirname(lib)}"]


def mujoco_native_binary() -> str:
    """Path of the compiled native runner; compiles it with the system gcc when missing.

    The file name carries a hash of the source and of the compile command (flags, libmujoco
    path), so an edit or another MuJoCo install gets its own build.
    """
    if shutil.which("gcc") is None:
        raise RuntimeError("mujoco_native needs gcc on PATH")
    key = hashlib.sha256()
    with open(NATIVE_SOURCE, "rb") as f:
        key.update(f.read())
    key.update("\0".join(native_compile_command("")).encode())
    exe = os.path.join(NATIVE_BUILD_DIR, f"mujoco_native-{key.hexdigest()[:12]}")
    if not os.path.exists(exe):
        os.makedirs(NATIVE_BUILD_DIR, exist_ok=True)
        tmp = f"{exe}.tmp{os.getpid()}"
        done = subprocess.run(native_compile_command(tmp), capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"compiling {NATIVE_SOURCE} failed:\n{done.stderr}")
        os.replace(tmp, exe)  # atomic: concurrent builders never see a partial file
    return exe


def run_mujoco_native(case: C.Case, query: str = "signed_distance", repeats: int = 3, *,
                      tile: int = 1, warmup: int = NATIVE_WARMUP, fromto: bool = False) -> dict:
    """MuJoCo C ``mj_geomDistance`` over the pairs in a tight C loop (``mujoco_native.c``).

    Same model, poses and distmax as ``run_mujoco`` (pair i = geoms 2i, 2i+1 of a model with 2N
    geoms); a pass calls ``mj_geomDistance`` for ``tile`` copies of the N pairs in turn
    (``tile * N`` calls; copy k of pair i uses the geoms of pair i, so the model stays small while
    the loop is long).  ``warmup`` untimed passes, then ``repeats`` timed ones, each timed by
    ``clock_gettime(CLOCK_MONOTONIC)`` around the whole pass; one thread, float64.

    Returns the common result dict for the N pairs, with ``seconds`` the fastest pass, i.e. for
    ``n_calls = tile * N`` calls (pairs/s = n_calls / seconds), and in addition ``n_calls``,
    ``runs`` and ``cpu_runs`` (wall and process CPU seconds of every timed pass), ``raw`` (N,)
    (``mj_geomDistance``'s value: signed, or 0 for separated pairs under ``intersect``) and, with
    ``fromto=True``, ``fromto`` (N,6): the points on A and on B (zeros where MuJoCo found
    nothing within distmax).  Raises RuntimeError if the copies of a pair disagree.
    """
    import mujoco

    _check_query(query)
    if tile < 1 or repeats < 1 or warmup < 0:
        raise ValueError("tile and repeats must be >= 1, warmup >= 0")
    exe = mujoco_native_binary()
    m = build_mj_model(case)
    xpos, xmat = _mj_geom_poses(case, m)
    n, calls = case.n, tile * case.n
    pairs = np.tile(np.arange(n, dtype=np.int32), tile)
    distmax = _mujoco_distmax(query)
    with tempfile.TemporaryDirectory(prefix="mujoco_native_") as tmp:
        model_path, in_path, out_path = (os.path.join(tmp, name)
                                         for name in ("model.mjb", "in.bin", "out.bin"))
        mujoco.mj_saveModel(m, model_path, None)
        with open(in_path, "wb") as f:
            f.write(np.array([_NATIVE_MAGIC, 2 * n, calls, warmup, repeats, int(fromto)],
                             np.int64).tobytes())
            f.write(np.float64(distmax).tobytes())
            f.write(np.ascontiguousarray(xpos, np.float64).tobytes())
            f.write(np.ascontiguousarray(xmat, np.float64).tobytes())
            f.write((2 * pairs).tobytes())
            f.write((2 * pairs + 1).tobytes())
        done = subprocess.run([exe, model_path, in_path, out_path], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{exe} failed ({done.returncode}): {done.stderr.strip()}")
        out = np.fromfile(out_path, np.float64)
    sizes = [calls, 6 * calls if fromto else 0, repeats, repeats]
    if len(out) != sum(sizes):
        raise RuntimeError(f"{exe} wrote {len(out)} values, expected {sum(sizes)}")
    signed_all, fromto_all, runs, cpu_runs = np.split(out, np.cumsum(sizes)[:-1])
    signed_all = signed_all.reshape(tile, n)
    if not np.array_equal(signed_all, np.broadcast_to(signed_all[0], signed_all.shape),
                          equal_nan=True):
        raise RuntimeError("mujoco_native: copies of the same pair gave different distances")
    signed = signed_all[0]
    dist, inter = _mujoco_finish(signed, query)
    best = int(np.argmin(runs))
    notes = (f"mujoco {mujoco.__version__} mj_geomDistance ({mujoco_collider(case)}) in a C loop "
             f"(mujoco_native.c, gcc {' '.join(NATIVE_CFLAGS)}), 1 thread, float64, "
             f"distmax={distmax}{', fromto' if fromto else ''}; pass = {tile} x {n} calls; "
             f"{warmup} warm-up pass(es), best of {repeats} timed passes (CLOCK_MONOTONIC)")
    res = _result(dist, inter, runs[best], None, notes, cpu_runs[best])
    res.update(n_calls=calls, runs=runs.tolist(), cpu_runs=cpu_runs.tolist(), raw=signed)
    if fromto:
        res["fromto"] = fromto_all.reshape(tile, n, 6)[0]
    return res


# --------------------------------------------------------------------------------------------
# MuJoCo Warp

_WARP_KERNELS: dict = {}


def _quiet_warp() -> None:
    """Silence Warp's info banner / module-load messages (call before Warp initialises)."""
    import warp as wp

    wp.config.log_level = getattr(wp, "LOG_WARNING", 30)


def _warp_kernel(mode: str, type1: int, type2: int):
    """Warp kernel, one thread per pair; ``mode`` in {"ccd", "gjk"} (ccd = GJK + EPA).

    The geom types are compile-time constants, as in MJWarp's own ``ccd_kernel_builder``.
    """
    cache_key = (mode, type1, type2)
    if cache_key in _WARP_KERNELS:
        return _WARP_KERNELS[cache_key]
    import warp as wp
    from mujoco_warp._src.collision_core import Geom
    from mujoco_warp._src.collision_gjk import ccd, gjk_phase

    use_ccd = mode == "ccd"

    @wp.kernel(module="unique", enable_backward=False)
    def kernel(
        pos1: wp.array[wp.vec3], rot1: wp.array[wp.mat33], size1: wp.array[wp.vec3],
        vertadr1: int, vertnum1: int, graphadr1: int,
        pos2: wp.array[wp.vec3], rot2: wp.array[wp.mat33], size2: wp.array[wp.vec3],
        vertadr2: int, vertnum2: int, graphadr2: int,
        mesh_vert: wp.array[wp.vec3], mesh_graph: wp.array[int],
        tolerance: float, cutoff: float, gjk_iterations: int, epa_iterations: int,
        epa_vert: wp.array2d[wp.vec3], epa_vert_index: wp.array2d[int],
        epa_face: wp.array2d[int], epa_pr: wp.array2d[wp.vec3],
        epa_norm2: wp.array2d[float], epa_horizon: wp.array2d[int],
        overflow: wp.array[int],
        dist_out: wp.array[float], flag_out: wp.array[int],
    ):
        tid = wp.tid()
        # shift the origin to geom 1, as MJWarp's collision pipeline does (float32 precision)
        origin = pos1[tid]
        g1 = Geom()
        g1.pos = wp.vec3(0.0)
        g1.rot = rot1[tid]
        g1.size = size1[tid]
        g1.margin = 0.0
        g1.index = -1
        g1.vertadr = vertadr1
        g1.vertnum = vertnum1
        g1.graphadr = graphadr1
        g1.vert = mesh_vert
        g1.graph = mesh_graph
        g1.mesh_polyadr = -1
        g2 = Geom()
        g2.pos = pos2[tid] - origin
        g2.rot = rot2[tid]
        g2.size = size2[tid]
        g2.margin = 0.0
        g2.index = -1
        g2.vertadr = vertadr2
        g2.vertnum = vertnum2
        g2.graphadr = graphadr2
        g2.vert = mesh_vert
        g2.graph = mesh_graph
        g2.mesh_polyadr = -1
        if wp.static(use_ccd):
            dist, ncon, x1, x2, idx = ccd(
                tolerance, cutoff, gjk_iterations, epa_iterations, g1, g2, wp.static(type1),
                wp.static(type2),
                g1.pos, g2.pos, epa_vert[tid], epa_vert_index[tid], epa_face[tid], epa_pr[tid],
                epa_norm2[tid], epa_horizon[tid], False, tid, overflow)
            dist_out[tid] = dist
            flag_out[tid] = ncon
        else:
            needs_epa, dist, ncon, x1, x2, res, h1, h2 = gjk_phase(
                tolerance, cutoff, gjk_iterations, g1, g2, wp.static(type1), wp.static(type2),
                g1.pos, g2.pos)
            dist_out[tid] = dist
            flag_out[tid] = wp.where(needs_epa, 1, 0)

    _WARP_KERNELS[cache_key] = kernel
    return kernel


def _geom_size_rows(shape: str, params: dict, n: int) -> np.ndarray:
    """(n,3) MuJoCo ``geom_size`` rows."""
    s = np.zeros((n, 3))
    if shape == "sphere":
        s[:, 0] = params["radius"]
    elif shape in ("capsule", "cylinder"):
        s[:, 0], s[:, 1] = params["radius"], params["half_length"]
    elif shape == "box":
        s[:] = params["half_extents"]
    elif shape == "ellipsoid":
        s[:] = params["radii"]
    return s


def run_mujoco_warp(case: C.Case, query: str = "signed_distance", repeats: int = 3) -> dict:
    """MuJoCo Warp GJK/EPA over the N pairs in one kernel launch on Warp device ``"cpu"``.

    ``signed_distance`` calls ``collision_gjk.ccd`` (GJK, then EPA when overlapping);
    ``distance`` calls ``gjk_phase`` only (overlap -> 0); ``intersect`` calls ``gjk_phase`` with
    cutoff 0 (early exit on a separating direction).  Meshes use MuJoCo's compiled hull
    vertices and vertex-adjacency graph (hill climbing for >= 10 vertices), as MJWarp does.
    """
    _check_query(query)
    if _has_halfspace(case):
        return _skipped(case, "mujoco_warp: skipped, its GJK/EPA has no half-space (plane)")
    import warp as wp

    _quiet_warp()
    import mujoco
    from mujoco_warp._src.types import MJ_MAX_EPAFACES, MJ_MAX_EPAHORIZON

    wp.init()
    dev = "cpu"
    n = case.n
    m = build_mj_model(case, n_pairs=1)
    pa, ra, pb, rb = geom_world_poses(case, m)
    tol, iters = float(m.opt.ccd_tolerance), int(m.opt.ccd_iterations)
    mesh_vert = m.mesh_vert if m.nmesh else np.zeros((1, 3))
    mesh_graph = m.mesh_graph if m.nmesh else np.zeros(1, dtype=np.int32)

    def mesh_args(gid: int) -> tuple[int, int, int]:
        mid = int(m.geom_dataid[gid])
        if mid < 0:
            return 0, 0, -1
        return int(m.mesh_vertadr[mid]), int(m.mesh_vertnum[mid]), int(m.mesh_graphadr[mid])

    def arr(x, dtype):
        return wp.array(np.ascontiguousarray(x, dtype=np.float32), dtype=dtype, device=dev)

    args = [
        arr(pa, wp.vec3), arr(ra, wp.mat33), arr(_geom_size_rows(case.shape_a, case.params_a, n),
                                                 wp.vec3), *mesh_args(0),
        arr(pb, wp.vec3), arr(rb, wp.mat33), arr(_geom_size_rows(case.shape_b, case.params_b, n),
                                                 wp.vec3), *mesh_args(1),
        arr(mesh_vert, wp.vec3), wp.array(np.asarray(mesh_graph, np.int32), dtype=int, device=dev),
        tol, 0.0 if query == "intersect" else 1.0e30, iters, iters,
        wp.empty((n, 10 + 2 * iters), dtype=wp.vec3, device=dev),
        wp.empty((n, 10 + 2 * iters), dtype=int, device=dev),
        wp.empty((n, 6 + MJ_MAX_EPAFACES * iters), dtype=int, device=dev),
        wp.empty((n, 6 + MJ_MAX_EPAFACES * iters), dtype=wp.vec3, device=dev),
        wp.empty((n, 6 + MJ_MAX_EPAFACES * iters), dtype=float, device=dev),
        wp.empty((n, MJ_MAX_EPAHORIZON), dtype=int, device=dev),
        wp.zeros(16, dtype=int, device=dev),
    ]
    dist_out = wp.zeros(n, dtype=float, device=dev)
    flag_out = wp.zeros(n, dtype=int, device=dev)
    kernel = _warp_kernel("ccd" if query == "signed_distance" else "gjk", int(m.geom_type[0]),
                          int(m.geom_type[1]))

    def launch(dim: int = n):
        wp.launch(kernel, dim=dim, inputs=args, outputs=[dist_out, flag_out], device=dev)
        wp.synchronize_device(dev)

    launch()  # compile + warm up
    overhead, _ = _best_time(lambda: launch(1), 20)
    cpu: list = []
    seconds, _ = _best_time(launch, repeats, cpu)
    raw = dist_out.numpy().astype(np.float64)
    flag = flag_out.numpy()
    if query == "signed_distance":
        dist = np.where(flag > 0, raw, np.nan)  # ncontact 0: EPA failed
        inter = dist < 0.0
    else:
        inter = (flag > 0) | (raw < 0.0)
        if query == "distance":
            dist = np.where(inter, 0.0, raw)
        else:
            dist = np.full(n, np.nan)
    notes = (f"mujoco_warp {importlib.metadata.version('mujoco-warp')} / warp {wp.__version__}"
             f" (mujoco {mujoco.__version__} compiler), "
             f"{'ccd (GJK+EPA)' if query == 'signed_distance' else 'gjk_phase'} for all kinds, "
             f"custom kernel 1 thread/pair, device cpu (serial), float32, tol={tol:g}, "
             f"iterations={iters}; timed = launch+synchronize; overhead = dim-1 launch")
    return _result(dist, inter, seconds, overhead, notes, cpu[0])


# --------------------------------------------------------------------------------------------
# MJX (JAX backend)

_MJX_TYPES = {"sphere": 2, "capsule": 3, "ellipsoid": 4, "cylinder": 5, "box": 6, "mesh": 7}


def mjx_supports(case: C.Case) -> bool:
    """Whether MJX has a collider for the case's geom type pair (half-spaces are not wired)."""
    from mujoco.mjx._src import collision_driver

    if _has_halfspace(case):
        return False

    t1, t2 = _MJX_TYPES[_MJ_TYPE[case.shape_a]], _MJX_TYPES[_MJ_TYPE[case.shape_b]]
    return (min(t1, t2), max(t1, t2)) in collision_driver._COLLISION_FUNC


def _mjx_collider(case: C.Case):
    """Jitted MJX collider over all pairs of ``case``: returns (fn(xpos, xmat, size) -> (N,), args).

    The model holds one pair (geom 0 = A, geom 1 = B), and the collider runs once on the arrays of all
    pairs (geoms 2i and 2i + 1: their poses in the data, their sizes in the model's ``geom_size``, the
    only per-geom field of the model that MJX's colliders read), so the model does not grow with N:
    MuJoCo's compiler took minutes for a model of 2·10^5 geoms.
    """
    import jax
    from mujoco import mjx
    from mujoco.mjx._src import collision_driver
    from mujoco.mjx._src.collision_types import FunctionKey

    n = case.n
    m = build_mj_model(case, n_pairs=1)
    pa, ra, pb, rb = geom_world_poses(case, m)
    sizes = []
    for i, (shape, params) in enumerate(((case.shape_a, case.params_a), (case.shape_b, case.params_b))):
        own = np.broadcast_to(m.geom_size[i], (n, 3))  # a mesh's size is MuJoCo's own
        sizes.append(own if shape == "polytope" else _geom_size_rows(shape, params, n))
    t1, t2 = int(m.geom_type[0]), int(m.geom_type[1])
    ga, gb = np.arange(0, 2 * n, 2), np.arange(1, 2 * n, 2)
    if t1 > t2:
        ga, gb, t1, t2 = gb, ga, t2, t1
    fn = collision_driver._COLLISION_FUNC[(t1, t2)]
    key = FunctionKey(types=(t1, t2), data_ids=(int(m.geom_dataid[ga[0]]),
                                                int(m.geom_dataid[gb[0]])), condim=3)
    mx = mjx.put_model(m)
    if m.nmesh:  # put_model only pre-processes meshes of colliding pairs; all ours are static
        from mujoco.mjx._src import mesh as mjx_mesh

        hulls = tuple(mjx_mesh.convex(m, i) for i in range(m.nmesh))
        mx = mx.replace(_impl=mx._impl.replace(mesh_convex=hulls))
    dx = mjx.make_data(mx)
    geom = jax.numpy.asarray(np.stack([ga, gb], axis=1))

    def interleave(a, b):  # (N, ...) of A and of B -> (2N, ...), A_i at 2i and B_i at 2i + 1
        return np.stack([a, b], axis=1).reshape((2 * n,) + a.shape[1:]).astype(np.float32)

    @jax.jit
    def collide(xpos, xmat, size):
        dist, _, _ = fn(mx.replace(geom_size=size), dx.replace(geom_xpos=xpos, geom_xmat=xmat), key, geom)
        return dist.reshape(n, -1).min(axis=1)  # min over the collider's ncon contacts

    name = f"{mujoco_type_name(t1)}-{mujoco_type_name(t2)} (ncon={fn.ncon})"
    args = (interleave(pa, pb), interleave(ra, rb), interleave(*sizes))
    return collide, tuple(jax.device_put(a) for a in args), name


def mujoco_type_name(t: int) -> str:
    """MuJoCo geom type id -> lower-case name."""
    return {v: k for k, v in _MJX_TYPES.items()}.get(t, str(t))


def run_mjx(case: C.Case, query: str = "signed_distance", repeats: int = 3,
            time_budget_s: float = 20.0) -> dict:
    """MJX colliders (``collision_driver._COLLISION_FUNC``), jitted, batched over the pairs.

    The collider returns up to ``ncon`` contacts per pair; the signed distance is their min.
    These are contact routines: only negative values are distances (penetration).  Separated
    pairs get NaN for every query's ``distance``; ``distance`` is 0 where MJX reports contact.

    MJX's mesh collider (SAT over all edge pairs) is very slow for large meshes, so when a probe
    on 16 pairs predicts more than ``time_budget_s`` for ``repeats + 1`` runs over all N pairs,
    only the first ``n_timed`` pairs are run (the rest are NaN) and ``seconds`` is extrapolated
    linearly to N; the result then carries ``n_timed`` < N and says so in ``notes``.
    """
    import jax
    import mujoco

    _check_query(query)
    n = case.n
    if not mjx_supports(case):
        return _skipped(case, f"mjx: no collider for {case.kind}")
    n_timed = n
    if n > 64:
        probe = C.subset(case, slice(0, 16))
        f, args, _ = _mjx_collider(probe)
        f(*args).block_until_ready()
        t, _ = _best_time(lambda: f(*args).block_until_ready(), 1)
        per_pair = t / 16
        n_timed = int(min(n, max(16, time_budget_s / (per_pair * (repeats + 1)))))
    sub = case if n_timed == n else C.subset(case, slice(0, n_timed))
    f, args, name = _mjx_collider(sub)
    f(*args).block_until_ready()  # compile + warm up
    cpu: list = []
    seconds, raw = _best_time(lambda: f(*args).block_until_ready(), repeats, cpu)
    seconds *= n / n_timed
    cpu_seconds = cpu[0] * n / n_timed
    raw = np.concatenate([np.asarray(raw, dtype=np.float64), np.full(n - n_timed, np.nan)])

    trivial = jax.jit(lambda x: x + 1.0)
    z = jax.device_put(np.zeros(n, np.float32))
    trivial(z).block_until_ready()
    overhead, _ = _best_time(lambda: trivial(z).block_until_ready(), 50)
    inter = raw < 0.0
    if query == "signed_distance":
        dist = np.where(inter, raw, np.nan)
    elif query == "distance":
        dist = np.where(inter, 0.0, np.nan)
    else:
        dist = np.full(n, np.nan)
    notes = (f"mujoco-mjx {importlib.metadata.version('mujoco-mjx')} (jax {jax.__version__}, "
             f"mujoco {mujoco.__version__}) collider {name}, contact routine, jit, float32, "
             f"XLA CPU default threads; separated pairs have no distance (NaN); overhead = "
             f"jitted x+1 dispatch")
    if n_timed < n:
        notes += f"; ONLY {n_timed}/{n} pairs run, seconds extrapolated linearly to N"
    out = _result(dist, inter, seconds, overhead, notes, cpu_seconds)
    out["n_timed"] = n_timed
    return out


# --------------------------------------------------------------------------------------------
# Coal


def _coal_shapes(coal, shape: str, params: dict, n: int) -> list:
    """One coal shape per pair (a shared hull for polytopes)."""
    if shape == "polytope":
        pts = coal.StdVec_Vec3s()
        for v in np.asarray(params["vertices"], dtype=np.float64):
            pts.append(v)
        hull = coal.ConvexBase.convexHull(pts, True, "")
        return [hull] * n
    out = []
    for i in range(n):
        if shape == "sphere":
            out.append(coal.Sphere(float(params["radius"][i])))
        elif shape == "capsule":
            out.append(coal.Capsule(float(params["radius"][i]),
                                    2.0 * float(params["half_length"][i])))
        elif shape == "cylinder":
            out.append(coal.Cylinder(float(params["radius"][i]),
                                     2.0 * float(params["half_length"][i])))
        elif shape == "box":
            out.append(coal.Box(*(2.0 * params["half_extents"][i])))
        elif shape == "ellipsoid":
            out.append(coal.Ellipsoid(*params["radii"][i]))
        else:
            raise ValueError(shape)
    return out


def _coal_overhead(coal, n: int = 20000) -> tuple[float, float]:
    """(seconds per coal.distance call on far-apart spheres, seconds per empty loop step)."""
    s = coal.Sphere(0.1)
    t0, t1 = coal.Transform3s(), coal.Transform3s(np.eye(3), np.array([5.0, 0.0, 0.0]))
    req, res = coal.DistanceRequest(), coal.DistanceResult()
    f = coal.distance
    tic = time.perf_counter()
    for _ in range(n):
        res.clear()
        f(s, t0, s, t1, req, res)
    call = (time.perf_counter() - tic) / n
    tic = time.perf_counter()
    for _ in range(n):
        pass
    return call, (time.perf_counter() - tic) / n


def run_coal(case: C.Case, query: str = "signed_distance", repeats: int = 3) -> dict:
    """Coal per pair in a Python loop (one thread).

    ``signed_distance``: ``coal.distance`` with ``enable_signed_distance=True`` (EPA on
    overlap); ``distance``: the same with ``enable_signed_distance=False``, clamped at 0;
    ``intersect``: ``coal.collide`` with a default (boolean, no contact) request.
    """
    _check_query(query)
    if _has_halfspace(case):
        return _skipped(case, "coal: skipped, half-spaces not wired")
    import coal

    n = case.n
    sa = _coal_shapes(coal, case.shape_a, case.params_a, n)
    sb = _coal_shapes(coal, case.shape_b, case.params_b, n)
    ra, rb = case.rotmat_a(), case.rotmat_b()
    ta = [coal.Transform3s(ra[i], case.pos_a[i]) for i in range(n)]
    tb = [coal.Transform3s(rb[i], case.pos_b[i]) for i in range(n)]
    out = np.empty(n)
    if query == "intersect":
        creq, cres = coal.CollisionRequest(), coal.CollisionResult()
        f = coal.collide

        def loop():
            for i in range(n):
                cres.clear()
                out[i] = f(sa[i], ta[i], sb[i], tb[i], creq, cres)
            return out.copy()
    else:
        req, res = coal.DistanceRequest(), coal.DistanceResult()
        req.enable_signed_distance = query == "signed_distance"
        f = coal.distance

        def loop():
            for i in range(n):
                res.clear()  # DistanceResult keeps the running minimum otherwise
                out[i] = f(sa[i], ta[i], sb[i], tb[i], req, res)
            return out.copy()

    cpu: list = []
    seconds, raw = _best_time(loop, repeats, cpu)
    if query == "intersect":
        dist, inter = np.full(n, np.nan), raw > 0
    else:
        dist, inter = _finish(raw, query)
    call, empty = _coal_overhead(coal)
    notes = (f"coal {importlib.metadata.version('coal')} "
             f"{'collide' if query == 'intersect' else 'distance'} per pair, Python loop, "
             f"1 thread, float64, default GJK/EPA tolerances; overhead = far-sphere "
             f"coal.distance call ({call * 1e6:.2f} us; empty loop step {empty * 1e9:.0f} ns)")
    return _result(dist, inter, seconds, call, notes, cpu[0])


# --------------------------------------------------------------------------------------------
# registry

PEERS = {
    "mujoco": (run_mujoco, "mujoco"),
    "mujoco_native": (run_mujoco_native, "mujoco"),
    "mujoco_warp": (run_mujoco_warp, "mujoco_warp"),
    "mjx": (run_mjx, "mujoco.mjx"),
    "coal": (run_coal, "coal"),
}
_DISTS = {"mujoco": "mujoco", "mujoco_warp": "mujoco-warp", "mjx": "mujoco-mjx", "coal": "coal"}


def available_peers() -> list[str]:
    """Names of the peers whose Python packages import in this interpreter."""
    ok = []
    for name, (_, module) in PEERS.items():
        try:
            if name == "mujoco_warp":
                _quiet_warp()
            importlib.import_module(module)
            if name == "mujoco_native" and shutil.which("gcc") is None:
                continue
            ok.append(name)
        except Exception:  # noqa: BLE001 - any import failure means "not available"
            pass
    return ok


def peer_versions() -> dict[str, str]:
    """Installed distribution versions of the peers (and jax/warp), 'missing' if absent."""
    out = {}
    for dist in ("mujoco", "mujoco-warp", "warp-lang", "mujoco-mjx", "coal", "jax", "jaxlib",
                 "numpy"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "missing"
    return out


def run_peer(name: str, case: C.Case, query: str = "signed_distance", repeats: int = 3) -> dict:
    """Dispatch to ``run_<name>``."""
    return PEERS[name][0](case, query, repeats)


# --------------------------------------------------------------------------------------------
# self-check


def native_matches_loop(native: dict, loop: dict) -> bool:
    """Whether ``mujoco_native`` and ``mujoco`` (Python loop) gave the same values, bit for bit.

    Both call ``mj_geomDistance`` on the same model and poses, so any difference is a bug in
    how the native runner passes poses or pairs.
    """
    return (np.array_equal(native["distance"], loop["distance"], equal_nan=True)
            and np.array_equal(native["intersect"], loop["intersect"]))


def selfcheck(n: int = 2000, seed: int = 0, peers: list[str] | None = None,
              query: str = "signed_distance") -> bool:
    """Print throughput and max abs disagreement of every peer on every case of the suite.

    Returns False when ``mujoco_native`` and ``mujoco`` disagree on any case (both must run).
    """
    peers = peers or available_peers()
    mismatches = []
    print("versions:", " ".join(f"{k}={v}" for k, v in peer_versions().items()))
    print(f"N={n} pairs per case, query={query}; 'dev' = max |d_peer - d_ref| over pairs where "
          "both are finite; ref = float64 closed form (cf) if available else per-pair median of "
          "the peers (med); 'miss' = pairs with NaN; 'flag' = intersect flags != truth; "
          "'ovh us' = per-call overhead in microseconds")
    hdr = (f"{'case':<26}{'peer':<12}{'pairs/s':>12}{'ovh us':>9}{'ref':>5}{'dev':>10}"
           f"{'miss':>6}{'flag':>6}")
    print(hdr)
    print("-" * len(hdr))
    for kind, nv in C.all_case_specs():
        for pen in (False, True):
            case = C.make_case(kind, n, pen, seed, nv)
            results = {}
            for p in peers:
                try:
                    results[p] = run_peer(p, case, query)
                except Exception as e:  # noqa: BLE001 - report and go on
                    results[p] = _result(np.full(n, np.nan), np.zeros(n, bool), np.nan, None,
                                         f"ERROR {type(e).__name__}: {e}")
            if "mujoco" in results and "mujoco_native" in results:
                # the native loop must reproduce the Python loop exactly, also over tiled passes
                tiled = run_mujoco_native(C.subset(case, slice(0, min(n, 64))), query, 1, tile=3)
                if not (native_matches_loop(results["mujoco_native"], results["mujoco"])
                        and np.array_equal(tiled["distance"],
                                           results["mujoco"]["distance"][:min(n, 64)],
                                           equal_nan=True)):
                    mismatches.append(case.label)
            ref = C.reference_signed_distance(case)
            src = "cf"
            if np.all(np.isnan(ref)):
                # the native runner repeats the Python loop's values: count MuJoCo once
                stack = np.stack([r["distance"] for p, r in results.items()
                                  if p != "mujoco_native" or len(results) == 1])
                with np.errstate(all="ignore"):
                    ref = np.nanmedian(stack, axis=0) if np.isfinite(stack).any() else ref
                src = "med"
            for p, r in results.items():
                k = r.get("n_timed", n)  # pairs the peer actually ran
                d = r["distance"][:k]
                ok = np.isfinite(d) & np.isfinite(ref[:k])
                dev = f"{np.max(np.abs(d[ok] - ref[:k][ok])):.2e}" if ok.any() else "n/a"
                rate = n / r["seconds"] if np.isfinite(r["seconds"]) else np.nan
                ovh = r["per_call_overhead_s"]
                ovh_s = f"{ovh * 1e6:.2f}" if ovh is not None else "-"
                flag = int(np.sum(r["intersect"][:k] != pen)) if np.isfinite(rate) else -1
                print(f"{case.label:<26}{p:<12}{rate:>12.0f}{ovh_s:>9}{src:>5}{dev:>10}"
                      f"{int(np.sum(~np.isfinite(d))):>6}{flag:>6}"
                      + (f"  (ran {k} pairs)" if k < n else ""))
                if not np.isfinite(r["seconds"]):
                    print(f"    {p}: {r['notes'][:200]}")
            sys.stdout.flush()
    print("\nnotes per peer (last case):")
    for p, r in results.items():
        print(f"  {p}: {r['notes']}")
    if "mujoco" in peers and "mujoco_native" in peers:
        print("mujoco_native vs mujoco (Python loop), same values bit for bit: "
              + (f"NO on {', '.join(mismatches)}" if mismatches else "yes, every case"))
    return not mismatches


def main(argv=None) -> None:
    """CLI: ``--selfcheck`` runs ``selfcheck``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--selfcheck", action="store_true")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--peers", default=None, help="comma-separated subset of peers")
    ap.add_argument("--query", default="signed_distance", choices=QUERIES)
    a = ap.parse_args(argv)
    if a.selfcheck:
        if not selfcheck(a.n, a.seed, a.peers.split(",") if a.peers else None, a.query):
            sys.exit(1)
    else:
        print("peers available:", available_peers())
        print(peer_versions())


if __name__ == "__main__":
    main()
