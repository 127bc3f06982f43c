"""Export of identified standard parameters as a URDF.

The inertial of the link moved by each configured joint is replaced by the identified
body (mass, centre of mass, inertia about the centre of mass, link axes). Links welded
to that body by fixed joints lose their inertial (the identified body includes them, as
pinocchio merges them into one body). Identified viscous and Coulomb friction go into
each joint's ``<dynamics damping= friction=>`` (read by pinocchio, MuJoCo -- as damping and
frictionloss -- and Gazebo's URDF-to-SDFormat conversion). The rotor inertia goes into a
``<transmission>`` per joint (:func:`transmission`): ROS's SimpleTransmission with the gear
ratio as ``mechanicalReduction``, plus Drake's ``drake:rotor_inertia`` and
``drake:gear_ratio``, from which Drake's parser adds the reflected inertia
rotor_inertia * k_m^2, the project's armature. MuJoCo's URDF reader has no armature (its
``<mujoco>`` extension takes only compiler, option and size): ``export-mjcf`` writes a
MuJoCo model with it. Torque offsets, static (stiction/Stribeck) friction and the elastic
joints' stiffness and damping have no URDF element and are written into a comment
(:func:`not_in_urdf`), with the rotor inertia again.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pinocchio as pin

from robot_identification.errors import DataError, ModelError
from robot_identification.model import RobotModel
from robot_identification.outputs import write_text_atomic
from robot_identification.regressor import nominal_load, rigid_regressor


def _fmt(x):
    return f"{float(x):.10g}"


def body_inertias(model, standard):
    """pinocchio Inertias of the configured bodies (joint frames) from standard parameters.

    Raises
    ------
    DataError
        Wrong length, NaN/inf values, or a body with non-positive mass (not physically
        consistent).
    """
    pi = np.asarray(standard, dtype=float)
    if pi.shape != (model.n_parameters,):
        raise DataError(f"expected {model.n_parameters} standard parameters, got {pi.shape}")
    bad = [n for n, v in zip(model.parameter_names, pi) if not np.isfinite(v)]
    if bad:
        raise DataError(f"standard parameter(s) {bad[:5]} are not finite (NaN/inf): nothing "
                        f"to export")
    pj = model.inertial_to_joint_frame(pi)
    out = []
    for k, body in enumerate(model.body_names):
        p10 = pj[10 * k: 10 * k + 10]
        if p10[0] <= 0:
            raise DataError(f"body '{body}' has mass {p10[0]:.4g} kg <= 0: export a "
                            f"physically consistent estimate")
        out.append(pin.Inertia.FromDynamicParameters(p10))
    return out


#: Drive parameters without a URDF element: (key, description with unit).
_COMMENT_ONLY = (
    ("rotor_inertia", "link-side rotor inertia (armature) [kg*m^2]"),
    ("offset", "torque offsets [N*m]"),
    ("coulomb_load", "load-dependent Coulomb friction f_l: + f_l |tau_0| sign(v), tau_0 the "
                     "joint torque of the ORIGINAL URDF's rigid-body model [N*m per N*m]"),
    ("stiction", "static friction (2/pi) atan(K_v v) amplitude, Szabo eq. 7-9 [N*m]"),
    ("stribeck", "Stribeck (2/pi) atan(delta v) amplitude, Szabo eq. 7-9 [N*m]"),
    ("stiffness", "joint stiffness [N*m/rad]"),
    ("damping", "joint (spring) damping [N*m*s/rad]"),
)


def not_in_urdf(model, standard):
    """The identified drive parameters a URDF cannot hold: [(description, values (n,))].

    Rotor inertia and offsets always (0 where the model has none), stiction, Stribeck
    friction, joint stiffness and damping when the model has them. URDF ``<dynamics>``
    holds only viscous (``damping``) and Coulomb (``friction``) friction.
    """
    keys = set(model.drive_parameter_keys())
    out = []
    for key, what in _COMMENT_ONLY:
        if key in ("rotor_inertia", "offset") or key in keys:
            vals = drive_values(model, standard, key)
            if key == "rotor_inertia":
                vals = vals * model.gear_ratios ** 2
            out.append((what, vals))
    return out


def drive_values(model, standard, key):
    """Drive parameter ``key`` (e.g. ``'viscous'``) per joint (n,), 0 where not in the model."""
    names = model.parameter_names
    pi = np.asarray(standard, dtype=float)
    return np.array([pi[names.index(f"{j}.{key}")] if f"{j}.{key}" in names else 0.0
                     for j in model.joint_names])


#: XML namespace of Drake's URDF extensions (``drake:rotor_inertia``, ``drake:gear_ratio``).
DRAKE_NS = "http://drake.mit.edu"


def transmission(root, joint, gear, rotor_inertia):
    """Give ``joint`` of the URDF ``root`` a ``<transmission>`` with the rotor inertia.

    A transmission of the template that drives the joint keeps its type and interfaces; its
    first actuator gets the tags. Else a new one: transmission_interface/SimpleTransmission,
    an effort interface, the actuator ``<joint>_motor`` with ``mechanicalReduction`` k_m.
    The tags are Drake's ``drake:rotor_inertia`` [kg*m^2, motor side] and
    ``drake:gear_ratio`` (Drake adds rotor_inertia * k_m^2 to the joint's inertia)."""
    tr = next((t for t in root.findall("transmission")
               if any(j.get("name") == joint for j in t.findall("joint"))), None)
    act = tr.find("actuator") if tr is not None else None
    if act is None:
        tr = ET.SubElement(root, "transmission", name=f"{joint}_transmission")
        ET.SubElement(tr, "type").text = "transmission_interface/SimpleTransmission"
        jt = ET.SubElement(tr, "joint", name=joint)
        ET.SubElement(jt, "hardwareInterface").text = "hardware_interface/EffortJointInterface"
        act = ET.SubElement(tr, "actuator", name=f"{joint}_motor")
        ET.SubElement(act, "mechanicalReduction").text = _fmt(gear)
    for tag in ("rotor_inertia", "gear_ratio"):
        for old in act.findall(f"{{{DRAKE_NS}}}{tag}"):
            act.remove(old)
    ET.SubElement(act, f"{{{DRAKE_NS}}}rotor_inertia", value=_fmt(rotor_inertia))
    ET.SubElement(act, f"{{{DRAKE_NS}}}gear_ratio", value=_fmt(gear))
    return tr


def read_transmissions(urdf_xml):
    """Per joint (rotor_inertia, gear_ratio) of the Drake tags in a URDF's transmissions, as
    Drake reads them: {joint: (J_m [kg*m^2], k_m)}."""
    root = ET.fromstring(urdf_xml)
    out = {}
    for tr in root.findall("transmission"):
        jt, act = tr.find("joint"), tr.find("actuator")
        if jt is None or act is None:
            continue
        ri = act.find(f"{{{DRAKE_NS}}}rotor_inertia")
        gr = act.find(f"{{{DRAKE_NS}}}gear_ratio")
        if ri is not None:
            out[jt.get("name")] = (float(ri.get("value")),
                                   float(gr.get("value")) if gr is not None else 1.0)
    return out


def export_urdf(model, standard, path, *, comment=None, inputs=()) -> Path:
    """Write the robot's URDF with identified inertials and friction.

    Parameters
    ----------
    model : RobotModel
        Its ``urdf_xml`` is the template.
    standard : ndarray (P,)
        Physically consistent standard parameters (``model.parameter_names`` order).
    path : path
        Output URDF.
    comment : str, optional
        Provenance written at the top of the file.
    inputs : iterable of path
        Files the output must not replace (the model's URDF and config always count).

    Returns
    -------
    Path

    Raises
    ------
    DataError
        Non-physical or non-finite parameters.
    ConfigError
        ``path`` is an input (:func:`robot_identification.outputs.check_output`).
    ModelError
        URDF links of the model not found in the template.
    """
    inertias = body_inertias(model, standard)
    root = ET.fromstring(model.urdf_xml)
    links = {lk.get("name"): lk for lk in root.findall("link")}
    joints = {jt.get("name"): jt for jt in root.findall("joint")}
    pm = model.pin_model
    for k, (body, inert) in enumerate(zip(model.body_names, inertias)):
        if body not in links:
            raise ModelError(f"link '{body}' not found in the URDF template")
        link = links[body]
        for old in link.findall("inertial"):
            link.remove(old)
        el = ET.SubElement(link, "inertial")
        ET.SubElement(el, "origin", xyz=" ".join(_fmt(v) for v in inert.lever), rpy="0 0 0")
        ET.SubElement(el, "mass", value=_fmt(inert.mass))
        ic = inert.inertia
        ET.SubElement(el, "inertia", ixx=_fmt(ic[0, 0]), ixy=_fmt(ic[0, 1]), ixz=_fmt(ic[0, 2]),
                      iyy=_fmt(ic[1, 1]), iyz=_fmt(ic[1, 2]), izz=_fmt(ic[2, 2]))
        jid = model.joint_ids[k]
        for fr in pm.frames:       # massive links welded to this body: now included in it
            if (fr.parentJoint == jid and fr.type == pin.FrameType.BODY and fr.name != body
                    and fr.name in links):
                for old in links[fr.name].findall("inertial"):
                    links[fr.name].remove(old)
    fv, fc = drive_values(model, standard, "viscous"), drive_values(model, standard, "coulomb")
    rotor = drive_values(model, standard, "rotor_inertia")
    ET.register_namespace("drake", DRAKE_NS)
    for k, jn in enumerate(model.joint_names):
        jt = joints[jn]
        for old in jt.findall("dynamics"):
            jt.remove(old)
        ET.SubElement(jt, "dynamics", damping=_fmt(max(fv[k], 0.0)),
                      friction=_fmt(max(fc[k], 0.0)))
        if model.config.joints[k].rotor:
            transmission(root, jn, model.gear_ratios[k], rotor[k])
    note = " Identified by robot_identification. Not in URDF: " + "; ".join(
        f"{what} {', '.join(f'{j}: {_fmt(v)}' for j, v in zip(model.joint_names, vals))}"
        for what, vals in not_in_urdf(model, standard)) + ". "
    root.insert(0, ET.Comment(note))
    if comment:
        root.insert(0, ET.Comment(f" {comment} "))
    ET.indent(root, space="  ")
    return write_text_atomic(path, '<?xml version="1.0"?>\n'
                             + ET.tostring(root, encoding="unicode") + "\n",
                             inputs=tuple(inputs) + (model.config.urdf_path,
                                                     model.config.source))


def urdf_torque(urdf_path, model, standard, q, dq, ddq):
    """Joint torque (N, n) of an exported URDF: pinocchio rnea + rotor inertia + friction.

    rnea of the exported URDF (its inertials), plus per joint armature * ddq (from the
    file's Drake transmission tags, rotor_inertia * gear_ratio^2, where it has them) +
    f_v dq + (f_c + f_l |tau_0|) sign(dq) + f_o with the identified friction parameters in
    ``standard`` (tau_0: the torque of ``model``'s own URDF, the load of load-dependent
    Coulomb friction, which the exported file holds in its comment only).
    Used to check an export against the base-parameter prediction.
    """
    m2 = RobotModel(model.config, urdf_xml=Path(urdf_path).read_text())
    pm = m2.pin_model
    data = pm.createData()
    qp = m2.pin_configuration(q)
    vp, ap = m2.to_pin_v(dq), m2.to_pin_v(ddq)
    tau = np.array([m2.from_pin_v(pin.rnea(pm, data, qp[i], vp[i], ap[i]))
                    for i in range(len(qp))])
    drake = read_transmissions(Path(urdf_path).read_text())
    arm = np.array([drake[j][0] * drake[j][1] ** 2 if j in drake else 0.0
                    for j in model.joint_names])
    fv, fc = drive_values(model, standard, "viscous"), drive_values(model, standard, "coulomb")
    fo = drive_values(model, standard, "offset")
    fl = drive_values(model, standard, "coulomb_load")
    if np.any(fl):
        fc = fc + fl * np.abs(nominal_load(model, rigid_regressor(model, q, dq, ddq)))
    return tau + arm * ddq + fv * dq + fc * np.sign(dq) + fo
