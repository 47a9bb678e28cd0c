"""Where one kernel's XLA compile goes: the compile of one of `benchmarks.compile_flags`'s kernels under
JAX's profiler, its trace events summed by name (XLA:CPU annotates its stages: HLO passes, each
fusion's MLIR emitter, LLVM code generation).

    PYTHONPATH=. python benchmarks/results/session53/compile_stages.py [KERNEL] [--events 30]

KERNEL indexes `compile_flags._kernels()` (0 mixed `signed_distance`, 1 mixed `distance`, 2 typed
ellipsoid `signed_distance`; float32, 256 pairs). Stages run on XLA's threads overlap, so their sums
can exceed the wall time.
"""

import argparse
import collections
import glob
import gzip
import json
import tempfile
import time

import jax

from benchmarks import compile_flags


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kernel", type=int, nargs="?", default=2)
    parser.add_argument("--events", type=int, default=30)
    args = parser.parse_args()
    name, kernel, arguments = compile_flags._kernels()[args.kernel]
    lowered = kernel.lower(*arguments)
    with tempfile.TemporaryDirectory() as directory:
        jax.profiler.start_trace(directory)
        start = time.perf_counter()
        lowered.compile()
        seconds = time.perf_counter() - start
        jax.profiler.stop_trace()
        (path,) = glob.glob(f"{directory}/**/*.trace.json.gz", recursive=True)
        with gzip.open(path) as file:
            events = json.load(file)["traceEvents"]
    total, count = collections.Counter(), collections.Counter()
    for event in events:
        if event.get("ph") == "X":
            total[event["name"]] += event["dur"] / 1e6
            count[event["name"]] += 1
    print(f"{name}: compile {seconds:.2f} s")
    for event, event_seconds in total.most_common(args.events):
        print(f"{event_seconds:8.2f} s {count[event]:6d}  {event[:100]}")


if __name__ == "__main__":
    main()
