"""colcon, as README's "ROS 2 users" section says: ``colcon build --base-paths src
src/robot_identification/robot_identification_interfaces`` in a fresh workspace builds both
packages against the ROS 2 wheels of this venv with nothing sourced (no AMENT_PREFIX_PATH, no
CMAKE_PREFIX_PATH: the interface package's CMakeLists.txt finds the wheels' prefix and repairs
their container include paths itself), and ``source install/setup.bash`` makes both import
from the workspace. package.xml names every runtime dependency of setup.py, and its pip-only
rosdep keys are defined in rosdep/robot_identification.yaml.

The build needs colcon (``colcon-common-extensions``, which ``.ci/run`` installs); skipped with
that reason where it is missing."""
import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
#: setup.py requirement -> rosdep key, where the key is not python3-<name>[-pip]
ROS_KEYS = {"pin": "pinocchio", "pyyaml": "python3-yaml", "urdfdom-py": "urdfdom_py",
            "xacro": "xacro"}


def install_requires():
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "install_requires":
            return [re.split(r"[<>=\[; ]", ast.literal_eval(e))[0].lower()
                    for e in node.value.elts]
    raise AssertionError("setup.py has no install_requires")


def test_package_xml_lists_every_runtime_dependency():
    deps = {e.text for e in ElementTree.parse(ROOT / "package.xml").getroot()
            .findall("exec_depend")}
    sources = yaml.safe_load((ROOT / "rosdep" / "robot_identification.yaml").read_text())
    missing = []
    for name in install_requires():
        keys = ([ROS_KEYS[name]] if name in ROS_KEYS
                # the ROS 2 runtime wheels ros-<pkg> are the ROS packages <pkg>
                else [name[4:].replace("-", "_")] if name.startswith("ros-")
                else [f"python3-{name}", f"python3-{name}-pip"])
        if not deps & set(keys):
            missing.append(f"{name} (as {' or '.join(keys)})")
    assert not missing, f"package.xml lacks <exec_depend> for {missing}"
    for key in sorted(d for d in deps if d.endswith("-pip")):
        assert key in sources, f"rosdep/robot_identification.yaml does not define {key}"
        packages = sources[key]["*"]["pip"]["packages"]
        assert packages and all(isinstance(p, str) for p in packages), (key, packages)


def _colcon_missing():
    colcon = Path(sys.executable).with_name("colcon")
    if not colcon.exists():
        return f"colcon is not installed next to {sys.executable} (colcon-common-extensions)"
    return ""


REASON = _colcon_missing()


@pytest.mark.ros
@pytest.mark.skipif(bool(REASON), reason=REASON or "-")
def test_colcon_builds_both_packages_as_the_readme_says(tmp_path):
    src = tmp_path / "ident_ws" / "src" / "robot_identification"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True)
    names = ([n for n in files.stdout.decode().split("\0") if n]
             if files.returncode == 0 else None)
    if names:       # the checkout's tracked files, as a clone would have them
        for name in names:
            if (ROOT / name).is_file():
                (src / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, src / name)
    else:
        shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "install", "log", "__pycache__"))
    ws = tmp_path / "ident_ws"
    venv_bin = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items()
           if k not in ("AMENT_PREFIX_PATH", "CMAKE_PREFIX_PATH", "COLCON_PREFIX_PATH",
                        "PYTHONPATH")}
    env["PATH"] = venv_bin + os.pathsep + env.get("PATH", "")   # an activated venv
    pkgs = "src src/robot_identification/robot_identification_interfaces"
    build = subprocess.run(["bash", "-c", f'PKGS="{pkgs}" && colcon build --base-paths $PKGS'],
                           cwd=ws, env=env, capture_output=True, text=True, timeout=1800)
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    assert "2 packages finished" in build.stdout, build.stdout
    check = ("from robot_identification_interfaces.action import Identify; "
             "from robot_identification_interfaces.msg import IdentificationResult; "
             "import robot_identification, robot_identification_interfaces as i; "
             "print(robot_identification.__file__); print(i.__file__)")
    run = subprocess.run(["bash", "-c", f"source install/setup.bash && python -c '{check}'"],
                         cwd=ws, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert all(line.startswith(str(ws / "install")) for line in run.stdout.split()), run.stdout
    lib = ws / "install" / "robot_identification" / "lib" / "robot_identification"
    for node in ("simulated_robot", "pd_controller", "recorder", "identifier"):
        assert (lib / node).exists(), sorted(p.name for p in lib.iterdir())
    assert (ws / "install" / "robot_identification" / "share" / "robot_identification"
            / "launch" / "identification_robot.launch.py").exists()
