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
.venv/bin/python -m pip install --quiet ".[ros,test]" 2>&1 | grep -v "^WARNING: Location" || true
.venv/bin/python -c "import robot_identification, pinocchio, rclpy" \
  || { echo "setup failed: robot_identification, pinocchio or rclpy does not import" >&2; exit 1; }
# ament layout for `ros2 launch` / `ros2 run` (where the launch tools are installed): the
# package index and share/ come with the package; the node executables go to lib/<package>/
mkdir -p .venv/lib/robot_identification
for node in simulated_robot excitation_publisher pd_controller recorder identifier; do
  ln -sf "../../bin/$node" ".venv/lib/robot_identification/$node"
done
echo "robot_identification installed in $(pwd)/.venv"
echo "ros2 launch: export AMENT_PREFIX_PATH=$(pwd)/.venv (with the launch tools installed)"
