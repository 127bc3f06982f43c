"""Spectra and noise levels of recorded signals: the measurements behind the automatic
settings (``cutoff_hz: auto``, ``friction_deadband: auto``) and the data diagnostics."""
from __future__ import annotations

from math import comb

import numpy as np


#: Power ratio signal / white-noise floor that bounds the signal band (:func:`signal_band`).
SIGNAL_NOISE_RATIO = 10.0


def robust_std(x, axis=0):
    """1.4826 * median absolute deviation of ``x`` along ``axis`` (a std estimate that
    ignores up to half the samples being outliers)."""
    x = np.asarray(x, dtype=float)
    med = np.median(x, axis=axis, keepdims=True)
    return 1.4826 * np.median(np.abs(x - med), axis=axis)


def noise_std(signal, axis=0, order=3):
    """Standard deviation of white measurement noise in a smooth signal, per column.

    Robust std of the ``order``-th differences divided by sqrt(binomial(2 order, order))
    (the variance of the k-th difference of white noise: 6 sigma^2 for k = 2, 20 sigma^2
    for k = 3); the smooth part contributes d^k x/dt^k * dt^k, negligible at the sampling
    rates of joint signals. Where the MAD is 0 (quantised signals) the mean absolute
    deviation is used. ``signal`` (N, n) -> (n,), same unit.
    """
    d = np.diff(np.asarray(signal, dtype=float), n=order, axis=axis)
    # robust_std's numbers, the median of d computed once for both estimates (issue #29)
    dev = np.abs(d - np.median(d, axis=axis, keepdims=True))
    mad = 1.4826 * np.median(dev, axis=axis)
    if np.all(mad > 0):
        return mad / np.sqrt(comb(2 * order, order))
    # quantised signals (e.g. velocities in 1e-4 rad/s steps) have mostly identical
    # differences, so the MAD is 0: fall back to the mean absolute deviation
    mean_dev = np.sqrt(np.pi / 2) * np.mean(dev, axis=axis)
    return np.where(mad > 0, mad, mean_dev) / np.sqrt(comb(2 * order, order))


#: :func:`noise_floor`: white noise gives std(4th differences) / std(3rd differences), each
#: normalised by its white-noise factor, of 1; a signal smoother than white noise at the
#: sampling rate (pre-smoothed by a drive's filter, or noise-free) far less (0.07 after a
#: 20 Hz Butterworth at 1 kHz, 0.55 on a noise-free simulated torque; real UR10e currents
#: 0.93-0.95).
WHITE_NOISE_RATIO = 0.8


def noise_floor(signal, axis=0, std=None):
    """White measurement noise std per column (:func:`noise_std`), NaN where unknown.

    The estimate of :func:`noise_std` holds where the sample-to-sample noise is white: the
    3rd and 4th differences then give the same std (each normalised by sqrt(binomial(2k,
    k))). Where the 4th-difference estimate is below :data:`WHITE_NOISE_RATIO` x the
    3rd-difference one, the differences see the smooth signal, not noise: the noise floor is
    unknown (pre-smoothed or noise-free data) and NaN is returned for that column.

    Parameters
    ----------
    signal : ndarray (N, n)
    std : ndarray (n,), optional
        ``noise_std(signal, axis)`` (the 3rd-difference estimate) where already computed.

    Returns
    -------
    ndarray (n,), the signal's unit; NaN: unknown
    """
    s3 = noise_std(signal, axis=axis, order=3) if std is None else np.asarray(std, dtype=float)
    s4 = noise_std(signal, axis=axis, order=4)
    with np.errstate(invalid="ignore", divide="ignore"):
        white = (s3 > 0) & (s4 >= WHITE_NOISE_RATIO * s3)
    return np.where(white, s3, np.nan)


