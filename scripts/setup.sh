#!/usr/bin/env bash
# Set up robot_identification on a fresh machine (Python 3.10+ with venv): creates .venv in the
# repository, installs the package with the ROS 2 runtime wheels (rclpy on Fast DDS), pinocchio
# and the test tools. Idempotent; takes a minute or two on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# progress: numbered steps; in a terminal pip shows what it downloads and builds
QUIET=--quiet
if [ -t 1 ]; then QUIET=--progress-bar=on; fi
if [ ! -x .venv/bin/python ]; then
  echo "[1/6] creating .venv"
  "$PY" -m venv .venv
fi
echo "[2/6] upgrading pip"
.venv/bin/python -m pip install --quiet --upgrade pip 2>&1 | grep -v "^WARNING: Location" || true
echo "[3/6] installing robot_identification with pinocchio, the ROS 2 wheels and the test" \
  "tools (1-2 minutes on a fresh machine)"
# exact versions from constraints.txt (refresh: bash scripts/lock.sh)
.venv/bin/python -m pip install $QUIET -c constraints.txt ".[ros,test,interfaces,kernel]" 2>&1 | grep --line-buffered -v \
  "^WARNING: Location\|^Requirement already satisfied" || true
echo "[4/6] checking the imports"
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
echo "[5/6] building robot_identification_interfaces (messages, Identify action)"
bash scripts/build_interfaces.sh .venv
# ament layout for `ros2 launch` / `ros2 run` (where the launch tools are installed): the
# package index and share/ come with the package; the node executables go to lib/<package>/
mkdir -p .venv/lib/robot_identification
for module in robot_identification/nodes/[a-z]*.py; do
  node=$(basename "$module" .py)
  if [ -x ".venv/bin/$node" ]; then ln -sf "../../bin/$node" ".venv/lib/robot_identification/$node"; fi
done
echo "[6/6] compiling the regressor kernel (C++, pinocchio headers; about 40 s of CPU;" \
  "optional: on failure one warning and the pure-Python regressor)"
bash scripts/build_kernel.sh .venv || true
echo "robot_identification installed in $(pwd)/.venv"
echo "ros2 launch: export AMENT_PREFIX_PATH=$(pwd)/.venv (with the launch tools installed)"
