"""``robot-identification simulate`` writes a dataset that ``identify`` reads."""
import numpy as np

from robot_identification.cli import main
from robot_identification.data import load_dataset
from robot_identification.excitation import BSplineTrajectory, save_trajectory


def test_simulate_then_identify(tmp_path, capsys):
    out = tmp_path / "run.npz"
    assert main(["simulate", "--robot", "zollo_planar", "--duration", "3", "--seed", "1",
                 "--snr", "120", "--output", str(out)]) == 0
    ds = load_dataset(out)
    assert ds.n_samples == 3001 and ds.theta is not None
    assert ds.metadata["robot"] == "zollo_planar" and ds.metadata["snr_db"] == 120.0
    assert ds.true_parameters["joint1.stiffness"] == 3000.0
    assert "simulated 3.00 s" in capsys.readouterr().out
    res = tmp_path / "results.yaml"
    assert main(["identify", "--robot", "zollo_planar", "--data", str(out), "--output",
                 str(res), "--quiet"]) == 0
    assert res.is_file()


def test_quiet_prints_no_progress_lines(tmp_path, capsys):
    """--quiet: no progress (here stderr is not a terminal, where lines stand in for the
    bar), only the result."""
    out = tmp_path / "run.npz"
    assert main(["simulate", "--robot", "zollo_planar", "--duration", "5.5", "--output",
                 str(out), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "simulated 5.0/5.5 s" not in text and "wrote" in text
    assert main(["simulate", "--robot", "zollo_planar", "--duration", "5.5", "--output",
                 str(tmp_path / "b.npz")]) == 0
    assert "simulated 5.0/5.5 s" in capsys.readouterr().out


def test_simulate_with_trajectory_file(tmp_path):
    traj = BSplineTrajectory(np.array([[0.3, -0.2], [-0.2, 0.4]]), 0.5)
    path = save_trajectory(traj, tmp_path / "traj.yaml")
    out = tmp_path / "run.npz"
    assert main(["simulate", "--robot", "zollo_planar", "--trajectory", str(path),
                 "--derivatives", "--no-quantise", "--output", str(out)]) == 0
    ds = load_dataset(out)
    assert ds.ddtheta is not None and ds.t[-1] == 0.5


def test_simulate_errors(tmp_path, capsys):
    assert main(["simulate", "--robot", "zollo_planar", "--output",
                 str(tmp_path / "run.bag")]) == 2
    assert "only .npz" in capsys.readouterr().err
    fast = save_trajectory(BSplineTrajectory([[5.0, 0.0]], 0.5), tmp_path / "fast.yaml")
    assert main(["simulate", "--robot", "zollo_planar", "--trajectory", str(fast),
                 "--output", str(tmp_path / "x.npz")]) == 2
    assert "velocity limit of joint 'joint1'" in capsys.readouterr().err
    assert main(["simulate", "--robot", "nosuchrobot", "--output",
                 str(tmp_path / "x.npz")]) == 2
    assert "unknown robot" in capsys.readouterr().err
