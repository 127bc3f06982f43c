"""RobotModel: a URDF/xacro turned into a pinocchio model plus drive data and the
named standard-parameter vector."""
from __future__ import annotations

import os
import re
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin

from robot_identification._files import check_input_file
from robot_identification.errors import ConfigError, ModelError
from robot_identification.model._config import (
    DRIVE_PARAMETER_UNITS, PRISMATIC_DRIVE_PARAMETER_UNITS, RobotConfig)
from robot_identification.model._config_file import load_robot_config
from robot_identification.model._inertia import (
    INERTIAL_NAMES, INERTIAL_UNITS, frame_change_matrix, spin_inertia_parameters)

#: Largest URDF or xacro file read, and largest file a xacro includes [bytes]: public arm
#: descriptions are below 1 MiB (meshes are separate files).
MAX_URDF_BYTES = 64 * 2**20
#: Most xacro macro calls one expansion makes: a xacro whose macros call each other twice
#: per level expands to 2**depth elements and runs for ever (shipped and public arms make
#: a few hundred; 20000 calls take about 2 s of CPU).
MAX_XACRO_MACRO_CALLS = 20_000


def read_urdf(path: str | Path, xacro_args: dict | None = None) -> str:
    """Return the URDF XML of ``path``, expanding it with xacro when it ends in ``.xacro``.

    ``xacro_args`` (name -> value) are the xacro arguments, as ``xacro FILE name:=value``
    (the robot config's ``xacro_args``); they are not used for a plain URDF.

    The file, and every file a xacro includes or loads (``xacro:include``,
    ``xacro.load_yaml``), must be a regular file of at most :data:`MAX_URDF_BYTES` (a FIFO
    blocked the reader for ever, ``/dev/zero`` read without end); a xacro expansion makes at
    most :data:`MAX_XACRO_MACRO_CALLS` macro calls.

    Raises
    ------
    ModelError
        File missing, a directory, not a regular file, too large, not text (binary),
        unreadable, or xacro expansion failed (also: an included file as above, too many
        macro calls).
    """
    path = Path(path)
    check_input_file(path, "URDF file", ModelError, MAX_URDF_BYTES)
    if path.suffix == ".xacro":
        try:
            import xacro  # xacro: needed only for .xacro files
            with _bounded_xacro(xacro):
                doc = xacro.process_file(str(path), mappings=dict(xacro_args or {}))
            return doc.toprettyxml(indent="  ")
        except ModelError as exc:
            raise ModelError(f"xacro expansion of '{path}' failed: {exc}") from None
        except Exception as exc:  # xacro raises many types
            raise ModelError(f"xacro expansion of '{path}' failed: {_xacro_cause(path, exc)}"
                             ) from None
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ModelError(f"URDF file '{path}' is not a text file (byte {exc.start} is not "
                         f"UTF-8)") from None
    except OSError as exc:
        raise ModelError(f"URDF file '{path}' cannot be read: {exc.strerror}") from None


class _bounded_xacro:
    """While xacro expands a file: every file it opens (includes, ``load_yaml``) is checked
    first (:func:`~robot_identification._files.check_input_file`), and its macro calls are
    counted up to :data:`MAX_XACRO_MACRO_CALLS`. xacro's module functions are wrapped for
    the duration and restored after."""

    def __init__(self, module):
        self.module = module

    def __enter__(self):
        xacro = self.module
        self.saved = {name: getattr(xacro, name, None)
                      for name in ("parse", "load_yaml", "handle_macro_call")}
        parse, load_yaml, macro_call = (self.saved[k] for k in
                                        ("parse", "load_yaml", "handle_macro_call"))
        calls = [0]

        def checked(filename):
            full = os.path.join(getattr(xacro, "root_dir", "") or "", str(filename))
            check_input_file(full, "xacro include", ModelError, MAX_URDF_BYTES)

        def bounded_parse(inp, filename=None):
            if inp is None and filename is not None:
                checked(filename)
            return parse(inp, filename)

        def bounded_load_yaml(filename):
            checked(xacro.abs_filename_spec(filename))
            return load_yaml(filename)

        def counted_macro_call(node, macros, symbols):
            if node.tagName.startswith("xacro:"):
                calls[0] += 1
                if calls[0] > MAX_XACRO_MACRO_CALLS:
                    raise ModelError(f"more than {MAX_XACRO_MACRO_CALLS} macro calls (macros "
                                     f"that call each other without end, or expand "
                                     f"exponentially)")
            return macro_call(node, macros, symbols)

        for name, fn in (("parse", bounded_parse), ("load_yaml", bounded_load_yaml),
                         ("handle_macro_call", counted_macro_call)):
            if self.saved[name] is not None:
                setattr(xacro, name, fn)
        return self

    def __exit__(self, *exc):
        for name, fn in self.saved.items():
            if fn is not None:
                setattr(self.module, name, fn)
        return False


#: What the URDF parsers (pinocchio's urdfdom, urdf_parser_py) read: the children kept
#: under each element (other elements are dropped from the copy they are handed).
PARSED_URDF_ELEMENTS = {
    "robot": {"link", "joint", "material"},
    "link": {"inertial", "visual", "collision"},
    "joint": {"parent", "child", "origin", "axis", "limit", "dynamics", "mimic",
              "calibration", "safety_controller"},
    "link/visual": {"origin", "geometry", "material"},
    "link/collision": {"origin", "geometry"},
    "link/inertial": {"origin", "mass", "inertia"},
}
#: Attributes of ``<dynamics>`` the parsers read (``K``, ``D``, ``mu_coulomb`` of Franka's
#: URDF are not URDF and are dropped).
PARSED_DYNAMICS_ATTRIBUTES = ("damping", "friction")


