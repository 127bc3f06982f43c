#!/usr/bin/env bash
# The pip route as a user takes it (CI runs this, .ci/run): a fresh venv in a temporary folder
# outside the repository, `pip install <repository>` (pip's isolated build: the wheel compiles
# the regressor kernel and builds the interface package), then from that folder
#   1. robot-identification demo       (the ROS 2 node graph, results.yaml written)
#   2. ros2 launch robot_identification identification_sim.launch.py   (with the launch tools of
#      ../shared/ros-launch-stack, AMENT_PREFIX_PATH = the venv): the five nodes come up
#      (ros2 node list) and stop cleanly on Ctrl-C.
# Usage: scripts/check_pip_install.sh [--keep]   (--keep: leave the folder for a look)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
STACK=${RI_LAUNCH_STACK:-$REPO/../shared/ros-launch-stack}
WORK=$(mktemp -d -t ri_pip_check.XXXXXX)
LOG=$WORK/pip.log
T0=$SECONDS
[ "${1:-}" = "--keep" ] || trap 'rm -rf "$WORK"' EXIT
. "$REPO/scripts/progress.sh"
fail() { echo "check_pip_install: $*" >&2; [ ! -f "$LOG" ] || tail -25 "$LOG" >&2; exit 1; }
cd "$WORK"
echo "[1/3] pip install $REPO into a fresh venv in $WORK"
python3 -m venv venv
export PIP_CONSTRAINT=$REPO/constraints.txt      # also for pip's isolated build environment
venv/bin/python -m pip install -v "$REPO" 2>&1 | progress "$LOG" \
  || fail "pip install failed"
venv/bin/python -P -c "import robot_identification.regressor._kernel as k; print('      ' +
k.status())"

echo "[2/3] robot-identification demo ($((SECONDS - T0)) s so far)"
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
export ROS_DOMAIN_ID=$(( 180 + $$ % 40 ))
venv/bin/robot-identification demo --quiet --output out/demo >demo.log 2>&1 \
  || { cat demo.log >&2; fail "robot-identification demo failed"; }
[ -s out/demo/results.yaml ] || fail "the demo wrote no out/demo/results.yaml"
grep "stiffness" demo.log | head -2 | sed 's/^/      /'

if ! ls "$STACK"/*.whl >/dev/null 2>&1; then
  echo "[3/3] ros2 launch: skipped (no launch-tool wheels in $STACK)"
  exit 0
fi
echo "[3/3] ros2 launch robot_identification identification_sim.launch.py ($((SECONDS - T0)) s" \
  "so far)"
{ venv/bin/python -m pip install --no-deps "$STACK"/*.whl
  venv/bin/python -m pip install -c "$REPO/constraints.txt" -r "$REPO/scripts/launch-stack.in"
} >>"$LOG" 2>&1 || fail "installing the launch tools failed"
export AMENT_PREFIX_PATH=$WORK/venv
setsid venv/bin/ros2 launch robot_identification identification_sim.launch.py \
  robot:=zollo_planar >launch.log 2>&1 &
LAUNCH=$!
NODES="simulated_robot excitation_publisher pd_controller recorder identifier"
up=""
for _ in $(seq 60); do                  # until every node is in the graph (at most ~2 min)
  sleep 2
  kill -0 "$LAUNCH" 2>/dev/null || break
  listed=$(venv/bin/ros2 node list --no-daemon 2>/dev/null || true)
  up=$(for n in $NODES; do if grep -qx "/$n" <<<"$listed"; then echo "$n"; fi; done | xargs)
  [ "$up" = "$NODES" ] && break
done
kill -INT -- "-$LAUNCH" 2>/dev/null || true
for _ in $(seq 30); do kill -0 "$LAUNCH" 2>/dev/null || break; sleep 1; done
kill -KILL -- "-$LAUNCH" 2>/dev/null || true
[ "$up" = "$NODES" ] || { cat launch.log >&2; fail "nodes up: '$up', expected '$NODES'"; }
if grep -q "process has died" launch.log; then
  cat launch.log >&2; fail "a node died"
fi
echo "      nodes up: $up"
echo "pip install check passed in $((SECONDS - T0)) s"
