"""Mixed kinds of primitives in one pytree, so one compiled kernel serves a heterogeneous batch."""

from __future__ import annotations

import dataclasses
import functools
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from ._checks import check_array
from ._dataclass import pytree_dataclass, static_field
from ._shapes import Box, Capsule, Cone, Cylinder, Ellipsoid, HalfSpace, Polytope, Shape, Sphere
from ._tolerance import float_dtype
from ._vector import select

# Where each kind keeps its fields in `Packed`: the kind's field name → the packed field. A kind's
# index in `KINDS` is its `Packed.kind` code; fields a kind does not use stay zero.
KIND_FIELDS = {
    Sphere: {"radius": "radius"},
    Capsule: {"radius": "radius", "half_length": "height"},
    Box: {"half_extents": "extents"},
    Cylinder: {"radius": "radius", "half_length": "height"},
    Cone: {"radius": "radius", "half_height": "height"},
    Ellipsoid: {"radii": "extents"},
    Polytope: {"vertices": "vertices", "mask": "mask"},
    HalfSpace: {},
}
KINDS = tuple(KIND_FIELDS)
ALL_KINDS = tuple(range(len(KINDS)))
SPHERE, HALF_SPACE = KINDS.index(Sphere), KINDS.index(HalfSpace)


@pytree_dataclass
class Packed(Shape):
    """One primitive of any kind in `KINDS`, selected by `kind` (its index there).

    A packed half-space is solved in closed form like a `HalfSpace` (`_colliders`); a lane pairing two
    half-spaces is INVALID_INPUT (it has no bounded support to measure).

    Every support call evaluates each kind in `kinds` and selects the lane's: a batch compiles and runs
    only the kinds it may hold (`pack` records the kinds present). A lane whose `kind` is not in
    `kinds` is INVALID_INPUT.

    Fields (the ones a kind does not use are zero):
        kind: () int32 index into `KINDS`.
        radius: () Sphere, Capsule, Cylinder and Cone radius.
        height: () Capsule and Cylinder half_length, Cone half_height.
        extents: (3,) Box half_extents, Ellipsoid radii.
        vertices: (P, 3) Polytope vertices, padded; mask: (P,) bool.
        kinds: static, the sorted indices into `KINDS` that lanes may hold (default: all of them).
    """

    kind: jnp.ndarray
    radius: jnp.ndarray
    height: jnp.ndarray
    extents: jnp.ndarray
    vertices: jnp.ndarray
    mask: jnp.ndarray
    kinds: tuple = static_field(default=ALL_KINDS)
    KINDS: ClassVar[tuple] = KINDS  # the primitive classes a `Packed` lane can hold, in code order

    def primitives(self) -> tuple:
        """The packed parameters read as each kind in `KINDS` (only `kind`'s entry is meaningful)."""
        return tuple(kind(**{name: getattr(self, packed) for name, packed in fields.items()})
                     for kind, fields in KIND_FIELDS.items())

    def is_half_space(self):
        """() bool: this lane holds a half-space (False at trace time where `kinds` has none)."""
        return self.kind == HALF_SPACE if HALF_SPACE in self.kinds else False

    def bounded(self) -> Packed:
        """The same shapes with every half-space read as a point at its origin (a zero-radius sphere),
        so that the loops, which a packed support always runs for every lane, see a bounded shape
        there; `_colliders` solves those lanes."""
        if HALF_SPACE not in self.kinds:
            return self
        return dataclasses.replace(self, kind=jnp.where(self.is_half_space(), SPHERE, self.kind),
                                   radius=jnp.where(self.is_half_space(), 0, self.radius),
                                   kinds=tuple(sorted(set(self.kinds) | {SPHERE})))

    def may_curve(self):
        primitives = self.primitives()
        return any(primitives[kind].may_curve() for kind in self.kinds)

    def per_kind(self, function):
        """`function(primitive)` (a pytree) for the lane's kind: evaluated for every kind in `kinds`,
        then selected. What `lax.switch` lowers to under `vmap` anyway; a switch would break
        `grad(vmap(...))`: its batching rule wraps the operands in stop_gradient, which has no
        transpose, and our custom JVP's tangent rule evaluates support mappings (jax issues #22011,
        #39219). A lane of a kind outside `kinds` gets the last kind's answer (`is_valid` is False)."""
        primitives = self.primitives()
        answers = [function(primitives[kind]) for kind in self.kinds]
        dtype = self.dtype()

        def pick(*leaves):
            # In the fields' dtype: a half-space has no fields, so its answers take JAX's default.
            if jnp.issubdtype(leaves[0].dtype, jnp.floating):
                leaves = [leaf.astype(dtype) for leaf in leaves]
            return select([self.kind == kind for kind in self.kinds[:-1]], leaves[:-1], leaves[-1])

        return jax.tree_util.tree_map(pick, *answers)

    def _dispatch(self, method, *args):
        static = tuple(i + 1 for i, arg in enumerate(args) if isinstance(arg, (bool, int, float)))
        kind_method = _kind_method(method, static)
        return self.per_kind(lambda primitive: kind_method(primitive, *args))

    def core_support(self, direction):
        return self._dispatch("core_support", direction)

    def core_support_near(self, direction, hint):
        return self._dispatch("core_support_near", direction, hint)

    def core_feature(self, direction, relative_tolerance):
        return self._dispatch("core_feature", direction, relative_tolerance)

    def polyhedral_core(self):
        return self._dispatch("polyhedral_core")

    def core_ruling(self, direction, relative_tolerance):
        return self._dispatch("core_ruling", direction, relative_tolerance)

    def core_side_normals(self):
        return self._dispatch("core_side_normals")

    def margin(self):
        return self._dispatch("margin")

    def center(self):
        return self._dispatch("center")

    def reach(self):
        return self._dispatch("reach")

    def is_valid(self):
        return jnp.isin(self.kind, jnp.asarray(self.kinds)) & self._dispatch("is_valid")

    def check(self, name):
        if (not isinstance(self.kinds, tuple) or not self.kinds
                or list(self.kinds) != sorted(set(self.kinds)) or not set(self.kinds) <= set(ALL_KINDS)):
            raise ValueError(f"{name}.kinds must be a sorted tuple of distinct indices into KINDS "
                             f"(0..{len(KINDS) - 1}), got {self.kinds!r}")
        check_array(f"{name}.kind", jnp.asarray(self.kind, jnp.float32), ())
        check_array(f"{name}.radius", self.radius, ())
        check_array(f"{name}.height", self.height, ())
        check_array(f"{name}.extents", self.extents, (3,))
        check_array(f"{name}.vertices", self.vertices, (None, 3))
        check_array(f"{name}.mask", self.mask, (np.shape(self.vertices)[0],), floating=False)


