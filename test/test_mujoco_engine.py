"""MuJoCo backend: the MjModel of every shipped robot against pinocchio (independent engines),
the stepping API shared by both engines, and the two engines against each other."""
from dataclasses import replace

import numpy as np
import pinocchio as pin
import pytest

from conftest import make_model
from robot_identification.errors import ConfigError, DataError, ModelError
from robot_identification.excitation import trajectory_from_config
from robot_identification.model import RobotModel, available_robots, load_robot
from robot_identification.regressor import regressor
from robot_identification.simulation import (
    ArmDynamics, MujocoSimulator, Simulator, build_mujoco, make_controller, make_simulator)

pytestmark = pytest.mark.slow

mujoco = pytest.importorskip("mujoco")

#: Drive terms MuJoCo has no element for (applied explicitly by MujocoSimulator).
NOT_IN_MUJOCO = ("coulomb", "offset", "stiction", "stribeck")


def variant(model, kind):
    """``model`` as a rigid arm, or elastic with complete / reduced coupling (a rigid robot
    gets joint stiffness 1500 + 100 k N*m/rad and, without one, rotor inertia 1e-4)."""
    cfg = model.config
    if kind == "rigid":
        return RobotModel(replace(cfg, model="rigid"), urdf_xml=model.urdf_xml)
    joints = tuple(replace(j, rotor=True, drive={
        **j.drive, "stiffness": j.drive.get("stiffness") or 1500.0 + 100 * k,
        "rotor_inertia": j.drive.get("rotor_inertia") or 1e-4})
        for k, j in enumerate(cfg.joints))
    return RobotModel(replace(cfg, model="elastic", coupling=kind, joints=joints),
                      urdf_xml=model.urdf_xml)


def random_states(model, rng, count):
    lo = np.array([j.limits.position[0] if j.limits.position else -np.pi
                   for j in model.config.joints])
    hi = np.array([j.limits.position[1] if j.limits.position else np.pi
                   for j in model.config.joints])
    n = model.n
    for _ in range(count):
        q = rng.uniform(lo, hi)
        yield (q, rng.normal(size=n), rng.normal(size=n), q + 0.02 * rng.normal(size=n),
               rng.normal(size=n), rng.normal(size=n))


def mujoco_inverse(arm, q, dq, ddq, th=None, dth=None, ddth=None):
    """qfrc_inverse of the link dofs and (elastic) of the rotor dofs times k_m: the link rows
    and the link-referred motor torques u."""
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


def without(model, keys):
    pi = model.nominal_parameters().copy()
    for i, name in enumerate(model.parameter_names):
        if name.rsplit(".", 1)[1] in keys:
            pi[i] = 0.0
    return pi


VARIANTS = [(name, kind) for name in available_robots()
            for kind in ("rigid", "complete", "reduced")]


@pytest.mark.parametrize("name, kind", VARIANTS)
def test_mj_inverse_equals_pinocchio_and_the_regressor(name, kind):
    """mj_inverse of build_mujoco's model == pinocchio rnea + drive terms (rigid: the URDF
    model with armature k_m^2 J_m, viscous friction; elastic: the rotor-augmented tree of
    ArmDynamics, tendon spring, motor viscous friction) == the project's regressor @ nominal
    parameters, on random states, to 1e-9 N*m. Coulomb friction is MuJoCo's frictionloss
    constraint (disabled here; its level is checked on the model)."""
    base = load_robot(name)
    try:
        model = variant(base, kind)
    except ModelError as exc:                   # elastic prismatic joints: refused by design
        assert kind != "rigid" and "revolute joints only" in str(exc)
        assert any(t == "prismatic" for t in base.joint_types)
        pytest.skip(f"{name}: {exc}")
    arm = build_mujoco(model)
    arm.model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS
                                      | mujoco.mjtDisableBit.mjDSBL_LIMIT)
    drives = arm.drives
    pi = without(model, NOT_IN_MUJOCO)
    rng = np.random.default_rng(7)
    worst = 0.0
    if kind == "rigid":
        pm = model.pin_model.copy()
        arm_k = np.zeros(pm.nv)
        arm_k[model.velocity_indices] = drives["rotor_inertia"] * model.gear_ratios ** 2
        pm.armature = arm_k
        data = pm.createData()
    else:
        dyn = ArmDynamics(model, friction="none")
        am, data = dyn.pin_model, dyn.pin_model.createData()
    for q, dq, ddq, th, dth, ddth in random_states(model, rng, 12):
        if kind == "rigid":
            ref = model.from_pin_v(pin.rnea(pm, data, model.pin_configuration(q),
                                            model.to_pin_v(dq), model.to_pin_v(ddq)))
            ref = ref + drives["viscous"] * dq
            got = mujoco_inverse(arm, q, dq, ddq)
            Y = regressor(model, q[None], dq[None], ddq[None])[0]
        else:
            spring = drives["stiffness"] * (q - th) + drives["damping"] * (dq - dth)
            k = model.gear_ratios
            if kind == "complete":
                a = np.zeros(am.nv)
                a[dyn._lidx_v], a[dyn._ridx_v] = ddq, k * ddth
                t = pin.rnea(am, data, dyn._pin_q(q, th), dyn._pin_v(dq, dth), a)
                link, motor = t[dyn._lidx_v], k * t[dyn._ridx_v]
            else:                                # Spong: link tree + J_m k^2 ddtheta
                link = model.from_pin_v(pin.rnea(am, data, model.pin_configuration(q),
                                                 model.to_pin_v(dq), model.to_pin_v(ddq)))
                motor = drives["rotor_inertia"] * k ** 2 * ddth
            ref = np.concatenate([link + spring, motor - spring + drives["viscous"] * dth])
            got = mujoco_inverse(arm, q, dq, ddq, th, dth, ddth)
            Y = regressor(model, q[None], dq[None], ddq[None], th[None], dth[None],
                          ddth[None])[0]
        worst = max(worst, np.abs(got - ref).max(), np.abs(got - Y @ pi).max())
    assert worst <= 1e-9, f"{name} {kind}: max |mj_inverse - reference| = {worst:.3g} N*m"
    dof = arm.rotor_dof if arm.elastic else arm.joint_dof
    scale = arm.gear if arm.elastic else 1.0
    np.testing.assert_allclose(arm.model.dof_frictionloss[dof] * scale,
                               np.maximum(drives["coulomb"], 0), rtol=1e-12, atol=0)


