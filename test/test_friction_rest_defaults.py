"""Friction at rest and defaults for a new robot: Coulomb sign deadband (same in
identification and prediction), automatic cut-off and deadband, ``rotor_inertia: null``."""
from dataclasses import replace

import numpy as np
import pytest
from conftest import make_model, spatial_arm_config, spatial_arm_urdf

from robot_identification.data import Dataset
from robot_identification.errors import ConfigError
from robot_identification.model import RobotModel, parse_robot_config
from robot_identification.identification import identify
from robot_identification.identification import resolve_settings
from robot_identification.regressor import regressor
from robot_identification.regressor._regressor import coulomb_sign


def test_coulomb_sign_deadband_ramp():
    v = np.array([[-1.0, 0.0], [-0.005, 1e-4], [0.02, -0.02]])
    np.testing.assert_array_equal(coulomb_sign(v), np.sign(v))
    np.testing.assert_allclose(coulomb_sign(v, [0.01, 0.0]),
                               [[-1.0, 0.0], [-0.5, 1.0], [1.0, -1.0]])


def test_config_auto_null_and_errors():
    cfg = spatial_arm_config()
    assert parse_robot_config(cfg).identification.cutoff_hz == "auto"
    assert parse_robot_config(cfg).identification.friction_deadband == "auto"
    assert parse_robot_config(cfg).identification.stop_velocity == "auto"
    cfg["identification"] = {"cutoff_hz": None, "friction_deadband": 0.0, "stop_velocity": 0.0}
    s = parse_robot_config(cfg).identification
    assert s.cutoff_hz is None and s.friction_deadband == 0.0 and s.stop_velocity == 0.0
    for bad in ({"cutoff_hz": "fast"}, {"friction_deadband": None},
                {"friction_deadband": -1.0}, {"stop_velocity": -0.1}):
        cfg["identification"] = bad
        with pytest.raises(ConfigError, match="identification"):
            parse_robot_config(cfg)


def test_rotor_inertia_null_means_no_rotor_column():
    cfg = spatial_arm_config()
    for j in cfg["joints"]:
        j["drive"]["rotor_inertia"] = None
    model = RobotModel(parse_robot_config(cfg), urdf_xml=spatial_arm_urdf())
    assert not any(nm.endswith(".rotor_inertia") for nm in model.parameter_names)
    cfg["joints"][0]["drive"]["rotor_inertia"] = 0.01      # one motor: one non-zero column
    model = RobotModel(parse_robot_config(cfg), urdf_xml=spatial_arm_urdf())
    rng = np.random.default_rng(0)
    Y = regressor(model, *(rng.standard_normal((5, model.n)) for _ in range(3)))
    cols = [model.parameter_names.index(f"joint{k}.rotor_inertia") for k in range(1, 6)]
    assert np.abs(Y[:, :, cols[0]]).max() > 0 and np.all(Y[:, :, cols[1:]] == 0)
    el = spatial_arm_config(model="elastic")
    el["joints"][2]["drive"]["rotor_inertia"] = None
    with pytest.raises(ConfigError, match="elastic joints need a motor rotor.*joint3"):
        parse_robot_config(el)


def test_automatic_cutoff_and_deadband_from_the_recordings():
    model = make_model("rigid")
    rec = {"sample_rate": 1000.0, "band_hz": 0.5, "velocity_measured": True,
           "velocity_noise": np.full(5, 0.01), "velocity_rms": np.ones(5)}
    s = resolve_settings(model, model.config.identification, [rec])
    assert s.cutoff_hz == pytest.approx(2.5)
    # measured velocity: white noise, sqrt(2 f_c / f_s) of it is left after the filter
    np.testing.assert_allclose(s.friction_deadband, 3 * 0.01 * np.sqrt(5 / 1000), rtol=1e-2)
    rec2 = dict(rec, velocity_measured=False, velocity_noise=np.full(5, 1000.0))
    s2 = resolve_settings(model, model.config.identification, [rec2])
    np.testing.assert_allclose(s2.friction_deadband, 0.1)    # capped at 0.1 x velocity RMS
    static = dict(rec, band_hz=0.0)
    assert resolve_settings(model, model.config.identification, [static]).cutoff_hz == 50.0
    # stop velocity: 2 % of the velocity RMS, at least the deadband
    np.testing.assert_allclose(s.stop_velocity, 0.02)
    np.testing.assert_allclose(s2.stop_velocity, 0.1)


def test_automatic_cutoff_follows_the_signal_band_of_the_noisiest_recording():
    model = make_model("rigid")
    rec = {"sample_rate": 1000.0, "band_hz": 0.5, "signal_hz": 30.0, "velocity_measured": True,
           "velocity_noise": np.full(5, 0.01), "velocity_rms": np.ones(5)}
    auto = model.config.identification
    assert resolve_settings(model, auto, [rec]).cutoff_hz == 30.0
    noisy = dict(rec, signal_hz=1.0)            # buried in noise: 5 x the excitation band
    assert resolve_settings(model, auto, [rec, noisy]).cutoff_hz == 2.5
    clean = dict(rec, signal_hz=500.0)          # at most 0.2 x the sampling rate
    assert resolve_settings(model, auto, [clean]).cutoff_hz == 200.0


