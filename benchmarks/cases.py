"""Neutral benchmark cases for convex collision queries (numpy; references from jaxgjk.reference).

A *case* is a batch of ``N`` random pairs ``(A, B)`` of one *kind*.  Every peer (and jaxgjk)
is fed exactly the same arrays, so results can be compared pair by pair.

Kinds (``A-B``):  ``"box-box"``, ``"capsule-box"``, ``"sphere-box"``,
``"ellipsoid-ellipsoid"``, ``"cylinder-box"``, ``"polytope-polytope"`` (with ``n_vertices`` in
``POLYTOPE_VERTEX_COUNTS`` = 8/32/128/512), ``"sphere-sphere"``, ``"sphere-capsule"``,
``"capsule-capsule"``, ``"box-halfspace"``, ``"sphere-cylinder"``, ``"sphere-ellipsoid"``,
``"capsule-cylinder"`` and ``"capsule-ellipsoid"``.

Shape parameters (all lengths in the same arbitrary unit, float64, local frame of the shape):

===========  ====================  =========================================================
shape        key                   array / meaning
===========  ====================  =========================================================
sphere       ``radius``            (N,)   radius
capsule      ``radius``            (N,)   radius
capsule      ``half_length``       (N,)   the core segment runs from (0,0,-h) to (0,0,+h)
box          ``half_extents``      (N,3)  half side lengths along local x, y, z
cylinder     ``radius``            (N,)   radius of the disk (axis = local z)
cylinder     ``half_length``       (N,)   the cylinder spans z in [-h, +h]
ellipsoid    ``radii``             (N,3)  semi-axes along local x, y, z
polytope     ``vertices``          (P,3)  convex-hull vertices, SHARED by all N pairs of the
                                          case (every point is a hull vertex, origin inside)
halfspace    (none)                       the half-space z <= 0 of its local frame (MuJoCo's
                                          ``plane`` geom, jaxgjk's ``HalfSpace``)
===========  ====================  =========================================================

Poses (world frame, float64): ``pos_a``/``pos_b`` (N,3) positions of the shape origin;
``quat_a``/``quat_b`` (N,4) unit quaternions in (w, x, y, z) order.  A world point is
``x_world = R(quat) @ x_local + pos``.

Result convention shared by all runners: *signed distance*, positive = separation distance,
negative = minus the penetration depth (minimum translation distance).

Generation (``make_case``):
  * sizes are ~0.5-1.5 (full extents), rotations are uniform random (Haar);
  * separated pairs: B is placed along a random unit direction ``u`` at centre offset
    ``h_A(u) + h_B(-u) + gap`` where ``h`` are the support functions about the shape origins and
    ``gap ~ U(0.05, 0.5) * mean bounding radius``.  The pair is then separated along ``u`` by
    exactly ``gap``, so its distance is >= gap > 0 (usually close to it);
  * penetrating pairs (default, contact-like, shallow): with ``x_A`` the support point of A in
    direction ``u`` and ``x_B`` that of B in direction ``-u``, B is translated so that ``x_B``
    lands on ``x_A + t (pos_A - x_A)``, ``t ~ U(0.05, 0.5)``; that point lies inside A (segment
    between a boundary point and the interior origin), so the pair overlaps by construction and
    the depth is a fraction of the size.  ``deep=True`` instead puts the centres close: offset
    ``s * (r_in,A + r_in,B)`` with ``s ~ U(0.2, 0.9)`` and ``r_in`` the radius of a ball about
    the origin contained in the shape;
  * half-space pairs (B a half-space with outward normal ``n`` = its local +z in the world): the
    signed distance is the height of A's lowest point, ``n . (pos_A - pos_B) - h_A(-n)``, and
    the plane is placed to make it ``gap`` (as above, scaled by A's bounding radius) when
    separated, ``-t h_A(-n)`` with ``t ~ U(0.05, 0.5)`` when penetrating, and
    ``-h_A(-n) - s r_in,A`` (A's origin below the plane) when deep.

``reference_signed_distance(case)`` gives float64 ground truth where a closed form or an exact
hull is easy and NaN elsewhere (see its docstring for the kinds); ``arbiter_signed_distance(case,
idx)`` gives it for any bounded pair, slowly.  Both, and the support functions the cases are drawn
with, are ``jaxgjk.reference``'s (the project's one float64 oracle, independent of GJK/EPA), fed the
pairs as jaxgjk shapes and poses by ``jaxgjk_pairs``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

KINDS = (  # new kinds go at the end: the RNG seed of a case includes the kind's index
    "box-box",
    "capsule-box",
    "sphere-box",
    "ellipsoid-ellipsoid",
    "cylinder-box",
    "polytope-polytope",
    "sphere-sphere",
    "sphere-capsule",
    "capsule-capsule",
    "box-halfspace",
    "sphere-cylinder",
    "sphere-ellipsoid",
    "capsule-cylinder",
    "capsule-ellipsoid",
)
POLYTOPE_VERTEX_COUNTS = (8, 32, 128, 512)
SHAPE_PARAMS = {
    "sphere": ("radius",),
    "capsule": ("radius", "half_length"),
    "box": ("half_extents",),
    "cylinder": ("radius", "half_length"),
    "ellipsoid": ("radii",),
    "polytope": ("vertices",),
    "halfspace": (),
}
UNBATCHED_SHAPES = ("polytope", "halfspace")  # parameters shared by all N pairs of a case
POLYTOPE_RADIUS = 0.5  # circumradius of the generated polytopes


@dataclasses.dataclass(frozen=True)
class Case:
    """A batch of N pairs of one kind; see the module docstring for the array layout."""

    kind: str
    penetrating: bool
    seed: int
    params_a: dict
    params_b: dict
    pos_a: np.ndarray  # (N, 3)
    quat_a: np.ndarray  # (N, 4) (w, x, y, z)
    pos_b: np.ndarray  # (N, 3)
    quat_b: np.ndarray  # (N, 4) (w, x, y, z)
    n_vertices: int | None = None
    deep: bool = False  # penetrating pairs drawn with centres close (see make_case)

    @property
    def shape_a(self) -> str:
        """Shape name of A (e.g. ``"capsule"`` for ``"capsule-box"``)."""
        return self.kind.split("-")[0]

    @property
    def shape_b(self) -> str:
        """Shape name of B."""
        return self.kind.split("-")[1]

    @property
    def n(self) -> int:
        """Number of pairs N."""
        return int(self.pos_a.shape[0])

    @property
    def label(self) -> str:
        """Short human-readable name, e.g. ``polytope-polytope/128 pen``."""
        k = self.kind if self.n_vertices is None else f"{self.kind}/{self.n_vertices}"
        return f"{k} {('deep' if self.deep else 'pen') if self.penetrating else 'sep'}"

    def rotmat_a(self) -> np.ndarray:
        """(N,3,3) rotation matrices of A (local -> world)."""
        return quat_to_mat(self.quat_a)

    def rotmat_b(self) -> np.ndarray:
        """(N,3,3) rotation matrices of B (local -> world)."""
        return quat_to_mat(self.quat_b)


def all_case_specs() -> list[tuple[str, int | None]]:
    """All (kind, n_vertices) combinations of the suite (polytopes once per vertex count)."""
    specs: list[tuple[str, int | None]] = []
    for kind in KINDS:
        if kind == "polytope-polytope":
            specs += [(kind, p) for p in POLYTOPE_VERTEX_COUNTS]
        else:
            specs.append((kind, None))
    return specs


# --------------------------------------------------------------------------------------------
# rotations


def quat_to_mat(q: np.ndarray) -> np.ndarray:
    """Unit quaternions (..., 4) in (w, x, y, z) order -> rotation matrices (..., 3, 3)."""
    q = np.asarray(q, dtype=np.float64)
    w, x, y, z = np.moveaxis(q, -1, 0)
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        -2,
    )


def random_quaternions(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, 4) uniformly distributed unit quaternions (w, x, y, z) with w >= 0."""
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return q * np.where(q[:, :1] < 0, -1.0, 1.0)


