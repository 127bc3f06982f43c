"""Drives off / braked samples (every joint's measured effort exactly 0.0 while the arm
moves, as a braked hardware robot or a real arm with its drives off records them): excluded
from the observation matrix with the filter's settling window on each side, named by the
``drives_off_rows`` diagnostic (docs/diagnostics.md, docs/ros.md).

Reference: the simulator's true parameters (torque-space error of the base parameters over
the clean recording's regressor), not our own output."""
import dataclasses

import numpy as np
import pytest

from robot_identification.data import Dataset
from robot_identification.errors import DataError
from robot_identification.excitation import trajectory_from_config
from robot_identification.identification import (
    Recording, identify, recording_normal_equations)
from robot_identification.identification._engine import reversal_window, stop_window
from robot_identification.model import load_robot
from robot_identification.simulation import Simulator, make_controller, simulate

BRAKED = (4.0, 4.6)        # [s] efforts zeroed while the arm moves on (up to 1.3 rad/s)


@pytest.fixture(scope="module")
def data():
    model = load_robot("puma560")
    ds = simulate(model, seed=0, snr_db=80, duration=10.0)
    sel = (ds.t >= BRAKED[0]) & (ds.t < BRAKED[1])

    def with_tau(value):
        tau = ds.tau.copy()
        tau[sel] = value
        return dataclasses.replace(ds, tau=tau)

    # 1e-300: the same wrong efforts, but not exactly zero, so not recognised (no mask)
    return model, ds, with_tau(0.0), with_tau(1e-300), int(sel.sum())


def _torque_error(result, gram, truth):
    """||W (theta - theta_true)|| / ||W theta_true|| over the clean recording's regressor."""
    d = np.asarray(result.estimate.values) - truth
    return float(np.sqrt(d @ gram @ d / (truth @ gram @ truth)))


def test_braked_rows_are_excluded_and_named(data):
    model, clean, braked, unmasked, n_braked = data
    r_clean = identify(model, clean)
    truth = np.asarray(r_clean.true_values)
    gram = r_clean.normal_equations.gram
    errors = {name: _torque_error(identify(model, ds), gram, truth) if name != "clean"
              else _torque_error(r_clean, gram, truth)
              for name, ds in (("clean", clean), ("unmasked", unmasked))}
    r = identify(model, braked)
    errors["masked"] = _torque_error(r, gram, truth)
    assert errors["unmasked"] > 10 * errors["clean"], errors      # the bias being fixed
    assert errors["masked"] <= 1.25 * errors["clean"], errors
    [d] = [d for d in r.diagnostics if d.code == "drives_off_rows"]
    assert d.severity == "warning"
    fs = 1.0 / np.median(np.diff(clean.t))
    w = max(reversal_window(fs, r.settings["cutoff_hz"], r.settings["filter_order"]),
            stop_window(fs, r.settings["cutoff_hz"], r.settings["filter_order"]))
    count = n_braked + 2 * w          # the braked samples and the settling window each side
    assert r.normal_equations.drives_off == count
    assert f"{count} of {clean.t.shape[0]} samples" in d.message
    assert r.settings["drives_off_margin_s"] == pytest.approx(w / fs)
    assert not [d for d in r_clean.diagnostics if d.code == "drives_off_rows"]
    assert "drives_off_margin_s" not in r_clean.settings


