"""Independent float64 reference for the exact contact normal of two posed convex shapes.

Nothing here calls jaxgjk's algorithms: shapes are read through their fields only (dispatch on
``type(shape).__name__``, like `reference`), and their support functions are written out again as the
maximum of finitely many smooth *pieces*, each a closed-form map u ↦ x(u) from a direction to a point of
the shape with u·x(u) its value and J(u) = dx/du its derivative:

* a vertex (a polytope's or box's corner, a cone's apex, a capsule core's end): x constant;
* a curved patch: an ellipsoid's x = D²u/|Du|, a ball's r·u/|u|, a cylinder's or cone's rim
  (r·u_xy/|u_xy|, ±h) (undefined on the axis, where the caps below take over);
* three points on each flat cap of a cylinder and on a cone's base, so that a contact on a cap has
  three constant pieces that fix its normal, as a polytope face does;
* images: `Affine` maps a piece as L x(Lᵀu) + o, `Rounded` adds a ball, `MinkowskiSum` adds every
  pair of pieces, `ConvexHull` takes the union of its members' pieces.

The signed distance is the maximum over unit n of g(n) = −h_A(n) − h_B(−n) (`reference`), so the exact
normal maximises g. Each start (the best directions of a dense Fibonacci grid, several apart) runs
SLSQP on the epigraph form (minimise t_A + t_B subject to every piece of A along n below t_A, every
piece of B along −n below t_B, |n| = 1), which reaches the maximiser to ~1e-8 through its kinks. A
Newton polish then solves the maximiser's optimality conditions exactly: for a set of active pieces
(those within a small tolerance of the maximum, at most three per body and at most two equality
constraints between them), n, convex weights α (A) and β (B) and μ with

    Σ β_j y_j(n) − Σ α_i x_i(n) = μ n,   n·x_i equal over A's active pieces, n·y_j over B's,
    Σ α = Σ β = 1,   |n| = 1,

and keeps the first set (smallest first) whose solution has non-negative weights and no other piece
above the active ones: a KKT point of the full problem, so the local maximum. Its g is checked against
`reference.support_function`'s closed forms. Local maxima from different starts give the *margin*: how
much lower the second-best one is (a normal is unique when that margin is clearly positive; separated
shapes have a single local maximum with g > 0).
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.optimize import minimize

from jaxgjk.reference import fibonacci_sphere, pose_arrays, support_function

EPS = np.finfo(np.float64).eps
CAP_POINTS = 3  # constant pieces on each flat cap: enough to fix a cap's normal
GRID = 3000


def _f64(value):
    return np.asarray(value, np.float64)


def _ball_piece(radius):
    def piece(u):
        norm = np.linalg.norm(u)
        unit = u / norm
        return radius * unit, radius * (np.eye(3) - np.outer(unit, unit)) / norm
    return piece


def _constant_piece(point):
    point = _f64(point)

    def piece(u):
        del u
        return point, np.zeros((3, 3))
    return piece


def _rim_piece(radius, height):
    """(r·u_xy/|u_xy|, height): a cylinder's or cone's rim point facing u."""
    def piece(u):
        radial = np.array([u[0], u[1], 0.0])
        norm = np.linalg.norm(radial)
        if norm <= 1e-12 * np.linalg.norm(u):
            raise _Singular
        unit = radial / norm
        jacobian = radius * (np.diag([1.0, 1.0, 0.0]) - np.outer(unit, unit)) / norm
        return radius * unit + np.array([0, 0, height]), jacobian
    return piece


class _Singular(Exception):
    """A rim piece evaluated on the axis (the cap's constant pieces hold that contact)."""


def _cap_points(radius, height, count=CAP_POINTS):
    angles = 2 * np.pi * np.arange(count) / count + 0.3
    return [_constant_piece([radius * np.cos(a), radius * np.sin(a), height]) for a in angles]


def _add(first, second):
    def piece(u):
        x1, j1 = first(u)
        x2, j2 = second(u)
        return x1 + x2, j1 + j2
    return piece


def _mapped(piece, linear, offset):
    def mapped(u):
        x, jacobian = piece(linear.T @ u)
        return linear @ x + offset, linear @ jacobian @ linear.T
    return mapped


def pieces(shape) -> list:
    """The smooth pieces of `shape`'s support function (local frame), margins included."""
    kind = type(shape).__name__
    if kind == "Sphere":
        return [_ball_piece(_f64(shape.radius))]
    if kind == "Capsule":
        radius, half = _f64(shape.radius), _f64(shape.half_length)
        return [_add(_constant_piece([0, 0, s * half]), _ball_piece(radius)) for s in (1, -1)]
    if kind == "Box":
        half = _f64(shape.half_extents)
        return [_constant_piece(np.array(signs) * half) for signs in itertools.product((1, -1), repeat=3)]
    if kind == "Cylinder":
        radius, half = _f64(shape.radius), _f64(shape.half_length)
        return ([_rim_piece(radius, half), _rim_piece(radius, -half)] + _cap_points(radius, half)
                + _cap_points(radius, -half))
    if kind == "Cone":
        radius, half = _f64(shape.radius), _f64(shape.half_height)
        return [_constant_piece([0, 0, half]), _rim_piece(radius, -half)] + _cap_points(radius, -half)
    if kind == "Ellipsoid":
        radii = _f64(shape.radii)

        def ellipsoid(u):
            scaled = radii * u
            norm = np.linalg.norm(scaled)
            x = radii * scaled / norm
            return x, (np.diag(radii ** 2) - np.outer(x, x)) / norm
        return [ellipsoid]
    if kind == "Polytope":
        vertices = _f64(shape.vertices).reshape(-1, 3)
        if shape.mask is not None:
            vertices = vertices[np.asarray(shape.mask, bool)]
        return [_constant_piece(v) for v in vertices]
    if kind == "Affine":
        linear, offset = _f64(shape.linear).reshape(3, 3), _f64(shape.offset).reshape(3)
        return [_mapped(p, linear, offset) for p in pieces(shape.shape)]
    if kind == "Rounded":
        return [_add(p, _ball_piece(_f64(shape.radius))) for p in pieces(shape.shape)]
    if kind == "MinkowskiSum":
        return [_add(p, q) for p in pieces(shape.a) for q in pieces(shape.b)]
    if kind == "ConvexHull":
        return [p for member in shape.shapes for p in pieces(member)]
    raise TypeError(f"unsupported shape {kind}")


class _Body:
    """A posed shape's pieces in the world frame, evaluated along `sign`·n (A: +1, B: −1): each gives
    the point x(n) and dx/dn (world frame)."""

    def __init__(self, shape, pose, sign):
        self.rotation, self.translation = pose_arrays(pose)
        self.pieces = pieces(shape)
        self.sign = sign

    def evaluate(self, index, normal):
        local = self.sign * self.rotation.T @ normal
        x, jacobian = self.pieces[index](local)
        return (self.rotation @ x + self.translation,
                self.sign * self.rotation @ jacobian @ self.rotation.T)

    def values(self, normal):
        """Each piece's support value along sign·n (−inf where a rim piece is singular)."""
        out = np.full(len(self.pieces), -np.inf)
        for index in range(len(self.pieces)):
            try:
                out[index] = self.sign * normal @ self.evaluate(index, normal)[0]
            except _Singular:
                pass
        return out


def _g(body_a, body_b, normal):
    """g(n) = −h_A(n) − h_B(−n) for a unit n, from the pieces."""
    return -np.max(body_a.values(normal)) - np.max(body_b.values(normal))


def _slsqp(body_a, body_b, start):
    def constraint_values(z):
        n = z[:3]
        return np.concatenate([z[3] - body_a.values(n), z[4] - body_b.values(n)])

    def constraint_jacobian(z):
        n = z[:3]
        rows = []
        for body, column in ((body_a, 3), (body_b, 4)):
            for index in range(len(body.pieces)):
                row = np.zeros(5)
                row[column] = 1
                try:
                    row[:3] = -body.sign * body.evaluate(index, n)[0]
                except _Singular:
                    row[:3] = 0
                rows.append(row)
        return np.array(rows)

    def finite_constraint_values(z):
        return np.nan_to_num(constraint_values(z), nan=1e3, posinf=1e3, neginf=1e3)

    values_a, values_b = body_a.values(start), body_b.values(start)
    z0 = np.concatenate([start, [np.max(values_a), np.max(values_b)]])
    result = minimize(lambda z: z[3] + z[4], z0, jac=lambda z: np.array([0, 0, 0, 1.0, 1.0]),
                      method="SLSQP",
                      constraints=[dict(type="ineq",
                                        fun=finite_constraint_values,
                                        jac=constraint_jacobian),
                                   dict(type="eq", fun=lambda z: np.array([z[:3] @ z[:3] - 1]),
                                        jac=lambda z: np.concatenate([2 * z[:3], [0, 0]])[None])],
                      options=dict(ftol=1e-16, maxiter=300))
    normal = result.x[:3] / np.linalg.norm(result.x[:3])
    return normal


def _kkt(body_a, body_b, active_a, active_b, normal, steps=40):
    """Newton on the optimality conditions with these active pieces; returns (normal, α, β) or None."""
    k_a, k_b = len(active_a), len(active_b)
    size = 4 + k_a + k_b
    alpha = np.full(k_a, 1 / k_a)
    beta = np.full(k_b, 1 / k_b)
    mu = 0.0
    previous = np.inf
    for step in range(steps):
        try:
            xs = [body_a.evaluate(i, normal) for i in active_a]
            ys = [body_b.evaluate(j, normal) for j in active_b]
        except _Singular:
            return None
        residual = np.zeros(size)
        jacobian = np.zeros((size, size))
        difference = sum(b * y for b, (y, _) in zip(beta, ys, strict=True)) - sum(
            a * x for a, (x, _) in zip(alpha, xs, strict=True))
        if step == 0:
            mu = normal @ difference
        residual[:3] = difference - mu * normal
        jacobian[:3, :3] = (sum(b * jy for b, (_, jy) in zip(beta, ys, strict=True))
                            - sum(a * jx for a, (_, jx) in zip(alpha, xs, strict=True)) - mu * np.eye(3))
        for i, (x, _) in enumerate(xs):
            jacobian[:3, 3 + i] = -x
        for j, (y, _) in enumerate(ys):
            jacobian[:3, 3 + k_a + j] = y
        jacobian[:3, 3 + k_a + k_b] = -normal
        row = 3
        for points in ([x for x, _ in xs], [y for y, _ in ys]):
            for point in points[1:]:
                residual[row] = normal @ (point - points[0])
                jacobian[row, :3] = point - points[0]
                row += 1
        residual[row], jacobian[row, 3:3 + k_a] = np.sum(alpha) - 1, 1
        residual[row + 1], jacobian[row + 1, 3 + k_a:3 + k_a + k_b] = np.sum(beta) - 1, 1
        residual[row + 2], jacobian[row + 2, :3] = (normal @ normal - 1) / 2, normal
        norm = np.max(np.abs(residual))
        if norm <= 4 * EPS or (step > 3 and norm >= previous):
            break
        previous = norm
        try:
            delta = np.linalg.solve(jacobian, -residual)
        except np.linalg.LinAlgError:
            return None
        if not np.all(np.isfinite(delta)) or np.linalg.norm(delta[:3]) > 0.1:
            return None
        normal = normal + delta[:3]
        normal /= np.linalg.norm(normal)
        alpha, beta = alpha + delta[3:3 + k_a], beta + delta[3 + k_a:3 + k_a + k_b]
        mu += delta[3 + k_a + k_b]
    if np.max(np.abs(residual)) > 1e-11:
        return None
    return normal, alpha, beta


def _subsets(candidates, largest):
    for size in range(1, min(largest, len(candidates)) + 1):
        yield from itertools.combinations(candidates, size)


def _polish(body_a, body_b, normal, scale):
    """The KKT point near `normal` (the SLSQP maximiser): (normal, active pieces) or None."""
    values_a, values_b = body_a.values(normal), body_b.values(normal)
    for tolerance in (1e-9, 1e-7, 1e-5):
        near_a = [int(i) for i in np.argsort(-values_a)[:6]
                  if values_a[i] >= np.max(values_a) - tolerance * scale]
        near_b = [int(j) for j in np.argsort(-values_b)[:6]
                  if values_b[j] >= np.max(values_b) - tolerance * scale]
        options = sorted(((sa, sb) for sa in _subsets(near_a, 3) for sb in _subsets(near_b, 3)
                          if len(sa) + len(sb) <= 4), key=lambda pair: len(pair[0]) + len(pair[1]))
        for active_a, active_b in options:
            solved = _kkt(body_a, body_b, active_a, active_b, normal.copy())
            if solved is None:
                continue
            refined, alpha, beta = solved
            if min(np.min(alpha), np.min(beta)) < -1e-9 or refined @ normal < 1 - 1e-6:
                continue
            new_a, new_b = body_a.values(refined), body_b.values(refined)
            rounding = 1e-13 * scale
            if (np.max(new_a) > np.max(new_a[list(active_a)]) + rounding
                    or np.max(new_b) > np.max(new_b[list(active_b)]) + rounding):
                continue
            return refined, (active_a, active_b)
    return None


def exact_normal(shape_a, pose_a, shape_b, pose_b, starts=6):
    """The maximiser of g over the unit sphere, A's normal towards B (world frame).

    Returns dict: normal (3,), signed (the signed distance g(normal)), margin (g's best minus its
    second-best local maximum found, inf when only one), resolved (the Newton polish converged to a
    KKT point), active (the active pieces' indices per body), check (|g from the pieces − g from
    `reference.support_function`|).
    """
    body_a, body_b = _Body(shape_a, pose_a, 1), _Body(shape_b, pose_b, -1)
    grid = fibonacci_sphere(GRID)
    values = -support_function(shape_a, pose_a, grid) - support_function(shape_b, pose_b, -grid)
    scale = max(float(np.max(np.abs(values))), 1e-300)
    spacing = np.sqrt(4 * np.pi / GRID)
    order = np.argsort(-values)
    chosen = []
    for index in order:
        if all(grid[index] @ grid[other] < np.cos(3 * spacing) for other in chosen):
            chosen.append(int(index))
        if len(chosen) == (1 if values[order[0]] > 0 else starts):
            break
    maxima = []  # (g, normal, resolved, active)
    for index in chosen:
        normal = _slsqp(body_a, body_b, grid[index])
        polished = _polish(body_a, body_b, normal, scale)
        if polished is not None:
            normal, active = polished
        maxima.append((_g(body_a, body_b, normal), normal, polished is not None,
                       None if polished is None else active))
    maxima.sort(key=lambda m: -m[0])
    best = maxima[0]
    others = [m[0] for m in maxima[1:] if m[1] @ best[1] < 1 - 1e-8]
    margin = best[0] - max(others) if others else np.inf
    check = abs(best[0] + support_function(shape_a, pose_a, best[1])
                + support_function(shape_b, pose_b, -best[1]))
    return dict(normal=best[1], signed=best[0], margin=margin, resolved=best[2], active=best[3],
                check=check)
