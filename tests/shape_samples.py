"""Random shapes of every kind and points sampled inside them, from the shapes' definitions alone."""

import jax.numpy as jnp
import numpy as np

import jaxgjk as jg

PRIMITIVE_KINDS = ("sphere", "capsule", "box", "cylinder", "cone", "ellipsoid", "polytope")


def random_rotation(rng, dtype=np.float64):
    q = rng.normal(size=4)
    return (q / np.linalg.norm(q)).astype(dtype)


def random_polytope_vertices(rng, count=12, size=1.0, flat=False):
    points = rng.normal(size=(count, 3))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    points *= size * rng.uniform(0.5, 1.0, size=3)
    if flat:
        points[:, 2] *= 1e-3
    return points


def random_shape(kind, rng, size=1.0, dtype=np.float64):
    """A shape of `kind` with dimensions around `size`."""
    def u(low=0.3, high=1.0, shape=()):
        return np.asarray(size * rng.uniform(low, high, size=shape), dtype)

    if kind == "sphere":
        return jg.Sphere(u())
    if kind == "capsule":
        return jg.Capsule(u(0.2, 0.6), u(0.2, 1.0))
    if kind == "box":
        return jg.Box(u(shape=3))
    if kind == "cylinder":
        return jg.Cylinder(u(), u())
    if kind == "cone":
        return jg.Cone(u(), u())
    if kind == "ellipsoid":
        return jg.Ellipsoid(u(shape=3))
    if kind == "polytope":
        return jg.Polytope(jnp.asarray(random_polytope_vertices(rng, 12, size), dtype))
    raise ValueError(kind)


def _ball(rng, n, radius):
    direction = rng.normal(size=(n, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    return direction * (radius * rng.uniform(0, 1, size=(n, 1)) ** (1 / 3))


def sample_points(shape, rng, n):
    """Points (n, 3) inside `shape` (local frame), many of them near or on the boundary."""
    name = type(shape).__name__
    if name == "Sphere":
        return _ball(rng, n, float(shape.radius))
    if name == "Capsule":
        z = rng.uniform(-1, 1, size=(n, 1)) * float(shape.half_length)
        return np.hstack([np.zeros((n, 2)), z]) + _ball(rng, n, float(shape.radius))
    if name == "Box":
        return np.cbrt(rng.uniform(-1, 1, size=(n, 3))) * np.asarray(shape.half_extents)
    if name in ("Cylinder", "Cone"):
        height = float(shape.half_length if name == "Cylinder" else shape.half_height)
        z = rng.uniform(-1, 1, size=n) * height
        scale = np.ones(n) if name == "Cylinder" else (height - z) / (2 * height)
        disk = _ball(rng, n, 1.0)[:, :2]
        disk /= np.maximum(np.linalg.norm(disk, axis=1, keepdims=True), 1.0)
        return np.column_stack([disk * (float(shape.radius) * scale)[:, None], z])
    if name == "Ellipsoid":
        return _ball(rng, n, 1.0) * np.asarray(shape.radii)
    if name == "Polytope":
        vertices = np.asarray(shape.vertices)
        if shape.mask is not None:
            vertices = vertices[np.asarray(shape.mask)]
        weights = rng.dirichlet(np.full(len(vertices), 0.3), size=n)
        return weights @ vertices
    if name == "Affine":
        return sample_points(shape.shape, rng, n) @ np.asarray(shape.linear).T + np.asarray(
            shape.offset)
    if name == "MinkowskiSum":
        return sample_points(shape.a, rng, n) + sample_points(shape.b, rng, n)
    if name == "Rounded":
        return sample_points(shape.shape, rng, n) + _ball(rng, n, float(shape.radius))
    if name == "ConvexHull":
        parts = [sample_points(s, rng, n) for s in shape.shapes]
        choice = rng.integers(len(parts), size=n)
        return np.stack(parts)[choice, np.arange(n)]
    raise ValueError(name)
