"""Session 47: every output leaf of the mixed-batch queries, saved for a bitwise comparison of two trees.

    PYTHONPATH=<tree> python benchmarks/results/session47/same_bits.py OUT.npz   (once per tree)

2 048 random pairs of the seven primitive kinds (`_demo.random_pairs`, seed 3), float32 and float64:
`signed_distance`, `distance`, `intersect` and `vmap(value_and_grad)` of the signed distance w.r.t.
both poses, each under `jit(vmap(...))`; compare the two files' arrays with `np.array_equal`.
"""

import sys

import jax
import jax.numpy as jnp
import numpy as np

import jaxgjk as jg
from jaxgjk import _demo

KINDS = ("sphere", "capsule", "box", "cylinder", "cone", "ellipsoid", "polytope")


def signed_value(*pair):
    return jg.signed_distance(*pair).distance


def main(path):
    jax.config.update("jax_enable_x64", True)
    queries = {"sd": jg.signed_distance, "dist": jg.distance, "int": jg.intersect,
               "vag": jax.value_and_grad(signed_value, argnums=(1, 3))}
    leaves = {}
    for dtype in (jnp.float32, jnp.float64):
        inputs = _demo.random_pairs(2048, KINDS, dtype, seed=3)
        for name, query in queries.items():
            outputs = jax.jit(jax.vmap(query))(*inputs)
            for index, leaf in enumerate(jax.tree_util.tree_leaves(outputs)):
                leaves[f"{name}{np.dtype(dtype).name}_{index}"] = np.asarray(leaf)
    np.savez(path, **leaves)


if __name__ == "__main__":
    main(sys.argv[1])
