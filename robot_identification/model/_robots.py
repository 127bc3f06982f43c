"""Shipped robots: ``config/robots/<name>.yaml`` + ``urdf/<name>.urdf`` in the package share.

The share directory is found without ``ament_index_python`` (plain pip installs have
no ``AMENT_PREFIX_PATH``): the ament index when available, then
``<sys.prefix>/share/robot_identification``, then the source tree.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from robot_identification.errors import ConfigError, did_you_mean
from robot_identification.model._robot_model import RobotModel

PACKAGE = "robot_identification"


def share_directory() -> Path:
    """Directory holding ``config/``, ``urdf/`` and ``launch/`` of this package.

    Raises
    ------
    ConfigError
        When no share directory can be found (broken installation).
    """
    candidates = []
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        if prefix:
            candidates.append(Path(prefix) / "share" / PACKAGE)
    candidates.append(Path(__file__).resolve().parents[2])          # source tree / editable
    candidates.append(Path(sys.prefix) / "share" / PACKAGE)
    for c in candidates:
        if (c / "config" / "robots").is_dir():
            return c
    raise ConfigError(f"cannot find the {PACKAGE} share directory (looked in "
                      f"{[str(c) for c in candidates]}); reinstall the package")


def available_robots() -> list[str]:
    """Names of the shipped robots."""
    return sorted(p.stem for p in (share_directory() / "config" / "robots").glob("*.yaml"))


def robot_files(name: str) -> Path:
    """Config YAML of shipped robot ``name``.

    Raises
    ------
    ConfigError
        Unknown robot name (the message lists the shipped robots).
    """
    path = share_directory() / "config" / "robots" / f"{name}.yaml"
    if not path.is_file():
        robots = available_robots()
        raise ConfigError(f"unknown robot '{name}'{did_you_mean(name, robots)}; shipped "
                          f"robots: {robots}")
    return path


def load_robot(name: str | None = None, *, config: str | Path | None = None,
               urdf: str | Path | None = None):
    """Build a :class:`RobotModel` from a shipped robot name or from files.

    Parameters
    ----------
    name : str, optional
        Shipped robot (``zollo_planar``, ``puma560_elastic``, ...).
    config : path, optional
        Robot config YAML; overrides ``name``.
    urdf : path, optional
        URDF or xacro replacing the one the config names.

    Raises
    ------
    ConfigError, ModelError
    """
    if config is None:
        if name is None:
            raise ConfigError("give a robot name or a config file")
        config = robot_files(name)
    return RobotModel.from_files(config, urdf_path=urdf)
