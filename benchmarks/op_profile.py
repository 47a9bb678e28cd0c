"""Where a query's time goes: XLA's own per-operation timings of one call of `jit(vmap(query))`.

    python -m benchmarks.op_profile ellipsoid-ellipsoid 0 sep distance [--general] [--top 30]
        [--fields distance,point_a,point_b] [--by-source]

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

`--by-source` sums the operations by the jaxgjk function that made them (the innermost `jaxgjk` frame
of the operation, or of the instructions fused into it, from the compiled program's stack frames;
`<module>:?` where XLA kept none, e.g. its library kernels). The queries' inlined `jax.jit`s
(`_gate.traced_once`) cut those stacks at their boundary, so this mode traces without them: the same
compiled program, with whole stacks.
"""

import argparse
import collections
import glob
import gzip
import json
import re
import tempfile

import jax
import numpy as np

import jaxgjk as jg

from . import cases as C

PAIRS, TILE = 65536, 256
# Trace events that are not compiled operations (the runtime's own spans).
_RUNTIME = ("ThunkExecutor", "$", "Pjit", "Slinky", "DevicePut")


def operation_times(kind, n_vertices, penetrating, query, config, fields=(), sources=False):
    """{operation name: (summed µs, run count)} of one call on the benchmark's batch; with `sources`,
    also {operation name: the jaxgjk function that made it} (`operation_sources`)."""
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

    kernel = jax.jit(jax.vmap(one_pair, in_axes=axes)).lower(*args).compile()
    times = compiled_operation_times(kernel, args)
    return (times, operation_sources(kernel.as_text())) if sources else times


def compiled_operation_times(kernel, args):
    """{operation name: (summed µs, run count)} of one call `kernel(*args)` of a compiled kernel, after
    one untimed call, from XLA's profiler trace."""
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


def operation_sources(hlo, depth=1):
    """{instruction name: "module.function:line"} of the compiled program `hlo` (optimized HLO text
    with its stack-frame tables): the innermost jaxgjk frame of the instruction, else of the first
    instruction fused into it that has one; with `depth` > 1, up to that many jaxgjk frames, innermost
    first, joined by " < "."""
    tables, table = {}, None
    for line in hlo.splitlines():
        if line in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            table = tables.setdefault(line, {})
        elif table is not None and re.match(r"\d+ ", line):
            key, value = line.split(" ", 1)
            table[int(key)] = value
        elif not line.strip():
            table = None
    if "StackFrames" not in tables:
        return {}
    fields = {table: {key: dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", value))
                      for key, value in tables[table].items()} for table in ("FileLocations", "StackFrames")}

    def source(frame):
        seen, names = set(), []
        while frame in fields["StackFrames"] and frame not in seen and len(names) < depth:
            seen.add(frame)
            location = fields["FileLocations"][fields["StackFrames"][frame]["file_location_id"]]
            path = tables["FileNames"][location["file_name_id"]].strip('"')
            if "/jaxgjk/" in path:
                module = path.rsplit("/", 1)[-1].removesuffix(".py")
                function = tables["FunctionNames"][location["function_name_id"]].strip('"')
                name = f"{module}.{function}:{location['line']}"
                names += [name] if name not in names[-1:] else []  # a generator's frame repeats its line
            frame = fields["StackFrames"][frame].get("parent_frame_id")
        return " < ".join(names) or None

    frames, computation = collections.defaultdict(list), None  # computation name: its instructions' frames
    for line in hlo.splitlines():
        header = re.match(r"^(?:ENTRY )?%(\S+) .*\{$", line)
        if header:
            computation = header.group(1)
        elif (frame := re.search(r"stack_frame_id=(\d+)", line)) and computation:
            frames[computation].append(int(frame.group(1)))
    sources = {}
    for line in hlo.splitlines():
        instruction = re.match(r"^\s+%(\S+) = ", line)
        if not instruction:
            continue
        candidates = [int(frame) for frame in re.findall(r"stack_frame_id=(\d+)", line)]
        if called := re.search(r"calls=%([^,\s]+)", line):
            candidates += frames.get(called.group(1), [])
        sources[instruction.group(1)] = next(filter(None, map(source, candidates)), None)
    return sources


def scenario_parser(description, top):
    """The command line of a query on a case: kind, polytope vertex count (0 otherwise), sep or pen,
    query, `--general` (force GJK/EPA) and `--top` (how many lines to print, default `top`)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("kind")
    parser.add_argument("n_vertices", type=int)
    parser.add_argument("mode", choices=("sep", "pen"))
    parser.add_argument("query", choices=("distance", "signed_distance", "intersect"))
    parser.add_argument("--general", action="store_true")
    parser.add_argument("--top", type=int, default=top)
    return parser


def main():
    parser = scenario_parser(__doc__.splitlines()[0], 30)
    parser.add_argument("--fields", default="", help="comma-separated result fields to return")
    parser.add_argument("--by-source", action="store_true",
                        help="sum the operations by the jaxgjk function that made them")
    options = parser.parse_args()
    if options.by_source:
        import jaxgjk._gate

        jaxgjk._gate.traced_once = lambda compute: compute  # whole stacks (see the module's docstring)
    times = operation_times(options.kind, options.n_vertices, options.mode == "pen", options.query,
                            jg.Config(specialised=not options.general),
                            tuple(field for field in options.fields.split(",") if field), options.by_source)
    if options.by_source:
        times, sources = times
        by_source = collections.Counter()
        for name, (total, count) in times.items():
            by_source[(sources.get(name) or f"<module>:{name.split('.')[0]}", count)] += total
        times = {f"{source} ({count}x)": (total, count) for (source, count), total in by_source.items()}
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
