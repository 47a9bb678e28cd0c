"""Throughput of a closed-form pair's signed distance alone, its whole result, and the value with the
gradient w.r.t. both poses: 65 536 random float32 pairs, `jit(vmap(...))` on every core, best of 10.

    python benchmarks/results/session55/grad_cost.py sphere-capsule
"""

import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxgjk as jg

PAIRS = 65536
rng = np.random.default_rng(0)


def shapes(kind):
    def uniform(low, high, size=PAIRS):
        return jnp.asarray(rng.uniform(low, high, size), jnp.float32)
    if kind == "sphere":
        return jg.Sphere(uniform(0.1, 0.5))
    if kind == "capsule":
        return jg.Capsule(uniform(0.1, 0.3), uniform(0.2, 0.6))
    return jg.Box(uniform(0.1, 0.5, (PAIRS, 3)))


def poses():
    return jg.Pose(jnp.asarray(rng.normal(size=(PAIRS, 3)), jnp.float32),
                   jnp.asarray(rng.normal(size=(PAIRS, 4)), jnp.float32))


def signed(a, pose_a, b, pose_b):
    return jg.signed_distance(a, pose_a, b, pose_b).distance


pair = sys.argv[1]
kind_a, kind_b = pair.split("-")
arguments = (shapes(kind_a), poses(), shapes(kind_b), poses())
kernels = {"value": jax.vmap(signed), "whole result": jax.vmap(jg.signed_distance),
           "value_and_grad (poses)": jax.vmap(jax.value_and_grad(signed, argnums=(1, 3)))}
for name, kernel in kernels.items():
    kernel = jax.jit(kernel)
    started = time.perf_counter()
    jax.block_until_ready(kernel(*arguments))
    first = time.perf_counter() - started
    best = np.inf
    for _ in range(10):
        started = time.perf_counter()
        jax.block_until_ready(kernel(*arguments))
        best = min(best, time.perf_counter() - started)
    print(f"{pair} {name}: first call {first:.2f} s, best {best * 1e3:.2f} ms, "
          f"{PAIRS / best / 1e6:.2f} M pairs/s")