def _packed_row(shape: Shape, size: int) -> dict:
    """`shape`'s fields as one row of `Packed`'s (NumPy), vertex rows padded to `size`."""
    row = dict(kind=KINDS.index(type(shape)), radius=0.0, height=0.0, extents=np.zeros(3),
               vertices=np.zeros((size, 3)), mask=np.zeros(size, bool))
    for name, packed in KIND_FIELDS[type(shape)].items():
        value = getattr(shape, name)
        if packed in ("vertices", "mask"):  # padded rows
            count = np.shape(shape.vertices)[0]
            row[packed][:count] = True if value is None else np.asarray(value)
        else:
            row[packed] = np.asarray(value)
    return row


def pack(shapes, *, num_vertices: int | None = None, dtype=None, kinds=None) -> Packed:
    """Stack primitives of mixed kinds into one batched `Packed` shape (leading axis: len(shapes)).

    Args:
        shapes: a sequence of Sphere, Capsule, Box, Cylinder, Cone, Ellipsoid, Polytope or HalfSpace
            (unbatched).
        num_vertices: padded vertex count P (default: the largest polytope's, at least 1).
        dtype: float dtype of the fields (default: promoted from the shapes).
        kinds: the shape classes the batch may hold (default: those in `shapes`). Its kernels
            evaluate these kinds only; batches with the same `kinds` (and P, dtype, batch size) share
            one compiled program (and only they stack into one pytree), so pass a fixed set when
            the kinds present change from call to call (`Packed.KINDS` for all of them).
    """
    shapes = list(shapes)
    for index, shape in enumerate(shapes):
        if type(shape) not in KINDS:
            raise TypeError(f"shapes[{index}]: pack takes primitives {[k.__name__ for k in KINDS]}, "
                            f"got {type(shape).__name__}")
        shape.check(f"shapes[{index}]")
    present = {KINDS.index(type(shape)) for shape in shapes}
    if kinds is not None:
        unknown = [kind for kind in kinds if kind not in KINDS]
        if unknown:
            raise TypeError(f"kinds: pack takes primitive classes {[k.__name__ for k in KINDS]}, "
                            f"got {unknown}")
        wanted = {KINDS.index(kind) for kind in kinds}
        missing = present - wanted
        if missing:
            raise ValueError(f"kinds leaves out {[KINDS[k].__name__ for k in sorted(missing)]}, which "
                             f"shapes holds")
        present = wanted
    polytope_sizes = [np.shape(s.vertices)[0] for s in shapes if isinstance(s, Polytope)]
    size = num_vertices or max(polytope_sizes, default=1)
    if polytope_sizes and max(polytope_sizes) > size:
        raise ValueError(f"num_vertices={size} is less than the largest polytope "
                         f"({max(polytope_sizes)} vertices)")
    if dtype is None:
        dtype = float_dtype(*[leaf for s in shapes for leaf in jax.tree_util.tree_leaves(s)
                              if jnp.result_type(leaf) != jnp.bool_])
    rows = [_packed_row(shape, size) for shape in shapes]

    def stack(key, leaf_dtype):
        return jnp.asarray(np.stack([np.asarray(row[key]) for row in rows]), leaf_dtype)

    return Packed(stack("kind", jnp.int32), stack("radius", dtype), stack("height", dtype),
                  stack("extents", dtype), stack("vertices", dtype), stack("mask", bool),
                  tuple(sorted(present)) or ALL_KINDS)


