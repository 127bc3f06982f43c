"""Starter robot configuration from a URDF: what ``robot-identification init`` writes.

The URDF gives the joints (1-dof revolute, continuous and prismatic joints, in pinocchio's
depth-first order; mimic joints are left out) and their position, velocity and effort
limits. The starter adds what a URDF does not carry, with conservative defaults that
simulate and identify out of the box: a rigid model with Coulomb + viscous friction, unit
gear ratios, an acceleration limit, small nominal friction for the simulator, a Fourier
excitation, the identification defaults and a ``csv:`` column template. Every default is
commented in the YAML so that it can be edited; the schema is ``config/README.md``.
"""
from __future__ import annotations

import math
import os
import re
from pathlib import Path

import numpy as np
import pinocchio as pin
import yaml

from robot_identification.errors import ConfigError, ModelError
from robot_identification.excitation import trajectory_from_config
from robot_identification.model import RobotModel, parse_robot_config, read_urdf
from robot_identification.model import (
    DRIVE_PARAMETER_DESCRIPTIONS, DRIVE_PARAMETER_UNITS, DRIVE_PARAMETERS, build_pinocchio_model,
    check_urdf_tree, parser_urdf, share_directory)

#: Acceleration limit written for joints (a URDF has none) [rad/s^2 or m/s^2].
DEFAULT_ACCELERATION = 10.0
#: Velocity limit written when the URDF gives none or 0 [rad/s or m/s].
DEFAULT_VELOCITY = 2.0
#: Velocity limit cap of the starter: URDF limits of some arms are far above what an
#: identification run needs (e.g. 10 rad/s); the excitation is scaled to 0.9 of it.
VELOCITY_CAP = 3.0
#: Nominal Coulomb friction as a fraction of the joint's largest inertia times its
#: acceleration limit (viscous: half of it per rad/s).
FRICTION_FRACTION = 0.1
#: Nominal (link-referred) rotor inertia as a fraction of the joint's largest inertia.
ARMATURE_FRACTION = 0.05
#: ``model: elastic``: nominal joint stiffness K = I (2 pi f)^2 with I the joint's largest
#: inertia and f this frequency [Hz] (harmonic-drive arms: 5-20 Hz link-side resonances).
ELASTIC_FREQUENCY = 8.0
#: ``model: elastic``: gear ratio written (a CHECK line: harmonic drives 50-160; under the
#: complete model the data depend on it, docs/elastic.md).
ELASTIC_GEAR_RATIO = 100.0


def _joint_limits(urdf_xml: str) -> dict:
    """{joint name: (type, lower, upper, velocity, effort, mimicked joint or None)}, robot name,
    from urdf_parser_py."""
    from urdf_parser_py.urdf import URDF   # urdfdom-py: init only
    if isinstance(urdf_xml, bytes):
        urdf_xml = urdf_xml.decode("utf-8")
    try:
        robot = URDF.from_xml_string(parser_urdf(urdf_xml).encode())
    except Exception as exc:  # urdf_parser_py raises assorted types
        raise ModelError(f"cannot parse the URDF: {exc}") from None
    out = {}
    for j in robot.joints:
        lim = j.limit
        out[j.name] = (j.type, getattr(lim, "lower", None), getattr(lim, "upper", None),
                       getattr(lim, "velocity", None), getattr(lim, "effort", None),
                       j.mimic.joint if j.mimic is not None else None)
    return out, robot.name


#: Stroke [m] up to which a prismatic joint with no revolute joint after it counts as a
#: gripper finger (:func:`urdf_joints`); linear axes (a telescope, a gantry axis) travel more.
FINGER_STROKE = 0.1