def test_deadband_is_the_same_in_identification_and_prediction():
    """Validating on the identification data reproduces the fit's residual exactly (all rows
    used): the results file carries the resolved cut-off and deadband and prediction uses
    them."""
    from robot_identification.identification import settings_from_results
    from robot_identification.validation import validate
    model = make_model("rigid", prismatic=False)
    rng = np.random.default_rng(3)
    t = np.arange(0, 8, 2e-3)
    w = rng.uniform(0.3, 1.0, model.n)
    q = np.sin(np.outer(t, w))
    dq = w * np.cos(np.outer(t, w))
    dq_meas = np.round(dq / 1e-3) * 1e-3                         # quantised velocity
    ddq = -w ** 2 * np.sin(np.outer(t, w))
    tau = regressor(model, q, dq, ddq) @ model.nominal_parameters()
    tau += 0.01 * rng.standard_normal(tau.shape)
    ds = Dataset(t=t, q=q, dq=dq_meas, tau=tau, joint_names=model.joint_names)
    res = identify(model, ds, replace(model.config.identification, drop_reversals=False))
    dead = res.settings["friction_deadband"]
    assert all(d > 0 for d in dead) and res.settings["cutoff_hz"] > 0
    doc = {"settings": res.settings}
    s = settings_from_results(model, doc)
    files = validate(model, res.base, {"fit": res.estimate.values}, [ds], s)
    rms = [j["rms"] for j in files[0]["models"]["fit"]["joints"]]
    np.testing.assert_allclose(rms, res.estimate.residual_rms, rtol=1e-6)
    # plain sign(v) at prediction time would not reproduce it
    other = validate(model, res.base, {"fit": res.estimate.values}, [ds],
                     replace(s, friction_deadband=0.0), rest_velocity=0.0)
    rms0 = [j["rms"] for j in other[0]["models"]["fit"]["joints"]]
    assert not np.allclose(rms0, res.estimate.residual_rms, rtol=1e-4)


def test_friction_model_per_joint():
    """joints[k].friction_model overrides friction.model: the union of the terms is in the
    layout, a joint's missing terms are zero columns (left out of the base parameters), and
    exact data of that mixed model are fitted exactly."""
    from robot_identification.identifiability import base_parameters
    cfg = spatial_arm_config(friction="coulomb_viscous")
    cfg["joints"][1]["friction_model"] = "static"
    cfg["joints"][3]["friction_model"] = "viscous"
    model = RobotModel(parse_robot_config(cfg), urdf_xml=spatial_arm_urdf(prismatic=False))
    assert model.joint_friction_models()[:4] == ("coulomb_viscous", "static",
                                                 "coulomb_viscous", "viscous")
    keys = model.drive_parameter_keys()
    assert {"coulomb", "stiction", "stribeck", "viscous"} <= set(keys)
    rng = np.random.default_rng(0)
    Y = regressor(model, *(rng.standard_normal((50, model.n)) for _ in range(3)))
    names = model.parameter_names
    col = names.index
    assert np.all(Y[:, :, col("joint2.coulomb")] == 0)
    assert np.abs(Y[:, :, col("joint2.stiction")]).max() > 0
    assert np.all(Y[:, :, col("joint1.stiction")] == 0)
    assert np.all(Y[:, :, col("joint4.coulomb")] == 0)
    assert np.all(Y[:, :, col("joint4.stribeck")] == 0)
    base = base_parameters(model)
    for absent in ("joint2.coulomb", "joint1.stiction", "joint4.coulomb", "joint4.stiction"):
        assert absent not in base.names
    with pytest.raises(ConfigError, match="friction_model"):
        bad = spatial_arm_config()
        bad["joints"][0]["friction_model"] = "stribeck"
        parse_robot_config(bad)


def test_deadband_of_a_velocity_differentiated_from_the_positions():
    """A recorded velocity that is the positions' derivative (np.gradient, as a driver or a
    user computes it) has the positions' noise differentiated (spectrum ~ f^2), not white
    noise: after the low-pass far less of it is left, and the automatic deadband is that of
    the positions' path; a velocity with white noise of its own keeps the white-noise share.
    Reference: the noise actually left in the filtered velocity (filtered noise alone)."""
    from robot_identification.diagnostics import recording_summary
    from robot_identification.signal import lowpass_filtfilt
    model = make_model("rigid")
    n, fs, fc = model.n, 1000.0, 5.0
    t = np.arange(20000) / fs
    rng = np.random.default_rng(0)
    w = 2 * np.pi * np.array([0.1, 0.3, 0.5])
    amp = rng.uniform(0.2, 0.5, (3, n))
    q0, dq0 = np.sin(np.outer(t, w)) @ amp, (np.cos(np.outer(t, w)) * w) @ amp
    q = q0 + 1e-4 * rng.standard_normal(q0.shape)
    tau = 0.1 * rng.standard_normal(q0.shape)
    settings = replace(model.config.identification, cutoff_hz=fc)

    def resolved(dq):
        ds = Dataset(t=t, q=q, dq=dq, tau=tau, joint_names=list(model.joint_names))
        summary = recording_summary(model, ds)
        return summary, np.asarray(resolve_settings(model, settings, [summary]).friction_deadband)

    def left(noise):                       # std of the noise left after the low-pass
        return np.std(lowpass_filtfilt(noise, fs, fc, 4)[2000:-2000], axis=0)

    gradient = np.gradient(q, t, axis=0)
    summary, dead = resolved(gradient)
    assert not summary["velocity_noise_white"].any()
    _, from_positions = resolved(None)
    np.testing.assert_allclose(dead, from_positions, rtol=0.05)
    # the f^2 share (2 f_c / f_s)^1.5 of the raw noise std: 0.3-0.45 x the noise left here;
    # with the white-noise share it was fs / (2 fc) = 100 x larger
    ratio = dead / 3 / left(gradient - np.gradient(q0, t, axis=0))
    assert np.all((ratio > 0.2) & (ratio < 1.5)), ratio
    white = 1e-3 * rng.standard_normal(q0.shape)
    summary, dead = resolved(dq0 + white)
    assert summary["velocity_noise_white"].all()
    np.testing.assert_allclose(dead / 3, left(white), rtol=0.2)
