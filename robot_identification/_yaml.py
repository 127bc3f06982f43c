"""Reading YAML files with errors that name the file (shared by configs, trajectories, results)."""
from __future__ import annotations

import re
from pathlib import Path

import yaml

from robot_identification._files import check_input_file


#: Largest YAML file read [bytes] (configs, results, bag metadata, trajectories).
MAX_BYTES = 64 * 2**20
#: Most aliases (``*name``) in one document: configs use a few to share joint settings; an
#: alias bomb ("billion laughs") needs dozens to hundreds.
MAX_ALIASES = 100
#: Most nodes the document may expand to through its aliases beyond its own nodes (each
#: alias counts the size of what it repeats): 9 levels of 9 aliases expand to 9**9.
MAX_ALIAS_EXPANSION = 100_000


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last one
    silently: a pasted ``rate_hz`` or a second ``model:`` line would override the first), and
    refuses alias bombs before anything is built: more than :data:`MAX_ALIASES` aliases, an
    expansion by more than :data:`MAX_ALIAS_EXPANSION` nodes, or an alias inside itself."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            self._aliases = getattr(self, "_aliases", 0) + 1
            if self._aliases > MAX_ALIASES:
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None, None, f"more than {MAX_ALIASES} aliases (*name): refused as a "
                    f"possible alias bomb; write the values out", event.start_mark)
        return super().compose_node(parent, index)

    def get_single_node(self):
        node = super().get_single_node()
        if node is not None and getattr(self, "_aliases", 0):
            _check_expansion(node)
        return node


def _check_expansion(root):
    """Raise :class:`yaml.YAMLError` when the node graph ``root`` expands (aliases repeated
    in full) to more than :data:`MAX_ALIAS_EXPANSION` nodes beyond its distinct ones, or
    holds a cycle (an alias to a collection inside itself). Linear in the distinct nodes."""
    size, state = {}, {}                      # expanded sizes; 1 = on the stack, 2 = done
    stack = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            children = _children(node)
            size[key] = 1 + sum(size[id(c)] for c in children)
            state[key] = 2
            if size[key] - len(size) > MAX_ALIAS_EXPANSION:
                raise yaml.composer.ComposerError(
                    None, None, f"its aliases expand to more than {MAX_ALIAS_EXPANSION} "
                    f"values: refused as a possible alias bomb", node.start_mark)
            continue
        if state.get(key) == 2:
            continue
        if state.get(key) == 1:
            raise yaml.composer.ComposerError(
                None, None, "an alias refers to a collection that contains it (a recursive "
                "structure)", node.start_mark)
        state[key] = 1
        stack.append((node, True))
        for child in _children(node):
            if state.get(id(child)) == 1:
                raise yaml.composer.ComposerError(
                    None, None, "an alias refers to a collection that contains it (a "
                    "recursive structure)", child.start_mark)
            if state.get(id(child)) != 2:
                stack.append((child, False))


def _children(node):
    if isinstance(node, yaml.SequenceNode):
        return node.value
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


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
        File missing, a directory, not a regular file (a FIFO, ``/dev/zero``), larger than
        :data:`MAX_BYTES`, unreadable, not text (binary) or not valid YAML (including a key
        given twice in one mapping, and an alias bomb: see :class:`_StrictLoader`); the
        message is one line naming the file (and the line and column of a syntax error).
    """
    path = Path(path)
    check_input_file(path, what, error, MAX_BYTES)
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
