"""Identification on a real robot or in Gazebo through ros2_control (no simulator).

Expects a running controller_manager with config/ros2_controllers.yaml (joint_state_broadcaster
+ effort forward_command_controller); topic names are launch arguments.

    ros2 launch robot_identification identification_robot.launch.py robot:=zollo_planar \
        joint_states_topic:=/joint_states command_topic:=/effort_controller/commands
    # record a run (recorder ~/start, excitation_publisher ~/start, recorder ~/stop), then:
    ros2 action send_goal --feedback /identifier/identify \
        robot_identification_interfaces/action/Identify "{estimators: [ols, wls]}"

online:=true also starts online_identifier (estimates while the arm moves).
"""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from robot_identification.model import share_directory

PACKAGE = "robot_identification"

ARGUMENTS = {
    "robot": ("zollo_planar", "robot config: config/robots/<robot>.yaml + its URDF"),
    "data_directory": ("robot_identification_data", "directory of the recorded bags"),
    "joint_states_topic": ("/joint_states", "sensor_msgs/JointState of joint_state_broadcaster"),
    "motor_states_topic": ("/motor_states", "motor-side JointState (elastic joints); '' if none"),
    "command_topic": ("/effort_controller/commands",
                      "std_msgs/Float64MultiArray of the effort forward_command_controller"),
    "reference_topic": ("/reference", "streamed excitation reference"),
    "rate_hz": ("1000.0", "control rate [Hz]"),
    "online": ("false", "true: also start online_identifier"),
}


def node(name, condition=None, **overrides):
    config = str(share_directory() / "config" / f"{name}.yaml")
    return Node(package=PACKAGE, executable=name, name=name, output="screen",
                parameters=[config, overrides], condition=condition)


def generate_launch_description():
    c = {k: LaunchConfiguration(k) for k in ARGUMENTS}
    real_time = {"lockstep": False, "use_sim_time": False, "rate_hz": c["rate_hz"]}
    topics = {k: c[k] for k in ("joint_states_topic", "motor_states_topic", "command_topic",
                                "reference_topic")}
    return LaunchDescription([
        *[DeclareLaunchArgument(k, default_value=d, description=text)
          for k, (d, text) in ARGUMENTS.items()],
        node("excitation_publisher", robot=c["robot"], reference_topic=c["reference_topic"],
             **real_time),
        node("pd_controller", robot=c["robot"], **topics, **real_time),
        node("recorder", data_directory=c["data_directory"], use_sim_time=False,
             expected_rate_hz=c["rate_hz"], **topics),
        node("identifier", robot=c["robot"], data_directory=c["data_directory"],
             joint_states_topic=c["joint_states_topic"],
             motor_states_topic=c["motor_states_topic"]),
        node("online_identifier", IfCondition(c["online"]), robot=c["robot"],
             use_sim_time=False, joint_states_topic=c["joint_states_topic"],
             motor_states_topic=c["motor_states_topic"]),
    ])
