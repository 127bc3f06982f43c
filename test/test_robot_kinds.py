"""Valid but unusual robots the project does not ship, through the user path: a SCARA (RRPR,
prismatic quill along -z, continuous wrist, fixed flange, root inertial, package:// meshes,
ros_control transmissions and Gazebo tags), a Cartesian gantry (PPP + R, a 50 kg bridge next
to a 0.01 kg tool, rotated inertials), a 4-dof arm with a gripper (continuous joints without
limits, a negative axis, a fixed joint between moving links, mimic fingers), a tree (two arms
and a camera mast), a 1-dof pendulum and a 2-dof RP arm (test/robot_kinds/*.urdf).

Each starter config (``init``) must excite every joint within its limits (prismatic ones in
metres), and noise-free simulated data must identify the simulator's true parameters (the URDF
inertials and the starter's drive values) to a normalised mean error <= 0.05.
"""
import hashlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import yaml

from robot_identification.cli import main
from robot_identification.errors import ConfigError
from robot_identification.excitation import check_limits, trajectory_from_config
from robot_identification.model import RobotModel, load_robot_config, parse_robot_config
from robot_identification.model._robot_model import build_pinocchio_model, parser_urdf
from robot_identification.identification import identify
from robot_identification.simulation import simulate
from robot_identification.starter import starter_config

pytestmark = pytest.mark.slow

KINDS = Path(__file__).resolve().parent / "robot_kinds"

#: robot -> the joints `init` selects (kinematic order) and their kinds
EXPECTED = {
    "scara": (["shoulder", "elbow", "quill", "wrist"],
              ["revolute", "revolute", "prismatic", "revolute"]),
    "gantry": (["x_axis", "y_axis", "z_axis", "tool_roll"], ["prismatic"] * 3 + ["revolute"]),
    "gripper_arm": (["turret", "shoulder", "elbow", "wrist_roll"], ["revolute"] * 4),
    "two_arms": (["left_shoulder", "left_elbow", "mast_pan", "mast_tilt", "right_shoulder",
                  "right_elbow"], ["revolute"] * 6),                    # pinocchio's order
    "pendulum": (["hinge"], ["revolute"]),
    "rp_arm": (["pitch", "extend"], ["revolute", "prismatic"]),
}


def _starter(robot, tmp_path):
    cfg = tmp_path / f"{robot}.yaml"
    cfg.write_text(starter_config(KINDS / f"{robot}.urdf", cfg))
    return cfg, RobotModel(load_robot_config(cfg))


def test_parsers_are_handed_only_what_they_read(tmp_path, capfd):
    """transmissions, Gazebo tags, K/D <dynamics> attributes: no stderr line from pinocchio or
    urdf_parser_py, the same model (rnea), the user's file untouched."""
    path = KINDS / "scara.urdf"
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    raw = path.read_text()
    clean = parser_urdf(raw)
    assert "transmission" in raw and "gazebo" in raw and 'K="2000"' in raw
    assert "transmission" not in clean and "gazebo" not in clean and 'K="2000"' not in clean
    assert 'damping="0.5"' in clean and 'friction="1.0"' in clean and "package://" in clean
    capfd.readouterr()
    ours = build_pinocchio_model(raw)
    cfg, model = _starter("scara", tmp_path)
    out = capfd.readouterr()
    assert out.err == "" and out.out == ""
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    plain = pin.buildModelFromXML(raw)                     # pinocchio on the file as it is
    capfd.readouterr()
    assert ours.nq == plain.nq == 5 and list(ours.names) == list(plain.names)
    rng = np.random.default_rng(0)
    d1, d2 = ours.createData(), plain.createData()
    for _ in range(5):
        q = pin.randomConfiguration(plain)
        v, a = rng.normal(size=plain.nv), rng.normal(size=plain.nv)
        assert np.array_equal(pin.rnea(ours, d1, q, v, a), pin.rnea(plain, d2, q, v, a))
    assert np.array_equal(ours.damping, plain.damping)
    assert np.array_equal(ours.friction, plain.friction)
    assert parser_urdf("not xml") == "not xml"             # left for the parsers to report