def urdf_joints(urdf_xml: str, grippers: bool = True) -> list[str]:
    """Movable 1-dof joints of a URDF in pinocchio's (depth-first) order, mimic joints left out.

    ``grippers=False`` also leaves out gripper-like joints: prismatic joints with no
    revolute joint after them and a stroke of at most :data:`FINGER_STROKE` (fingers; their
    tiny range and speed would scale down the whole excitation), and joints that other
    joints mimic (a coupled mechanism: the model would lock the followers while the leader
    moves, :class:`RobotModel` refuses it); joints whose ``<limit>`` has lower = upper
    (the URDF does not let them move); and wheels: continuous joints hung directly on a
    ``planar`` or ``floating`` base joint with no movable joint after them (with the base
    locked, i.e. fixed, a spinning wheel would drive a base the model holds still).

    Raises
    ------
    ModelError
        Malformed URDF.
    """
    full = build_pinocchio_model(urdf_xml)
    info, _ = _joint_limits(urdf_xml)
    leaders = {v[5] for v in info.values() if v[5]}
    names = []
    for i in range(1, full.njoints):
        name = full.names[i]
        kind, lower, upper = info.get(name, ("", None, None, None, None, None))[:3]
        if full.joints[i].nv != 1 or info.get(name, (None,) * 6)[5]:
            continue
        if not grippers:
            if name in leaders or _left_out_kind(full, i, info) is not None:
                continue
            stroke = (upper - lower) if lower is not None and upper is not None else np.inf
            if kind == "prismatic" and stroke <= FINGER_STROKE and not any(
                    info.get(full.names[k], ("",))[0] in ("revolute", "continuous")
                    for k in full.subtrees[i] if k != i):
                continue
        names.append(name)
    return names


def _left_out_kind(full, i, info):
    """Why joint ``i`` of the full pinocchio model is not a joint to identify by default:
    "immobile" (<limit> lower = upper), "wheel" (continuous, on a planar/floating base,
    nothing movable after it), or None."""
    name = full.names[i]
    kind, lower, upper = info.get(name, ("", None, None, None, None, None))[:3]
    if kind in ("revolute", "prismatic") and lower is not None and lower == upper:
        return "immobile"
    base = full.parents[i]
    if kind == "continuous" and base > 0 and full.joints[base].nv in (3, 6) and not any(
            full.joints[k].nv for k in full.subtrees[i] if k != i):
        return "wheel"
    return None


def _why_left_out(urdf_xml, names, info):
    """``name (reason), ...`` for the 1-dof joints ``names`` that ``urdf_joints(...,
    grippers=False)`` leaves out (the reasons of its docstring)."""
    full = build_pinocchio_model(urdf_xml)
    leaders = {v[5] for v in info.values() if v[5]}
    reasons = {"immobile": "<limit> lower = upper", "wheel": "a wheel on a mobile base"}
    out = []
    for name in names:
        i = full.getJointId(name)
        why = _left_out_kind(full, i, info)
        why = reasons.get(why) or ("mimicked by other joints" if name in leaders
                                   else "a gripper finger")
        out.append(f"{name} ({why})")
    return ", ".join(out)


#: URDF length [m] (joint offset, centre of mass, radius of gyration) from which ``init``
#: asks whether millimetres were given as metres.
SUSPICIOUS_LENGTH = 10.0


def scale_notes(urdf_xml: str) -> list[str]:
    """Notes on URDF lengths that look like millimetres given as metres.

    A joint offset, a centre of mass or a radius of gyration (sqrt(largest principal moment
    about the centre of mass / mass)) of :data:`SUSPICIOUS_LENGTH` or more: a CAD export in
    mm (or an inertia in kg*mm^2) makes gravity torques 1000 times too large, the simulated
    arm cannot follow its excitation within the effort limits, and identification fails
    with messages about the data rather than the URDF.

    Parameters
    ----------
    urdf_xml : str

    Returns
    -------
    list of str
        One note naming the largest joint offset, centre of mass and radius of gyration at
        or above the bound (joint and body), or an empty list.

    Raises
    ------
    ModelError
        Malformed URDF.
    """
    full = build_pinocchio_model(urdf_xml)
    offsets, coms, radii = [], [], []
    for i in range(1, full.njoints):
        offsets.append((float(np.linalg.norm(full.jointPlacements[i].translation)),
                        f"joint '{full.names[i]}'"))
        body = full.inertias[i]                       # the links the joint moves, merged
        if not body.mass > 0:
            continue
        where = f"the body of joint '{full.names[i]}'"
        coms.append((float(np.linalg.norm(body.lever)), where))
        radii.append((float(np.sqrt(max(np.linalg.eigvalsh(body.inertia)[-1], 0.0)
                                    / body.mass)), where))
    found = []
    for what, values in (("joint offset", offsets), ("centre of mass at", coms),
                         ("radius of gyration", radii)):
        if values and max(values)[0] >= SUSPICIOUS_LENGTH:
            x, where = max(values)
            found.append(f"{what} {x:.4g} m ({where})")
    if not found:
        return []
    return [f"URDF lengths look like millimetres given as metres: {'; '.join(found)} "
            f"(URDF units: m, kg, kg*m^2); the simulated arm cannot follow its excitation"]


