"""IDIM-IV (Janot, Vandanjon & Gautier 2014): the closed loop simulated with the estimate
gives noise-free instruments; on a noisy closed-loop run its bias is well below OLS's."""
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml

from robot_identification.errors import ConfigError
from robot_identification.excitation import BSplineTrajectory
from robot_identification.identification import identify
from robot_identification.model import RobotModel, parse_robot_config, robot_files
from robot_identification.regressor import regressor
from robot_identification.simulation import add_measurement_noise, simulate

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def rigid_planar():
    """Zollo's 2-dof planar arm as a rigid arm, PD-controlled along a 3 s B-spline, with
    60 dB noise on the positions and 2 % noise on the torques."""
    path = robot_files("zollo_planar")
    data = yaml.safe_load(Path(path).read_text())
    data["model"] = "rigid"
    model = RobotModel(parse_robot_config(data, source=path))
    traj = BSplineTrajectory(np.random.default_rng(0).uniform(-1, 1, (8, 2)), 3.0)
    ds = simulate(model, trajectory=traj, friction="regressor")
    noisy = add_measurement_noise(ds, 60.0, seed=0)
    tau_rms = np.sqrt(np.mean(ds.tau ** 2, axis=0))
    noise = 0.02 * tau_rms * np.random.default_rng(1).standard_normal(ds.tau.shape)
    return model, replace(noisy, tau=noisy.tau + noise)


def test_base_model_dynamics_match_the_regressor(rigid_planar):
    """ddq of the base-parameter model inverts W(q, dq, ddq) theta = u (the model the IV
    loop simulates is the identified model)."""
    from robot_identification.identifiability import base_parameters
    from robot_identification.identification._iv import BaseModelDynamics
    model = rigid_planar[0]
    base = base_parameters(model)
    theta = base.base_values(model.nominal_parameters())
    dyn = BaseModelDynamics(model, base, theta)
    q, dq, u = np.array([0.3, -0.7]), np.array([0.8, -1.1]), np.array([40.0, -15.0])
    ddq = dyn.accelerations(q, dq, u)
    W = base.project(regressor(model, q[None], dq[None], ddq[None]))[0]
    np.testing.assert_allclose(W @ theta, u, atol=1e-9 * np.abs(u).max())


def test_iv_bias_is_well_below_ols_on_noisy_closed_loop_data(rigid_planar):
    model, ds = rigid_planar
    r = identify(model, ds, estimators=["ols", "iv"])
    truth = r.true_values          # base values of the simulator's standard parameters
    err = {e: np.linalg.norm(r.estimates[e].values - truth) / np.linalg.norm(truth)
           for e in ("ols", "iv")}
    iv = r.estimates["iv"]
    assert iv.details["converged"], iv.details
    assert err["iv"] < 0.4 * err["ols"], err
    assert np.all(np.isfinite(iv.std)) and iv.covariance.shape == (len(truth),) * 2


def test_iv_without_closed_loop_metadata_is_one_line_error(rigid_planar):
    model, ds = rigid_planar
    bare = replace(ds, metadata={})
    with pytest.raises(ConfigError, match="does not carry trajectory, rate_hz, kp, kd"):
        identify(model, bare, estimators=["iv"])
