"""A per-iteration record of GJK for one pair, as plain JSON-serialisable Python data (debugging).

Nothing of GJK is re-implemented here: the public loop (`_gjk.gjk`) runs with iteration bounds
k = 1, 2, ..., n (a traced bound, so one compiled kernel serves every k), and the state it stops in is
the state after k support evaluations. The support point of iteration k is read from the simplex slot
GJK filled with it (so it is bit-for-bit GJK's own), its search direction from that point's record.
This relies on `gjk` accepting a traced ``max_iterations``.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from ._gjk import gjk
from ._minkowski import SupportPoint
from ._queries import checked_config, distance
from ._result import Config, Status
from ._solve import prepare

FEATURES = {1: "vertex", 2: "edge", 3: "face", 4: "tetrahedron"}
RUNNING_NAME = "RUNNING"  # the status shown before the last iteration
_distance = jax.jit(distance, static_argnames=("config",))


@functools.partial(jax.jit, static_argnames=("config",))
def _gjk_after(a, pose_a, b, pose_b, bound, config: Config):
    """GJK's state after at most `bound` () int32 support evaluations, and the next support query."""
    prepared = prepare(a, pose_a, b, pose_b)
    pair = prepared.pair
    state = gjk(pair, max_iterations=bound, tolerance=config.resolved(prepared.dtype).gjk_tolerance)
    return dict(
        is_valid=prepared.is_valid,
        margin=prepared.shape_a.margin() + prepared.shape_b.margin(),
        vertices=SupportPoint.unstacked(state.vertices, axis=1),
        mask=state.mask,
        weights=state.weights,
        closest=state.closest,
        lower_bound=state.lower_bound,
        iterations=state.iterations,
        status=state.status,
        next_support=pair.support(-state.closest),
    )


def _floats(x):
    return np.asarray(x, np.float64).tolist()


def _support_record(support, slot=None) -> dict:
    """The search direction (A's frame) and support point of `support` (row `slot` if given)."""
    if slot is not None:
        support = jax.tree_util.tree_map(lambda leaf: leaf[slot], support)
    # SupportPoint.direction_a is A's query direction, the negated search direction of B − A.
    return dict(direction=_floats(-support.direction_a), support=_floats(support.point),
                support_a=_floats(support.point_a), support_b=_floats(support.point_b))


def trace_distance(a, pose_a, b, pose_b, *, config: Config | None = None) -> dict:
    """Run `distance` on one pair and record every GJK iteration (debugging; not for use under jit).

    Args:
        a, b: shapes (no batch axes). pose_a, pose_b: their `Pose`s.
        config: as for `distance` (`Config()` if None).
    Returns:
        A dict of plain Python values (``json.dumps`` works):

        - ``"dtype"``: the dtype the query ran in ("float32" or "float64").
        - ``"frame"``: a note: simplex points, directions and support points are in A's local frame
          (``support_a`` in A's, ``support_b`` in B's local frame, both cores without margins).
        - ``"margin"``: the summed margins (ball radii) of the two shapes.
        - ``"iterations"``: one dict per support evaluation k = 1..n:

          - ``iteration``: k.
          - ``direction`` (3): the search direction, −v of the previous iteration (for k = 1 minus
            the difference of the centres), scaled by a power of two to a largest component in
            [1, 2) as the support query saw it.
          - ``support`` (3): the support point of B − A along it as GJK stored it, with the cores'
            points ``support_a`` and ``support_b``; ``accepted``: whether it entered the simplex (the
            rejected one, at the stopping test, is recomputed here: equal up to rounding).
          - ``simplex``: ``points`` (4, 3) of B − A, ``mask`` (4,), ``weights`` (4,) of v_k.
          - ``closest`` (3): v_k; ``closest_norm``: |v_k|, the core distance estimate.
          - ``simplex_size`` and ``feature``: "vertex", "edge", "face" or "tetrahedron".
          - ``lower_bound``, ``upper_bound``: bounds on the distance of the shapes,
            ``max(bound on the core distance − margin, 0)``; the upper bound uses the smallest |v|
            seen so far, so it never increases.
          - ``status``: "RUNNING" before the last iteration, then the final status name.
        - ``"result"``: the `distance` result: ``distance``, ``status`` (name), ``iterations``,
          ``point_a``, ``point_b``, ``normal`` (world frame).

        Invalid input gives an empty ``"iterations"`` list and status ``"INVALID_INPUT"``.
    """
    config = checked_config(config, a, pose_a, b, pose_b)
    result = jax.device_get(_distance(a, pose_a, b, pose_b, config=config))
    run = functools.partial(_gjk_after, a, pose_a, b, pose_b, config=config)
    final = jax.device_get(run(jnp.asarray(config.max_gjk_iterations, jnp.int32)))
    count = int(final["iterations"]) if bool(final["is_valid"]) else 0
    margin = float(final["margin"])

    records = []
    previous = None
    upper_core = np.inf
    for k in range(1, count + 1):
        state = final if k == count else jax.device_get(run(jnp.asarray(k, jnp.int32)))
        status = Status(int(state["status"])).name if k == count else RUNNING_NAME
        accepted = k == 1 or status not in (Status.SEPARATED.name, Status.BOUND_EXCEEDED.name)
        if accepted:  # the support point as GJK stored it: the first in slot 0, every later one in slot 3
            slot = 0 if previous is None else 3
            record = _support_record(state["vertices"], slot)
        else:  # rejected (the stopping test): recomputed, equal up to rounding
            record = _support_record(previous["next_support"])
        size = int(np.sum(state["mask"]))
        closest_norm = float(np.linalg.norm(state["closest"]))
        upper_core = min(upper_core, closest_norm)
        record.update(
            iteration=k,
            accepted=accepted,
            simplex=dict(points=_floats(state["vertices"].point), mask=np.asarray(state["mask"]).tolist(),
                         weights=_floats(state["weights"])),
            closest=_floats(state["closest"]),
            simplex_size=size,
            feature=FEATURES[size],
            closest_norm=closest_norm,
            lower_bound=max(float(state["lower_bound"]) - margin, 0.0),
            upper_bound=max(upper_core - margin, 0.0),
            status=status,
        )
        records.append(record)
        previous = state

    return dict(
        dtype=np.dtype(final["closest"].dtype).name,
        frame="A's local frame (support_a: A's local frame, support_b: B's local frame; cores)",
        margin=margin,
        iterations=records,
        result=dict(
            distance=float(result.distance),
            status=Status(int(result.status)).name,
            iterations=int(result.iterations),
            point_a=_floats(result.point_a),
            point_b=_floats(result.point_b),
            normal=_floats(result.normal),
        ),
    )
