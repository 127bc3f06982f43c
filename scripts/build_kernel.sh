#!/usr/bin/env bash
# Build the compiled regressor kernel (robot_identification/regressor/build/
# libregressor_kernel.so: in a folder that is no Python package, not mistaken for a module)
# against the header-only pinocchio of the `pin` wheel and Eigen of `cmeel-eigen` in the venv
# given as $1 (default .venv). Optional: without it the regressor runs its pure-Python path.
# Never fails: on any problem it prints one warning line and exits 0.
# `build_kernel.sh VENV SOURCE OUTPUT` compiles another source the same way (the C++
# reference loop of benchmarks/regressor_throughput.py) and does nothing else.
cd "$(dirname "$0")/.."
VENV=${1:-.venv}
PY="$(cd "$VENV" 2>/dev/null && pwd)/bin/python"
warn() { echo "warning: compiled regressor kernel not built ($1); the pure-Python regressor" \
  "is used" >&2; exit 0; }
command -v g++ >/dev/null || warn "no g++"
PREFIX=$("$PY" -c "import cmeel; print(cmeel.__path__[0] + '.prefix')" \
  2>/dev/null) || warn "no cmeel prefix in $VENV"
SRC=robot_identification/regressor/_kernel.cpp
OUT=robot_identification/regressor/build/libregressor_kernel.so
if [ -n "$2" ]; then SRC=$2; OUT=$3; fi
mkdir -p "$(dirname "$OUT")" || warn "cannot create the build folder"

compile() {
  local log
  log=$(mktemp)
  if ! g++ -O3 -DNDEBUG -std=c++17 -shared -fPIC -fvisibility=hidden \
      -DBOOST_MPL_LIMIT_LIST_SIZE=30 -DBOOST_MPL_LIMIT_VECTOR_SIZE=30 \
      -DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS -DBOOST_FUSION_INVOKE_MAX_ARITY=12 \
      -I"$PREFIX/include" -I"$PREFIX/include/eigen3" -o "$OUT.tmp" "$SRC" >"$log" 2>&1; then
    rm -f "$OUT.tmp"
    warn "g++ failed: $(grep -m1 error "$log" | cut -c1-160)"
  fi
  rm -f "$log"
  mv "$OUT.tmp" "$OUT"
  echo "built $OUT"
}

if [ -n "$2" ]; then compile; exit 0; fi
# up to date (setup.sh run again): newer than the source and the installed pinocchio headers
if [ "$OUT" -nt "$SRC" ] && [ "$OUT" -nt "$PREFIX/include/pinocchio/config.hpp" ]; then
  echo "regressor kernel up to date: $OUT"
else
  compile
fi
# a non-editable install imports the package from site-packages: put a copy there too
DEST=$(cd / && "$PY" -c "import os, robot_identification.regressor as r; \
print(os.path.dirname(r.__file__))" 2>/dev/null) || true
if [ -n "$DEST" ] && [ "$DEST" != "$(pwd)/robot_identification/regressor" ]; then
  mkdir -p "$DEST/build" && cp "$OUT" "$DEST/build/libregressor_kernel.so" \
    || warn "cannot copy to $DEST"
fi