def _hardware_run(model, rate, brakes):
    """The study's excitation tracked by the config's PD at ``rate`` [Hz] on the core
    simulator, braked as hardware_robot brakes (nodes/_hardware.py: the arm held at once,
    zero effort) over the ``brakes`` intervals [s]; efforts published with the next state
    and read with half a period of lag, as read_bag(effort_lag=0.5) reads the study's
    bags."""
    traj = trajectory_from_config(model, {"type": "fourier", "base_frequency": 0.25,
                                          "harmonics": 5, "amplitude": 1.0, "seed": 1})
    sim = Simulator(model, rate_hz=rate, seed=0, quantise=False)
    ctrl = make_controller(model)
    t = np.arange(int(traj.duration * rate) + 1) / rate
    q_ref, dq_ref, _ = traj.evaluate(t)
    sim.reset(q_ref[0])
    q, dq, effort = (np.zeros((t.size, model.n)) for _ in range(3))
    for i in range(t.size):
        s = sim.state
        q[i], dq[i] = s.q, s.dq
        if i == t.size - 1:
            break
        if any(a <= t[i] < b for a, b in brakes):
            sim.reset(s.q, t0=s.t)      # held where it is, at rest
            sim.t = s.t + 1.0 / rate
            continue
        effort[i + 1] = u = ctrl(q_ref[i], dq_ref[i], {"q": s.q, "dq": s.dq})
        sim.step(u)
    tau = effort.copy()
    tau[:-1] = 0.5 * (effort[:-1] + effort[1:])
    return Dataset(t=t, q=q, dq=dq, tau=tau, joint_names=tuple(model.joint_names),
                   true_parameters=dict(zip(model.parameter_names,
                                            map(float, model.nominal_parameters()))))


def test_an_arm_stopped_at_once_is_left_out_with_its_acceleration_impulse():
    """A brake that holds a moving arm at once (the stand-in's brakes, 1.2 rad/s to rest in
    one period) is a velocity step: the filtered acceleration carries its impulse response
    farther than the torque step's settling window. Before (the step's window, 8 samples at
    250 Hz) the torque-space error was 2.8 x the unbraked run's; with the impulse's window
    (:func:`stop_window`, 17) 1.09 x. Reference: the simulator's true parameters. Both runs
    are fitted with the clean run's automatic stop velocity (the rows near rest the same
    rule; the data-driven raise of docs/diagnostics.md "How slow is at rest" off): this
    test is about the brake's window."""
    model = load_robot("puma560")
    clean = _hardware_run(model, 250.0, [])
    braked = _hardware_run(model, 250.0, [(1.5, 1.6), (2.7, 2.76)])
    assert np.abs(braked.dq[int(1.5 * 250) - 1]).max() > 1.0        # stopped while moving
    stop = tuple(identify(model, clean, estimator="ols").settings["stop_velocity"])
    s = dataclasses.replace(model.config.identification, stop_velocity=stop)
    r_clean = identify(model, clean, s)
    truth = np.asarray(r_clean.true_values)
    gram = r_clean.normal_equations.gram
    e_clean = _torque_error(r_clean, gram, truth)
    r = identify(model, braked, s)
    assert r.normal_equations.drives_off > 0
    assert _torque_error(r, gram, truth) <= 1.25 * e_clean


@pytest.mark.parametrize("strategy", ["butterworth", "polynomial"])
def test_streamed_equals_whole_recording(data, strategy):
    model, _, braked, _, _ = data
    s = dataclasses.replace(model.config.identification, preprocessing=strategy,
                            cutoff_hz=10.0, velocity_threshold=0.0)
    whole = recording_normal_equations(model, Recording.from_dataset(braked, model), s)
    parts = recording_normal_equations(
        model, Recording.from_dataset(braked, model, chunk=777), s)
    assert whole.drives_off > 0 and parts.drives_off == whole.drives_off
    assert parts.n_samples == whole.n_samples
    np.testing.assert_array_equal(parts.count, whole.count)
    assert np.abs(parts.G - whole.G).max() <= 1e-12 * np.abs(whole.G).max()
    assert np.abs(parts.b - whole.b).max() <= 1e-12 * np.abs(whole.b).max()


def test_all_braked_is_an_error(data):
    model, clean, *_ = data
    off = dataclasses.replace(clean, tau=np.zeros_like(clean.tau))
    with pytest.raises(DataError, match="drives off / braked"):
        identify(model, off)


def _at_rest_with_zero_effort(clean, n=200):
    q, tau = clean.q.copy(), clean.tau.copy()
    q[:n] = q[n]
    tau[:n] = 0.0
    return dataclasses.replace(clean, q=q, tau=tau)


