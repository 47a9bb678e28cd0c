"""Operations on 3-vectors (row-wise ones written out per component, unit vectors), small matrix
products, and the index and choice operations (`first_argmax`, `select`) written for XLA.

XLA:CPU hands reductions over a short trailing axis and small matrix products to a library kernel
(YNNPACK) that is slow on them: EPA spent half of each step on (faces, 3) dot products. Written per
component, they fuse into the loops around them. XLA runs argmax's (value, index) reduction slowly,
and constant-folds it element by element at compile time where its operand is a constant broadcast
over a vmapped batch.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from ._tolerance import SHORT_REDUCTION, power_of_two_scale


def dot(a, b):
    """Dot products of the 3-vectors `a` and `b` (..., 3) over their last axis: (...)."""
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1] + a[..., 2] * b[..., 2]


def matvec(matrix, vectors):
    """``matrix @ vector`` for matrices (..., M, N) and vectors (..., N), broadcasting leading axes,
    written as a sum of the matrix's N columns: under vmap XLA:CPU runs small matrix products in a
    library kernel (YNNPACK) behind transposes and copies, which cost more than a closed-form
    collider's whole computation. Two places keep `@`: the supports inside GJK's batch-last loop
    (`_minkowski`: the library kernel measured faster there) and the relative pose (`_solve.prepare`:
    per component its rounding depended on the program it was compiled in, so two programs that
    share it, a query and its trace, ran GJK for different numbers of iterations)."""
    total = matrix[..., 0] * vectors[..., 0:1]
    for j in range(1, matrix.shape[-1]):
        total = total + matrix[..., j] * vectors[..., j:j + 1]
    return total


def rmatvec(matrix, vectors):
    """``matrix.T @ vector`` (``vector @ matrix``) for matrices (..., M, N) and vectors (..., M), as a
    sum of the matrix's M rows (see `matvec`); with `matrix` a simplex's points (K, 3) and `vectors`
    its weights (K,), the weighted point."""
    total = matrix[..., 0, :] * vectors[..., 0:1]
    for i in range(1, matrix.shape[-2]):
        total = total + matrix[..., i, :] * vectors[..., i:i + 1]
    return total


def matmul(a, b):
    """The matrix product ``a @ b`` of matrices (..., M, K) and (..., K, N), as a sum of K outer
    products (see `matvec`)."""
    total = a[..., :, 0:1] * b[..., 0:1, :]
    for k in range(1, a.shape[-1]):
        total = total + a[..., :, k:k + 1] * b[..., k:k + 1, :]
    return total


def triple_product(a, b, c):
    """a · (b × c) of the 3-vectors `a`, `b`, `c` (..., 3): (...). Written per component (in the
    order of `jnp.cross` then `dot`, so bit for bit theirs): `jnp.cross` transposes and concatenates
    its operands, which XLA:CPU does not fuse into the loop around it."""
    return (a[..., 0] * (b[..., 1] * c[..., 2] - b[..., 2] * c[..., 1])
            + a[..., 1] * (b[..., 2] * c[..., 0] - b[..., 0] * c[..., 2])
            + a[..., 2] * (b[..., 0] * c[..., 1] - b[..., 1] * c[..., 0]))


def leading_dot(a, b):
    """Dot products of the 3-vectors `a` and `b` (3, ...) over their first axis: (...). The layout of
    loops whose batch trails (`_gjk`)."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def first_argmax(values):
    """Index (...) int32 of the first largest entry of `values` (N, ...) along its first axis; 0 where
    none compares equal to the maximum (a NaN entry). As `jnp.argmax(values, axis=0)` on finite values,
    but written as the maximum (`halving_max`), then the min of the matching indices: XLA:CPU runs
    argmax's (value, index) reduction an order of magnitude slower, and a polytope's support is one
    argmax over its vertices. `values` may also be a short sequence of N arrays (...)
    (`_features.box_feature`'s corners), then found by a chain per entry, as `leading_max` does.
    (Arrays keep the reduction over the indices: a chain there changed how XLA:CPU compiled, and so
    rounded, the loops of a query and of its trace differently, and GJK ran 26 iterations in one and
    24 in the other on an ellipsoid–box pair.)"""
    size = len(values)
    if isinstance(values, (list, tuple)):  # scalars, per entry as `leading_max`: a box's corners
        largest = leading_max(values)
        first = jnp.zeros(jnp.shape(values[0]), jnp.int32)
        for j in reversed(range(size)):
            first = jnp.where(values[j] == largest, j, first)
        return first
    index = jnp.arange(size, dtype=jnp.int32).reshape((size,) + (1,) * (values.ndim - 1))
    first = jnp.min(jnp.where(values == halving_max(values), index, size), axis=0)
    return jnp.where(first < size, first, 0)


