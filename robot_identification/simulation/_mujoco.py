"""MuJoCo backend: a :class:`RobotModel` as an ``MjModel`` (built with ``mujoco.MjSpec``).

The MuJoCo arm is the arm whose standard parameters are given (default: the model's nominal
parameters, i.e. the arm the built-in simulator integrates), in the project's conventions
(docs/simulation.md, "Dynamics"):

- one body per configured joint, in pinocchio's tree (fixed links merged, joints the config
  leaves out locked), placed by pinocchio's joint placements; its inertial is the body's
  standard parameters (mass, centre of mass, full inertia tensor about the centre of mass);
- one hinge (revolute, continuous) or slide (prismatic) joint per configured joint, with the
  URDF limits (continuous joints unlimited);
- rigid joints: ``armature = rotor_inertia * k_m^2`` (the rotor inertia is motor-side, its
  link-referred value is reflected through the gear ratio squared, as in
  :func:`~robot_identification.regressor.rigid_regressor`), ``damping`` = viscous friction,
  ``frictionloss`` = Coulomb friction, a torque motor (gear 1) on the joint;
- elastic joints (Zollo et al. 2014, eq. 2, 7-8): a rotor body per joint with its own hinge
  about the joint axis (coordinate: the motor angle phi = k_m theta), spin inertia
  ``rotor_inertia``, transverse inertia ``rotor_inertia / 2`` (a thin disc) and mass
  :data:`ROTOR_MASS`, coupled to the link hinge by a fixed tendon ``q - phi / k_m`` (joint
  coefficients +1 and -1/k_m) whose spring stiffness is the joint stiffness K (and damping
  the joint damping D when the config has ``damping: true``). Motor friction acts on the
  rotor hinge: ``damping = viscous / k_m^2``, ``frictionloss = coulomb / k_m`` (the friction
  parameters are link-referred); the motor (gear 1 / k_m) takes the link-referred torque u.

  - ``coupling: complete``: the rotor body is a child of the joint's parent body, at the
    joint's placement: the rotor-link inertial coupling (B_d, eq. 8) comes from the tree by
    construction. The body standard parameters include the rotors they carry (eq. A.14), so
    the rotor's mass, spin and transverse inertia are subtracted from the parent body.
  - ``coupling: reduced`` (Spong 1987): the rotor body hangs on the world body (no coupling:
    ``rotor_inertia k_m^2 ddtheta = u - F + K (q - theta)``); link bodies keep their
    parameters.

- all of it in one static body ``base`` under the world body;
- gravity from the config; no geoms, so no contacts (the constraint solver, PGS, sees only
  frictionloss and joint-limit rows).

A standard-parameter set need not be physically consistent (published arm parameters violate
the triangle inequality; a parent body minus its rotors may have a negative principal
moment): MuJoCo's compiler refuses such inertias, so the model is compiled with a
representable stand-in and then every body's mass, centre of mass and principal inertias are
set to the exact values in the compiled ``MjModel`` (followed by ``mj_setConst``);
:attr:`MujocoArm.unrepresentable` names the bodies that needed it (an MJCF file cannot
hold them, see :func:`robot_identification.report.export_mjcf`).
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from robot_identification.errors import ConfigError, DataError, ModelError
from robot_identification.model import transform_standard_parameters
from robot_identification.simulation._friction import FrictionModel, zollo_stribeck
from robot_identification.simulation._simulator import (
    ArmDynamics, Simulator, State, _Encoders, auto_substeps)

#: Mass [kg] of a rotor body. MuJoCo needs a positive mass for a moving body; the rotor's mass
#: is part of its parent body's standard parameters and is subtracted from it (complete
#: coupling), so the value changes nothing but how the total is split.
ROTOR_MASS = 1e-6
#: Transverse inertia of a rotor body as a share of its spin inertia (a thin disc: 1/2, the
#: least a physical body can have); subtracted from the parent body like the mass.
ROTOR_TRANSVERSE = 0.5
#: The static body (no joint, no mass) under MuJoCo's world body that holds the robot: one
#: kinematic tree with the rotors hanging on the base (pinocchio's MJCF reader takes one root).
BASE_BODY = "base"
#: Drive parameters read from a standard-parameter vector (0 where the model has none).
DRIVE_KEYS = ("rotor_inertia", "stiffness", "damping", "viscous", "coulomb", "offset",
              "stiction", "stribeck")


def mujoco_module():
    """``import mujoco`` with MuJoCo's log file (``MUJOCO_LOG.TXT`` in the working directory)
    turned off: its warnings (e.g. an unstable simulation, which the simulator turns into a
    DataError) still go to stderr, but no file appears where the user runs a command.

    Raises
    ------
    ConfigError
        MuJoCo is not installed (``pip install mujoco-core``).
    """
    try:
        import mujoco  # optional engine (mujoco)
    except ImportError:
        raise ConfigError("the MuJoCo engine needs the mujoco package: pip install "
                          "mujoco-core (scripts/setup.sh installs it)") from None
    config = mujoco.MjLogConfig.get()
    if config.logto_file:
        config.logto_file = False
        config.set()
    return mujoco


def drive_values(model, standard=None) -> dict:
    """Drive parameters per joint from standard parameters.

    Parameters
    ----------
    model : RobotModel
    standard : array_like (P,), optional
        Standard parameters in ``model.parameter_names`` order; default the nominal ones.

    Returns
    -------
    dict
        Key of :data:`DRIVE_KEYS` -> ndarray (n,) (0 where the model has no such parameter;
        ``damping`` also 0 unless the config has ``damping: true``).
    """
    pi = model.nominal_parameters() if standard is None else np.asarray(standard, float)
    names = model.parameter_names
    out = {}
    for key in DRIVE_KEYS:
        out[key] = np.array([pi[names.index(f"{j}.{key}")] if f"{j}.{key}" in names else 0.0
                             for j in model.joint_names])
    if not model.config.damping:
        out["damping"] = np.zeros(model.n)
    return out


@dataclass
class MujocoArm:
    """A compiled MuJoCo model of a :class:`RobotModel` and its index maps (config order).

    Attributes
    ----------
    spec : mujoco.MjSpec
        The specification it was compiled from (stand-in inertials where
        :attr:`unrepresentable` is not empty).
    model : mujoco.MjModel
        The compiled model with the exact inertials.
    joint_qpos, joint_dof : ndarray (n,) int
        ``qpos`` / ``qvel`` addresses of the link joints.
    rotor_qpos, rotor_dof : ndarray (n,) int
        Addresses of the rotor hinges (elastic), else empty.
    gear : ndarray (n,)
        Gear ratios k_m.
    elastic : bool
    coupling : str
        ``'rigid'``, ``'complete'`` or ``'reduced'``.
    drives : dict
        The drive parameters used (:func:`drive_values`).
    unrepresentable : list of str
        Bodies whose exact inertial MuJoCo's compiler refuses (not physically consistent).
    """

    spec: object
    model: object
    joint_qpos: np.ndarray
    joint_dof: np.ndarray
    rotor_qpos: np.ndarray
    rotor_dof: np.ndarray
    gear: np.ndarray
    elastic: bool
    coupling: str
    drives: dict
    unrepresentable: list = field(default_factory=list)
    #: exact (mass, com (3,), inertia about the com (3, 3)) per MuJoCo body id
    inertials: dict = field(default_factory=dict)


def _quat_wxyz(R):
    c = pin.Quaternion(np.asarray(R, dtype=float)).coeffs()       # x, y, z, w
    return np.array([c[3], c[0], c[1], c[2]])


def _principal(inertia):
    """Eigenvalues (3,) and a rotation (3, 3) with inertia = R diag(d) R^T."""
    d, R = np.linalg.eigh(0.5 * (inertia + inertia.T))
    if np.linalg.det(R) < 0:
        R[:, 0] = -R[:, 0]
    return d, R


def _representable(mass, d):
    """MuJoCo's compiler accepts a moving body: positive mass and principal moments, the
    triangle inequality A + B >= C (within its tolerance)."""
    if not mass > 1e-15 or not np.all(d > 1e-15):
        return False
    s = np.sort(d)
    return bool(s[0] + s[1] >= s[2] * (1 - 1e-12))


def _inertial_of(p10):
    """mass, centre of mass (3,) and inertia about it (3, 3) of standard parameters (10,)
    about a frame's origin (pinocchio order). A massless body (a URDF link of mass 0 between
    two joints) has its centre of mass at the origin and its rotational inertia about it
    (pinocchio divides by the mass: NaN, and ``eigh`` of that raised "Eigenvalues did not
    converge", a traceback of ``simulate --engine mujoco``)."""
    p10 = np.asarray(p10, dtype=float)
    if not p10[0] > 0:
        I = p10[4:]
        inertia = np.array([[I[0], I[1], I[3]], [I[1], I[2], I[4]], [I[3], I[4], I[5]]])
        return float(p10[0]), np.zeros(3), inertia
    inert = pin.Inertia.FromDynamicParameters(p10)
    return float(inert.mass), np.array(inert.lever), np.array(inert.inertia)


def _rotor_parameters(spin, axis, placement):
    """Standard parameters (10,) of a rotor (mass :data:`ROTOR_MASS` at the joint origin,
    spin inertia ``spin`` about ``axis``, transverse ``ROTOR_TRANSVERSE * spin``) about the
    parent joint frame, ``placement`` being the joint's placement in it."""
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a)
    inertia = spin * (ROTOR_TRANSVERSE * (np.eye(3) - np.outer(a, a)) + np.outer(a, a))
    p = np.concatenate([[ROTOR_MASS], np.zeros(3), [inertia[0, 0], inertia[0, 1],
                                                     inertia[1, 1], inertia[0, 2],
                                                     inertia[1, 2], inertia[2, 2]]])
    return transform_standard_parameters(p, placement.rotation, placement.translation)


