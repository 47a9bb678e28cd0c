"""Test configuration: float64 available (inputs choose the dtype), a seeded generator per test, compiled
programs released after each test module and kept on disk for the run, XLA:CPU's faster-compiling code
generator."""

import gc
import os
import shutil
import subprocess
import sys
import tempfile

import jax
import numpy as np
import pytest

jax.config.update("jax_enable_x64", True)

# One run's compiled programs, shared by its worker processes through JAX's persistent compilation cache:
# a kernel that another module (or worker) compiled before loads from disk instead of compiling again
# (the modules release their programs, below). A fresh directory per run, made by the first process
# (the xdist controller, or the only one) and named to the workers in the environment.
CACHE_VARIABLE = "JAXGJK_TEST_COMPILATION_CACHE"
OWNED_CACHE = pytest.StashKey[str]()  # the directory this process made (removed when it ends)


# XLA:CPU's older fusion code generator: it compiles the kernels 5-35% faster than the default (MLIR
# fusion emitters; the suite's compile seconds 2 083 -> 1 373) with the same results to the last bit
# but for a rare ulp (`benchmarks/compile_flags.py`, session 18), at up to ~20% more run time, which
# the tests, mostly compiling, do not feel. Users keep XLA's default; the README shows the trade-off.
# XLA aborts the process on a flag it does not know, so a newer jaxlib without it is asked first, in a
# subprocess; an explicit setting of the flag in XLA_FLAGS is kept.
FAST_COMPILE_FLAG = "--xla_cpu_use_fusion_emitters=false"


def _with_fast_compile_flag(flags: str) -> str:
    """`flags` (an XLA_FLAGS value) with FAST_COMPILE_FLAG added if this jaxlib accepts it."""
    if FAST_COMPILE_FLAG.split("=")[0] in flags:
        return flags
    candidate = f"{flags} {FAST_COMPILE_FLAG}".strip()
    probe = subprocess.run([sys.executable, "-c", "import jax; jax.numpy.zeros(1).block_until_ready()"],
                           env=dict(os.environ, XLA_FLAGS=candidate, JAX_PLATFORMS="cpu"),
                           capture_output=True)
    return candidate if probe.returncode == 0 else flags


def pytest_configure(config):
    # Before any JAX computation (XLA reads the flags when its backend starts); the workers and the
    # subprocesses of the tests inherit the environment.
    os.environ["XLA_FLAGS"] = _with_fast_compile_flag(os.environ.get("XLA_FLAGS", ""))
    if CACHE_VARIABLE not in os.environ:
        os.environ[CACHE_VARIABLE] = tempfile.mkdtemp(prefix="jaxgjk-test-compilation-cache-")
        config.stash[OWNED_CACHE] = os.environ[CACHE_VARIABLE]
    jax.config.update("jax_compilation_cache_dir", os.environ[CACHE_VARIABLE])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)


def pytest_unconfigure(config):
    directory = config.stash.get(OWNED_CACHE, None)
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)
        del os.environ[CACHE_VARIABLE]


@pytest.fixture
def rng(request):
    """A NumPy generator seeded from the test's name (stable across runs; printed on failure)."""
    seed = sum(map(ord, request.node.name)) % 2**32
    request.node.user_properties.append(("seed", seed))
    return np.random.default_rng(seed)


@pytest.fixture(autouse=True, scope="module")
def release_compiled_programs():
    """Drop every compiled program once a module is done. XLA:CPU maps each kernel of a program into
    memory separately (~200-1000 mappings per query compiled), and a process has at most
    vm.max_map_count (65530) of them: a whole test run in one process hit it and LLVM segfaulted
    while compiling."""
    yield
    jax.clear_caches()
    gc.collect()