def left_out_joints(urdf_xml: str, chosen) -> list[tuple[str, str]]:
    """URDF joints that move but are not in ``chosen``, each with the reason, in pinocchio's
    order: they are locked (:attr:`RobotModel.locked_joints`).

    Parameters
    ----------
    urdf_xml : str
    chosen : sequence of str
        The joints of the configuration.

    Returns
    -------
    list of (name, reason)

    Raises
    ------
    ModelError
        Malformed URDF.
    """
    full = build_pinocchio_model(urdf_xml)
    info, _ = _joint_limits(urdf_xml)
    gripper = set(urdf_joints(urdf_xml)) - set(urdf_joints(urdf_xml, grippers=False))
    out = []
    for i in range(1, full.njoints):
        name = full.names[i]
        if name in chosen:
            continue
        kind, mimic = info.get(name, ("",) * 6)[0], info.get(name, (None,) * 6)[5]
        if full.joints[i].nv != 1:
            why = (f"{kind or str(full.joints[i].nv) + '-dof'} base joint: locked at the "
                   f"identity pose, i.e. the base is fixed (record with the base standing "
                   f"still)" if full.parents[i] == 0 and kind in ("planar", "floating")
                   else f"{full.joints[i].nv}-dof joint")
        elif _left_out_kind(full, i, info) == "immobile":
            why = f"{kind} with <limit> lower = upper = {info[name][1]:g}: it cannot move"
        elif _left_out_kind(full, i, info) == "wheel":
            why = (f"wheel-like: continuous, on the mobile base '{full.names[full.parents[i]]}'"
                   f" (locked, so the base is fixed; to identify it, lift the base)")
        elif mimic:
            why = f"{kind}, a <mimic> of '{mimic}'"
        elif name in gripper and any(v[5] == name for v in info.values()):
            why = f"{kind}, mimicked by other joints (a coupled mechanism, e.g. a gripper)"
        elif name in gripper:
            why = (f"gripper-like: prismatic, stroke <= {FINGER_STROKE:g} m, no revolute "
                   f"joint after it")
        else:
            why = f"{kind}, not in --joints"
        out.append((name, why))
    return out


def _fmt(x: float) -> str:
    """Short number that YAML 1.1 (PyYAML) reads as a float: 5e-05 -> 5.0e-05."""
    text = f"{x:.6g}"
    if "e" in text and "." not in text.split("e")[0]:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}.0e{exponent}"
    return text


