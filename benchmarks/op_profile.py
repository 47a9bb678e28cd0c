"""Where a query's time goes: XLA's own per-operation timings of one call of `jit(vmap(query))`.

    python -m benchmarks.op_profile ellipsoid-ellipsoid 0 sep distance [--general] [--top 30]
        [--fields distance,point_a,point_b]

Arguments: case kind, polytope vertex count (0 otherwise), sep or pen, query; `--general` forces
GJK/EPA (`Config(specialised=False)`); `--fields` returns only those fields of the result (XLA drops
the work no returned field needs), the whole result otherwise. 256 distinct float32 pairs
(`cases.make_case`, seed 0) tiled to 65 536 (polytope meshes shared). One untimed call, then one
call under `jax.profiler` (a Perfetto trace in a temporary directory). Prints the summed duration of
every compiled operation (a fusion, a library call, a loop) and how often it ran: operations inside a
loop body run once per trip, so the totals grouped by run count separate the loops' bodies from the
work done once (a loop also appears as an operation of its own, `while.N`). Durations are summed over
XLA:CPU's threads, so the total can exceed the wall time; on a busy machine they grow with the
contention.
"""

import argparse
import collections
import glob
import gzip
import json
import tempfile

import jax
import numpy as np

import jaxgjk as jg

from . import cases as C

PAIRS, TILE = 65536, 256
# Trace events that are not compiled operations (the runtime's own spans).
_RUNTIME = ("ThunkExecutor", "$", "Pjit", "Slinky", "DevicePut")


def operation_times(kind, n_vertices, penetrating, query, config, fields=()):
    """{operation name: (summed µs, run count)} of one call on the benchmark's batch."""
    case = C.make_case(kind, TILE, penetrating, seed=0, **({"n_vertices": n_vertices} if n_vertices else {}))
    shape_a, pose_a, shape_b, pose_b = C.jaxgjk_pairs(case, convert=lambda x: np.asarray(x, np.float32))
    shared = kind.startswith("polytope")

    def tile(tree):
        return jax.tree_util.tree_map(lambda x: np.tile(x, (PAIRS // TILE,) + (1,) * (x.ndim - 1)), tree)

    args = (shape_a if shared else tile(shape_a), tile(pose_a), shape_b if shared else tile(shape_b),
            tile(pose_b))
    axes = (None if shared else 0, 0, None if shared else 0, 0)
    def one_pair(*pair):
        result = getattr(jg, query)(*pair, config=config)
        return tuple(getattr(result, field) for field in fields) if fields else result

    kernel = jax.jit(jax.vmap(one_pair, in_axes=axes))
    jax.block_until_ready(kernel(*args))
    with tempfile.TemporaryDirectory() as directory:
        with jax.profiler.trace(directory, create_perfetto_trace=True):
            jax.block_until_ready(kernel(*args))
        (path,) = glob.glob(f"{directory}/**/perfetto_trace.json.gz", recursive=True)
        with gzip.open(path) as file:
            trace = json.load(file)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    totals, counts = collections.Counter(), collections.Counter()
    for event in events:
        if event.get("ph") == "X" and not event["name"].startswith(_RUNTIME):
            totals[event["name"]] += event.get("dur", 0)
            counts[event["name"]] += 1
    return {name: (totals[name], counts[name]) for name in totals}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind")
    parser.add_argument("n_vertices", type=int)
    parser.add_argument("mode", choices=("sep", "pen"))
    parser.add_argument("query", choices=("distance", "signed_distance", "intersect"))
    parser.add_argument("--general", action="store_true")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--fields", default="", help="comma-separated result fields to return")
    options = parser.parse_args()
    times = operation_times(options.kind, options.n_vertices, options.mode == "pen", options.query,
                            jg.Config(specialised=not options.general),
                            tuple(field for field in options.fields.split(",") if field))
    by_count = collections.Counter()
    for total, count in times.values():
        by_count[count] += total
    print(f"{options.kind}/{options.n_vertices} {options.mode} {options.query}, {PAIRS} pairs: "
          f"{sum(by_count.values()) / 1e3:.1f} ms of operations")
    print("by run count (ms): " + ", ".join(f"{count}x: {total / 1e3:.1f}"
                                            for count, total in by_count.most_common(6)))
    for name, (total, count) in sorted(times.items(), key=lambda item: -item[1][0])[:options.top]:
        print(f"{total / 1e3:9.1f} ms {count:6d}x  {name}")


if __name__ == "__main__":
    main()