@pytest.mark.parametrize("robot", sorted(EXPECTED))
def test_starter_excites_every_joint_within_its_limits(robot, tmp_path):
    cfg, model = _starter(robot, tmp_path)
    names, kinds = EXPECTED[robot]
    assert list(model.joint_names) == names and model.joint_types == kinds
    doc = yaml.safe_load(cfg.read_text())
    text = cfg.read_text()
    for j, kind in zip(doc["joints"], kinds):
        if kind == "prismatic":                               # metres: the URDF's stroke
            assert f"- name: {j['name']}  # prismatic: m, m/s" in text
    traj = trajectory_from_config(model)
    check_limits(model, traj)                                 # position, velocity, acceleration
    t = np.arange(0.0, traj.duration, 1e-2)
    q, _, _ = traj.evaluate(t)
    for k, j in enumerate(model.config.joints):
        travel = q[:, k].max() - q[:, k].min()
        if j.limits.position is not None:
            lo, hi = j.limits.position
            # one joint's short stroke must not shrink the others' motion (before: SCARA 3 %)
            assert travel > 0.15 * (hi - lo), (j.name, travel, hi - lo)
        else:                                                 # continuous joint
            assert travel > 0.3, (j.name, travel)


@pytest.mark.parametrize("robot", sorted(EXPECTED))
def test_noise_free_simulation_identifies_the_urdf(robot, tmp_path):
    _, model = _starter(robot, tmp_path)
    data = simulate(model, seed=0, rate_hz=500.0)
    result = identify(model, data)
    nme = result.normalised_mean_error()
    assert np.isfinite(nme) and nme <= 0.05, (robot, nme, [str(d) for d in result.diagnostics])
    assert not [d for d in result.diagnostics if d.severity == "error"]


def test_wrapped_continuous_angles_are_unwrapped(tmp_path):
    """A driver reporting the continuous turret in [-pi, pi): the same estimates as the
    unwrapped angles, in one chunk or many (before: NME 4.5 from two wraps)."""
    from robot_identification.identification import Recording
    from robot_identification.identification import identify as engine_identify
    _, model = _starter("gripper_arm", tmp_path)
    assert list(model.continuous_joints) == [True, False, False, True]
    data = simulate(model, seed=0, rate_hz=250.0)
    q = data.q.copy()
    q[:, 0] += np.pi - np.median(q[:, 0])      # the turret (z axis: no gravity) crosses pi
    shifted = replace(data, q=q)
    q = q.copy()
    q[:, 0] = (q[:, 0] + np.pi) % (2 * np.pi) - np.pi
    wrapped = replace(data, q=q)
    assert (np.abs(np.diff(wrapped.q[:, 0])) > np.pi).sum() >= 2
    # wls: a least-squares estimate is a sharp check that the data are the same (auto
    # chooses the physically consistent one here, an SDP solution to ~1e-8)
    ref = identify(model, shifted, estimator="wls")
    assert ref.normalised_mean_error() <= 0.05
    for chunk in (None, 300):
        got = engine_identify(model, Recording.from_dataset(wrapped, model, chunk=chunk),
                              estimator="wls")
        assert np.allclose(got.estimate.values, ref.estimate.values, rtol=1e-7, atol=1e-10)