def starter_config(urdf: str | Path, output: str | Path, joints=None, name=None,
                   urdf_xml: str | None = None, model: str = "rigid",
                   xacro_args: dict | None = None) -> str:
    """YAML text of a starter robot configuration for ``urdf``.

    Parameters
    ----------
    urdf : path
        URDF or xacro file; the YAML names it relative to ``output``'s folder.
    output : path
        Where the YAML will be written (only its folder is used here).
    joints : sequence of str, optional
        Joints to identify (default: every movable 1-dof joint but mimic and gripper-like
        joints, see :func:`urdf_joints`); the others are locked at 0.
    name : str, optional
        Robot name (default: the URDF's ``<robot name>``).
    urdf_xml : str, optional
        The URDF text (default: read ``urdf``, expanding xacro with ``xacro_args``).
    model : {"rigid", "elastic"}
        ``elastic`` (Zollo et al. 2014) adds a nominal joint stiffness per joint, a
        link-side resonance at :data:`ELASTIC_FREQUENCY` against the joint's largest
        inertia (the simulator's true value; identify estimates it); revolute joints only.
    xacro_args : dict, optional
        xacro arguments (name -> value), written as the config's ``xacro_args``.

    Returns
    -------
    str
        The YAML, validated by :func:`parse_robot_config`.

    Raises
    ------
    ModelError
        Unreadable or malformed URDF, no movable joint.
    ConfigError
        ``joints`` names a joint the URDF lacks or a joint that is not movable; ``model``
        is not rigid or elastic; ``xacro_args`` for a file that is not a .xacro.
    """
    urdf = Path(urdf)
    if model not in ("rigid", "elastic"):
        raise ConfigError(f"model must be 'rigid' or 'elastic', got {model!r}")
    xacro_args = {str(k): str(v) for k, v in (xacro_args or {}).items()}
    if xacro_args and urdf.suffix != ".xacro":
        raise ConfigError(f"xacro arguments {sorted(xacro_args)} given, but '{urdf}' is not "
                          f"a .xacro file")
    if urdf_xml is None:
        urdf_xml = read_urdf(urdf, xacro_args)
    check_urdf_tree(urdf_xml, f"URDF '{urdf}'")
    movable = urdf_joints(urdf_xml)
    info, robot_name = _joint_limits(urdf_xml)
    if joints:
        bad = [j for j in joints if j not in movable]
        if bad:
            raise ConfigError(f"--joints {bad} are not movable 1-dof joints of '{urdf}'; "
                              f"its movable joints are {movable}")
        chosen = [j for j in movable if j in joints]     # keep the kinematic order
    else:
        chosen = urdf_joints(urdf_xml, grippers=False)
    if not chosen:
        raise ModelError(f"'{urdf}' has no movable 1-dof joint" + (
            f" to identify: {_why_left_out(urdf_xml, movable, info)}; choose joints with "
            f"--joints or fix the URDF" if movable else ""))
    name = name or re.sub(r"[^A-Za-z0-9_]+", "_", robot_name or urdf.stem) or "robot"
    args = (urdf, Path(output), chosen, info, name, urdf_xml, model, xacro_args)
    inertia = _joint_inertia(_text(*args, None), Path(output), urdf.resolve(), urdf_xml)
    text = _text(*args, inertia)
    _validate(text, Path(output), urdf.resolve(), urdf_xml)
    return text


def _no_inertial_notes(urdf):
    """A note when no configured joint moves any inertia and ``urdf`` is a xacro that
    declares arguments: descriptions such as franka_description add the <inertial>
    elements only under one (``gazebo:=true``)."""
    if not str(urdf).endswith(".xacro"):
        return []
    try:
        declared = list(dict.fromkeys(re.findall(r"<xacro:arg\s+name=[\"']([^\"']+)",
                                                 Path(urdf).read_text())))
    except (OSError, UnicodeDecodeError):
        return []
    if not declared:
        return []
    return [f"no joint moves any <inertial>; the xacro declares arguments {declared}: some "
            f"descriptions add the inertials only under one (franka_description: "
            f"gazebo:=true), pass it with --xacro-arg NAME:=VALUE"]


def _schema_line() -> list:
    """The YAML language server's modeline naming this installation's JSON Schema of a robot
    config (editors then complete and check keys; config/README.md#editor-support), or none
    when the installation has no schema file."""
    try:
        schema = share_directory() / "config" / "robot_config.schema.json"
    except ConfigError:
        return []
    return [f"# yaml-language-server: $schema={schema.as_posix()}"] if schema.is_file() else []


