"""Simulated identification experiment: simulated_robot + excitation_publisher + pd_controller
+ recorder + identifier (Identify action), lockstep on simulation time; with online:=true also
online_identifier (estimates while the arm moves, on /online_identifier/estimates).
lockstep:=false: the simulated robot free-running on a wall timer, the controller and the
excitation on its /clock (docs/ros.md, "Overload").

    ros2 launch robot_identification identification_sim.launch.py robot:=zollo_planar
    # any robot: robot_config:=my_arm.yaml (robot-identification init --urdf ...)
    ros2 service call /recorder/start std_srvs/srv/Trigger
    ros2 service call /excitation_publisher/start std_srvs/srv/Trigger
    # ... when /excitation_publisher/active is false:
    ros2 service call /recorder/stop std_srvs/srv/Trigger
    ros2 action send_goal --feedback /identifier/identify \
        robot_identification_interfaces/action/Identify "{estimators: [ols]}"
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from robot_identification._launch_signals import use_watcher_safe_signals
from robot_identification.model import share_directory

PACKAGE = "robot_identification"


def node(name, condition=None, **overrides):
    config = str(share_directory() / "config" / f"{name}.yaml")
    return Node(package=PACKAGE, executable=name, name=name, output="screen",
                parameters=[config, overrides], condition=condition)


def recorder(context, data, lockstep):
    """The recorder, without a motor-state topic for rigid arms (none is published)."""
    from robot_identification.model import load_robot_config, robot_files
    try:
        path = (LaunchConfiguration("robot_config").perform(context).strip()
                or robot_files(LaunchConfiguration("robot").perform(context)))
        elastic = load_robot_config(path).elastic
    except Exception as exc:            # unknown robot: one line, no traceback
        raise ValueError(" ".join(str(exc).split())) from None
    return [node("recorder", data_directory=data, use_sim_time=lockstep,
                 motor_states_topic="motor_states" if elastic else "")]


def generate_launch_description():
    use_watcher_safe_signals()      # Ctrl-C: no 'process has died, exit code 255' (gh-87744)
    robot = {"robot": LaunchConfiguration("robot"),
             "robot_config": LaunchConfiguration("robot_config")}
    data = LaunchConfiguration("data_directory")
    lockstep = LaunchConfiguration("lockstep")
    trajectory = LaunchConfiguration("trajectory_file")
    return LaunchDescription([
        DeclareLaunchArgument("robot", default_value="zollo_planar",
                              description="shipped robot: config/robots/<robot>.yaml + its URDF"),
        DeclareLaunchArgument("robot_config", default_value="",
                              description="robot config YAML path (overrides robot), e.g. "
                                          "from robot-identification init"),
        DeclareLaunchArgument("data_directory", default_value="robot_identification_data",
                              description="directory of the recorded bags and results"),
        DeclareLaunchArgument("lockstep", default_value="true",
                              description="true: deterministic lockstep; false: real time"),
        DeclareLaunchArgument("online", default_value="false",
                              description="true: also start online_identifier"),
        DeclareLaunchArgument("trajectory_file", default_value="",
                              description="excitation trajectory YAML (robot-identification "
                                          "excite); '' = the robot config's"),
        node("simulated_robot", **robot, lockstep=lockstep, trajectory_file=trajectory),
        # on the simulated robot's /clock in both modes: in real time (lockstep:=false) a
        # stall of the simulated robot's process stops its clock, so the controller's
        # watchdog does not take it for lost states, and the reference follows its stamps
        node("excitation_publisher", **robot, lockstep=lockstep, use_sim_time=True,
             trajectory_file=trajectory),
        # command_delay_periods 0: this simulated robot steps an elastic arm only once its
        # command came (command_timeout auto, docs/ros.md "Elastic arms in real time")
        node("pd_controller", **robot, lockstep=lockstep, use_sim_time=True,
             command_delay_periods=0),
        OpaqueFunction(function=recorder, args=[data, lockstep]),
        node("identifier", **robot, data_directory=data, compare_with_nominal=True,
             effort_lag_periods=0.5),
        node("online_identifier", IfCondition(LaunchConfiguration("online")), **robot,
             use_sim_time=lockstep, effort_lag_periods=0.5, compare_with_nominal=True),
    ])
