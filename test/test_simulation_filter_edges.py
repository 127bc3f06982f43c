"""Zero-phase filtering at the record ends (matters for simulated runs that end moving)."""
import numpy as np

from robot_identification.signal import central_difference, lowpass_filtfilt


def test_filtered_acceleration_has_no_end_transient():
    """A motion still moving at the end keeps its acceleration after 20 Hz filtfilt.

    x(t) = 0.3 sin(2 pi 0.4 t) + 0.05 t on [0, 2.5] s at 1 kHz ends with zero curvature and
    non-zero slope (the odd extension of filtfilt is then exact), so any error at the ends
    is the filter's start-up transient. With scipy's default padding (21 samples for order 5)
    the last samples were off by up to 37 rad/s^2; the padding now spans ten cut-off periods.
    """
    fs = 1000.0
    t = np.arange(0, 2.5 + 1e-9, 1 / fs)
    w = 2 * np.pi * 0.4
    x = 0.3 * np.sin(w * t) + 0.05 * t
    xf = lowpass_filtfilt(x, fs, 20.0, 5)
    acc = central_difference(central_difference(xf, 1 / fs), 1 / fs)
    exact = -0.3 * w ** 2 * np.sin(w * t)
    inner = slice(3, -3)          # one-sided differences at the very ends
    assert np.max(np.abs(acc[inner] - exact[inner])) < 1e-3


def test_short_signal_still_filtered():
    x = np.sin(np.linspace(0, 3, 60))
    y = lowpass_filtfilt(x, 1000.0, 20.0, 5)
    assert y.shape == x.shape and np.all(np.isfinite(y))