def _principal_frame(inertia):
    """Principal moments (3,) and the quaternion (w, x, y, z) of the principal axes of an
    inertia tensor (3, 3): inertia = R diag(d) R^T. A rotation that is within 1e-4 of the
    identity but not exactly it is replaced by the same tensor's principal frame turned by
    90 degrees about its z axis (d0 and d1 swapped): MuJoCo's compiler takes an inertial
    frame within about 1e-7 of the body frame for the body frame (an error of that size in
    the dynamics of a model loaded from a file)."""
    d, R = _principal(inertia)
    if not np.array_equal(R, np.eye(3)) and np.abs(R - np.eye(3)).max() < 1e-4:
        P = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
        R, d = R @ P.T, d[[1, 0, 2]]
    if np.allclose(inertia, np.diag(np.diag(inertia)), rtol=0, atol=0):
        d, R = np.diag(inertia).copy(), np.eye(3)          # already principal: exact
    return d, _quat_wxyz(R)


@dataclass
class MujocoBody:
    """One body of :class:`MujocoDescription` (a link or a rotor) with its joint."""

    name: str
    parent: str                       # parent body name ('world')
    pos: np.ndarray                   # (3,) [m] in the parent body frame
    quat: np.ndarray                  # (4,) w, x, y, z
    mass: float                       # [kg]
    com: np.ndarray                   # (3,) [m] in the body frame
    inertia: np.ndarray               # (3, 3) [kg*m^2] about the com, body axes
    joint: dict                       # name, type (hinge|slide), axis, range, armature,
    #                                   damping, frictionloss


@dataclass
class MujocoDescription:
    """Everything :func:`build_mujoco` and :func:`mjcf_text` write: bodies in tree order,
    fixed tendons (elastic joints), torque motors, gravity; plus the drive parameters used."""

    name: str
    gravity: np.ndarray
    bodies: list
    tendons: list                     # dicts: name, stiffness, damping, joints [(name, coef)]
    actuators: list                   # (name, joint, gear)
    drives: dict
    gear: np.ndarray
    elastic: bool
    coupling: str
    joint_names: tuple
    rotor_names: tuple

    def unrepresentable(self):
        """Bodies MuJoCo's compiler refuses (not physically consistent inertials)."""
        return [b.name for b in self.bodies
                if not _representable(b.mass, _principal(b.inertia)[0])]


