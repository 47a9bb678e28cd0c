"""One query's primal solution, in named stages (A's frame until the last one).

1. `prepare`: one dtype, run-time validity, invalid inputs replaced by finite ones, B placed in A's frame.
2. a contact of the cores: from a specialised solver where the pair's kinds have one (`_colliders`),
   else `gjk_contact` (GJK) and, for signed queries, `epa_contact` where the cores overlap, then
3. `refined_contact`: Newton steps on the normal where a curved core holds the contact (`_refine`).
4. `world_result`: the margins, the world frame, the final status, the closest features, and the
   documented placeholders for invalid input.

`solve` runs them in order (`core_contact` is stage 2 before EPA, `finished` stages 3 and 4);
`solve_signed_rows` runs them on rows of pairs with EPA gathered onto the overlapping ones. The tangent
rule (`_tangent`) differentiates the final contact's simplex.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from . import _scalar_pairs as scalar_pairs
from ._checks import float_leaves
from ._closest import safe_ratio
from ._colliders import (
    bounded,
    for_mode,
    has_solver,
    is_half_space,
    packed_half_space_contact,
    separation_bound,
    specialised_contact,
)
from ._contact import Contact, NormalKind, QueryMode, simplex_witnesses
from ._dataclass import pytree_dataclass
from ._epa import EPAResult, epa
from ._features import FeatureDim, feature_without_vertices
from ._gate import update_rows, where_active
from ._gjk import GJKState, gjk
from ._minkowski import RelativePair
from ._packed import on_both
from ._pose import Pose, normalized_quaternion
from ._refine import nearest_side_direction, refine
from ._result import STALLED_ACROSS, Config, DistanceResult, Simplex, Status
from ._shapes import Shape
from ._tolerance import (
    CPU_EPA_CHUNK,
    CPU_GJK_CHUNK,
    CPU_INTERSECT_CHUNK,
    EPA_FLAT_GAP_ROUNDINGS,
    epsilon,
    float_dtype,
    touching_resolution,
)
from ._vector import computed_once, dot, first_argmax, largest_abs, matmul, matvec, select, unit_vector


def cast(tree, dtype):
    """Floating leaves of `tree` as `dtype` arrays; integer and bool leaves and float0 tangents kept."""
    def cast_leaf(leaf):
        if getattr(leaf, "dtype", None) == jax.dtypes.float0:
            return leaf
        leaf = jnp.asarray(leaf)
        return leaf.astype(dtype) if jnp.issubdtype(leaf.dtype, jnp.floating) else leaf

    return jax.tree_util.tree_map(cast_leaf, tree)


@pytree_dataclass
class Prepared:
    """The inputs of one pair, ready for the solvers.

    Fields:
        shape_a, pose_a, shape_b, pose_b: cast to one float dtype; zeroed where the input is invalid.
        pair: the two shapes with B placed in A's frame.
        is_valid: () bool, the input was valid (finite, unit-normalisable rotations, valid shapes).
        scale: () the pair's scale: the largest of B's offset from A and the shapes' reach, the
            magnitude of the numbers the solvers work with (`_tolerance.touching_resolution`).
    """

    shape_a: Shape
    pose_a: Pose
    shape_b: Shape
    pose_b: Pose
    pair: RelativePair
    is_valid: jnp.ndarray
    scale: jnp.ndarray

    @property
    def dtype(self):
        return self.pair.translation.dtype


@pytree_dataclass
class Solution:
    """Primal solution with what the tangent rule needs (all arrays, one pair).

    Fields:
        result: the `DistanceResult`.
        normal_kind: () int32 `NormalKind` of the result's normal.
        tangent_scale: () 1 where the distance varies with the inputs, else 0.
        normal_response: (3, 3) world-frame `Refinement.response` (`NormalKind.SMOOTH`); None where the
            pair is never refined (`refines`), so the tangent rule skips the smooth branch.
    """

    result: DistanceResult
    normal_kind: jnp.ndarray
    tangent_scale: jnp.ndarray
    normal_response: jnp.ndarray | None


def _all_finite(tree):
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(leaf)) for leaf in float_leaves(tree)]))


def _sanitize(tree, is_valid):
    """Zero every float leaf of `tree` where the input is invalid, so the loops run on finite data."""
    def clean(leaf):
        return leaf if leaf.dtype == jnp.bool_ else jnp.where(is_valid, leaf, 0)

    return jax.tree_util.tree_map(clean, tree)


def prepare(shape_a, pose_a, shape_b, pose_b) -> Prepared:
    """Cast to one dtype, check run-time validity, sanitize, and place B in A's frame."""
    dtype = float_dtype(*float_leaves((shape_a, pose_a, shape_b, pose_b)))
    shape_a, pose_a, shape_b, pose_b = cast((shape_a, pose_a, shape_b, pose_b), dtype)
    _, rotation_a_ok = normalized_quaternion(pose_a.rotation)
    _, rotation_b_ok = normalized_quaternion(pose_b.rotation)
    shapes_valid = (_all_finite((shape_a, shape_b)) & shape_a.is_valid() & shape_b.is_valid()
                    & ~(is_half_space(shape_a) & is_half_space(shape_b)))
    is_valid = shapes_valid & _all_finite((pose_a, pose_b)) & rotation_a_ok & rotation_b_ok
    # The shapes by their own validity: shapes shared by a batch of poses (a robot's hulls under a vmap
    # over configurations) then stay unbatched, not copied for every pose.
    shape_a, shape_b = _sanitize((shape_a, shape_b), shapes_valid)
    pose_a, pose_b = _sanitize((pose_a, pose_b), is_valid)
    rotation_a = pose_a.rotation_matrix()
    rotation_b = pose_b.rotation_matrix()
    # `@`, not `_vector.matvec`: every program that prepares a pair must round its pose alike.
    pair = RelativePair(shape_a, shape_b, rotation_a.T @ rotation_b,
                        rotation_a.T @ (pose_b.translation - pose_a.translation))
    scale = jnp.maximum(jnp.maximum(shape_a.reach(), shape_b.reach()).astype(dtype),
                        largest_abs(pair.translation))
    return Prepared(shape_a, pose_a, shape_b, pose_b, pair, is_valid, scale)


