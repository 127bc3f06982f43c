"""export-mjcf and export-urdf round trips: the written files load in MuJoCo and pinocchio
and reproduce the identified torque model (the regressor with the exported standard
parameters) to 1e-8 relative."""
from dataclasses import replace
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from robot_identification.errors import DataError
from robot_identification.model import RobotModel, load_robot, load_robot_config
from robot_identification.regressor import regressor
from robot_identification.report import export_mjcf, export_urdf, urdf_torque
from robot_identification.simulation._mujoco import load_mjcf

pytestmark = pytest.mark.slow

mujoco = pytest.importorskip("mujoco")
HERE = Path(__file__).resolve().parent
TOL = 1e-8
#: not in MuJoCo's inverse dynamics: Coulomb (frictionloss constraint, checked by value),
#: offsets and static friction (no element)
SKIP = ("coulomb", "offset", "stiction", "stribeck")


def arm7(kind="rigid"):
    """test/arm7 (not shipped), rigid or with elastic joints (gear 100, K 4000 N*m/rad)."""
    cfg = load_robot_config(HERE / "arm7.yaml")
    if kind != "rigid":
        joints = tuple(replace(j, gear_ratio=100.0, drive={
            **j.drive, "rotor_inertia": j.drive["rotor_inertia"] * 1e-4, "stiffness": 4000.0})
            for j in cfg.joints)
        cfg = replace(cfg, model="elastic", coupling=kind, joints=joints)
    return RobotModel(cfg)


def identified(model, seed=0):
    """Standard parameters near the nominal ones (bodies rescaled: still physical), every
    drive parameter non-zero: what an identification might return."""
    rng = np.random.default_rng(seed)
    pi = model.nominal_parameters().copy()
    for k in range(model.n):
        pi[10 * k: 10 * k + 10] *= rng.uniform(0.9, 1.1)
    for i, kind in enumerate(model.layout.kinds):
        if kind != "inertial":
            pi[i] = (pi[i] or 0.1) * rng.uniform(0.8, 1.2)
    return pi


def states(model, count=15, seed=1):
    rng = np.random.default_rng(seed)
    n = model.n
    out = []
    for _ in range(count):
        q = rng.uniform(-1.5, 1.5, n)
        out.append((q, rng.normal(size=n), rng.normal(size=n), q + 0.01 * rng.normal(size=n),
                    rng.normal(size=n), rng.normal(size=n)))
    return out


def torque_model(model, pi, s):
    p = pi.copy()
    for i, name in enumerate(model.parameter_names):
        if name.rsplit(".", 1)[1] in SKIP:
            p[i] = 0.0
    q, dq, ddq, th, dth, ddth = s
    if model.config.elastic:
        return regressor(model, q[None], dq[None], ddq[None], th[None], dth[None],
                         ddth[None])[0] @ p
    return regressor(model, q[None], dq[None], ddq[None])[0] @ p


def mujoco_torque(arm, s):
    q, dq, ddq, th, dth, ddth = s
    m = arm.model
    d = mujoco.MjData(m)
    d.qpos[arm.joint_qpos], d.qvel[arm.joint_dof], d.qacc[arm.joint_dof] = q, dq, ddq
    if arm.elastic:
        d.qpos[arm.rotor_qpos] = arm.gear * th
        d.qvel[arm.rotor_dof], d.qacc[arm.rotor_dof] = arm.gear * dth, arm.gear * ddth
    mujoco.mj_inverse(m, d)
    f = d.qfrc_inverse
    if arm.elastic:
        return np.concatenate([f[arm.joint_dof], arm.gear * f[arm.rotor_dof]])
    return f[arm.joint_dof].copy()


def pinocchio_mjcf_torque(path, model, s):
    """pinocchio's own MJCF reader: rnea (with the file's armature) + joint damping, and for
    elastic joints the fixed-tendon springs read from the file (pinocchio has no tendons)."""
    import xml.etree.ElementTree as ET
    pm = pin.buildModelFromMJCF(str(path))
    data = pm.createData()
    q, dq, ddq, th, dth, ddth = s
    names = list(model.joint_names)
    idx = {nm: pm.joints[pm.getJointId(nm)].idx_v for nm in pm.names[1:]}
    qa, va, aa = np.zeros(pm.nq), np.zeros(pm.nv), np.zeros(pm.nv)
    k = model.gear_ratios
    for i, nm in enumerate(names):
        qa[idx[nm]], va[idx[nm]], aa[idx[nm]] = q[i], dq[i], ddq[i]
        if model.config.elastic:
            r = idx[f"{nm}_rotor"]
            qa[r], va[r], aa[r] = k[i] * th[i], k[i] * dth[i], k[i] * ddth[i]
    tau = pin.rnea(pm, data, qa, va, aa) + pm.damping * va
    if not model.config.elastic:
        return np.array([tau[idx[nm]] for nm in names])
    springs = {t.get("name"): float(t.get("stiffness")) for t in
               ET.parse(path).getroot().iter("fixed")}
    link = np.array([tau[idx[nm]] for nm in names])
    motor = np.array([k[i] * tau[idx[f"{nm}_rotor"]] for i, nm in enumerate(names)])
    K = np.array([springs[f"{nm}_spring"] for nm in names])
    return np.concatenate([link + K * (q - th), motor - K * (q - th)])


