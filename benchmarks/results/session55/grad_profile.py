"""Where a closed-form pair's gradient spends its time: XLA's per-operation timings of one call of
`jit(vmap(value_and_grad(signed distance, both poses)))` on 65 536 random float32 sphere–capsule pairs,
summed by the jaxgjk source line that made each operation (`benchmarks.op_profile`'s attribution), then
the costliest operations with their HLO.

    PYTHONPATH=. python benchmarks/results/session55/grad_profile.py
"""

import collections

import jax
import jax.numpy as jnp
import numpy as np

import jaxgjk as jg
from benchmarks.op_profile import compiled_operation_times, operation_sources

PAIRS = 65536
rng = np.random.default_rng(0)


def poses():
    return jg.Pose(jnp.asarray(rng.normal(size=(PAIRS, 3)), jnp.float32),
                   jnp.asarray(rng.normal(size=(PAIRS, 4)), jnp.float32))


def signed(a, pose_a, b, pose_b):
    return jg.signed_distance(a, pose_a, b, pose_b).distance


arguments = (jg.Sphere(jnp.asarray(rng.uniform(0.1, 0.5, PAIRS), jnp.float32)), poses(),
             jg.Capsule(jnp.asarray(rng.uniform(0.1, 0.3, PAIRS), jnp.float32),
                        jnp.asarray(rng.uniform(0.2, 0.6, PAIRS), jnp.float32)), poses())
kernel = jax.jit(jax.vmap(jax.value_and_grad(signed, argnums=(1, 3)))).lower(*arguments).compile()
totals = {name: microseconds
          for name, (microseconds, _) in compiled_operation_times(kernel, arguments).items()}
hlo = kernel.as_text()
sources = operation_sources(hlo)
by_source = collections.Counter()
for name, microseconds in totals.items():
    by_source[sources.get(name) or name] += microseconds
print(f"{sum(totals.values()):.0f} µs in {len(totals)} operations")
for source, microseconds in by_source.most_common(15):
    print(f"{microseconds:8.0f} µs  {source}")
print("costliest operations:")
for name, microseconds in collections.Counter(totals).most_common(6):
    line = next((line.strip() for line in hlo.splitlines() if line.strip().startswith(f"%{name} = ")), "")
    print(f"{microseconds:8.0f} µs  {name} ({sources.get(name)}): {line[:160]}")