def _touch_normal(pair: RelativePair, simplex: Simplex):
    """The normal (3,) of cores that GJK found touching at a point of D: the support direction that
    found that point (D touches the origin there, so it is the direction in which the cores part),
    else the centres' direction, else +z."""
    dtype = pair.translation.dtype
    touch = unit_vector(simplex.directions_a[first_argmax(simplex.mask)])
    fallback = unit_vector(pair.center())
    fallback = jnp.where(jnp.any(fallback != 0), fallback, jnp.array([0, 0, 1], dtype))
    return jnp.where(jnp.any(touch != 0), touch, fallback)


def _off_edge(state: GJKState) -> jnp.ndarray:
    """GJK's v (3,), less its component along the simplex where that is an edge of D. v is then the
    projection of the origin onto the edge's line, exactly perpendicular to it, and the computed v's
    component along it is the rounding of the projection's parameter times the edge's length: it tilts
    the normal out of the edge's normal cone by that over |v| (float32, |v| 1e-3 of the size: 1.6e-4 rad,
    a separation along the normal 2e-4 of the size short)."""
    points, mask = state.points, state.mask
    edge = points[3 - first_argmax(mask[::-1])] - points[first_argmax(mask)]
    along = safe_ratio(dot(state.closest, edge), dot(edge, edge))
    return jnp.where(jnp.sum(mask) == 2, state.closest - along * edge, state.closest)


