"""Closest features: which vertex, edge or face of each body holds its witness point (seed 004, §3).

A result's feature of A is the face of A *exposed* by the normal: the points of A maximising
``dot(normal, x)`` (for B, maximising ``dot(-normal, x)``), found within a relative tolerance. The witness
points lie on these supporting planes, so in the generic case (a unique pair of closest points) the
exposed features are the unique closest features — vertex–face, edge–edge, face–vertex — and in
parallel contact (edge–face, face–face) they are the whole touching features. Deepest points of a
penetrating pair are support points along ±normal too, so the same rule serves both regimes.
"""

from __future__ import annotations

import enum

import jax.numpy as jnp
import numpy as np

from ._dataclass import pytree_dataclass
from ._tolerance import SHORT_REDUCTION, power_of_two_scale
from ._vector import dot, first_argmax, largest_abs, leading_max, true_indices

# How many vertex indices a `Feature` lists (a face with more vertices lists its first ones).
MAX_FEATURE_VERTICES = 4


class FeatureDim(enum.IntEnum):
    """Dimension codes of `Feature.dimension`."""

    NONE = -1  # no feature: overlapping pair in `distance`, invalid input, or a composite shape
    VERTEX = 0
    EDGE = 1
    FACE = 2
    CURVED = 3  # a point of a curved surface (a ball margin, an ellipsoid, a cylinder's rim, ...)


@pytree_dataclass
class Feature:
    """The feature of one body that holds its witness point.

    Fields:
        dimension: () int32 `FeatureDim` code.
        vertices: (4,) int32 indices of the feature's vertices in the shape's vertex list (`Polytope`
            rows; `Box` corners numbered ``x + 2y + 4z`` with 1 for the + side; a zero-radius
            `Capsule`'s segment ends 0 = −z, 1 = +z), increasing, padded with −1; −1 everywhere for
            shapes without vertex lists. A feature with more than four vertices lists its first
            four (`num_vertices` says how many it has).
        num_vertices: () int32 number of vertices of the feature (0 where not listed).
    """

    dimension: jnp.ndarray
    vertices: jnp.ndarray
    num_vertices: jnp.ndarray


def feature_without_vertices(dimension) -> Feature:
    """A `Feature` of `dimension` (() int or `FeatureDim`) that lists no vertices."""
    return Feature(jnp.asarray(dimension, jnp.int32), jnp.full(MAX_FEATURE_VERTICES, -1, jnp.int32),
                   jnp.zeros((), jnp.int32))


def vertex_set_feature(vertices, mask, direction, relative_tolerance) -> Feature:
    """The face of conv(vertices) exposed by `direction`.

    Args:
        vertices: (N, 3) local frame.
        mask: (N,) bool rows in use, or None for all.
        direction: (3,) unit vector, local frame.
        relative_tolerance: float; vertices within ``relative_tolerance · max|coordinate|`` of the
            largest ``dot(direction, vertex)`` belong to the feature, and its dimension is measured
            with the same length tolerance.
    """
    mask = jnp.ones(vertices.shape[0], bool) if mask is None else mask
    exposed, tolerance = exposed_vertices(vertices, mask, direction, relative_tolerance)
    dimension, _, _, _ = exposed_span(vertices, exposed, tolerance)
    indices, count = _listed(exposed)
    return Feature(dimension.astype(jnp.int32), indices, count)


def _listed(exposed):
    """The first `MAX_FEATURE_VERTICES` indices (int32, −1 past the last) of the True entries of
    `exposed` ((N,) or a sequence of N scalars), and their number () int32: `jnp.nonzero` and
    `jnp.sum`. Up to `SHORT_REDUCTION` entries (a box's corners) each entry is placed by its rank among
    the True ones before it, written slot by slot on scalars; beyond, `true_indices`."""
    if len(exposed) > SHORT_REDUCTION:
        return true_indices(exposed, MAX_FEATURE_VERTICES, -1), jnp.sum(exposed, dtype=jnp.int32)
    slots = np.arange(MAX_FEATURE_VERTICES)
    shifted, before = 0, jnp.zeros((), jnp.int32)  # index + 1 in the slot of its rank; entries before
    for j in range(len(exposed)):
        shifted = shifted + jnp.where(exposed[j] & (before == slots), j + 1, 0)
        before = before + exposed[j].astype(jnp.int32)
    return (shifted - 1).astype(jnp.int32), before


