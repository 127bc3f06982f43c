"""`robot-identification demo --config`: a starter config written by `init` for an arm the
project does not ship runs through the ROS 2 node graph with no edit."""
import argparse

import numpy as np
import pytest
import yaml

pytest.importorskip("rclpy")

from robot_identification.cli import main  # noqa: E402
from robot_identification.commands import demo  # noqa: E402

pytestmark = pytest.mark.ros
from conftest import ros_domain_id  # noqa: E402
from test_init import seven_dof_urdf  # noqa: E402
DOMAIN_ID = ros_domain_id(141)


def test_demo_config_runs_a_starter_config(tmp_path, capfd):
    urdf = tmp_path / "arm7.urdf"
    urdf.write_text(seven_dof_urdf())
    cfg = tmp_path / "arm7.yaml"
    assert main(["init", "--urdf", str(urdf), "--output", str(cfg)]) == 0
    parser = argparse.ArgumentParser()
    demo.add_arguments(parser)
    out = tmp_path / "demo"
    args = parser.parse_args(["--config", str(cfg), "--output", str(out),
                              "--domain-id", str(DOMAIN_ID)])
    assert demo.run(args) == 0
    text = capfd.readouterr().out
    assert "control loop" in text and "results.yaml" in text
    doc = yaml.safe_load((out / "results.yaml").read_text())
    assert doc["robot"] == "arm7" and len(doc["metrics"]["residual_rms"]) == 7
    # `relative_std` is in percent. The arm is simulated on the default engine, MuJoCo, whose
    # Coulomb friction is a soft constraint (frictionloss): below a creep velocity of a few
    # hundredths of a rad/s it holds less than the Coulomb level (docs/simulation.md), which
    # the regressor's sign(v) does not model. The inertial base parameters are free of that:
    # the well-determined ones (< 1 % relative std) match the URDF's (the truth) within 5 %
    entries = {e["name"]: e for e in doc["base_parameters"]}
    good = [e for e in entries.values() if e["relative_std"] is not None
            and e["relative_std"] < 1.0 and abs(e["true"]) > 0.05
            and e["name"].split(".")[1] not in ("viscous", "coulomb")]
    assert len(good) >= 6
    for e in good:
        assert abs(e["estimate"] / e["true"] - 1) < 0.05, e
    # the friction torque while sliding, Coulomb + viscous at the joint's RMS velocity, is
    # right within 5 % wherever both are well determined; measured on MuJoCo: a1.viscous
    # +5.7 % with 0.28 % relative std, a1.coulomb -2.5 % (its friction torque at 0.5 rad/s
    # -0.8 %): the split between the two terms is biased by the engine's sticking zone,
    # not their sum in motion
    from robot_identification.data import load_dataset
    bag = next(p.parent for p in out.glob("run_*/metadata.yaml"))
    dq = load_dataset(bag).dq
    checked = 0
    for k, joint in enumerate(j["name"] for j in yaml.safe_load(cfg.read_text())["joints"]):
        fv, fc = entries.get(f"{joint}.viscous"), entries.get(f"{joint}.coulomb")
        if not (fv and fc and max(fv["relative_std"], fc["relative_std"]) < 1.0):
            continue
        v = float(np.sqrt(np.mean(dq[:, k] ** 2)))
        est, true = fc["estimate"] + fv["estimate"] * v, fc["true"] + fv["true"] * v
        assert abs(est / true - 1) < 0.05, (joint, v, est, true)
        checked += 1
    assert checked >= 3
    assert list(out.glob("run_*/metadata.yaml"))


def test_demo_config_errors_are_one_line(tmp_path, capsys):
    assert main(["demo", "--config", str(tmp_path / "nope.yaml"), "--output",
                 str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "nope.yaml" in err and len(err.strip().splitlines()) == 1