def gjk_contact(config: Config, mode: QueryMode, prepared: Prepared, warm_start,
                distance_upper_bound) -> Contact:
    """GJK on the cores. Overlapping cores give distance 0 and status INTERSECTING."""
    pair, dtype = prepared.pair, prepared.dtype
    margin = prepared.shape_a.margin() + prepared.shape_b.margin()
    if mode is QueryMode.INTERSECT:
        # Stop as soon as the cores are within the margins, to `world_result`'s rule for touching, or
        # proven apart beyond it: GJK's lower bound v·w/|v| carries the rounding of v's direction (float32
        # rim contacts: twice the resolution), so it proves a gap only beyond a few resolutions; below
        # that GJK runs on to the verdict `distance` reaches on the same iterates.
        resolution = touching_resolution(prepared.scale)
        separation_bound, contact_bound = margin + 4 * resolution, margin + resolution
    else:
        bound = jnp.inf if distance_upper_bound is None else distance_upper_bound
        separation_bound, contact_bound = bound + margin, -jnp.inf
    state = gjk(pair, max_iterations=config.max_gjk_iterations,
                tolerance=config.gjk_tolerance,
                separation_bound=separation_bound, contact_bound=contact_bound,
                warm_start=None if warm_start is None else cast(warm_start, dtype))
    simplex = state.simplex()
    norm = jnp.linalg.norm(state.closest)
    # Only signed queries run EPA, which settles a stall across the origin's plane; elsewhere it is apart.
    status = state.status if mode is QueryMode.SIGNED else jnp.where(
        state.status == STALLED_ACROSS, Status.SEPARATED, state.status)
    overlap = status == Status.INTERSECTING
    distance = select([overlap, status == Status.BOUND_EXCEEDED], [0, state.lower_bound], norm)
    normal = jnp.where(overlap & (norm == 0), _touch_normal(pair, simplex), unit_vector(_off_edge(state)))
    point_a, point_b = simplex_witnesses(simplex)
    return Contact(distance, normal, simplex, point_a, point_b, status, state.iterations,
                   jnp.where(norm > 0, NormalKind.FROM_CLOSEST, NormalKind.FIXED),
                   ((status == Status.SEPARATED) | (status == STALLED_ACROSS)) & (norm > 0))


def _may_overlap(contact: Contact):
    """() bool: GJK's contact leaves the depth to EPA (the cores overlap, or GJK stalled across)."""
    return (contact.status == Status.INTERSECTING) | (contact.status == STALLED_ACROSS)


def _point_simplex(point) -> Simplex:
    """A one-point `Simplex` holding the `SupportPoint` `point`."""
    def first_slot(leaf):
        return jnp.zeros((4,) + leaf.shape, leaf.dtype).at[0].set(leaf)

    return Simplex(first_slot(point.direction_a), first_slot(point.direction_b), first_slot(point.point_a),
                   first_slot(point.point_b), jnp.zeros(4, point.point.dtype).at[0].set(1),
                   jnp.arange(4) == 0)


def _with_side_plane(pair: RelativePair, found: EPAResult) -> EPAResult:
    """`found`, where EPA ran out of steps, with the support plane along `nearest_side_direction` of its
    best normal where that plane is nearer. On a circle of deepest directions (a shape centred on a
    cylinder's axis) EPA's steps end off the circle, and where the refinement does not take the
    normal there (a needle box along the axis, whose tiny face the one-point simplex does not hold)
    that side's plane was up to 7.4e-4 of the size nearer than EPA's best."""
    side = nearest_side_direction(pair, found.best_normal)
    support = pair.support(side)
    distance = jnp.dot(side, support.point)
    nearer = (found.status == Status.MAX_ITERATIONS) & (distance < found.upper_bound)
    return dataclasses.replace(
        found, upper_bound=jnp.where(nearer, distance, found.upper_bound),
        best=jax.tree_util.tree_map(lambda new, old: jnp.where(nearer, new, old), support, found.best),
        best_normal=jnp.where(nearer, side, found.best_normal))