def parser_urdf(urdf_xml: str) -> str:
    """A copy of a URDF with only what the URDF parsers read, for pinocchio and urdf_parser_py.

    ``<transmission>``, ``<gazebo>``, ``<ros2_control>`` and other elements outside the
    URDF schema (:data:`PARSED_URDF_ELEMENTS`; also inside ``<visual>``, ``<collision>``
    and ``<inertial>``, e.g. the ``<material>`` in the ``<collision>`` of Kinova's gripper
    pads), and ``<dynamics>`` attributes other than
    ``damping`` and ``friction``, are left out: the parsers ignore them but print one
    ``Unknown tag/attribute`` line each to stderr, hundreds for common public URDFs,
    every time a model is built. Nothing the parsers read changes (the model is the same),
    and the user's file is never modified. Text that is not a well-formed ``<robot>`` is
    returned unchanged, for the parsers to report.

    Parameters
    ----------
    urdf_xml : str

    Returns
    -------
    str
        URDF XML.
    """
    try:
        root = ET.fromstring(urdf_xml)
    except ET.ParseError:
        return urdf_xml
    if root.tag != "robot":
        return urdf_xml
    changed = False
    parents = [(root, "robot"), *((e, "link") for e in root.findall("link")),
               *((e, "joint") for e in root.findall("joint")),
               *((e, f"link/{tag}") for tag in ("visual", "collision", "inertial")
                 for e in root.findall(f"link/{tag}"))]
    for parent, path in parents:
        keep = PARSED_URDF_ELEMENTS[path]
        for child in list(parent):
            if child.tag not in keep:
                parent.remove(child)
                changed = True
    for dyn in root.findall("joint/dynamics"):
        for key in list(dyn.attrib):
            if key not in PARSED_DYNAMICS_ATTRIBUTES:
                del dyn.attrib[key]
                changed = True
    return ET.tostring(root, encoding="unicode") if changed else urdf_xml


def build_pinocchio_model(urdf_xml: str, source: str = "the URDF"):
    """pinocchio model of a URDF (all joints), built from :func:`parser_urdf`'s copy.

    The one place the project hands URDF XML to pinocchio.

    Parameters
    ----------
    urdf_xml : str
    source : str
        How the URDF is named in messages.

    Returns
    -------
    pinocchio.Model

    Raises
    ------
    ModelError
        pinocchio cannot build the model.
    """
    try:
        with _native_stderr() as native:
            model = pin.buildModelFromXML(parser_urdf(urdf_xml))
    except Exception as exc:  # pinocchio raises ValueError/RuntimeError
        cause = [ln.split(":", 1)[1].strip() for ln in native.text.splitlines()
                 if ln.startswith("Error:")][:1]
        raise ModelError(f"cannot parse {source}: {'; '.join(cause + [str(exc)])}") from None
    snap_right_angles(model)
    _distinct_frame_names(model)
    return model


def _distinct_frame_names(model):
    """Rename (in place) the frames of joints that share their name with a link: URDF names
    joints and links apart, so a fixed joint ``gripperStator`` whose child link is also
    ``gripperStator`` (Unitree Z1 of example-robot-data) is valid, but pinocchio then holds
    two frames of that name, and ``buildReducedModel`` (locking any joint before them) raised
    "Several frames match the filter" (a traceback of ``init`` / ``identify``). The joint's
    frame becomes ``<name> (joint)``; link (body) frames, joint names and the dynamics are
    unchanged. Returns how many were renamed."""
    bodies = {f.name for f in model.frames if f.type == pin.FrameType.BODY}
    taken = {f.name for f in model.frames}
    renamed = 0
    for i in range(len(model.frames)):
        frame = model.frames[i]
        if frame.type == pin.FrameType.BODY or frame.name not in bodies:
            continue
        name = f"{frame.name} (joint)"
        while name in taken:
            name += "'"
        taken.add(name)
        frame.name = name
        model.frames[i] = frame
        renamed += 1
    return renamed


#: Largest deviation (rad, matrix entries) of a joint or frame rotation from a rotation by
#: multiples of 90 degrees that :func:`snap_right_angles` reads as that rotation.
RIGHT_ANGLE_TOLERANCE = 1e-4


def snap_right_angles(model, tol=RIGHT_ANGLE_TOLERANCE):
    """Make joint and frame rotations that are within ``tol`` of a rotation by multiples of
    90 degrees exactly that rotation (in place); returns how many were changed.

    URDFs from CAD exports write pi/2 as ``1.5708`` and pi as ``3.1416`` (Kinova Gen3:
    every joint). The 4e-6 to 1e-4 rad that are left tilt an axis off the gravity
    direction and off the axis before it; that turns parameters that cannot be identified
    (the first link's mx, my about a vertical axis) or can only be identified together
    (a rotor inertia and its link's inertia about the same axis) into base parameters
    whose regressor columns are 1e-6 of the others: no data identify them, the
    excitation check refuses the data or the estimates carry absurd errors. The
    dynamics change by at most ``tol`` relative; a deliberate tilt below 0.006 degrees
    is not a geometry any identification can see.
    """
    changed = 0
    placements = [("joint", i, model.jointPlacements[i]) for i in range(1, model.njoints)]
    placements += [("frame", k, model.frames[k].placement) for k in range(len(model.frames))]
    for kind, i, placement in placements:
        R = np.array(placement.rotation)
        S = np.round(R)
        if (np.array_equal(R, S) or np.abs(R - S).max() > tol
                or not np.allclose(S @ S.T, np.eye(3)) or np.linalg.det(S) < 0):
            continue
        placement.rotation = S
        if kind == "joint":
            model.jointPlacements[i] = placement
        else:
            frame = model.frames[i]
            frame.placement = placement
            model.frames[i] = frame
        changed += 1
    return changed