@pytest.mark.parametrize("kind", ["rigid", "complete", "reduced"])
def test_mj_inverse_on_a_spatial_arm_with_skew_axes_and_locked_joints(kind):
    """conftest's spatial arm (skew axis, fixed tool merged, a locked finger, rigid with a
    prismatic joint, joint damping D for the elastic one): the same identity."""
    if kind == "rigid":
        model = make_model("rigid")
    else:
        model = make_model("elastic", prismatic=False, gear=[50.0, 80.0, 0.1, 30.0, 2.0],
                           coupling=kind, damping=True)
    arm = build_mujoco(model)
    arm.model.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS
                                      | mujoco.mjtDisableBit.mjDSBL_LIMIT)
    pi = without(model, NOT_IN_MUJOCO)
    worst = 0.0
    for q, dq, ddq, th, dth, ddth in random_states(model, np.random.default_rng(3), 12):
        if model.config.elastic:
            got = mujoco_inverse(arm, q, dq, ddq, th, dth, ddth)
            Y = regressor(model, q[None], dq[None], ddq[None], th[None], dth[None],
                          ddth[None])[0]
        else:
            got = mujoco_inverse(arm, q, dq, ddq)
            Y = regressor(model, q[None], dq[None], ddq[None])[0]
        worst = max(worst, np.abs(got - Y @ pi).max())
    assert worst <= 1e-9


@pytest.mark.parametrize("name, seconds", [("zollo_planar", 1.0), ("ur10e", 1.0),
                                           ("puma560_elastic", 0.3)])
def test_engines_agree_in_closed_loop(name, seconds):
    """The same PD-controlled excitation on both engines (no friction: the engines model
    Coulomb friction differently) gives the same motion to 1e-6 rad."""
    model = load_robot(name)
    traj = trajectory_from_config(model)
    runs = []
    for engine in ("builtin", "mujoco"):
        sim = make_simulator(model, engine, friction="none", quantise=False)
        ctrl = make_controller(model)
        t = np.arange(int(seconds * sim.rate_hz)) * sim.dt
        q_ref, dq_ref, _ = traj.evaluate(t)
        sim.reset(q_ref[0])
        q = []
        for i in range(len(t)):
            q.append(sim.state.q)
            sim.step(ctrl(q_ref[i], dq_ref[i], sim.measure()))
        runs.append(np.array(q))
    assert np.ptp(runs[0], axis=0).max() > 0.01           # it moved
    np.testing.assert_allclose(runs[1], runs[0], rtol=0, atol=1e-6)


@pytest.mark.parametrize("name", ["zollo_planar", "puma560"])
def test_both_engines_have_the_stepping_interface(name):
    model = load_robot(name)
    q0 = trajectory_from_config(model).evaluate(0.0)[0][0]
    for engine, cls in (("builtin", Simulator), ("mujoco", MujocoSimulator)):
        sim = make_simulator(model, engine, dt=2e-3)
        assert isinstance(sim, cls) and sim.engine == engine
        assert sim.rate_hz == pytest.approx(500.0) and sim.dt == pytest.approx(2e-3)
        state = sim.reset(q0)
        np.testing.assert_allclose(state.q, q0)
        m = sim.measure()
        keys = {"t", "q", "dq", "tau"} | ({"theta", "dtheta"} if model.config.elastic
                                          else set())
        assert set(m) == keys
        step = 2 * np.pi / model.config.simulation.encoder_counts
        np.testing.assert_allclose(m["q"] / step, np.round(m["q"] / step), atol=1e-6)
        u = make_controller(model)(q0, np.zeros(model.n), m)
        for _ in range(20):
            state = sim.step(u)
        assert state.t == pytest.approx(20 * sim.dt)
        np.testing.assert_array_equal(sim.measure()["tau"], u)
        sim.t += sim.dt                                 # the robot's clock is writable
        assert sim.state.t == pytest.approx(21 * sim.dt)


