"""robot_identification: ament_python package, installable with colcon or pip.

``pip install .`` (or a wheel from ``python -m build``) also compiles the regressor kernel
and builds the interface package robot_identification_interfaces into the wheel
(scripts/native_build.py; the compilers come from pyproject.toml's build requirements and the
machine's g++), and lays the ament layout (package index, share/, lib/<package>/ executables)
so that ``ros2 launch robot_identification ...`` works with ``AMENT_PREFIX_PATH`` set to the
environment's prefix. ``RI_NATIVE_BUILD=0`` builds a pure-Python wheel (no kernel, no
interfaces); colcon (``setup.py build/install/develop``) builds neither: there the interface
package is a colcon package of its own.
"""
import glob
import importlib.util
import os
import shutil
import stat
from pathlib import Path

from setuptools import Distribution, find_packages, setup
from setuptools.command.build_py import build_py

PACKAGE = "robot_identification"

# console scripts: one per ROS node, plus the CLI
NODES = ["simulated_robot", "hardware_robot", "excitation_publisher", "pd_controller",
         "recorder", "identifier", "online_identifier", "bag_player", "lifecycle_manager"]


def tree(folder):
    """data_files entries for every file below folder, keeping the layout under share/."""
    out = {}
    for path in glob.glob(os.path.join(folder, "**", "*"), recursive=True):
        if os.path.isfile(path):
            out.setdefault(os.path.join("share", PACKAGE, os.path.dirname(path)), []).append(path)
    return sorted(out.items())


def _native():
    """scripts/native_build.py as a module (it is no part of the installed package)."""
    spec = importlib.util.spec_from_file_location(
        "ri_native_build", Path(__file__).resolve().parent / "scripts" / "native_build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: Launchers of lib/<package>/<node> (what ``ros2 run``/``ros2 launch`` start): the console
#: script of the same name in the environment's bin/.
LAUNCHER = '#!/bin/sh\nexec "$(dirname "$0")/../../bin/{node}" "$@"\n'


class BuildWithNative(build_py):
    """build_py, plus (when a wheel is built) the compiled kernel, the interface package and
    the lib/<package>/ launchers."""

    def run(self):
        super().run()
        mode = os.environ.get("RI_NATIVE_BUILD", "auto")
        if mode == "0" or (mode == "auto" and "bdist_wheel" not in self.distribution.commands):
            return
        native = _native()
        temp = Path(self.get_finalized_command("build").build_temp).absolute()
        stage = temp / "interfaces_prefix"
        shutil.rmtree(stage, ignore_errors=True)
        kernel = Path(self.build_lib).absolute() / PACKAGE / "regressor" / "build" \
            / "libregressor_kernel.so"
        errors = native.build_all(kernel, stage)
        if errors["kernel"]:
            native.say(f"warning: regressor kernel not compiled ({errors['kernel']}); the "
                       f"installed package uses the pure-Python regressor and says so once")
        if errors["interfaces"]:
            raise SystemExit(f"robot_identification: {errors['interfaces']} "
                             f"(RI_NATIVE_BUILD=0 builds without the interfaces and the kernel)")
        self._add_interfaces(stage)
        self._add_launchers(temp / "launchers")

    def _add_interfaces(self, stage):
        """The staged install tree: the Python package into the wheel's packages, the rest
        (lib/*.so, share/, include/) as data files under the environment's prefix."""
        site = next(stage.glob("lib/python*/site-packages"))
        shutil.copytree(site / "robot_identification_interfaces",
                        Path(self.build_lib) / "robot_identification_interfaces",
                        dirs_exist_ok=True)
        files = {}
        for path in sorted(stage.rglob("*")):
            rel = path.relative_to(stage)
            if path.is_file() and not str(rel).startswith("lib/python"):
                files.setdefault(str(rel.parent), []).append(str(path))
        self.distribution.data_files.extend(sorted(files.items()))

    def _add_launchers(self, folder):
        folder.mkdir(parents=True, exist_ok=True)
        paths = []
        for node in NODES:
            path = folder / node
            path.write_text(LAUNCHER.format(node=node))
            path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
            paths.append(str(path))
        self.distribution.data_files.append((f"lib/{PACKAGE}", paths))


class BinaryDistribution(Distribution):
    """A platform wheel (it holds compiled libraries) when the native parts are built."""

    def has_ext_modules(self):
        return os.environ.get("RI_NATIVE_BUILD", "auto") != "0"


setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*"]),
    package_data={"robot_identification.report": ["templates/*.j2"]},
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
    ] + tree("launch") + tree("config") + tree("urdf"),
    # the ROS 2 runtime from PyPI (rclpy on Fast DDS, the message packages of the nodes) where
    # the ros-* wheels exist (CPython 3.11 on Linux); elsewhere, or with a ROS installation
    # (colcon and rosdep), the ROS-free core installs alone
    install_requires=[
        "numpy>=1.24", "scipy>=1.10", "pyyaml", "pin>=3", "rosbags>=0.10", "xacro",
        "urdfdom-py", "matplotlib", "cvxpy", "clarabel", "mcap", "mcap-ros2-support",
        "threadpoolctl", "dask[distributed]", "tqdm", "mujoco-core", "jinja2", "plotly",
        "pydantic>=2",
        "ros-rclpy[fastrtps]; python_version == '3.11' and sys_platform == 'linux'",
        "ros-std-msgs; python_version == '3.11' and sys_platform == 'linux'",
        "ros-std-srvs; python_version == '3.11' and sys_platform == 'linux'",
        "ros-sensor-msgs; python_version == '3.11' and sys_platform == 'linux'",
        "ros-trajectory-msgs; python_version == '3.11' and sys_platform == 'linux'",
        "ros-rosgraph-msgs; python_version == '3.11' and sys_platform == 'linux'",
        "ros-diagnostic-msgs; python_version == '3.11' and sys_platform == 'linux'",
        "ros-action-msgs; python_version == '3.11' and sys_platform == 'linux'",
        "ros-rosidl-default-runtime; python_version == '3.11' and sys_platform == 'linux'",
    ],
    extras_require={
        # empty since the ROS runtime is a dependency; kept for `pip install .[ros]`
        "ros": [],
        "notebook": ["pandas"],
        # mujoco.sysid (rollout-based identification), compared with validate --rollout in
        # docs/simulation.md; not needed by the package itself
        "sysid": ["mujoco-core[sysid]"],
        "test": ["pytest>=7,<8.4", "flake8", "hypothesis>=6", "pandas", "import-linter>=2.1",
                 "jsonschema"],
    },
    zip_safe=False,
    cmdclass={"build_py": BuildWithNative},
    distclass=BinaryDistribution,
    maintainer="robot_identification developers",
    maintainer_email="dev@robot-identification.local",
    description="Dynamic parameter identification of rigid and elastic-joint manipulators",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [f"robot-identification = {PACKAGE}.cli:main"]
        + [f"{n} = {PACKAGE}.nodes.{n}:main" for n in NODES],
    },
)
