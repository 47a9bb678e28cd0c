"""Independent float64 NumPy reference for signed distances between posed convex shapes.

The one oracle of the project: the tests, the benchmarks (`benchmarks/cases.py`) and the main job
(`python -m jaxgjk`) measure jaxgjk against it. Not imported by ``import jaxgjk``; import it as
``from jaxgjk import reference``.

Independence: nothing here calls jaxgjk's algorithms or a shape's methods (``shape.support`` and the
like) and nothing imports jaxgjk: shapes and poses are read through their fields only
(``np.asarray(shape.radius)``, dispatch on ``type(shape).__name__``), and every support function is
a closed form written out again below. Three independent routes to a signed distance:

* `signed_distance_hull` / `signed_distance_polytopes`: exact for polytopes (and for spheres,
  capsules and rounded polytopes through their cores). The Minkowski difference ``D = B - A`` of the
  vertex sets goes through Qhull (`scipy.spatial.ConvexHull`); the distance of the origin is the
  smallest exact point–triangle distance over the hull's triangles, and a penetration depth is the
  smallest plane offset over its facets. This route needs SciPy (``pip install 'jaxgjk[reference]'``).
* `signed_distance_smooth`: any shapes, from support functions only:
  ``sd = -min_{|u|=1} [h_B(u) + h_A(-u)]``, by dense sampling of the sphere and local refinement
  (Nelder–Mead, NumPy only).
* Closed forms (NumPy only): `sphere_sphere`, `point_box` / `sphere_box`, `segment_segment_distance`,
  `sphere_capsule`, `capsule_capsule`, `sphere_cylinder`; `sphere_ellipsoid` by bisection.

Conventions are jaxgjk's (see API.md): ``world = R(q) @ local + t`` with a (w, x, y, z)
quaternion; the signed distance is positive when separated and minus the penetration depth when
overlapping; the normal is a world unit vector from A towards B (the direction in which translating
B by the depth separates the shapes). Lengths are in the shapes' units, all arithmetic float64.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "capsule_capsule",
    "capsule_endpoints",
    "closest_point_triangles",
    "core_vertices",
    "fibonacci_sphere",
    "point_box",
    "point_ellipsoid",
    "point_segment_distance",
    "pose_arrays",
    "quaternion_to_matrix",
    "segment_segment_distance",
    "shape_halfspace",
    "signed_distance_hull",
    "signed_distance_polytopes",
    "signed_distance_smooth",
    "sphere_box",
    "sphere_capsule",
    "sphere_cylinder",
    "sphere_ellipsoid",
    "sphere_sphere",
    "support_function",
    "support_point",
]

_EPS = np.finfo(np.float64).eps
_IDENTITY_QUATERNION = np.array([1.0, 0.0, 0.0, 0.0])
_EX = np.array([1.0, 0.0, 0.0])


# -------------------------------------------------------------------------------------------------
# Poses
# -------------------------------------------------------------------------------------------------


def quaternion_to_matrix(quaternion) -> np.ndarray:
    """Rotation matrices (..., 3, 3) of quaternions (..., 4) (w, x, y, z), normalised first; a zero or
    non-finite quaternion gives the identity."""
    q = _f64(quaternion)
    norm = _norm(q)[..., None]
    valid = np.isfinite(norm) & (norm > 0)
    w, x, y, z = np.moveaxis(np.where(valid, q / np.where(valid, norm, 1.0), _IDENTITY_QUATERNION), -1, 0)
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], axis=-1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], axis=-1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], axis=-1),
        ],
        axis=-2,
    )


def pose_arrays(pose) -> tuple[np.ndarray, np.ndarray]:
    """(R (..., 3, 3), t (..., 3)) float64 of a jaxgjk `Pose` (fields read; rotation (..., 4),
    translation (..., 3): one pose, or one per row); ``None`` is the identity."""
    if pose is None:
        return np.eye(3), np.zeros(3)
    rotation = quaternion_to_matrix(pose.rotation)
    return rotation, _f64(pose.translation).reshape(rotation.shape[:-2] + (3,))


def _to_local(vectors: np.ndarray, rotation: np.ndarray) -> np.ndarray:
    """Rᵀ v: world vectors (..., 3) in the frame of the rotations (3, 3) or (..., 3, 3)."""
    return np.einsum("...j,...ji->...i", vectors, rotation)


def _to_world(vectors: np.ndarray, rotation: np.ndarray) -> np.ndarray:
    """R v: local vectors (..., 3) in the world frame, for rotations (3, 3) or (..., 3, 3)."""
    return np.einsum("...ij,...j->...i", rotation, vectors)


def _f64(value) -> np.ndarray:
    return np.asarray(value, np.float64)


def _float_or_array(value) -> float | np.ndarray:
    """A Python float for a single pair's value (0-d), else the array of the pairs' values."""
    value = np.asarray(value)
    return float(value) if value.ndim == 0 else value


def _norm(u: np.ndarray) -> np.ndarray:
    return np.sqrt(np.sum(u * u, axis=-1))


def _unit(u: np.ndarray) -> np.ndarray:
    """Rows of `u` (..., 3) divided by their norms; zero rows stay zero."""
    norm = _norm(u)[..., None]
    return np.divide(u, norm, out=np.zeros_like(u), where=norm > 0)


def _polytope_vertices(shape) -> np.ndarray:
    vertices = _f64(shape.vertices)
    if vertices.ndim > 2 and np.prod(vertices.shape[:-2]) > 1:
        raise ValueError(f"one Polytope at a time: its vertices have shape {vertices.shape}; the reference "
                         "shares a polytope's vertices across all directions, so a stack of polytopes "
                         "would be read as one")
    vertices = vertices.reshape(-1, 3)
    if shape.mask is not None:
        vertices = vertices[np.asarray(shape.mask, bool).reshape(-1)]
    if len(vertices) == 0:
        raise ValueError("Polytope with no vertex selected by its mask")
    return vertices


# -------------------------------------------------------------------------------------------------
# Support functions and support points (closed forms, local frame)
# -------------------------------------------------------------------------------------------------


def _local_support_function(shape, u: np.ndarray) -> np.ndarray:
    """h(u) = max_{x in shape} u·x for local directions u (K, 3) → (K,).

    A primitive's fields may also carry a leading axis K (one shape per direction); a polytope's
    vertices are shared by all directions.
    """
    kind = type(shape).__name__
    if kind == "Sphere":
        return _f64(shape.radius) * _norm(u)
    if kind == "Capsule":
        return _f64(shape.radius) * _norm(u) + _f64(shape.half_length) * np.abs(u[..., 2])
    if kind == "Box":
        return np.sum(np.abs(u) * _f64(shape.half_extents), axis=-1)
    if kind == "Cylinder":
        return _f64(shape.radius) * _norm(u[..., :2]) + _f64(shape.half_length) * np.abs(u[..., 2])
    if kind == "Cone":
        r, h = _f64(shape.radius), _f64(shape.half_height)
        return np.maximum(h * u[..., 2], r * _norm(u[..., :2]) - h * u[..., 2])
    if kind == "Ellipsoid":
        return _norm(u * _f64(shape.radii))
    if kind == "Polytope":
        return np.max(u @ _polytope_vertices(shape).T, axis=-1)
    if kind == "Affine":
        linear, offset = _f64(shape.linear).reshape(3, 3), _f64(shape.offset).reshape(3)
        # h(u) = h_inner(Lᵀu) + u·offset; rows: (Lᵀu)ᵀ = uᵀL.
        return _local_support_function(shape.shape, u @ linear) + u @ offset
    if kind == "MinkowskiSum":
        return _local_support_function(shape.a, u) + _local_support_function(shape.b, u)
    if kind == "Rounded":
        return _local_support_function(shape.shape, u) + _f64(shape.radius) * _norm(u)
    if kind == "ConvexHull":
        return np.max(np.stack([_local_support_function(s, u) for s in shape.shapes]), axis=0)
    raise TypeError(f"unsupported shape {kind}")


def _axis_sign(u: np.ndarray) -> np.ndarray:
    """+1 where the local z of the directions (..., 3) is ≥ 0, else −1: which cap (or end) supports."""
    return np.where(u[..., 2] >= 0, 1.0, -1.0)


def _local_support_point(shape, u: np.ndarray) -> np.ndarray:
    """A maximiser (K, 3) of u·x over the shape for local directions u (K, 3) (ties: any one); fields
    as in `_local_support_function`."""
    kind = type(shape).__name__
    if kind == "Sphere":
        return _f64(shape.radius)[..., None] * _unit(u)
    if kind == "Capsule":
        core = np.zeros_like(u)
        core[..., 2] = _axis_sign(u) * _f64(shape.half_length)
        return core + _f64(shape.radius)[..., None] * _unit(u)
    if kind == "Box":
        half = _f64(shape.half_extents)
        return np.where(u >= 0, half, -half)
    if kind == "Cylinder":
        across = _unit(u) * [1.0, 1.0, 0.0]  # the unit direction's part across the axis
        point = _f64(shape.radius)[..., None] * _unit(across)
        point[..., 2] = _axis_sign(u) * _f64(shape.half_length)
        return point
    if kind == "Cone":
        r, h = _f64(shape.radius), _f64(shape.half_height)
        rim = r[..., None] * _unit(u * [1.0, 1.0, 0.0])
        rim[..., 2] = -h
        apex = np.zeros_like(u)
        apex[..., 2] = h
        use_apex = (h * u[..., 2]) >= np.sum(u * rim, axis=-1)
        return np.where(use_apex[..., None], apex, rim)
    if kind == "Ellipsoid":
        radii, n = _f64(shape.radii), _unit(u)
        # x = E² n / |E n| for the unit direction n (E = diag(radii)); zero where E n = 0.
        scale = _norm(radii * n)[..., None]
        return np.divide(radii * radii * n, scale, out=np.zeros_like(n), where=scale > 0)
    if kind == "Polytope":
        vertices = _polytope_vertices(shape)
        return vertices[np.argmax(u @ vertices.T, axis=-1)]
    if kind == "Affine":
        linear, offset = _f64(shape.linear).reshape(3, 3), _f64(shape.offset).reshape(3)
        return _local_support_point(shape.shape, u @ linear) @ linear.T + offset
    if kind == "MinkowskiSum":
        return _local_support_point(shape.a, u) + _local_support_point(shape.b, u)
    if kind == "Rounded":
        return _local_support_point(shape.shape, u) + _f64(shape.radius)[..., None] * _unit(u)
    if kind == "ConvexHull":
        points = np.stack([_local_support_point(s, u) for s in shape.shapes])  # (S, K, 3)
        best = np.argmax(np.einsum("skd,kd->sk", points, u), axis=0)
        return points[best, np.arange(len(u))]
    raise TypeError(f"unsupported shape {kind}")


def _as_directions(u) -> tuple[np.ndarray, bool]:
    u = _f64(u)
    return u.reshape(-1, 3), u.ndim == 1


def support_function(shape, pose, u) -> np.ndarray:
    """Support function h(u) = max_{x in posed shape} u·x, float64.

    Args:
        shape: a jaxgjk shape (fields read, never its methods). A primitive's fields may carry a
            leading axis K: one shape per direction (a stack of shapes of one kind).
        pose: a jaxgjk `Pose` (local → world), one (rotation (4,), translation (3,)) or one per
            direction ((K, 4), (K, 3)); ``None`` for the identity.
        u: world directions (K, 3) or (3,), any length (h is positively homogeneous).

    Returns:
        (K,) (or () for a single direction): ``h_local(Rᵀu) + u·t``.
    """
    directions, single = _as_directions(u)
    if pose is None:
        values = _local_support_function(shape, directions)
    else:
        rotation, translation = pose_arrays(pose)
        values = _local_support_function(shape, _to_local(directions, rotation))
        values = values + np.sum(directions * translation, axis=-1)
    return values[0] if single else values


def support_point(shape, pose, u) -> np.ndarray:
    """A world point of the posed shape maximising u·x (closed forms; for ties any maximiser).

    Args: as `support_function`. Returns (K, 3) (or (3,) for a single direction).
    """
    directions, single = _as_directions(u)
    if pose is None:
        points = _local_support_point(shape, directions)
    else:
        rotation, translation = pose_arrays(pose)
        points = _to_world(_local_support_point(shape, _to_local(directions, rotation)), rotation)
        points = points + translation
    return points[0] if single else points


# -------------------------------------------------------------------------------------------------
# Exact closest points: point–segment, segment–segment, point–triangle (vectorised)
# -------------------------------------------------------------------------------------------------


def _closest_on_segments(p: np.ndarray, a: np.ndarray, b: np.ndarray):
    """Closest points to p (3,) on segments [a, b] (T, 3): (points (T, 3), parameter t (T,))."""
    ab = b - a
    length_sq = np.sum(ab * ab, axis=-1)
    t = np.divide(
        np.sum((p - a) * ab, axis=-1), length_sq, out=np.zeros_like(length_sq), where=length_sq > 0
    )
    t = np.clip(t, 0.0, 1.0)
    return a + t[..., None] * ab, t


def point_segment_distance(p, a, b) -> tuple[float | np.ndarray, np.ndarray]:
    """Distances from points p (..., 3) to the segments [a, b] (..., 3) (a == b allowed), and the
    closest points (..., 3); the distance is a float for one point and one segment."""
    p, a, b = _f64(p), _f64(a), _f64(b)
    point, _ = _closest_on_segments(p, a, b)
    return _float_or_array(_norm(point - p)), point


def closest_point_triangles(p, triangles) -> tuple[np.ndarray, np.ndarray]:
    """Exact closest points of triangles (T, 3, 3) to a point p (3,), degenerate triangles included.

    The closest point of a triangle lies in the interior (the plane projection, when its barycentric
    coordinates are all ≥ 0) or on one of the three edges. Instead of branching on Ericson's
    Voronoi regions, all four candidates are computed (each an actual point of the triangle) and the
    nearest kept, which stays exact for needle and zero-area triangles (where the region tests
    divide by ~0).

    Returns:
        points (T, 3) and barycentric weights (T, 3) with ``points = weights @ triangle``.
    """
    p = _f64(p)
    tri = _f64(triangles)
    a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
    num = len(tri)
    candidates = []
    weights = []
    # Edges ab, bc, ca.
    for i, j in ((0, 1), (1, 2), (2, 0)):
        point, t = _closest_on_segments(p, tri[:, i], tri[:, j])
        w = np.zeros((num, 3))
        w[:, i] = 1 - t
        w[:, j] = t
        candidates.append(point)
        weights.append(w)
    # Interior: projection onto the plane, barycentric coordinates from sub-triangle areas.
    normal = np.cross(b - a, c - a)
    area_sq = np.sum(normal * normal, axis=-1)
    ok = area_sq > 0
    area_safe = np.where(ok, area_sq, 1.0)
    q = p - normal * (np.sum((p - a) * normal, axis=-1) / area_safe)[:, None]
    wa = np.sum(np.cross(b - q, c - q) * normal, axis=-1) / area_safe
    wb = np.sum(np.cross(c - q, a - q) * normal, axis=-1) / area_safe
    wc = 1 - wa - wb
    inside = ok & (wa >= 0) & (wb >= 0) & (wc >= 0)
    w = np.stack([wa, wb, wc], axis=-1)
    interior = np.einsum("ti,tid->td", w, tri)
    dist_sq = [np.sum((cand - p) ** 2, axis=-1) for cand in candidates]
    dist_sq.append(np.where(inside, np.sum((interior - p) ** 2, axis=-1), np.inf))
    candidates.append(interior)
    weights.append(w)
    best = np.argmin(np.stack(dist_sq), axis=0)
    rows = np.arange(num)
    return np.stack(candidates)[best, rows], np.stack(weights)[best, rows]


def segment_segment_distance(p0, p1, q0, q1) -> tuple[float | np.ndarray, np.ndarray, np.ndarray]:
    """Distances between segments [p0, p1] and [q0, q1] (..., 3) each, with closest points.

    The squared distance |p(s) - q(t)|² is a convex quadratic on [0, 1]²: its minimum is the
    unconstrained stationary point when that lies inside, else on an edge of the square, i.e. an
    endpoint-to-segment distance. All candidates are evaluated as actual point pairs and the nearest
    taken, so parallel (singular 2×2 system) and zero-length segments need no special case.

    Returns:
        (distance: a float for one pair of segments, else (...); point on [p0, p1] (..., 3); point on
        [q0, q1] (..., 3)).
    """
    p0, p1, q0, q1 = (_f64(v) for v in (p0, p1, q0, q1))
    points_a, points_b = [], []
    for point, start, end, on_a in ((p0, q0, q1, True), (p1, q0, q1, True), (q0, p0, p1, False),
                                    (q1, p0, p1, False)):
        _, closest = point_segment_distance(point, start, end)
        points_a.append(point if on_a else closest)
        points_b.append(closest if on_a else point)
    d1, d2, r = p1 - p0, q1 - q0, p0 - q0
    a, e, b = np.sum(d1 * d1, axis=-1), np.sum(d2 * d2, axis=-1), np.sum(d1 * d2, axis=-1)
    c, f = np.sum(d1 * r, axis=-1), np.sum(d2 * r, axis=-1)
    det = a * e - b * b
    regular = (det > 1e-14 * a * e) & (det > 0)
    det_safe = np.where(regular, det, 1.0)
    s, t = (b * f - c * e) / det_safe, (a * f - b * c) / det_safe
    interior = regular & (s >= 0) & (s <= 1) & (t >= 0) & (t <= 1)
    points_a.append(p0 + s[..., None] * d1)
    points_b.append(q0 + t[..., None] * d2)
    points_a, points_b = np.stack(points_a), np.stack(points_b)  # (5, ..., 3): 4 end pairs, interior
    distances = _norm(points_a - points_b)
    distances[4] = np.where(interior, distances[4], np.inf)
    best = np.argmin(distances, axis=0)[None, ..., None]
    point_a = np.take_along_axis(points_a, best, axis=0)[0]
    point_b = np.take_along_axis(points_b, best, axis=0)[0]
    return _float_or_array(_norm(point_a - point_b)), point_a, point_b


# -------------------------------------------------------------------------------------------------
# Closed forms for spheres, boxes and capsules
# -------------------------------------------------------------------------------------------------


def _any_perpendicular(v: np.ndarray) -> np.ndarray:
    """Unit vectors (..., 3) perpendicular to v (..., 3): v × the basis axis least aligned with it;
    +x where v is zero (any unit vector is)."""
    w = np.cross(v, np.eye(3)[np.argmin(np.abs(v), axis=-1)])
    return np.where(np.any(w != 0, axis=-1)[..., None], _unit(w), _EX)


def _rounded_result(distance_core, point_a, point_b, radius_a, radius_b, fallback_normal):
    """Signed distance of two cores (points/segments, (..., 3)) swept by balls: core distance − r_a
    − r_b, with the normal along point_b − point_a (`fallback_normal` where they coincide)."""
    radius_a, radius_b = _f64(radius_a)[..., None], _f64(radius_b)[..., None]
    gap = point_b - point_a
    normal = np.where(_norm(gap)[..., None] > 0, _unit(gap), fallback_normal)
    return {
        "distance": _float_or_array(distance_core - radius_a[..., 0] - radius_b[..., 0]),
        "normal": normal,
        "point_a": point_a + radius_a * normal,
        "point_b": point_b - radius_b * normal,
    }


def sphere_sphere(center_a, radius_a, center_b, radius_b) -> dict:
    """Signed distance |c_b − c_a| − r_a − r_b, normal from A to B (+x for coincident centres).

    Args: centres (..., 3) (world) and radii (...): one pair, or one per row. Returns a dict of
    distance (a float for one pair, else (...)), normal, point_a and point_b ((..., 3), world).
    """
    ca, cb = _f64(center_a), _f64(center_b)
    return _rounded_result(_norm(cb - ca), ca, cb, radius_a, radius_b, _EX)


def point_box(point, half_extents) -> float | np.ndarray:
    """Exact signed distance of points (..., 3) (box frame) to the boxes |x_i| ≤ h_i (h (..., 3)).

    Outside: |p − clamp(p, −h, h)|. Inside (or on the boundary): −min_i (h_i − |p_i|). A float for
    one point.
    """
    p, h = _f64(point), _f64(half_extents)
    outside = _norm(p - np.clip(p, -h, h))
    return _float_or_array(np.where(outside > 0, outside, -np.min(h - np.abs(p), axis=-1)))


def sphere_box(center, radius, half_extents, pose_box) -> dict:
    """Signed distance and normal (A = sphere → B = box) of a world sphere and a posed box.

    distance = point_box(sphere centre in the box frame) − radius (exact: the sphere is its centre
    swept by a ball). The normal is the box-frame direction from the sphere centre to its nearest
    box point when outside; when inside, minus the outward axis of the nearest face (the sphere
    leaves through that face, i.e. B, the box, moves along minus its outward normal).

    Args: centre (..., 3) (world), radius (...), half_extents (..., 3), pose_box a `Pose` (one, or
    one per row). Returns a dict of distance (a float for one pair, else (...)) and normal (..., 3).
    """
    rotation, translation = pose_arrays(pose_box)
    p = _to_local(_f64(center) - translation, rotation)
    h = _f64(half_extents)
    outward = _unit(p - np.clip(p, -h, h))
    nearest_face = np.arange(3) == np.argmin(h - np.abs(p), axis=-1)[..., None]
    inside_normal = np.where(nearest_face, np.where(p >= 0, -1.0, 1.0), 0.0)
    normal_local = np.where(np.any(outward != 0, axis=-1)[..., None], -outward, inside_normal)
    return {
        "distance": _float_or_array(point_box(p, h) - _f64(radius)),
        "normal": _to_world(normal_local, rotation),
    }


def sphere_cylinder(center, radius, cylinder_radius, half_length, pose_cylinder) -> dict:
    """Signed distance and normal (A = sphere → B = cylinder of axis local z, caps at ±half_length).

    In the cylinder's frame, with ρ the distance from the axis: outside, the closest point takes ρ to
    at most the radius and z into [−h, h] (the two clamps are independent: the cylinder is a product
    of a disk and an interval); inside, the nearer of the side (depth R − ρ) and the caps (h − |z|),
    the cap on a tie. A point on the axis leaves through the side along local +x.
    """
    rotation, translation = pose_arrays(pose_cylinder)
    p = rotation.T @ (_f64(center).reshape(3) - translation)
    big_r, h = float(cylinder_radius), float(half_length)
    rho = np.hypot(p[0], p[1])
    radial = p[:2] / rho if rho > 0 else np.array([1.0, 0.0])
    clamped = np.append(radial * min(rho, big_r), np.clip(p[2], -h, h))
    if rho > big_r or abs(p[2]) > h:
        distance = np.linalg.norm(p - clamped)
        outward = (p - clamped) / distance
    elif big_r - rho < h - abs(p[2]):
        distance, outward = -(big_r - rho), np.append(radial, 0.0)
    else:
        distance, outward = -(h - abs(p[2])), np.array([0.0, 0.0, 1.0 if p[2] >= 0 else -1.0])
    return {"distance": float(distance - float(radius)), "normal": -(rotation @ outward)}


def point_ellipsoid(point, radii) -> tuple[float, np.ndarray]:
    """Signed distance of `point` (ellipsoid frame) to the ellipsoid Σ x_i²/e_i² ≤ 1 (radii e ≥ 0), and
    its closest surface point.

    Eberly (2011): the closest point is x_i = e_i² p_i / (e_i² + t) for the largest root t > −e_min² of
    F(t) = Σ (e_i p_i / (e_i² + t))² = 1, here by 200 bisection steps in s = t + e_min² on
    [0, |e∘p|] (F decreases there; e_i² + t = s + (e_i − e_min)(e_i + e_min) keeps s small without
    cancellation). Where F stays below 1 as s → 0 (p on the least radius's principal plane near the
    centre, or off a flat ellipsoid's plane), s = 0 and the least axis's coordinate comes from the
    constraint (on its + side). The sign: inside where Σ (p_i/e_i)² < 1.
    """
    p, e = _f64(point).reshape(3), _f64(radii).reshape(3)
    least = int(np.argmin(e))
    offsets = (e - e[least]) * (e + e[least])

    def closest(s):
        shifted = s + offsets
        return np.where(shifted > 0, e**2 * p / np.where(shifted > 0, shifted, 1), 0.0)

    def excess(s):
        return np.sum(np.divide(closest(s), e, out=np.zeros(3), where=e > 0) ** 2) - 1

    if e[least] * p[least] == 0 and excess(0.0) <= 0:
        x = closest(0.0)
        x[least] = 0.0
        inside_fraction = 1 - np.sum(np.divide(x, e, out=np.zeros(3), where=e > 0) ** 2)
        x[least] = e[least] * np.sqrt(max(inside_fraction, 0.0))
    else:
        low, high = 0.0, float(np.linalg.norm(e * p)) + float(np.max(offsets))
        for _ in range(200):
            middle = (low + high) / 2
            low, high = (middle, high) if excess(middle) > 0 else (low, middle)
        x = closest((low + high) / 2)
    gap = np.linalg.norm(p - x)
    inside = np.all(e > 0) and np.sum((p / np.where(e > 0, e, 1)) ** 2) < 1
    return float(-gap if inside else gap), x


def sphere_ellipsoid(center, radius, radii, pose_ellipsoid) -> dict:
    """Signed distance and normal (A = sphere → B = ellipsoid) from `point_ellipsoid`; the normal is
    minus the ellipsoid's outward normal at the closest point, ∝ x_i/e_i² (radii > 0)."""
    rotation, translation = pose_arrays(pose_ellipsoid)
    p = rotation.T @ (_f64(center).reshape(3) - translation)
    e = _f64(radii).reshape(3)
    distance, closest = point_ellipsoid(p, e)
    outward = np.divide(closest, e**2, out=np.zeros(3), where=e > 0)
    outward = outward / np.linalg.norm(outward) if np.any(outward != 0) else np.array([0.0, 0.0, 1.0])
    return {"distance": distance - float(radius), "normal": -(rotation @ outward)}


def capsule_endpoints(shape, pose) -> tuple[np.ndarray, np.ndarray]:
    """World end points (..., 3), (..., 3) of a Capsule's core segment (local z from −h to +h); the
    capsule and its pose may carry a leading axis of rows."""
    rotation, translation = pose_arrays(pose)
    axis = _f64(shape.half_length)[..., None] * rotation[..., :, 2]
    return translation - axis, translation + axis


def sphere_capsule(center, radius_sphere, p0, p1, radius_capsule) -> dict:
    """Sphere (A) against capsule (B) given by its core segment [p0, p1]: exact closed form.

    Args: centre, p0, p1 (..., 3) (world) and radii (...): one pair, or one per row. Returns a dict
    as `sphere_sphere`'s; where the centre lies on the core, the normal is perpendicular to it.
    """
    c = _f64(center)
    distance, closest = point_segment_distance(c, p0, p1)
    fallback = _any_perpendicular(_f64(p1) - _f64(p0))
    return _rounded_result(distance, c, closest, radius_sphere, radius_capsule, fallback)


def capsule_capsule(p0, p1, radius_a, q0, q1, radius_b) -> dict:
    """Capsule A (core [p0, p1]) against capsule B (core [q0, q1]): exact closed form.

    When the cores cross (distance 0) the normal is the common perpendicular of the two axes (sign
    arbitrary), or any perpendicular for parallel axes.

    Args: end points (..., 3) (world) and radii (...): one pair, or one per row. Returns a dict as
    `sphere_sphere`'s.
    """
    distance, point_a, point_b = segment_segment_distance(p0, p1, q0, q1)
    d1, d2 = _f64(p1) - _f64(p0), _f64(q1) - _f64(q0)
    cross = np.cross(d1, d2)
    crossing = (_norm(cross) > 1e-12 * _norm(d1) * _norm(d2))[..., None]
    fallback = np.where(crossing, _unit(cross), _any_perpendicular(d1))
    return _rounded_result(distance, point_a, point_b, radius_a, radius_b, fallback)


def shape_halfspace(shape, pose, pose_halfspace) -> dict:
    """Signed distance and normal (A = any shape → B = the half-space local z ≤ 0 of `pose_halfspace`).

    With n = R_B e_z the half-space's outward normal: sd = min_{x in A} n·(x − t_B) = −h_A(−n) − n·t_B
    (the height of A's lowest point above the plane, negative below it: exact, A's support function
    in closed form), and the normal from A towards B is −n.

    Args: shape and pose as `support_function`'s; pose_halfspace a `Pose`, one per row where the shape
    or its pose has rows. Returns a dict of distance (a float for one pair, else (K,)) and normal
    ((3,) or (K, 3), world).
    """
    rotation, translation = pose_arrays(pose_halfspace)
    normal = rotation[..., :, 2]
    distance = -support_function(shape, pose, -normal) - np.sum(normal * translation, axis=-1)
    return {"distance": _float_or_array(distance), "normal": -normal}


# -------------------------------------------------------------------------------------------------
# Exact polytope signed distance through the hull of the Minkowski difference
# -------------------------------------------------------------------------------------------------


def _qhull():
    """SciPy's (ConvexHull, QhullError), imported on first use: only the hull route needs SciPy."""
    try:
        from scipy.spatial import ConvexHull, QhullError
    except ImportError as error:
        raise ImportError(
            "jaxgjk.reference's hull route (signed_distance_hull, signed_distance_polytopes) needs "
            "SciPy's Qhull: pip install 'jaxgjk[reference]' (or scipy)"
        ) from error
    return ConvexHull, QhullError


def _hull_triangles(points: np.ndarray):
    """Triangles covering the boundary of conv(points) (or, when flat, the set itself).

    Returns (triangles (T, 3) int indices into points, equations (T, 4) or None when the hull is
    not solid, plane normal (3,) or None). Rank is read from the SVD of the centred points:

    * rank 3: Qhull with its default precision handling (``Qt`` triangulated output, merged facets);
      ``QJ`` (joggle) only if that fails.
    * rank 2 (all points in a plane, e.g. capsule–capsule cores): the 2-D hull in the plane's
      coordinates, fan-triangulated; its triangles cover the polygon itself, so the closest point to
      the origin over them is exact, and the set has no interior (depth 0).
    * rank 1 / 0: a segment (degenerate triangle) / a point.
    """
    centre = points.mean(axis=0)
    centred = points - centre
    scale = max(np.max(np.abs(points)), 1e-300)
    # Zero rows pad fewer than 3 points without changing the singular values or vectors.
    padded = np.concatenate([centred, np.zeros((max(0, 3 - len(points)), 3))])
    _, singular, vt = np.linalg.svd(padded, full_matrices=False)
    tol = 1e-12 * scale
    rank = int(np.sum(singular > tol * np.sqrt(len(points))))
    ConvexHull, QhullError = _qhull()  # noqa: N806 (SciPy's class names)
    if rank == 3:
        for options in (None, "QJ"):
            try:
                hull = ConvexHull(points, qhull_options=options)
                return hull.simplices, hull.equations, None
            except QhullError:
                continue
        rank = 2
    if rank == 2:
        plane = centred @ vt[:2].T
        try:
            hull2 = ConvexHull(plane)
            ring = hull2.vertices  # counter-clockwise
        except QhullError:
            rank = 1
        else:
            fan = np.stack([np.full(len(ring) - 2, ring[0]), ring[1:-1], ring[2:]], axis=1)
            return fan, None, vt[2]
    if rank == 1:
        along = centred @ vt[0]
        lo, hi = int(np.argmin(along)), int(np.argmax(along))
        return np.array([[lo, hi, hi]]), None, vt[1]
    return np.array([[0, 0, 0]]), None, vt[2]


def signed_distance_hull(vertices_a_world, vertices_b_world) -> dict:
    """Exact signed distance between conv(vertices_a) (A) and conv(vertices_b) (B), world frame.

    D = B − A = conv{b_j − a_i} (N·M points). The shapes overlap iff the origin is in D.

    * Origin outside D: the closest point c of D is found exactly over the hull's triangles;
      distance = |c|, normal = c / |c| (from A towards B: c = b − a for the closest pair).
    * Origin inside D: depth = min over facets of the plane distance from the origin (for an
      interior point the distance to the boundary of a convex polytope is the smallest facet
      offset). Translating B by v moves D by v; the shapes separate once −v leaves the interior of
      D, the shortest such v being −depth·n_f with n_f the outward normal of the nearest facet. So
      the normal (B's separating direction, from A towards B) is −n_f. The facet value is recomputed
      exactly from the vertex sets as max_j n_f·b_j − min_i n_f·a_i = h_D(n_f) (≥ depth for any unit
      n_f).
    * Flat or lower-dimensional D (coplanar input, segments, points): see `_hull_triangles`; the
      distance is then the exact distance to the flat set, zero when the origin lies in it, with the
      set's plane normal (arbitrary sign) as normal in that case. A distance at rounding level
      (≤ 64 eps · max|d|) takes its normal from the nearest facet or the plane, not from the noise.

    Returns:
        dict with distance (float), normal (3,), point_on_difference (3,) (= distance · normal: the
        closest point of D, or the origin's projection on the nearest facet), point_a (3,) and
        point_b (3,) (closest points when separated — barycentric combinations of the input
        vertices; A's support point along the normal and B's along −normal when overlapping).
    """
    va = _f64(vertices_a_world).reshape(-1, 3)
    vb = _f64(vertices_b_world).reshape(-1, 3)
    num_b = len(vb)
    diff = (vb[None, :, :] - va[:, None, :]).reshape(-1, 3)  # index i * M + j → b_j − a_i
    triangles, equations, plane_normal = _hull_triangles(diff)
    origin = np.zeros(3)
    inside = equations is not None and np.max(equations[:, 3]) <= 0
    if inside:
        normals = equations[:, :3] / np.linalg.norm(equations[:, :3], axis=1, keepdims=True)
        # h_D(n_f) = h_B(n_f) + h_A(−n_f), exact for the given n_f: O(F (N + M)), not O(F N M).
        offsets = np.max(normals @ vb.T, axis=1) - np.min(normals @ va.T, axis=1)
        best = int(np.argmin(offsets))
        depth = float(offsets[best])
        normal = -normals[best]
        point_a = va[np.argmax(va @ normal)]
        point_b = vb[np.argmin(vb @ normal)]
        return {
            "distance": -depth,
            "normal": normal,
            "point_on_difference": -depth * normal,
            "point_a": point_a,
            "point_b": point_b,
        }
    points, weights = closest_point_triangles(origin, diff[triangles])
    norms = _norm(points)
    best = int(np.argmin(norms))
    closest, distance = points[best], float(norms[best])
    index = triangles[best]
    point_a = weights[best] @ va[index // num_b]
    point_b = weights[best] @ vb[index % num_b]
    # Below rounding level the direction of `closest` is noise: touching, or the origin lies in a
    # flat D. Then use the nearest facet's normal (solid D) or the plane's normal (flat D).
    if distance > 64 * _EPS * max(float(np.max(np.abs(diff))), 1e-300):
        normal = closest / distance
    else:
        normal = (
            plane_normal
            if plane_normal is not None
            else -equations[int(np.argmax(equations[:, 3])), :3]
        )
    return {
        "distance": distance,
        "normal": normal,
        "point_on_difference": closest,
        "point_a": point_a,
        "point_b": point_b,
    }


def core_vertices(shape) -> tuple[np.ndarray, float]:
    """(vertices (V, 3) of the core, local frame; margin) of a polytope-like shape.

    Box → 8 corners; Polytope → its masked vertices; Sphere → the centre point with margin r;
    Capsule → the two segment end points with margin r; Rounded adds its radius; MinkowskiSum adds
    the vertex sets pairwise and the margins; Affine maps the vertices (inner margin must be 0);
    ConvexHull takes the union (all parts must share one margin, since conv ∪ (C_i ⊕ B_r) =
    conv(∪ C_i) ⊕ B_r). Anything else (curved) raises TypeError.
    """
    kind = type(shape).__name__
    if kind == "Box":
        h = _f64(shape.half_extents).reshape(3)
        signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
        return signs * h, 0.0
    if kind == "Polytope":
        return _polytope_vertices(shape), 0.0
    if kind == "Sphere":
        return np.zeros((1, 3)), float(_f64(shape.radius))
    if kind == "Capsule":
        h = float(_f64(shape.half_length))
        return np.array([[0, 0, -h], [0, 0, h]], np.float64), float(_f64(shape.radius))
    if kind == "Rounded":
        vertices, margin = core_vertices(shape.shape)
        return vertices, margin + float(_f64(shape.radius))
    if kind == "MinkowskiSum":
        va, ma = core_vertices(shape.a)
        vb, mb = core_vertices(shape.b)
        return (va[:, None, :] + vb[None, :, :]).reshape(-1, 3), ma + mb
    if kind == "Affine":
        vertices, margin = core_vertices(shape.shape)
        if margin != 0:
            raise TypeError("Affine of a rounded shape is not a rounded polytope")
        linear, offset = _f64(shape.linear).reshape(3, 3), _f64(shape.offset).reshape(3)
        return vertices @ linear.T + offset, 0.0
    if kind == "ConvexHull":
        parts = [core_vertices(s) for s in shape.shapes]
        margins = {m for _, m in parts}
        if len(margins) != 1:
            raise TypeError("ConvexHull of parts with different margins is not a rounded polytope")
        return np.concatenate([v for v, _ in parts]), margins.pop()
    raise TypeError(f"{kind} is not a (rounded) polytope")


def signed_distance_polytopes(shape_a, pose_a, shape_b, pose_b) -> dict:
    """Exact signed distance of (rounded) polytopes: `signed_distance_hull` on the world cores.

    sd(A ⊕ B_ra, B ⊕ B_rb) = sd(core_a, core_b) − r_a − r_b exactly (the Minkowski difference gains
    a ball of radius r_a + r_b; the signed distance of a point to D ⊕ B_r is its signed distance to
    D minus r, on both sides of the boundary of D). Witness points are shifted by the radii along
    the normal.

    Returns: dict as `signed_distance_hull` (distance, normal, point_a, point_b, point_on_difference
    of the cores).
    """
    vertices_a, margin_a = core_vertices(shape_a)
    vertices_b, margin_b = core_vertices(shape_b)
    rotation_a, translation_a = pose_arrays(pose_a)
    rotation_b, translation_b = pose_arrays(pose_b)
    result = signed_distance_hull(
        vertices_a @ rotation_a.T + translation_a, vertices_b @ rotation_b.T + translation_b
    )
    normal = result["normal"]
    result["distance"] = result["distance"] - margin_a - margin_b
    result["point_a"] = result["point_a"] + margin_a * normal
    result["point_b"] = result["point_b"] - margin_b * normal
    return result


# -------------------------------------------------------------------------------------------------
# Any shapes: minimum of the Minkowski-difference support function over the unit sphere
# -------------------------------------------------------------------------------------------------


def fibonacci_sphere(num: int) -> np.ndarray:
    """`num` nearly uniform unit vectors (num, 3) (golden-angle spiral)."""
    i = np.arange(num) + 0.5
    z = 1 - 2 * i / num
    radius = np.sqrt(np.maximum(0.0, 1 - z * z))
    angle = np.pi * (3 - np.sqrt(5.0)) * i
    return np.stack([radius * np.cos(angle), radius * np.sin(angle), z], axis=1)


def _tangent_basis(u: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A randomly rotated orthonormal basis (e1, e2) of the plane orthogonal to unit u."""
    e1 = _any_perpendicular(u)
    e2 = np.cross(u, e1)
    angle = rng.uniform(0, 2 * np.pi)
    return np.cos(angle) * e1 + np.sin(angle) * e2, -np.sin(angle) * e1 + np.cos(angle) * e2


def signed_distance_smooth(
    shape_a,
    pose_a,
    shape_b,
    pose_b,
    *,
    samples: int = 4000,
    refine: bool = True,
    starts: int = 4,
    seed: int = 0,
) -> dict:
    """Signed distance of any two convex shapes from their support functions alone.

    With h_D(u) = h_B(u) + h_A(−u) the support function of D = B − A,

        sd = −min_{|u|=1} h_D(u),   normal = −u*.

    Why (and the sign): if A, B are separated, let c be the closest point of D to the origin,
    d = |c| > 0. Then c·x ≥ |c|² for all x in D, so h_D(−c/d) = −min_x c·x / d = −d; and for any
    unit u, h_D(u) ≥ u·c ≥ −d. Hence min h_D = −d, attained at u* = −c/d, and the normal c/d = −u*
    points from A to B. If the origin is interior to D, h_D(u) > 0 for all u, and min_u h_D(u) is
    the distance from the origin to the boundary of D (the nearest supporting plane), i.e. the
    depth, so sd = −depth; the separating translation of B is −depth·u* (see
    `signed_distance_hull`), so again normal = −u*. Every evaluated h_D(u) is ≥ the true minimum, so
    the returned distance is a lower bound of the true signed distance up to rounding; its error is
    only a missed global minimum. Conversely, when separated, |point_b − point_a| (two points of the
    shapes) is an upper bound on the distance: for strictly convex contact features the two bounds
    meet, which certifies the result (ellipsoids: ~1e-15).

    Method: h_D on `samples` Fibonacci directions; then, from the best `starts` samples that are not
    within a few sample spacings of each other, Nelder–Mead in the 2-D gnomonic chart
    u(a, b) = normalize(u0 + a e1 + b e2) at the current best point, restarted at the new best with
    a freshly rotated chart and a shrinking initial simplex until the simplex size falls below
    ~1e-13 rad without improvement (restarts and rotated charts keep Nelder–Mead moving along the
    kinks of h_D for boxes, cylinders and cones). For separated shapes the minimum is unique (the
    problem is convex on the unit ball); for overlapping shapes local minima exist and are all
    visited from the sampled starts.

    Returns:
        dict with distance (float), normal (3,), direction u* (3,), point_a (3,) (A's support point
        along the normal), point_b (3,) (B's along −normal) — exact witnesses where the supports are
        unique (strictly convex contact features), any maximiser otherwise.
    """
    rng = np.random.default_rng(seed)

    rotation_a, translation_a = pose_arrays(pose_a)
    rotation_b, translation_b = pose_arrays(pose_b)

    def objective(directions: np.ndarray) -> np.ndarray:
        directions = np.atleast_2d(directions)
        value_b = _local_support_function(shape_b, directions @ rotation_b)
        value_a = _local_support_function(shape_a, -directions @ rotation_a)
        return value_b + value_a + directions @ (translation_b - translation_a)

    grid = fibonacci_sphere(samples)
    values = objective(grid)
    spacing = np.sqrt(4 * np.pi / samples)
    order = np.argsort(values)
    if values[order[0]] < 0:  # separated: a unique minimum (convex problem), one start suffices
        starts = 1
    chosen: list[int] = []
    for index in order:
        if all(grid[index] @ grid[other] < np.cos(3 * spacing) for other in chosen):
            chosen.append(int(index))
        if len(chosen) == starts:
            break
    best_u, best_value = grid[order[0]], float(values[order[0]])
    if refine:
        scale = max(float(np.max(np.abs(values))), 1e-300)
        # Coarse pass from every start, then the full restarted refinement of those that may still
        # hold the global minimum (within a margin well above the coarse pass's error).
        coarse = [
            _refine(
                objective,
                grid[i],
                float(values[i]),
                spacing,
                scale,
                rng,
                min_radius=1e-7,
                max_restarts=1,
            )
            for i in chosen
        ]
        lowest = min(value for _, value in coarse)
        for u, value in coarse:
            if value <= lowest + 1e-5 * scale:
                u, value = _refine(objective, u, value, 1e-3 * spacing, scale, rng)
            if value < best_value:
                best_u, best_value = u, value
    normal = -best_u
    return {
        "distance": -best_value,
        "normal": normal,
        "direction": best_u,
        "point_a": support_point(shape_a, pose_a, normal),
        "point_b": support_point(shape_b, pose_b, -normal),
    }


def _refine(objective, u, value, radius, scale, rng, *, min_radius=1e-13, max_restarts=30):
    """Restarted Nelder–Mead on the unit sphere from u (value = objective(u)); see the caller.

    Each restart uses a fresh randomly rotated gnomonic chart at the best point so far. A restart
    that lowers the value by more than rounding keeps the simplex size (capped by a few times the
    step taken); one that does not shrinks it 10⁴-fold, down to `min_radius`.
    """
    for _ in range(max_restarts):
        e1, e2 = _tangent_basis(u, rng)
        chart = np.stack([e1, e2])

        def in_chart(ab, u=u, chart=chart):
            v = u + ab @ chart
            return v / np.linalg.norm(v)

        ab_best, value_best = _nelder_mead(
            lambda ab, in_chart=in_chart: float(objective(in_chart(ab))[0]),
            np.array([[0.0, 0.0], [radius, 0.0], [0.0, radius]]),
            xatol=min_radius,
            fatol=1e-16 * scale,
            max_evaluations=600,
        )
        improved = value_best < value - 4 * _EPS * scale
        if value_best < value:
            step = float(np.linalg.norm(ab_best))
            u, value = in_chart(ab_best), value_best
        if improved:
            radius = max(min(radius, 4 * step), min_radius)
        elif radius <= min_radius:
            break
        else:
            radius = max(radius / 1e4, min_radius)
    return u, value


class _BudgetSpent(Exception):
    """Raised by `_nelder_mead`'s counted objective once its evaluation budget is spent."""


def _nelder_mead(objective, simplex, *, xatol: float, fatol: float, max_evaluations: int):
    """Minimise `objective` ((n,) → float) by Nelder–Mead from the initial `simplex` (n + 1, n).

    Nelder and Mead, "A simplex method for function minimization" (1965), with the standard
    coefficients (reflection 1, expansion 2, contraction 1/2, shrink 1/2) and the inside/outside
    contractions of Lagarias et al., "Convergence properties of the Nelder–Mead simplex method in low
    dimensions" (1998). It stops once every vertex lies within `xatol` of the best one (max-norm) and
    every value within `fatol` of the best, or after `max_evaluations` evaluations (an iteration cut
    short by the budget keeps what it had).

    Returns:
        (the best vertex (n,), its value).
    """
    evaluations = 0

    def evaluate(x):
        nonlocal evaluations
        if evaluations >= max_evaluations:
            raise _BudgetSpent
        evaluations += 1
        return objective(x)

    def sorted_by_value(simplex, values):
        order = np.argsort(values)
        return np.take(simplex, order, 0), np.take(values, order, 0)

    simplex = np.array(simplex, np.float64)
    size = simplex.shape[1]
    values = np.full(size + 1, np.inf)
    try:
        for k in range(size + 1):
            values[k] = evaluate(simplex[k])
    except _BudgetSpent:
        pass
    simplex, values = sorted_by_value(simplex, values)
    while evaluations < max_evaluations:
        try:
            if (
                np.max(np.abs(simplex[1:] - simplex[0])) <= xatol
                and np.max(np.abs(values[0] - values[1:])) <= fatol
            ):
                break
            centroid = np.add.reduce(simplex[:-1], 0) / size
            reflected = 2 * centroid - simplex[-1]
            value_reflected = evaluate(reflected)
            shrink = False
            if value_reflected < values[0]:
                expanded = 3 * centroid - 2 * simplex[-1]
                value_expanded = evaluate(expanded)
                if value_expanded < value_reflected:
                    simplex[-1], values[-1] = expanded, value_expanded
                else:
                    simplex[-1], values[-1] = reflected, value_reflected
            elif value_reflected < values[-2]:
                simplex[-1], values[-1] = reflected, value_reflected
            elif value_reflected < values[-1]:  # outside contraction
                contracted = 1.5 * centroid - 0.5 * simplex[-1]
                value_contracted = evaluate(contracted)
                if value_contracted <= value_reflected:
                    simplex[-1], values[-1] = contracted, value_contracted
                else:
                    shrink = True
            else:  # inside contraction
                contracted = 0.5 * centroid + 0.5 * simplex[-1]
                value_contracted = evaluate(contracted)
                if value_contracted < values[-1]:
                    simplex[-1], values[-1] = contracted, value_contracted
                else:
                    shrink = True
            if shrink:
                for j in range(1, size + 1):
                    simplex[j] = simplex[0] + 0.5 * (simplex[j] - simplex[0])
                    values[j] = evaluate(simplex[j])
        except _BudgetSpent:
            pass
        simplex, values = sorted_by_value(simplex, values)
    return simplex[0], float(np.min(values))