def epa_contact(config: Config, prepared: Prepared, contact: Contact) -> Contact:
    """The penetration depth of overlapping cores by EPA, from GJK's contact; where GJK stalled across
    the origin's plane, EPA's depth if it proves one, else GJK's contact."""
    pair, dtype = prepared.pair, prepared.dtype
    simplex = contact.simplex
    overlap = contact.status == Status.INTERSECTING
    across = contact.status == STALLED_ACROSS
    run_epa = _may_overlap(contact) & (jnp.sum(simplex.mask) >= 2)
    found = _with_side_plane(pair, epa(pair, simplex, max_iterations=config.max_epa_iterations,
                                       tolerance=config.epa_tolerance, active=run_epa))
    # The depth lies between the nearest face's distance and the least support-plane distance
    # seen, `upper_bound`, whose direction and support point give a translation that does separate
    # the cores, with witness points on the surfaces. Where EPA ran out of steps, they are the
    # answer (the nearest face's normal can be far off then). Where it converged on a curved
    # surface (a gap left) or stopped on rounding (DEGENERATE), they are more accurate than the
    # face (its normal is only good to √gap) and give the values, while the face, which moves
    # with the shapes, gives the tangents.
    # Converged on polytopes (no gap), the face is exact and its witness points central.
    stopped_short = (found.status == Status.MAX_ITERATIONS) & jnp.isfinite(found.upper_bound)
    rounding = EPA_FLAT_GAP_ROUNDINGS * epsilon(dtype) * found.size
    gap = found.upper_bound - found.face_distance
    curved_gap = (found.status == Status.PENETRATING) & (gap > rounding)
    degenerate = (found.status == Status.DEGENERATE) & jnp.isfinite(found.upper_bound)
    use_best = run_epa & (stopped_short | curved_gap | degenerate)
    face_simplex = jax.tree_util.tree_map(
        lambda best, face: jnp.where(stopped_short, best, face), _point_simplex(found.best), found.face)
    depth = jnp.maximum(jnp.where(use_best, found.upper_bound, found.face_distance), 0)
    face_normal = jnp.where(use_best, found.best_normal, found.face_normal)
    # EPA found D flat (a segment through the origin): depth 0 like a touching pair, GJK's simplex
    # gives the points, EPA the normal.
    flat = run_epa & (found.status == Status.INTERSECTING)
    touch_normal = jnp.where(flat, -face_normal, _touch_normal(pair, simplex))
    expanded = run_epa & ~flat
    touching = overlap & ~expanded
    simplex = jax.tree_util.tree_map(lambda face, gjk_leaf: jnp.where(expanded, face, gjk_leaf),
                                     face_simplex, simplex)
    point_a, point_b = simplex_witnesses(simplex)
    from_best = use_best & expanded
    found_contact = Contact(
        distance=select([expanded, touching], [-depth, 0], contact.distance),
        normal=select([expanded, touching], [-face_normal, touch_normal], contact.normal),
        simplex=simplex,
        point_a=jnp.where(from_best, found.best.point_a, point_a),
        point_b=jnp.where(from_best, found.best.point_b, point_b),
        status=jnp.where(run_epa, found.status, contact.status),
        iterations=contact.iterations + jnp.where(run_epa, found.iterations, 0),
        normal_kind=select([expanded & ~stopped_short, overlap],
                               [NormalKind.FROM_FACE, NormalKind.FIXED], contact.normal_kind),
        refinable=contact.refinable | expanded,
    )
    # A nearest face beyond EPA's tolerance puts the origin inside the polytope, so within D.
    proven = expanded & (found.face_distance > config.epa_tolerance * found.size)
    apart = across & ~proven
    return jax.tree_util.tree_map(lambda gjk_leaf, epa_leaf: jnp.where(apart, gjk_leaf, epa_leaf),
                                  dataclasses.replace(contact, status=jnp.full_like(contact.status,
                                                                                    Status.SEPARATED)),
                                  found_contact)


def refines(config: Config, mode: QueryMode, shape_a, shape_b) -> bool:
    """Whether `_refine` can run for this query (trace time): a curved core may hold the contact. Also
    for `intersect`: where GJK converges without deciding (a gap within its tolerance of the touching
    resolution), the refined distance decides, as it does for `distance`, so the two agree."""
    return config.refine_normal and (
        shape_a.may_curve() or shape_b.may_curve())


def _in_world(pose_a: Pose, response):
    """A normal's response (3, 3) from A's frame to the world frame: R response Rᵀ."""
    rotation = pose_a.rotation_matrix()
    return matmul(matmul(rotation, response), rotation.T)


