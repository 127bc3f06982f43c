#!/usr/bin/env bash
# Build the compiled regressor kernel (robot_identification/regressor/build/
# libregressor_kernel.so: in a folder that is no Python package, not mistaken for a module)
# against the header-only pinocchio of the `pin` wheel and Eigen of `cmeel-eigen` in the venv
# given as $1 (default .venv), for this checkout's code (a wheel from `pip install .` holds its
# own; scripts/native_build.py compiles both, with its build cache). Optional: without it the
# regressor runs its pure-Python path. Never fails: on any problem it prints one warning line
# and exits 0.
# `build_kernel.sh VENV SOURCE OUTPUT` compiles another source the same way (the C++
# reference loop of benchmarks/regressor_throughput.py) and does nothing else.
cd "$(dirname "$0")/.."
VENV=${1:-.venv}
PY="$(cd "$VENV" 2>/dev/null && pwd)/bin/python"
warn() { echo "warning: compiled regressor kernel not built ($1); the pure-Python regressor" \
  "is used" >&2; exit 0; }
[ -x "$PY" ] || warn "no Python in $VENV"
SRC=robot_identification/regressor/_kernel.cpp
OUT=robot_identification/regressor/build/libregressor_kernel.so
if [ -n "${2:-}" ]; then
  "$PY" -P scripts/native_build.py kernel "$3" "$2" 2>&1 | sed 's/^ri-build: //'
  [ -f "$3" ] || warn "compile of $2 failed"
  exit 0
fi
PREFIX=$("$PY" -c "import cmeel, os; print(os.path.join(os.path.dirname(cmeel.__path__[0]),
'cmeel.prefix'))" 2>/dev/null) || warn "no cmeel prefix in $VENV"
# up to date (setup.sh run again): newer than the source and the installed pinocchio headers
if [ "$OUT" -nt "$SRC" ] && [ "$OUT" -nt "$PREFIX/include/pinocchio/config.hpp" ]; then
  echo "regressor kernel up to date: $OUT"
else
  "$PY" -P scripts/native_build.py kernel "$OUT" 2>&1 | sed 's/^ri-build: //'
  [ -f "$OUT" ] || warn "compile failed"
  echo "built $OUT"
fi
# a non-editable install imports the package from site-packages: put a copy there too
DEST=$(cd / && "$PY" -c "import os, robot_identification.regressor as r; \
print(os.path.dirname(r.__file__))" 2>/dev/null) || true
if [ -n "$DEST" ] && [ "$DEST" != "$(pwd)/robot_identification/regressor" ]; then
  mkdir -p "$DEST/build" && cp "$OUT" "$DEST/build/libregressor_kernel.so" \
    || warn "cannot copy to $DEST"
fi
