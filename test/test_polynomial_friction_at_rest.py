"""Friction at rest on the polynomial-approximation (PA) path: a joint that reverses and one
that stops and holds. The PA estimate at t - t_d projects the window [t - T, t], so the Coulomb
step of the torque is smeared over T while sign(v) of the filtered velocity stays a step, and
at a hold the filtered velocity is rounding noise around 0 whose sign decides a full Coulomb
term the torque does not have. Independent reference: pinocchio rnea + armature + explicit
Coulomb/viscous friction of the true parameters; the error is measured against them."""
from dataclasses import replace

import numpy as np
import pinocchio as pin
import pytest
from conftest import make_model

from robot_identification.data import Dataset
from robot_identification.identifiability import base_parameters
from robot_identification.identification import (
    Recording, recording_normal_equations, solve, true_base_values)

pytestmark = pytest.mark.slow

FS = 1000.0


def _smoothstep(x):
    x = np.clip(x, 0.0, 1.0)
    return x ** 3 * (10 - 15 * x + 6 * x ** 2), 30 * x ** 2 * (1 - x) ** 2, \
        60 * x * (1 - x) * (1 - 2 * x)


def _torques(model, pi, q, dq, ddq):
    """pinocchio rnea with armature + offset + viscous + Coulomb sign(v) (sign(0) = 0: a held
    joint carries no friction torque here, one value of [-f_c, f_c])."""
    pm = model.pin_model.copy()
    drive = dict(zip(model.layout.names, pi))
    arm = np.zeros(pm.nv)
    for k, jn in enumerate(model.joint_names):
        arm[model._idx_v[k]] = drive[f"{jn}.rotor_inertia"] * model.gear_ratios[k] ** 2
    pm.armature = arm
    data = pm.createData()
    tau = np.array([model.from_pin_v(pin.rnea(pm, data, model.pin_configuration(a),
                                              model.to_pin_v(b), model.to_pin_v(c)))
                    for a, b, c in zip(q, dq, ddq)])
    for k, jn in enumerate(model.joint_names):
        tau[:, k] += (drive[f"{jn}.viscous"] * dq[:, k] + drive[f"{jn}.offset"]
                      + drive[f"{jn}.coulomb"] * np.sign(dq[:, k]))
    return tau


@pytest.fixture(scope="module")
def stop_and_go():
    model = make_model("rigid", prismatic=False)
    t = np.arange(0.0, 6.0, 1.0 / FS)
    rng = np.random.default_rng(4)
    w = 2 * np.pi * rng.uniform(0.4, 1.2, model.n)
    phase = rng.uniform(0, 2 * np.pi, model.n)
    amp = rng.uniform(0.6, 1.2, model.n)
    q = amp * np.sin(np.outer(t, w) + phase)            # every joint reverses
    dq = amp * w * np.cos(np.outer(t, w) + phase)
    ddq = -amp * w ** 2 * np.sin(np.outer(t, w) + phase)
    # joint 2: point to point, 0.5 s moves between 0.5 s holds (velocity exactly 0)
    cycle = np.mod(t, 2.0)
    up, down = (cycle - 0.5) / 0.5, (cycle - 1.5) / 0.5
    s1, v1, a1 = _smoothstep(up)
    s2, v2, a2 = _smoothstep(down)
    q[:, 1] = 1.2 * (s1 - s2) - 0.6
    dq[:, 1] = 1.2 * 2.0 * (v1 - v2)
    ddq[:, 1] = 1.2 * 4.0 * (a1 - a2)
    pi = model.nominal_parameters()
    tau = _torques(model, pi, q, dq, ddq)
    ds = Dataset(t=t, q=q, tau=tau, joint_names=list(model.joint_names),
                 true_parameters=dict(zip(model.parameter_names, pi)))
    return model, ds


def _pa(model, ds, chunk=None, **kw):
    s = replace(model.config.identification, preprocessing="polynomial", pa_window=0.044,
                pa_degree=1, velocity_threshold=0.0, friction_deadband=0.0, **kw)
    base = base_parameters(model)
    neq = recording_normal_equations(model, Recording.from_dataset(ds, model, chunk=chunk),
                                     s, base=base)
    return neq, solve(model, neq, s, base=base, estimators=("ols",))


def test_pa_rows_near_reversals_and_stops_are_dropped(stop_and_go):
    model, ds = stop_and_go
    truth = true_base_values(model, base_parameters(model), ds.true_parameters)
    _, kept = _pa(model, ds, drop_reversals=False)
    _, dropped = _pa(model, ds)
    assert kept.settings["reversal_fraction"] == dropped.settings["reversal_fraction"] > 0.05
    assert np.allclose(kept.true_values, truth) and np.allclose(dropped.true_values, truth)
    assert kept.normalised_mean_error() > 5 * dropped.normalised_mean_error()
    codes = {d.code: d for d in dropped.diagnostics}
    assert "polynomial" in codes["samples_dropped"].message
    assert "coulomb_filter_smear" in {d.code for d in kept.diagnostics}


def test_pa_reversal_rows_do_not_depend_on_the_chunks(stop_and_go):
    model, ds = stop_and_go
    whole, _ = _pa(model, ds)
    for chunk in (97, 1000):
        parts, _ = _pa(model, ds, chunk=chunk)
        assert parts.n_samples == whole.n_samples
        assert tuple(parts.reversal_counts) == tuple(whole.reversal_counts)
        np.testing.assert_array_equal(parts.count, whole.count)
        assert np.abs(parts.G - whole.G).max() <= 1e-12 * np.abs(whole.G).max()


def test_online_blocks_drop_the_same_rows_as_the_streamed_recording(stop_and_go):
    """OnlineIdentification in blocks of 100 samples (then finish()) = identify_streaming
    (mrls) on the whole recording: same dropped fraction, same estimate."""
    from robot_identification.identification import OnlineIdentification
    from robot_identification.streaming import identify_streaming
    from robot_identification.identification import iter_dataset_chunks
    model, ds = stop_and_go
    ref = identify_streaming(model, iter_dataset_chunks(ds, 1000), estimator="mrls")
    online = OnlineIdentification(model, FS, settings_window=10.0)
    for s in range(0, ds.n_samples, 100):
        online.push(ds.t[s:s + 100], ds.q[s:s + 100], ds.tau[s:s + 100])
    online.finish()
    est = online.estimate()
    assert est.settings["stop_velocity"] == ref.settings["stop_velocity"]
    assert est.settings["reversal_fraction"] == ref.settings["reversal_fraction"] > 0.05
    np.testing.assert_allclose(est.estimate.values, ref.estimate.values, rtol=1e-8,
                               atol=1e-9 * np.abs(ref.estimate.values).max())
    assert "samples_dropped" in {d.code for d in est.diagnostics}
