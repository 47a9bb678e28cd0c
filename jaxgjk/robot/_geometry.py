"""A robot's collision geometry as stacks of jaxgjk shapes, one stack per kind.

Each stack batches under `jax.vmap`: spheres, boxes and cylinders stack their fields; mesh hulls of
different sizes stack as one `Polytope` padded to the largest (masked rows), or, above a vertex count
where walking the hull graph beats scoring every vertex, as one `ClimbingPolytope` padded with interior
points that no walk reaches (see `benchmarks/results/robot.md` for the measurement behind the default).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .._dataclass import pytree_dataclass, static_field
from .._hill_climb import ClimbingPolytope
from .._hull import convex_hull
from .._pose import Pose
from .._shapes import Box, Cylinder, Polytope, Shape, Sphere

# Kinds in the order that decides which side of a pair each stack takes (the lesser kind is shape A).
GROUP_KINDS = ("sphere", "box", "cylinder", "polytope", "climbing")
# Hulls with more vertices than this get the hill-climbing support. Inside vmapped queries a walk costs
# more than scoring a few hundred vertices: a Panda hull pair (260 and 152 vertices) ran 3x slower
# climbing (benchmarks/results/robot.md).
CLIMBING_ABOVE = 1024


@pytree_dataclass
class GeometryGroup:
    """Collision geometries of one kind.

    Fields:
        shapes: a stack of one shape kind (leading axis G on every leaf), local (geometry) frames.
        origins: `Pose` (G,): each geometry's frame in its link's frame.
        links: static (G,) index of each geometry's link in `Robot.link_names`.
        sources: static (G,) where each came from (mesh file or URDF element), for messages and plots.
        kind: static, one of `GROUP_KINDS`.
    """

    shapes: Shape
    origins: Pose
    links: tuple = static_field()
    sources: tuple = static_field()
    kind: str = static_field()


def _polytopes(hulls, dtype) -> Polytope:
    size = max(len(vertices) for vertices in hulls)
    vertices = np.zeros((len(hulls), size, 3))
    mask = np.zeros((len(hulls), size), bool)
    for row, hull_vertices in enumerate(hulls):
        vertices[row, :len(hull_vertices)] = hull_vertices
        mask[row, :len(hull_vertices)] = True
    return Polytope(jnp.asarray(vertices, dtype), jnp.asarray(mask))


def _climbing_polytopes(hulls, dtype) -> ClimbingPolytope:
    degree = max(convex_hull(vertices).triangle_adjacency.shape[1] for vertices in hulls)
    singles = [ClimbingPolytope.from_points(vertices, dtype, max_degree=degree) for vertices in hulls]
    size = max(np.shape(single.vertices)[0] for single in singles)
    vertices, neighbors = [], []
    for single in singles:
        own = np.asarray(single.vertices)
        # Padding rows: the centroid, strictly inside a solid hull, so no direction exposes it, and
        # no neighbour list names it, so no walk reaches it.
        vertices.append(np.concatenate([own, np.repeat(own.mean(axis=0)[None], size - len(own), axis=0)]))
        neighbors.append(np.pad(np.asarray(single.neighbors), ((0, size - len(own)), (0, 0)),
                                constant_values=-1))
    return ClimbingPolytope(jnp.asarray(np.stack(vertices), dtype), jnp.asarray(np.stack(neighbors)),
                            jnp.asarray(np.stack([np.asarray(single.starts) for single in singles])))


def _kind(geometry, climbing_above) -> str:
    if geometry.kind != "mesh":
        return geometry.kind
    solid = convex_hull(geometry.parameters).dim == 3
    return "climbing" if solid and len(geometry.parameters) > climbing_above else "polytope"


def build_groups(geometries, link_index, dtype, climbing_above=CLIMBING_ABOVE) -> tuple:
    """Stack `GeometryDescription`s by kind into `GeometryGroup`s (in `GROUP_KINDS` order).

    Args:
        geometries: the `GeometryDescription`s (host side, float64).
        link_index: {link name: index in `Robot.link_names`}.
        dtype: float dtype of the shapes and origins.
        climbing_above: hulls with more vertices use `ClimbingPolytope`.
    """
    kinds = [_kind(geometry, climbing_above) for geometry in geometries]
    groups = []
    for kind in GROUP_KINDS:
        members = [geometry for geometry, own in zip(geometries, kinds, strict=True) if own == kind]
        if not members:
            continue
        parameters = [geometry.parameters for geometry in members]
        if kind == "sphere":
            shapes = Sphere(jnp.asarray([p[0] for p in parameters], dtype))
        elif kind == "box":
            shapes = Box(jnp.asarray(np.stack(parameters), dtype))
        elif kind == "cylinder":
            shapes = Cylinder(jnp.asarray([p[0] for p in parameters], dtype),
                              jnp.asarray([p[1] for p in parameters], dtype))
        elif kind == "polytope":
            shapes = _polytopes(parameters, dtype)
        else:
            shapes = _climbing_polytopes(parameters, dtype)
        origins = Pose.from_matrix(jnp.asarray(np.stack([geometry.origin for geometry in members]), dtype))
        groups.append(GeometryGroup(shapes, origins, tuple(link_index[g.link] for g in members),
                                    tuple(g.source for g in members), kind))
    return tuple(groups)