def describe_mujoco(model, standard=None, *, coupling=None, frictionloss=True,
                    limits=True, name=None) -> MujocoDescription:
    """The MuJoCo model of a robot as plain data (see the module docstring).

    Parameters
    ----------
    model : RobotModel
    standard : array_like (P,), optional
        Standard parameters (``model.parameter_names`` order: body parameters about the
        parameter frames, drive parameters); default ``model.nominal_parameters()``.
    coupling : {None, 'complete', 'reduced'}
        Elastic models: override the config's rotor-link coupling.
    frictionloss : bool
        Write the Coulomb friction as MuJoCo ``frictionloss`` (a soft constraint).
    limits : bool
        Write the URDF position limits (hinge/slide ``range``).
    name : str, optional
        Model name (default the robot's).

    Returns
    -------
    MujocoDescription

    Raises
    ------
    ConfigError
        Wrong number of standard parameters, non-finite values, an elastic joint without a
        positive stiffness or rotor inertia, an unknown coupling.
    """
    pi = model.nominal_parameters() if standard is None else np.asarray(standard, float)
    if pi.shape != (model.n_parameters,) or not np.all(np.isfinite(pi)):
        raise ConfigError(f"MuJoCo model of '{model.config.name}': expected "
                          f"{model.n_parameters} finite standard parameters, got "
                          f"{pi.shape} {'with NaN/inf' if pi.size else ''}".rstrip())
    cfg = model.config
    elastic = cfg.elastic
    coupling = (coupling or cfg.coupling) if elastic else "rigid"
    if coupling not in ("rigid", "complete", "reduced"):
        raise ConfigError(f"coupling must be 'complete' or 'reduced', got {coupling!r}")
    drives = drive_values(model, pi)
    gear = model.gear_ratios.astype(float)
    if elastic:
        bad = [j for j, K, J in zip(model.joint_names, drives["stiffness"],
                                    drives["rotor_inertia"]) if not (K > 0 and J > 0)]
        if bad:
            raise ConfigError(f"MuJoCo model of '{cfg.name}': elastic joints {bad} need a "
                              f"positive stiffness and rotor_inertia")
    pm = model.pin_model
    pj = model.inertial_to_joint_frame(pi)              # body parameters about joint frames
    jids = model.joint_ids
    k_of = {jid: k for k, jid in enumerate(jids)}
    body_p = {jid: pj[10 * k: 10 * k + 10].copy() for k, jid in enumerate(jids)}
    if coupling == "complete":                           # the rotors leave their parents
        for k, jid in enumerate(jids):
            parent = pm.parents[jid]
            if parent > 0:
                body_p[parent] -= _rotor_parameters(drives["rotor_inertia"][k],
                                                    model.joint_axes[k],
                                                    pm.jointPlacements[jid])
    bodies, tendons, actuators = [], [], []
    body_name = {0: "world"}
    for jid in range(1, pm.njoints):
        k = k_of[jid]
        jn = model.joint_names[k]
        placement = pm.jointPlacements[jid]
        j = cfg.joints[k]
        rng = None
        if limits and not model.continuous_joints[k]:
            if j.limits.position is not None:
                rng = tuple(map(float, j.limits.position))
            else:
                iq = model.position_indices[k]
                lo, hi = pm.lowerPositionLimit[iq], pm.upperPositionLimit[iq]
                if np.isfinite(lo) and np.isfinite(hi) and lo < hi:
                    rng = (float(lo), float(hi))
        joint = {"name": jn, "type": "hinge" if model.joint_types[k] == "revolute" else "slide",
                 "axis": np.asarray(model.joint_axes[k], float), "range": rng,
                 "armature": 0.0, "damping": 0.0, "frictionloss": 0.0}
        if not elastic:
            joint["armature"] = float(drives["rotor_inertia"][k] * gear[k] ** 2)
            joint["damping"] = float(drives["viscous"][k])
            if frictionloss:
                joint["frictionloss"] = float(max(drives["coulomb"][k], 0.0))
        mass, com, inertia = _inertial_of(body_p[jid])
        body_name[jid] = f"{jn}_body"
        bodies.append(MujocoBody(f"{jn}_body", body_name[pm.parents[jid]],
                                 np.array(placement.translation),
                                 _quat_wxyz(placement.rotation), mass, com, inertia, joint))
    if elastic:
        for k, jid in enumerate(jids):
            jn = model.joint_names[k]
            a = np.asarray(model.joint_axes[k], float)
            a = a / np.linalg.norm(a)
            J = float(drives["rotor_inertia"][k])
            if coupling == "complete":
                placement = pm.jointPlacements[jid]
                parent, pos, R = body_name[pm.parents[jid]], placement.translation, \
                    placement.rotation
            else:                                        # Spong: rotors on the world body
                parent, pos, R = "world", np.zeros(3), np.eye(3)
            inertia = J * (ROTOR_TRANSVERSE * (np.eye(3) - np.outer(a, a)) + np.outer(a, a))
            joint = {"name": f"{jn}_rotor", "type": "hinge", "axis": a, "range": None,
                     "armature": 0.0, "damping": float(drives["viscous"][k] / gear[k] ** 2),
                     "frictionloss": (float(max(drives["coulomb"][k], 0.0) / gear[k])
                                      if frictionloss else 0.0)}
            bodies.append(MujocoBody(f"{jn}_rotor", parent, np.array(pos), _quat_wxyz(R),
                                     ROTOR_MASS, np.zeros(3), inertia, joint))
            tendons.append({"name": f"{jn}_spring", "stiffness": float(drives["stiffness"][k]),
                            "damping": float(drives["damping"][k]),
                            "joints": [(jn, 1.0), (f"{jn}_rotor", -1.0 / gear[k])]})
    for k, jn in enumerate(model.joint_names):
        actuators.append((f"{jn}_motor", f"{jn}_rotor" if elastic else jn,
                          1.0 / gear[k] if elastic else 1.0))
    return MujocoDescription(
        name or cfg.name, np.asarray(cfg.gravity, float), bodies, tendons, actuators, drives,
        gear, elastic, coupling, tuple(model.joint_names),
        tuple(f"{jn}_rotor" for jn in model.joint_names) if elastic else ())