@pytest.mark.parametrize("kind", ["rigid", "complete", "reduced"])
def test_exported_mjcf_reproduces_the_identified_model(kind, tmp_path):
    model = arm7(kind)
    pi = identified(model)
    path = export_mjcf(model, pi, tmp_path / "arm7.xml", comment="test")
    arm = load_mjcf(path, model)                         # MuJoCo's own XML loader
    arm.model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS
                                      | mujoco.mjtDisableBit.mjDSBL_LIMIT)
    ref = np.array([torque_model(model, pi, s) for s in states(model)])
    got = np.array([mujoco_torque(arm, s) for s in states(model)])
    pin_got = np.array([pinocchio_mjcf_torque(path, model, s) for s in states(model)])
    scale = np.abs(ref).max()
    assert np.abs(got - ref).max() <= TOL * scale
    assert np.abs(pin_got - ref).max() <= TOL * scale
    names = model.parameter_names
    coulomb = np.array([pi[names.index(f"{j}.coulomb")] for j in model.joint_names])
    dof = arm.rotor_dof if model.config.elastic else arm.joint_dof
    scale_k = model.gear_ratios if model.config.elastic else 1.0
    np.testing.assert_allclose(arm.model.dof_frictionloss[dof] * scale_k, coulomb, rtol=1e-12)


def test_exported_urdf_loads_in_mujoco_and_pinocchio(tmp_path):
    """URDF: inertials, <dynamics damping friction> (MuJoCo: damping, frictionloss) and the
    rotor inertia in the transmissions' Drake tags (reflected inertia J_m k_m^2); the ur10e
    without its load-dependent Coulomb term, which neither URDF nor MuJoCo holds."""
    from dataclasses import replace
    from robot_identification.model import RobotModel
    from robot_identification.report._urdf_export import read_transmissions
    model = load_robot("ur10e")
    model = RobotModel(replace(model.config, friction=replace(model.config.friction,
                                                              load_dependent=False)),
                       urdf_xml=model.urdf_xml)
    pi = identified(model, seed=3)
    path = export_urdf(model, pi, tmp_path / "ur10e.urdf")
    st = states(model)
    q, dq, ddq = (np.array([s[i] for s in st]) for i in range(3))
    ref = np.array([torque_model(model, pi, s) for s in st])
    names = model.parameter_names
    fc = np.array([pi[names.index(f"{j}.coulomb")] for j in model.joint_names])
    fo = np.array([pi[names.index(f"{j}.offset")] for j in model.joint_names])
    tau_pin = urdf_torque(path, model, pi, q, dq, ddq) - fc * np.sign(dq) - fo
    scale = np.abs(ref).max()
    assert np.abs(tau_pin - ref).max() <= TOL * scale
    drake = read_transmissions(path.read_text())
    rotor = np.array([pi[names.index(f"{j}.rotor_inertia")] for j in model.joint_names])
    np.testing.assert_allclose([drake[j][0] for j in model.joint_names], rotor, rtol=1e-9)
    m = mujoco.MjModel.from_xml_path(str(path))          # MuJoCo reads URDF too
    m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS
                              | mujoco.mjtDisableBit.mjDSBL_LIMIT)
    d = mujoco.MjData(m)
    dof = [m.jnt_dofadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, j)]
           for j in model.joint_names]
    got = []
    for a, b, c in zip(q, dq, ddq):
        d.qpos[dof], d.qvel[dof], d.qacc[dof] = a, b, c
        mujoco.mj_inverse(m, d)
        got.append(d.qfrc_inverse[dof] + rotor * model.gear_ratios ** 2 * c)  # no armature
    assert np.abs(np.array(got) - ref).max() <= TOL * scale
    np.testing.assert_allclose(m.dof_frictionloss[dof], fc, rtol=1e-9)


def test_export_mjcf_refuses_bodies_mujoco_cannot_hold(tmp_path, capsys):
    """The PUMA 560's published links violate the triangle inequality: one line naming the
    bodies, no file."""
    from robot_identification import cli
    model = load_robot("puma560")
    with pytest.raises(DataError, match="triangle|A \\+ B >= C"):
        export_mjcf(model, model.nominal_parameters(), tmp_path / "p.xml")
    assert not (tmp_path / "p.xml").exists()
    rc = cli.main(["export-mjcf", "--robot", "ur10e", "--results",
                   str(tmp_path / "missing.yaml"), "--output", str(tmp_path / "u.xml")])
    err = capsys.readouterr().err
    assert rc != 0 and "missing.yaml" in err and "Traceback" not in err
