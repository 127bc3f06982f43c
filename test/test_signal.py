"""Signal processing: zero-phase filtering and differentiation on analytic signals."""
import numpy as np
import pytest

from robot_identification.errors import DataError
from robot_identification.signal import (
    central_difference, lowpass_filtfilt, savgol_derivative, velocity_mask)


def test_filtfilt_is_zero_phase_and_removes_high_frequency():
    fs = 1000.0
    t = np.arange(0, 4, 1 / fs)
    slow = np.sin(2 * np.pi * 1.0 * t)
    x = slow + 0.2 * np.sin(2 * np.pi * 150 * t)
    y = lowpass_filtfilt(x[:, None], fs, 20.0, 5)[:, 0]
    core = slice(500, -500)
    np.testing.assert_allclose(y[core], slow[core], atol=2e-3)


def test_filter_rejects_bad_cutoff_and_short_signal():
    with pytest.raises(DataError, match="Nyquist"):
        lowpass_filtfilt(np.zeros((100, 1)), 100.0, 60.0)
    with pytest.raises(DataError, match="too few"):
        lowpass_filtfilt(np.zeros((10, 1)), 1000.0, 20.0)


def test_derivatives_exact_on_polynomials():
    fs = 200.0
    t = np.arange(0, 1, 1 / fs)
    x = 3 * t ** 2 - t + 0.5
    np.testing.assert_allclose(central_difference(x, 1 / fs)[1:-1], (6 * t - 1)[1:-1], atol=1e-10)
    d = savgol_derivative(x, fs, 0.05, 3)
    np.testing.assert_allclose(d, 6 * t - 1, atol=1e-8)


def test_velocity_mask():
    v = np.array([[1.0, 0.6], [0.1, 2.0], [-0.7, -0.5]])
    assert velocity_mask(v, 0.5).tolist() == [True, False, True]
    assert velocity_mask(v, 0.0).all()