@functools.cache
def _kind_method(method: str, static_argnums: tuple[int, ...]):
    """``primitive.method(*args)``, traced once per kind and shape of its operands: a query's program
    calls a `Packed` batch's support mapping, features and fields at dozens of sites, each for every
    kind. `jax.jit` keeps the trace and `inline` puts its operations in the caller's program (results
    identical to the bit; tracing a mixed batch's queries takes a fifth less time). The Python numbers
    among `args` (tolerances) stay static, as they were when traced in place."""
    return jax.jit(lambda primitive, *args: getattr(primitive, method)(*args), inline=True,
                   static_argnums=static_argnums)


def on_both(function, shape_a, arguments_a, shape_b, arguments_b):
    """(function(shape_a, *arguments_a), function(shape_b, *arguments_b)), run once where both shapes
    are `Packed` batches of the same kinds (and the arguments alike): `vmap`ped over the two stacked,
    so that the compiled program holds every kind's operations once, not once per side. Other shapes
    run twice (a typed pair gains little compile from it and loses run time). A packed shape shared
    across a `vmap` (not batched) is copied into every lane for the call."""
    operands_a, operands_b = (shape_a, tuple(arguments_a)), (shape_b, tuple(arguments_b))
    leaves_a, tree_a = jax.tree_util.tree_flatten(operands_a)
    leaves_b, tree_b = jax.tree_util.tree_flatten(operands_b)
    if not (isinstance(shape_a, Packed) and tree_a == tree_b and all(
            jnp.shape(x) == jnp.shape(y) and jnp.result_type(x) == jnp.result_type(y)
            for x, y in zip(leaves_a, leaves_b, strict=True))):
        return function(shape_a, *arguments_a), function(shape_b, *arguments_b)

    def call(*leaves):
        shape, arguments = jax.tree_util.tree_unflatten(tree_a, leaves)
        return function(shape, *arguments)

    both = jax.vmap(call)(*[jnp.stack([x, y]) for x, y in zip(leaves_a, leaves_b, strict=True)])
    return (jax.tree_util.tree_map(lambda leaf: leaf[0], both),
            jax.tree_util.tree_map(lambda leaf: leaf[1], both))
