"""Shared plumbing of the rclpy nodes: parameters, robot loading, message stamps, main()."""
from __future__ import annotations

import math

import rclpy
from rcl_interfaces.msg import (FloatingPointRange, IntegerRange, ParameterDescriptor,
                                SetParametersResult)
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.qos import QoSProfile, ReliabilityPolicy

#: reliable, depth 1000 (1 s at 1 kHz): a briefly stalled subscriber loses nothing
QOS = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
#: reliable, keep the latest only: a real-time controller that fell behind acts on the newest
#: state (bounded delay) instead of working through a backlog
LATEST = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)


def declare(node, name, default, description, *, low=None, high=None, read_only=False,
            choices=None):
    """Declare a parameter with a descriptor (range, read-only) and return its value.

    ``choices`` (strings) are validated at declaration and on every later change.
    """
    d = ParameterDescriptor(description=description, read_only=read_only)
    if low is not None:
        if isinstance(default, int) and not isinstance(default, bool):
            d.integer_range = [IntegerRange(from_value=int(low), to_value=int(high), step=0)]
        else:
            d.floating_point_range = [FloatingPointRange(from_value=float(low),
                                                         to_value=float(high), step=0.0)]
    value = node.declare_parameter(name, default, d).value
    if choices is not None:
        _choices = getattr(node, "_param_choices", {})
        _choices[name] = tuple(choices)
        node._param_choices = _choices
        if value not in choices:
            raise ValueError(f"parameter '{name}' = {value!r}; expected one of {list(choices)}")
        if len(_choices) == 1:
            node.add_on_set_parameters_callback(lambda ps: _check_choices(node, ps))
    return value


def declare_optional(node, name, ptype, description, *, low=None, high=None, length=None,
                     read_only=False):
    """Declare a typed parameter with no default; its value, or ``None`` when not given.

    "Not given" means the robot config's value: no sentinel (``-1.0``, all-zero gains).

    Parameters
    ----------
    ptype : rclpy.Parameter.Type
        e.g. ``Parameter.Type.DOUBLE`` or ``Parameter.Type.DOUBLE_ARRAY``.
    low, high : float, optional
        Allowed range of the value (of every element of an array).
    length : int, optional
        Required length of an array value.

    Raises
    ------
    ValueError
        A given value outside ``[low, high]`` or of the wrong length (one line, naming it).
    """
    from rclpy.exceptions import ParameterUninitializedException
    node.declare_parameter(name, ptype, ParameterDescriptor(description=description,
                                                            read_only=read_only))
    try:
        value = node.get_parameter(name).value
    except ParameterUninitializedException:
        return None
    if value is None:
        return None
    values = list(value) if isinstance(value, (list, tuple)) or hasattr(value, "tolist") \
        else [value]
    if length is not None and len(values) != length:
        raise ValueError(f"parameter '{name}' has {len(values)} values; expected {length}")
    if low is not None and not all(low <= float(v) <= high for v in values):
        raise ValueError(f"parameter '{name}' = {value!r}; expected values in [{low}, {high}]")
    return value


def _check_choices(node, params):
    for p in params:
        allowed = node._param_choices.get(p.name)
        if allowed and p.value not in allowed:
            return SetParametersResult(successful=False,
                                       reason=f"{p.name} must be one of {list(allowed)}")
    return SetParametersResult(successful=True)


def declare_robot(node):
    """Declare ``robot`` / ``robot_config`` / ``urdf`` and load the RobotModel."""
    from robot_identification.model import load_robot
    robot = declare(node, "robot", "zollo_planar", "shipped robot (config/robots/<robot>.yaml)",
                    read_only=True)
    config = declare(node, "robot_config", "", "robot config YAML path (overrides robot)",
                     read_only=True)
    urdf = declare(node, "urdf", "", "URDF/xacro path overriding the config's", read_only=True)
    return load_robot(None if config else robot, config=config or None, urdf=urdf or None)


def to_sec(stamp) -> float:
    """builtin_interfaces/Time -> seconds."""
    return stamp.sec + 1e-9 * stamp.nanosec


def to_stamp(t: float, msg_cls):
    """Seconds -> builtin_interfaces/Time (``msg_cls``), rounded to the nanosecond."""
    ns = int(round(t * 1e9))
    return msg_cls(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def finite(*arrays) -> bool:
    return all(math.isfinite(x) for a in arrays for x in a)


def main_for(node_cls, args=None):
    """Run one node until Ctrl-C / shutdown (ros2/demos form).

    Non-ROS option (before ``--ros-args``): ``--executor single|events`` selects rclpy's
    SingleThreadedExecutor (default) or EventsExecutor (about half the CPU time).
    Configuration errors (bad parameters of any value or type, robot, trajectory, topic names)
    end the process with a one-line message and exit code 1, never a traceback.
    """
    import argparse
    import sys

    from rclpy.utilities import remove_ros_args
    argv = sys.argv if args is None else args
    parser = argparse.ArgumentParser(prog=node_cls.__name__)
    parser.add_argument("--executor", choices=("single", "events"), default="single")
    options = parser.parse_args(remove_ros_args(args=argv)[1:])
    try:
        with rclpy.init(args=argv):
            try:
                node = node_cls()
            except Exception as exc:       # any launch argument value: one line, no traceback
                text = " ".join(str(exc).split()) or type(exc).__name__
                print(f"{node_cls.__name__}: error: {text}", file=sys.stderr)
                sys.exit(1)
            if options.executor == "events":
                from rclpy.experimental import EventsExecutor
                executor = EventsExecutor()
            else:
                executor = SingleThreadedExecutor()
            executor.add_node(node)
            try:
                while rclpy.ok():          # returns regularly: signals are handled
                    executor.spin_once(timeout_sec=0.2)
            finally:
                if hasattr(node, "shutdown"):
                    node.shutdown()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
