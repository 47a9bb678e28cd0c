"""A load-independent view of what the normal refinement costs: the size of the lowered (StableHLO)
program of jit(signed_distance) for one pair, refinement on and off, a few kind pairs, float32.

    python -m benchmarks.refine_size   (JAXGJK_ROOT=<exported older jaxgjk parent> to compare)
"""

from __future__ import annotations

import os
import sys

# JAXGJK_ROOT (optional): the parent directory of an older jaxgjk to measure instead of this checkout's.
if "JAXGJK_ROOT" in os.environ:
    sys.path.insert(0, os.environ["JAXGJK_ROOT"])

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import jaxgjk as jg  # noqa: E402

SHAPES = {"ell": jg.Ellipsoid(jnp.ones(3)), "cyl": jg.Cylinder(jnp.ones(()), jnp.ones(())),
          "cone": jg.Cone(jnp.ones(()), jnp.ones(())), "box": jg.Box(jnp.ones(3))}


def lines(a, b, refine):
    """Lines of the lowered program of jit(signed_distance) on shapes `a`, `b`."""
    config = jg.Config(refine_normal=refine)
    pose = jg.Pose(jnp.zeros(3), jnp.array([1.0, 0, 0, 0]))
    kernel = jax.jit(lambda a, pa, b, pb: jg.signed_distance(a, pa, b, pb, config=config))
    return len(kernel.lower(a, pose, b, pose).as_text().splitlines())


def main():
    print(f"jaxgjk from {os.path.dirname(jg.__file__)}\n")
    print("| pair | lines, refine off | lines, refine on |\n|---|---|---|")
    for pair in ("ell-ell", "cyl-cone", "cone-cone", "box-cone", "box-box"):
        a, b = (SHAPES[k] for k in pair.split("-"))
        print(f"| {pair} | {lines(a, b, False)} | {lines(a, b, True)} |")


if __name__ == "__main__":
    main()
