"""Torque prediction at rest and at reversals: the Coulomb ramp of validate/report/--select
extends to the stop velocity where identification dropped the friction rows of stopped joints
(validation.prediction_deadband) and is filtered like the measured torque
(validation.filtered_coulomb)."""
from dataclasses import replace

import numpy as np
import pytest

from robot_identification.model import load_robot
from robot_identification.identification import identify
from robot_identification.simulation import simulate
from robot_identification.identification import prediction_deadband, settings_from_results
from robot_identification.validation import validate

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def puma():
    model = load_robot("puma560")
    run = simulate(model, duration=4.0, seed=0)
    s = replace(model.config.identification, velocity_threshold=0.0, cutoff_hz=20.0,
                friction_deadband="auto", stop_velocity="auto", drop_reversals=True)
    return model, run, s, identify(model, run, s)


def test_ramp_to_the_stop_velocity_is_the_column_identification_fitted(puma):
    """Every row identification uses has |v| >= the stop velocity, where the ramp of width
    stop velocity is sign(v): fitting with that ramp instead of the noise deadband gives the
    same estimate, so predicting with it is consistent with the fit."""
    model, run, s, res = puma
    stop = tuple(res.settings["stop_velocity"])
    assert np.all(np.array(stop) > np.array(res.settings["friction_deadband"]))
    wide = identify(model, run, replace(s, friction_deadband=stop, stop_velocity=stop))
    np.testing.assert_allclose(wide.estimate.values, res.estimate.values, rtol=1e-9,
                               atol=1e-12)
    assert wide.n_used_rows == res.n_used_rows
    got = prediction_deadband(model, settings_from_results(model, {"settings": res.settings}))
    np.testing.assert_allclose(got, stop)


def test_no_wider_ramp_where_no_rows_were_dropped(puma):
    model, _, s, _ = puma
    dead, stop = (1e-3,) * model.n, (1e-2,) * model.n
    r = replace(s, friction_deadband=dead, stop_velocity=stop)
    np.testing.assert_allclose(prediction_deadband(model, r), stop)
    for other in (replace(r, drop_reversals=False), replace(r, cutoff_hz=None)):
        np.testing.assert_allclose(prediction_deadband(model, other), dead)
    doc = {"settings": {"friction_deadband": list(dead), "stop_velocity": list(stop),
                        "drop_reversals": False, "cutoff_hz": 20.0}}
    np.testing.assert_allclose(prediction_deadband(model, settings_from_results(model, doc)),
                               dead)
    older = {"settings": {"friction_deadband": list(dead), "cutoff_hz": 20.0}}   # no stops
    np.testing.assert_allclose(prediction_deadband(model, settings_from_results(model, older)),
                               dead)


def test_validate_predicts_no_coulomb_torque_on_a_joint_creeping_at_rest(puma):
    """A hold whose measured velocity wanders below the stop velocity (+-0.3 x, in 0.5 s
    blocks): the predicted torque is gravity (pinocchio) + viscous + 0.3 x the Coulomb level,
    not gravity +- f_c on the sign of that velocity."""
    import pinocchio as pin
    model, run, s, res = puma
    fit = settings_from_results(model, {"settings": res.settings})
    n, N, B = model.n, 2000, 500
    q = np.tile(run.q[0], (N, 1))
    stop = np.array(res.settings["stop_velocity"])
    sign = np.repeat([1.0, -1.0, 1.0, -1.0], B)[:, None]
    data = replace(run, t=np.arange(N) * 1e-3, q=q, dq=0.3 * stop * sign, ddq=None,
                   tau=np.zeros((N, n)), theta=None, metadata=dict(run.metadata, source="hold"))
    files = validate(model, res.base, {"truth": res.true_values}, [data], fit,
                     keep_signals=True)
    pred = files[0]["signals"]["predicted"]["truth"]
    g = pin.computeGeneralizedGravity(model.pin_model, model.pin_model.createData(),
                                      model.pin_configuration(q[0]))[model.velocity_indices]
    fc = np.array([j.drive["coulomb"] for j in model.config.joints])
    fv = np.array([j.drive["viscous"] for j in model.config.joints])
    inner = np.concatenate([np.arange(k * B + 150, (k + 1) * B - 150) for k in range(4)])
    want = g + (fv + fc / stop) * 0.3 * stop * sign[inner]
    assert np.all(np.abs(pred[inner] - want) < 0.05 * fc)    # sign(v) friction: 0.7 f_c off


def test_validate_predicts_the_filtered_coulomb_step_at_reversals(puma):
    """Torque computed independently (pinocchio rnea + armature + f_v v + f_c sign(v)) on an
    exact sinusoidal motion with reversals, then filtered by validate like any measured
    torque: the truth predicts it to a small fraction of f_c, also at the reversals, where the
    sign of the filtered velocity is a step the filtered measurement does not have."""
    import pinocchio as pin
    model, run, s, res = puma
    fit = settings_from_results(model, {"settings": res.settings})
    t = np.arange(0.0, 4.0, 1e-3)
    w = 2 * np.pi * np.array([0.5, 0.4, 0.6, 0.7, 0.55, 0.45])
    q = run.q[0] + 0.3 * np.sin(w * t[:, None])
    dq = 0.3 * w * np.cos(w * t[:, None])
    ddq = -0.3 * w ** 2 * np.sin(w * t[:, None])
    pm = model.pin_model
    data = pm.createData()
    joints = model.config.joints
    arm = np.array([j.drive["rotor_inertia"] for j in joints]) * model.gear_ratios ** 2
    fv = np.array([j.drive["viscous"] for j in joints])
    fc = np.array([j.drive["coulomb"] for j in joints])
    tau = np.array([pin.rnea(pm, data, model.pin_configuration(a), b, c)[model.velocity_indices]
                    for a, b, c in zip(q, dq, ddq)]) + arm * ddq + fv * dq + fc * np.sign(dq)
    rec = replace(run, t=t, q=q, dq=dq, ddq=ddq, tau=tau, theta=None,
                  metadata=dict(run.metadata, source="exact"))
    f = validate(model, res.base, {"truth": res.true_values}, [rec], fit, keep_signals=True)[0]
    err = f["signals"]["predicted"]["truth"] - f["signals"]["measured"]
    inner = slice(200, -200)                 # the filter's start and end transients
    # 0.03-0.08 f_c (the ramp below the stop velocity); the sign of the filtered velocity
    # (the column before filtered_coulomb) leaves 0.36-0.92 f_c at the reversals
    assert np.all(np.abs(err[inner]).max(axis=0) < 0.1 * fc)
