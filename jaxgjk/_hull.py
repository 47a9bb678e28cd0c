"""Convex hull preprocessing for polytopes (NumPy, float64, host side).

`convex_hull(points)` turns a point cloud into the description of its convex hull that the rest of
jaxgjk needs: extreme vertices, polygonal facets (coplanar triangles merged), an outward
triangulation, facet planes, unique edges, and a padded vertex adjacency table for the
hill-climbing support mapping.

The seed paper's appendix (004) finds facets by testing every vertex triple as a support plane and
then sorts each facet's vertices by angle, which is O(V^4). Here the hull is built in two phases.

1. **Exact triangulated hull (Quickhull).** Beneath-beyond insertion of the farthest outside
   point, with outside (conflict) lists. The only predicate is the orientation of a point against
   a triangle, ``sign(det[b - a, c - a, p - a])``, evaluated in float64 behind a forward error
   bound and, when the bound cannot decide, exactly in Python integers (a float64 is an integer
   times a power of two). The combinatorics are exact: every visible region is a disk, every
   horizon a simple cycle, and the result is a closed, consistently oriented triangulated sphere.
   Points exactly on the current hull count as inside.
2. **Facets within a scale-aware tolerance**, ``tol = rel_tol * bbox_diagonal`` (at least 16
   ulps of the largest coordinate, for clouds far from the origin). Triangles grow into facets,
   largest first, while every vertex stays within ``tol`` of the seed triangle's plane and the
   facet stays a topological disk. Vertices that are not strict corners of every facet
   they touch (facet-interior points, points within ``tol`` of the segment joining their two
   boundary neighbours, reflex corners) are removed and phase 1 reruns on the surviving vertices,
   until a fixpoint. There every facet is a convex polygon whose corners are hull vertices, and
   every vertex is a corner of each facet it touches.

Complexity: phase 1 is Quickhull, O(n log n) expected on the usual random inputs and O(n h) in the
worst case (n input points, h hull vertices); phase 2 is O(h) per pass. Inputs in general position
need one pass; heavily degenerate ones (many points on facets and edges) a few, each on the
surviving hull vertices only. Exact arithmetic runs only where the float filter cannot decide.

Guarantees, with ``tol`` as above:

* The vertices are input points, without duplicates.
* Every input point lies within a few ``tol`` of the hull (inside it when nothing was merged).
* Facet normals are those of each facet's largest triangle, a face of the exact hull; offsets are
  the maximum of ``n . v`` over all vertices. So every vertex is on or inside every facet plane,
  and a facet's own corners lie within ``tol`` below its plane.
* Hill climbing (move to the best neighbour while it improves) along
  `Hull.triangle_adjacency` (the exact hull's graph) ends at a maximiser of any linear function, up
  to float64 rounding. Along `Hull.adjacency` (merged facets' edges only) the same holds when no
  near-coplanar triangles were merged; otherwise a merged facet that is non-planar within ``tol``
  and has a short edge or a nearly straight corner can hold a spurious local maximum. Use
  ``triangle_adjacency`` for support mappings.

Degenerate inputs, decided with the same ``tol`` (see `Hull.dim`):

* ``dim == 3``: a solid polytope, V - E + F = 2.
* ``dim == 2`` (all points within ``tol`` of a plane): the 2-D hull polygon as a flat two-sided
  polytope: ``F == 2`` facets holding the same corner loop in opposite orders with opposite
  normals, ``E == V`` polygon edges, and two fans of triangles (zero volume). V - E + F = 2.
* ``dim == 1`` (all points within ``tol`` of a line): the two end points, ``edges == [[0, 1]]``,
  no facets and no triangles (``faces`` has shape (0, 0), ``triangles`` (0, 3)).
* ``dim == 0`` (all points equal): one vertex, no edges, facets or triangles; adjacency ``[[-1]]``.
* Empty input, a shape other than (N, 3), non-real or non-finite values: ``ValueError`` naming
  ``points``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Hull", "convex_hull"]

# Forward error bound of the float orientation determinant, relative to its permanent. The tight
# value is about 8 * 2**-53 ~ 9e-16 (Shewchuk's orient3d filter); 1e-14 leaves a wide margin. The
# absolute term sends (near-)underflowing determinants to the exact path.
_FILTER_REL = 1e-14
_FILTER_ABS = 1e-280
# Triangles with |u||v| >= _SLIVER_RATIO * |u x v| get exact normals (float error ~ eps * ratio).
_SLIVER_RATIO = 16.0
_DEFAULT_REL_TOL = 1e-9
_ULP_FLOOR = 16 * float(np.finfo(np.float64).eps)  # times max |coordinate|: a tol floor
_MIN_REL_TOL = 1e-13
_MAX_REL_TOL = 1e-2


@dataclass(frozen=True, eq=False)
class Hull:
    """Convex hull of a point set: vertices, facets, triangles, edges and adjacency.

    All arrays are read-only NumPy arrays; integer arrays are int64 and index into `vertices`.

    Attributes:
      vertices: (V, 3) float64. The extreme points, copied bit-for-bit from the input.
      indices: (V,) int64. Row of the input `points` each vertex came from (first occurrence).
      faces: (F, M) int64. Polygonal facets, -1 padded, M = largest facet size. Each row lists the
        facet's corners counter-clockwise seen from outside (right-handed about `face_normals`).
      face_sizes: (F,) int64. Number of corners of each facet.
      face_normals: (F, 3) float64. Outward unit normals.
      face_offsets: (F,) float64. Plane offsets: the facet plane is ``n . x == offset`` and the hull
        is ``n . x <= offset`` for every facet.
      triangles: (T, 3) int64. Triangulation of the facets, counter-clockwise seen from outside.
      triangle_faces: (T,) int64. Facet each triangle belongs to.
      edges: (E, 2) int64. Unique hull edges, ``i < j``, sorted lexicographically.
      adjacency: (V, K) int64. Neighbours of each vertex along hull `edges` in ascending order,
        padded with -1; K = max(1, largest vertex degree).
      triangle_adjacency: (V, L) int64. Neighbours along the edges of `triangles` (hull edges plus
        facet diagonals), same layout. This is the exact hull's graph: hill climbing on it is exact.
      dim: Affine dimension of the hull: 3 solid, 2 flat polygon, 1 segment, 0 point.
      tol: Absolute tolerance used, in input units (see `convex_hull`).
    """

    vertices: np.ndarray
    indices: np.ndarray
    faces: np.ndarray
    face_sizes: np.ndarray
    face_normals: np.ndarray
    face_offsets: np.ndarray
    triangles: np.ndarray
    triangle_faces: np.ndarray
    edges: np.ndarray
    adjacency: np.ndarray
    triangle_adjacency: np.ndarray
    dim: int
    tol: float

    @property
    def num_vertices(self) -> int:
        return int(self.vertices.shape[0])

    @property
    def num_faces(self) -> int:
        return int(self.faces.shape[0])

    @property
    def num_edges(self) -> int:
        return int(self.edges.shape[0])

    def face_indices(self) -> list[np.ndarray]:
        """Facets as a list of unpadded (k,) vertex-index arrays, counter-clockwise from outside."""
        return [row[:k].copy() for row, k in zip(self.faces, self.face_sizes, strict=True)]

    def face_polygons(self) -> list[np.ndarray]:
        """Facets as a list of (k, 3) corner-coordinate arrays, e.g. for Poly3DCollection."""
        return [self.vertices[idx] for idx in self.face_indices()]

    def edge_segments(self) -> np.ndarray:
        """Edges as an (E, 2, 3) array of end points, e.g. for Line3DCollection."""
        return self.vertices[self.edges].reshape(-1, 2, 3)

    def volume(self) -> float:
        """Enclosed volume (0 for dim < 3), from the outward triangulation."""
        if self.dim < 3:
            return 0.0
        rel = self.vertices - self.vertices.mean(axis=0)
        scale = float(np.abs(rel).max())  # work at unit scale: no overflow in the products
        a, b, d = (rel[self.triangles[:, i]] / scale for i in range(3))
        return float(np.einsum("ij,ij->", a, np.cross(b, d)) / 6.0) * scale * scale * scale


def convex_hull(points, *, rel_tol: float = _DEFAULT_REL_TOL) -> Hull:
    """Convex hull of a 3-D point set (see the module docstring for the algorithm).

    Args:
      points: (N, 3) array-like of finite real coordinates, N >= 1. Duplicates are allowed.
      rel_tol: Tolerance relative to the diagonal of the points' bounding box, in
        [1e-13, 1e-2]; the absolute ``tol = max(rel_tol * diagonal, 16 * eps * max|points|)``.
        Points within ``tol`` of a facet plane, of an edge or of another point are merged into it;
        it also decides the degenerate cases (plane, line). `Hull.tol` reports it.

    Returns:
      A `Hull`. `Hull.dim` tells which case applies (3 solid, 2 flat, 1 segment, 0 point).

    Raises:
      ValueError: `points` is empty, not (N, 3), not real, or not finite; or `rel_tol` is out of
        range.
    """
    pts = _validate_points(points)
    rel_tol = float(rel_tol)
    if not (_MIN_REL_TOL <= rel_tol <= _MAX_REL_TOL):
        raise ValueError(f"rel_tol must lie in [{_MIN_REL_TOL}, {_MAX_REL_TOL}], got {rel_tol}")

    # Exact duplicates out, keeping the first occurrence and the input order. (A stable lexsort
    # puts each group's first occurrence first; it is much faster than np.unique(axis=0).)
    order = np.lexsort(pts.T[::-1])
    ranked = pts[order]
    starts = np.ones(len(pts), dtype=bool)
    starts[1:] = np.any(ranked[1:] != ranked[:-1], axis=1)
    first = np.sort(order[starts])
    uniq = pts[first]

    # Power-of-two scaling is exact (short of underflow) and keeps every float product in range.
    max_abs = float(np.max(np.abs(uniq)))
    exponent = int(np.frexp(max_abs)[1]) if max_abs > 0 else 0
    scaled = np.ldexp(uniq, -exponent)
    lo, hi = scaled.min(axis=0), scaled.max(axis=0)
    diag = float(np.linalg.norm(hi - lo))
    # Floor: coordinates far from the origin are only known to a few ulps of their magnitude.
    tol = max(rel_tol * diag, _ULP_FLOOR * float(np.abs(scaled).max()))
    tol_input = float(np.ldexp(tol, exponent))
    if uniq.shape[0] == 1 or diag == 0.0:
        return _point_hull(uniq[:1], first[:1], tol_input)

    center = 0.5 * (lo + hi)
    centered = scaled - center
    orient = _Orientation(scaled)
    ids = np.arange(uniq.shape[0])
    while True:
        kind, data = _classify(centered, ids, tol, orient)
        if kind == 1:
            return _segment_hull(uniq, first, data, tol_input)
        if kind == 2:
            loop, normal = data
            return _flat_hull(uniq, first, centered, center, exponent, loop, normal, tol_input)
        tris, nbrs = _quickhull(orient, scaled, ids, data)
        facets = _merge_facets(centered, tris, nbrs, tol, orient)
        drop = _redundant_vertices(centered, tris, facets, tol)
        if not drop:
            return _solid_hull(uniq, first, centered, center, exponent, tris, facets, tol_input)
        hull_ids = np.unique(tris)
        ids = hull_ids[~np.isin(hull_ids, np.fromiter(drop, dtype=np.int64))]


# ----------------------------------------------------------------------------------------------
# Input validation
# ----------------------------------------------------------------------------------------------


def _validate_points(points) -> np.ndarray:
    try:
        arr = np.asarray(points)
    except Exception as exc:  # ragged nested lists and the like
        raise ValueError(f"points must be an (N, 3) array of real numbers: {exc}") from exc
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"points must hold real numbers, got dtype {arr.dtype}")
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(f"points must have shape (N, 3), got {arr.shape}")
    if arr.shape[0] == 0:
        raise ValueError("points is empty: the convex hull needs at least one point")
    arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError("points must be finite (found NaN or inf)")
    return arr


# ----------------------------------------------------------------------------------------------
# Phase 0: affine dimension and the initial simplex
# ----------------------------------------------------------------------------------------------


def _classify(x: np.ndarray, ids: np.ndarray, tol: float, orient: _Orientation):
    """Affine dimension of ``x[ids]`` within ``tol``, from the principal axes of the points.

    The singular vectors of the centred points are accurate to O(eps * extent) where it matters
    (an axis mixes with a much longer one only by O(eps)), unlike a normal from a thin triangle.

    Returns ``(1, (i, j))`` for a segment, ``(2, (loop, normal))`` for a flat polygon (loop
    counter-clockwise about ``normal``) and ``(3, (a, b, c, d))``: an exactly non-degenerate
    simplex.
    """
    q = x[ids]
    q = q - q.mean(axis=0)
    axes = np.linalg.svd(q, full_matrices=False)[2]
    e1, e2 = axes[0], axes[1]
    normal = np.cross(e1, e2)
    along = q @ e1
    if np.linalg.norm(q - along[:, None] * e1, axis=1).max() <= tol:
        return 1, (int(ids[np.argmin(along)]), int(ids[np.argmax(along)]))
    if np.abs(q @ normal).max() <= tol:
        loop = _polygon_2d(np.stack([along, q @ e2], axis=1), tol)
        if len(loop) < 3:  # within tol of the chord between the extremes after all
            return 1, (int(ids[np.argmin(along)]), int(ids[np.argmax(along)]))
        return 2, (ids[np.asarray(loop)], normal)
    ia, ib = int(np.argmin(along)), int(np.argmax(along))
    rel = q - q[ia]
    ic = int(np.argmax(np.linalg.norm(np.cross(rel, rel[ib]), axis=1)))
    vol = np.abs(rel @ np.cross(rel[ib], rel[ic]))
    a, b, c = (int(ids[k]) for k in (ia, ib, ic))
    for k in np.argsort(-vol, kind="stable").tolist():
        if orient.exact(a, b, c, int(ids[k])) != 0:
            return 3, (a, b, c, int(ids[k]))
    raise RuntimeError("convex_hull: no non-coplanar simplex in a 3-D set (internal error)")


def _polygon_2d(uv: np.ndarray, tol: float) -> list[int]:
    """Counter-clockwise 2-D hull (Andrew's monotone chain) dropping corners within ``tol``."""
    order = np.lexsort((uv[:, 1], uv[:, 0])).tolist()
    pts = uv.tolist()

    def turns_left(o, a, b) -> bool:  # o -> a -> b turns left: a is > tol right of line o -> b
        ox, oy = pts[o]
        ax, ay = pts[a]
        bx, by = pts[b]
        cross = (bx - ox) * (ay - oy) - (by - oy) * (ax - ox)
        return -cross > tol * math.hypot(bx - ox, by - oy)

    def chain(seq):
        out: list[int] = []
        for k in seq:
            while len(out) >= 2 and not turns_left(out[-2], out[-1], k):
                out.pop()
            out.append(k)
        return out

    lower, upper = chain(order), chain(order[::-1])
    loop = lower[:-1] + upper[:-1]
    # The chains' end points were never tested as middle corners; sweep until every corner is
    # farther than tol from the segment joining its neighbours.
    while len(loop) > 3:
        p = uv[loop]
        d = _segment_distance(p, np.roll(p, 1, axis=0), np.roll(p, -1, axis=0))
        k = int(np.argmin(d))
        if d[k] > tol:
            break
        loop.pop(k)
    return loop


def _segment_distance(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise distance from p to the segment [a, b] (any dimension)."""
    ab = b - a
    den = np.einsum("ij,ij->i", ab, ab)
    t = np.einsum("ij,ij->i", p - a, ab) / np.where(den > 0, den, 1.0)
    t = np.clip(t, 0.0, 1.0)
    return np.linalg.norm(p - (a + t[:, None] * ab), axis=1)


# ----------------------------------------------------------------------------------------------
# Phase 1: exact Quickhull
# ----------------------------------------------------------------------------------------------


class _Orientation:
    """Orientation predicate with a float filter and an exact integer fallback.

    For points given as float64 rows, ``orient(a, b, c, p) = det[b - a, c - a, p - a]`` is positive
    when p lies on the side the right-handed normal of triangle (a, b, c) points to.
    """

    def __init__(self, pts: np.ndarray):
        self._pts = pts
        self._rows: dict[int, list[float]] = {}
        mant, expo = np.frexp(pts)
        self._mant = np.ldexp(mant, 53).astype(np.int64)  # exact: |mantissa| < 2**53
        expo = expo.astype(np.int64) - 53
        nonzero = self._mant != 0
        emin = int(expo[nonzero].min()) if nonzero.any() else 0
        self._shift = np.where(nonzero, expo - emin, 0)
        self._ints: dict[int, tuple[int, int, int]] = {}

    def row(self, i: int) -> list[float]:
        """Point i as Python floats (converted on first use: most points never need it)."""
        r = self._rows.get(i)
        if r is None:
            r = self._rows[i] = self._pts[i].tolist()
        return r

    def _int_row(self, i: int) -> tuple[int, int, int]:
        r = self._ints.get(i)
        if r is None:
            m, s = self._mant[i].tolist(), self._shift[i].tolist()
            r = (m[0] << s[0], m[1] << s[1], m[2] << s[2])
            self._ints[i] = r
        return r

    def exact_normal(self, a: int, b: int, c: int) -> tuple[float, float, float]:
        """Direction of (b - a) x (c - a), exact up to the final rounding (any positive scale)."""
        ax, ay, az = self._int_row(a)
        bx, by, bz = self._int_row(b)
        cx, cy, cz = self._int_row(c)
        ux, uy, uz = bx - ax, by - ay, bz - az
        vx, vy, vz = cx - ax, cy - ay, cz - az
        n = (uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx)
        shift = max(0, max(abs(k).bit_length() for k in n) - 60)
        return tuple(float(k >> shift) if k >= 0 else -float(-k >> shift) for k in n)

    def exact(self, a: int, b: int, c: int, p: int) -> int:
        """Sign of the orientation determinant, computed exactly."""
        ax, ay, az = self._int_row(a)
        bx, by, bz = self._int_row(b)
        cx, cy, cz = self._int_row(c)
        px, py, pz = self._int_row(p)
        ux, uy, uz = bx - ax, by - ay, bz - az
        vx, vy, vz = cx - ax, cy - ay, cz - az
        wx, wy, wz = px - ax, py - ay, pz - az
        det = wx * (uy * vz - uz * vy) + wy * (uz * vx - ux * vz) + wz * (ux * vy - uy * vx)
        return (det > 0) - (det < 0)


class _Face:
    """A triangle of the Quickhull under construction (float plane data for the filter)."""

    __slots__ = ("a", "alive", "n", "nbr", "nn", "out", "out_d", "perm", "v")

    def __init__(self, v: tuple[int, int, int], row):
        self.v = v
        self.nbr = [-1, -1, -1]  # nbr[i] is across the edge v[i] -> v[i + 1]
        self.alive = True
        a, b, c = row(v[0]), row(v[1]), row(v[2])
        ux, uy, uz = b[0] - a[0], b[1] - a[1], b[2] - a[2]
        vx, vy, vz = c[0] - a[0], c[1] - a[1], c[2] - a[2]
        self.a = a
        self.n = (uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx)
        self.perm = (
            abs(uy * vz) + abs(uz * vy),
            abs(uz * vx) + abs(ux * vz),
            abs(ux * vy) + abs(uy * vx),
        )
        self.nn = math.sqrt(self.n[0] ** 2 + self.n[1] ** 2 + self.n[2] ** 2)
        self.out: np.ndarray | None = None
        self.out_d: np.ndarray | None = None


def _quickhull(orient: _Orientation, pts: np.ndarray, ids: np.ndarray, simplex) -> tuple:
    """Exact triangulated hull of ``pts[ids]``; returns (tris (T, 3), nbrs (T, 3)) global ids."""
    row = orient.row
    faces: list[_Face] = []
    pending: list[int] = []  # faces that may have outside points, processed last in first out

    def sign(f: _Face, p: int) -> int:
        ax, ay, az = f.a
        x, y, z = row(p)
        wx, wy, wz = x - ax, y - ay, z - az
        det = wx * f.n[0] + wy * f.n[1] + wz * f.n[2]
        bound = _FILTER_REL * (abs(wx) * f.perm[0] + abs(wy) * f.perm[1] + abs(wz) * f.perm[2])
        bound += _FILTER_ABS
        if det > bound:
            return 1
        if det < -bound:
            return -1
        return orient.exact(f.v[0], f.v[1], f.v[2], p)

    def assign(cand: np.ndarray, new: list[int]) -> None:
        """Give each candidate to the new face it is farthest outside of (exactly outside)."""
        if cand.size == 0:
            return
        fs = [faces[k] for k in new]
        a = np.array([f.a for f in fs])
        n = np.array([f.n for f in fs])
        perm = np.array([f.perm for f in fs])
        nn = np.array([f.nn for f in fs])
        w = pts[cand][None, :, :] - a[:, None, :]
        det = np.einsum("fmk,fk->fm", w, n)
        bound = _FILTER_REL * np.einsum("fmk,fk->fm", np.abs(w), perm) + _FILTER_ABS
        dist = det / np.where(nn > 0, nn, 1.0)[:, None]  # nn == 0: det == 0 too, decided exactly
        outside = det > bound
        owner = np.where(outside.any(axis=0), np.argmax(np.where(outside, dist, -np.inf), 0), -1)
        unsure = np.nonzero((owner < 0) & (np.abs(det) <= bound).any(axis=0))[0]
        for m in unsure.tolist():
            p = int(cand[m])
            for k in np.nonzero(np.abs(det[:, m]) <= bound[:, m])[0].tolist():
                f = fs[k]
                if orient.exact(f.v[0], f.v[1], f.v[2], p) > 0:
                    owner[m] = k
                    break
        for k, f in enumerate(fs):
            sel = owner == k
            if sel.any():
                f.out, f.out_d = cand[sel], dist[k, sel]
                pending.append(new[k])

    # Initial tetrahedron, oriented so that every face normal points away from the fourth vertex.
    a, b, c, d = simplex
    if orient.exact(a, b, c, d) > 0:
        b, c = c, b
    tet = [(a, b, c), (a, d, b), (b, d, c), (c, d, a)]
    edge_of: dict[tuple[int, int], tuple[int, int]] = {}
    for k, v in enumerate(tet):
        faces.append(_Face(v, row))
        for i in range(3):
            edge_of[(v[i], v[(i + 1) % 3])] = (k, i)
    for (p, q), (k, i) in edge_of.items():
        faces[k].nbr[i] = edge_of[(q, p)][0]
    rest = ids[~np.isin(ids, simplex)]
    assign(rest, [0, 1, 2, 3])

    while pending:
        k0 = pending.pop()
        f0 = faces[k0]
        if not f0.alive or f0.out is None or f0.out.size == 0:
            continue
        p = int(f0.out[int(np.argmax(f0.out_d))])

        # Visible region: faces that p sees strictly (exact), grown from f0; horizon edges between.
        visible = [f0]
        seen = {k0: True}
        horizon: dict[int, tuple[int, int, int]] = {}  # edge start -> (edge end, far face, index)
        stack = [f0]
        while stack:
            g = stack.pop()
            for i in range(3):
                kh = g.nbr[i]
                h = faces[kh]
                vis = seen.get(kh)
                if vis is None:
                    vis = seen[kh] = sign(h, p) > 0
                    if vis:
                        visible.append(h)
                        stack.append(h)
                if not vis:
                    s, e = g.v[i], g.v[(i + 1) % 3]
                    j = next(j for j in range(3) if h.v[j] == e and h.v[(j + 1) % 3] == s)
                    if s in horizon:
                        raise RuntimeError("convex_hull: pinched horizon (internal error)")
                    horizon[s] = (e, kh, j)

        # The horizon is a simple cycle (exact predicates); walk it in order.
        loop = []
        s = next(iter(horizon))
        for _ in range(len(horizon)):
            e, far, j = horizon[s]
            loop.append((s, e, far, j))
            s = e
        if s != loop[0][0] or len({edge[0] for edge in loop}) != len(loop):
            raise RuntimeError("convex_hull: horizon is not a simple cycle (internal error)")

        first_new = len(faces)
        m = len(loop)
        for k, (s, e, far, j) in enumerate(loop):
            f = _Face((s, e, p), row)
            f.nbr = [far, first_new + (k + 1) % m, first_new + (k - 1) % m]
            faces[far].nbr[j] = first_new + k
            faces.append(f)

        cand = []
        for g in visible:
            g.alive = False
            if g.out is not None:
                cand.append(g.out)
            g.out = g.out_d = None
        cand = np.concatenate(cand)
        assign(cand[cand != p], list(range(first_new, first_new + m)))

    alive = [k for k, f in enumerate(faces) if f.alive]
    remap = np.full(len(faces), -1, dtype=np.int64)
    remap[alive] = np.arange(len(alive))
    tris = np.array([faces[k].v for k in alive], dtype=np.int64)
    nbrs = remap[np.array([faces[k].nbr for k in alive], dtype=np.int64)]
    return tris, nbrs


# ----------------------------------------------------------------------------------------------
# Phase 2: facets within tolerance, redundant vertices
# ----------------------------------------------------------------------------------------------


@dataclass
class _Facet:
    triangles: list[int]
    loop: list[int]  # boundary, counter-clockwise seen from outside (global ids)
    interior: list[int]  # vertices of the facet not on its boundary
    normal: np.ndarray  # outward unit normal of the seed triangle: a supporting plane
    thin: bool  # a lone triangle thinner than tol (nearly collinear corners); never at the fixpoint


def _unit_normals(x: np.ndarray, tris: np.ndarray, orient: _Orientation):
    """Unit normals of triangles (float64-accurate in direction) and twice their areas.

    The float cross product errs by ~eps * |u| |v| in every component, a direction error of
    ~eps / sin(angle at the pivot): for slivers that tilts the plane by far more than tol over the
    hull's extent. Those (and only those) are redone exactly in integers.
    """
    u = x[tris[:, 1]] - x[tris[:, 0]]
    v = x[tris[:, 2]] - x[tris[:, 0]]
    cross = np.cross(u, v)
    area2 = np.linalg.norm(cross, axis=1)
    spread = np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1)
    for t in np.nonzero(area2 * _SLIVER_RATIO <= spread)[0].tolist():
        cross[t] = orient.exact_normal(*tris[t].tolist())
    unit = cross / np.linalg.norm(cross, axis=1)[:, None]  # hull triangles are never degenerate
    return unit, area2


def _merge_facets(
    x: np.ndarray, tris: np.ndarray, nbrs: np.ndarray, tol: float, orient: _Orientation
) -> list[_Facet]:
    """Group triangles into facets: disks whose vertices are within tol of the seed's plane."""
    unit, area2 = _unit_normals(x, tris, orient)
    # A triangle thinner than tol (height = 2 area / longest edge) joins a facet on its vertices'
    # distances alone. A thin seed stays alone: the vertex opposite its longest edge is then
    # within tol of that edge and the next pass removes it.
    longest = np.linalg.norm(x[tris] - x[np.roll(tris, 1, axis=1)], axis=2).max(axis=1)
    thin = (area2 <= tol * longest).tolist()
    tl, nl, ul, tx = tris.tolist(), nbrs.tolist(), unit.tolist(), x[tris].tolist()
    region = [-1] * len(tl)
    facets: list[_Facet] = []
    for s in np.argsort(-area2, kind="stable").tolist():
        if region[s] >= 0:
            continue
        r = len(facets)
        region[s] = r
        members = [s]
        n0 = ul[s]
        p0 = tx[s][0]
        d0 = n0[0] * p0[0] + n0[1] * p0[1] + n0[2] * p0[2]
        verts = set(tl[s])
        stack = [] if thin[s] else [t for t in nl[s] if region[t] < 0]
        while stack:
            t = stack.pop()
            if region[t] >= 0:
                continue
            u = ul[t]
            if not thin[t] and u[0] * n0[0] + u[1] * n0[1] + u[2] * n0[2] <= 0.0:
                continue
            tv = tl[t]
            if any(abs(n0[0] * q[0] + n0[1] * q[1] + n0[2] * q[2] - d0) > tol for q in tx[t]):
                continue
            shared = [i for i in range(3) if region[nl[t][i]] == r]
            # Gluing along one edge keeps a disk only if the opposite vertex is new (no pinch).
            if len(shared) == 1 and tv[(shared[0] + 2) % 3] in verts:
                continue
            region[t] = r
            members.append(t)
            verts.update(tv)
            stack.extend(k for k in nl[t] if region[k] < 0)
        facets.append(_Facet(members, [], [], unit[s], thin[s]))

    for r, fc in enumerate(facets):
        nxt = {}
        for t in fc.triangles:
            tv = tl[t]
            for i in range(3):
                if region[nl[t][i]] != r:
                    nxt[tv[i]] = tv[(i + 1) % 3]
        start = next(iter(nxt))
        loop = [start]
        while nxt[loop[-1]] != start:
            loop.append(nxt[loop[-1]])
        if len(loop) != len(nxt):
            raise RuntimeError("convex_hull: facet is not a disk (internal error)")
        fc.loop = loop
        fc.interior = sorted({v for t in fc.triangles for v in tl[t]} - set(loop))
    return facets


def _redundant_vertices(x: np.ndarray, tris: np.ndarray, facets: list[_Facet], tol: float) -> set:
    """Vertices to remove before the next pass (empty at the fixpoint).

    Facet-interior vertices lie within tol of their facet's plane and inside its boundary: they all
    go, and the boundary vertices that span them stay this pass. Boundary vertices within tol of
    the segment joining their two loop neighbours, or reflex (then inside the convex hull of the
    facet's other corners), go greedily from the flattest, never two hull neighbours in one pass,
    so that the vertices justifying a removal survive it.
    """
    drop = {v for fc in facets for v in fc.interior}
    blocked = set(drop)
    for fc in facets:
        if fc.interior:
            blocked.update(fc.loop)
    cur, prev, nxt, owner = [], [], [], []
    for k, fc in enumerate(facets):
        lp = fc.loop
        cur += lp
        prev += lp[-1:] + lp[:-1]
        nxt += lp[1:] + lp[:1]
        owner += [k] * len(lp)
    # A thin facet's corners are nearly collinear, their turn is noise: test them by distance only.
    normals = np.stack([np.zeros(3) if fc.thin else fc.normal for fc in facets])[owner]
    p, a, b = x[cur], x[prev], x[nxt]
    chord = b - a
    length = np.linalg.norm(chord, axis=1)
    height = np.einsum("ij,ij->i", np.cross(p - a, chord), normals)
    height /= np.where(length > 0, length, 1.0)
    seg = _segment_distance(p, a, b)
    bad = np.nonzero((seg <= tol) | (height < 0.0))[0]
    score: dict[int, float] = {}
    for i in bad.tolist():
        score[cur[i]] = min(float(min(seg[i], height[i])), score.get(cur[i], np.inf))
    if not score:
        return drop
    nbr: dict[int, set] = {}
    for a, b in np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]]).tolist():
        nbr.setdefault(a, set()).add(b)
    for v in sorted(score, key=lambda k: (score[k], k)):
        if v not in blocked:
            drop.add(v)
            blocked.add(v)
            blocked.update(nbr[v])
    return drop


