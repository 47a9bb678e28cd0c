"""Bit-for-bit fingerprint of the queries on a fixed batch of mixed pairs, to check a refactor.

A refactor that claims unchanged behaviour records the fingerprint before and compares after:

    python -m benchmarks.fingerprint --save /tmp/before.npz     # on the old commit
    python -m benchmarks.fingerprint --compare /tmp/before.npz  # on the new one

Two batches of random pairs, float32 and float64: every bounded primitive kind in `Packed` (the
general GJK/EPA path), and spheres, capsules and boxes grouped by kind (the specialised colliders).
Each runs the three queries and the gradient of the signed distance w.r.t. both poses; every result
leaf must be equal bit for bit (NaN equal to NaN).
"""

from __future__ import annotations

import argparse
import sys

import jax
import jax.numpy as jnp
import numpy as np

import jaxgjk as jg
from jaxgjk._demo import KIND_NAMES, random_pairs

NUM_PAIRS = 256
BATCHES = {"packed": (KIND_NAMES, False), "grouped": (("sphere", "capsule", "box"), True)}
QUERIES = {"distance": jg.distance, "signed_distance": jg.signed_distance, "intersect": jg.intersect}


def _signed_distance_gradient(shape_a, pose_a, shape_b, pose_b):
    """d(signed distance)/d(pose A, pose B), per pair."""
    def value(pose_a, shape_a, pose_b, shape_b):
        return jg.signed_distance(shape_a, pose_a, shape_b, pose_b).distance
    return jax.vmap(jax.grad(value, argnums=(0, 2)))(pose_a, shape_a, pose_b, shape_b)


def fingerprint() -> dict[str, np.ndarray]:
    """Every result leaf, keyed by dtype, batch, query and leaf path."""
    joined = lambda a, b: jax.tree_util.tree_map(lambda *x: jnp.concatenate(x), a, b)  # noqa: E731
    index_a, index_b = np.arange(NUM_PAIRS), np.arange(NUM_PAIRS, 2 * NUM_PAIRS)
    leaves = {}
    for dtype in (np.float32, np.float64):
        for seed, (batch, (kinds, group)) in enumerate(BATCHES.items()):
            shape_a, pose_a, shape_b, pose_b = random_pairs(NUM_PAIRS, kinds, dtype, seed=seed)
            shapes, poses = joined(shape_a, shape_b), joined(pose_a, pose_b)
            results = {name: jg.pairs(query, shapes, poses, index_a, index_b, group_by_kind=group)
                       for name, query in QUERIES.items()}
            results["gradient"] = jax.jit(_signed_distance_gradient)(shape_a, pose_a, shape_b, pose_b)
            for name, result in results.items():
                for path, leaf in jax.tree_util.tree_leaves_with_path(result):
                    key = f"{np.dtype(dtype).name}/{batch}/{name}{jax.tree_util.keystr(path)}"
                    leaves[key] = np.asarray(leaf)
    return leaves


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--save", metavar="FILE", help="write the fingerprint (.npz)")
    action.add_argument("--compare", metavar="FILE", help="compare with a saved fingerprint")
    args = parser.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    leaves = fingerprint()
    if args.save:
        np.savez(args.save, **leaves)
        print(f"saved {len(leaves)} leaves to {args.save}")
        return 0
    saved = np.load(args.compare)
    differing = sorted(key for key in set(saved.files) | set(leaves)
                       if key not in saved.files or key not in leaves
                       or not np.array_equal(saved[key], leaves[key], equal_nan=True))
    for key in differing:
        print(f"differs: {key}")
    print(f"{len(leaves) - len(differing)} of {len(leaves)} leaves identical bit for bit")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