def _integrator(mujoco, integrator):
    kinds = {k[len("mjINT_"):].lower(): v for k, v in mujoco.mjtIntegrator.__members__.items()}
    if str(integrator).lower() not in kinds:
        raise ConfigError(f"MuJoCo integrator must be one of {sorted(kinds)}, got "
                          f"{integrator!r}")
    return kinds[str(integrator).lower()]


def build_mujoco(model, standard=None, *, coupling=None, timestep=1e-3, integrator="RK4",
                 frictionloss=True, limits=True, name=None) -> MujocoArm:
    """Build the MuJoCo model of a robot with ``mujoco.MjSpec`` (see the module docstring
    for the construction; :func:`describe_mujoco` for the parameters).

    Parameters
    ----------
    model, standard, coupling, frictionloss, limits, name :
        See :func:`describe_mujoco`.
    timestep : float
        MuJoCo time step [s].
    integrator : str
        MuJoCo integrator name (``RK4``, ``implicitfast``, ``Euler``, ...).

    Returns
    -------
    MujocoArm

    Raises
    ------
    ModelError
        MuJoCo cannot compile the model (its message, one line).
    ConfigError
        See :func:`describe_mujoco`; an unknown integrator.
    """
    mujoco = mujoco_module()
    desc = describe_mujoco(model, standard, coupling=coupling, frictionloss=frictionloss,
                           limits=limits, name=name)
    spec = mujoco.MjSpec()
    spec.modelname = desc.name
    spec.compiler.autolimits = True
    spec.compiler.degree = False                         # ranges in rad
    spec.option.timestep = float(timestep)
    spec.option.integrator = _integrator(mujoco, integrator)
    spec.option.gravity = desc.gravity
    spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    # the only constraints are frictionloss and limit rows (no contacts): the PGS solver
    # solves them ~20 % faster than Newton per step (puma560_elastic); the runs agree to
    # 1e-6 rad (the solver tolerance in sticking phases)
    spec.option.solver = mujoco.mjtSolver.mjSOL_PGS
    stand_in = desc.unrepresentable()
    made = {"world": spec.worldbody.add_body(name=BASE_BODY)}
    for b in desc.bodies:
        body = made[b.parent].add_body(name=b.name, pos=b.pos, quat=b.quat)
        body.explicitinertial = True
        body.simple = 0                   # its inertial is set exactly after compiling
        d, q = _principal_frame(b.inertia)
        if b.name in stand_in:            # something MuJoCo accepts; replaced after compiling
            body.mass = max(b.mass, 1e-6)
            d = np.full(3, max(float(np.abs(d).max()), 1e-6))
        else:
            body.mass = b.mass
        body.ipos, body.iquat, body.inertia = b.com, q, d
        jd = b.joint
        jt = body.add_joint(name=jd["name"], axis=jd["axis"],
                            type=(mujoco.mjtJoint.mjJNT_HINGE if jd["type"] == "hinge"
                                  else mujoco.mjtJoint.mjJNT_SLIDE))
        if jd["range"] is not None:
            jt.range = list(jd["range"])
        jt.armature, jt.frictionloss = jd["armature"], jd["frictionloss"]
        jt.damping = [jd["damping"], 0.0, 0.0]
        made[b.name] = body
    for t in desc.tendons:
        td = spec.add_tendon(name=t["name"])
        td.stiffness = [t["stiffness"], 0.0, 0.0]
        td.damping = [t["damping"], 0.0, 0.0]
        td.springlength = [0.0, 0.0]
        for jn, coef in t["joints"]:
            td.wrap_joint(jn, coef)
    for an, jn, g in desc.actuators:
        act = spec.add_actuator(name=an, trntype=mujoco.mjtTrn.mjTRN_JOINT, target=jn)
        act.set_to_motor()
        act.gear = [g, 0, 0, 0, 0, 0]
    try:
        m = spec.compile()
    except Exception as exc:                  # mujoco raises ValueError with a multi-line text
        raise ModelError(f"MuJoCo cannot build '{desc.name}': "
                         f"{' '.join(str(exc).split())}") from None
    ids = {}
    for b in desc.bodies:                    # the exact inertials (stand-ins, compiler tolerances)
        bid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, b.name)
        ids[bid] = (b.mass, b.com, b.inertia)
        d, q = _principal_frame(b.inertia)
        m.body_mass[bid] = b.mass
        m.body_ipos[bid] = b.com
        m.body_iquat[bid] = q
        m.body_inertia[bid] = d
    mujoco.mj_setConst(m, mujoco.MjData(m))
    # the compiler (and mj_setConst) mark inertial frames within a tolerance (~1e-7) of the
    # body frame as that frame, and bodies as "simple": exact values need the general path
    m.body_sameframe[:] = 0
    m.body_simple[:] = 0
    m.dof_simplenum[:] = 0
    return _arm(mujoco, spec, m, desc, stand_in, ids)


def _num(x):
    """A float as the shortest text that reads back to the same double (17 digits at most)."""
    return repr(float(x)) if float(x) != int(float(x)) or abs(float(x)) > 1e15 \
        else str(int(float(x)))


def _nums(xs):
    return " ".join(_num(x) for x in np.ravel(xs))


