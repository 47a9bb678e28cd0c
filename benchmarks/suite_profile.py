"""Where the test suite's time goes: a pytest plugin that records, per test, its wall time and the XLA
compiles JAX reports for it (count, backend compile seconds), the trace and lowering seconds, and each
program compiled (its name and argument types as JAX logs them, seconds, whether the persistent
compilation cache held it).

    PYTHONPATH=. .venv/bin/python -m pytest tests -n auto --maxprocesses 4 --dist loadfile \\
        -p benchmarks.suite_profile
    python -m benchmarks.suite_profile [--top 40] [--programs 30]

Each pytest process (each xdist worker) writes `suite_profile_<worker>.json` in $SUITE_PROFILE_DIR
(default: the current directory); the second command sums those files per module, lists the slowest
tests and, with `--programs`, the programs that took the most compile seconds and the programs of one
module compiled more than once with the same name and argument types: often one program traced anew
for each constant its closure holds (a noise scale, a shape), which could take that value as an
argument and compile once (`tests/test_smoothing.py`, session 53); or two different programs with the
same signature. Times are wall seconds of this machine, with the other workers' load included:
compare runs made the same way, and ratios more than seconds.
"""

import argparse
import collections
import glob
import json
import logging
import os
import re
import time

import pytest

COMPILE = "/jax/core/compile/backend_compile_duration"
TRACE = "/jax/core/compile/jaxpr_trace_duration"
LOWER = "/jax/core/compile/jaxpr_to_mlir_module_duration"
_state = {"test": None, "records": collections.defaultdict(lambda: collections.defaultdict(float)),
          "programs": collections.defaultdict(list), "compiling": None}
# JAX's log lines (at DEBUG) around each compile, from the loggers that write them.
_COMPILING = re.compile(r"Compiling (.+?) with global shapes and types (.*)\. Argument mapping", re.S)
_CACHE = re.compile(r"Persistent compilation cache (hit|miss) for", re.I)
_FINISHED = re.compile(r"Finished XLA compilation of .+ in ([0-9.]+) sec")
_LOGGERS = ("jax._src.interpreters.pxla", "jax._src.compiler", "jax._src.dispatch")
TYPES_KEPT = 300  # characters of a program's argument types recorded


class _ProgramLog(logging.Handler):
    """Adds each program JAX compiles to the running test's list: [name, argument types, seconds
    (loading it from the persistent cache, for a hit), whether the cache held it]."""

    def emit(self, record):
        message = record.getMessage()
        if match := _COMPILING.match(message):
            _state["compiling"] = [match.group(1), match.group(2)[:TYPES_KEPT], 0.0, False]
        elif (match := _CACHE.match(message)) and _state["compiling"]:
            _state["compiling"][3] = match.group(1).lower() == "hit"
        elif (match := _FINISHED.match(message)) and _state["compiling"]:
            _state["compiling"][2] = float(match.group(1))
            _state["programs"][_state["test"] or "<outside tests>"].append(_state["compiling"])
            _state["compiling"] = None


def _on_duration(event, duration, **_):
    """jax.monitoring listener: add `duration` seconds (and one count) to the running test's `event`."""
    record = _state["records"][_state["test"] or "<outside tests>"]
    record[event] += duration
    record[event + "#"] += 1


def pytest_configure(config):
    import jax.monitoring

    jax.monitoring.register_event_duration_secs_listener(_on_duration)
    handler = _ProgramLog(logging.DEBUG)
    for name in _LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG)
        logging.getLogger(name).addHandler(handler)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _state["test"] = item.nodeid
    started = time.perf_counter()
    yield
    _state["records"][item.nodeid]["wall"] = time.perf_counter() - started
    _state["test"] = None


def pytest_sessionfinish(session):
    if not _state["records"]:  # the xdist controller runs no tests
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    path = os.path.join(os.environ.get("SUITE_PROFILE_DIR", "."), f"suite_profile_{worker}.json")
    with open(path, "w") as file:
        json.dump({test: dict(record, programs=_state["programs"].get(test, []))
                   for test, record in _state["records"].items()}, file)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=40, help="slowest tests to list")
    parser.add_argument("--programs", type=int, default=0,
                        help="programs to list by compile seconds, and repeated ones")
    args = parser.parse_args()
    directory = os.environ.get("SUITE_PROFILE_DIR", ".")
    tests = {}
    for path in sorted(glob.glob(os.path.join(directory, "suite_profile_*.json"))):
        with open(path) as file:
            worker = path.rsplit("_", 1)[1].removesuffix(".json")
            tests.update({test: dict(record, worker=worker) for test, record in json.load(file).items()})
    modules = collections.defaultdict(collections.Counter)
    for test, record in tests.items():
        module = modules[test.split("::")[0]]
        for key in ("wall", COMPILE, COMPILE + "#", TRACE, LOWER):
            module[key] += record.get(key, 0)
    print(f"{'module':42s} {'wall s':>8s} {'compile s':>10s} {'compiles':>9s} {'trace s':>8s} "
          f"{'lower s':>8s}")
    for name, module in sorted(modules.items(), key=lambda item: -item[1]["wall"]):
        print(f"{name:42s} {module['wall']:8.1f} {module[COMPILE]:10.1f} {module[COMPILE + '#']:9.0f} "
              f"{module[TRACE]:8.1f} {module[LOWER]:8.1f}")
    workers = collections.Counter()
    for record in tests.values():
        workers[record["worker"]] += record.get("wall", 0)
    print("tests' wall seconds per worker:", {worker: round(total, 1) for worker, total in workers.items()})
    print(f"\nslowest {args.top} tests:")
    for test, record in sorted(tests.items(), key=lambda item: -item[1].get("wall", 0))[:args.top]:
        print(f"{record.get('wall', 0):7.1f} s  compile {record.get(COMPILE, 0):6.1f} s in "
              f"{record.get(COMPILE + '#', 0):4.0f}  {test}")
    if args.programs:
        _print_programs(tests, args.programs)


def _print_programs(tests, count):
    """The programs compiled (not loaded from the cache) that took the most seconds, and those compiled
    more than once in one module with the same name and argument types."""
    compiled = [(test, *program) for test, record in tests.items()
                for program in record.get("programs", []) if not program[3]]
    loaded = sum(program[2] for record in tests.values() for program in record.get("programs", [])
                 if program[3])
    print(f"\n{len(compiled)} programs compiled in {sum(p[3] for p in compiled):.1f} s; "
          f"{loaded:.1f} s loading programs from the persistent cache")
    print(f"\nlongest {count} compiles:")
    for test, name, types, seconds, _ in sorted(compiled, key=lambda p: -p[3])[:count]:
        print(f"{seconds:7.1f} s  {name[:32]:32s} {test}\n{'':11s}{types[:110]}")
    repeated = collections.defaultdict(list)
    for test, name, types, seconds, _ in compiled:
        repeated[(test.split("::")[0], name, types)].append(seconds)
    repeated = sorted(((sum(s) - max(s), key, s) for key, s in repeated.items() if len(s) > 1),
                      reverse=True)
    print(f"\nsame module, name and argument types compiled more than once (seconds beyond the "
          f"longest, count): {sum(r[0] for r in repeated):.1f} s")
    for beyond, (module, name, types), seconds in repeated[:count]:
        print(f"{beyond:7.1f} s  {len(seconds):3d}x  {name[:32]:32s} {module}\n{'':11s}{types[:110]}")


if __name__ == "__main__":
    main()