# ----------------------------------------------------------------------------------------------
# Output assembly
# ----------------------------------------------------------------------------------------------


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def _unique_edges(edges) -> np.ndarray:
    """(E, 2) int64 with i < j, unique, sorted lexicographically."""
    edges = np.sort(np.asarray(edges, dtype=np.int64).reshape(-1, 2), axis=1)
    return np.unique(edges, axis=0) if len(edges) else edges


def _adjacency(num_vertices: int, edges: np.ndarray) -> np.ndarray:
    """Padded neighbour table of an undirected graph given by unique (i < j) edges."""
    neigh: list[list[int]] = [[] for _ in range(num_vertices)]
    for a, b in edges.tolist():
        neigh[a].append(b)
        neigh[b].append(a)
    width = max(1, max(len(n) for n in neigh))
    adj = np.full((num_vertices, width), -1, dtype=np.int64)
    for v, n in enumerate(neigh):
        adj[v, : len(n)] = sorted(n)
    return adj


def _make_hull(
    vertices, indices, loops, normals, offsets, triangles, triangle_faces, edges, dim, tol
) -> Hull:
    sizes = np.array([len(lp) for lp in loops], dtype=np.int64)
    faces = np.full((len(loops), int(sizes.max()) if len(loops) else 0), -1, dtype=np.int64)
    for k, lp in enumerate(loops):
        faces[k, : len(lp)] = lp
    edges = _unique_edges(edges)
    triangles = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    tri_edges = _unique_edges(triangles[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2))
    return Hull(
        vertices=_readonly(np.asarray(vertices, dtype=np.float64).reshape(-1, 3)),
        indices=_readonly(np.asarray(indices, dtype=np.int64)),
        faces=_readonly(faces),
        face_sizes=_readonly(sizes),
        face_normals=_readonly(np.asarray(normals, dtype=np.float64).reshape(-1, 3)),
        face_offsets=_readonly(np.asarray(offsets, dtype=np.float64).reshape(-1)),
        triangles=_readonly(triangles),
        triangle_faces=_readonly(np.asarray(triangle_faces, dtype=np.int64).reshape(-1)),
        edges=_readonly(edges),
        adjacency=_readonly(_adjacency(len(indices), edges)),
        triangle_adjacency=_readonly(
            _adjacency(len(indices), _unique_edges(np.concatenate([edges, tri_edges])))
        ),
        dim=dim,
        tol=float(tol),
    )