def test_zero_effort_at_rest_under_gravity_is_braked(data):
    """At rest, zero effort where the arm needs a holding torque (pinocchio's gravity torque
    of the nominal model, 30 N*m on puma560's shoulder here): a brake holds it, as on the
    project's hardware-like robot, which stops the arm at once when it brakes."""
    model, clean, *_ = data
    neq = recording_normal_equations(
        model, Recording.from_dataset(_at_rest_with_zero_effort(clean), model))
    assert neq.drives_off > 200


def test_zero_effort_at_rest_without_gravity_is_kept(data, monkeypatch):
    """A gravity-free (or horizontal) arm at rest with zero effort is not braked."""
    from robot_identification.identification._engine import DrivesOff
    model, clean, *_ = data
    monkeypatch.setattr(DrivesOff, "_gravity", lambda self, q: np.zeros(model.n))
    neq = recording_normal_equations(
        model, Recording.from_dataset(_at_rest_with_zero_effort(clean), model))
    assert neq.drives_off == 0


def _online(model, ds, tau, scan=True):
    """OnlineIdentification fed ``ds`` with efforts ``tau`` in blocks of 100 samples;
    ``scan=False``: the drives-off scan switched off (the zeroed efforts taken as data)."""
    from robot_identification.identification import OnlineIdentification
    online = OnlineIdentification(model, ds.sample_rate)
    if not scan:
        restart = online._restart_filters

        def without_scan():
            restart()
            online.brakes.scan = lambda chunk: None
        online._restart_filters = without_scan
        without_scan()
    for s in range(0, ds.t.size, 100):
        online.push(ds.t[s:s + 100], ds.q[s:s + 100], tau[s:s + 100])
    online.finish()
    return online, online.estimate()


def test_online_identification_leaves_braked_samples_out_as_the_batch_engine(data):
    """The on-line (recursive, MRLS) identification gets the batch engine's rule through the
    same code (DrivesOff, drives_off_diagnostic): the zeroed efforts and the FIR bank's window
    before them (L samples) are left out and named; the estimate stays as close to the
    simulator's true parameters as on the clean recording, while taking them as data biases
    it. Reference: the simulator's true parameters (torque-space error over the clean
    stream's regressor)."""
    model, clean, braked, _, n_braked = data
    online, r_clean = _online(model, clean, clean.tau)
    truth = online.base.base_values(np.array(
        [clean.true_parameters[n] for n in model.parameter_names]))
    gram = online.neq.gram
    e_clean = _torque_error(r_clean, gram, truth)
    taken, r_taken = _online(model, braked, braked.tau, scan=False)
    e_taken = _torque_error(r_taken, gram, truth)
    left_out, r = _online(model, braked, braked.tau)
    e_left_out = _torque_error(r, gram, truth)
    print(f"on-line MRLS, torque-space error against the true parameters: clean "
          f"{e_clean:.4f}, braked samples taken as data {e_taken:.4f}, left out "
          f"{e_left_out:.4f}")
    assert taken.neq.drives_off == 0 and e_taken > 1.5 * e_clean, (e_taken, e_clean)
    assert e_left_out <= 1.1 * e_clean, (e_left_out, e_clean)
    count = n_braked + int(online.bank.L)     # a causal bank: its window after each one
    assert left_out.neq.drives_off == count == r.settings["drives_off"]
    [d] = [d for d in r.diagnostics if d.code == "drives_off_rows"]
    assert d.severity == "warning" and f"{count} of {r.n_samples} samples" in d.message
    assert not [d for d in r_clean.diagnostics if d.code == "drives_off_rows"]


def test_online_identification_refuses_a_stream_with_the_drives_off_throughout(data):
    model, clean, *_ = data
    part = slice(0, 2000)
    from robot_identification.identification import OnlineIdentification
    online = OnlineIdentification(model, clean.sample_rate)
    online.push(clean.t[part], clean.q[part], np.zeros_like(clean.tau[part]))
    online.finish()
    with pytest.raises(DataError, match="drives off"):
        online.estimate()