def random_unit_vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, 3) uniformly distributed unit vectors."""
    v = rng.normal(size=(n, 3))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


# --------------------------------------------------------------------------------------------
# shapes


def random_polytope(rng: np.random.Generator, n_vertices: int,
                    radius: float = POLYTOPE_RADIUS) -> np.ndarray:
    """(P,3) points on a sphere of ``radius``; all P are hull vertices, inradius >= 0.3*radius.

    Points in general position on a sphere are all extreme points of their convex hull, so the
    hull has exactly ``n_vertices`` vertices.  Draws are repeated until the hull contains a ball
    of radius ``0.3*radius`` about the origin (matters for small P only).
    """
    for _ in range(1000):
        v = random_unit_vectors(rng, n_vertices) * radius
        if polytope_inradius(v) >= 0.3 * radius:
            return v
    raise RuntimeError("could not draw a polytope with a reasonable inradius")


def polytope_inradius(vertices: np.ndarray) -> float:
    """Distance from the origin to the nearest hull facet plane (negative if outside)."""
    from scipy.spatial import ConvexHull

    hull = ConvexHull(vertices)
    if len(hull.vertices) != len(vertices):
        return -np.inf
    return float(-hull.equations[:, 3].max())


def _draw_params(rng: np.random.Generator, shape: str, n: int,
                 n_vertices: int | None) -> dict:
    u = rng.uniform
    if shape == "sphere":
        return {"radius": u(0.25, 0.75, n)}
    if shape == "capsule":
        return {"radius": u(0.15, 0.4, n), "half_length": u(0.2, 0.6, n)}
    if shape == "box":
        return {"half_extents": u(0.25, 0.75, (n, 3))}
    if shape == "cylinder":
        return {"radius": u(0.25, 0.6, n), "half_length": u(0.25, 0.75, n)}
    if shape == "ellipsoid":
        return {"radii": u(0.25, 0.75, (n, 3))}
    if shape == "polytope":
        if n_vertices is None:
            raise ValueError("polytope cases need n_vertices")
        return {"vertices": random_polytope(rng, n_vertices)}
    if shape == "halfspace":
        return {}
    raise ValueError(f"unknown shape {shape!r}")


def jaxgjk_shape(shape: str, params: dict, convert=np.asarray):
    """The jaxgjk shape named ``shape`` with the parameters ``params`` (module docstring).

    Args:
      shape: shape name.
      params: shape parameters, each passed through ``convert`` (e.g. to a jax array of a dtype);
        a leading axis N stays a leading axis (a stack of N shapes of one kind), shared polytope
        vertices stay shared.
    """
    import jaxgjk as jg

    a = {k: convert(v) for k, v in params.items()}
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
    raise ValueError(f"unknown shape {shape!r}")


def jaxgjk_pairs(case: Case, convert=np.asarray) -> tuple:
    """(shape_a, pose_a, shape_b, pose_b) of the pairs of ``case`` as jaxgjk shapes and poses.

    Every array goes through ``convert`` (default: NumPy float64, what ``jaxgjk.reference`` reads);
    the pairs' axis N leads (``subset(case, i)`` with an integer ``i`` gives pair i alone).
    Polytope meshes (and half-spaces, which have no parameters) stay unbatched, shared by the pairs.
    """
    import jaxgjk as jg

    return (jaxgjk_shape(case.shape_a, case.params_a, convert),
            jg.Pose(convert(case.pos_a), convert(case.quat_a)),
            jaxgjk_shape(case.shape_b, case.params_b, convert),
            jg.Pose(convert(case.pos_b), convert(case.quat_b)))


def support_local(shape: str, params: dict, d: np.ndarray) -> np.ndarray:
    """Support function h(d) = max_{x in shape} <x, d> in the shape's local frame (``jaxgjk.reference``).

    Args:
      shape: shape name.
      params: shape parameters (see module docstring), a leading axis N.
      d: (N,3) directions in the local frame, one per pair (need not be unit).

    Returns:
      (N,) support values.
    """
    from jaxgjk import reference

    return reference.support_function(jaxgjk_shape(shape, params), None, d)


def support_point_local(shape: str, params: dict, d: np.ndarray) -> np.ndarray:
    """A maximiser x of <x, d> over the shape, in the local frame (``jaxgjk.reference``).

    Args: as ``support_local`` (nonzero directions).  Returns (N,3) support points.
    """
    from jaxgjk import reference

    return reference.support_point(jaxgjk_shape(shape, params), None, d)


def inner_radius(shape: str, params: dict, n: int) -> np.ndarray:
    """(n,) radius of a ball about the shape origin that lies inside the shape."""
    if shape in ("sphere", "capsule"):
        return np.asarray(params["radius"], dtype=np.float64)
    if shape == "box":
        return params["half_extents"].min(axis=1)
    if shape == "cylinder":
        return np.minimum(params["radius"], params["half_length"])
    if shape == "ellipsoid":
        return params["radii"].min(axis=1)
    if shape == "polytope":
        return np.full(n, polytope_inradius(params["vertices"]))
    raise ValueError(f"unknown shape {shape!r}")


def bounding_radius(shape: str, params: dict, n: int) -> np.ndarray:
    """(n,) radius of a ball about the shape origin that contains the shape."""
    if shape == "sphere":
        return np.asarray(params["radius"], dtype=np.float64)
    if shape == "capsule":
        return params["radius"] + params["half_length"]
    if shape == "box":
        return np.linalg.norm(params["half_extents"], axis=1)
    if shape == "cylinder":
        return np.hypot(params["radius"], params["half_length"])
    if shape == "ellipsoid":
        return params["radii"].max(axis=1)
    if shape == "polytope":
        return np.full(n, np.linalg.norm(params["vertices"], axis=1).max())
    raise ValueError(f"unknown shape {shape!r}")


def make_case(kind: str, n: int, penetrating: bool, seed: int,
              n_vertices: int | None = None, deep: bool = False) -> Case:
    """Draw N random pairs of ``kind`` (see module docstring for the layout and the recipe).

    Args:
      kind: one of ``KINDS``.
      n: number of pairs N.
      penetrating: False -> every pair separated (distance >= gap > 0); True -> every pair
        overlapping.
      seed: RNG seed; the same arguments always give the same arrays.
      n_vertices: polytope vertex count P (polytope-polytope only).
      deep: penetrating pairs with centres close (deep overlap) instead of shallow contacts.

    Returns:
      the ``Case``.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; expected one of {KINDS}")
    if kind != "polytope-polytope":
        n_vertices = None
    mode = 0 if not penetrating else (2 if deep else 1)
    rng = np.random.default_rng([seed, KINDS.index(kind), n_vertices or 0, mode])
    sa, sb = kind.split("-")
    pa = _draw_params(rng, sa, n, n_vertices)
    pb = _draw_params(rng, sb, n, n_vertices)
    quat_a = random_quaternions(rng, n)
    quat_b = random_quaternions(rng, n)
    ra, rb = quat_to_mat(quat_a), quat_to_mat(quat_b)
    pos_a = rng.uniform(-1.0, 1.0, (n, 3))
    if sb == "halfspace":
        normal = rb[:, :, 2]
        height = _height_above_halfspace(rng, sa, pa, ra, normal, penetrating, deep)
        pos_b = pos_a - height[:, None] * normal
        return Case(kind=kind, penetrating=penetrating, seed=seed, params_a=pa, params_b=pb,
                    pos_a=pos_a, quat_a=quat_a, pos_b=pos_b, quat_b=quat_b, n_vertices=n_vertices,
                    deep=bool(penetrating and deep))
    u = random_unit_vectors(rng, n)
    ua, ub = np.einsum("nji,nj->ni", ra, u), np.einsum("nji,nj->ni", rb, -u)  # local dirs
    if not penetrating:
        scale = 0.5 * (bounding_radius(sa, pa, n) + bounding_radius(sb, pb, n))
        gap = rng.uniform(0.05, 0.5, n) * scale
        pos_b = pos_a + (support_local(sa, pa, ua) + support_local(sb, pb, ub) + gap)[:, None] * u
    elif deep:
        s = rng.uniform(0.2, 0.9, n)
        offset = s * (inner_radius(sa, pa, n) + inner_radius(sb, pb, n))
        pos_b = pos_a + offset[:, None] * u
    else:
        x_a = np.einsum("nij,nj->ni", ra, support_point_local(sa, pa, ua))  # relative to pos_a
        x_b = np.einsum("nij,nj->ni", rb, support_point_local(sb, pb, ub))  # relative to pos_b
        t = rng.uniform(0.05, 0.5, n)
        pos_b = pos_a + (1.0 - t)[:, None] * x_a - x_b
    return Case(kind=kind, penetrating=penetrating, seed=seed, params_a=pa, params_b=pb,
                pos_a=pos_a, quat_a=quat_a, pos_b=pos_b, quat_b=quat_b, n_vertices=n_vertices,
                deep=bool(penetrating and deep))