class _native_stderr:
    """Capture what C++ code (urdfdom) writes to file descriptor 2 while the block runs, so
    that a refused URDF ends in one line rather than urdfdom's multi-line C++ report; what
    was captured is written to ``sys.stderr`` again when the block succeeds. ``text`` holds
    it. Without a usable descriptor 2 nothing is captured."""

    def __enter__(self):
        self.text, self._saved, self._file = "", None, None
        try:
            sys.stderr.flush()
            self._file = tempfile.TemporaryFile()
            self._saved = os.dup(2)
            os.dup2(self._file.fileno(), 2)
        except (OSError, ValueError, AttributeError):
            self._saved = None
        return self

    def __exit__(self, exc_type, exc, tb):
        if self._saved is not None:
            os.dup2(self._saved, 2)
            os.close(self._saved)
            self._file.seek(0)
            self.text = self._file.read().decode("utf-8", "replace")
        if self._file is not None:
            self._file.close()
        if exc_type is None and self.text:
            sys.stderr.write(self.text)
        return False


def _xacro_cause(path, exc):
    """One line for a xacro failure; a ``$(find pkg)`` without a ROS package path names the
    packages the file looks for (xacro only says "AMENT_PREFIX_PATH is not set", twice)."""
    text = " ".join(dict.fromkeys(" ".join(str(exc).split()).split(" \n")))
    if "AMENT_PREFIX_PATH" in text or "PackageNotFound" in type(exc).__name__ + text:
        try:
            found = re.findall(r"\$\(find\s+([^)\s]+)\)", Path(path).read_text())
        except OSError:
            found = []
        if found:
            pkgs = sorted(set(found))
            return (f"it includes $(find {pkgs[0]})" + (f" and {pkgs[1:]}" if pkgs[1:] else "")
                    + ", and ROS cannot find that package ("
                    + ("AMENT_PREFIX_PATH is not set" if not os.environ.get(
                        "AMENT_PREFIX_PATH") else "not on AMENT_PREFIX_PATH")
                    + "): source the workspace that holds it, or pass a URDF expanded "
                      "there (ros2 run xacro xacro ... > arm.urdf)")
    half = len(text) // 2                      # xacro repeats some messages: "X X"
    if len(text) > 20 and text[:half].strip() == text[half:].strip():
        text = text[:half].strip()
    try:
        declared = list(dict.fromkeys(re.findall(r"<xacro:arg\s+name=[\"']([^\"']+)",
                                                 Path(path).read_text())))
    except (OSError, UnicodeDecodeError):
        declared = []
    if declared or "substitution argument" in text:
        text += ((f" (the file declares xacro arguments {declared}: " if declared else " (")
                 + "pass values with `init --xacro-arg NAME:=VALUE`, or xacro_args: "
                   "{NAME: VALUE} in the robot config)")
    return text


