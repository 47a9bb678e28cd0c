"""Lower and compile seconds, and fusions, of one general-path kernel with and without the normal's
Newton refinement (`Config(refine_normal=...)`, `_refine`): the refinement's share of the program.

    PYTHONPATH=. python benchmarks/results/session53/refine_share.py cylinder-box sep distance

Arguments: a `benchmarks.cases` kind, sep or pen, and the query; 256 float32 pairs, the general path
(`specialised=False`), `jit(vmap(query))`, both kernels in one process (the second is compiled warm).
"""

import re
import sys
import time

import jax
import numpy as np

import jaxgjk as jg
from benchmarks import cases


def main():
    kind, mode, query = sys.argv[1:4]
    case = cases.make_case(kind, 256, mode == "pen", seed=0)
    pairs = cases.jaxgjk_pairs(case, convert=lambda x: np.asarray(x, np.float32))
    for refine in (True, False):
        config = jg.Config(specialised=False, refine_normal=refine)
        kernel = jax.jit(jax.vmap(lambda *pair, config=config: getattr(jg, query)(*pair, config=config)))
        start = time.perf_counter()
        lowered = kernel.lower(*pairs)
        lowered_at = time.perf_counter()
        compiled = lowered.compile()
        compiled_at = time.perf_counter()
        fusions = len(re.findall(r"fusion\(", compiled.as_text()))
        print(f"{kind} {mode} {query} refine_normal={refine}: trace+lower {lowered_at - start:.2f} s, "
              f"compile {compiled_at - lowered_at:.2f} s, {fusions} fusions")


if __name__ == "__main__":
    main()