def refined_contact(config: Config, mode: QueryMode, prepared: Prepared, contact: Contact):
    """The contact with its normal refined where a curved core holds it (`_refine`), and the normal's
    response (3, 3), world frame (None where the pair is never refined)."""
    if not refines(config, mode, prepared.shape_a, prepared.shape_b):
        return contact, None
    refinement = refine(prepared.pair, contact.normal, contact.simplex,
                        config.feature_tolerance,
                        prepared.is_valid & contact.refinable, contact.status == Status.MAX_ITERATIONS)
    accepted = refinement.accepted
    point_a, point_b = simplex_witnesses(refinement.simplex)
    # Where the loops found the cores overlapping, a refined g above 0 is a touching contact that GJK
    # resolved the other way (float32 rounding); `distance` and `intersect`, which do not refine an
    # overlap, report it as touching, and so does this.
    signed = jnp.where(contact.distance <= 0, jnp.minimum(refinement.signed, 0), refinement.signed)
    refined = Contact(
        distance=jnp.where(accepted, signed, contact.distance),
        normal=refinement.normal,
        simplex=refinement.simplex,
        point_a=jnp.where(accepted, point_a, contact.point_a),
        point_b=jnp.where(accepted, point_b, contact.point_b),
        status=contact.status,
        iterations=contact.iterations,
        normal_kind=select([refinement.smooth, accepted], [NormalKind.SMOOTH, NormalKind.FROM_CLOSEST],
                               contact.normal_kind),
        refinable=contact.refinable,
    )
    return refined, _in_world(prepared.pose_a, refinement.response)


def world_result(config: Config, mode: QueryMode, prepared: Prepared, contact: Contact):
    """The `DistanceResult` (world frame, margins added) and the tangent scale () of `contact`."""
    shape_a, pose_a, shape_b, pose_b = prepared.shape_a, prepared.pose_a, prepared.shape_b, prepared.pose_b
    dtype, is_valid = prepared.dtype, prepared.is_valid
    signed = contact.distance - (shape_a.margin() + shape_b.margin())
    # Touching: a distance within the rounding of the pair's scale has no reliable sign; all three
    # queries report it as 0 (so `intersect` agrees with the others whichever program rounds).
    signed = jnp.where(jnp.abs(signed) <= touching_resolution(prepared.scale), 0, signed)
    status = contact.status
    if mode is QueryMode.SIGNED:
        # A settled status follows the sign of the final distance: rounded shapes whose cores are apart
        # or touch can still overlap (penetration known exactly), and touching (distance 0) counts as
        # intersecting, whichever solver found it.
        settled = (status == Status.SEPARATED) | (status == Status.INTERSECTING) | (
            status == Status.PENETRATING)
        by_sign = select([signed > 0, signed < 0], [Status.SEPARATED, Status.PENETRATING],
                             Status.INTERSECTING)
        status = jnp.where(settled, by_sign, status)
    normal = matvec(pose_a.rotation_matrix(), contact.normal)
    point_a = pose_a.apply(contact.point_a) + shape_a.margin() * normal
    point_b = pose_b.apply(contact.point_b) - shape_b.margin() * normal
    tangent_scale = jnp.ones((), dtype)
    has_features = is_valid
    if mode is not QueryMode.SIGNED:
        # Every output reads it (the features through `has_features`): computed once, not copied with
        # the whole contact into each (`_scalar_pairs.solve`; here 0.1-0.5 s less compile).
        overlapping = computed_once(signed <= 0)
        has_features = has_features & ~overlapping
        status = jnp.where(overlapping & (status == Status.SEPARATED), Status.INTERSECTING, status)
        middle = (point_a + point_b) / 2
        point_a = jnp.where(overlapping, middle, point_a)
        point_b = jnp.where(overlapping, middle, point_b)
        tangent_scale = jnp.where(overlapping, 0, tangent_scale)
        signed = jnp.maximum(signed, 0)

    feature_tol = config.feature_tolerance
    no_feature = feature_without_vertices(FeatureDim.NONE)
    feature_a, feature_b = (
        jax.tree_util.tree_map(lambda held, none: jnp.where(has_features, held, none), feature, no_feature)
        for feature in on_both(lambda shape, direction: shape.feature(direction, feature_tol), shape_a,
                               (contact.normal,), shape_b, (-prepared.pair.rotation.T @ contact.normal,)))

    # Invalid input: documented placeholders.
    zeros3 = jnp.zeros(3, dtype)
    result = DistanceResult(
        distance=jnp.where(is_valid, signed, 0).astype(dtype),
        point_a=jnp.where(is_valid, point_a, zeros3),
        point_b=jnp.where(is_valid, point_b, zeros3),
        normal=jnp.where(is_valid, normal, jnp.array([0, 0, 1], dtype)),
        status=jnp.where(is_valid, status, Status.INVALID_INPUT).astype(jnp.int32),
        iterations=jnp.where(is_valid, contact.iterations, 0).astype(jnp.int32),
        simplex=contact.simplex,
        feature_a=feature_a,
        feature_b=feature_b,
    )
    return result, jnp.where(is_valid, tangent_scale, 0).astype(dtype)


