"""Reading YAML files with errors that name the file (shared by configs, trajectories, results)."""
from __future__ import annotations

import re
from pathlib import Path

import yaml


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last one
    silently: a pasted ``rate_hz`` or a second ``model:`` line would override the first)."""


def _construct_mapping(loader, node, deep=False):
    seen = {}
    for key_node, _ in node.value:        # the file's own keys: '<<' merges may override
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            first = seen.setdefault(key, key_node.start_mark.line + 1)
        except TypeError:                       # unhashable key: SafeLoader reports it
            continue
        if first != key_node.start_mark.line + 1:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first at line {first})",
                key_node.start_mark)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                              _construct_mapping)
# YAML 1.2 floats that PyYAML (YAML 1.1) reads as strings: an exponent without a dot or
# without a sign ("1e-4", "2E5", "1.0e9"), as engineers write rotor inertias and stiffnesses.
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)[eE][-+]?[0-9]+$"),
    list("-+0123456789."))


def load_yaml_text(text):
    """``yaml.safe_load`` that raises :class:`yaml.YAMLError` on a key given twice in a
    mapping."""
    return yaml.load(text, Loader=_StrictLoader)


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
        File missing, a directory, unreadable, not text (binary) or not valid YAML
        (including a key given twice in one mapping); the message is one line naming the file
        (and the line and column of a syntax error).
    """
    path = Path(path)
    if path.is_dir():
        raise error(f"{what} '{path}' is a directory; give the YAML file")
    if not path.is_file():
        raise error(f"{what} '{path}' does not exist")
    try:
        text = path.read_text(encoding="utf-8-sig")
        if text.lstrip().startswith("<"):
            raise error(f"{what} '{path}' is XML, not YAML (a URDF given in its place?)")
        return load_yaml_text(text)
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
