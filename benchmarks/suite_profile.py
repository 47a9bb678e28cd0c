"""Where the test suite's time goes: a pytest plugin that records, per test, its wall time and the XLA
compiles JAX reports for it (count, backend compile seconds), and the trace and lowering seconds.

    PYTHONPATH=. .venv/bin/python -m pytest tests -n auto --maxprocesses 4 --dist loadfile \\
        -p benchmarks.suite_profile
    python -m benchmarks.suite_profile [--top 40]

Each pytest process (each xdist worker) writes `suite_profile_<worker>.json` in $SUITE_PROFILE_DIR
(default: the current directory); the second command sums those files per module and lists the slowest
tests. Times are wall seconds of this machine, with the other workers' load included: compare runs
made the same way, and ratios more than seconds.
"""

import argparse
import collections
import glob
import json
import os
import time

import pytest

COMPILE = "/jax/core/compile/backend_compile_duration"
TRACE = "/jax/core/compile/jaxpr_trace_duration"
LOWER = "/jax/core/compile/jaxpr_to_mlir_module_duration"
_state = {"test": None, "records": collections.defaultdict(lambda: collections.defaultdict(float))}


def _on_duration(event, duration, **_):
    """jax.monitoring listener: add `duration` seconds (and one count) to the running test's `event`."""
    record = _state["records"][_state["test"] or "<outside tests>"]
    record[event] += duration
    record[event + "#"] += 1


def pytest_configure(config):
    import jax.monitoring

    jax.monitoring.register_event_duration_secs_listener(_on_duration)


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
        json.dump({test: dict(record) for test, record in _state["records"].items()}, file)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=40, help="slowest tests to list")
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


if __name__ == "__main__":
    main()