def _point_hull(uniq, first, tol) -> Hull:
    return _make_hull(uniq[:1], first[:1], [], [], [], [], [], [], 0, tol)


def _segment_hull(uniq, first, ends, tol) -> Hull:
    ends = sorted(ends)
    return _make_hull(uniq[ends], first[ends], [], [], [], [], [], [[0, 1]], 1, tol)


def _offsets(x, vert_ids, normals, center, exponent):
    """Supporting offsets in input units: max over the vertices of n . v (scaled, centred frame)."""
    off = (x[vert_ids] @ normals.T).max(axis=0) + normals @ center
    return np.ldexp(off, exponent)


def _flat_hull(uniq, first, x, center, exponent, loop, normal, tol) -> Hull:
    vert_ids = np.sort(loop)
    local = np.searchsorted(vert_ids, loop).tolist()
    k = len(local)
    back = local[::-1]
    normals = np.stack([normal, -normal])
    tris = [(local[0], local[i], local[i + 1]) for i in range(1, k - 1)]
    tris += [(back[0], back[i], back[i + 1]) for i in range(1, k - 1)]
    edges = [(local[i], local[(i + 1) % k]) for i in range(k)]
    return _make_hull(
        uniq[vert_ids],
        first[vert_ids],
        [local, back],
        normals,
        _offsets(x, vert_ids, normals, center, exponent),
        tris,
        [0] * (k - 2) + [1] * (k - 2),
        edges,
        2,
        tol,
    )