def test_gripper_fingers_are_locked_with_a_message(tmp_path, capsys):
    urdf = KINDS / "gripper_arm.urdf"
    out = tmp_path / "arm.yaml"
    assert main(["init", "--urdf", str(urdf), "--output", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "locked (not identified): finger_left_joint" in printed
    assert "finger_right_joint: prismatic, a <mimic> of 'finger_left_joint'" in printed
    assert "#   finger_left_joint:" in out.read_text()
    model = RobotModel(load_robot_config(out))
    assert model.locked_joints == (("finger_left_joint", 0.0), ("finger_right_joint", 0.0))
    # their mass is part of the wrist body (pinocchio merges locked subtrees)
    assert model.pin_model.inertias[model.joint_ids[-1]].mass == pytest.approx(0.3 + 0.5 + 0.1)
    data = simulate(model, seed=0, duration=2.0, rate_hz=250.0)
    codes = {d.code: d for d in identify(model, data).diagnostics}
    assert "finger_left_joint at 0" in codes["joints_locked"].message
    # a joint outside its range at 0 is locked at the nearer limit
    shifted = urdf.read_text().replace('lower="0" upper="0.04"', 'lower="0.01" upper="0.04"')
    config = parse_robot_config(yaml.safe_load(out.read_text()), source=out)
    assert RobotModel(config, shifted).locked_joints == (("finger_left_joint", 0.01),
                                                         ("finger_right_joint", 0.01))


def test_a_joint_that_moves_no_inertia_is_named(tmp_path, capsys):
    urdf = tmp_path / "tip.urdf"
    urdf.write_text((KINDS / "rp_arm.urdf").read_text().replace(
        "</robot>", '<joint name="spin" type="revolute"><parent link="slider"/><child '
        'link="tip"/><axis xyz="1 0 0"/><limit lower="-1" upper="1" velocity="2" effort="5"/>'
        '</joint><link name="tip"/></robot>'))
    assert main(["init", "--urdf", str(urdf), "--output", str(tmp_path / "t.yaml")]) == 0
    assert "note: joint 'spin' moves no inertia in the URDF" in capsys.readouterr().out


def test_a_floating_base_joint_is_locked_at_the_identity_pose(tmp_path):
    cfg, fixed = _starter("rp_arm", tmp_path)
    floating = (KINDS / "rp_arm.urdf").read_text().replace(
        '<link name="base"/>', '<link name="world"/><joint name="float" type="floating">'
        '<parent link="world"/><child link="base"/></joint><link name="base"/>')
    model = RobotModel(load_robot_config(cfg), floating)
    assert model.locked_joints == (("float", None),)
    q, v, a = np.array([0.3, 0.1]), np.array([0.5, -0.2]), np.array([1.0, 0.4])
    tau = [pin.rnea(m.pin_model, m.pin_model.createData(), m.pin_configuration(q),
                    m.to_pin_v(v), m.to_pin_v(a)) for m in (model, fixed)]
    assert np.allclose(tau[0], tau[1], rtol=1e-12, atol=1e-12)


def test_a_joint_others_mimic_is_refused(tmp_path, capsys):
    out = tmp_path / "fingers.yaml"
    assert main(["init", "--urdf", str(KINDS / "gripper_arm.urdf"), "--joints", "turret",
                 "finger_left_joint", "--output", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "finger_right_joint" in err and "mimics" in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_user_path_scara(tmp_path, capfd):
    """init -> simulate -> identify -> validate -> report -> export-urdf from the CLI; the
    exported URDF (prismatic quill, continuous wrist) predicts the identified model's torque."""
    from robot_identification.regressor import regressor
    from robot_identification.report import read_results
    from robot_identification.report._urdf_export import urdf_torque
    cfg, run, val = tmp_path / "scara.yaml", tmp_path / "run.npz", tmp_path / "val.npz"
    res, urdf_out = tmp_path / "results.yaml", tmp_path / "identified.urdf"
    steps = [["init", "--urdf", str(KINDS / "scara.urdf"), "--output", str(cfg)],
             ["simulate", "--config", str(cfg), "--duration", "6", "--output", str(run)],
             ["simulate", "--config", str(cfg), "--duration", "3", "--seed", "1",
              "--output", str(val)],
             ["identify", "--config", str(cfg), "--data", str(run), "--output", str(res),
              "--estimator", "wls", "--estimator", "physical"],
             ["validate", "--config", str(cfg), "--results", str(res), "--data", str(val),
              "--output", str(tmp_path / "validation.yaml")],
             ["report", "--config", str(cfg), "--results", str(res), "--data", str(val),
              "--output", str(tmp_path / "report")],
             ["export-urdf", "--config", str(cfg), "--results", str(res),
              "--output", str(urdf_out)]]
    for argv in steps:
        assert main(argv + ["--quiet"]) == 0, argv
        assert capfd.readouterr().err == "", argv          # no parser noise, no traceback
    units = {p["name"]: p["unit"] for p in yaml.safe_load(res.read_text())["base_parameters"]}
    assert units["quill.coulomb"] == "N" and units["quill.viscous"] == "N*s/m"
    assert units["elbow.coulomb"] == "N*m" and units["quill_link.m"] == "kg"
    doc = yaml.safe_load((tmp_path / "validation.yaml").read_text())
    assert doc["files"][0]["nrmse_mean"] < 0.2
    page = (tmp_path / "report" / "report.html").read_text()
    assert len(page) > 10_000 and "RMS error [N m; N for prismatic joints]" in page
    text = urdf_out.read_text()
    assert 'type="prismatic"' in text and 'type="continuous"' in text
    assert "transmission" in text                         # the user's other tags are kept
    model = RobotModel(load_robot_config(cfg))
    sp = read_results(res, model.config.name)["estimates"]["physical"]["standard_parameters"]
    pi = np.array([sp[n] for n in model.parameter_names])
    rng = np.random.default_rng(1)
    q = rng.uniform([-2, -2, 0.02, -6], [2, 2, 0.18, 6], (20, 4))
    dq = rng.choice([-1, 1], (20, 4)) * rng.uniform(0.1, 1, (20, 4))
    ddq = rng.normal(size=(20, 4))
    expected = np.einsum("nrp,p->nr", regressor(model, q, dq, ddq), pi)
    got = urdf_torque(urdf_out, model, pi, q, dq, ddq)
    assert np.abs(got - expected).max() < 1e-6 * np.abs(expected).max()


def test_prismatic_positions_in_millimetres_are_named():
    from robot_identification.diagnostics import check_joint_limits
    q = np.array([[150.0, 0.0], [0.1, 0.5]])                  # a CSV column in mm
    (d,) = check_joint_limits(["extend", "pitch"], q, [(0.0, 0.3), (-1.2, 1.2)], "run.csv",
                              ["prismatic", "revolute"])
    assert d.severity == "error" and "millimetres given as metres?" in d.message


def test_pd_control_of_a_wrapped_continuous_angle(tmp_path):
    """A continuous joint reported in [-pi, pi): the PD law acts on the shortest angle."""
    from robot_identification.simulation import make_controller
    _, model = _starter("gripper_arm", tmp_path)
    law = make_controller(model, saturate=False)
    q_d, dq_d = np.array([3.1, 0.2, 0.1, 0.0]), np.zeros(4)
    unwrapped = np.array([3.2, 0.2, 0.1, 0.0])
    wrapped = unwrapped - [2 * np.pi, 0, 0, 0]             # the turret as a driver reports it
    u1 = law(q_d, dq_d, {"q": unwrapped, "dq": dq_d})
    u2 = law(q_d, dq_d, {"q": wrapped, "dq": dq_d})
    assert np.allclose(u1, u2, rtol=1e-9, atol=1e-9)
    assert u1[0] == pytest.approx(-0.1 * law.kp[0])           # no gravity on the turret


@pytest.mark.parametrize("per_joint", [False, True])
def test_scale_to_limits_one_factor_or_one_per_joint(tmp_path, per_joint):
    """The default excitation scales each joint to its own limits (a 0.4 m/s quill must not
    slow the shoulder); an optimised trajectory keeps its shape (one factor)."""
    from robot_identification.excitation import scale_to_limits
    _, model = _starter("scara", tmp_path)
    spec = {"type": "fourier", "base_frequency": 0.2, "harmonics": 4, "amplitude": 5.0,
            "seed": 2}
    big = trajectory_from_config(model, {**spec, "margin": 1e9})   # effectively unscaled
    traj = scale_to_limits(model, big, 0.9, per_joint=per_joint)
    check_limits(model, traj)
    t = np.arange(0.0, traj.duration + 5e-4, 1e-3)
    q, dq, ddq = traj.evaluate(t)
    lo, hi = np.array([j.limits.position or (-np.inf, np.inf) for j in model.config.joints]).T
    start = q[0]
    span = hi - lo
    with np.errstate(invalid="ignore", divide="ignore"):
        pos = np.where(np.isfinite(span), np.maximum(
            (q - start) / (hi - 0.05 * span - start), (q - start) / (lo + 0.05 * span - start)),
            0).max(axis=0)
    vmax = np.array([j.limits.velocity for j in model.config.joints])
    amax = np.array([j.limits.acceleration for j in model.config.joints])
    usage = np.max([pos, np.abs(dq).max(0) / (0.9 * vmax), np.abs(ddq).max(0) / (0.9 * amax)],
                   axis=0)
    if per_joint:
        assert np.allclose(usage, 1.0, atol=1e-6), usage
    else:
        assert usage.max() == pytest.approx(1.0, abs=1e-6) and usage.min() < 0.5, usage
    # the robot config says which: `init` writes scaling: joint; common is the default
    assert model.config.simulation.excitation["scaling"] == "joint"
    with pytest.raises(ConfigError, match="scaling"):
        trajectory_from_config(model, {**spec, "scaling": "each"})