def core_contact(config: Config, mode: QueryMode, prepared: Prepared, warm_start, distance_upper_bound):
    """The cores' contact before EPA, the `Prepared` the loops run on, and the normal's response.

    A specialised solver's contact where the pair's kinds have one (final, with loops None: no EPA and
    no refinement follow; its response (3, 3) world frame, or None), else GJK's (response None).
    """
    margin = prepared.shape_a.margin() + prepared.shape_b.margin()
    specialised = specialised_contact(config.specialised, prepared.pair, touching_resolution(prepared.scale))
    if specialised is not None:
        contact, response = specialised
        if response is not None:
            response = _in_world(prepared.pose_a, response)
        return for_mode(contact, mode, margin, distance_upper_bound), None, response
    loops = dataclasses.replace(prepared, pair=bounded(prepared.pair))
    return gjk_contact(config, mode, loops, warm_start, distance_upper_bound), loops, None


def finished(config: Config, mode: QueryMode, prepared: Prepared, loops: Prepared | None, contact: Contact,
             response, distance_upper_bound) -> Solution:
    """The `Solution` from the cores' final contact (after EPA) and `core_contact`'s response:
    refinement and half-spaces where the loops ran (`loops` not None), then `world_result`."""
    if loops is not None:
        contact, response = refined_contact(config, mode, loops, contact)
        half_spaces = packed_half_space_contact(prepared.pair)
        if half_spaces is not None:
            lanes, half_space = half_spaces
            margin = prepared.shape_a.margin() + prepared.shape_b.margin()
            half_space = for_mode(half_space, mode, margin, distance_upper_bound)
            contact = jax.tree_util.tree_map(lambda x, y: jnp.where(lanes, x, y), half_space, contact)
    result, tangent_scale = world_result(config, mode, prepared, contact)
    return Solution(result, contact.normal_kind.astype(jnp.int32), tangent_scale, response)


def solve(config: Config, mode: QueryMode, shape_a, pose_a, shape_b, pose_b, warm_start,
          distance_upper_bound) -> Solution:
    """The primal solution of one query on one pair (the stages above, in order; spheres and capsules
    against each other, and spheres against boxes, run them on per-pair scalars, `_scalar_pairs`)."""
    if scalar_pairs.handles(config, shape_a, shape_b):
        return scalar_pairs.solve(config, mode, shape_a, pose_a, shape_b, pose_b, distance_upper_bound)
    prepared = prepare(shape_a, pose_a, shape_b, pose_b)
    config = config.resolved(prepared.dtype)
    contact, loops, response = core_contact(config, mode, prepared, warm_start, distance_upper_bound)
    if loops is not None and mode is QueryMode.SIGNED:
        if jax.default_backend() == "cpu":
            # Under `vmap`, EPA runs on the overlapping lanes only, CPU_EPA_CHUNK at a time.
            contact = where_active(_may_overlap(contact),
                                   lambda operands: epa_contact(config, *operands), (loops, contact),
                                   contact, CPU_EPA_CHUNK)
        else:
            contact = epa_contact(config, loops, contact)
    return finished(config, mode, prepared, loops, contact, response, distance_upper_bound)


