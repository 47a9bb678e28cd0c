"""Test configuration: float64 available (inputs choose the dtype), a seeded generator per test, compiled
programs released after each test module and kept on disk for the run. XLA runs with the users' default
flags: under XLA:CPU's older fusion code generator (faster to compile) jaxlib 0.10.2 gave a needle box
against a capsule a depth 4.7e-5 off under `vmap` (`test_degenerate_boxes`, session 35)."""

import gc
import os
import shutil
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


def pytest_configure(config):
    if CACHE_VARIABLE not in os.environ:
        os.environ[CACHE_VARIABLE] = tempfile.mkdtemp(prefix="jaxgjk-test-compilation-cache-")
        config.stash[OWNED_CACHE] = os.environ[CACHE_VARIABLE]
    jax.config.update("jax_compilation_cache_dir", os.environ[CACHE_VARIABLE])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist: keep the items' order (below)
        config.option.loadscopereorder = False


# Seconds each module took in a full run under the README's command (`python -m benchmarks.suite_profile`,
# session 55, two workers on two cores), for the order below; modules not listed count as short.
MODULE_SECONDS = {
    "test_notebooks": 490, "test_gradients": 485, "test_colliders": 375, "test_refine": 315,
    "test_batch": 200, "test_distance": 155, "test_pose_derivatives": 135, "test_box_colliders": 125,
    "test_signed_distance": 110, "test_features": 105, "test_scene": 95, "test_hill_climb": 90,
    "test_packed": 85, "test_robot": 75, "test_main": 70, "test_robot_panda": 70, "test_collider_normals": 55,
    "test_broadphase": 50, "test_touching": 35, "test_trace": 30, "test_lp": 25, "test_smoothing": 25,
    "test_scales": 15,
}


def pytest_collection_modifyitems(config, items):
    """Run the longest modules first. Under xdist's `--dist loadfile` a worker takes the next module in
    this order whenever it runs out of tests (the controller's own reordering, by test count, is turned
    off in `pytest_configure`), so the workers finish within about one short module of each other; by
    test count the notebooks (a few tests, minutes) came late and could leave one worker running alone
    for minutes."""
    items.sort(key=lambda item: -MODULE_SECONDS.get(item.path.stem, 0))


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
