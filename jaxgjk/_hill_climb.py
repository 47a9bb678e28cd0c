"""A polytope whose support mapping walks the hull graph (hill climbing; Cameron 1997).

`Polytope.core_support` scores every vertex: O(N) per call. `ClimbingPolytope` instead starts at the best
of a few precomputed extreme vertices and moves to the best neighbour while that strictly improves the
score ``dot(direction, vertex)``, O(K) per step for K neighbours (seed paper 004, §4.1). On the exact hull
graph (`Hull.triangle_adjacency`: hull edges plus facet diagonals) a vertex with no better neighbour
maximises the linear function over the polytope, so the walk is exact up to ties and float rounding.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ._checks import check_array
from ._dataclass import pytree_dataclass
from ._features import vertex_set_feature
from ._shapes import Shape, nearest_tied_vertex
from ._tolerance import float_dtype

# The 6 axis directions and the 8 cube diagonals: their extreme vertices are the default starts.
_START_DIRECTIONS = np.concatenate([
    np.concatenate([np.eye(3), -np.eye(3)]),
    np.array([[x, y, z] for x in (1, -1) for y in (1, -1) for z in (1, -1)], np.float64),
])


def climb(vertices, neighbors, direction, start, max_steps):
    """Walk from vertex `start` to a vertex maximising ``dot(direction, vertex)`` (steepest ascent).

    Moves to the best neighbour only on strict improvement, so plateaus (ties) stop the walk; on the
    exact hull graph the vertex reached is a global maximiser. No gradient flows through the walk.

    Args:
        vertices: (N, 3) hull vertices, local frame.
        neighbors: (N, K) int neighbour indices, -1 padded.
        direction: (3,) local frame, any length (zero included: the walk stays at `start`).
        start: () int index of the first vertex.
        max_steps: static int bound on the moves (N - 1 always suffices: each move strictly improves).
    Returns:
        (index, steps): () int32 index of the vertex reached and () int32 number of moves made.
    """
    vertices, direction = jax.lax.stop_gradient((vertices, direction))
    direction = direction.astype(vertices.dtype)
    start = jnp.asarray(start, jnp.int32)

    def keep_going(carry):
        _, _, steps, done = carry
        return ~done & (steps < max_steps)

    def step(carry):
        index, score, steps, _ = carry
        candidates = neighbors[index].astype(jnp.int32)
        # Padding (-1) points back to the current vertex, which never improves on itself.
        candidates = jnp.where(candidates < 0, index, candidates)
        scores = vertices[candidates] @ direction
        best = jnp.argmax(scores)
        improves = scores[best] > score
        return (jnp.where(improves, candidates[best], index), jnp.where(improves, scores[best], score),
                steps + improves.astype(jnp.int32), ~improves)

    carry = (start, vertices[start] @ direction, jnp.zeros((), jnp.int32), jnp.zeros((), bool))
    index, _, steps, _ = jax.lax.while_loop(keep_going, step, carry)
    return index, steps


@pytree_dataclass
class ClimbingPolytope(Shape):
    """Convex polytope with a hill-climbing support mapping (same geometry as `Polytope(vertices)`).

    Build it with `ClimbingPolytope.from_points`. All rows are real vertices (no mask); a stack of
    climbing polytopes with equal N, K and S batches under `jax.vmap` (pad with ``max_degree``).
    Gradients flow to `vertices` (the walk picks the vertex; no gradient flows through it); to take
    `jax.grad` with respect to the whole shape, whose index fields are integers, pass ``allow_int=True``.

    Fields:
        vertices: (N, 3) hull vertices, local frame.
        neighbors: (N, K) int32 neighbours of each vertex on the exact hull graph, -1 padded.
        starts: (S,) int32 vertices the walks start from (the best one along the direction is used).
    """

    vertices: jnp.ndarray
    neighbors: jnp.ndarray
    starts: jnp.ndarray

    @staticmethod
    def from_points(points, dtype=None, *, max_degree: int | None = None,
                    start_directions=None) -> ClimbingPolytope:
        """The convex hull of `points` (M, 3) with its vertex graph, preprocessed in float64 NumPy.

        Args:
            points: (M, 3) local frame; interior and duplicate points are dropped (`_hull.convex_hull`).
            dtype: of `vertices`; default: that of `points` (float32 unless x64 and float64 input).
            max_degree: pad `neighbors` to this many columns (to stack polytopes of equal N).
            start_directions: (S, 3) directions whose extreme vertices become `starts`; default the 6
                axis directions and the 8 cube diagonals.
        """
        from ._hull import convex_hull

        hull = convex_hull(points)
        table = np.asarray(hull.triangle_adjacency)
        if max_degree is not None:
            if max_degree < table.shape[1]:
                raise ValueError(f"max_degree={max_degree} is below the hull's degree {table.shape[1]}")
            table = np.pad(table, ((0, 0), (0, max_degree - table.shape[1])), constant_values=-1)
        directions = _START_DIRECTIONS if start_directions is None else np.asarray(start_directions)
        starts = np.argmax(hull.vertices @ np.asarray(directions, np.float64).T, axis=0)
        dtype = dtype or float_dtype(jnp.asarray(points))
        return ClimbingPolytope(jnp.asarray(hull.vertices, dtype), jnp.asarray(table, jnp.int32),
                                jnp.asarray(starts, jnp.int32))

    def max_steps(self) -> int:
        """Static bound on the moves of one walk: N - 1 (each move strictly improves the score)."""
        return max(int(np.shape(self.vertices)[0]) - 1, 0)

    def best_start(self, direction):
        """() int32 index of the start vertex with the largest ``dot(direction, vertex)``."""
        direction = jax.lax.stop_gradient(direction).astype(self.vertices.dtype)
        scores = jax.lax.stop_gradient(self.vertices)[self.starts] @ direction
        return self.starts[jnp.argmax(scores)].astype(jnp.int32)

    def support_index(self, direction, start=None):
        """() int32 index of a vertex maximising ``dot(direction, vertex)``, and () int32 moves made.

        Args:
            direction: (3,) local frame.
            start: () int vertex to walk from (a warm start, e.g. the previous answer); default the
                best of `starts`.
        """
        start = self.best_start(direction) if start is None else start
        return climb(self.vertices, self.neighbors, direction, start, self.max_steps())

    def core_support(self, direction):
        index, _ = self.support_index(direction)
        return self.vertices[index].astype(direction.dtype)

    def core_support_near(self, direction, hint):
        local = direction.astype(self.vertices.dtype)
        return nearest_tied_vertex(self.vertices, self.vertices @ local, local, hint).astype(direction.dtype)

    def core_support_from(self, direction, start_index):
        """`core_support` walking from vertex `start_index` () instead of the best start."""
        index, _ = self.support_index(direction, start_index)
        return self.vertices[index].astype(direction.dtype)

    def may_curve(self):
        return False

    def core_feature(self, direction, relative_tolerance):
        return vertex_set_feature(self.vertices, None, direction, relative_tolerance)

    def center(self):
        return jnp.mean(self.vertices, axis=0)

    def reach(self):
        return jnp.sqrt(jnp.max(jnp.sum(self.vertices**2, axis=-1)))

    def is_valid(self):
        count = self.vertices.shape[0]
        in_range = (jnp.all(self.neighbors < count) & jnp.all(self.neighbors >= -1)
                    & jnp.all(self.starts >= 0) & jnp.all(self.starts < count))
        return jnp.all(jnp.isfinite(self.vertices)) & in_range

    def check(self, name):
        check_array(f"{name}.vertices", self.vertices, (None, 3))
        count = np.shape(self.vertices)[0]
        for field, shape in (("neighbors", (count, None)), ("starts", (None,))):
            value = getattr(self, field)
            if not jnp.issubdtype(jnp.result_type(value), jnp.integer):
                raise TypeError(f"{name}.{field} must be an integer array, got {jnp.result_type(value)}")
            check_array(f"{name}.{field}", value, shape)
