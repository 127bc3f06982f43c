"""Recorded velocities that are the positions' derivative (a driver's or the user's
``np.gradient``) are not filtered as measurements: their noise is the positions' noise
differentiated, and the zero-phase filter's odd extension pins their noisy end samples; the
velocity and acceleration of those joints come from the filtered positions. A velocity with
noise of its own is still used. Reference: the noise-free velocity of the trajectory."""
from dataclasses import replace

import numpy as np
from conftest import make_model

from robot_identification.data import Dataset
from robot_identification.identification._preprocessing import preprocess
from robot_identification.signal import velocity_noise_from_positions


def _run():
    model = make_model("rigid")
    n, fs = model.n, 1000.0
    t = np.arange(20000) / fs
    rng = np.random.default_rng(0)
    w = 2 * np.pi * np.array([0.1, 0.3, 0.5])
    amp = rng.uniform(0.2, 0.5, (3, n))
    q0, dq0 = np.sin(np.outer(t, w)) @ amp, (np.cos(np.outer(t, w)) * w) @ amp
    q = q0 + 3e-3 * rng.standard_normal(q0.shape)       # noisy encoder, 1 kHz
    return model, t, q, dq0, 0.1 * rng.standard_normal(q0.shape), rng


def test_a_velocity_differentiated_from_the_positions_is_not_filtered_as_measured():
    model, t, q, dq0, tau, rng = _run()
    s = replace(model.config.identification, cutoff_hz=3.0, friction_deadband=0.0,
                stop_velocity=0.0)
    names = list(model.joint_names)
    gradient = np.gradient(q, t, axis=0)
    assert velocity_noise_from_positions(gradient, q, t).all()
    got, _ = preprocess(model, Dataset(t=t, q=q, dq=gradient, tau=tau, joint_names=names), s)
    ref, _ = preprocess(model, Dataset(t=t, q=q, tau=tau, joint_names=names), s)
    np.testing.assert_array_equal(got["dq"], ref["dq"])
    np.testing.assert_array_equal(got["ddq"], ref["ddq"])
    # against the true velocity over the whole run, ends included: 0.045 rad/s (9.2 when the
    # recorded gradient was filtered, its end samples pinned by the odd extension)
    assert np.abs(got["dq"] - dq0).max() < 0.2
    # a velocity with white noise of its own is still the one filtered
    own = dq0 + 0.05 * rng.standard_normal(dq0.shape)
    assert not velocity_noise_from_positions(own, q, t).any()
    measured, _ = preprocess(model, Dataset(t=t, q=q, dq=own, tau=tau, joint_names=names), s)
    assert np.abs(measured["dq"] - ref["dq"]).max() > 1e-3
