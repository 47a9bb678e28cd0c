"""Batch helpers: every pairing of shapes goes through `_run`, which maps a one-pair query with
`jax.vmap`, evaluates it in chunks of bounded size, and shards each chunk over the local devices with
`jax.sharding` (a 1-D mesh along the pair axis; XLA partitions the computation)."""

from __future__ import annotations

import dataclasses
import functools
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ._packed import KINDS, Packed
from ._queries import distance, intersect, signed_distance
from ._result import DistanceResult, Simplex
from ._shapes import HalfSpace

# Queries whose result for (b, a) gives the result for (a, b) (`_exchanged`).
_SYMMETRIC_QUERIES = (distance, signed_distance, intersect)


def _is_single(shape) -> bool:
    """Whether `shape` is one shape (no batch axis): its trace-time check accepts it as is."""
    try:
        shape.check("shape")
    except (ValueError, TypeError):
        return False
    return True


def _take(tree, index):
    return jax.tree_util.tree_map(lambda leaf: jnp.asarray(leaf)[index], tree)


@functools.lru_cache(maxsize=64)
def _kernel(query, config, single_a: bool, single_b: bool):
    """jit(vmap(query)) over index pairs; shapes without a batch axis are shared (not mapped)."""
    def one(shapes_a, poses_a, shapes_b, poses_b, index_a, index_b):
        shape_a = shapes_a if single_a else _take(shapes_a, index_a)
        shape_b = shapes_b if single_b else _take(shapes_b, index_b)
        kwargs = {} if config is None else {"config": config}
        return query(shape_a, _take(poses_a, index_a), shape_b, _take(poses_b, index_b), **kwargs)

    return jax.jit(jax.vmap(one, in_axes=(None, None, None, None, 0, 0)))


def _progress(done, total, started):
    rate = done / max(time.perf_counter() - started, 1e-9)
    print(f"\r  {done:,}/{total:,} pairs ({rate:,.0f} pairs/s)", end="" if done < total else "\n",
          file=sys.stderr, flush=True)


def _kinds(shapes, index):
    """The `KINDS` index (host array) of `shapes`' entry for each pair, or None if not `Packed`."""
    if not isinstance(shapes, Packed):
        return None
    kinds = np.asarray(shapes.kind)
    return np.broadcast_to(kinds if kinds.ndim == 0 else kinds[index], index.shape)


def _exchanged(result):
    """The result of a query on (b, a) read as that on (a, b): the sides' points, features and simplex
    fields exchanged, the normal negated (the simplex of D = A − B, vertex for vertex, is that of
    B − A). A bool (`intersect`) is its own."""
    if not isinstance(result, DistanceResult):
        return result
    s = result.simplex
    return dataclasses.replace(
        result, point_a=result.point_b, point_b=result.point_a, normal=-result.normal,
        feature_a=result.feature_b, feature_b=result.feature_a,
        simplex=Simplex(s.directions_b, s.directions_a, s.points_b, s.points_a, s.weights, s.mask))