def halving_max(values):
    """`jnp.max(values, axis=0)` of `values` (N, ...), as the elementwise maxima of its two halves, then
    of theirs (⌈log2 N⌉ rounds; an odd row out waits for the next). Under vmap XLA:CPU runs a float
    max over a row of each lane in a library kernel (YNNPACK) that also writes the maximum back out
    per entry; the halves fuse with their neighbours: a 32-vertex polytope's support took 1.3x less,
    GJK on such polytopes 1.25x. Exact: the same maximum (NaN included; +0 or -0 where both tie)."""
    while len(values) > 1:
        half = len(values) // 2
        values = jnp.concatenate([jnp.maximum(values[:half], values[half:2 * half]), values[2 * half:]])
    return values[0]


def leading_max(values):
    """The largest entry of `values` (N, ...) along its first axis: `jnp.max(values, axis=0)`, as a
    chain of `maximum`s where N ≤ `SHORT_REDUCTION` (under vmap a reduction over a short axis runs in a
    library kernel behind copies on XLA:CPU; the chain fuses into its neighbours), `halving_max`
    beyond. Up to that size `values` may also be a sequence of N arrays (...)."""
    if len(values) > SHORT_REDUCTION:
        return halving_max(values)
    largest = values[0]
    for row in values[1:]:
        largest = jnp.maximum(largest, row)
    return largest


def take_first_axis(rows, index):
    """`rows` (K, ...) at `index` along the first axis, where `index` has the shape of `rows`' trailing
    axes (a batch after each row's own axes: rows (K, *E, *B), index (*B) gives (*E, *B)).

    A one-hot choice (exact: every other row is replaced by zero, or False), so the batch may trail,
    as in the batch-last loops (`_gjk`), where a gather per lane would be slow.
    """
    onehot = jnp.arange(rows.shape[0]).reshape((-1,) + (1,) * (jnp.ndim(rows) - 1)) == index
    if jnp.result_type(rows) == jnp.bool_:
        return jnp.any(onehot & rows, axis=0)
    return jnp.sum(jnp.where(onehot, rows, 0), axis=0)


def true_indices(mask, size: int, fill_value: int):
    """The indices (size,) int32 of the True entries of `mask` (N,) in order, the first `size` of them,
    then `fill_value`: `jnp.nonzero(mask, size=size, fill_value=fill_value)[0]` with one running count
    and one scatter (each True entry written at its rank), where `jnp.nonzero` takes a running sum, a
    count per output slot (a scatter-add) and a second running sum. Up to `SHORT_REDUCTION` slots (a
    feature's first vertices) each slot is a sum over the entries instead of the scatter: under vmap
    10x less time on (65 536, 32) masks."""
    rank = running_count(mask) - 1
    indices = jnp.arange(mask.shape[0], dtype=jnp.int32)
    if size > SHORT_REDUCTION:
        return jnp.full(size, fill_value, jnp.int32).at[jnp.where(mask, rank, size)].set(indices, mode="drop")
    # index + 1 in the slot of its rank: 0 where no entry has that rank.
    shifted = jnp.stack([jnp.sum(jnp.where(mask & (rank == slot), indices + 1, 0), dtype=jnp.int32)
                         for slot in range(size)])
    return jnp.where(shifted > 0, shifted - 1, fill_value).astype(jnp.int32)


_COUNT_BLOCK = 8  # `running_count`'s block length beyond 64 entries


def running_count(mask):
    """The number (N,) int32 of True entries of `mask` (N,) up to and including each: `jnp.cumsum`,
    which XLA:CPU runs as a reduce-window at ~5 ns an entry under `vmap` (an eighth of an EPA step).
    As products with triangular matrices of ones, exact in float32 (the counts stay below 2^24), the
    library's matrix kernel takes 2-4x less: one product up to 64 entries; beyond, running counts
    within blocks of 8, plus the running count of the blocks' totals before each block (the same
    scheme on N/8 entries)."""
    return _running_sum(mask.astype(jnp.float32)).astype(jnp.int32)


def _running_sum(values):
    """`running_count` on (N,) float32 whole numbers whose sum stays below 2^24 (exact)."""
    size = values.shape[0]
    product = functools.partial(jnp.matmul, precision=jax.lax.Precision.HIGHEST)  # no TF32 on GPUs
    if size <= _COUNT_BLOCK**2:
        return product(values, np.triu(np.ones((size, size), np.float32)))
    blocks = jnp.pad(values, (0, -size % _COUNT_BLOCK)).reshape(-1, _COUNT_BLOCK)
    within = product(blocks, np.triu(np.ones((_COUNT_BLOCK,) * 2, np.float32)))
    totals = within[:, -1]
    before = _running_sum(totals) - totals
    return (within + before[:, None]).reshape(-1)[:size]


