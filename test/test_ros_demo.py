"""`robot-identification demo`: the in-process node graph identifies zollo_planar (accuracy)."""
import argparse

import numpy as np
import pytest
import yaml

pytest.importorskip("rclpy")

from robot_identification.commands import demo  # noqa: E402
from robot_identification.data import load_dataset  # noqa: E402

pytestmark = pytest.mark.ros
from conftest import ros_domain_id  # noqa: E402
DOMAIN_ID = ros_domain_id(134)


def test_demo_identifies_zollo_planar(tmp_path, capfd):
    parser = argparse.ArgumentParser()
    demo.add_arguments(parser)
    args = parser.parse_args(["--output", str(tmp_path), "--domain-id", str(DOMAIN_ID)])
    assert demo.run(args) == 0
    out = capfd.readouterr().out
    assert "results.yaml" in out and "control loop" in out
    # each error printed once: the table's line (all, without Coulomb/static friction) and
    # the demo's (without any friction term)
    assert out.count("without Coulomb") == 1 and "without any friction term" in out
    results = yaml.safe_load((tmp_path / "results.yaml").read_text())
    entries = {e["name"]: e for e in results["base_parameters"]}
    for k in ("joint1.stiffness", "joint2.stiffness"):
        assert abs(entries[k]["estimate"] / entries[k]["true"] - 1) < 0.01, entries[k]
    # the link-side inertial parameters and rotor inertias: within 0.5 %
    for name, e in entries.items():
        if e["true"] != 0 and name.rsplit(".", 1)[-1] not in ("viscous", "coulomb"):
            assert abs(e["estimate"] / e["true"] - 1) < 0.005, e
    # all but Coulomb friction (viscous friction: Stribeck-simulated, see docs/ros.md)
    assert results["metrics"]["normalised_mean_error_without_static_friction"] <= 0.02
    assert results["metrics"]["normalised_mean_error_without_friction"] <= 0.005
    bag = next(tmp_path.glob("run_*"))
    ds = load_dataset(bag)
    assert ds.n_samples == 9502                     # 9.5 s at 1 kHz + the rest state
    np.testing.assert_allclose(np.diff(ds.t), 1e-3, atol=1e-9)
    # the lockstep graph reproduces the core's closed-loop simulate() exactly (same simulator:
    # the demo's default engine, MuJoCo; controller - pd_controller's: the config's gains,
    # no feedforward, which simulate's own loop replaces since issue #24 -, trajectory):
    # positions bit for bit, interval-mean torques to rounding
    from robot_identification.model import load_robot
    from robot_identification.simulation import simulate
    model = load_robot("zollo_planar")
    ref = simulate(model, engine="mujoco", kp=model.config.simulation.kp,
                   kd=model.config.simulation.kd, feedforward=False)
    lagged = load_dataset(bag, effort_lag=0.5)
    n = ref.n_samples
    np.testing.assert_array_equal(lagged.q[:n], ref.q)
    np.testing.assert_array_equal(lagged.theta[:n], ref.theta)
    np.testing.assert_allclose(lagged.tau[1:n], ref.tau[1:], atol=1e-8)
    with pytest.raises(Exception, match="exists"):  # never overwrite results
        demo.run(args)
