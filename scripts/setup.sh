#!/usr/bin/env bash
# Set up robot_identification on a fresh machine (Python 3.10+ with venv): creates .venv in the
# repository, installs the package with the ROS 2 runtime wheels (rclpy on Fast DDS), pinocchio
# and the test tools. Idempotent; takes a minute or two on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -m pip install --quiet ".[ros,test,interfaces]" 2>&1 \
  | grep -v "^WARNING: Location" || true
.venv/bin/python -c "import robot_identification, pinocchio, rclpy" \
  || { echo "setup failed: robot_identification, pinocchio or rclpy does not import" >&2; exit 1; }
# robot_identification_interfaces (rosidl: Identify action, IdentificationResult) needs a C/C++
# build: cmake, g++ and the Python headers
PYINC=$(.venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['include'])")
if ! command -v cmake >/dev/null || ! command -v g++ >/dev/null || [ ! -f "$PYINC/Python.h" ]; then
  if command -v apt-get >/dev/null; then
    SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
    echo "installing cmake g++ python3-dev (apt)"
    $SUDO apt-get update -qq >/dev/null && $SUDO apt-get install -y -qq cmake g++ python3-dev >/dev/null
  fi
fi
bash scripts/build_interfaces.sh .venv
echo "robot_identification installed in $(pwd)/.venv"
