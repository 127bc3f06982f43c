"""validate --rollout: recordings replayed through models in MuJoCo (simulated ur10e data:
the true model rolls out the recording closely, a wrong one does not)."""
import numpy as np
import pytest
import yaml

from robot_identification.model import load_robot
from robot_identification.simulation import simulate
from robot_identification.validation import closed_loop_available, rollout

pytestmark = pytest.mark.slow

pytest.importorskip("mujoco")


@pytest.fixture(scope="module")
def run():
    model = load_robot("ur10e")
    return model, simulate(model, duration=3.0, engine="mujoco", seed=1)


@pytest.fixture(scope="module")
def full_run():
    """The config's whole excitation (10 s): 3 s cut mid-motion identify a rotor inertia
    below zero, an error that stops identify (exit 3)."""
    model = load_robot("ur10e")
    return model, simulate(model, engine="mujoco", seed=1)


def _wrong(model):
    pi = model.nominal_parameters().copy()
    for k in range(model.n):                       # every body 30 % heavier
        pi[10 * k: 10 * k + 10] *= 1.3
    return pi


def test_closed_and_open_loop_rollouts_separate_true_and_wrong_models(run):
    model, ds = run
    assert closed_loop_available(ds)
    true = rollout(model, model.nominal_parameters(), ds, closed_loop=True)
    wrong = rollout(model, _wrong(model), ds, closed_loop=True)
    assert true["mode"] == "closed loop" and true["windows"] == 2 and true["window_s"] == 2.0
    assert true["q_rms_mean"] < 1e-4 and true["diverged"] == 0
    assert wrong["q_rms_mean"] > 10 * true["q_rms_mean"]
    true = rollout(model, model.nominal_parameters(), ds)            # open loop, 0.5 s
    wrong = rollout(model, _wrong(model), ds)
    assert true["windows"] == 6 and true["q_rms_mean"] < 2e-3
    assert wrong["q_rms_mean"] > 5 * true["q_rms_mean"]


def test_validate_and_report_rollout_commands(full_run, tmp_path):
    from robot_identification import cli
    model, ds = full_run
    data = tmp_path / "run.npz"
    ds.save_npz(data)
    res = tmp_path / "results.yaml"
    # physical first (the primary): the 3 s run leaves the WLS estimate with a negative
    # rotor inertia, an error that stops identify (exit 3)
    assert cli.main(["identify", "--robot", "ur10e", "--data", str(data), "--quiet",
                     "--estimator", "physical", "--estimator", "wls", "--output",
                     str(res)]) == 0
    val = tmp_path / "validation.yaml"
    assert cli.main(["validate", "--robot", "ur10e", "--results", str(res), "--data",
                     str(data), "--rollout", "--output", str(val), "--quiet"]) == 0
    doc = yaml.safe_load(val.read_text())
    roll = doc["rollout"][0]
    assert roll["mode"] == "closed loop" and set(roll["models"]) == {"nominal", "physical"}
    for m in roll["models"].values():
        assert len(m["joints"]) == 6 and np.isfinite(m["q_rms_mean"])
    assert cli.main(["report", "--robot", "ur10e", "--results", str(res), "--data",
                     str(data), "--rollout", "--output", str(tmp_path / "rep")]) == 0
    page = (tmp_path / "rep" / "report.html").read_text()
    assert "Rollout in MuJoCo" in page and 'src="rollout1.png"' in page
    assert (tmp_path / "rep" / "rollout1.png").stat().st_size > 10_000
