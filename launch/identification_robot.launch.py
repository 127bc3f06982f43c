"""Identification on a real robot or in Gazebo through ros2_control (no simulator).

Expects a running controller_manager with the robot's config/ros2_controllers/<robot>.yaml
(joint_state_broadcaster + an effort forward_command_controller; or a
joint_trajectory_controller with ``use_pd_controller:=false``); topic names are launch
arguments. Real-time mode: the pd_controller's watchdog and fail-safe (docs/ros.md) guard the
arm; the excitation publisher refuses to start until the controller is ready.

    ros2 launch robot_identification identification_robot.launch.py robot:=ur10e \
        joint_states_topic:=/joint_states command_topic:=/effort_controller/commands
    ros2 launch robot_identification identification_robot.launch.py robot:=ur10e \
        use_pd_controller:=false          # position-controlled arm: joint_trajectory_controller
    ros2 launch robot_identification identification_robot.launch.py robot:=puma560 \
        use_sim_time:=true                # Gazebo (/clock)
    # record a run (recorder ~/start, excitation_publisher ~/start, recorder ~/stop), then:
    ros2 action send_goal --feedback /identifier/identify \
        robot_identification_interfaces/action/Identify "{estimators: [ols, wls]}"

online:=true also starts online_identifier (estimates while the arm moves).
stand_in:=true also starts hardware_robot, the stand-in for ros2_control hardware (a real-arm
session rehearsed on this machine; its parameters from params_file, its physics engine
stand_in_engine:=builtin|mujoco; docs/ros.md); with
use_pd_controller:=false it runs a joint_trajectory_controller in its own cycle on
trajectory_controller_topic (the trajectory the excitation publisher sends).

pd_controller, excitation_publisher and recorder are managed (lifecycle) nodes: lifecycle_manager
configures and then activates each (ros2 lifecycle get/set /<node> works on them). Heartbeats:
the excitation and the recording stop, with an ERROR on /diagnostics, when the controller,
the joint states or a recording recorder are silent for heartbeat_timeout s.

Any argument value is checked here (one-line error naming it) or by the nodes (one line each).
"""
import math
import os

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from robot_identification._launch_signals import use_watcher_safe_signals
from robot_identification.model import share_directory

PACKAGE = "robot_identification"
JTC_TOPIC = "/joint_trajectory_controller/joint_trajectory"

ARGUMENTS = {
    "robot": ("zollo_planar", "robot config: config/robots/<robot>.yaml + its URDF"),
    "robot_config": ("", "robot config YAML path (overrides robot)"),
    "data_directory": ("robot_identification_data", "directory of the recorded bags"),
    "trajectory_file": ("", "excitation trajectory YAML; '' = the robot config's"),
    "joint_states_topic": ("/joint_states", "sensor_msgs/JointState of joint_state_broadcaster"),
    "motor_states_topic": ("auto", "motor-side JointState (elastic joints); auto: "
                                   "/motor_states for elastic arms, '' for rigid arms"),
    "command_topic": ("/effort_controller/commands",
                      "std_msgs/Float64MultiArray of the effort forward_command_controller"),
    "reference_topic": ("/reference", "streamed excitation reference"),
    "rate_hz": ("1000.0", "control rate [Hz]"),
    "use_sim_time": ("false", "true: run on /clock (Gazebo, a simulated robot)"),
    "use_pd_controller": ("true", "false: no pd_controller; the excitation goes to a "
                                  "joint_trajectory_controller (position-controlled arms)"),
    "trajectory_controller_topic": ("", f"joint_trajectory_controller topic; '' = none, or "
                                        f"{JTC_TOPIC} with use_pd_controller:=false"),
    "watchdog_timeout": ("0.05", "[s] pd_controller: stale/frozen states -> fail-safe"),
    "fail_safe": ("hold", "pd_controller reaction to a fault: hold or zero"),
    "params_file": ("", "extra ROS parameter file (<node>: ros__parameters: ...) applied after "
                        "config/<node>.yaml, e.g. pd_controller kp/kd for your arm"),
    "online": ("false", "true: also start online_identifier"),
    "executor": ("events", "rclpy executor of excitation_publisher and pd_controller: events "
                           "(EventsExecutor, about half the CPU time) or single"),
    "bandwidth_scale": ("1.0", "pd_controller: gains kp * s^2, kd * s (below 1 tolerates "
                               "more command delay); the largest used: the controller scales "
                               "them down to the delay margin of the measured loop delay"),
    "heartbeat_timeout": ("0.5", "[s] excitation and recorder stop (ERROR) when the "
                                 "controller, the joint states or the recorder are this long "
                                 "silent"),
    "stand_in": ("false", "true: also start hardware_robot, the stand-in for ros2_control "
                          "hardware (rehearsal; its parameters from params_file)"),
    "stand_in_engine": ("", "stand_in:=true: hardware_robot's physics, builtin or mujoco; "
                            "'' = its parameter engine (config/hardware_robot.yaml, "
                            "params_file)"),
}
CHOICES = {"use_sim_time": ("true", "false"), "use_pd_controller": ("true", "false"),
           "fail_safe": ("hold", "zero"), "executor": ("events", "single"),
           "online": ("true", "false"), "stand_in": ("true", "false"),
           "stand_in_engine": ("", "builtin", "mujoco")}
#: the managed (lifecycle) nodes: configured, then activated by lifecycle_manager
MANAGED = ("pd_controller", "excitation_publisher", "recorder")


class LaunchArgumentError(ValueError):
    """A launch argument value that cannot work (launch prints the message, no traceback)."""


