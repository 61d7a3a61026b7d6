#!/usr/bin/env bash
# scripts/setup.sh - installs what is missing and builds symtrace. Idempotent:
# on a machine that has everything it only checks, reconfigures and runs ninja.
#
#   Debian packages  installed with apt-get only when dpkg says one is missing
#   .venv            Python 3.11 + numpy pytest h5py matplotlib tqdm meson ninja torch
#                    nvidia-cuda-nvrtc (NVRTC 13 as a wheel: the renderer's
#                    compile checks run without a GPU or a CUDA toolkit)
#   .venv312         Python 3.12 (pyenv's, or $SYMTRACE_PY312) + numpy pytest meson ninja
#   build/py311      meson build with the _C extension for .venv's python
#   build/py312      the same for .venv312 (when a python3.12 exists)
#   symtrace/_C*.so  relative symlinks to the built extensions, so that
#                    `import symtrace` works from the repo root
#
# Options: --no-312 (skip 3.12), --no-build (dependencies only).
# Env: SYMTRACE_PY311 / SYMTRACE_PY312 = the interpreters to build venvs from.
# Logs of each step: build/logs/setup-*.log (shown only when a step fails).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
LOGDIR=$ROOT/build/logs
mkdir -p "$LOGDIR"

WANT_312=1
BUILD=1
for arg in "$@"; do
  case "$arg" in
    --no-312) WANT_312=0 ;;
    --no-build) BUILD=0 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "[setup] unknown option: $arg" >&2; exit 2 ;;
  esac
done

APT_PKGS=(build-essential pkg-config ninja-build libxxhash-dev libopenblas-dev
          llvm-19-dev python3-venv python3-dev)
REQS_311=(numpy pytest h5py matplotlib tqdm meson ninja torch==2.13.0 safetensors
          nvidia-cuda-nvrtc==13.5.37)
REQS_312=(numpy pytest meson ninja)

say() { echo "[setup] $*"; }

# quiet NAME CMD...: runs CMD with its output in build/logs/setup-NAME.log;
# on failure shows the log's tail and returns CMD's status.
quiet() {
  local name=$1; shift
  local log=$LOGDIR/setup-$name.log
  local rc=0
  "$@" >"$log" 2>&1 </dev/null || rc=$?
  if [ "$rc" -ne 0 ]; then
    say "FAILED ($name, exit $rc): $*"
    if [ "$(grep -c -E '(^FAILED:|error:|ERROR)' "$log")" -gt 0 ]; then
      say "---- first errors in $log ----"
      grep -E '(^FAILED:|error:|ERROR)' "$log" | head -n 15 | sed 's/^/    /'
    fi
    say "---- last lines of $log ----"
    tail -n 25 "$log" | sed 's/^/    /'
  fi
  return "$rc"
}

# ---- Debian packages
missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
    || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  SUDO=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { say "need root or sudo to install: ${missing[*]}"; exit 1; }
    SUDO=(sudo)
  fi
  say "apt-get install ${missing[*]} ..."
  quiet apt-update "${SUDO[@]}" apt-get update -q
  quiet apt-install "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# ---- Python interpreters
# is_py EXE MAJOR.MINOR: EXE runs and is that version.
is_py() {
  "$1" -c "import sys; sys.exit(0 if '%d.%d' % sys.version_info[:2] == '$2' else 1)" \
    >/dev/null 2>&1
}

find_py311() {
  if [ -n "${SYMTRACE_PY311:-}" ]; then echo "$SYMTRACE_PY311"; return; fi
  local c
  for c in python3 python3.11 /usr/bin/python3; do
    if command -v "$c" >/dev/null && is_py "$c" 3.11; then command -v "$c"; return; fi
  done
  return 1
}

find_py312() {
  if [ -n "${SYMTRACE_PY312:-}" ]; then echo "$SYMTRACE_PY312"; return; fi
  local roots=() r c
  command -v pyenv >/dev/null && roots+=("$(pyenv root 2>/dev/null)")
  roots+=("${PYENV_ROOT:-$HOME/.pyenv}")
  for r in "${roots[@]}"; do
    [ -d "$r/versions" ] || continue
    c=$(ls -d "$r"/versions/3.12.*/bin/python3 2>/dev/null | sort -V | tail -n 1)
    if [ -n "$c" ] && is_py "$c" 3.12; then echo "$c"; return; fi
  done
  # python3.12 on PATH, but not a pyenv shim that refuses to run.
  if command -v python3.12 >/dev/null && is_py python3.12 3.12; then
    command -v python3.12; return
  fi
  return 1
}

