"""The float32 gradient's error of a commit and of the working tree against the commit's float64 gradient.

    PYTHONPATH=. python benchmarks/results/session48/gradient_error.py [--base HEAD] SCENARIO ...

For each parity scenario (`parity.tiled_case`'s 256 distinct pairs, separated and penetrating), the
gradient of the summed signed distance with respect to B's pose (`ab_inprocess.kernel`'s
`value_and_grad`): the commit's and the working tree's in float32, the commit's in float64 as the
reference; prints the largest absolute error of each float32 gradient.
"""

import argparse
import tempfile

import jax
import jax.numpy as jnp
import numpy as np

import jaxgjk
from benchmarks import ab_inprocess as A
from benchmarks import parity as P
from benchmarks import run as R


def gradients(module, operands):
    """(pairs, 7) float64: the gradient's translation and rotation components, pair by pair."""
    gradient = A.kernel(module, "value_and_grad")(*operands)[1]
    leaves = jax.tree_util.tree_leaves(gradient)
    return np.concatenate([np.asarray(leaf, np.float64).reshape(len(leaf), -1) for leaf in leaves], axis=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="+")
    parser.add_argument("--base", default="HEAD")
    args = parser.parse_args()
    jax.config.update("jax_enable_x64", True)
    with tempfile.TemporaryDirectory() as directory:
        base = A.base_package(args.base, directory)
        for scenario in args.scenarios:
            kind, vertices = P.parse_scenario(scenario)
            for penetrating in (False, True):
                _, batch = P.tiled_case(kind, vertices, penetrating, 256, 256, 0)
                inputs = R.jaxgjk_args(batch, np.arange(batch.n), P.DTYPE)
                inputs64 = jax.tree_util.tree_map(
                    lambda x: x.astype(jnp.float64) if jnp.issubdtype(x.dtype, jnp.floating) else x, inputs)
                in_base = [tuple(A.in_module(x, base) for x in operands) for operands in (inputs, inputs64)]
                reference = gradients(base, in_base[1])
                errors = [np.abs(gradients(module, operands) - reference).max()
                          for module, operands in ((base, in_base[0]), (jaxgjk, inputs))]
                mode = "pen" if penetrating else "sep"
                print(f"{scenario} {mode}: float32 gradient error against float64: {args.base} "
                      f"{errors[0]:.2e}, working tree {errors[1]:.2e}")


if __name__ == "__main__":
    main()
