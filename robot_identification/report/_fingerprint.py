"""The model fingerprint of a results file and its end marker (issue #28).

A results file is identified on one robot model: its joints, its kinematics (what the
regressor is built from) and, for the nominal values and the prior, the URDF's inertials.
:func:`model_fingerprint` writes that model down in a few hashes; :func:`check_fingerprint`
compares them with the model a command loads, so that ``validate``, ``report``,
``export-urdf``, ``export-mjcf`` and ``drive-gains`` refuse the results of another robot
or of another geometry of the same robot (same joint names, other link lengths: they were
validated and exported without a word).

Files written by this version also end in an ``end:`` line (:func:`end_line`) counting the
base parameters; a file that carries a fingerprint but no end (truncated after its base
parameters, a copy cut short) is refused (:func:`check_complete`).

Fingerprint (top of results.yaml, after ``robot``)::

    fingerprint:
      robot: puma560
      model: rigid                 # rigid | elastic
      joints: [joint1, joint2, ...]
      joint_types: [revolute, ...]
      kinematics: 5f0c...          # sha256 (16 hex digits) of the joint tree, placements,
                                   # axes, locked joints, parameter frames, gravity, gears
      joint_kinematics: [9a1e..., ...]   # the same per configured joint (8 hex digits)
      inertials: 77b2...           # sha256 of the URDF's inertial parameters (nominal)
"""
from __future__ import annotations

import hashlib
import warnings
from dataclasses import dataclass

import numpy as np

from robot_identification.errors import DataError

#: Digits kept of the numbers hashed: the same URDF parsed by another pinocchio build or
#: platform may differ in the last bits of a placement or an inertia.
SIGNIFICANT_DIGITS = 9
#: Keys of a fingerprint, all required.
KEYS = ("robot", "model", "joints", "joint_types", "kinematics", "joint_kinematics",
        "inertials")


@dataclass(frozen=True)
class Fingerprint:
    """The ``fingerprint`` of a results file (:func:`model_fingerprint`), typed:
    :attr:`ResultsFile.fingerprint <robot_identification.report.ResultsFile>`; None in
    files of earlier versions."""

    robot: str
    model: str
    joints: tuple
    joint_types: tuple
    kinematics: str
    joint_kinematics: tuple
    inertials: str

    @classmethod
    def from_dict(cls, fp):
        """Typed view of a checked fingerprint mapping (:func:`check_fingerprint`), None
        when ``fp`` is None or malformed (a file read without a model to compare)."""
        if not isinstance(fp, dict) or any(k not in fp for k in KEYS):
            return None
        return cls(**{k: tuple(fp[k]) if isinstance(fp[k], list) else fp[k] for k in KEYS})


def _num(values) -> str:
    a = np.asarray(values, dtype=float).ravel()
    return ",".join(f"{v:.{SIGNIFICANT_DIGITS}g}" if v != 0 else "0" for v in a + 0.0)


def _digest(parts, n=16) -> str:
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:n]


def model_fingerprint(model) -> dict:
    """The fingerprint of a :class:`~robot_identification.model.RobotModel` (module
    docstring): robot name, rigid/elastic, joint names and types, a hash of the kinematics
    (the pinocchio model's joint tree, placements and axes, the locked joints' positions,
    the configured parameter frames, gravity and gear ratios) overall and per configured
    joint (its placement chain from the base), and a hash of the URDF's inertial parameters.

    Returns
    -------
    dict
        Plain YAML types.
    """
    pm = model.pin_model
    tree = []
    for i in range(1, pm.njoints):
        jm = pm.joints[i]
        axis = getattr(jm.extract(), "axis", None) if "Unaligned" in jm.shortname() else None
        tree.append(f"{pm.names[i]}:{pm.parents[i]}:{jm.shortname()}:"
                    f"{_num(pm.jointPlacements[i].homogeneous)}:"
                    f"{'' if axis is None else _num(axis)}")
    frames = [_num(A) if A is not None else "-" for A in model.frame_changes]
    common = [_num(pm.gravity.linear), _num(model.gear_ratios),
              repr([(n, None if q is None else round(float(q), 9))
                    for n, q in model.locked_joints])]
    per_joint = []
    for k, jid in enumerate(model.joint_ids):
        chain, j = [], jid
        while j > 0:
            chain.append(tree[j - 1])
            j = pm.parents[j]
        per_joint.append(_digest(chain + [frames[k]], 8))
    inertials = [_num(pm.inertias[i].toDynamicParameters()) for i in range(1, pm.njoints)]
    return {"robot": str(model.config.name), "model": str(model.config.model),
            "joints": [str(j) for j in model.joint_names],
            "joint_types": [str(t) for t in model.joint_types],
            "kinematics": _digest(tree + frames + common),
            "joint_kinematics": per_joint,
            "inertials": _digest(inertials)}