# ensure_venv DIR PYTHON MAJOR.MINOR REQS...: creates DIR if it is missing or
# broken, installs REQS unless DIR/.symtrace-reqs already records them.
ensure_venv() {
  local dir=$1 base=$2 ver=$3; shift 3
  local tag=${dir//./}
  if ! is_py "$ROOT/$dir/bin/python" "$ver"; then
    say "creating $dir with $base ..."
    rm -rf "$ROOT/$dir"
    quiet "venv-$tag" "$base" -m venv "$ROOT/$dir"
  fi
  local stamp want
  want="$("$ROOT/$dir/bin/python" -VV | tr '\n' ' ') | $*"
  stamp=$(cat "$ROOT/$dir/.symtrace-reqs" 2>/dev/null || true)
  if [ "$stamp" = "$want" ] && [ -x "$ROOT/$dir/bin/meson" ] \
     && [ -x "$ROOT/$dir/bin/ninja" ] && [ -x "$ROOT/$dir/bin/pytest" ]; then
    return 0
  fi
  say "pip install into $dir: $* ..."
  quiet "pip-$tag" "$ROOT/$dir/bin/python" -m pip install --disable-pip-version-check "$@"
  echo "$want" > "$ROOT/$dir/.symtrace-reqs"
}

PY311=$(find_py311) || { say "no Python 3.11 found (apt-get install python3 python3-venv)"; exit 1; }
ensure_venv .venv "$PY311" 3.11 "${REQS_311[@]}"

HAVE_312=0
if [ "$WANT_312" = 1 ]; then
  if PY312=$(find_py312); then
    ensure_venv .venv312 "$PY312" 3.12 "${REQS_312[@]}"
    HAVE_312=1
  else
    say "no Python 3.12 (pyenv or SYMTRACE_PY312): skipping .venv312"
  fi
fi

[ "$BUILD" = 1 ] || { say "dependencies ready (--no-build)"; exit 0; }

# ---- builds. One meson/ninja (from .venv) for every build folder.
export PATH=$ROOT/.venv/bin:$PATH
MESON=$ROOT/.venv/bin/meson

# build_ext DIR VENV: configures (or reconfigures) DIR for VENV's python, builds
# it, and links the extension into symtrace/.
build_ext() {
  local dir=$1 venv=$2 tag=${1##*/}
  local py=$ROOT/$venv/bin/python
  local opts=(-Dpython=enabled "-Dpython_exe=$py")
  if [ -f "$dir/meson-private/coredata.dat" ]; then
    if ! quiet "configure-$tag" "$MESON" setup --reconfigure "$dir" "${opts[@]}"; then
      say "reconfigure of $dir failed: wiping it and configuring afresh ..."
      rm -rf "$dir"
    fi
  fi
  if [ ! -f "$dir/meson-private/coredata.dat" ] || [ ! -f "$dir/build.ninja" ]; then
    rm -rf "$dir"
    say "configuring $dir ..."
    quiet "configure-$tag" "$MESON" setup "$dir" "${opts[@]}" || return 1
  fi
  say "building $dir ..."
  local rc=0 ext
  # -k 0: build everything that can be built, so that a broken C test does
  # not keep the extension (and pytest) from being usable.
  quiet "build-$tag" ninja -k 0 -C "$dir" || rc=1
  ext=$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  if [ -f "$dir/_C$ext" ] && ninja -C "$dir" -n "_C$ext" 2>/dev/null | grep -q 'no work to do'; then
    ln -sfn "../$dir/_C$ext" "symtrace/_C$ext"
    [ "$rc" = 0 ] || say "$dir: the extension _C$ext is up to date and linked, but other targets failed"
  else
    # never leave a stale extension importable
    rm -f "symtrace/_C$ext"
    say "$dir: no up-to-date _C$ext: symtrace/_C$ext removed"
    rc=1
  fi
  return "$rc"
}

status=0
build_ext build/py311 .venv || status=1
if [ "$HAVE_312" = 1 ]; then
  build_ext build/py312 .venv312 || status=1
fi
if [ "$status" = 0 ]; then
  say "ready: .venv/bin/python -c 'import symtrace'"
fi
exit "$status"