def used_first(mask):
    """The permutation (K,) int32 that puts the True entries of `mask` (K,) first, each group in its
    own order: `jnp.argsort(~mask, stable=True)`, from ranks written out per entry (K is small: a
    simplex's four slots). Under vmap XLA:CPU sorts every lane in a library call, which took more time
    than the rest of a query's tangent rule."""
    size = mask.shape[0]
    used = [mask[j].astype(jnp.int32) for j in range(size)]
    count = sum(used)
    ranks, before = [], 0
    for j in range(size):  # a used entry's rank: the used ones before it; else after all used ones
        ranks.append(jnp.where(mask[j], before, count + j - before))
        before = before + used[j]
    return jnp.stack([sum(jnp.where(rank == i, j, 0) for j, rank in enumerate(ranks))
                      for i in range(size)]).astype(jnp.int32)


def computed_once(value):
    """`value` (an array) unchanged, but computed once per element on XLA:CPU. Its fusion pass copies a
    cheap elementwise expression into every consumer that reads it, so a consumer that broadcasts
    per-pair scalars over a simplex's rows recomputes their whole expression at each of its elements
    (a capsule–box contact's, ~500 operations, at 12 elements of each of four rows); a division
    counts as expensive and is not copied. Hence a division by 1 that XLA cannot fold (2 where the
    value is NaN, which it leaves NaN): exact. Integers and bools pass through float32 (small ones:
    signs, indices, flags)."""
    value = jnp.asarray(value)
    if not jnp.issubdtype(value.dtype, jnp.floating):
        return computed_once(value.astype(jnp.float32)).astype(value.dtype)
    return value / jnp.where(jnp.isnan(value), 2, 1).astype(value.dtype)


def select(conditions, choices, default=0):
    """`jnp.select`: the choice of the first true condition, else `default` (all broadcast together),
    as a chain of `where`s. `jnp.select` finds the first true condition with an argmax; where some
    conditions are constants (a shape kind without flat faces), vmap broadcasts them over the batch and
    XLA folded that argmax lane by lane at compile time (seconds per kernel at 65 536 pairs)."""
    result = default
    for condition, choice in reversed(list(zip(conditions, choices, strict=True))):
        result = jnp.where(condition, choice, result)
    return result


def first_argmin(values):
    """Index (...) int32 of the first least entry of `values` (N, ...) along its first axis
    (`first_argmax` of the negation)."""
    return first_argmax(-values)


def largest_abs(a):
    """The largest |component| of the 3-vectors `a` (..., 3): (...)."""
    return jnp.maximum(jnp.maximum(jnp.abs(a[..., 0]), jnp.abs(a[..., 1])), jnp.abs(a[..., 2]))


def unit_vector(vector):
    """`vector` (..., 3) / its norm, and zero where its largest |component| is below √(least normal
    float) (1e-19 float32, 1e-154 float64; below that the derivative, ∝ 1/|x|², would overflow).

    Scale-invariant: the vector is first scaled by a power of two that brings its largest component
    near 1 (exact, so the result is bit-for-bit x/|x| wherever |x|² is representable), so a direction
    of any length (GJK's v shrinks to ~eps·size near contact, 1e-12 for millimetre shapes in float32)
    gives its unit vector; |x|² itself would underflow there. NaN-free in reverse mode (double where).
    """
    largest = largest_abs(vector)[..., None]
    is_nonzero = largest >= float(jnp.finfo(vector.dtype).tiny) ** 0.5
    scaled = vector * power_of_two_scale(jnp.where(is_nonzero, largest, 1))[0]
    norm_sq = dot(scaled, scaled)[..., None]  # in [1, 12] where nonzero
    return jnp.where(is_nonzero, scaled / jnp.sqrt(jnp.where(is_nonzero, norm_sq, 1)), 0)


def perpendicular(axis):
    """A unit direction (3,) perpendicular to `axis` (3,) (any one, chosen by `axis`'s smallest
    component)."""
    helper = jnp.eye(3, dtype=axis.dtype)[jnp.argmin(jnp.abs(axis))]
    return unit_vector(jnp.cross(axis, helper))


def cofactor_matrix(matrix):
    """The cofactor matrix (3, 3) of `matrix` (3, 3), det · matrix⁻ᵀ (its columns are cross products
    of the matrix's columns), and the determinant (): in closed form, where `jnp.linalg` would make a
    LAPACK call per lane (on XLA:CPU, one inside a vmapped loop over 65 536 lanes deadlocked)."""
    columns = matrix.T
    cofactor = jnp.stack([jnp.cross(columns[1], columns[2]), jnp.cross(columns[2], columns[0]),
                          jnp.cross(columns[0], columns[1])], axis=1)
    return cofactor, dot(columns[0], cofactor[:, 0])
