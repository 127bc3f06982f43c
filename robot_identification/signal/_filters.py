"""Filters, numerical differentiation and sample selection for measured motion data."""
from __future__ import annotations

import functools

import numpy as np
import scipy.signal
from scipy.ndimage import maximum_filter1d

from robot_identification.errors import DataError


@functools.lru_cache(maxsize=64)
def _butter(order, cutoff, fs):
    return scipy.signal.butter(order, cutoff, fs=fs, output="sos")


def butter_sos(order, cutoff, fs):
    """Second-order sections (n_sections, 6) of ``scipy.signal.butter(order, cutoff, fs=fs,
    output='sos')``, designed once per (order, cutoff [Hz], fs [Hz]) (a copy is returned)."""
    return _butter(int(order), float(cutoff), float(fs)).copy()


def lowpass_filtfilt(x, fs, cutoff, order=5, axis=0):
    """Zero-phase Butterworth low-pass (forward-backward, second-order sections).

    Parameters
    ----------
    x : array_like, shape (N, ...)
        Signal, time along ``axis``.
    fs : float
        Sampling rate [Hz].
    cutoff : float
        -3 dB cut-off of the single pass [Hz]; must be below fs / 2.
    order : int
        Butterworth order of the single pass (Zollo et al. 2014 used 5 at 20 Hz).

    Returns
    -------
    ndarray, same shape as x

    Raises
    ------
    DataError
        Cut-off not below Nyquist, or too few samples for the filter's padding.
    """
    x = np.asarray(x, dtype=float)
    if not 0 < cutoff < fs / 2:
        raise DataError(f"filter cut-off {cutoff} Hz must lie in (0, {fs / 2}) Hz "
                        f"(Nyquist of fs = {fs} Hz)")
    sos = butter_sos(order, cutoff, fs)
    padlen = 3 * (2 * len(sos) + 1)
    if x.shape[axis] <= padlen:
        raise DataError(f"{x.shape[axis]} samples are too few for a order-{order} zero-phase "
                        f"filter (need more than {padlen})")
    # pad by ten periods of the cut-off: scipy's default (3 * (2 * sections + 1) samples)
    # leaves end transients of several rad/s^2 in twice-differentiated positions
    padlen = min(x.shape[axis] - 1, max(padlen, int(np.ceil(10 * fs / cutoff))))
    return scipy.signal.sosfiltfilt(sos, x, axis=axis, padlen=padlen)


def central_difference(x, dt, axis=0):
    """First derivative by second-order central differences (one-sided at the ends).

    Parameters
    ----------
    x : array_like, shape (N, ...)
    dt : float or ndarray (N,)
        Sample period [s], or the sample times for irregular sampling.
    """
    return np.gradient(np.asarray(x, dtype=float), dt, axis=axis)


def savgol_derivative(x, fs, window, polyorder=3, deriv=1, axis=0):
    """Savitzky-Golay smoothing differentiator (zero phase).

    Parameters
    ----------
    x : array_like, shape (N, ...)
    fs : float
        Sampling rate [Hz].
    window : float
        Window length [s] (rounded to an odd number of samples > polyorder).
    polyorder : int
    deriv : int
        Derivative order (0 smooths).
    """
    n = max(int(round(window * fs)) | 1, polyorder + 2 | 1)
    return scipy.signal.savgol_filter(np.asarray(x, dtype=float), n, polyorder, deriv=deriv,
                                      delta=1.0 / fs, axis=axis)


def velocity_mask(velocity, threshold):
    """Samples where every joint moves at least ``threshold`` [rad/s].

    Zollo et al. (2014, Sec. 6.1) discarded samples below 0.5 rad/s, where the
    Coulomb model sign(v) is a poor description of friction; De Luca (slide 13)
    gives the same advice.

    Parameters
    ----------
    velocity : ndarray, shape (N, n)
    threshold : float
        [rad/s]; 0 keeps everything.

    Returns
    -------
    ndarray of bool, shape (N,)
    """
    v = np.asarray(velocity)
    if threshold <= 0:
        return np.ones(v.shape[0], dtype=bool)
    return np.all(np.abs(v) >= threshold, axis=1)


def near_reversal(velocity, window):
    """Samples (N, n) within ``window`` samples of a sign change of ``velocity`` (N, n)."""
    v = np.asarray(velocity, dtype=float)
    flip = np.zeros(v.shape, dtype=bool)
    flip[1:] = np.signbit(v[1:]) != np.signbit(v[:-1])
    if window <= 0:
        return flip
    return maximum_filter1d(flip.astype(np.uint8), size=2 * int(window) + 1, axis=0,
                            mode="constant").astype(bool)