def check_urdf_tree(urdf_xml: str, source: str = "the URDF"):
    """Check that a URDF is one tree of links with physical inertials, before pinocchio
    builds it (pinocchio crashes on a kinematic loop and names the wrong cause of others).

    Parameters
    ----------
    urdf_xml : str
    source : str
        How the URDF is named in messages (e.g. ``URDF 'arm.urdf'``).

    Raises
    ------
    ModelError
        Not XML / no ``<robot>``; duplicate or missing link/joint names; a joint naming an
        undefined link; a link with several ``<inertial>`` elements or an ``<inertial>``
        without ``<mass>`` or ``<inertia>``; a link that is the child
        of several joints or a chain of joints that closes on itself (a kinematic loop); more
        than one root link; a revolute or prismatic joint without ``<limit effort velocity>``;
        a negative or non-finite mass or inertia; an inertia tensor with a negative principal
        moment; an unknown joint type, a non-numeric or non-finite <origin>, <axis>, <limit>,
        <dynamics> or <mimic> value, a zero joint axis, a <limit> with lower above upper or
        a negative effort or velocity.
    """
    try:
        root = ET.fromstring(urdf_xml)
    except ET.ParseError as exc:
        raise ModelError(f"cannot parse {source}: not valid XML ({exc})") from None
    if root.tag != "robot":
        raise ModelError(f"{source} is not a URDF (root element <{root.tag}>, not <robot>)")
    links = [lk.get("name") for lk in root.findall("link")]
    if not links:
        raise ModelError(f"{source} defines no <link>")
    joints = [j.get("name") for j in root.findall("joint")]
    for kind, names in (("link", links), ("joint", joints)):
        dup = sorted({n for n in names if names.count(n) > 1}, key=str)
        if dup or None in names:
            raise ModelError(f"{source}: {kind} name(s) {dup or [None]} "
                             f"{'defined twice' if dup else 'missing'}; every {kind} needs "
                             f"one unique name")
    parent_of = {}
    for jt in root.findall("joint"):
        name = jt.get("name")
        pe, ce = jt.find("parent"), jt.find("child")
        par = pe.get("link") if pe is not None else None
        chi = ce.get("link") if ce is not None else None
        for role, lk in (("parent", par), ("child", chi)):
            if lk not in links:
                raise ModelError(f"{source}: joint '{name}' names {role} link '{lk}', which "
                                 f"the URDF does not define")
        if chi in parent_of:
            raise ModelError(f"{source}: link '{chi}' is the child of joints "
                             f"'{parent_of[chi][0]}' and '{name}': a kinematic loop (URDF "
                             f"describes trees; cut the loop)")
        parent_of[chi] = (name, par)
        if jt.get("type") in ("revolute", "prismatic"):
            lim = jt.find("limit")
            if lim is None or lim.get("effort") is None or lim.get("velocity") is None:
                raise ModelError(f"{source}: {jt.get('type')} joint '{name}' has no <limit> "
                                 f"with effort and velocity (the URDF format requires them; "
                                 f"use type=\"continuous\" for an unlimited revolute joint)")
    _check_urdf_values(root, source)
    roots = [lk for lk in links if lk not in parent_of]
    for lk in links:                            # follow parents: a cycle never reaches a root
        seen, cur = [], lk
        while cur in parent_of:
            if cur in seen:
                loop = [parent_of[c][0] for c in seen[seen.index(cur):]]
                raise ModelError(f"{source}: joints {loop} form a kinematic loop (URDF "
                                 f"describes trees; cut the loop)")
            seen.append(cur)
            cur = parent_of[cur][1]
    if len(roots) != 1:
        raise ModelError(f"{source} has {len(roots)} root links {roots[:5]} (links without "
                         f"a parent joint); a URDF is one tree: connect them with joints")
    for lk in root.findall("link"):
        if len(lk.findall("inertial")) > 1:
            raise ModelError(f"{source}: link '{lk.get('name')}' has "
                             f"{len(lk.findall('inertial'))} <inertial> elements; a URDF link "
                             f"has at most one (pinocchio reads the first, urdf_parser_py the "
                             f"last): merge them into one body")
        inertial = lk.find("inertial")
        if inertial is None:
            continue
        mass = inertial.find("mass")
        inertia = inertial.find("inertia")
        for tag, elem in (("mass", mass), ("inertia", inertia)):
            if elem is None:            # urdfdom drops the whole inertial (and prints why)
                raise ModelError(f"{source}: link '{lk.get('name')}' has an <inertial> without "
                                 f"<{tag}>; the URDF parsers then drop the whole inertial: "
                                 f"add <{tag} .../> (zeros for a "
                                 f"{'massless link' if tag == 'mass' else 'point mass'})")
        values = {"mass": mass.get("value") if mass is not None else "0"}
        if inertia is not None:
            values.update({k: inertia.get(k, "0") for k in ("ixx", "iyy", "izz")})
        for key, text in values.items():
            try:
                v = float(text)
            except (TypeError, ValueError):
                raise ModelError(f"{source}: link '{lk.get('name')}' {key} {text!r} is not a "
                                 f"number") from None
            if not np.isfinite(v) or v < 0:
                raise ModelError(f"{source}: link '{lk.get('name')}' has {key} {v:g}; "
                                 f"masses and principal moments of inertia are >= 0")
        if inertia is not None:
            _check_inertia_tensor(inertia, f"{source}: link '{lk.get('name')}'")


#: Joint types of the URDF format.
URDF_JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
#: Numeric attributes urdfdom parses: element tag -> {attribute: number of values}.
_URDF_NUMBERS = {"origin": {"xyz": 3, "rpy": 3}, "axis": {"xyz": 3},
                 "limit": {"lower": 1, "upper": 1, "effort": 1, "velocity": 1},
                 "dynamics": {"damping": 1, "friction": 1},
                 "mimic": {"multiplier": 1, "offset": 1}}


def _check_urdf_values(root, source):
    """The values urdfdom parses, checked before it does (it prints C++ errors and fails
    with "not a valid URDF model", or, for an <inertial> origin, silently drops the
    inertial): joint types, numbers of <origin>, <axis>, <limit>, <dynamics>, <mimic>, a
    zero joint axis, limits with lower above upper, negative effort or velocity limits.

    Raises
    ------
    ModelError
        Naming the joint or link, the element, the attribute and the value.
    """
    def owner(elem_path):
        return " ".join(f"{e.tag} '{e.get('name')}'" if e.get("name") else f"<{e.tag}>"
                        for e in elem_path)

    def walk(elem, path):
        for child in elem:
            yield child, path
            yield from walk(child, path + [child])

    top = [e for e in root if e.tag in ("joint", "link")]    # not <gazebo>, <ros2_control>
    for elem, path in (x for e in top for x in walk(e, [e])):
        spec = _URDF_NUMBERS.get(elem.tag)
        if spec is None:
            continue
        where = f"{source}: {owner(path)} <{elem.tag}>"
        for attr, n in spec.items():
            text = elem.get(attr)
            if text is None:
                continue
            try:
                values = [float(x) for x in text.split()]
            except ValueError:
                values = None
            if values is None or len(values) != n or not all(np.isfinite(values)):
                raise ModelError(f"{where} {attr}=\"{text}\" is not {n} finite number"
                                 f"{'s' if n > 1 else ''}")
    for jt in root.findall("joint"):
        name, kind = jt.get("name"), jt.get("type")
        if kind not in URDF_JOINT_TYPES:
            raise ModelError(f"{source}: joint '{name}' has type {kind!r}; URDF joint types "
                             f"are {list(URDF_JOINT_TYPES)}")
        axis = jt.find("axis")
        if kind in ("revolute", "continuous", "prismatic") and axis is not None \
                and axis.get("xyz") is not None \
                and not any(float(x) for x in axis.get("xyz").split()):
            raise ModelError(f"{source}: joint '{name}' has the zero axis "
                             f"xyz=\"{axis.get('xyz')}\": a {kind} joint needs a direction")
        lim = jt.find("limit")
        if lim is None:
            continue
        for key in ("effort", "velocity"):
            if lim.get(key) is not None and float(lim.get(key)) < 0:
                raise ModelError(f"{source}: joint '{name}' <limit> {key}={lim.get(key)} is "
                                 f"negative")
        lower, upper = lim.get("lower"), lim.get("upper")
        if kind in ("revolute", "prismatic") and lower is not None and upper is not None \
                and float(lower) > float(upper):
            raise ModelError(f"{source}: joint '{name}' <limit> lower={lower} is above "
                             f"upper={upper}")