def node(name, executor="single", params_file="", **overrides):
    """The node's launch action: :data:`MANAGED` nodes start with ``managed: true`` and wait
    in ``unconfigured`` for lifecycle_manager (:func:`lifecycle_manager`)."""
    config = str(share_directory() / "config" / f"{name}.yaml")
    files = [config] + ([params_file] if params_file else [])
    if name in MANAGED:
        overrides = {**overrides, "managed": True}
    return [Node(package=PACKAGE, executable=name, name=name, output="screen",
                 arguments=["--executor", executor], parameters=[*files, overrides])]


def lifecycle_manager(managed, **common):
    """lifecycle_manager configures and activates the managed nodes: it asks their state
    again when an answer is lost (launch_ros's LifecycleNode events wait for it without a
    bound, from a thread of the launch process; nodes/lifecycle_manager.py says why)."""
    return node("lifecycle_manager", node_names=list(managed), **common)


def positive(values, name, low=0.0):
    try:
        x = float(values[name])
    except ValueError:
        raise LaunchArgumentError(f"{name}:={values[name]!r} is not a number") from None
    if not math.isfinite(x) or x <= low:
        raise LaunchArgumentError(f"{name}:={values[name]!r} must be a finite number > {low:g}")
    return x


def is_elastic(values) -> bool:
    """The robot's config says elastic joints (raises LaunchArgumentError naming the file)."""
    from robot_identification.model import load_robot_config, robot_files
    try:
        path = values["robot_config"] or robot_files(values["robot"])
        return load_robot_config(path).elastic
    except Exception as exc:            # unknown robot, unreadable or invalid config
        raise LaunchArgumentError(" ".join(str(exc).split())) from None


def nodes(context):
    values = {k: LaunchConfiguration(k).perform(context) for k in ARGUMENTS}
    values = {k: v.strip() for k, v in values.items()}
    rate = positive(values, "rate_hz")
    timeout = positive(values, "watchdog_timeout")
    scale = positive(values, "bandwidth_scale")
    heartbeat = positive(values, "heartbeat_timeout")
    params_file = values["params_file"]
    if params_file and not os.path.isfile(params_file):
        raise LaunchArgumentError(f"params_file:={params_file!r} is not a file")
    elastic = is_elastic(values)
    sim_time = values["use_sim_time"] == "true"
    use_pd = values["use_pd_controller"] == "true"
    motor = values["motor_states_topic"]
    if motor == "auto":
        motor = "/motor_states" if elastic else ""
    jtc = values["trajectory_controller_topic"] or ("" if use_pd else JTC_TOPIC)
    robot = {"robot": values["robot"], "robot_config": values["robot_config"]}
    common = {"use_sim_time": sim_time, "params_file": params_file}
    # the control loop's nodes on the chosen executor; recorder and identifier (threads) on
    # rclpy's SingleThreadedExecutor
    real_time = {"lockstep": False, "rate_hz": rate, "executor": values["executor"], **common}
    out = [
        *node("excitation_publisher", **robot, **real_time, heartbeat_timeout=heartbeat,
              recorder_status="recorder: recording", require_recorder=True,
             reference_topic=values["reference_topic"],
             trajectory_file=values["trajectory_file"],
             joint_states_topic=values["joint_states_topic"],
             trajectory_controller_topic=jtc, require_ready=True,
             controller_status="pd_controller: control loop" if use_pd else ""),
        *node("recorder", data_directory=values["data_directory"], expected_rate_hz=rate,
              heartbeat_timeout=heartbeat,
              controller_status="pd_controller: control loop" if use_pd else "",
             joint_states_topic=values["joint_states_topic"], motor_states_topic=motor,
             command_topic=values["command_topic"] if use_pd else "",
             reference_topic=values["reference_topic"], **common),
        *node("identifier", **robot, data_directory=values["data_directory"],
             joint_states_topic=values["joint_states_topic"], motor_states_topic=motor,
             **common),
    ]
    if values["online"] == "true":
        out.extend(node("online_identifier", **robot, **common,
                        joint_states_topic=values["joint_states_topic"],
                        motor_states_topic=motor))
    if use_pd:
        if elastic and not motor:
            raise LaunchArgumentError(f"robot '{values['robot']}' has elastic joints: the "
                                      f"pd_controller needs motor_states_topic")
        out += node("pd_controller", **robot, **real_time,
                           joint_states_topic=values["joint_states_topic"],
                           motor_states_topic=motor or "motor_states",
                           command_topic=values["command_topic"],
                           reference_topic=values["reference_topic"],
                           watchdog_timeout=timeout, fail_safe=values["fail_safe"],
                           bandwidth_scale=scale, diagnostics_period=heartbeat / 5)
    out += lifecycle_manager([m for m in MANAGED if use_pd or m != "pd_controller"],
                             **common)
    if values["stand_in"] == "true":
        out += node("hardware_robot", **robot, rate_hz=rate,
                        params_file=params_file, executor=values["executor"],
                        joint_states_topic=values["joint_states_topic"],
                        motor_states_topic=motor or "motor_states",
                        command_topic=values["command_topic"], publish_clock=sim_time,
                        trajectory_controller_topic="" if use_pd else jtc,
                        **({"engine": values["stand_in_engine"]}
                           if values["stand_in_engine"] else {}))
    return out


def generate_launch_description():
    use_watcher_safe_signals()      # Ctrl-C: no 'process has died, exit code 255' (gh-87744)
    return LaunchDescription([
        *[DeclareLaunchArgument(k, default_value=d, description=text,
                                **({"choices": list(CHOICES[k])} if k in CHOICES else {}))
          for k, (d, text) in ARGUMENTS.items()],
        OpaqueFunction(function=nodes),
    ])
