"""Lower and compile seconds, and fusion count, of one of `tests/test_gradients.py`'s kernels.

    PYTHONPATH=. python benchmarks/results/session50/grad_compile.py JACFWD|HESSIAN|VMAP_GRAD|GRAD_OF_SUM

One kernel per (fresh) process, on a chunk of the size the tests call it with, of eight mixed kind
pairs repeated; the persistent compilation cache is off (the tests' `conftest.py` is not loaded).
"""

import re
import sys
import time

import jax
import numpy as np

from tests import test_gradients as T
from tests.shape_samples import random_shape

CHUNKS = {"JACFWD": T.CHUNK64, "HESSIAN": 8, "VMAP_GRAD": T.CHUNK32, "GRAD_OF_SUM": T.CHUNK_REVERSE}


def main():
    jax.config.update("jax_enable_x64", True)
    name = sys.argv[1]
    rng = np.random.default_rng(0)
    configs = []
    for i in range(8):
        kind_a, kind_b = T.KINDS[i % len(T.KINDS)], T.KINDS[(3 * i + 1) % len(T.KINDS)]
        configs.append((random_shape(kind_a, rng), T._random_pose(rng, rng.normal(size=3)),
                        random_shape(kind_b, rng), T._random_pose(rng, rng.normal(size=3))))
    chunk = CHUNKS[name]
    dtype = np.float32 if name == "VMAP_GRAD" else np.float64
    args = T._stack((configs * (chunk // 8 + 1))[:chunk], dtype)
    if name == "VMAP_GRAD":
        args += (np.ones((chunk, T.NUM_LOSS_TERMS), dtype),)
    if name == "GRAD_OF_SUM":
        args += (np.ones((chunk, T.COMBINED_WIDTH), dtype),)
    start = time.perf_counter()
    lowered = getattr(T, name).lower(*args)
    lowered_at = time.perf_counter()
    compiled = lowered.compile()
    compiled_at = time.perf_counter()
    fusions = len(re.findall(r"= \S+ fusion\(", compiled.as_text()))
    print(f"{name}: lower {lowered_at - start:.1f} s, compile {compiled_at - lowered_at:.1f} s, "
          f"{fusions} fusions")


if __name__ == "__main__":
    main()