#: :func:`velocity_noise_from_positions`: correlation of the sample-to-sample noise of a
#: measured velocity and of the positions' central difference above which the velocity's noise
#: is taken as the positions' noise differentiated (a velocity computed by the driver or the
#: user from the encoder). Velocities the real UR10e controller reports: 0.02-0.46 (its own
#: estimate); ``np.gradient`` of the positions: 1.0.
DIFFERENTIATED_NOISE_CORRELATION = 0.7


def velocity_noise_from_positions(velocity, positions, t):
    """Per joint: whether the noise of a measured ``velocity`` is the noise of the
    ``positions`` differentiated (True) rather than white noise of its own (False).

    The 3rd differences of the velocity and of the positions' central difference
    (``np.gradient``) see only their sample-to-sample noise; their correlation is about 1
    where the velocity is a derivative of the recorded positions (its noise spectrum then
    rises like f^2: after a low-pass at f_c a fraction (2 f_c / f_s)^1.5 of its std is left,
    not the (2 f_c / f_s)^0.5 of white noise) and about 0 for a velocity measured on its own
    (:data:`DIFFERENTIATED_NOISE_CORRELATION` separates them). Only where the velocity
    has white sample-to-sample noise at all (:func:`noise_floor` finite): an exact or
    pre-smoothed velocity is the motion's own, whatever the correlation of its differences.

    Parameters
    ----------
    velocity, positions : ndarray (N, n) [rad/s], [rad]
    t : ndarray (N,) [s]

    Returns
    -------
    ndarray (n,) of bool (False for a column without noise or with fewer than 8 samples)
    """
    v = np.asarray(velocity, dtype=float)
    if v.shape[0] < 8:
        return np.zeros(v.shape[1], dtype=bool)
    a = np.diff(v, n=3, axis=0)
    b = np.diff(np.gradient(np.asarray(positions, dtype=float), np.asarray(t, dtype=float),
                            axis=0), n=3, axis=0)
    a = a - a.mean(axis=0)
    b = b - b.mean(axis=0)
    den = np.sqrt(np.sum(a * a, axis=0) * np.sum(b * b, axis=0))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(den > 0, np.sum(a * b, axis=0) / np.where(den > 0, den, 1.0), 0.0)
    # a velocity smoother than white noise at the sampling rate (exact, or pre-smoothed by a
    # drive) is no noise at all: its differences and the positions' derivative's both see
    # the motion and correlate without telling anything (noise-free simulations)
    out = rho >= DIFFERENTIATED_NOISE_CORRELATION
    if out.any():       # its noise floor only matters where the noise correlates (issue #29)
        out &= np.isfinite(noise_floor(v))
    return out


def _periodograms(t, x):
    """Frequencies f (K,) [Hz], the Hann window w (N,) and, per column of ``x`` (N, n) that
    moves (range >= 1e-6), (j, P) with P (K,) the periodogram of the linearly detrended,
    Hann-windowed column. None for fewer than 8 samples."""
    x = np.asarray(x, dtype=float)
    N = x.shape[0]
    if N < 8:
        return None
    fs = 1.0 / np.median(np.diff(np.asarray(t, dtype=float)))
    f = np.fft.rfftfreq(N, 1.0 / fs)
    w = np.hanning(N)
    k = np.arange(N)
    out = []
    for j in range(x.shape[1]):
        xj = x[:, j]
        if np.ptp(xj) < 1e-6:
            continue
        xj = xj - np.polyval(np.polyfit(k, xj, 1), k)
        out.append((j, np.abs(np.fft.rfft(xj * w)) ** 2))
    return f, w, out


