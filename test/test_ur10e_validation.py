"""Validation core on synthetic UR10e data (no shared data needed)."""
from __future__ import annotations

import numpy as np
import pytest
import yaml

from robot_identification.data import Dataset
from robot_identification.errors import DataError
from robot_identification.identifiability import base_parameters
from robot_identification.model import load_robot
from robot_identification.regressor import regressor
from robot_identification.validation import load_estimates, validate, validation_to_dict
from robot_identification.identification import torque_errors

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def setup():
    model = load_robot("ur10e")
    return model, base_parameters(model)


def _dataset(model, pi, static=False, N=800, dt=0.01):
    t = dt * np.arange(N)
    w = 2 * np.pi * np.array([0.3, 0.25, 0.4, 0.5, 0.35, 0.45])
    amp = 0.0 if static else 0.6
    q = 0.3 + amp * np.sin(np.outer(t, w))
    dq = amp * np.cos(np.outer(t, w)) * w
    ddq = -amp * np.sin(np.outer(t, w)) * w ** 2
    tau = regressor(model, q, dq, ddq) @ pi
    return Dataset(t=t, q=q, dq=dq, tau=tau, joint_names=model.joint_names,
                   metadata={"source": "synthetic", "moving": not static})


def test_torque_errors_formula():
    meas = np.array([[1.0, 2.0], [-1.0, -2.0]])
    pred = meas + np.array([[0.1, 0.0], [-0.1, 0.4]])
    r = torque_errors(meas, pred, ["a", "b"])
    assert r["joints"][0]["rms"] == pytest.approx(0.1)
    assert r["joints"][1]["nrmse"] == pytest.approx(np.sqrt(0.08) / 2.0)
    assert r["nrmse_mean"] == pytest.approx((0.1 + np.sqrt(0.08) / 2.0) / 2)


def test_true_parameters_predict_and_static_runs_work(setup):
    model, base = setup
    pi = model.nominal_parameters().copy()
    for k, j in enumerate(model.joint_names):
        pi[model.parameter_names.index(f"{j}.viscous")] = 3.0
        pi[model.parameter_names.index(f"{j}.offset")] = 0.5
    models = {"nominal": base.base_values(model.nominal_parameters()),
              "truth": base.base_values(pi)}
    files = validate(model, base, models, [_dataset(model, pi), _dataset(model, pi, True)],
                     labels=["moving.csv", "static.csv"])
    moving, static = files
    # filtering is the only difference between measured and predicted torque
    assert moving["models"]["truth"]["nrmse_mean"] < 1e-2
    assert moving["models"]["nominal"]["nrmse_mean"] > 0.05
    assert not static["moving"]
    assert static["models"]["truth"]["nrmse_mean"] < 1e-6
    doc = validation_to_dict("ur10e", files, primary="truth")
    assert doc["files"][0]["file"] == "moving.csv"
    assert [j["name"] for j in doc["files"][1]["joints"]] == list(model.joint_names)
    yaml.safe_load(yaml.safe_dump(doc))


def test_load_estimates_errors(setup, tmp_path):
    model, base = setup
    with pytest.raises(DataError, match="does not exist"):
        load_estimates(tmp_path / "none.yaml", model, base)
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump({"robot": "zollo_planar", "base_parameters": [
        {"name": "x", "estimate": 1.0}]}))
    with pytest.raises(DataError, match="robot 'zollo_planar'"):
        load_estimates(other, model, base)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(yaml.safe_dump({"robot": "ur10e", "base_parameters": [
        {"name": "x", "estimate": 1.0}]}))
    with pytest.raises(DataError, match="do not match"):
        load_estimates(wrong, model, base)