def box_feature(half_extents, direction, relative_tolerance) -> Feature:
    """`vertex_set_feature` of a box's eight corners (numbered ``x + 2y + 4z``, 1 for the + side) of
    half extents (3,) along `direction` (3,), corner by corner on scalars: the same exposed corners to
    the bit (the same heights, compared in the same order), and the dimension by the same rule in
    closed form (`_box_corners_dimension`). Under vmap the array form is short strided rows,
    reductions over eight entries and gathers, which cost more than a closed-form query's contact."""
    half = [half_extents[..., i] for i in range(3)]
    corners = [[half[i] if (c >> i) & 1 else -half[i] for i in range(3)] for c in range(8)]
    size = jnp.maximum(jnp.maximum(jnp.abs(half[0]), jnp.abs(half[1])), jnp.abs(half[2]))
    heights = [corner[0] * direction[..., 0] + corner[1] * direction[..., 1] + corner[2] * direction[..., 2]
               for corner in corners]
    exposed = [height >= leading_max(heights) - relative_tolerance * size for height in heights]
    dimension = _box_corners_dimension(half, size, exposed, relative_tolerance)
    indices, count = _listed(exposed)
    return Feature(dimension.astype(jnp.int32), indices, count)


def _box_corners_dimension(half, size, exposed, relative_tolerance):
    """`exposed_span`'s dimension of the `exposed` corners (8 () bools) of the box of half extents `half`
    (3 ()) and size `size` () (its largest half extent): from the first exposed corner, the farthest
    exposed one must be more than ``relative_tolerance · size`` away for an EDGE, and some exposed
    corner that far off their line for a FACE.

    A corner's offset from another is twice the half extent along each axis where their bits differ,
    so the squared lengths are sums of squared edges, and the squared distance off the line (times the
    line's squared length: |v × w|² by Lagrange's identity) is a sum over the pairs of axes where
    exactly one of the two cross terms is present. Computed in units where `size` is in [1, 2) (a
    power of two: exact), so that products of two squared edges stay in range at any scale."""
    scale, _ = power_of_two_scale(size)
    edge_sq = [(2 * h * scale) ** 2 for h in half]
    tolerance_sq = (relative_tolerance * (size * scale)) ** 2
    first = first_argmax(exposed)
    first_bits = [(first >> i) & 1 == 1 for i in range(3)]
    # moved[c][i]: corner c's bit i differs from the first exposed corner's.
    moved = [[~first_bits[i] if (c >> i) & 1 else first_bits[i] for i in range(3)] for c in range(8)]

    def total(terms):
        return (terms[0] + terms[1]) + terms[2]

    lengths_sq = [jnp.where(e, total([jnp.where(m[i], edge_sq[i], 0) for i in range(3)]), 0)
                  for e, m in zip(exposed, moved, strict=True)]
    length_sq = leading_max(lengths_sq)
    far = first_argmax(lengths_sq)
    far_moved = [((far >> i) & 1 == 1) != first_bits[i] for i in range(3)]
    axis_pairs = ((1, 2), (0, 2), (0, 1))
    off_line_sq = [jnp.where(e, total([
        jnp.where((m[i] & far_moved[j]) != (m[j] & far_moved[i]), edge_sq[i] * edge_sq[j], 0)
        for i, j in axis_pairs]), 0) for e, m in zip(exposed, moved, strict=True)]
    return jnp.where(length_sq <= tolerance_sq, FeatureDim.VERTEX,
                     jnp.where(leading_max(off_line_sq) <= tolerance_sq * length_sq, FeatureDim.EDGE,
                               FeatureDim.FACE))


