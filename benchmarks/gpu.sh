#!/usr/bin/env bash
# The GPU record (issue 15): run on a machine with one NVIDIA GPU and a CUDA JAX, from the repository
# root, with the results written to $OUT (default benchmarks/results/gpu).
#   benchmarks/gpu.sh tests   # the test suite on the GPU (the default JAX device), 14 workers
#   TESTS="tests/test_a.py tests/test_b.py" benchmarks/gpu.sh tests   # part of it
#   benchmarks/gpu.sh bench   # jaxgjk float32 at 1e4..1e7 pairs, MJX on the GPU, MuJoCo C on one core
# Wheels in .whl/ (MuJoCo and MJX for the peers, which the GPU machine may lack) are installed into
# /tmp/site first; jaxgjk itself runs from the checkout.
set -uo pipefail
OUT=${OUT:-benchmarks/results/gpu}
mkdir -p "$OUT"
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
# several processes share the GPU: allocate on demand, not 75% of its memory each
export XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv \
    | tee "$OUT/device.txt"
python3 -c "import jax, jaxlib; print('jax', jax.__version__, 'jaxlib', jaxlib.__version__, jax.devices())" \
    | tee -a "$OUT/device.txt"
case "${1:-bench}" in
tests)
    # one line per test as it ends (a run stopped by the time limit still names its failures);
    # the whole suite took over 530 s there with 14 workers: name part of it in TESTS to split it
    timeout "${TESTS_TIMEOUT:-540}" python3 -m pytest ${TESTS:-tests} -n 14 --dist load \
        -p no:cacheprovider --verbosity=1 -rfE --tb=short --durations=25 2>&1 \
        | grep -v -E "^\[gw[0-9]+\] \[ *[0-9]+%\] PASSED" | tee "$OUT/tests.log"
    ;;
bench)
    # MuJoCo C builds one model of 2 N geoms per run (N = 1e5 took 130 s per model there); MJX's
    # model holds one pair whatever N is.
    peers="--peers ${PEERS:-mjx,mujoco_native} --peer-n ${PEER_N:-10000}"
    [ "${PEERS:-}" = none ] && peers=--no-peers
    timeout "${BENCH_TIMEOUT:-560}" python3 -m benchmarks.run \
        --cases "${CASES:-box-box,capsule-box,ellipsoid-ellipsoid,cylinder-box,polytope-polytope/32}" \
        --queries distance,signed_distance --dtypes float32 --sizes "${SIZES:-1e4,1e5,1e6,1e7}" \
        --chunk 1000000 --distinct 1000000 $peers \
        --acc-n 2000 --arbiter-n 10 --budget 20 --mjx-budget 20 --no-plots --tag "${TAG:-gpu}" \
        --out "$OUT" 2>&1 | tee "$OUT/bench.log"
    ;;
esac
