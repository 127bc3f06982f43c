"""Export of identified standard parameters as an MJCF (MuJoCo) model.

The model is :func:`robot_identification.simulation.describe_mujoco`'s (the same one the
MuJoCo engine simulates): every configured body with its identified mass, centre of mass
and inertia, joint armature (rotor inertia k_m^2), damping (viscous friction) and
frictionloss (Coulomb friction), torque motors; elastic joints as rotor bodies coupled to
the links by fixed-tendon springs (identified stiffness K and damping D). Offsets and the
stiction/Stribeck terms have no MJCF element and are listed in a comment.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from robot_identification.errors import DataError
from robot_identification.outputs import write_text_atomic
from robot_identification.simulation import describe_mujoco, mjcf_text

#: Drive parameters without an MJCF element: (key, description with unit).
_COMMENT_ONLY = (
    ("offset", "torque offsets [N*m]"),
    ("coulomb_load", "load-dependent Coulomb friction f_l: + f_l |tau_0| sign(v), tau_0 the "
                     "joint torque of the robot's URDF [N*m per N*m]"),
    ("stiction", "static friction (2/pi) atan(K_v v) amplitude, Szabo eq. 7-9 [N*m]"),
    ("stribeck", "Stribeck (2/pi) atan(delta v) amplitude, Szabo eq. 7-9 [N*m]"),
)


def export_mjcf(model, standard, path, *, coupling=None, comment=None, inputs=()) -> Path:
    """Write an MJCF file of the robot with identified parameters.

    Parameters
    ----------
    model : RobotModel
    standard : ndarray (P,)
        Physically consistent standard parameters (``model.parameter_names`` order).
    path : path
        Output ``.xml`` file.
    coupling : {None, 'complete', 'reduced'}
        Elastic models: the rotor-link coupling to write (default the config's).
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
        Non-finite parameters, or bodies MuJoCo cannot represent (not physically
        consistent, also after an elastic joint's rotor is taken out of its parent body).
    ConfigError
        ``path`` is an input; an elastic joint without positive stiffness or rotor inertia.
    """
    pi = np.asarray(standard, dtype=float)
    if pi.shape != (model.n_parameters,):
        raise DataError(f"expected {model.n_parameters} standard parameters, got {pi.shape}")
    bad = [n for n, v in zip(model.parameter_names, pi) if not np.isfinite(v)]
    if bad:
        raise DataError(f"standard parameter(s) {bad[:5]} are not finite (NaN/inf): nothing "
                        f"to export")
    desc = describe_mujoco(model, pi, coupling=coupling)
    names = model.parameter_names
    notes = []
    for key, what in _COMMENT_ONLY:
        vals = [(j, pi[names.index(f"{j}.{key}")]) for j in model.joint_names
                if f"{j}.{key}" in names]
        if vals and any(v != 0 for _, v in vals):
            notes.append(f"{what} " + ", ".join(f"{j}: {v:.10g}" for j, v in vals))
    negative = [j for j, c in zip(model.joint_names, desc.drives["coulomb"]) if c < 0]
    if negative:
        notes.append(f"negative Coulomb friction of {negative} (frictionloss must be >= 0: "
                     f"written as 0)")
    head = (" Identified by robot_identification: robot '" + model.config.name + "', "
            + ("elastic joints, " + desc.coupling + " rotor-link coupling (rotor bodies "
               "coupled to the links by fixed-tendon springs q - phi/k_m)" if desc.elastic
               else "rigid joints (armature = rotor_inertia * k_m^2)")
            + "; SI units; motors take the link-referred torque. Not in MJCF: "
            + ("; ".join(notes) if notes else "nothing") + ". ")
    text = mjcf_text(desc, comment=head)
    if comment:
        text = text.replace("<mujoco", f"<!-- {comment} -->\n<mujoco", 1)
    return write_text_atomic(path, text, inputs=tuple(inputs) + (model.config.urdf_path,
                                                               model.config.source))