def check_fingerprint(doc, model, path):
    """Compare the ``fingerprint`` of a parsed results file with ``model``.

    A file without a fingerprint (written before it existed) passes with a warning: its
    geometry cannot be checked. Inertials that differ (the URDF's masses edited since the
    identification) pass with a warning: the identified values do not depend on them, the
    nominal values and priors do.

    Raises
    ------
    DataError
        The fingerprint is malformed, or names another robot, rigid/elastic model, joint
        layout or kinematics (naming the first joint whose kinematics differ).
    """
    fp = doc.get("fingerprint")
    if fp is None:
        warnings.warn(f"results file '{path}' carries no model fingerprint (written by an "
                      f"earlier version): whether it was identified on this URDF's geometry "
                      f"cannot be checked", UserWarning, stacklevel=3)
        return
    if not isinstance(fp, dict) or any(k not in fp for k in KEYS):
        missing = [k for k in KEYS if not isinstance(fp, dict) or k not in fp]
        raise DataError(f"results file '{path}': 'fingerprint' must map {list(KEYS)}; "
                        f"missing {missing}")
    now = model_fingerprint(model)
    for key in ("robot", "model", "joints", "joint_types"):
        if fp[key] != now[key]:
            raise DataError(f"'{path}' was identified on another robot model: its "
                            f"fingerprint's {key} is {str(fp[key])[:80]}, the model "
                            f"'{model.config.name}' has {str(now[key])[:80]}")
    if fp["kinematics"] != now["kinematics"]:
        theirs = fp["joint_kinematics"] if isinstance(fp["joint_kinematics"], list) else []
        moved = [j for j, a, b in zip(now["joints"], theirs, now["joint_kinematics"])
                 if a != b]
        where = (f" (from joint '{moved[0]}' on: its placement, axis, parameter frame or a "
                 f"link before it)" if moved else
                 " (gravity, gear ratios or locked joints)")
        raise DataError(f"'{path}' was identified on another geometry of robot "
                        f"'{model.config.name}': the kinematics of this URDF and config "
                        f"differ from the identification's{where}; identify again on this "
                        f"URDF, or give the URDF the results were identified with (--urdf)")
    if fp["inertials"] != now["inertials"]:
        warnings.warn(f"'{path}': the URDF's inertial parameters differ from the ones at the "
                      f"identification: the identified values stand, nominal values and "
                      f"priors are this URDF's", UserWarning, stacklevel=3)


def end_line(doc) -> str:
    """The last line of a results file: ``end: {base_parameters: P}`` (flow style, so that
    a file cut anywhere in it is not valid YAML)."""
    return f"end: {{base_parameters: {len(doc.get('base_parameters') or [])}}}\n"


def check_complete(doc, path):
    """A results file that carries a fingerprint must end in :func:`end_line` counting its
    base parameters: a file truncated after its base parameters (or anywhere after its
    fingerprint) is refused.

    Raises
    ------
    DataError
        No ``end``, or an ``end`` that counts other base parameters than the file holds.
    """
    if "fingerprint" not in doc and "end" not in doc:
        return
    end = doc.get("end")
    count = end.get("base_parameters") if isinstance(end, dict) else None
    if end is None:
        raise DataError(f"results file '{path}' is incomplete: it ends after "
                        f"'{list(doc)[-1]}' without its end line (truncated: a copy or "
                        f"a write cut short); write it again with identify")
    if count != len(doc.get("base_parameters") or []):
        raise DataError(f"results file '{path}': its end line counts {str(count)[:20]} base "
                        f"parameters, the file holds {len(doc.get('base_parameters') or [])} "
                        f"(truncated or edited)")