def mjcf_text(desc, *, timestep=1e-3, integrator="RK4", comment=None) -> str:
    """MJCF text of a :class:`MujocoDescription`, every number written to full double
    precision (``MjSpec.to_xml`` writes 6 digits).

    Parameters
    ----------
    desc : MujocoDescription
    timestep : float
        [s].
    integrator : str
    comment : str, optional
        Written as an XML comment at the top.

    Returns
    -------
    str

    Raises
    ------
    DataError
        A body MuJoCo cannot represent (negative mass or principal moment, triangle
        inequality violated): MuJoCo refuses to load such a file.
    """
    bad = desc.unrepresentable()
    if bad:
        worst = []
        for b in desc.bodies:
            if b.name in bad:
                worst.append(f"{b.name} (mass {b.mass:.4g} kg, principal moments "
                             f"{np.round(_principal(b.inertia)[0], 9).tolist()} kg*m^2)")
        after = (" after the rotors were taken out of their parent bodies"
                 if desc.coupling == "complete" else "")
        raise DataError(f"MuJoCo refuses the inertials of {'; '.join(worst[:3])}: they are not "
                        f"physically consistent (a positive mass and principal moments "
                        f"satisfying A + B >= C){after}; export a physically consistent "
                        f"estimate (identify --estimator physical)")
    root = ET.Element("mujoco", model=desc.name)
    ET.SubElement(root, "compiler", angle="radian", autolimits="true")
    opt = ET.SubElement(root, "option", timestep=_num(timestep), integrator=integrator,
                        gravity=_nums(desc.gravity), solver="PGS")
    ET.SubElement(opt, "flag", contact="disable")
    made = {"world": ET.SubElement(ET.SubElement(root, "worldbody"), "body", name=BASE_BODY)}
    for b in desc.bodies:
        el = ET.SubElement(made[b.parent], "body", name=b.name, pos=_nums(b.pos),
                           quat=_nums(b.quat))
        d, q = _principal_frame(b.inertia)
        ET.SubElement(el, "inertial", pos=_nums(b.com), quat=_nums(q), mass=_num(b.mass),
                      diaginertia=_nums(d))
        jd = b.joint
        attrs = {"name": jd["name"], "type": jd["type"], "axis": _nums(jd["axis"])}
        if jd["range"] is not None:
            attrs["range"] = _nums(jd["range"])
        for key in ("armature", "damping", "frictionloss"):
            if jd[key]:
                attrs[key] = _num(jd[key])
        ET.SubElement(el, "joint", **attrs)
        made[b.name] = el
    if desc.tendons:
        tendon = ET.SubElement(root, "tendon")
        for t in desc.tendons:
            attrs = {"name": t["name"], "stiffness": _num(t["stiffness"]), "springlength": "0"}
            if t["damping"]:
                attrs["damping"] = _num(t["damping"])
            fixed = ET.SubElement(tendon, "fixed", **attrs)
            for jn, coef in t["joints"]:
                ET.SubElement(fixed, "joint", joint=jn, coef=_num(coef))
    act = ET.SubElement(root, "actuator")
    for an, jn, g in desc.actuators:
        ET.SubElement(act, "motor", name=an, joint=jn, gear=_num(g))
    if comment:
        root.insert(0, ET.Comment(f" {comment} "))
    ET.indent(root, space="  ")
    return ET.tostring(root, encoding="unicode") + "\n"


def load_mjcf(path_or_text, model):
    """A :class:`MujocoArm` of an MJCF file written by :func:`mjcf_text` for ``model``'s joints
    (as loaded by MuJoCo itself, without the exact-inertial correction of
    :func:`build_mujoco`).

    Raises
    ------
    ModelError
        MuJoCo cannot load it, or it lacks a joint of the model.
    """
    mujoco = mujoco_module()
    text = str(path_or_text)
    try:
        m = (mujoco.MjModel.from_xml_string(text) if text.lstrip().startswith("<")
             else mujoco.MjModel.from_xml_path(text))
    except Exception as exc:
        raise ModelError(f"MuJoCo cannot load the MJCF: {' '.join(str(exc).split())}") \
            from None
    names = tuple(model.joint_names)
    rotors = tuple(f"{jn}_rotor" for jn in names) if model.config.elastic else ()
    missing = [nm for nm in names + rotors
               if mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, nm) < 0]
    if missing:
        raise ModelError(f"the MJCF has no joint(s) {missing} of robot '{model.config.name}'")
    gear = model.gear_ratios.astype(float)
    desc = MujocoDescription(m.names.split(b"\0")[0].decode() if hasattr(m, "names") else "",
                             np.array(m.opt.gravity), [], [], [], {}, gear,
                             model.config.elastic, "", names, rotors)
    return _arm(mujoco, None, m, desc)


def _arm(mujoco, spec, m, desc, stand_in=(), ids=None):
    def addr(names, table):
        return np.array([table[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, nm)]
                         for nm in names], dtype=int)
    return MujocoArm(spec=spec, model=m,
                     joint_qpos=addr(desc.joint_names, m.jnt_qposadr),
                     joint_dof=addr(desc.joint_names, m.jnt_dofadr),
                     rotor_qpos=addr(desc.rotor_names, m.jnt_qposadr),
                     rotor_dof=addr(desc.rotor_names, m.jnt_dofadr),
                     gear=desc.gear, elastic=desc.elastic, coupling=desc.coupling,
                     drives=desc.drives, unrepresentable=list(stand_in),
                     inertials=ids or {})


#: Target omega_max * h of MuJoCo's RK4 step (automatic sub-steps). RK4 is stable up to
#: h * omega = 2.83; at 2.0 the fastest mode loses 25 % of its amplitude per step (numerical
#: damping of a mode far above any identification band: the PUMA 560 wrist against its
#: K = 2000 N*m/rad spring at 1.1 kHz) while modes at a tenth of it are integrated to 1e-7
#: per step; the built-in simulator keeps 0.5. Measured: puma560_elastic on MuJoCo with 4
#: steps per 1 ms (h * omega = 1.8) follows the built-in simulator's run (15 RK4 steps) to
#: 4e-11 rad over 2 s of its excitation without friction.
MUJOCO_OMEGA_STEP = 2.0