def _check_inertia_tensor(elem, where):
    """The <inertia> element is positive semi-definite (principal moments >= 0 within 1e-6
    of the largest). The triangle inequality is not required: published arm parameters (the
    PUMA 560 of Corke & Armstrong-Helouvry) violate it.

    Raises
    ------
    ModelError
        A non-number entry or a tensor with a negative principal moment (e.g. ``ixy``
        larger than ``ixx``, ``iyy``: a sign or unit slip).
    """
    try:
        v = {k: float(elem.get(k, "0")) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
    except (TypeError, ValueError):
        raise ModelError(f"{where}: <inertia> has an entry that is not a number") from None
    if not all(np.isfinite(x) for x in v.values()):
        raise ModelError(f"{where}: <inertia> has a non-finite entry {v}")
    inertia = np.array([[v["ixx"], v["ixy"], v["ixz"]], [v["ixy"], v["iyy"], v["iyz"]],
                        [v["ixz"], v["iyz"], v["izz"]]])
    with np.errstate(all="ignore"):
        ev = np.linalg.eigvalsh(inertia)
    tol = 1e-6 * max(abs(ev).max(), 1e-12)
    if not ev[0] >= -tol:                              # also NaN (overflow of 1e308 entries)
        raise ModelError(f"{where}: <inertia> {v} is no rigid body's inertia: its principal "
                         f"moments {np.round(ev, 9).tolist()} must be >= 0 (an off-diagonal "
                         f"entry too large: a sign or unit slip?)")


def _lock_configuration(full):
    """pinocchio configuration (nq,) at which joints left out of the config are locked:
    0 (continuous joints: angle 0), or the nearer position limit when 0 lies outside the
    joint's range (a gripper finger with limits [0.01, 0.04] m is locked at 0.01 m)."""
    q = pin.neutral(full)
    for i in range(1, full.njoints):
        jm = full.joints[i]
        if jm.nq == 1:
            lo, hi = full.lowerPositionLimit[jm.idx_q], full.upperPositionLimit[jm.idx_q]
            if np.isfinite(lo) and np.isfinite(hi) and lo <= hi:
                q[jm.idx_q] = min(max(q[jm.idx_q], lo), hi)
    return q


def _locked_position(full, q_lock, i):
    """Position [rad or m] at which 1-dof joint ``i`` is locked (a continuous joint's angle
    from its cos/sin pair), None for a multi-dof joint (floating, planar)."""
    jm = full.joints[i]
    if jm.nv != 1:
        return None
    if jm.nq == 2:
        return float(np.arctan2(q_lock[jm.idx_q + 1], q_lock[jm.idx_q]))
    return float(q_lock[jm.idx_q])


def _check_mimic(urdf_xml, config):
    """Refuse a model that would break a URDF ``<mimic>`` coupling: pinocchio's model moves
    a mimic joint independently of the joint it mimics (a silently wrong model).

    Raises
    ------
    ModelError
        A configured joint with a ``<mimic>`` element, or a configured joint that another
        (then locked) joint mimics.
    """
    src = config.urdf_path or config.name
    for jt in ET.fromstring(urdf_xml).findall("joint"):
        mimic = jt.find("mimic")
        if mimic is None:
            continue
        if jt.get("name") in config.joint_names:
            raise ModelError(f"URDF '{src}': joint '{jt.get('name')}' mimics "
                             f"'{mimic.get('joint')}' (<mimic>): a coupled joint cannot be "
                             f"identified as an independent one; leave it out of the config's "
                             f"joints (it is then locked at 0)")
        if mimic.get("joint") in config.joint_names:
            raise ModelError(f"URDF '{src}': joint '{jt.get('name')}' mimics configured joint "
                             f"'{mimic.get('joint')}' (<mimic>), but the model would lock it "
                             f"while '{mimic.get('joint')}' moves; leave "
                             f"'{mimic.get('joint')}' out of the config's joints (a gripper: "
                             f"both are then locked)")


@dataclass(frozen=True)
class ParameterLayout:
    """Names, kinds and units of the standard parameter vector.

    Attributes
    ----------
    names : tuple of str
        ``"<body>.<m|mx|...|Izz>"`` for inertial parameters, ``"<joint>.<drive>"``
        for drive parameters (``rotor_inertia, K, D, fv, fc, fs, fsc, fo``).
    kinds : tuple of str
        ``"inertial"`` or the drive parameter key.
    joints : tuple of int
        Index of the joint (config order) each parameter belongs to.
    units : tuple of str
    """

    names: tuple
    kinds: tuple
    joints: tuple
    units: tuple

    def __len__(self):
        return len(self.names)

    def index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(f"no standard parameter '{name}'") from None


class RobotModel:
    """Robot model for identification: pinocchio kinematics/dynamics + drive data.

    Holds the (reduced) pinocchio model of the configured joints, the augmented
    model with one rotor per joint used by the elastic-joint regressor, and the
    layout of the standard parameter vector:

    - per joint (config order) the 10 standard parameters of the body it moves,
      ``[m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]`` about the origin of the
      body's reference frame (the joint frame, or ``body_frame`` from the config);
    - then per joint the drive parameters: rotor inertia, stiffness K (elastic),
      damping D (elastic, optional) and the friction terms of the configured model.

    An elastic model has 10 + 1 + 1 + 2 = 14 parameters per joint with Coulomb +
    viscous friction, as in Zollo et al. (2014), eq. 14.

    Joints of the URDF that the config does not list are locked (see
    :attr:`locked_joints`); the links they carry become part of the body they hang on.

    Parameters
    ----------
    config : RobotConfig
    urdf_xml : str, optional
        URDF text; default: read ``config.urdf_path``.

    Attributes
    ----------
    locked_joints : tuple of (str, float or None)
        URDF joints left out of the config and the position they are locked at [rad or m]:
        0, or the nearer limit when 0 is outside their range; None for a multi-dof joint
        (floating, planar: locked at the identity pose, i.e. a fixed base).

    Raises
    ------
    ModelError
        Malformed URDF (see :func:`check_urdf_tree`), configured joints missing from it,
        unsupported joint types, unknown ``body_frame``, a broken ``<mimic>`` coupling.
    """

    def __init__(self, config: RobotConfig, urdf_xml: str | None = None):
        self.config = config
        if urdf_xml is None:
            if config.urdf_path is None:
                raise ConfigError(f"robot config '{config.name}' names no URDF "
                                  f"(key 'urdf') and none was given")
            urdf_xml = read_urdf(config.urdf_path, config.xacro_args)
        self.urdf_xml = urdf_xml
        check_urdf_tree(urdf_xml, f"URDF '{config.urdf_path}'" if config.urdf_path
                        else f"URDF of '{config.name}'")
        full = build_pinocchio_model(urdf_xml, f"URDF '{config.urdf_path}'" if config.urdf_path
                                     else f"URDF of '{config.name}'")
        names = list(full.names)
        missing = [j for j in config.joint_names if j not in names]
        if missing:
            movable = [full.names[i] for i in range(1, full.njoints)]
            named = f" (named in robot config '{config.source}')" if config.source else ""
            urdf = f"'{config.urdf_path}'" if config.urdf_path else f"of '{config.name}'"
            raise ModelError(f"URDF {urdf} has no joint(s) {missing}{named}; its movable "
                             f"joints are {movable}")
        _check_mimic(urdf_xml, config)
        lock = [i for i in range(1, full.njoints) if full.names[i] not in config.joint_names]
        q_lock = _lock_configuration(full)
        self.locked_joints = tuple((full.names[i], _locked_position(full, q_lock, i))
                                   for i in lock)
        model = (pin.buildReducedModel(full, lock, q_lock) if lock else full)
        model.gravity = pin.Motion(np.array(config.gravity), np.zeros(3))
        self.pin_model = model
        self.n = len(config.joints)
        self.joint_names = config.joint_names
        self.gear_ratios = np.array([j.gear_ratio for j in config.joints])

        self._jids, self._idx_q, self._idx_v, self._continuous = [], [], [], []
        self.joint_types, self.joint_axes = [], []
        for j in config.joints:
            jid = model.getJointId(j.name)
            jm = model.joints[jid]
            short = jm.shortname()
            if jm.nv != 1:
                raise ModelError(f"joint '{j.name}' is a {short} joint with {jm.nv} degrees of "
                                 f"freedom; only 1-dof revolute/prismatic joints are supported")
            kind, axis = _joint_kind(jm)
            if kind is None:
                raise ModelError(f"joint '{j.name}' has unsupported type {short}")
            self._jids.append(jid)
            self._idx_q.append(jm.idx_q)
            self._idx_v.append(jm.idx_v)
            self._continuous.append(jm.nq == 2)
            self.joint_types.append(kind)
            self.joint_axes.append(axis)
        self._idx_v = np.array(self._idx_v)
        self._idx_q = np.array(self._idx_q)
        self._continuous = np.array(self._continuous)
        if config.elastic:
            bad = [nm for nm, k in zip(self.joint_names, self.joint_types) if k != "revolute"]
            if bad:
                raise ModelError(f"elastic-joint model supports revolute joints only; "
                                 f"{bad} are not revolute")

        # bodies and parameter frames
        self.body_names = []
        self._frame_change = []   # A_k: pi_joint = A_k @ pi_param
        for j, jid in zip(config.joints, self._jids):
            body = next((f.name for f in model.frames
                         if f.parentJoint == jid and f.type == pin.FrameType.BODY),
                        model.names[jid])
            self.body_names.append(body)
            if j.body_frame is None:
                self._frame_change.append(None)
                continue
            if not model.existFrame(j.body_frame, pin.FrameType.BODY):
                raise ModelError(f"body_frame '{j.body_frame}' of joint '{j.name}' is not a "
                                 f"link of the URDF")
            fr = model.frames[model.getFrameId(j.body_frame, pin.FrameType.BODY)]
            if fr.parentJoint != jid:
                raise ModelError(f"body_frame '{j.body_frame}' is not attached to the body "
                                 f"moved by joint '{j.name}'")
            self._frame_change.append(frame_change_matrix(fr.placement.rotation,
                                                          fr.placement.translation))
        self._build_layout()
        self.rotor_model = self._build_rotor_model() if config.elastic else None

    # ------------------------------------------------------------------ layout
    def joint_friction_models(self) -> tuple:
        """Friction model of each joint (config order): the joint's ``friction_model`` or
        the robot's ``friction.model``."""
        fm = self.config.friction.model
        return tuple(j.friction_model or fm for j in self.config.joints)

    def drive_parameter_keys(self) -> tuple:
        """Drive parameters per joint, in column order, for the configured model."""
        c = self.config
        keys = ["rotor_inertia"] if any(j.rotor for j in c.joints) else []
        if c.elastic:
            keys.append("stiffness")
            if c.damping:
                keys.append("damping")
        used = set(self.joint_friction_models())     # per joint (friction_model) or robot's
        if used & {"viscous", "coulomb_viscous", "static"}:
            keys.append("viscous")
        if "coulomb_viscous" in used:
            keys.append("coulomb")
            if c.friction.load_dependent:
                keys.append("coulomb_load")
            if c.friction.stiction:
                keys.append("stiction")
        if "static" in used:
            keys += [k for k in ("stiction", "stribeck") if k not in keys]
        if c.friction.offset:
            keys.append("offset")
        return tuple(keys)

    def _build_layout(self):
        names, kinds, joints, units = [], [], [], []
        for k, body in enumerate(self.body_names):
            for nm, u in zip(INERTIAL_NAMES, INERTIAL_UNITS):
                names.append(f"{body}.{nm}")
                kinds.append("inertial")
                joints.append(k)
                units.append(u)
        for k, jn in enumerate(self.joint_names):
            for key in self.drive_parameter_keys():
                names.append(f"{jn}.{key}")
                kinds.append(key)
                joints.append(k)
                units.append((PRISMATIC_DRIVE_PARAMETER_UNITS if self.joint_types[k] ==
                              "prismatic" else DRIVE_PARAMETER_UNITS)[key])
        self.layout = ParameterLayout(tuple(names), tuple(kinds), tuple(joints), tuple(units))

    @property
    def parameter_names(self) -> tuple:
        return self.layout.names

    @property
    def n_parameters(self) -> int:
        return len(self.layout)

    # ------------------------------------------------------------------ public indices
    @property
    def joint_ids(self) -> list:
        """pinocchio joint ids of the configured joints, config order (n,)."""
        return list(self._jids)

    @property
    def position_indices(self) -> np.ndarray:
        """Indices (n,) of the configured joints in pinocchio's configuration vector
        (a continuous joint takes two entries, cos and sin, from its index on)."""
        return self._idx_q

    @property
    def continuous_joints(self) -> np.ndarray:
        """bool (n,): the joint is continuous (unbounded revolute, cos/sin in q)."""
        return self._continuous

    def unwrap_positions(self, q, previous=None) -> np.ndarray:
        """Positions with the continuous joints' recorded angles made continuous.

        Drivers often report a continuous joint's angle in [-pi, pi): the step of about
        2 pi where it wraps would enter the differentiated velocity and acceleration as a
        spike. A step of more than pi between two samples is taken for a wrap and undone
        by multiples of 2 pi (:func:`numpy.unwrap`); other joints are returned unchanged.

        Parameters
        ----------
        q : array_like, shape (N, n)
            Positions in config order [rad or m] (link or motor side).
        previous : array_like, shape (n,), optional
            The last unwrapped sample before ``q`` (the preceding chunk of a recording), so
            that a recording read in chunks unwraps as in one piece.

        Returns
        -------
        ndarray, shape (N, n)
            A copy when the model has continuous joints, else ``q`` itself.
        """
        q = np.asarray(q, dtype=float)
        cont = self._continuous
        if not cont.any() or q.ndim != 2 or q.shape[0] == 0:
            return q
        out = q.copy()
        if previous is None:
            out[:, cont] = np.unwrap(q[:, cont], axis=0)
        else:
            head = np.asarray(previous, dtype=float)[cont][None, :]
            out[:, cont] = np.unwrap(np.vstack([head, q[:, cont]]), axis=0)[1:]
        return out

    @property
    def velocity_indices(self) -> np.ndarray:
        """Indices (n,) of the configured joints in pinocchio's velocity vector
        (``pin_model.nv`` entries; the other joints are locked)."""
        return self._idx_v

    @property
    def frame_changes(self) -> list:
        """Per configured joint the 10x10 matrix A_k with pi_joint = A_k @ pi_body (standard
        parameters about the config's ``body_frame`` -> about the joint frame), or None
        when the body's parameters are already about the joint frame."""
        return list(self._frame_change)

    @property
    def rotor_joint_ids(self) -> list:
        """Elastic models: pinocchio joint ids (n,) of the rotors in :attr:`rotor_model`."""
        return list(getattr(self, "_rotor_jids", []))

    @property
    def rotor_velocity_indices(self) -> np.ndarray:
        """Elastic models: indices (n,) of the rotors in the rotor model's velocity vector."""
        return getattr(self, "_rotor_idx_v", np.zeros(0, dtype=int))

    @property
    def rotor_spin_parameters(self) -> list:
        """Elastic models: per joint the standard-parameter direction (10,) of a unit rotor
        inertia about the joint axis (:func:`spin_inertia_parameters`)."""
        return list(getattr(self, "_spin", []))

    @property
    def rows_per_sample(self) -> int:
        """Regressor rows per sample: n (rigid) or 2n (elastic: link rows, then motor rows)."""
        return 2 * self.n if self.config.elastic else self.n

    def nominal_parameters(self) -> np.ndarray:
        """Standard parameters (P,) from the URDF inertials and the config's drive values.

        Drive parameters missing from the config are 0.
        """
        values = []
        for k, jid in enumerate(self._jids):
            pi_joint = self.pin_model.inertias[jid].toDynamicParameters()
            A = self._frame_change[k]
            values.append(pi_joint if A is None else np.linalg.solve(A, pi_joint))
        for j in self.config.joints:
            for key in self.drive_parameter_keys():
                values.append([j.drive.get(key, 0.0)])
        return np.concatenate(values)

    def inertial_to_joint_frame(self, pi):
        """Map inertial standard parameters (10n,) from the parameter frames to joint frames."""
        pi = np.asarray(pi, dtype=float)[: 10 * self.n].copy()
        for k, A in enumerate(self._frame_change):
            if A is not None:
                pi[10 * k: 10 * k + 10] = A @ pi[10 * k: 10 * k + 10]
        return pi

    # --------------------------------------------------------------- helpers
    def pin_configuration(self, q):
        """Pinocchio configuration vector(s) from joint positions.

        Parameters
        ----------
        q : array_like, shape (n,) or (N, n)
            Joint positions in config order [rad or m].

        Returns
        -------
        ndarray, shape (nq,) or (N, nq)
        """
        q = np.asarray(q, dtype=float)
        single = q.ndim == 1
        q2 = np.atleast_2d(q)
        out = np.tile(pin.neutral(self.pin_model), (q2.shape[0], 1))
        for k in range(self.n):
            iq = self._idx_q[k]
            if self._continuous[k]:
                out[:, iq] = np.cos(q2[:, k])
                out[:, iq + 1] = np.sin(q2[:, k])
            else:
                out[:, iq] = q2[:, k]
        return out[0] if single else out

    def to_pin_v(self, v):
        """Reorder velocity-like array(s) (..., n) from config order to pinocchio order."""
        v = np.asarray(v, dtype=float)
        out = np.empty_like(v)
        out[..., self._idx_v] = v
        return out

    def from_pin_v(self, v):
        """Reorder (..., nv) arrays from pinocchio order to config order."""
        return np.asarray(v)[..., self._idx_v]

    def _build_rotor_model(self):
        """Pinocchio model with a massless rotor joint per joint, child of the joint's parent.

        Rotor k spins about joint k's axis (Zollo et al. 2014, assumption 3: the stator
        of motor k is fixed to link k-1; z_m along the joint axis). Its generalised
        coordinate is the motor angle k_m * theta_k.
        """
        m = self.pin_model.copy()
        self._rotor_jids = []
        for k, jid in enumerate(self._jids):
            axis = self.joint_axes[k]
            rid = m.addJoint(self.pin_model.parents[jid], pin.JointModelRevoluteUnaligned(axis),
                             self.pin_model.jointPlacements[jid], f"{self.joint_names[k]}_rotor")
            m.appendBodyToJoint(rid, pin.Inertia.Zero(), pin.SE3.Identity())
            self._rotor_jids.append(rid)
        self._rotor_idx_v = np.array([m.joints[r].idx_v for r in self._rotor_jids])
        self._spin = [spin_inertia_parameters(a) for a in self.joint_axes]
        return m

    @classmethod
    def from_files(cls, config_path, urdf_path=None) -> "RobotModel":
        """Load a model from a robot config YAML (and optionally another URDF/xacro)."""
        return cls(load_robot_config(config_path, urdf_path=urdf_path))

    def __repr__(self):
        return (f"RobotModel('{self.config.name}', {self.config.model}, "
                f"joints={list(self.joint_names)}, {self.n_parameters} standard parameters)")


def _joint_kind(jm):
    short = jm.shortname()
    table = {"JointModelRX": ("revolute", (1, 0, 0)), "JointModelRY": ("revolute", (0, 1, 0)),
             "JointModelRZ": ("revolute", (0, 0, 1)),
             "JointModelRUBX": ("revolute", (1, 0, 0)), "JointModelRUBY": ("revolute", (0, 1, 0)),
             "JointModelRUBZ": ("revolute", (0, 0, 1)),
             "JointModelPX": ("prismatic", (1, 0, 0)), "JointModelPY": ("prismatic", (0, 1, 0)),
             "JointModelPZ": ("prismatic", (0, 0, 1))}
    if short in table:
        kind, axis = table[short]
        return kind, np.array(axis, dtype=float)
    if short in ("JointModelRevoluteUnaligned", "JointModelRevoluteUnboundedUnaligned"):
        return "revolute", np.array(jm.extract().axis, dtype=float)
    if short == "JointModelPrismaticUnaligned":
        return "prismatic", np.array(jm.extract().axis, dtype=float)
    return None, None
