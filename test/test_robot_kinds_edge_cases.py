"""More robots the project does not ship, through the user path (test/robot_kinds/): a mobile
manipulator on a planar base with wheels, a 14-dof dual-arm torso, an arm with zero, huge and
lower = upper limits, a 2-dof vertical arm about x with a massless link and a point-mass
forearm, joint names with slashes, spaces, dots and CJK letters, a xacro that needs
arguments, a URDF in millimetres, duplicate <inertial> elements and an elastic starter.

The simulator's true parameters are the URDF inertials and the starter's drive values, so
noise-free simulated data must identify them to a normalised mean error <= 0.05.
"""
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import assert_one_line, run_cli
from robot_identification.cli import main
from robot_identification.errors import ConfigError, ModelError
from robot_identification.model import RobotModel, load_robot_config, read_urdf
from robot_identification.identification import identify
from robot_identification.simulation import simulate
from robot_identification.starter import scale_notes, starter_config

pytestmark = pytest.mark.slow

KINDS = Path(__file__).resolve().parent / "robot_kinds"

#: robot file -> the joints `init` selects (pinocchio's depth-first order)
EXPECTED = {
    "mobile_manipulator.urdf": ["arm_joint1", "arm_joint2", "arm_joint3"],
    "limits_arm.urdf": ["joint1", "joint2"],
    "heavy_arm.urdf": ["joint1", "joint2", "joint3"],
    "vertical_2dof.urdf": ["shoulder", "elbow"],
    "odd_names.urdf": ["arm/joint 1", "schulter.gelenk", "肘"],
    "dual_arm_torso.urdf": [f"{side}_joint{k}" for side in ("left", "right")
                            for k in range(1, 8)],
}


def _starter(tmp_path, name, **kw):
    cfg = tmp_path / "robot.yaml"
    cfg.write_text(starter_config(KINDS / name, cfg, **kw))
    return cfg, RobotModel(load_robot_config(cfg))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_noise_free_simulation_identifies_the_urdf(name, tmp_path):
    _, model = _starter(tmp_path, name)
    assert list(model.joint_names) == EXPECTED[name]
    data = simulate(model, seed=0, rate_hz=500.0, duration=6.0 if model.n > 3 else None)
    result = identify(model, data)
    nme = result.normalised_mean_error()
    assert np.isfinite(nme) and nme <= 0.05, (name, nme, [str(d) for d in result.diagnostics])
    assert not [d for d in result.diagnostics if d.severity == "error"]