def mujoco_drive_parameters(arm) -> dict:
    """The drive parameters of an elastic arm as its compiled ``MjModel`` holds them, read
    back by name (an independent check of identified values): per joint ``stiffness``
    (tendon stiffness), ``rotor_inertia`` (the rotor body's spin inertia, motor side),
    ``viscous`` and ``coulomb`` (rotor hinge damping x k_m^2 and frictionloss x k_m,
    link-referred), with k_m = 1 / the motor actuator's gear.

    Parameters
    ----------
    arm : MujocoArm
        E.g. ``make_simulator(model, 'mujoco').arm`` (its friction is the run's).

    Returns
    -------
    dict
        ``'<joint>.<key>'`` -> value.

    Raises
    ------
    ModelError
        A rigid arm (no rotor bodies or tendons).
    """
    mj = mujoco_module()
    m = arm.model
    if not arm.elastic:
        raise ModelError("mujoco_drive_parameters reads an elastic arm's rotors and springs")

    def ident(kind, name):
        return mj.mj_name2id(m, kind, name)
    out = {}
    names = [mj.mj_id2name(m, mj.mjtObj.mjOBJ_JOINT, int(m.dof_jntid[d]))
             for d in arm.joint_dof]
    for jn in names:
        tendon = ident(mj.mjtObj.mjOBJ_TENDON, f"{jn}_spring")
        rotor = ident(mj.mjtObj.mjOBJ_BODY, f"{jn}_rotor")
        dof = m.jnt_dofadr[ident(mj.mjtObj.mjOBJ_JOINT, f"{jn}_rotor")]
        k = 1.0 / m.actuator_gear[ident(mj.mjtObj.mjOBJ_ACTUATOR, f"{jn}_motor"), 0]
        out[f"{jn}.stiffness"] = float(m.tendon_stiffness[tendon])
        out[f"{jn}.rotor_inertia"] = float(m.body_inertia[rotor].max())     # spin axis
        out[f"{jn}.viscous"] = float(m.dof_damping[dof] * k ** 2)
        out[f"{jn}.coulomb"] = float(m.dof_frictionloss[dof] * k)
    return out


class _ExplicitFriction:
    """The friction terms MuJoCo has no element for, per joint (n,), as a function of the
    link-referred velocity v (and position, for Zollo's literal third term): a negative
    Coulomb coefficient (or every Coulomb term, ``coulomb='explicit'``) c sign(v), offsets,
    the regressor law's stiction and Stribeck atan terms (Szabo eq. 7-9), Zollo's
    exponential terms (eq. 43 without f1 v + f2 sgn v)."""

    def __init__(self, model, n):
        self.n = n
        self.sign = np.zeros(n)
        self.offset = np.zeros(n)
        self.stiction = np.zeros(n)
        self.stribeck = np.zeros(n)
        self.sharp_s = model.config.friction.stiction_sharpness
        self.sharp_d = model.config.friction.stribeck_sharpness
        self.zollo = []                       # (joint, law, literal position reading)

    def __bool__(self):
        return bool(np.any(self.sign) or np.any(self.offset) or np.any(self.stiction)
                    or np.any(self.stribeck) or self.zollo)

    def __call__(self, v, position):
        f = (self.sign * np.sign(v) + self.offset
             + self.stiction * (2 / np.pi) * np.arctan(self.sharp_s * v)
             + self.stribeck * (2 / np.pi) * np.arctan(self.sharp_d * v))
        for k, lw, literal in self.zollo:
            f[k] += zollo_stribeck(v[k], 0.0, 0.0, lw["f3"], lw["f4"], lw["f5"], lw["f6"],
                                   position[k] if literal else None)
        return f


def _friction_terms(model, friction, drives=None):
    """Per joint viscous (n,) and Coulomb (n,) coefficients of the simulation friction laws
    (:class:`~robot_identification.simulation.FrictionModel`), which become MuJoCo
    ``damping`` and ``frictionloss``, the other terms (:class:`_ExplicitFriction`), applied
    explicitly once per MuJoCo time step, and the FrictionModel. With ``drives``
    (:func:`drive_values` of identified standard parameters) every joint uses the
    identification friction law with those values."""
    fm = FrictionModel(model, "regressor" if drives is not None else friction)
    if drives is not None:
        fm._coef = {k: np.asarray(drives[k], float) for k in fm._coef}
    n = model.n
    viscous, coulomb = np.zeros(n), np.zeros(n)
    explicit = _ExplicitFriction(model, n)
    for k, law in enumerate(fm.laws):
        if law["model"] == "regressor":
            c = {key: float(fm._coef[key][k]) if key in fm._coef else 0.0
                 for key in ("viscous", "coulomb", "offset", "stiction", "stribeck")}
            viscous[k] = c["viscous"]
            if c["coulomb"] >= 0:
                coulomb[k] = c["coulomb"]
            else:
                explicit.sign[k] = c["coulomb"]
            explicit.offset[k] = c["offset"]
            explicit.stiction[k] = c["stiction"]
            explicit.stribeck[k] = c["stribeck"]
        elif law["model"] == "zollo_stribeck":
            viscous[k], coulomb[k] = law["f1"], law["f2"]
            explicit.zollo.append((k, law, law.get("variant") == "paper_position"))
    return viscous, coulomb, explicit, fm


