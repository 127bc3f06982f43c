#!/usr/bin/env bash
# Build robot_identification_interfaces (rosidl messages + the Identify action) into a Python
# venv that holds the ROS 2 wheels from PyPI -- no ROS installation, no colcon.
# Usage: scripts/build_interfaces.sh [VENV]   (default: .venv of the repository)
# On a ROS 2 machine use colcon instead: colcon build --packages-select robot_identification_interfaces
# The wheels' one flaw (their exported CMake targets name the include directories of their
# build container, /opt/python/cp311-cp311/...) is handled inside the package's
# CMakeLists.txt, so colcon builds it the same way. Skipped when the installed build is up to
# date with the sources.
set -euo pipefail
trap 'echo "build_interfaces: failed at line $LINENO" >&2' ERR
cd "$(dirname "$0")/.."
VENV=$(cd "${1:-.venv}" && pwd)
PKG=robot_identification_interfaces
PY="$VENV/bin/python"
STAMP="$VENV/share/$PKG/source.sha256"
HASH=$(cat "$PKG/package.xml" "$PKG/CMakeLists.txt" "$PKG"/msg/*.msg "$PKG"/action/*.action \
       | sha256sum | cut -d' ' -f1)
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$HASH" ] \
   && "$PY" -c "import $PKG.action" 2>/dev/null; then
  echo "$PKG is up to date in $VENV"
  exit 0
fi
for tool in cmake g++; do
  command -v "$tool" >/dev/null || { echo "build_interfaces: '$tool' not found; on Debian/Ubuntu:" \
    "sudo apt-get install cmake g++ python3-dev" >&2; exit 1; }
done
PYINC=$("$PY" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
[ -f "$PYINC/Python.h" ] || { echo "build_interfaces: no Python.h in $PYINC; on Debian/Ubuntu:" \
  "sudo apt-get install python3-dev" >&2; exit 1; }
mkdir -p build
BUILD=build/$PKG
rm -rf "$BUILD"
export AMENT_PREFIX_PATH="$VENV" CMAKE_PREFIX_PATH="$VENV"
echo "building $PKG into $VENV (about 20 s of CPU)"
cmake -S "$PKG" -B "$BUILD" -DCMAKE_INSTALL_PREFIX="$VENV" -DPython3_EXECUTABLE="$PY" \
  -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release >"$BUILD.log" 2>&1 \
  && cmake --build "$BUILD" -j "$(nproc)" >>"$BUILD.log" 2>&1 \
  && cmake --install "$BUILD" >>"$BUILD.log" 2>&1 \
  || { tail -30 "$BUILD.log" >&2; echo "build_interfaces: build failed, log: $BUILD.log" >&2; exit 1; }
"$PY" -c "from $PKG.action import Identify; from $PKG.msg import IdentificationResult" \
  || { echo "build_interfaces: $PKG built but does not import" >&2; exit 1; }
echo "$HASH" >"$STAMP"
echo "$PKG installed in $VENV"