def _climb_offsets(xv: np.ndarray, normals: np.ndarray, start: np.ndarray, adj: np.ndarray):
    """max over vertices of n_f . v for every facet, by hill climbing along hull edges.

    On a convex polytope a vertex with no better neighbour maximises a linear function, so this
    equals the brute-force maximum at O(F * K) cost per step instead of O(F * V).
    """
    cur = start.copy()
    val = np.einsum("fd,fd->f", xv[cur], normals)
    active = np.arange(len(cur))
    while active.size:
        nb = adj[cur[active]]
        vals = np.einsum("fkd,fd->fk", xv[nb], normals[active])
        vals = np.where(nb >= 0, vals, -np.inf)
        j = np.argmax(vals, axis=1)
        best = vals[np.arange(len(active)), j]
        move = best > val[active]
        active, j, best = active[move], j[move], best[move]
        cur[active] = adj[cur[active], j]
        val[active] = best
    return val


def _solid_hull(uniq, first, x, center, exponent, tris, facets, tol) -> Hull:
    vert_ids = np.unique(tris)
    local = np.searchsorted(vert_ids, tris)
    tri_face = np.empty(len(tris), dtype=np.int64)
    for k, fc in enumerate(facets):
        tri_face[fc.triangles] = k
    order = np.argsort(tri_face, kind="stable")
    loops = [np.searchsorted(vert_ids, fc.loop).tolist() for fc in facets]
    edges = _unique_edges([(lp[i], lp[(i + 1) % len(lp)]) for lp in loops for i in range(len(lp))])
    normals = np.stack([fc.normal for fc in facets])
    xv = x[vert_ids]
    start = np.array([lp[int(np.argmax(xv[lp] @ n))] for lp, n in zip(loops, normals, strict=True)])
    # Climb on the triangulation's edges: the exact hull's graph, where a local maximum is global.
    tri_edges = _unique_edges(local[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2))
    offsets = _climb_offsets(xv, normals, start, _adjacency(len(vert_ids), tri_edges))
    return _make_hull(
        uniq[vert_ids],
        first[vert_ids],
        loops,
        normals,
        np.ldexp(offsets + normals @ center, exponent),
        local[order],
        tri_face[order],
        edges,
        3,
        tol,
    )