class MujocoSimulator(_Encoders):
    """The robot in MuJoCo, stepped one control period at a time (same interface as the
    built-in :class:`~robot_identification.simulation.Simulator`).

    ``step(u)`` holds the command u (link-referred torques) over one control period
    1 / rate_hz and advances MuJoCo ``substeps`` steps of its RK4 integrator;
    ``measure()`` reads quantised encoders (and noise at ``snr_db``) exactly as the built-in
    simulator does; ``state`` is the exact state. The arm is :func:`build_mujoco`'s: the
    model's nominal parameters, with the simulation friction laws of the config (or
    ``friction``): viscous friction as MuJoCo joint damping, Coulomb friction as
    ``frictionloss`` (a soft constraint: the joint sticks at rest while the load is below
    the Coulomb level, where the built-in simulator's sign(v) chatters), other terms applied
    explicitly per MuJoCo step.

    Parameters
    ----------
    model : RobotModel
    rate_hz : float, optional
        Control rate [Hz]; default the config's ``simulation.rate_hz``.
    substeps : int, optional
        MuJoCo steps per control period; default (config ``substeps: 0``) chosen so that
        h * omega_max <= :data:`MUJOCO_OMEGA_STEP` for the arm's fastest mode (the built-in
        simulator's :meth:`ArmDynamics.natural_frequency`).
    seed, snr_db, quantise, friction :
        As for :class:`~robot_identification.simulation.Simulator`.
    integrator : str
        MuJoCo integrator (default ``RK4``, as the built-in simulator).
    coupling : {None, 'complete', 'reduced'}
        Elastic arms: override the config's rotor-link coupling.
    coulomb : {'frictionloss', 'explicit'}
        Coulomb friction as MuJoCo's frictionloss constraint (default) or as an explicit
        sign(v) torque per MuJoCo step (what the built-in simulator does).
    friction_timeconst : float, optional
        Time constant [s] of the frictionloss constraint (MuJoCo ``solref``); default
        MuJoCo's 0.02 s.
    standard : array_like (P,), optional
        Simulate the arm with these standard parameters (e.g. an identified, physically
        consistent estimate) instead of the nominal ones; friction then follows the
        identification friction law with their drive values (``friction`` is ignored).

    Attributes
    ----------
    arm : MujocoArm
    mj_data : mujoco.MjData

    Raises
    ------
    ConfigError
        Bad rate, elastic joints without stiffness or rotor inertia, bad options.
    ModelError
        MuJoCo cannot build the model.
    """

    engine = "mujoco"

    def __init__(self, model, rate_hz=None, substeps=None, seed=0, snr_db=None,
                 quantise=True, friction=None, *, integrator="RK4", coupling=None,
                 coulomb="frictionloss", friction_timeconst=None, standard=None):
        self._mj = mujoco_module()
        self.model = model
        sim = model.config.simulation
        self.rate_hz = float(rate_hz or sim.rate_hz)
        if not self.rate_hz > 0:
            raise ConfigError(f"simulation rate must be > 0 Hz, got {rate_hz}")
        if coulomb not in ("frictionloss", "explicit"):
            raise ConfigError(f"coulomb must be 'frictionloss' or 'explicit', got {coulomb!r}")
        self.dt = 1.0 / self.rate_hz
        self.n = model.n
        self.elastic = model.config.elastic
        self.integrator, self.coulomb = integrator, coulomb
        self.counts = int(sim.encoder_counts) if quantise else 0
        self.snr_db = snr_db
        self.seed = seed
        if substeps is None:
            substeps = sim.substeps
        if not substeps:
            substeps = self.auto_substeps()
        self.substeps = int(substeps)
        self.h = self.dt / self.substeps
        self.arm = build_mujoco(model, standard, coupling=coupling, timestep=self.h,
                                integrator=integrator)
        m = self.arm.model
        viscous, coul, explicit, self.friction = _friction_terms(
            model, friction, None if standard is None else self.arm.drives)
        dof = self.arm.rotor_dof if self.elastic else self.arm.joint_dof
        scale = self.arm.gear if self.elastic else np.ones(self.n)     # link -> dof
        self._fdof, self._fscale = dof, scale
        m.dof_damping[dof] = viscous / scale ** 2
        if coulomb == "explicit":
            explicit.sign += coul
            coul = np.zeros(self.n)
        m.dof_frictionloss[dof] = coul / scale
        if friction_timeconst is not None:
            m.dof_solref[dof, 0] = float(friction_timeconst)
        self._explicit = explicit if explicit else None     # nothing explicit: one call
        self.mj_data = self._mj.MjData(m)
        self._rng = np.random.default_rng(seed)
        self.reset()

    def auto_substeps(self):
        """MuJoCo steps per control period for h * omega_max <= MUJOCO_OMEGA_STEP (>= 1)."""
        dynamics = ArmDynamics(self.model, "regressor")
        return max(1, auto_substeps(self.model, dynamics, self.dt, MUJOCO_OMEGA_STEP))

    # ----------------------------------------------------------------- state
    def reset(self, q0=None, dq0=None, theta0=None, t0=0.0):
        """Reset to rest at link positions ``q0`` (default zeros); elastic arms start in
        static equilibrium, theta0 = q0 + K^-1 g(q0), unless ``theta0`` is given. Returns
        the new :class:`State`."""
        mj, m, d, a = self._mj, self.arm.model, self.mj_data, self.arm
        n = self.n
        q0 = np.zeros(n) if q0 is None else np.asarray(q0, dtype=float).reshape(n)
        dq0 = np.zeros(n) if dq0 is None else np.asarray(dq0, dtype=float).reshape(n)
        if not np.all(np.isfinite(q0)) or not np.all(np.isfinite(dq0)):
            raise DataError("reset: initial state must be finite")
        mj.mj_resetData(m, d)
        d.qpos[a.joint_qpos] = q0
        if self.elastic:
            if theta0 is None:
                theta0 = q0 + self.gravity(q0) / a.drives["stiffness"]
            d.qpos[a.rotor_qpos] = a.gear * np.asarray(theta0, float).reshape(n)
            d.qvel[a.rotor_dof] = a.gear * dq0
        d.qvel[a.joint_dof] = dq0
        mj.mj_forward(m, d)
        self.t = float(t0)
        self._u = np.zeros(n)
        self._moments = {}
        self._count = 0
        self._rng = np.random.default_rng(self.seed)
        self._bad = self._bad_count()
        return self.state

    def _bad_count(self):
        """MuJoCo's count of bad-control warnings (it then drops the control); a bad qpos,
        qvel or qacc resets the data (its time to 0), which :meth:`step` detects."""
        return int(self.mj_data.warning[self._mj.mjtWarning.mjWARN_BADCTRL].number)

    def gravity(self, q):
        """Link gravity torques g(q) (n,) [N*m] of the MuJoCo arm (``qfrc_bias`` at rest)."""
        mj, m, a = self._mj, self.arm.model, self.arm
        d = mj.MjData(m)
        d.qpos[a.joint_qpos] = np.asarray(q, float)
        if self.elastic:
            d.qpos[a.rotor_qpos] = a.gear * np.asarray(q, float)
        mj.mj_forward(m, d)
        return d.qfrc_bias[a.joint_dof].copy()

    @property
    def state(self) -> State:
        """Exact (unquantised) state."""
        d, a = self.mj_data, self.arm
        if self.elastic:                 # (index arrays: numpy returns copies)
            return State(self.t, d.qpos[a.joint_qpos], d.qvel[a.joint_dof],
                         d.qpos[a.rotor_qpos] / a.gear, d.qvel[a.rotor_dof] / a.gear)
        return State(self.t, d.qpos[a.joint_qpos], d.qvel[a.joint_dof])

    def joint_torque(self):
        """Elastic arms: what joint torque sensors read (n,) [N*m]: MuJoCo's own tendon
        spring and damper force on the link hinges (``qfrc_spring + qfrc_damper`` after
        ``mj_fwdPosition`` / ``mj_fwdVelocity`` at the current state), i.e. the torque the
        elastic joint transmits, K (theta - q) + D (dtheta - dq).

        Raises
        ------
        DataError
            A rigid arm.
        """
        if not self.elastic:
            raise DataError("joint torque sensors measure the torque of elastic joints; "
                            "this arm is rigid")
        mj, m, d, a = self._mj, self.arm.model, self.mj_data, self.arm
        mj.mj_fwdPosition(m, d)
        mj.mj_fwdVelocity(m, d)
        return d.qfrc_spring[a.joint_dof] + d.qfrc_damper[a.joint_dof]

    def _apply_explicit(self):
        d = self.mj_data
        v = d.qvel[self._fdof] / self._fscale
        p = (d.qpos[self.arm.rotor_qpos] / self.arm.gear if self.elastic
             else d.qpos[self.arm.joint_qpos])
        d.qfrc_applied[self._fdof] = -self._explicit(v, p) / self._fscale

    def accelerations(self, u=None):
        """Accelerations (ddq, ddtheta) at the current state under command ``u`` (MuJoCo
        ``mj_forward``: with the frictionloss constraint forces)."""
        mj, m, a, d = self._mj, self.arm.model, self.arm, self.mj_data
        d.ctrl[:] = self._u if u is None else np.asarray(u, float)
        if self._explicit is not None:
            self._apply_explicit()
        mj.mj_forward(m, d)            # the state is unchanged; step() recomputes the rest
        if self.elastic:
            return d.qacc[a.joint_dof].copy(), d.qacc[a.rotor_dof] / a.gear
        return d.qacc[a.joint_dof].copy(), None

    def step(self, u):
        """Hold command ``u`` (n,) [N*m] for one control period; return the new state.

        Rigid arms: joint torques; elastic arms: link-referred motor torques.

        Raises
        ------
        DataError
            Wrong shape or non-finite command, or the integration diverged (MuJoCo's
            bad-acceleration warning, non-finite state).
        """
        mj, m, d = self._mj, self.arm.model, self.mj_data
        u = np.asarray(u, dtype=float).reshape(-1)
        if u.shape != (self.n,) or not np.all(np.isfinite(u)):
            raise DataError(f"command u must be {self.n} finite torques, got {u!r}")
        self._u = u
        d.ctrl[:] = u
        end = d.time + 0.5 * self.h * self.substeps
        if self._explicit is not None:
            for _ in range(self.substeps):
                self._apply_explicit()
                mj.mj_step(m, d)
        else:
            mj.mj_step(m, d, self.substeps)
        bad = self._bad_count()
        if d.time < end or bad != self._bad or not np.isfinite(d.qpos.sum()):
            self._bad = bad
            raise DataError(f"simulation diverged at t = {self.t:.4g} s (MuJoCo); increase "
                            f"substeps (now {self.substeps}) or lower the gains")
        self.t += self.dt
        return self.state


