"""Drive gains (torque per motor current) from an unloaded/loaded pair with a known payload.

Gautier & Briot (2011), "New method for global identification of the joint drive
gains of robots using a known payload mass", IROS 2011: the same trajectory is run
without and with a payload of known inertial parameters phi_L. With currents i_j and
unknown gains g_j (tau_j = g_j i_j), the rigid model of both runs is

    unloaded:  W_j(q, dq, ddq) beta - g_j i_j = 0
    loaded:    W_j(q, dq, ddq) beta - g_j i_j = -W_L,j(q, dq, ddq) phi_L

and [beta; g] follow from one (weighted) least-squares problem: the known payload fixes
the scale that the currents alone leave free. W_L are the regressor columns of the body
carrying the payload (the last one), phi_L its standard parameters in that body's
joint frame.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pinocchio as pin

from robot_identification.errors import DataError, ModelError
from robot_identification.estimation import NormalEquations, ols, wls
from robot_identification.identifiability import base_parameters, check_excitation
from robot_identification.identification._engine import recording_normal_equations
from robot_identification.model import RobotModel


@dataclass
class DriveGainResult:
    """Outcome of :func:`identify_drive_gains`.

    Attributes
    ----------
    joint_names : tuple of str
    gains : ndarray (n,)
        Drive gains [N*m/A].
    std : ndarray (n,)
        Their standard deviations [N*m/A].
    relative_std : ndarray (n,)
        [%].
    estimate : Estimate
        Joint estimate of [beta; g] (base parameters first).
    payload_parameters : ndarray (10,)
        phi_L in the carrying body's joint frame.
    payload_torque_rms : ndarray (n,)
        RMS of the payload's torque W_L phi_L per joint over the loaded run(s) [N*m].
    residual_rms : ndarray (n,)
        RMS of the joint equations' residuals [N*m].
    identified : ndarray of bool (n,)
        Joints whose gain the payload really fixes: payload torque RMS above
        ``min_payload_ratio`` times the residual RMS. Elsewhere the least-squares gain
        is biased towards 0 (the joint's equation is scale-free without the payload
        torque) and the given gains should be used.
    """

    joint_names: tuple
    gains: np.ndarray
    std: np.ndarray
    relative_std: np.ndarray
    estimate: object
    payload_parameters: np.ndarray
    payload_torque_rms: np.ndarray = None
    residual_rms: np.ndarray = None
    identified: np.ndarray = None

    def to_dict(self):
        return {"joints": list(self.joint_names), "gains": [float(g) for g in self.gains],
                "std": [float(s) for s in self.std],
                "relative_std": [float(s) for s in self.relative_std],
                "payload_parameters": [float(p) for p in self.payload_parameters],
                "payload_torque_rms": [float(v) for v in self.payload_torque_rms],
                "residual_rms": [float(v) for v in self.residual_rms],
                "identified": [bool(v) for v in self.identified]}


def payload_parameters(model, mass, com=(0.0, 0.0, 0.0), inertia=None, frame="tool0"):
    """Standard parameters (10,) of a payload in the joint frame of the last body.

    Parameters
    ----------
    model : RobotModel
    mass : float
        Payload mass [kg].
    com : array_like (3,)
        Centre of mass in ``frame`` [m].
    inertia : array_like (3, 3), optional
        Rotational inertia about the centre of mass, ``frame`` axes [kg*m^2];
        default 0 (point mass).
    frame : str
        URDF frame the payload is fixed to (default the flange ``tool0``).

    Raises
    ------
    ModelError
        A mass that is not finite and positive, a non-finite centre of mass or inertia, an
        unknown frame, or a frame not carried by the last configured joint.
    """
    pm = model.pin_model
    if not 0 < mass < np.inf:
        raise ModelError(f"payload mass must be a finite number > 0 kg, got {mass}")
    values = {"centre of mass": com, "inertia": inertia}
    for what, v in values.items():
        if v is not None and not np.all(np.isfinite(np.asarray(v, dtype=float))):
            raise ModelError(f"payload {what} must be finite, got {np.asarray(v).tolist()}")
    if not pm.existFrame(frame):
        raise ModelError(f"payload frame '{frame}' is not a frame of the URDF")
    fr = pm.frames[pm.getFrameId(frame)]
    if fr.parentJoint != model.joint_ids[-1]:
        raise ModelError(f"payload frame '{frame}' is not on the body moved by the last joint "
                         f"'{model.joint_names[-1]}'")
    rot = np.zeros((3, 3)) if inertia is None else np.asarray(inertia, dtype=float)
    inert = pin.Inertia(float(mass), np.asarray(com, dtype=float), rot)
    return fr.placement.act(inert).toDynamicParameters()


def identify_drive_gains(model, unloaded, loaded, payload, settings=None, *, base=None,
                         estimator="wls", min_payload_ratio=3.0,
                         chunk=2048) -> DriveGainResult:
    """Joint drive gains from an unloaded and a loaded run (Gautier & Briot 2011).

    Parameters
    ----------
    model : RobotModel
        Rigid model.
    unloaded, loaded : Dataset or list of Dataset
        Runs whose ``tau`` holds the motor **currents** [A] (read with unit gains).
    payload : array_like (10,)
        Payload standard parameters in the last body's joint frame
        (:func:`payload_parameters`).
    settings : IdentificationSettings, optional
        Filtering; default the robot config's.
    estimator : {'wls', 'ols'}
        WLS weights each joint's equations by its residual variance.
    min_payload_ratio : float
        A gain counts as identified when the payload torque RMS of its joint exceeds
        this multiple of the joint's residual RMS.

    Load-dependent Coulomb friction (``friction.load_dependent``) is left out of this fit:
    its column, sign(v) |tau_0| of the unloaded URDF, is the same in both runs and trades
    off against the gains' scaling of the payload torque (real UR10e pair: shoulder_lift
    11.66 / elbow 9.64 N*m/A with it, 10.71 / 8.63 without, the authors' 10.70 / 8.46).

    Returns
    -------
    DriveGainResult

    Raises
    ------
    DataError, ExcitationError
        Invalid data, or data that do not excite [beta; g].
    """

    if model.config.elastic:
        raise ModelError("drive-gain identification is implemented for rigid models only")
    if model.config.friction.load_dependent:
        model = RobotModel(replace(model.config, friction=replace(
            model.config.friction, load_dependent=False)), urdf_xml=model.urdf_xml)
        base = None
    # plain sign(v) on every filtered sample, as Gautier & Briot: the rows of the loaded and
    # unloaded runs must stay comparable (no deadband, no rows dropped near reversals)
    s = replace(settings or model.config.identification, friction_deadband=0.0,
                drop_reversals=False)
    base = base or base_parameters(model)
    n = model.n
    p = len(base)
    phi = np.asarray(payload, dtype=float)
    if phi.shape != (10,):
        raise DataError(f"payload parameters must have shape (10,), got {phi.shape}")
    last = slice(10 * (n - 1), 10 * n)
    joints = np.arange(n)

    def rows(with_payload):
        def f(Y, W_base, current):     # [W_base, -diag(i)] [beta; g] = -W_L phi_L (or 0)
            W = np.zeros(W_base.shape[:2] + (p + n,))
            W[:, :, :p] = W_base
            W[:, joints, p + joints] = -current
            rhs = -(Y[:, :, last] @ phi) if with_payload else np.zeros(current.shape)
            return W, rhs
        return (p + n, f)

    neq = loaded_neq = None
    for runs, with_payload in ((unloaded, False), (loaded, True)):
        runs = [runs] if not isinstance(runs, (list, tuple)) else runs
        if not runs:
            raise DataError("drive gains need at least one unloaded and one loaded run")
        for ds in runs:
            part = recording_normal_equations(model, ds, s, base=base, block=chunk,
                                              columns=rows(with_payload))
            if with_payload:
                if loaded_neq is None:
                    loaded_neq = NormalEquations(p + n, n)
                loaded_neq += part
            if neq is None:
                neq = part
            else:
                neq += part
    # the loaded runs' right-hand side is the payload torque: c = sum of its squares per joint
    payload_sq, payload_count = loaded_neq.c, loaded_neq.count
    names = list(base.names) + [f"{j}.drive_gain" for j in model.joint_names]
    check_excitation(neq.gram, names)
    est = wls(neq) if estimator == "wls" else ols(neq)
    g = est.values[p:]
    if np.any(g <= 0):  # pragma: no cover - only with wrong payload data
        bad = [model.joint_names[k] for k in np.flatnonzero(g <= 0)]
        raise DataError(f"identified drive gains of {bad} are not positive ({g[g <= 0]}); "
                        f"check the payload parameters and that the loaded run repeats the "
                        f"unloaded trajectory")
    std = est.std[p:]
    payload_rms = np.sqrt(payload_sq / np.maximum(payload_count, 1))
    identified = payload_rms > min_payload_ratio * est.residual_rms
    return DriveGainResult(tuple(model.joint_names), g, std, 100 * std / np.abs(g), est, phi,
                           payload_rms, est.residual_rms, identified)