def _height_above_halfspace(rng: np.random.Generator, shape: str, params: dict, rot: np.ndarray,
                            normal: np.ndarray, penetrating: bool, deep: bool) -> np.ndarray:
    """(N,) height ``n . (pos_A - pos_B)`` of A's origin above the plane for the drawn distance.

    Args:
      rng: the case's generator.
      shape, params: shape A.
      rot: (N,3,3) rotations of A (local -> world).
      normal: (N,3) the half-space's outward unit normal ``n`` in the world frame.
      penetrating, deep: as in ``make_case``.
    """
    n = len(normal)
    lowest = support_local(shape, params, np.einsum("nji,nj->ni", rot, -normal))  # h_A(-n)
    if not penetrating:
        signed = rng.uniform(0.05, 0.5, n) * bounding_radius(shape, params, n)
    elif deep:
        signed = -lowest - rng.uniform(0.2, 0.9, n) * inner_radius(shape, params, n)
    else:
        signed = -rng.uniform(0.05, 0.5, n) * lowest
    return signed + lowest


def subset(case: Case, idx) -> Case:
    """The sub-batch ``case[idx]`` (polytope vertices stay shared); an integer ``idx`` gives that
    pair alone, without the leading axis."""

    def take(p: dict) -> dict:
        return {k: (v if k == "vertices" else v[idx]) for k, v in p.items()}

    return dataclasses.replace(case, params_a=take(case.params_a), params_b=take(case.params_b),
                               pos_a=case.pos_a[idx], quat_a=case.quat_a[idx],
                               pos_b=case.pos_b[idx], quat_b=case.quat_b[idx])