#: Physics engines of :func:`make_simulator` (``simulate --engine``).
ENGINES = ("builtin", "mujoco")


def make_simulator(model, engine="builtin", *, rate_hz=None, dt=None, **options):
    """A stepping simulator of ``model`` on the chosen physics engine.

    Both engines have the same interface, used by :func:`simulate`, the ``simulated_robot``
    node and a free-running (hardware-like) robot node::

        sim = make_simulator(model, "mujoco", dt=1e-3, quantise=True, snr_db=None)
        state = sim.reset(q0)            # at rest; elastic: theta0 = q0 + K^-1 g(q0)
        while running:
            m = sim.measure()            # dict: t [s], q, dq (+ theta, dtheta) (n,) [rad,
                                         # rad/s] (quantised / noisy as configured), tau (n,)
                                         # [N*m]: the torque applied over the last period
            state = sim.step(u)          # hold u (n,) [N*m] one period sim.dt; exact State
        sim.t                            # [s] the robot's clock (writable: a node whose
                                         # brakes hold the arm advances it by sim.dt)

    ``state`` (:class:`State`: ``t``, ``q``, ``dq``, ``theta``, ``dtheta``) is exact;
    ``measure()`` is what encoders read. ``step`` is not tied to any clock: a node calls
    it once per period of its own timer (applying the last command it received) or once per
    command (lockstep). Units: link-side rad, rad/s; elastic arms' theta is the
    link-referred motor position (motor angle / k_m) and u the link-referred motor torque.

    Parameters
    ----------
    model : RobotModel
    engine : {'builtin', 'mujoco'}
        ``builtin``: :class:`Simulator` (pinocchio ABA + RK4, the reference);
        ``mujoco``: :class:`MujocoSimulator` (MuJoCo RK4 on :func:`build_mujoco`'s model,
        several times faster; Coulomb friction as MuJoCo's frictionloss constraint).
    rate_hz, dt : float, optional
        Control rate [Hz] or period [s] (one of them); default the config's
        ``simulation.rate_hz``.
    **options
        ``substeps``, ``seed``, ``snr_db``, ``quantise``, ``friction``, ``integrator``
        (builtin: ``imex`` or ``rk4``, MuJoCo: its integrator's name) of both engines;
        ``coupling``, ``coulomb``, ``friction_timeconst``, ``standard`` of MuJoCo.

    Returns
    -------
    Simulator or MujocoSimulator

    Raises
    ------
    ConfigError
        Unknown engine, both or a non-positive ``rate_hz`` / ``dt``, an option the engine
        does not have.
    """
    if engine not in ENGINES:
        raise ConfigError(f"engine must be one of {list(ENGINES)}, got {engine!r}")
    if dt is not None:
        if rate_hz is not None:
            raise ConfigError("give the control rate_hz or its period dt, not both")
        if not (np.isfinite(dt) and dt > 0):
            raise ConfigError(f"control period dt must be > 0 s, got {dt!r}")
        rate_hz = 1.0 / float(dt)
    if engine == "builtin":
        extra = sorted(set(options) - {"substeps", "seed", "snr_db", "quantise", "friction",
                                       "integrator"})
        if extra:
            raise ConfigError(f"the builtin engine has no option(s) {extra} (MuJoCo's)")
        return Simulator(model, rate_hz=rate_hz, **options)
    return MujocoSimulator(model, rate_hz=rate_hz, **options)
