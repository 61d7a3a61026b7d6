#!/usr/bin/env bash
# scripts/test.sh - runs every test: set-up and build (scripts/setup.sh), the C
# unit tests, pytest under Python 3.11 and 3.12, and the C unit tests again
# under AddressSanitizer + UndefinedBehaviorSanitizer. Every stage runs even
# when an earlier one failed; a summary table closes the output, and the exit
# status is non-zero when any stage failed.
#
# Options: --no-312 (skip the 3.12 venv and tests), --no-asan.
# Env: SYMTRACE_STAGE_TIMEOUT = seconds allowed to each test stage (default 900).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

SETUP_ARGS=()
WANT_312=1
WANT_ASAN=1
for arg in "$@"; do
  case "$arg" in
    --no-312) WANT_312=0; SETUP_ARGS+=(--no-312) ;;
    --no-asan) WANT_ASAN=0 ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "[test] unknown option: $arg" >&2; exit 2 ;;
  esac
done

STAGE_TIMEOUT=${SYMTRACE_STAGE_TIMEOUT:-900}
SETUP_TIMEOUT=2700           # a fresh machine installs apt packages and torch
export PATH=$ROOT/.venv/bin:$PATH

# Exit status by which a stage says "skipped" (as automake's tests do).
SKIP=77

# ---- stage bodies (run through `timeout`, so exported)
pytest_stage() {             # pytest_stage VENV
  local py=$ROOT/$1/bin/python
  if [ ! -x "$py" ]; then echo "[test] $1 does not exist"; return 1; fi
  local rc=0
  "$py" -m pytest -q tests/python || rc=$?
  if [ "$rc" -eq 5 ]; then
    if [ -n "$(find tests/python -name 'test_*.py' -o -name '*_test.py' 2>/dev/null | head -n 1)" ]; then
      echo "[test] pytest collected no tests, but tests/python has test files: failed"
      return 1
    fi
    echo "[test] tests/python has no test files yet: skipped"
    return "$SKIP"
  fi
  return "$rc"
}

asan_stage() {
  local dir=build/asan
  local opts=(-Dpython=disabled -Db_sanitize=address,undefined -Db_lundef=false
              -Dbuildtype=debug)
  if [ -f "$dir/meson-private/coredata.dat" ]; then
    meson setup --reconfigure "$dir" "${opts[@]}" >build/logs/asan-configure.log 2>&1 \
      || { echo "[test] reconfigure of $dir failed: wiping it"; rm -rf "$dir"; }
  fi
  if [ ! -f "$dir/meson-private/coredata.dat" ]; then
    rm -rf "$dir"
    meson setup "$dir" "${opts[@]}" >build/logs/asan-configure.log 2>&1 \
      || { tail -n 30 build/logs/asan-configure.log; return 1; }
  fi
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    meson test -C "$dir" --print-errorlogs
}
export -f pytest_stage asan_stage
export ROOT SKIP

# NVRTC for the renderer's compile checks (tests/c/test_nvrtc.c): the lib
# directory of the nvidia-cuda-nvrtc wheel in .venv (scripts/setup.sh
# installs it); an explicit SYMTRACE_NVRTC_PATH wins.
nvrtc_dir() {
  "$ROOT/.venv/bin/python" - <<'PY' 2>/dev/null
import glob, os, site
for sp in site.getsitepackages():
    for d in sorted(glob.glob(os.path.join(sp, "nvidia", "*", "lib")), reverse=True):
        if glob.glob(os.path.join(d, "libnvrtc.so*")):
            print(d)
            raise SystemExit
PY
}

# ---- stage runner
NAMES=()
RESULTS=()
SECS=()

# stage NAME TIMEOUT CMD...: runs CMD, records passed / failed / skipped and time.
stage() {
  local name=$1 limit=$2; shift 2
  echo
  echo "==== [test] $name ===="
  local t0=${EPOCHREALTIME/./} rc=0 result
  local targs=(-k 30)
  [ -t 0 ] && targs+=(--foreground)   # keep Ctrl-C working in a terminal
  timeout "${targs[@]}" "$limit" "$@" </dev/null || rc=$?
  case "$rc" in
    0) result=passed ;;
    "$SKIP") result=skipped ;;
    124|137) result="failed (timed out after ${limit}s)" ;;
    *) result="failed (exit $rc)" ;;
  esac
  NAMES+=("$name")
  RESULTS+=("$result")
  local us=$(( ${EPOCHREALTIME/./} - t0 ))
  SECS+=("$((us / 1000000)).$(( us % 1000000 / 100000 ))")
  echo "==== [test] $name: $result"
}
skip_stage() {               # skip_stage NAME WHY
  echo
  echo "==== [test] $1: skipped ($2)"
  NAMES+=("$1"); RESULTS+=("skipped"); SECS+=(0.0)
}

mkdir -p build/logs
stage setup "$SETUP_TIMEOUT" bash scripts/setup.sh "${SETUP_ARGS[@]}"
if [ -z "${SYMTRACE_NVRTC_PATH:-}" ]; then
  SYMTRACE_NVRTC_PATH=$(nvrtc_dir || true)
  [ -n "$SYMTRACE_NVRTC_PATH" ] && export SYMTRACE_NVRTC_PATH \
    || echo "[test] no nvidia-cuda-nvrtc wheel in .venv: test_nvrtc will be skipped"
fi
stage c-tests "$STAGE_TIMEOUT" meson test -C build/py311 --print-errorlogs
stage pytest-py311 "$STAGE_TIMEOUT" bash -c 'pytest_stage .venv'
if [ "$WANT_312" = 0 ]; then
  skip_stage pytest-py312 "--no-312"
elif [ -x .venv312/bin/python ]; then
  stage pytest-py312 "$STAGE_TIMEOUT" bash -c 'pytest_stage .venv312'
else
  skip_stage pytest-py312 "no .venv312: no Python 3.12 on this machine"
fi
if [ "$WANT_ASAN" = 1 ]; then
  stage asan-ubsan "$STAGE_TIMEOUT" bash -c asan_stage
else
  skip_stage asan-ubsan "--no-asan"
fi

# ---- summary
passed=0 failed=0 skipped=0
echo
echo "==== [test] summary"
printf '%-14s %-32s %8s\n' stage result seconds
for i in "${!NAMES[@]}"; do
  printf '%-14s %-32s %8s\n' "${NAMES[$i]}" "${RESULTS[$i]}" "${SECS[$i]}"
  case "${RESULTS[$i]}" in
    passed) passed=$((passed + 1)) ;;
    skipped) skipped=$((skipped + 1)) ;;
    *) failed=$((failed + 1)) ;;
  esac
done
if [ "$skipped" -gt 0 ]; then
  echo "stages: $passed passed, $failed failed, $skipped skipped"
else
  echo "stages: $passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