def _text(urdf, output, chosen, info, name, urdf_xml, model, xacro_args, inertia):
    """The YAML; ``inertia`` (n,) [kg*m^2] sets nominal friction, stiffness and PD gains
    (None: 0, and stiffness 1)."""
    n = len(chosen)
    try:
        rel = Path(_relpath(urdf.resolve(), Path(output).resolve().parent))
    except ValueError:             # other drive (Windows): keep it absolute
        rel = urdf.resolve()

    lines = [
        *_schema_line(),
        f"# Starter configuration of '{name}', written by `robot-identification init` from",
        f"# {urdf.name}. Schema and every key: config/README.md. Units SI (rad, m, N*m, kg*m^2).",
        "# Check the lines marked CHECK before identifying a real robot: they are defaults,",
        "# not data of your arm. This file works as is with simulate / excite / identify /",
        "# demo --config (the simulator uses the URDF inertials as the true parameters).",
        f"name: {name}",
        f"description: {name} ({n} joints), starter config from {urdf.name}",
        f"urdf: {rel.as_posix()}",
        *([f"xacro_args: {{{', '.join(f'{k}: {_quote(v)}' for k, v in xacro_args.items())}}}"
           "   # as xacro FILE NAME:=VALUE"] if xacro_args else []),
        "gravity: [0.0, 0.0, -9.81]         # m/s^2 in the base frame; CHECK the mounting",
        f"model: {model:<28s}# rigid | elastic (needs motor encoders, and link encoders "
        "or joint",
        "                                   # torque sensors: docs/elastic.md, sensor sets)",
        *(["coupling: complete                 # complete (rotor-link coupling, Zollo et al.) "
           "| reduced (Spong):",
           "                                   # CHECK; complete: the data depend on "
           "gear_ratio"] if model == "elastic" else []),
        "friction:",
        "  model: coulomb_viscous           # none | viscous | coulomb_viscous | static",
        "  offset: false                    # true: a constant torque offset per joint "
        "(current sensors)",
        "joints:                            # identification order; joints not listed are "
        "locked at 0",
    ]
    drive_keys = [k for k in (("stiffness",) if model == "elastic" else ()) + (
        "rotor_inertia", "viscous", "coulomb") if k in DRIVE_PARAMETERS]
    comment = [f"#   {k}: {DRIVE_PARAMETER_DESCRIPTIONS[k]} [{DRIVE_PARAMETER_UNITS[k]}]"
               for k in drive_keys]
    for k, j in enumerate(chosen):
        jtype, lower, upper, vel, effort, _ = info.get(j, ("revolute",) + (None,) * 5)
        lim = []
        if jtype != "continuous" and lower is not None and upper is not None \
                and math.isfinite(lower) and math.isfinite(upper) and lower < upper:
            lim.append(f"position: [{_fmt(lower)}, {_fmt(upper)}]")
        v = vel if vel and vel > 0 and math.isfinite(vel) else DEFAULT_VELOCITY
        lim.append(f"velocity: {_fmt(min(v, VELOCITY_CAP))}")
        lim.append(f"acceleration: {_fmt(DEFAULT_ACCELERATION)}")
        if effort and effort > 0 and math.isfinite(effort):
            lim.append(f"effort: {_fmt(effort)}")
        # nominal drive values: the simulator's "true" friction; identification estimates them.
        # Coulomb friction FRICTION_FRACTION of the torque that accelerates the joint's
        # largest inertia at the acceleration limit: the PD loop overcomes it on every joint.
        inertia_k = 0.0 if inertia is None else max(inertia[k], 1e-4)
        scale = inertia_k * DEFAULT_ACCELERATION
        stiffness = inertia_k * (2 * math.pi * ELASTIC_FREQUENCY) ** 2 if inertia else 1.0
        gear = ELASTIC_GEAR_RATIO if model == "elastic" else 1.0
        nominal = {"stiffness": float(f"{stiffness:.3g}"),
                   "rotor_inertia": float(f"{ARMATURE_FRACTION * inertia_k / gear ** 2:.3g}"),
                   "viscous": float(f"{0.5 * FRICTION_FRACTION * scale:.3g}"),
                   "coulomb": float(f"{FRICTION_FRACTION * scale:.3g}")}
        drive = ", ".join(f"{k}: {_fmt(nominal[k])}" for k in drive_keys)
        kind = "  # prismatic: m, m/s, m/s^2, N" if jtype == "prismatic" else ""
        gear_line = (
            f"    gear_ratio: {_fmt(gear):<18s} # CHECK: motor angle / joint angle "
            f"(docs/elastic.md)" if model == "elastic"
            else "    gear_ratio: 1.0                # motor angle / joint angle; 1: "
                 "link-referred drive values")
        lines += [f"  - name: {j}{kind}",
                  gear_line,
                  f"    limits: {{{', '.join(lim)}}}{_limit_check(vel, effort)}",
                  f"    drive: {{{drive}}}   # CHECK: nominal values (simulation only)"]
    for j, x in zip(chosen, inertia if inertia is not None else []):
        if not x > 0:
            lines.append(f"# note: joint '{j}' moves no inertia in the URDF (no <inertial> "
                         f"after it): CHECK the URDF")
            lines.append("#   (simulated data then identify only its drive, with large "
                         "relative errors)")
    if inertia is not None and len(chosen) and not any(x > 0 for x in inertia):
        lines += [f"# note: {note}" for note in _no_inertial_notes(urdf)]
    lines += [f"# note: {note}" for note in scale_notes(urdf_xml)]
    lines += [f"# note: {note}" for note in _degree_notes(chosen, info)]
    left_out = left_out_joints(urdf_xml, chosen)
    if left_out:
        lines.append("# not identified, locked (at 0 or the nearer limit; their links count "
                     "as part of the body")
        lines.append("# they hang on): add one under joints: to identify it")
        lines += [f"#   {nm}: {why}" for nm, why in left_out]
    lines += [
        "# limits: position and effort from the URDF; velocity capped at "
        f"{_fmt(VELOCITY_CAP)} rad/s and",
        f"# acceleration {_fmt(DEFAULT_ACCELERATION)} rad/s^2 (a URDF has none): "
        "CHECK both against your arm.",
        "# Prismatic joints: the same keys in m, m/s, m/s^2, N; drive in kg, N*s/m, N.",
        "# drive (nominal values: the simulator's true parameters; identify estimates them;",
        "# rotor_inertia: null drops the rotor-inertia column, e.g. for direct drives):",
        *comment,
        "identification:                    # defaults of `identify` and the identifier node",
        "  filter_order: 4                  # zero-phase Butterworth order",
        "  cutoff_hz: auto                  # Hz; null: no filter; auto: where the recorded "
        "signal meets its",
        "                                   # noise floor, at least 5 x the excitation band "
        "(docs/diagnostics.md)",
        "  friction_deadband: auto          # rad/s; Coulomb sign(v) ramps to 0 below it "
        "(auto: from the noise)",
        "  differentiation: central         # central | savgol",
        "  velocity_threshold: 0.0          # rad/s: friction rows below it are not used; "
        "stops and reversals",
        "                                   # are dropped anyway (stop_velocity: auto, "
        "drop_reversals: true)",
        "  estimator: auto                  # wls or physical, whichever predicts held-out "
        "identification",
        "                                   # data better (physical on a tie); or ols | wls | "
        "irls | physical ...",
        "simulation:                        # the built-in simulator "
        "(simulate, demo --config)",
        "  rate_hz: 1000.0                  # control and sampling rate",
        "  encoder_counts: 1250000          # counts/rev (prismatic: steps of 2 pi / counts m); "
        "0: none",
        "  # kp, kd: PD gains per joint [N*m/rad, N*m*s/rad]; default: a 5 Hz loop on the",
        "  # joint inertias at q = 0 (+ gravity compensation; elastic: below each joint's",
        "  # resonance, docs/simulation.md)",
        "  excitation: {type: fourier, base_frequency: 0.1, harmonics: 5, seed: 1, "
        "scaling: joint}",
        "  # amplitude (excursion per joint) by default min(1, half the position range) "
        "rad or m;",
        "  # each joint scaled to 0.9 of its own limits; `robot-identification excite` "
        "optimises one",
        "csv:                               # column layout of your CSV recordings "
        "(1-based columns)",
        "  time: 1                          # time [s]",
        *(_csv_rigid(n) if model != "elastic" else _csv_elastic(n)),
    ]
    return "\n".join(lines) + "\n"