def exposed_vertices(vertices, mask, direction, relative_tolerance):
    """Which of `vertices` (N, 3) under `mask` (N,) lie within ``relative_tolerance · max|coordinate|``
    of the largest ``dot(direction, vertex)``: (N,) bool, and that length tolerance ()."""
    size = leading_max(jnp.where(mask, largest_abs(vertices), 0))
    tolerance = relative_tolerance * size
    heights = jnp.where(mask, dot(vertices, direction), -jnp.inf)
    return mask & (heights >= leading_max(heights) - tolerance), tolerance


def exposed_span(vertices, exposed, tolerance):
    """Dimension and directions of the set of `vertices` (N, 3) where `exposed` (N,) (non-empty), a set
    already flat to within `tolerance` along the direction that exposed it.

    Returns:
        dimension: () `FeatureDim` VERTEX, EDGE or FACE, with extents measured against `tolerance`.
        axis: (3,) unit vector from one vertex to the one farthest from it (zero for a vertex).
        plane_normal: (3,) unit normal of the set's plane (zero unless a face), either sign.
        spanning: (3,) int32 indices of the vertices that measured it: the first exposed one, the one
            farthest from it, the one farthest off their line.
    """
    # Its extent from one vertex, then its extent off the line to the farthest vertex.
    first = first_argmax(exposed)
    offsets = vertices - vertices[first]
    lengths = jnp.where(exposed, jnp.sqrt(dot(offsets, offsets)), 0)
    far = first_argmax(lengths)
    axis = offsets[far] / jnp.where(lengths[far] > 0, lengths[far], 1)
    off_line = offsets - dot(offsets, axis)[:, None] * axis
    widths = jnp.where(exposed, jnp.sqrt(dot(off_line, off_line)), 0)
    wide = first_argmax(widths)
    plane_normal = jnp.cross(axis, off_line[wide] / jnp.where(widths[wide] > 0, widths[wide], 1))
    dimension = jnp.where(lengths[far] <= tolerance, FeatureDim.VERTEX,
                          jnp.where(widths[wide] <= tolerance, FeatureDim.EDGE, FeatureDim.FACE))
    spanning = jnp.stack([first, far, wide]).astype(jnp.int32)
    return dimension, axis, jnp.where(dimension == FeatureDim.FACE, plane_normal, 0), spanning


def segment_feature(half_length, direction_z, relative_tolerance) -> Feature:
    """The feature of the segment from (0, 0, −h) to (0, 0, h) (h = `half_length` ()) exposed by a
    direction whose z component is `direction_z` (): `vertex_set_feature` of its two ends (0 = −z,
    1 = +z), in closed form. The ends' heights are ∓h·z; both are exposed within the tolerance
    ``relative_tolerance · h``, an edge where it is longer than that tolerance."""
    tolerance = relative_tolerance * half_length
    height = half_length * direction_z
    top = jnp.maximum(-height, height) - tolerance
    low_end, high_end = -height >= top, height >= top
    both = low_end & high_end
    # By slot, not stacked from scalars (`_scalar_pairs`: XLA:CPU's loops over a stack recompute).
    slots = np.arange(MAX_FEATURE_VERTICES)
    vertices = jnp.where(slots == 0, jnp.where(low_end, 0, 1), jnp.where((slots == 1) & both, 1, -1))
    vertices = vertices.astype(jnp.int32)
    dimension = jnp.where(both & (2 * half_length > tolerance), FeatureDim.EDGE, FeatureDim.VERTEX)
    return Feature(dimension.astype(jnp.int32), vertices,
                   low_end.astype(jnp.int32) + high_end.astype(jnp.int32))