def test_elastic_arm_rests_in_equilibrium_on_mujoco():
    """reset(q0) at theta0 = q0 + K^-1 g(q0); holding u = g(q0) (frictionless) keeps it there."""
    model = load_robot("puma560_elastic")
    sim = make_simulator(model, "mujoco", friction="none", quantise=False)
    q0 = trajectory_from_config(model).evaluate(0.0)[0][0]
    s0 = sim.reset(q0)
    g = sim.gravity(q0)
    np.testing.assert_allclose(g, ArmDynamics(model).gravity(q0), rtol=1e-9, atol=1e-9)
    for _ in range(50):
        s = sim.step(g)
    np.testing.assert_allclose(s.q, s0.q, atol=1e-9)
    np.testing.assert_allclose(s.theta, s0.theta, atol=1e-9)


def test_coulomb_friction_holds_the_mujoco_arm_at_rest():
    """frictionloss is a constraint: below the Coulomb level the joint stays (nearly) at rest,
    above it the joint slides (docs/simulation.md, where the engines differ)."""
    model = load_robot("puma560")
    q0 = np.zeros(model.n)
    sim = make_simulator(model, "mujoco", quantise=False)
    coulomb = sim.arm.model.dof_frictionloss[sim.arm.joint_dof]
    g = sim.gravity(q0)
    sim.reset(q0)
    for _ in range(200):
        s = sim.step(g + 0.5 * coulomb)
    assert np.abs(s.dq).max() < 1e-2
    sim.reset(q0)
    for _ in range(200):
        s = sim.step(g + 1.5 * coulomb)
    assert np.all(s.dq[coulomb > 1] > 0.05)


def test_engine_errors_are_one_line():
    model = load_robot("zollo_planar")
    with pytest.raises(ConfigError, match="engine must be one of"):
        make_simulator(model, "bullet")
    with pytest.raises(ConfigError, match="no option"):
        make_simulator(model, "builtin", coulomb="explicit")
    with pytest.raises(ConfigError, match="builtin integrator must be"):
        make_simulator(model, "builtin", integrator="RK4")
    with pytest.raises(ConfigError, match="not both"):
        make_simulator(model, "mujoco", rate_hz=1000.0, dt=1e-3)
    with pytest.raises(ConfigError, match="integrator must be one of"):
        make_simulator(model, "mujoco", integrator="leapfrog")
    sim = make_simulator(model, "mujoco")
    with pytest.raises(DataError, match="finite torques"):
        sim.step([np.nan, 0.0])
    with pytest.raises(DataError, match="diverged"):
        for _ in range(50):
            sim.step([1e12, -1e12])


def test_simulate_command_on_mujoco(tmp_path, capsys):
    from robot_identification import cli
    from robot_identification.data import load_dataset
    out = tmp_path / "run.npz"
    assert cli.main(["simulate", "--robot", "zollo_planar", "--duration", "0.5", "--engine",
                     "mujoco", "--output", str(out)]) == 0
    assert "MuJoCo RK4 steps" in capsys.readouterr().out
    ds = load_dataset(out, load_robot("zollo_planar"))
    assert ds.metadata["engine"] == "mujoco" and ds.metadata["mujoco_version"]
    assert ds.n_samples == 501 and np.ptp(ds.q, axis=0).max() > 0.01


@pytest.mark.parametrize("name", ["zollo_planar", "szabo_3dof", "puma560"])
def test_mujoco_runs_satisfy_the_regressor(name):
    """Exact states of a MuJoCo run (Coulomb friction as explicit sign(v), the regressor's
    friction law, exact accelerations from mj_forward): Y @ pi_nominal == u (rigid) or
    [0, u] (elastic), as for the built-in simulator (test_simulation_dynamics)."""
    from robot_identification.regressor import torque_vector
    from robot_identification.simulation import simulate
    model = load_robot(name)
    ds = simulate(model, duration=1.0, derivatives=True, quantise=False, friction="regressor",
                  torque="command", engine="mujoco", engine_options={"coulomb": "explicit"})
    Y = regressor(model, ds.q, ds.dq, ds.ddq, ds.theta, ds.dtheta, ds.ddtheta)
    y = torque_vector(model, ds.tau)
    np.testing.assert_allclose(Y @ model.nominal_parameters(), y, rtol=0,
                               atol=1e-9 * np.abs(y).max())
