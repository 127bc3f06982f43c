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
  echo "[1/4] creating .venv"
  "$PY" -m venv .venv
fi
echo "[2/4] upgrading pip"
.venv/bin/python -m pip install --quiet --upgrade pip 2>&1 | grep -v "^WARNING: Location" || true
echo "[3/4] installing robot_identification with pinocchio, the ROS 2 wheels and the test" \
  "tools (1-2 minutes on a fresh machine)"
.venv/bin/python -m pip install $QUIET ".[ros,test]" 2>&1 | grep --line-buffered -v \
  "^WARNING: Location\|^Requirement already satisfied" || true
echo "[4/4] checking the imports"
.venv/bin/python -c "import robot_identification, pinocchio, rclpy" \
  || { echo "setup failed: robot_identification, pinocchio or rclpy does not import" >&2; exit 1; }
echo "robot_identification installed in $(pwd)/.venv"