def _run_grouped(query, shapes_a, poses_a, shapes_b, poses_b, index_a, index_b, **options):
    """`_run` once per pair of kinds, on the `Packed` shapes read as that kind, results scattered back.

    Each group is padded to a power of two (capped at `chunk_size`), so batches whose group sizes
    change from call to call reuse a few compiled kernels. Pairs within one set (`pairs`,
    `self_pairs`) of the library's queries run with the lesser kind first, so kinds (i, j) and (j, i)
    share a kernel: 28 kernels, not 49, for the seven primitives.
    """
    kinds_a, kinds_b = _kinds(shapes_a, index_a), _kinds(shapes_b, index_b)
    exchange = np.zeros(len(index_a), bool)
    if shapes_a is shapes_b and poses_a is poses_b and kinds_a is not None \
            and query in _SYMMETRIC_QUERIES:
        exchange = kinds_a > kinds_b
        kinds_a, kinds_b = np.where(exchange, kinds_b, kinds_a), np.where(exchange, kinds_a, kinds_b)
        index_a, index_b = np.where(exchange, index_b, index_a), np.where(exchange, index_a, index_b)
    groups = np.zeros(len(index_a), np.int64) if kinds_a is None else kinds_a.astype(np.int64)
    groups = groups * len(KINDS) + (0 if kinds_b is None else kinds_b)
    chunk_size = options.pop("chunk_size")
    order = np.argsort(groups, kind="stable")
    parts = []
    two_half_spaces = KINDS.index(HalfSpace) * (len(KINDS) + 1)
    for group in np.unique(groups):
        rows = np.flatnonzero(groups == group)
        typed_a = shapes_a if kinds_a is None else shapes_a.primitives()[group // len(KINDS)]
        typed_b = shapes_b if kinds_b is None else shapes_b.primitives()[group % len(KINDS)]
        if group == two_half_spaces and kinds_a is not None and kinds_b is not None:
            typed_a, typed_b = shapes_a, shapes_b  # no typed query takes two: the packed one says INVALID
        bucket = 1 << int(len(rows) - 1).bit_length()
        parts.append(_run(query, typed_a, poses_a, typed_b, poses_b, index_a[rows], index_b[rows],
                          chunk_size=bucket if chunk_size is None else min(bucket, chunk_size), **options))
    # The parts hold the pairs sorted by group: undo that order.
    back = np.argsort(order)
    result = jax.tree_util.tree_map(lambda *leaves: jnp.concatenate(leaves)[back], *parts)
    if not exchange.any():
        return result
    return jax.tree_util.tree_map(
        lambda swapped, kept: jnp.where(exchange.reshape((-1,) + (1,) * (kept.ndim - 1)), swapped, kept),
        _exchanged(result), result)


def _run(query, shapes_a, poses_a, shapes_b, poses_b, index_a, index_b, *, config, chunk_size,
         shard, progress, group_by_kind=False):
    """Evaluate `query` on the pairs (index_a[k], index_b[k]); results have a leading pair axis."""
    index_a = np.asarray(index_a, np.int32).reshape(-1)
    index_b = np.asarray(index_b, np.int32).reshape(-1)
    if group_by_kind and len(index_a) and (isinstance(shapes_a, Packed) or isinstance(shapes_b, Packed)):
        return _run_grouped(query, shapes_a, poses_a, shapes_b, poses_b, index_a, index_b, config=config,
                            chunk_size=chunk_size, shard=shard, progress=progress)
    total = len(index_a)
    kernel = _kernel(query, config, _is_single(shapes_a), _is_single(shapes_b))
    devices = jax.local_devices()
    sharding = NamedSharding(Mesh(np.array(devices), ("pairs",)), PartitionSpec("pairs")) \
        if shard and len(devices) > 1 else None
    chunk = total if chunk_size is None else max(1, min(chunk_size, total))
    if sharding is not None:  # every device gets an equal share of each chunk
        chunk = -(-chunk // len(devices)) * len(devices)
    outputs, started = [], time.perf_counter()
    for start in range(0, max(total, 1), chunk):
        # Pad the last chunk by repeating its final pair, so every chunk has the compiled size.
        rows = np.minimum(np.arange(start, start + chunk), max(total - 1, 0))
        ia, ib = index_a[rows], index_b[rows]
        if sharding is not None:
            ia, ib = jax.device_put(ia, sharding), jax.device_put(ib, sharding)
        outputs.append(kernel(shapes_a, poses_a, shapes_b, poses_b, ia, ib))
        if progress:
            jax.block_until_ready(outputs[-1])
            _progress(min(start + chunk, total), total, started)
    if len(outputs) == 1:
        return jax.tree_util.tree_map(lambda leaf: leaf[:total], outputs[0])
    return jax.tree_util.tree_map(lambda *leaves: jnp.concatenate(leaves)[:total], *outputs)


def pairwise(query, shapes_a, poses_a, shapes_b, poses_b, *, config=None, chunk_size=None,
             shard=False, progress=False, group_by_kind=False):
    """`query` on all N×M pairs of two sets; result leaves have leading axes (N, M).

    Args:
        query: `distance`, `signed_distance`, `intersect` (or any function of (a, pose_a, b, pose_b)
            that takes `config=`), including a function that returns gradients.
        shapes_a: N shapes of one kind (leading axis N on every leaf; `pack` for mixed kinds), or one
            shape shared by all N poses. Likewise shapes_b with M.
        poses_a: `Pose` with translation (N, 3), rotation (N, 4); poses_b likewise with M.
        config: `Config` passed to the query.
        chunk_size: evaluate at most this many pairs per compiled call (bounded memory).
        shard: split each chunk over all local devices (`jax.sharding`).
        progress: print progress to stderr after each chunk.
        group_by_kind: for `Packed` shapes, run one kernel per pair of kinds (typed shapes) instead
            of one kernel for all: faster per pair — a packed support evaluates every kind it holds, and under
            `vmap` a batch runs as long as its slowest lane — at the price of a compile per kind pair
            and group size bucket (powers of two). See benchmarks/README.md for when it pays.
    """
    n, m = np.shape(poses_a.translation)[0], np.shape(poses_b.translation)[0]
    index_a, index_b = np.meshgrid(np.arange(n), np.arange(m), indexing="ij")
    result = _run(query, shapes_a, poses_a, shapes_b, poses_b, index_a, index_b, config=config,
                  chunk_size=chunk_size, shard=shard, progress=progress, group_by_kind=group_by_kind)
    return jax.tree_util.tree_map(lambda leaf: leaf.reshape((n, m) + leaf.shape[1:]), result)


def pairs(query, shapes, poses, index_a, index_b, *, shapes_b=None, poses_b=None, config=None,
          chunk_size=None, shard=False, progress=False, group_by_kind=False):
    """`query` on explicit pairs (index_a[k], index_b[k]) of one set (or of `shapes`/`poses` and
    `shapes_b`/`poses_b`); result leaves have a leading axis K = len(index_a). Other arguments as
    `pairwise`."""
    shapes_b = shapes if shapes_b is None else shapes_b
    poses_b = poses if poses_b is None else poses_b
    return _run(query, shapes, poses, shapes_b, poses_b, index_a, index_b, config=config,
                chunk_size=chunk_size, shard=shard, progress=progress, group_by_kind=group_by_kind)


def self_pairs(query, shapes, poses, *, allowed=None, config=None, chunk_size=None, shard=False,
               progress=False, group_by_kind=False):
    """`query` on the pairs i < j of one set (robot links) where `allowed[i, j]` (N, N) bool is true.

    Returns (index_a (K,), index_b (K,), result with a leading axis K).
    """
    n = np.shape(poses.translation)[0]
    upper = np.triu(np.ones((n, n), bool), k=1)
    if allowed is not None:
        upper &= np.asarray(allowed, bool) | np.asarray(allowed, bool).T
    index_a, index_b = np.nonzero(upper)
    result = pairs(query, shapes, poses, index_a, index_b, config=config, chunk_size=chunk_size,
                   shard=shard, progress=progress, group_by_kind=group_by_kind)
    return index_a, index_b, result
