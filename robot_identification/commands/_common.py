"""Argument helpers shared by the CLI sub-commands."""
from __future__ import annotations


def add_robot_arguments(parser, required=True):
    """``--robot NAME`` or ``--config YAML [--urdf URDF|XACRO]``."""
    g = parser.add_argument_group("robot")
    g.add_argument("--robot", help="shipped robot name (see `robot-identification robots`)")
    g.add_argument("--config", help="robot config YAML (instead of --robot)")
    g.add_argument("--urdf", help="URDF or xacro file overriding the one the config names")


def robot_from_args(args):
    """RobotModel from ``--robot`` / ``--config`` / ``--urdf``."""
    from robot_identification.errors import ConfigError
    from robot_identification.model import load_robot
    if not args.robot and not args.config:
        raise ConfigError("give --robot NAME or --config FILE")
    return load_robot(args.robot, config=args.config, urdf=args.urdf)
