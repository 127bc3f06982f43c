"""`identify --effort-lag`: the CLI applies the identifier node's effort lag to bags."""
import numpy as np

from robot_identification.cli import main


def test_effort_lag_shifts_bag_efforts_and_is_refused_elsewhere(tmp_path, capsys):
    from robot_identification.data import load_dataset
    from robot_identification.data import write_bag
    from robot_identification.model import load_robot
    from robot_identification.simulation import simulate
    model = load_robot("zollo_planar")
    ds = simulate(model, duration=3.0)
    bag = tmp_path / "run"
    write_bag(ds, bag)
    ds.save_npz(tmp_path / "run.npz")
    out0, out5 = tmp_path / "r0.yaml", tmp_path / "r5.yaml"
    assert main(["identify", "--robot", "zollo_planar", "--data", str(bag), "--output",
                 str(out0), "--quiet"]) == 0
    assert main(["identify", "--robot", "zollo_planar", "--data", str(bag), "--output",
                 str(out5), "--effort-lag", "0.5", "--quiet"]) == 0
    assert out0.read_text() != out5.read_text()
    # the lag is what load_dataset(effort_lag=...) applies: efforts interpolated half a period on
    lagged = load_dataset(bag, effort_lag=0.5)
    np.testing.assert_allclose(lagged.tau[1:-1], 0.5 * (ds.tau[1:-1] + ds.tau[2:]), atol=1e-9)
    capsys.readouterr()
    assert main(["identify", "--robot", "zollo_planar", "--data", str(tmp_path / "run.npz"),
                 "--output", str(tmp_path / "x.yaml"), "--effort-lag", "0.5"]) == 2
    assert "rosbag2" in capsys.readouterr().err
