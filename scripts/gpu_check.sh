#!/usr/bin/env bash
# For a lent GPU machine (README: "On a GPU"): builds symtrace for its
# python3 (no LLVM there: the CPU side uses the interp backend), then runs
# what is asked: `tests` (every GPU test file), `verify` (the tests, then
# BERT base against PyTorch, then the 50-step loss parity with dropout 0:
# the one command a session with a GPU should start with),
# `profile` (bench/micro/gpu_step_profile.py: device time per kernel
# group, symtrace against PyTorch eager and torch.compile), `ab` (BERT base
# with the generated kernels' walks at a point a trip, SYMTRACE_CUDA_UNROLL=1,
# at 2 and at the default 4, and the row kernels' bound at 1024 against the
# default 256, alternating twice), `bench ARGS...`
# (the BERT benchmark with ARGS), or a Python command `py ARGS...`. Several
# steps may follow one another: `tests bench --config tiny --steps 5 --`.
# Logs go to $OUT (the device tool's folder) or bench/out.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${OUT:-bench/out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
log() { echo "== $(date +%T) $*"; }

build() {
    log "build with $($py -V 2>&1) at $(command -v $py)"
    nvidia-smi -L 2>&1 | head -2
    local inc
    inc=$($py -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
    if [ ! -f "$inc/Python.h" ] && [ -d .device/pyinc/python3.12 ]; then
        log "no Python.h in $inc: using the carried 3.12 headers"
        mkdir -p "$inc" && cp -r .device/pyinc/python3.12/. "$inc/"
    fi
    if [ ! -f build/gpu/build.ninja ]; then
        meson setup build/gpu -Dwerror=false -Dllvm=disabled -Dpython_exe="$py" >"$out/setup.log" 2>&1 \
            || { tail -30 "$out/setup.log"; return 1; }
    fi
    ninja -C build/gpu >"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; return 1; }
    local so
    so=$(cd build/gpu && ls _C.cpython-*.so | head -1)
    rm -f symtrace/_C.cpython-*.so
    ln -s "../build/gpu/$so" "symtrace/$so"
    $py -c 'import symtrace as st; print("cuda", st.cuda.is_available(), st.cuda.get_device_name(), st.cuda.nvrtc_status())'
}

build || exit 1
while [ $# -gt 0 ]; do
    step=$1; shift
    case $step in
    tests)
        log "GPU tests"
        timeout ${TEST_TIMEOUT:-300} $py -m pytest -q tests/python/test_gpu.py tests/python/test_gpu_api.py \
            tests/python/test_gpu_interop.py tests/python/test_cuda.py \
            -p no:cacheprovider --timeout 120 -rf 2>&1 | tee "$out/tests.log" | tail -60
        ;;
    verify)
        export SYMTRACE_CACHE_DIR=${SYMTRACE_CACHE_DIR:-/tmp/symtrace-cache}
        log "GPU tests"
        timeout 240 $py -m pytest -q tests/python/test_gpu.py tests/python/test_gpu_api.py \
            tests/python/test_gpu_interop.py tests/python/test_cuda.py \
            -p no:cacheprovider --timeout 120 -rf 2>&1 | tee "$out/tests.log" | tail -30
        log "BERT base against PyTorch"
        timeout 240 $py -m bench.bert_pretrain --config base --steps 12 --compare torch \
            --json "$out/base.json" 2>&1 | tee -a "$out/bench.log" | grep -E "^\| (run|symtrace|torch)|parity"
        log "BERT base, dropout 0, 50 steps: loss parity with PyTorch eager"
        timeout 150 $py -m bench.bert_pretrain --config base --steps 50 --dropout 0 --compare torch-eager \
            --json "$out/base_parity.json" 2>&1 | tee -a "$out/bench.log" | grep -E "^\| (run|symtrace|torch)|parity"
        ;;
    ab)
        # the generated kernels' walks: a point a trip (SYMTRACE_CUDA_UNROLL=1,
        # the code before 4 points a trip), 2, and the default 4, alternating
        export SYMTRACE_CACHE_DIR=${SYMTRACE_CACHE_DIR:-/tmp/symtrace-cache}
        for run in 1 2; do
            for u in 1 2 4; do
                log "A/B run $run: BERT base, SYMTRACE_CUDA_UNROLL=$u"
                SYMTRACE_CUDA_UNROLL=$u timeout 200 $py -m bench.bert_pretrain --config base --steps 12 \
                    --json "$out/ab_u${u}_r${run}.json" 2>&1 | tee -a "$out/ab.log" | grep -E "^\| (run|symtrace)"
            done
            # the row kernels' register room: 4-point walks under the old
            # __launch_bounds__(1024) (spills) against the default 256
            log "A/B run $run: BERT base, SYMTRACE_CUDA_ROW_BOUND=1024"
            SYMTRACE_CUDA_ROW_BOUND=1024 timeout 200 $py -m bench.bert_pretrain --config base --steps 12 \
                --json "$out/ab_rb1024_r${run}.json" 2>&1 | tee -a "$out/ab.log" | grep -E "^\| (run|symtrace)"
        done
        ;;
    profile)
        export SYMTRACE_CACHE_DIR=${SYMTRACE_CACHE_DIR:-/tmp/symtrace-cache}
        log "where the BERT base step goes on the device (CUPTI), symtrace and PyTorch"
        timeout 240 $py -m bench.micro.gpu_step_profile --runs st,torch,compile --config base --steps 10 \
            2>&1 | grep -v USDT > "$out/profile.txt"
        grep -E "^##|^   [a-z]" "$out/profile.txt"
        ;;
    bench|py)
        args=()
        while [ $# -gt 0 ] && [ "$1" != "--" ]; do args+=("$1"); shift; done
        [ $# -gt 0 ] && shift
        if [ "$step" = bench ]; then
            log "bench ${args[*]}"
            timeout ${BENCH_TIMEOUT:-300} $py -m bench.bert_pretrain "${args[@]}" 2>&1 | tee -a "$out/bench.log" | tail -40
        else
            log "py ${args[*]}"
            timeout ${BENCH_TIMEOUT:-300} $py "${args[@]}" 2>&1 | tee -a "$out/py.log" | tail -60
        fi
        ;;
    *) echo "unknown step $step"; exit 2 ;;
    esac
done
