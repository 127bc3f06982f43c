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
        File missing, unreadable, not text (binary) or not valid YAML; the message is one
        line naming the file (and the line and column of a syntax error).
    """
    path = Path(path)
    if not path.is_file():
        raise error(f"{what} '{path}' does not exist")
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise error(f"{what} '{path}' is not a text file (byte {exc.start} is not UTF-8)") \
            from None
    except OSError as exc:
        raise error(f"{what} '{path}' cannot be read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise error(f"{what} '{path}' is not valid YAML{where}: {problem}") from None