def overlaps(config: Config, shape_a, pose_a, shape_b, pose_b):
    """`intersect`'s answer () bool for one pair: `solve`'s INTERSECT result is touching or overlapping,
    for valid input.

    On the CPU most pairs skip the solvers: a lower bound of the distance decides them. Along the unit
    u from A's origin to B's, the cores are apart by at least their separation ``min over D of u·x``
    (one support point of each; GJK's first step, `_gjk._initial_state`, takes the same), and two
    boxes by at least the largest separation over their separating axes (`separation_bound`), which
    is also ≤ 0 iff they overlap. `world_result` reads the shapes as apart iff their signed distance
    exceeds `resolution` (`touching_resolution`); a bound above the margins by twice that, or cores
    deeper than it, decide the answer beyond the bounds' few roundings. Half-spaces have no bounded
    support: their pairs (and packed lanes) are not decided so. Under `vmap` the other pairs run the
    solvers, gathered a group at a time (`_gate.where_active`, `CPU_INTERSECT_CHUNK` or
    `CPU_GJK_CHUNK`): in a batch of apart pairs, the solvers may not run at all. The other closed
    forms (`_scalar_pairs`, `has_solver`) run on every pair, without a bound.
    """
    def answer(result: DistanceResult):
        return (result.status != Status.INVALID_INPUT) & (result.distance <= 0)

    prepared = prepare(shape_a, pose_a, shape_b, pose_b)
    axes_gap = separation_bound(config.specialised, prepared.pair)
    # The closed forms but two boxes' cost less than gathering the pairs that a bound leaves undecided.
    closed_form = (scalar_pairs.handles(config, shape_a, shape_b)
                   or has_solver(config.specialised, shape_a, shape_b))
    if (closed_form and axes_gap is None) or jax.default_backend() != "cpu":
        return answer(solve(config, QueryMode.INTERSECT, shape_a, pose_a, shape_b, pose_b, None, None).result)

    def exact(prepared):
        resolved = config.resolved(prepared.dtype)
        contact, loops, response = core_contact(resolved, QueryMode.INTERSECT, prepared, None, None)
        solution = finished(resolved, QueryMode.INTERSECT, prepared, loops, contact, response, None)
        return answer(solution.result)

    pair, resolution = prepared.pair, touching_resolution(prepared.scale)
    margin = prepared.shape_a.margin() + prepared.shape_b.margin()
    bounded_shapes = ~is_half_space(prepared.shape_a) & ~is_half_space(prepared.shape_b)
    along = unit_vector(pair.translation)
    along = jnp.where(jnp.any(along != 0), along, jnp.eye(3, dtype=along.dtype)[0])
    centres_gap = dot(along, bounded(pair).support(-along, packed_once=True).point)
    apart = bounded_shapes & (centres_gap - margin > 2 * resolution)
    overlapping, capacity = jnp.zeros((), bool), CPU_GJK_CHUNK
    if axes_gap is not None:
        apart = apart | (axes_gap - margin > 2 * resolution)
        overlapping, capacity = axes_gap <= -resolution, CPU_INTERSECT_CHUNK
    decided = computed_once(apart | overlapping)
    return where_active(~decided, exact, prepared, prepared.is_valid & overlapping, capacity)


def solve_signed_rows(config: Config, shapes_a, poses_a, shapes_b, poses_b, epa_capacity: int) -> Solution:
    """`solve` of the signed query on T pairs (leading axis T on every input leaf), with EPA run on the
    overlapping pairs only, gathered `epa_capacity` at a time (`_gate.update_rows`).

    Under `vmap` EPA's loops run for every lane of the batch as long as any lane needs them; here only
    the overlapping pairs take lanes, so a batch where a few pairs of many overlap (a robot's pairs at
    one configuration) pays EPA for `epa_capacity` lanes, not T. Same results as `vmap(solve)`.
    Returns the `Solution` with leading axis T.
    """
    if scalar_pairs.handles(config, shapes_a, shapes_b):
        return jax.vmap(lambda *pair: scalar_pairs.solve(config, QueryMode.SIGNED, *pair, None))(
            shapes_a, poses_a, shapes_b, poses_b)
    prepared = jax.vmap(prepare)(shapes_a, poses_a, shapes_b, poses_b)
    config = config.resolved(prepared.dtype)
    contact, loops, response = jax.vmap(
        lambda p: core_contact(config, QueryMode.SIGNED, p, None, None))(prepared)
    if loops is not None:
        contact = update_rows(_may_overlap(contact),
                              jax.vmap(lambda operands: epa_contact(config, *operands)), (loops, contact),
                              contact, epa_capacity)
    return jax.vmap(lambda *stages: finished(config, QueryMode.SIGNED, *stages, None))(prepared, loops,
                                                                                      contact, response)
