"""Reading YAML files with errors that name the file (shared by configs, trajectories, results)."""
from __future__ import annotations

from pathlib import Path

import yaml


def read_yaml_file(path, what, error):
    """Parsed content of the YAML file ``path``.

    Parameters
    ----------
    path : path
    what : str
        What the file is, for messages (e.g. ``"robot config"``).
    error : type
        IdentificationError subclass to raise.

    Raises
    ------
    error
        File missing or not valid YAML.
    """
    path = Path(path)
    if not path.is_file():
        raise error(f"{what} '{path}' does not exist")
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise error(f"{what} '{path}' is not valid YAML: {exc}") from None
