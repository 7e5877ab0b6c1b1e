#!/usr/bin/env bash
# The GPU checks, in one run, on a machine with an NVIDIA GPU whose python3 already holds
# cupy, llvmlite, numpy and pytest: the tests marked gpu or nvrtc, then bench/gpu.py.
# Logs go to $OUT (or build/gpu-check). TEST_SECONDS and BENCH_SECONDS bound the steps;
# GPU_TEST_DIRS adds folders to the GPU tests, CPU_TEST_DIRS runs folders' tests of every kind.
set -u
out=${OUT:-build/gpu-check}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1

{
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    python3 -c 'import sys, cupy, numpy, llvmlite
print(sys.version.split()[0], "cupy", cupy.__version__, "numpy", numpy.__version__, "llvmlite", llvmlite.__version__)
print("cuda runtime", cupy.cuda.runtime.runtimeGetVersion(), "nvrtc", cupy.cuda.nvrtc.getVersion())'
    echo "mpiexec beside python3 or on PATH: $(ls "$(dirname "$(command -v python3)")"/mpiexec 2>/dev/null) $(command -v mpiexec)"
} 2>&1 | tee "$out/machine.txt"

# The console scripts (relaxc, ...) for the tests that run the tools, from the source tree.
export PYTHONPATH=$PWD/lib:$PWD
# Wheels carried in .whl (pyelftools for the object checks, mpich and mpi4py for Disco's
# worker processes) go to a private site folder.
if compgen -G ".whl/*.whl" >/dev/null; then
    site=/tmp/gpu-check-site
    python3 -m pip install -q --no-index --no-deps --no-compile --prefix $site .whl/*.whl \
        && export PYTHONPATH=$PYTHONPATH:$(python3 -c "import sys; print('$site/lib/python%d.%d/site-packages' % sys.version_info[:2])") \
            PATH=$site/bin:$PATH LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$site/lib
fi
bin=$(mktemp -d)
for tool in relaxc relaxas relaxld relaxrun; do
    printf '#!/bin/sh\nexec python3 -c "import sys; from %s.cli import main; sys.exit(main())" "$@"\n' "$tool" >"$bin/$tool"
    chmod +x "$bin/$tool"
done
export PATH=$bin:$PATH
timeout_flag=$(python3 -c 'import pytest_timeout' 2>/dev/null && echo "--timeout 240")

timeout "${TEST_SECONDS:-300}" python3 -m pytest -p no:cacheprovider -q -rfEs -n 8 $timeout_flag \
    -m "gpu or nvrtc" testsuite/codegen_cuda testsuite/runtime_cuda testsuite/tir_gpu_schedule testsuite/disco \
    ${GPU_TEST_DIRS:-} 2>&1 | tee "$out/tests.log" | tail -n 60
echo "gpu_check: tests exit ${PIPESTATUS[0]}"

# CPU_TEST_DIRS: more tests, every marker, on this machine's CPUs (another CPU kind, more cores).
if [ -n "${CPU_TEST_DIRS:-}" ]; then
    timeout "${TEST_SECONDS:-300}" python3 -m pytest -p no:cacheprovider -q -rfEs -n 8 $timeout_flag \
        $CPU_TEST_DIRS 2>&1 | tee "$out/cpu_tests.log" | tail -n 30
    echo "gpu_check: cpu tests exit ${PIPESTATUS[0]}"
fi

timeout "${BENCH_SECONDS:-200}" python3 bench/gpu.py "$@" 2>&1 | tee "$out/bench.txt"
echo "gpu_check: bench exit ${PIPESTATUS[0]}"
