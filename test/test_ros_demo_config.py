"""`robot-identification demo --config`: a starter config written by `init` for an arm the
project does not ship runs through the ROS 2 node graph with no edit."""
import argparse

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
    # the reference engine: its torques are exactly the regressor's model (MuJoCo's
    # frictionloss constraint is not sign(v)), which the accuracy check below relies on
    args = parser.parse_args(["--config", str(cfg), "--output", str(out),
                              "--domain-id", str(DOMAIN_ID), "--engine", "builtin"])
    assert demo.run(args) == 0
    text = capfd.readouterr().out
    assert "control loop" in text and "results.yaml" in text
    doc = yaml.safe_load((out / "results.yaml").read_text())
    assert doc["robot"] == "arm7" and len(doc["metrics"]["residual_rms"]) == 7
    # the well-determined inertial base parameters match the URDF's (the simulator's truth)
    good = [e for e in doc["base_parameters"] if e["relative_std"] is not None
            and e["relative_std"] < 1.0 and abs(e["true"]) > 0.05]
    assert len(good) >= 10
    for e in good:
        assert abs(e["estimate"] / e["true"] - 1) < 0.05, e
    assert list(out.glob("run_*/metadata.yaml"))


def test_demo_config_errors_are_one_line(tmp_path, capsys):
    assert main(["demo", "--config", str(tmp_path / "nope.yaml"), "--output",
                 str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "nope.yaml" in err and len(err.strip().splitlines()) == 1
