"""One kernel of two versions of jaxgjk in one process: a commit's (`--base`) against the working tree's.

    python -m benchmarks.ab_inprocess sphere-box [--base HEAD~1] [--pen] [--query signed_distance]
        [--pairs 65536] [--rounds 30]

The commit's `jaxgjk/` is exported (`git archive`) as the package `jaxgjk_base` into a temporary
directory; its modules import each other relatively, so both versions load side by side. Each kernel
is `jax.jit(jax.vmap(query))` on the same float32 pairs of a parity scenario (`parity.tiled_case`, 256
distinct pairs tiled), or, with `--query value_and_grad`, the gradient of their summed signed distance
with respect to B's pose (`run.jaxgjk_batched`'s), with `value_and_grad_shapes` w.r.t. both shapes'
fields too. The two compiled kernels run in turn `--rounds`
times; each keeps its best time. Steady load on a shared machine slows both alike, so their ratio holds
better than timings of separate processes (which drifted 20-40% in session 44); under heavy load
(more processes than cores) it still moved by 2x: repeat it. Prints each version's rate and
lower+compile time (in a warm process, favouring the working tree's, compiled second: the same
program compiled twice took 1.51 then 1.14 s in session 50; the parity benchmark's fresh processes
give the cold ones), the ratio (> 1: the working tree is faster) and whether their outputs agree to
the bit (else the largest difference of any output entry).
"""

import argparse
import importlib
import io
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import jax
import numpy as np

import jaxgjk

from . import parity as P
from . import run as R


def base_package(revision: str, directory: str):
    """The package `jaxgjk` at `revision`, imported as `jaxgjk_base` from `directory`."""
    root = Path(__file__).resolve().parent.parent
    archive = subprocess.run(["git", "archive", revision, "jaxgjk"], cwd=root, check=True,
                             capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(directory, filter="data")
    (Path(directory) / "jaxgjk").rename(Path(directory) / "jaxgjk_base")
    sys.path.insert(0, directory)
    return importlib.import_module("jaxgjk_base")


def kernel(module, query: str, in_axes=0):
    """The batched `query` of `module` (a jaxgjk package) over pairs, jitted; `in_axes` as `jax.vmap`'s
    (`run.jaxgjk_batched`'s: a polytope's mesh is shared by every pair). `value_and_grad`: the summed
    signed distance and its gradient w.r.t. B's pose; `value_and_grad_shapes`: w.r.t. both shapes'
    fields too (the tangent rule then evaluates the simplex's supports)."""
    if not query.startswith("value_and_grad"):
        return jax.jit(jax.vmap(getattr(module, query), in_axes=in_axes))

    def value_and_grad(shape_a, pose_a, shape_b, pose_b):
        batched = jax.vmap(module.signed_distance, in_axes=in_axes)
        if query == "value_and_grad":
            return jax.value_and_grad(lambda pose: batched(shape_a, pose_a, shape_b, pose).distance.sum())(
                pose_b)
        return jax.value_and_grad(lambda a, b, pose: batched(a, pose_a, b, pose).distance.sum(),
                                  argnums=(0, 1, 2))(shape_a, shape_b, pose_b)

    return jax.jit(value_and_grad)


def in_module(value, module):
    """A shape or pose of `jaxgjk` as the same class of `module`, field for field."""
    fields = (getattr(value, name) for name in value.__dataclass_fields__)
    return getattr(module, type(value).__name__)(*fields)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("scenario", help="a parity scenario: sphere-box, box-box, polytope-32, ...")
    parser.add_argument("--base", default="HEAD")
    parser.add_argument("--pen", action="store_true", help="penetrating pairs (default: separated)")
    parser.add_argument("--query", default="signed_distance")
    parser.add_argument("--pairs", type=int, default=65536)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    jax.config.update("jax_enable_x64", False)
    with tempfile.TemporaryDirectory() as directory:
        base = base_package(args.base, directory)
        kind, vertices = P.parse_scenario(args.scenario)
        _, batch = P.tiled_case(kind, vertices, args.pen, 256, args.pairs, 0)
        inputs = jax.block_until_ready(R.jaxgjk_args(batch, np.arange(batch.n), P.DTYPE))
        # XLA's first compile in a process carries its start-up (~0.5 s): pay it before either kernel.
        jax.jit(lambda x: x + 1).lower(np.float32(1)).compile()
        versions = {}
        for name, module, operands in (("base", base, tuple(in_module(x, base) for x in inputs)),
                                       ("tree", jaxgjk, inputs)):
            start = time.perf_counter()
            compiled = kernel(module, args.query, R.jaxgjk_in_axes(batch)).lower(*operands).compile()
            versions[name] = (compiled, operands, time.perf_counter() - start)
        best = dict.fromkeys(versions, np.inf)
        for _ in range(args.rounds):
            for name, (compiled, operands, _) in versions.items():
                start = time.perf_counter()
                jax.block_until_ready(compiled(*operands))
                best[name] = min(best[name], time.perf_counter() - start)
        outputs = [jax.tree_util.tree_leaves(compiled(*operands))
                   for compiled, operands, _ in versions.values()]
        largest = max(float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)), initial=0))
                      for a, b in zip(*outputs, strict=True))
    rates = {name: args.pairs / seconds / 1e6 for name, seconds in best.items()}
    print(f"{args.scenario} {args.query} {'penetrating' if args.pen else 'separated'}, {args.pairs} pairs: "
          f"{args.base} {rates['base']:.2f} M/s (compile {versions['base'][2]:.2f} s), working tree "
          f"{rates['tree']:.2f} M/s (compile {versions['tree'][2]:.2f} s), ratio "
          f"{rates['tree'] / rates['base']:.3f}, outputs "
          f"{'identical' if largest == 0 else f'differ by up to {largest:.2g}'}")


if __name__ == "__main__":
    main()