# --------------------------------------------------------------------------------------------
# float64 references


def reference_signed_distance(case: Case) -> np.ndarray:
    """(N,) float64 exact signed distances where easy, NaN where not available (``jaxgjk.reference``).

    sphere-sphere, sphere-capsule, capsule-capsule (distance between the cores minus the radii),
    sphere-box and shape-halfspace (height of A's lowest point): closed forms, vectorised over the
    pairs, overlapping pairs included.  box-box: the hull of the Minkowski difference of the corners
    (Qhull, exact), pair by pair.  capsule-box: the same on the cores, separated pairs only.
    Everything else: all NaN.
    """
    from jaxgjk import reference

    shape_a, pose_a, shape_b, pose_b = jaxgjk_pairs(case)
    if case.shape_b == "halfspace":
        return reference.shape_halfspace(shape_a, pose_a, pose_b)["distance"]
    if case.kind == "sphere-sphere":
        return reference.sphere_sphere(case.pos_a, shape_a.radius, case.pos_b, shape_b.radius)["distance"]
    if case.kind == "sphere-capsule":
        core_b = reference.capsule_endpoints(shape_b, pose_b)
        return reference.sphere_capsule(case.pos_a, shape_a.radius, *core_b, shape_b.radius)["distance"]
    if case.kind == "capsule-capsule":
        core_a = reference.capsule_endpoints(shape_a, pose_a)
        core_b = reference.capsule_endpoints(shape_b, pose_b)
        return reference.capsule_capsule(*core_a, shape_a.radius, *core_b, shape_b.radius)["distance"]
    if case.kind == "sphere-box":
        return reference.sphere_box(case.pos_a, shape_a.radius, shape_b.half_extents, pose_b)["distance"]
    if case.kind == "box-box" or (case.kind == "capsule-box" and not case.penetrating):
        exact = np.array([reference.signed_distance_polytopes(*jaxgjk_pairs(subset(case, i)))["distance"]
                          for i in range(case.n)])
        return exact if case.kind == "box-box" else np.where(exact > 0, exact, np.nan)
    return np.full(case.n, np.nan)