def _csv_rigid(n):
    return [f"  position: 2                      # joint positions [rad; m]: columns 2..{1 + n}",
            f"  velocity: {2 + n:<22d} # joint velocities [rad/s; m/s] (optional)",
            f"  torque: {2 + 2 * n:<24d} # joint torques [N*m; N]; or current: + drive_gains",
            f"  n_columns: {1 + 3 * n:<21d} # fields per row"]


def _csv_elastic(n):
    """The CSV template of an elastic arm: link and motor encoders and the motor torque
    (sensor set a); the keys of the other sensor sets commented (docs/elastic.md)."""
    return [
        f"  position: 2                      # link positions [rad] (link encoders): columns "
        f"2..{1 + n};",
        "                                   # leave out without link encoders (then "
        "joint_torque)",
        f"  motor_position: {2 + n:<16d} # motor positions, link-referred: motor angle / "
        f"gear_ratio [rad]",
        f"  torque: {2 + 2 * n:<24d} # motor torques, link-referred [N*m]; or current: + "
        f"drive_gains",
        f"  # joint_torque: {2 + 3 * n:<16d} # joint torque sensors [N*m] (sensor set b, "
        f"docs/elastic.md)",
        "  # velocity: ..., motor_velocity: ...   # optional measured velocities [rad/s]",
        f"  n_columns: {1 + 3 * n:<21d} # fields per row ({1 + 4 * n} with joint_torque)"]


