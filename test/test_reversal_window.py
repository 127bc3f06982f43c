"""``reversal_window``: how long around a velocity reversal or stop the friction rows are
dropped (``drop_reversals``) - the filter's settling time (``auto``, the default) or a time
in seconds (0: the stop rows only). The settling time is checked against scipy's own step
response of the zero-phase filter, not against the engine's numbers."""
from dataclasses import replace

import numpy as np
import pytest
import scipy.signal
from conftest import make_model, spatial_arm_config

from robot_identification.data import Dataset
from robot_identification.errors import ConfigError
from robot_identification.identifiability import base_parameters
from robot_identification.identification import (
    Recording, recording_normal_equations, solve)
from robot_identification.identification._engine import reversal_window_samples
from robot_identification.model import parse_robot_config

FS = 200.0


def test_config_reversal_window_auto_number_and_errors():
    cfg = spatial_arm_config()
    assert parse_robot_config(cfg).identification.reversal_window == "auto"
    cfg["identification"] = {"reversal_window": 0.0}
    assert parse_robot_config(cfg).identification.reversal_window == 0.0
    for bad in (-0.1, "long", float("nan")):
        cfg["identification"] = {"reversal_window": bad}
        with pytest.raises(ConfigError, match="reversal_window"):
            parse_robot_config(cfg)


def test_reversal_window_auto_is_the_filter_settling_time():
    model = make_model("rigid", prismatic=False)
    s = replace(model.config.identification, cutoff_hz=5.0, filter_order=4)
    x = np.r_[np.zeros(400), np.ones(400)]
    sos = scipy.signal.butter(4, 5.0, fs=FS, output="sos")
    late = np.flatnonzero(np.abs(scipy.signal.sosfiltfilt(sos, x) - x) > 0.05)
    assert reversal_window_samples(s, FS) == max(400 - late.min(), late.max() - 400 + 1)
    assert reversal_window_samples(replace(s, reversal_window=0.05), FS) == 10
    assert reversal_window_samples(replace(s, reversal_window=0.0), FS) == 0
    with pytest.raises(ConfigError, match="reversal_window"):
        reversal_window_samples(replace(s, reversal_window=-1.0), FS)


def test_shorter_window_keeps_more_rows_and_is_recorded():
    model = make_model("rigid", prismatic=False)
    t = np.arange(0.0, 8.0, 1.0 / FS)
    rng = np.random.default_rng(3)
    w = 2 * np.pi * rng.uniform(0.3, 0.8, model.n)
    amp = rng.uniform(0.5, 1.0, model.n)
    q = amp * np.sin(np.outer(t, w))                    # every joint reverses
    tau = rng.normal(size=q.shape)                      # rows only: the fit is not checked
    ds = Dataset(t=t, q=q, tau=tau, joint_names=list(model.joint_names))
    base = base_parameters(model)
    got = {}
    for win in ("auto", 0.05, 0.0):
        s = replace(model.config.identification, cutoff_hz=5.0, filter_order=4,
                    friction_deadband=0.0, stop_velocity=0.02, reversal_window=win)
        neq = recording_normal_equations(model, Recording.from_dataset(ds, model), s,
                                         base=base)
        got[win] = solve(model, neq, s, base=base, estimators=("ols",)).settings
    assert got[0.05]["reversal_window_s"] == 0.05 and got[0.0]["reversal_window_s"] == 0.0
    assert got["auto"]["reversal_window_s"] > 0.05
    assert (got["auto"]["reversal_fraction"] > got[0.05]["reversal_fraction"]
            > got[0.0]["reversal_fraction"] > 0)