def excitation_band(t, q, power=0.99):
    """Frequency [Hz] below which ``power`` of the motion's spectral power lies.

    The positions ``q`` (N, n) [rad] are detrended (linear), Hann-windowed and
    Fourier-transformed; the band is the largest over joints (joints that do not move,
    range < 1e-6 rad, are skipped). Returns 0.0 when nothing moves.

    The motion's power is the periodogram above the white-noise floor of the positions
    (:func:`noise_std`; the level sigma^2 sum(w^2) of :func:`signal_band`): bins below
    :data:`SIGNAL_NOISE_RATIO` x the floor count as noise, the others less the floor. White
    noise spreads its power evenly up to the Nyquist frequency, so counted as motion it sets
    the band there: 40 dB position noise on a Kinova Jaco 2 moving at 0.6 Hz read 416 Hz,
    and every check tuned to the band (velocity limits, the nominal-model check's filter)
    then judged the noise (false ``beyond_velocity_limits`` and ``torque_dead`` errors).
    """
    spectra = _periodograms(t, q)
    if spectra is None:
        return 0.0
    f, w, columns = spectra
    sigma = noise_std(q)
    best = 0.0
    for j, P in columns:
        floor = sigma[j] ** 2 * float(np.sum(w ** 2))
        P = np.where(P > SIGNAL_NOISE_RATIO * floor, P - floor, 0.0)
        c = np.cumsum(P)
        if c[-1] <= 0:
            continue
        best = max(best, float(f[np.searchsorted(c, power * c[-1])]))
    return best


def signal_band(t, x, noise, band_hz=0.0, ratio=SIGNAL_NOISE_RATIO):
    """Frequency [Hz] up to which the recorded signal stands above its white-noise floor.

    Per column of ``x`` (N, n) (positions [rad], or measured velocities [rad/s]): the
    detrended, Hann-windowed periodogram, smoothed by its median over 200 logarithmic
    frequency bins (/ ln 2: the mean of exponentially distributed periodogram ordinates),
    against the periodogram level of white noise of std ``noise[j]`` (sigma^2 sum(w^2),
    :func:`noise_std`); the signal band ends at the first bin above
    ``band_hz`` whose level falls below ``ratio`` x that floor. Differentiation multiplies
    signal and noise alike (by (2 pi f)^k), so this is also where the accelerations computed
    from ``x`` turn from signal to noise: the highest useful low-pass cut-off (where signal
    and noise spectra cross, the reading of optimal (Wiener) filtering in Press et al.,
    Numerical Recipes, 2nd ed., Sec. 13.3, fig. 13.3.1). The lowest over joints that move
    (range > 1e-6) is returned; the Nyquist frequency when no joint reaches its floor, 0.0
    when nothing moves.

    Parameters
    ----------
    t : ndarray (N,)
        [s].
    x : ndarray (N, n)
    noise : ndarray (n,)
        White-noise std of each column, unit of ``x``.
    band_hz : float
        Excitation band [Hz] (:func:`excitation_band`): the search starts above it.
    ratio : float
        Power ratio signal / noise floor.
    """
    spectra = _periodograms(t, x)
    if spectra is None:
        return 0.0
    f, w, columns = spectra
    if not columns:
        return 0.0
    fs = 1.0 / np.median(np.diff(np.asarray(t, dtype=float)))
    edges = np.unique(np.round(np.geomspace(1, f.size - 1, 201)).astype(int))
    # median / ln 2: the mean of periodogram ordinates (exponentially distributed); bin by
    # bin for all columns at once (np.median along the rows: each value that of
    # np.median(P[a:b]), the same middle order statistics and their mean), until every
    # column has found its end (issue #29)
    P = np.stack([P for _, P in columns])
    floors = [ratio * float(noise[j]) ** 2 * np.sum(w ** 2) for j, _ in columns]
    ends = [fs / 2] * len(columns)
    open_ = list(range(len(columns)))
    for a, b in zip(edges[:-1], edges[1:]):
        if not open_:
            break
        if not f[b] > band_hz:
            continue
        level = np.median(P[open_, a:b], axis=-1) / np.log(2.0)
        found = [i for i, x in zip(open_, level) if x < floors[i]]
        for i in found:
            ends[i] = float(f[a])
        open_ = [i for i in open_ if i not in found]
    best = None
    for end in ends:
        best = end if best is None else min(best, end)
    return 0.0 if best is None else max(best, 0.0)
