#!/usr/bin/env bash
# Set up robot_identification for development on a fresh machine (Python 3.11 with venv, g++):
# creates .venv in the repository and installs the package the way `pip install .` does (the
# wheel holds the compiled regressor kernel and the interface package, see setup.py), with the
# ROS 2 runtime wheels (rclpy on Fast DDS), pinocchio and the test tools, at the versions of
# constraints.txt. Idempotent: a second run with unchanged sources only checks.
# Every phase prints a line when it starts and at least one line every 10 s while it runs.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
LOG=$(mktemp -t ri_setup.XXXXXX)
T0=$SECONDS
trap 'echo "setup failed; the last lines of its log ($LOG):" >&2; tail -25 "$LOG" >&2' ERR

. scripts/progress.sh
phase() { echo "[$1/5] ${*:2} ($((SECONDS - T0)) s so far)"; }

phase 1 "Python environment .venv"
if [ ! -x .venv/bin/python ]; then
  heartbeat "$PY" -m venv .venv
fi
PIP=(.venv/bin/python -m pip --disable-pip-version-check)

phase 2 "compilers (g++, Python headers)"
PYINC=$(.venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['include'])")
if ! command -v g++ >/dev/null || [ ! -f "$PYINC/Python.h" ]; then
  if command -v apt-get >/dev/null; then
    SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
    echo "      installing g++ python3-dev (apt)"
    $SUDO apt-get update -qq >/dev/null && $SUDO apt-get install -y -qq g++ python3-dev >/dev/null
  else
    echo "setup: g++ and the Python headers are needed (compilers for the kernel and the" \
         "interfaces)" >&2
    exit 1
  fi
fi

# up to date: the installed package was built from exactly these sources and constraints
STAMP=.venv/robot_identification.sources
HASH=$( { git ls-files -s 2>/dev/null; git diff HEAD 2>/dev/null; cat constraints.txt; } \
        | sha256sum | cut -d' ' -f1)
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$HASH" ] && [ -n "$(git ls-files 2>/dev/null)" ] \
   && .venv/bin/python -c "import robot_identification, robot_identification_interfaces.action,\
 pinocchio, rclpy" 2>/dev/null; then
  phase 3 "dependencies: up to date"
  phase 4 "robot_identification: up to date"
else
  phase 3 "dependencies: pinocchio, the ROS 2 wheels, the build tools (pyproject.toml)" \
    "at the versions of constraints.txt (downloads once into pip's cache)"
  # the build requirements of pyproject.toml: the same wheel build as `pip install .`, without
  # pip's isolated build environment (which would install pinocchio a second time)
  BUILD_REQS=$(.venv/bin/python - <<'EOF'
import tomllib
with open("pyproject.toml", "rb") as f:
    print("\n".join(tomllib.load(f)["build-system"]["requires"]))
EOF
)
  mapfile -t BUILD_REQS <<<"$BUILD_REQS"
  "${PIP[@]}" install -c constraints.txt "${BUILD_REQS[@]}" 2>&1 | progress "$LOG"
  phase 4 "robot_identification: building its wheel (regressor kernel and interface package" \
    "compiled side by side, about 45 s) and installing it with the test tools"
  rm -rf build/lib.* build/bdist.*                     # setuptools' leftovers of a former build
  "${PIP[@]}" install -v --no-build-isolation -c constraints.txt ".[test]" 2>&1 | progress "$LOG"
  echo "$HASH" >"$STAMP"
fi

phase 5 "checks"
# -P: the installed package, not this checkout's (the working directory is not on sys.path)
heartbeat .venv/bin/python -P - <<'EOF' || { echo "setup failed: an import does not work" >&2; exit 1; }
import os, shutil
import robot_identification.regressor._kernel as k
import pinocchio, rclpy  # noqa: F401
from robot_identification_interfaces.action import Identify  # noqa: F401
# the tests import this checkout's code: give it the kernel the wheel compiled
src = os.path.join(os.path.dirname(k.__file__), "build", "libregressor_kernel.so")
dst = os.path.join("robot_identification", "regressor", "build", "libregressor_kernel.so")
if os.path.exists(src):
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copy2(src, dst)
print(f"      regressor: {k.status()}; interfaces: robot_identification_interfaces imports")
EOF
echo "robot_identification installed in $(pwd)/.venv in $((SECONDS - T0)) s" \
  "(robot-identification, the nodes, the interfaces; log: $LOG)"
echo "ros2 launch: export AMENT_PREFIX_PATH=$(pwd)/.venv (with the launch tools installed)"