def test_mobile_base_and_wheels_are_locked_with_a_reason(tmp_path, capsys):
    out = tmp_path / "mm.yaml"
    assert main(["init", "--urdf", str(KINDS / "mobile_manipulator.urdf"), "--output",
                 str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "base_planar: planar base joint: locked at the identity pose, i.e. the base is " \
           "fixed" in printed
    for wheel in ("left_wheel_joint", "right_wheel_joint"):
        assert f"{wheel}: wheel-like: continuous, on the mobile base 'base_planar'" in printed
    model = RobotModel(load_robot_config(out))
    # a continuous wheel is locked at angle 0 (before: reported as a multi-dof joint)
    assert model.locked_joints == (("base_planar", None), ("left_wheel_joint", 0.0),
                                   ("right_wheel_joint", 0.0))
    data = simulate(model, seed=0, duration=1.0, rate_hz=250.0)
    (d,) = [d for d in identify(model, data).diagnostics if d.code == "joints_locked"]
    assert "base_planar (multi-dof) at the identity pose, left_wheel_joint at 0" in d.message
    # a floating base: the same (the base is fixed at the identity pose)
    floating = (KINDS / "mobile_manipulator.urdf").read_text().replace(
        'type="planar"', 'type="floating"')
    text = starter_config(KINDS / "mobile_manipulator.urdf", out, urdf_xml=floating)
    assert "#   base_planar: floating base joint: locked" in text
    assert "left_wheel_joint: wheel-like" in text
    # the wheels can still be chosen by name
    text = starter_config(KINDS / "mobile_manipulator.urdf", out,
                          joints=["arm_joint1", "left_wheel_joint"])
    assert [j["name"] for j in yaml.safe_load(text)["joints"]] == ["arm_joint1",
                                                                   "left_wheel_joint"]


def test_urdf_limits_zero_huge_and_equal(tmp_path):
    """velocity/effort 0: defaults written with a CHECK comment; lower = upper: the joint
    cannot move and is left out (before: excited over +-1 rad as if unlimited)."""
    cfg, model = _starter(tmp_path, "limits_arm.urdf")
    text = cfg.read_text()
    assert "#   joint3: revolute with <limit> lower = upper = 0: it cannot move" in text
    assert model.locked_joints == (("joint3", 0.0),)
    line1 = next(ln for ln in text.splitlines() if ln.startswith("    limits: {position: [-3,"))
    assert "velocity: 2," in line1 and "effort" not in line1.split("}")[0]
    assert "CHECK: the URDF gives velocity 0 and effort 0; defaults written" in line1
    j2 = model.config.joints[1].limits
    assert j2.velocity == 3.0 and j2.effort == 1e30            # capped / kept
    assert "degrees given as radians" not in text              # 1e16 is not degrees
    degrees = (KINDS / "limits_arm.urdf").read_text().replace(
        'lower="-3" upper="3"', 'lower="-170" upper="170"')
    text = starter_config(KINDS / "limits_arm.urdf", cfg, urdf_xml=degrees)
    assert "# note: joint 'joint1' has position limits [-170, 170] rad: degrees given as " \
           "radians?" in text


def test_a_urdf_whose_every_joint_is_immobile_says_why(tmp_path):
    """Every <limit> lower = upper (example-robot-data's double pendulum writes 0 0 for
    unlimited joints): init names the joints and the reason, and --joints is the way out."""
    xml = re.sub(r'lower="[^"]*" upper="[^"]*"', 'lower="0" upper="0"',
                 (KINDS / "limits_arm.urdf").read_text())    # three revolute joints
    urdf = tmp_path / "immobile.urdf"
    urdf.write_text(xml)
    with pytest.raises(ModelError) as err:
        starter_config(urdf, tmp_path / "x.yaml")
    msg = str(err.value)
    assert "has no movable 1-dof joint to identify: joint1 (<limit> lower = upper)" in msg
    assert "--joints" in msg


def test_millimetre_urdf_is_named_by_init_simulate_and_identify(tmp_path, capsys):
    cfg, run = tmp_path / "mm.yaml", tmp_path / "run.npz"
    urdf = KINDS / "millimetre_arm.urdf"
    (note,) = scale_notes(read_urdf(urdf))
    assert "millimetres given as metres" in note and "joint offset 400 m (joint 'joint3')" \
        in note
    assert main(["init", "--urdf", str(urdf), "--output", str(cfg), "--quiet"]) == 0
    assert "note: URDF lengths look like millimetres" in capsys.readouterr().out
    assert main(["simulate", "--config", str(cfg), "--duration", "1.5", "--output", str(run),
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "warning: joint 'joint2' does not follow the excitation" in out
    assert "at the effort limit (100) 100 % of the time" in out
    rc, err = run_cli(["identify", "--config", cfg, "--data", run, "--output",
                       tmp_path / "r.yaml", "--quiet"], capsys, KINDS)
    assert_one_line(rc, err, "rows at velocity reversals or stops dropped", "does the robot "
                    "move?")
    assert "lower the threshold" not in err                   # the threshold is 0 already
    # with 60 dB noise (10 s: rows survive) the 'motion' is noise: not "raise the cut-off"
    noisy = tmp_path / "run60.npz"
    assert main(["simulate", "--config", str(cfg), "--snr", "60", "--output", str(noisy),
                 "--quiet"]) == 0
    rc, err = run_cli(["identify", "--config", cfg, "--data", noisy, "--output",
                       tmp_path / "r.yaml", "--quiet"], capsys, KINDS)
    assert_one_line(rc, err, "like noise, not an excitation: does the robot move?")
    assert "raise the cut-off" not in err
    # a metre URDF: no note (the shipped-kinds arms, the 14-dof torso)
    for name in ("dual_arm_torso.urdf", "vertical_2dof.urdf", "gantry.urdf"):
        assert scale_notes(read_urdf(KINDS / name)) == [], name


def test_duplicate_inertial_is_refused(tmp_path, capsys):
    """pinocchio reads the first <inertial>, urdf_parser_py (export-urdf) the last: before,
    both were used without a word (a printed 'Scalar element defined multiple times')."""
    urdf = tmp_path / "dup.urdf"
    urdf.write_text((KINDS / "limits_arm.urdf").read_text().replace(
        '<link name="link2">', '<link name="link2"><inertial><mass value="0.5"/><inertia '
        'ixx="1e-3" ixy="0" ixz="0" iyy="1e-3" iyz="0" izz="1e-3"/></inertial>'))
    rc, err = run_cli(["init", "--urdf", urdf, "--output", tmp_path / "d.yaml"], capsys,
                      tmp_path)
    assert_one_line(rc, err, "link 'link2' has 2 <inertial> elements", "merge them")
    # an <inertial> without <inertia>: urdfdom dropped it, 2.5 kg included, and printed
    # four C++ error lines per model build
    urdf.write_text((KINDS / "vertical_2dof.urdf").read_text().replace(
        '<inertia ixx="0.035" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.035"/>', ""))
    rc, err = run_cli(["init", "--urdf", urdf, "--output", tmp_path / "d.yaml"], capsys,
                      tmp_path)
    assert_one_line(rc, err, "link 'upper_arm' has an <inertial> without <inertia>",
                    "zeros for a point mass")


def test_xacro_arguments_from_init_to_the_config(tmp_path, capsys):
    xacro = KINDS / "arm_args.urdf.xacro"
    cfg = tmp_path / "arm.yaml"
    rc, err = run_cli(["init", "--urdf", xacro, "--output", cfg], capsys, KINDS)
    assert_one_line(rc, err, "the file declares xacro arguments ['prefix', 'upper_length']",
                    "--xacro-arg NAME:=VALUE")
    assert main(["init", "--urdf", str(xacro), "--xacro-arg", "upper_length:=0.35",
                 "--xacro-arg", "prefix:=left_", "--output", str(cfg), "--quiet"]) == 0
    doc = yaml.safe_load(cfg.read_text())
    assert doc["xacro_args"] == {"upper_length": "0.35", "prefix": "left_"}
    model = RobotModel(load_robot_config(cfg))                 # expands with the config's args
    assert model.joint_names == ("left_shoulder", "left_elbow")
    elbow = model.pin_model.jointPlacements[model.joint_ids[1]].translation
    assert np.allclose(elbow, [0.35, 0, 0])
    data = simulate(model, seed=0, rate_hz=500.0)
    assert identify(model, data).normalised_mean_error() <= 0.05
    # refused: not NAME:=VALUE, arguments for a plain URDF, a value that is not a scalar
    rc, err = run_cli(["init", "--urdf", xacro, "--xacro-arg", "upper_length=0.35",
                       "--output", tmp_path / "b.yaml"], capsys, KINDS)
    assert_one_line(rc, err, "--xacro-arg 'upper_length=0.35': expected NAME:=VALUE")
    with pytest.raises(ConfigError, match="is not a .xacro file"):
        starter_config(KINDS / "vertical_2dof.urdf", cfg, xacro_args={"a": "1"})
    bad = dict(doc, xacro_args={"prefix": ["left_"]})
    from robot_identification.model import parse_robot_config
    with pytest.raises(ConfigError, match=r"xacro_args.prefix: expected a string"):
        parse_robot_config(bad, source=cfg)
    with pytest.raises(ConfigError, match="is not a .xacro file"):
        parse_robot_config(dict(doc, urdf=str(KINDS / "vertical_2dof.urdf")), source=cfg)


def test_elastic_starter_for_a_new_robot(tmp_path, capsys):
    """init --model elastic writes a nominal stiffness per joint (a link-side resonance at
    8 Hz against the joint's largest inertia): simulate and identify work as written."""
    cfg, model = _starter(tmp_path, "vertical_2dof.urdf", model="elastic")
    assert model.config.elastic
    K = [j.drive["stiffness"] for j in model.config.joints]
    assert all(k > 0 for k in K)
    data = simulate(model, seed=0, rate_hz=500.0, duration=6.0)
    result = identify(model, data)
    assert result.normalised_mean_error() <= 0.05
    est = dict(zip(result.names, result.estimate.values))
    for j, k in zip(model.joint_names, K):
        assert est[f"{j}.stiffness"] == pytest.approx(k, rel=0.01)
    # elastic joints are revolute: a prismatic joint is refused in one line
    rc, err = run_cli(["init", "--urdf", KINDS / "rp_arm.urdf", "--model", "elastic",
                       "--output", tmp_path / "rp.yaml"], capsys, KINDS)
    assert_one_line(rc, err, "revolute joints only", "extend")


def test_massless_link_and_point_mass_body_in_the_physical_estimate(tmp_path):
    """A massless spacer and a forearm with a zero inertia tensor (a point mass): the
    physical estimate's log-det prior needs a positive definite nominal body and gets one."""
    _, model = _starter(tmp_path, "vertical_2dof.urdf")
    data = simulate(model, seed=0, rate_hz=250.0, duration=6.0)
    result = identify(model, data, estimators=("wls", "physical"))
    phys = result.estimates["physical"]
    assert np.all(np.isfinite(phys.values))
    codes = {d.code for d in result.diagnostics}
    assert "estimator_failed" not in codes and "prior_distance" in codes
    assert "prior_not_physical" not in codes          # degenerate, but a rigid body


def test_a_urdf_body_that_is_no_rigid_body_is_named_as_prior(tmp_path):
    """Izz above Ixx + Iyy (the triangle inequality): the log-det prior cannot use the
    URDF's body as it is (before: shifted without a word)."""
    from robot_identification.model import parse_robot_config
    cfg, _ = _starter(tmp_path, "vertical_2dof.urdf")
    urdf = (KINDS / "vertical_2dof.urdf").read_text().replace(
        'iyy="0.002" iyz="0" izz="0.035"', 'iyy="0.002" iyz="0" izz="0.1"')
    model = RobotModel(parse_robot_config(yaml.safe_load(cfg.read_text()), source=cfg), urdf)
    data = simulate(model, seed=0, rate_hz=250.0, duration=4.0)
    result = identify(model, data, estimators=("wls", "physical"))
    (d,) = [d for d in result.diagnostics if d.code == "prior_not_physical"]
    assert d.severity == "warning" and d.subject == "upper_arm" and "the URDF" in d.message
    assert np.all(np.isfinite(result.estimates["physical"].values))


def test_odd_joint_names_survive_results_and_validation(tmp_path, capsys):
    cfg, run, res = tmp_path / "odd.yaml", tmp_path / "run.npz", tmp_path / "results.yaml"
    for argv in (["init", "--urdf", str(KINDS / "odd_names.urdf"), "--output", str(cfg)],
                 ["simulate", "--config", str(cfg), "--duration", "4", "--output", str(run)],
                 ["identify", "--config", str(cfg), "--data", str(run), "--output", str(res)],
                 ["validate", "--config", str(cfg), "--results", str(res), "--data", str(run),
                  "--output", str(tmp_path / "validation.yaml")]):
        assert main(argv + ["--quiet"]) == 0, argv
    capsys.readouterr()
    names = [j["name"] for j in yaml.safe_load(
        (tmp_path / "validation.yaml").read_text())["files"][0]["joints"]]
    assert names == ["arm/joint 1", "schulter.gelenk", "肘"]
    doc = yaml.safe_load(res.read_text())
    assert "schulter.gelenk.viscous" in {p["name"] for p in doc["base_parameters"]}


def test_model_error_names_the_xacro(tmp_path):
    broken = tmp_path / "b.urdf.xacro"
    broken.write_text('<robot name="b" xmlns:xacro="http://www.ros.org/wiki/xacro">'
                      '<link name="${undefined_property}"/></robot>')
    with pytest.raises(ModelError, match="xacro expansion of .*b.urdf.xacro"):
        read_urdf(broken)


def test_elastic_deflection_below_noise_is_named(tmp_path):
    """A stiff elastic joint with light torques: 60 dB position noise on q and theta is
    comparable to the deflection theta - q that carries the elastic torque."""
    from dataclasses import replace

    from robot_identification.diagnostics import check_deflection
    from robot_identification.identification import Recording
    from robot_identification.identification import identify as engine_identify
    _, model = _starter(tmp_path, "vertical_2dof.urdf", model="elastic")
    data = simulate(model, seed=0, rate_hz=500.0, duration=4.0)
    assert not check_deflection(model.joint_names, data.q, data.theta)
    rng = np.random.default_rng(0)
    deflection = np.sqrt(np.mean((data.theta - data.q) ** 2, axis=0))
    noise = np.array([0.0, 0.3 * deflection[1]])            # elbow only: about 2.4 x
    noisy = replace(data, q=data.q + rng.normal(0, 1, data.q.shape) * noise,
                    theta=data.theta + rng.normal(0, 1, data.q.shape) * noise)
    (d,) = check_deflection(model.joint_names, noisy.q, noisy.theta, "run.npz")
    assert d.code == "deflection_below_noise" and d.subject == "elbow"
    assert d.severity == "warning" and d.message.startswith("run.npz: the joint deflection")
    assert "link parameters" in d.message and "rigid model" in d.message
    codes = [x.subject for x in engine_identify(model, Recording.from_dataset(noisy, model))
             .diagnostics if x.code == "deflection_below_noise"]
    assert codes == ["elbow"]


def test_micro_arm_physical_estimate_keeps_the_urdf_masses(tmp_path):
    """10-30 g links a few cm long: their pseudo-inertias' smallest eigenvalues (1e-5 to
    3e-5) are near the fixed LMI margin of 1e-6; the margin now scales with the body (before:
    noise-free data, prior = truth, link2 at 8-12 x its URDF mass, three bodies on the
    bound)."""
    _, model = _starter(tmp_path, "micro_arm.urdf")
    data = simulate(model, seed=0, rate_hz=500.0)
    result = identify(model, data, estimators=("wls", "physical"))
    assert result.normalised_mean_error() <= 0.05
    codes = {d.code for d in result.diagnostics}
    assert not codes & {"body_on_bound", "mass_far_from_nominal"}, codes
    sp = result.estimates["physical"].details["standard_parameters"]
    urdf = model.nominal_parameters()
    for k, body in enumerate(model.body_names):
        assert sp[f"{body}.m"] == pytest.approx(urdf[10 * k], rel=0.5), body
