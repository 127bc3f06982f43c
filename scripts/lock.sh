#!/usr/bin/env bash
# Refresh constraints.txt, the exact versions that scripts/setup.sh and CI install.
# Run it after changing a dependency in setup.py (or to move to newer releases), then run the
# tests and commit constraints.txt with the change. Uses uv (`uv pip compile`) from a throwaway
# venv; resolves for CPython 3.11 on x86_64 Linux, the platform of the ROS 2 wheels (ros-*).
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=${RI_LOCK_TOOLS:-${TMPDIR:-/tmp}/robot-identification-lock-tools}
if [ ! -x "$TOOLS/bin/uv" ]; then
  echo "installing uv into $TOOLS"
  python3 -m venv "$TOOLS"
  "$TOOLS/bin/python" -m pip install --quiet uv
fi
# every extra of setup.py, the build requirements of pyproject.toml (scripts/setup.sh installs
# them with the same constraints), plus what the ROS launch-tool wheels need in CI
# (scripts/launch-stack.in)
BUILD_IN=$(mktemp -t ri_build_requirements.XXXXXX.in)
trap 'rm -f "$BUILD_IN"' EXIT
python3 -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))
                                            ["build-system"]["requires"]))' >"$BUILD_IN"
"$TOOLS/bin/uv" pip compile --quiet setup.py "$BUILD_IN" scripts/launch-stack.in --all-extras \
  --python-version 3.11 --python-platform x86_64-manylinux_2_28 --no-annotate \
  --custom-compile-command "bash scripts/lock.sh" --output-file constraints.txt
echo "wrote constraints.txt ($(grep -c '==' constraints.txt) pinned packages)"