# --------------------------------------------------------------------------------------------
# arbiter: a float64 reference for any pair, independent of GJK/EPA (slow; for a few pairs)


def arbiter_signed_distance(case: Case, idx, n_dirs: int = 20000, n_starts: int = 6) -> np.ndarray:
    """float64 signed distances of the pairs ``idx`` by ``jaxgjk.reference``, independent of GJK/EPA.

    With D = B - A (Minkowski difference, world frame) and h_D(n) = h_B(n) + h_A(-n) its support
    function, the signed distance is ``-min_{|n|=1} h_D(n)`` for separated and overlapping pairs
    alike (duality).  polytope-polytope: exact, from the convex hull of the P^2 vertex
    differences (``signed_distance_polytopes``, Qhull).  Other kinds: ``signed_distance_smooth``,
    ``n_dirs`` Fibonacci directions, then restarted Nelder-Mead (in tangent charts, down to
    1e-13 rad) from the ``n_starts`` best ones (one when separated: the problem is convex then).
    Costs ~0.1-1 s per pair.
    """
    from jaxgjk import reference

    if "halfspace" in (case.shape_a, case.shape_b):
        raise ValueError("no arbiter for half-spaces (unbounded); reference_signed_distance has "
                         "the closed form")
    out = []
    for i in np.atleast_1d(np.asarray(idx)):
        pair = jaxgjk_pairs(subset(case, int(i)))
        if case.kind == "polytope-polytope":
            out.append(reference.signed_distance_polytopes(*pair)["distance"])
        else:
            out.append(reference.signed_distance_smooth(*pair, samples=n_dirs, starts=n_starts)["distance"])
    return np.array(out)