def _degree_notes(chosen, info) -> list:
    """Notes on revolute position limits beyond 4 pi and at most 400 in magnitude: degrees
    written where the URDF wants radians (e.g. lower="-170" upper="170"); the starter would
    take them as 'practically unlimited' and a real arm's recorded positions would never
    come near them."""
    out = []
    for j in chosen:
        kind, lower, upper = info.get(j, ("", None, None))[:3]
        ends = [abs(x) for x in (lower, upper) if x is not None and math.isfinite(x)]
        if kind == "revolute" and ends and 4 * math.pi < max(ends) <= 400:
            out.append(f"joint '{j}' has position limits [{_fmt(lower)}, {_fmt(upper)}] rad: "
                       f"degrees given as radians? (URDF angles are in rad); CHECK them")
    return out


def _limit_check(velocity, effort) -> str:
    """A CHECK comment for URDF velocity/effort limits that are 0, missing or not finite
    (hand-written URDFs): the starter writes a default velocity and no effort limit."""
    bad = [f"{key} {value:g}" if value is not None else f"no {key}"
           for key, value in (("velocity", velocity), ("effort", effort))
           if value is None or not (0 < value < math.inf)]
    return (f"   # CHECK: the URDF gives {' and '.join(bad)}; defaults written"
            if bad else "")


def _quote(value: str) -> str:
    """A YAML scalar that reads back as the string ``value``."""
    return value if yaml.safe_load(value) == value and value.strip() == value and value \
        else "'" + value.replace("'", "''") + "'"


def _relpath(target: Path, start: Path) -> str:
    return os.path.relpath(target, start)


def _joint_inertia(text, output, urdf, urdf_xml, samples=32):
    """Largest diagonal entry of the joint-space inertia matrix per joint [kg*m^2 or kg].

    Over ``samples`` configurations drawn (seeded) within the position limits.
    """

    config = parse_robot_config(yaml.safe_load(text), source=output.resolve(), urdf_path=urdf)
    model = RobotModel(config, urdf_xml)
    rng = np.random.default_rng(0)
    lo = np.array([j.limits.position[0] if j.limits.position else -np.pi
                   for j in config.joints])
    hi = np.array([j.limits.position[1] if j.limits.position else np.pi
                   for j in config.joints])
    data = model.pin_model.createData()
    best = np.zeros(model.n)
    for _ in range(samples):
        q = rng.uniform(lo, hi)
        M = pin.crba(model.pin_model, data, model.pin_configuration(q))
        best = np.maximum(best, np.diag(M)[model.velocity_indices])
    return [float(x) for x in best]


def _validate(text, output, urdf, urdf_xml):
    """The starter must load, build a model and give an excitation within the limits."""

    config = parse_robot_config(yaml.safe_load(text), source=output.resolve(), urdf_path=urdf)
    model = RobotModel(config, urdf_xml)
    trajectory_from_config(model)
