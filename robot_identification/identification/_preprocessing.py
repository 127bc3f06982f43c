"""Pre-processing strategies: chunks of raw samples -> filtered states for the regressor.

Every strategy has the same streaming interface: :meth:`push` takes the next chunk of a
recording (a :class:`Dataset` slice) and returns the filtered states of every sample that is
now final, :meth:`finish` returns the rest at the end of the recording. The concatenated
outputs do not depend on how the recording was cut into chunks (tested to 1e-9 relative),
and memory is bounded by the chunk size plus a fixed margin:

``butterworth``
    Zero-phase Butterworth low-pass (``lowpass_filtfilt``: forward-backward second-order
    sections) of positions, torques (and measured derivatives), then numerical
    differentiation (central differences or Savitzky-Golay), as in Zollo et al. (2014,
    Sec. 6.1). Streamed with *overlapping windows*: the zero-phase filter needs future
    samples, so a sample is final once ``margin`` later samples have arrived, and each
    window starts ``margin`` samples before its first output. ``margin`` is the number of
    samples over which the slowest filter pole decays by 1e-22 (plus the padding and the
    differentiator support), so the window edges change the outputs by less than rounding.
    The recording's own ends get the padding of the one-shot filter.
``savgol``
    Causal Savitzky-Golay FIR bank on raw positions (kernels 0, 1, 2) and torques (kernel
    0), outputs at the window centre (delay (L - 1) / 2 samples); exact chunk borders.
``polynomial``
    Polynomial-approximation FIR bank of Lomakin & Deutscher (eq. 28-37): positions and
    torques filtered by the same operator, outputs at t - t_d; exact chunk borders.
"""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from robot_identification.choices import PREPROCESSING, PREPROCESSING_ALIASES
from robot_identification.data import MAX_TIME_STEP, Dataset
from robot_identification.errors import DataError
from robot_identification.identification._auto import (
    needs_resolving, recording_summaries, resolve_settings)
from robot_identification.identification._settings import (
    ButterworthSettings, PolynomialSettings, strategy_settings)
from robot_identification.identification._sources import as_recording
from robot_identification.regressor import regressor
from robot_identification.signal import (
    PolynomialApproximation, SavitzkyGolay, butter_sos, central_difference, lowpass_filtfilt,
    savgol_derivative, velocity_noise_from_positions)


_CHAINS = (("q", "dq", "ddq"), ("theta", "dtheta", "ddtheta"))
#: Joint torque sensors: filtered like positions and differentiated (the link positions
#: q = theta - tau_J / K of an arm without link encoders move with them, docs/elastic.md).
_JOINT_TORQUE = ("tau_joint", "dtau_joint", "ddtau_joint")


def sample_rate(t) -> float:
    """Sampling rate [Hz] of the time stamps ``t`` (N >= 2,), from the median step.

    Raises
    ------
    DataError
        Fewer than 2 samples, non-increasing stamps or a median step above
        :data:`~robot_identification.data._dataset.MAX_TIME_STEP` (time not in seconds).
    """
    t = np.asarray(t, dtype=float)
    if t.shape[0] < 2:
        raise DataError("the first chunk needs at least 2 samples to infer the sample rate")
    dt = float(np.median(np.diff(t)))
    if not dt > 0:
        raise DataError(f"time stamps do not increase (median step {dt} s)")
    if dt > MAX_TIME_STEP:
        raise DataError(f"median time step {dt:.6g} s ({1 / dt:.3g} Hz): time stamps in "
                        f"milliseconds, microseconds or sample numbers instead of seconds?")
    return round(1.0 / dt, 6)


class _UniformClock:
    """Checks that consecutive chunks continue one uniform time grid."""

    def __init__(self, fs):
        self.dt = 1.0 / fs
        self.t_last = None

    def check(self, t):
        if t.size == 0:
            return
        d = np.diff(t)
        if self.t_last is not None:
            d = np.concatenate([[t[0] - self.t_last], d])
        if d.size and np.max(np.abs(d - self.dt)) > 0.05 * self.dt:
            i = int(np.argmax(np.abs(d - self.dt)))
            raise DataError(f"chunked identification needs uniform sampling: step of "
                            f"{d[i]:.6g} s near t = {t[min(i, t.size - 1)]:.6g} s (expected "
                            f"{self.dt:.6g} s); load the recording as one dataset to resample")
        self.t_last = float(t[-1])


def _chunk_arrays(model, ds, use_measured, last=None):
    """Raw arrays of a chunk, joints in model order, checked for finiteness (and measured
    velocities against the positions, :meth:`Dataset.check_velocities`); continuous joints'
    wrapped angles unwrapped (:meth:`RobotModel.unwrap_positions`), continuing from the
    previous chunk's last sample kept in ``last`` (a dict, updated)."""
    ds = ds.select_joints(model.joint_names)
    if model.continuous_joints.any() and ds.n_samples:
        last = {} if last is None else last
        unwrapped = {}
        for k in ("q", "theta"):
            if getattr(ds, k) is not None and np.isfinite(getattr(ds, k)).all():
                unwrapped[k] = model.unwrap_positions(getattr(ds, k), last.get(k))
                last[k] = unwrapped[k][-1]
        ds = dataclasses.replace(ds, **unwrapped)
    elastic = model.config.elastic
    if elastic and ds.theta is None:
        where = ds.metadata.get("file") if isinstance(ds.metadata, dict) else None
        raise DataError(f"{f'{where!r}: ' if where else ''}robot '{model.config.name}' has "
                        f"elastic joints: the data need motor positions (theta)")
    keys = ["q", "tau"] + (["theta"] if elastic else [])
    if elastic and ds.tau_joint is not None:       # joint torque sensors (docs/elastic.md)
        keys.append("tau_joint")
    if use_measured:
        keys += [k for k in ("dq", "ddq") + (("dtheta", "ddtheta") if elastic else ())
                 if getattr(ds, k) is not None]
    out = {"t": np.asarray(ds.t, dtype=float)}
    for k in keys:
        v = np.asarray(getattr(ds, k), dtype=float)
        bad = ~np.isfinite(v)
        if bad.any():
            i, j = np.argwhere(bad)[0]
            where = ds.metadata.get("file") if isinstance(ds.metadata, dict) else None
            raise DataError(f"{f'{where!r}: ' if where else ''}'{k}' has a non-finite "
                            f"value (NaN/inf) at t = {out['t'][i]:.6g} s, joint "
                            f"'{ds.joint_names[j]}'")
        out[k] = v
    if use_measured and ds.dq is not None:
        ds.check_velocities()          # a driver's field of zeros, deg/s: named, not fitted
    return out


class ZeroPhaseStates:
    """``butterworth`` strategy: zero-phase Butterworth + differentiation, streamed with
    overlapping windows (module docstring).

    Parameters
    ----------
    model : RobotModel
    settings : IdentificationSettings
        ``cutoff_hz`` (None: no filter), ``filter_order``, ``differentiation``
        (central | savgol), ``savgol_window`` [s], ``savgol_order``, ``decimate``.
    fs : float
        Sample rate [Hz].
    use_measured_derivatives : bool
        Filter measured velocities/accelerations when the data carry them instead of
        differentiating positions; per joint, a measured velocity that is itself the
        positions' derivative (its noise is theirs differentiated,
        :func:`~robot_identification.signal.velocity_noise_from_positions` on the first
        chunk) is not used: it adds nothing to the positions, and the zero-phase filter's
        odd extension pins its noisy end samples (a Kinova Jaco2 CSV with ``np.gradient``
        velocities of 1 kHz positions: filtered velocity errors up to 5.7 rad/s in the first
        and last 0.2 s, against 0.007 rad/s RMS inside, and a false negative rotor inertia
        24 std below 0); that joint's velocity and acceleration come from its filtered
        positions.
    """

    name = "butterworth"

    def __init__(self, model, settings, fs, use_measured_derivatives=True):
        self.model = model
        self.s = settings if isinstance(settings, ButterworthSettings) else \
            strategy_settings(settings)
        self.fs = fs
        self.use_measured = use_measured_derivatives
        self.decimate = int(settings.decimate)
        self.clock = _UniformClock(fs)
        if settings.cutoff_hz is not None and not 0 < settings.cutoff_hz < fs / 2:
            raise DataError(f"filter cut-off {settings.cutoff_hz} Hz must lie in "
                            f"(0, {fs / 2}) Hz (Nyquist of fs = {fs} Hz)")
        self.margin = self._margin()
        self.min_samples = 2
        self.buf = None            # dict of arrays, first row = global index self.start
        self.start = 0
        self.next_out = 0          # global index of the next sample to emit
        self.keys = None
        self._last = {}            # last unwrapped positions (continuous joints)
        self._derived = {}         # velocity key -> (n,) bool: from the positions instead

    def _margin(self):
        s, fs = self.s, self.fs
        support = 2 * (max(int(round(s.savgol_window * fs)) | 1, s.savgol_order + 2 | 1) // 2
                       if s.differentiation == "savgol" else 1) + 2
        if s.cutoff_hz is None:
            return support + 1
        sos = butter_sos(int(s.filter_order), float(s.cutoff_hz), float(fs))
        radius = max(np.max(np.abs(np.roots(sec[3:]))) for sec in sos)
        decay = int(np.ceil(np.log(1e-22) / np.log(radius))) if radius > 0 else 1
        pad = int(np.ceil(10 * fs / s.cutoff_hz))
        return decay + pad + support + 1

    def describe(self) -> dict:
        s = self.s
        return {"preprocessing": self.name, "filter_order": s.filter_order,
                "cutoff_hz": s.cutoff_hz, "differentiation": s.differentiation,
                "decimate": s.decimate}

    # -------------------------------------------------------------- window processing
    def _states(self, arr):
        """One-shot pre-processing of a window of raw arrays (the batch chain)."""
        s, fs = self.s, self.fs

        def smooth(x):
            if x is None or s.cutoff_hz is None:
                return x
            return lowpass_filtfilt(x, fs, s.cutoff_hz, s.filter_order)

        def derive(x):
            if s.differentiation == "savgol":
                return savgol_derivative(x, fs, s.savgol_window, s.savgol_order, deriv=1)
            return central_difference(x, 1.0 / fs)

        states = {}
        chains = _CHAINS if self.model.config.elastic else _CHAINS[:1]
        if "tau_joint" in arr:
            chains = chains + (_JOINT_TORQUE,)
        for pos, vel, acc in chains:
            p = smooth(arr[pos])
            v = smooth(arr[vel]) if vel in arr else derive(p)
            a = smooth(arr[acc]) if acc in arr else derive(v)
            own = self._derived.get(vel)
            if own is not None and own.any():     # measured = the positions' derivative
                v[:, own] = derive(p[:, own])
                a[:, own] = derive(v[:, own])
            states[pos], states[vel], states[acc] = p, v, a
        states["tau"] = smooth(arr["tau"])
        return states

    def _emit(self, end_global):
        """States of global samples [next_out, end_global) from the buffered window."""
        ws = max(self.start, self.next_out - self.margin)
        lo = ws - self.start
        window = {k: v[lo:] for k, v in self.buf.items()}
        n = window["t"].shape[0]
        if n < 2:
            raise DataError(f"{n} sample(s) are too few to differentiate")
        if self.s.cutoff_hz is not None:
            padlen = 3 * (2 * len(butter_sos(int(self.s.filter_order),
                                             float(self.s.cutoff_hz), float(self.fs))) + 1)
            if n <= padlen:
                raise DataError(f"{n} samples are too few for a order-{self.s.filter_order} "
                                f"zero-phase filter (need more than {padlen})")
        states = self._states(window)
        a = self.next_out - ws
        # every decimate-th global sample from next_out: a strided slice (a view, no copy)
        first = a + (-self.next_out) % self.decimate
        keep = slice(first, a + end_global - self.next_out, self.decimate)
        out = {k: v[keep] for k, v in states.items()}
        t = window["t"][keep]
        self.next_out = end_global
        drop = max(0, self.next_out - self.margin - self.start)
        if drop:
            self.buf = {k: v[drop:] for k, v in self.buf.items()}
            self.start += drop
        return (out, t) if t.shape[0] else None

    def push(self, ds):
        arr = _chunk_arrays(self.model, ds, self.use_measured, self._last)
        if self.keys is None:
            self.keys = sorted(arr)
        elif sorted(arr) != self.keys:
            raise DataError(f"chunk at t = {arr['t'][0]:.6g} s carries {sorted(arr)}, the "
                            f"first chunk {self.keys}")
        self.clock.check(arr["t"])
        if self.buf is None:
            self.buf = arr
            for pos, vel, _ in _CHAINS:         # decided once per recording, on its start
                if vel in arr and pos in arr:
                    self._derived[vel] = velocity_noise_from_positions(arr[vel], arr[pos],
                                                                       arr["t"])
        else:
            self.buf = {k: np.concatenate([self.buf[k], arr[k]], axis=0) for k in self.buf}
        end = self.start + self.buf["t"].shape[0]
        if end - self.margin > self.next_out:
            return self._emit(end - self.margin)
        return None

    def finish(self):
        if self.buf is None:
            return None
        end = self.start + self.buf["t"].shape[0]
        if end > self.next_out:
            return self._emit(end)
        return None


class FIRStates:
    """``savgol`` / ``polynomial`` strategies: chunk-wise FIR pre-processing with exact
    chunk borders.

    Parameters
    ----------
    model : RobotModel
    bank : PolynomialApproximation or SavitzkyGolay
        FIR bank with ``kernels[0..2]``, ``L``, ``delay``, ``fs`` and ``apply``.
    decimate : int
        Keep every ``decimate``-th filtered sample (global alignment across chunks).

    Notes
    -----
    Positions (and motor positions for elastic arms) are filtered with kernels 0, 1, 2
    (x, x', x'' at t - t_d); torques with kernel 0 (same instant). The first L samples of
    the recording produce no output (no full window). Measured derivatives are not used.
    """

    def __init__(self, model, bank, decimate=1):
        if int(decimate) != decimate or decimate < 1:
            raise DataError(f"decimate must be a positive integer, got {decimate}")
        self.model = model
        self.bank = bank
        self.name = "polynomial" if type(bank).__name__ == "PolynomialApproximation" \
            else "savgol"
        self.decimate = int(decimate)
        self.joint_names = list(model.joint_names)
        self.elastic = model.config.elastic
        self.buf = None
        self.consumed = 0          # global index of buf's first sample
        self.clock = None
        self.min_samples = bank.L + 1
        self._last = {}            # last unwrapped positions (continuous joints)

    def describe(self) -> dict:
        b = self.bank
        out = {"preprocessing": self.name, "filter": type(b).__name__, "window": b.window,
               "delay": b.delay, "decimate": self.decimate}
        for k in ("N", "alpha", "beta", "order", "length"):
            if hasattr(b, k):
                out[k] = getattr(b, k)
        return out

    def _check_time(self, t):
        if self.clock is None:
            if t.size < 2:
                return
            fs = 1.0 / float(np.median(np.diff(t)))
            if abs(fs - self.bank.fs) > 1e-3 * self.bank.fs:
                raise DataError(f"data sampled at {fs:.6g} Hz but the filter bank was built "
                                f"for {self.bank.fs:.6g} Hz")
            self.clock = _UniformClock(self.bank.fs)
        self.clock.check(t)

    def push(self, ds):
        """Add a chunk; return the states ``{q, dq, ddq, tau[, theta, dtheta, ddtheta]}`` and
        times (t - t_d) of all new full-window outputs, or None."""
        arr = _chunk_arrays(self.model, ds, use_measured=False, last=self._last)
        t = arr["t"]
        self._check_time(t)
        cols = [t[:, None], arr["q"], arr["tau"]] + ([arr["theta"]] if self.elastic else [])
        if "tau_joint" in arr:
            cols.append(arr["tau_joint"])
        new = np.concatenate(cols, axis=1)
        data = new if self.buf is None else np.concatenate([self.buf, new], axis=0)
        L, n = self.bank.L, len(self.joint_names)
        out = None
        if data.shape[0] > L:
            first_out = self.consumed + L          # global index of data's first output
            off = (-(first_out - L)) % self.decimate  # align to global grid (g - L) % d == 0
            if data.shape[0] - L > off:
                b = self.bank
                tt = data[L + off::self.decimate, 0] - b.delay
                q = data[:, 1:1 + n]
                st = {"q": b.apply(q, 0, self.decimate, off),
                      "dq": b.apply(q, 1, self.decimate, off),
                      "ddq": b.apply(q, 2, self.decimate, off),
                      "tau": b.apply(data[:, 1 + n:1 + 2 * n], 0, self.decimate, off)}
                if self.elastic:
                    th = data[:, 1 + 2 * n:1 + 3 * n]
                    st["theta"] = b.apply(th, 0, self.decimate, off)
                    st["dtheta"] = b.apply(th, 1, self.decimate, off)
                    st["ddtheta"] = b.apply(th, 2, self.decimate, off)
                if data.shape[1] > 1 + 3 * n:              # joint torque sensors
                    tj = data[:, 1 + 3 * n:1 + 4 * n]
                    for k, key in enumerate(_JOINT_TORQUE):
                        st[key] = b.apply(tj, k, self.decimate, off)
                out = (st, tt)
        keep = min(L, data.shape[0])
        self.consumed += data.shape[0] - keep
        self.buf = data[data.shape[0] - keep:].copy()
        return out

    def finish(self):
        return None


def make_bank(kind, fs, **kw):
    """FIR bank by name: ``'polynomial'`` (former name ``'pa'``, deprecated) ->
    :class:`PolynomialApproximation`
    (``window`` [s], ``N``, ``alpha``, ``beta``, ``delay``) or ``'savgol'`` ->
    :class:`SavitzkyGolay` (``length`` [samples], ``order``).

    Raises
    ------
    DataError
        Unknown kind or bad settings.
    """
    if kind in PREPROCESSING_ALIASES:
        warnings.warn(f"FIR bank '{kind}' is the former name of "
                      f"'{PREPROCESSING_ALIASES[kind]}'", DeprecationWarning, stacklevel=2)
        kind = PREPROCESSING_ALIASES[kind]
    if kind == "polynomial":
        return PolynomialApproximation(fs=fs, **kw)
    if kind == "savgol":
        return SavitzkyGolay(fs=fs, **kw)
    raise DataError(f"unknown FIR bank '{kind}' (expected 'polynomial' or 'savgol')")


def make_preprocessor(model, settings, fs, *, bank=None, use_measured_derivatives=True):
    """The pre-processing strategy ``settings.preprocessing`` for data sampled at ``fs``.

    Parameters
    ----------
    model : RobotModel
    settings : IdentificationSettings
    fs : float
        Sample rate [Hz].
    bank : PolynomialApproximation or SavitzkyGolay, optional
        A ready FIR bank (overrides the settings' FIR parameters).
    use_measured_derivatives : bool
        ``butterworth`` only.

    Returns
    -------
    ZeroPhaseStates or FIRStates

    Raises
    ------
    DataError
        Unknown strategy, or settings that do not fit the sample rate.
    """
    if bank is not None:
        return FIRStates(model, bank, settings.decimate)
    if settings.preprocessing not in PREPROCESSING:
        raise DataError(f"unknown pre-processing '{settings.preprocessing}' (expected one of "
                        f"{list(PREPROCESSING)})")
    st = strategy_settings(settings)
    if isinstance(st, ButterworthSettings):
        return ZeroPhaseStates(model, st, fs, use_measured_derivatives)
    if isinstance(st, PolynomialSettings):
        return FIRStates(model, make_bank("polynomial", fs, window=st.window, N=st.degree,
                                          alpha=st.alpha, beta=st.beta, delay=st.delay),
                         st.decimate)
    length = max(int(round(st.window * fs)) | 1, st.order + 2 | 1)
    return FIRStates(model, make_bank("savgol", fs, length=length, order=st.order),
                     st.decimate)


def preprocess(model, dataset: Dataset, settings=None,
               use_measured_derivatives: bool = True):
    """Filtered positions, velocities, accelerations and torques of a whole dataset.

    The engine's pre-processing strategy (``settings.preprocessing``; default
    ``butterworth``: zero-phase Butterworth then numerical differentiation, as in Zollo et
    al. 2014, Sec. 6.1: 5th order, 20 Hz) applied to the dataset as one chunk. Irregular
    time stamps are resampled onto a uniform grid first.

    Returns
    -------
    states : dict
        Arrays (N, n): ``q, dq, ddq, tau`` and for elastic models ``theta, dtheta, ddtheta``.
    t : ndarray (N,)

    Raises
    ------
    DataError
        Invalid dataset (see :meth:`Dataset.validate`), filter settings incompatible
        with the sampling rate.
    """
    s = settings or model.config.identification
    rec = as_recording(dataset, model)      # (elastic: link positions from joint torques)
    if needs_resolving(s):   # not resolved over all recordings: this one alone
        s = resolve_settings(model, s, recording_summaries(model, [rec]))
    (ds,) = rec.chunks()
    pre = make_preprocessor(model, s, sample_rate(ds.t),
                            use_measured_derivatives=use_measured_derivatives)
    parts = [out for out in (pre.push(ds), pre.finish()) if out is not None]
    if not parts:
        raise DataError(f"{ds.t.shape[0]} samples are too few for the {pre.name} filter")
    states = {k: np.concatenate([st[k] for st, _ in parts], axis=0) for k in parts[0][0]}
    return states, np.concatenate([t for _, t in parts])


def pa_product_regressor(model, q, bank, n_star=2):
    """PA-filtered rigid regressor P{Y(q, dq, ddq)} built with the product rule (eq. 22-27).

    Y is split as Y(q, dq, ddq) = Y_g(q) + sum_j A_j(q) ddq_j + Y_v(q, dq) with
    Y_g = Y(q, 0, 0) (gravity, offsets), A_j = Y(q, 0, e_j) - Y_g (inertia and rotor
    columns) and Y_v the velocity terms (Coriolis/centripetal, friction). Then
    P{Y_g} is filtered directly (exact), P{A_j(q) ddq_j} by :meth:`apply_product`
    (exact when A_j(q(t)) is a polynomial of degree <= ``n_star`` over the window; no
    numerical differentiation) and P{Y_v} by composition (eq. 21) at the PA estimates.
    Costs n + 3 regressor evaluations per sample (whole array in memory: for moderate
    recordings; the streaming pipeline uses the composition rule throughout).

    Parameters
    ----------
    model : RobotModel
        Rigid model.
    q : ndarray (M, n)
        Measured positions, uniformly sampled at ``bank.fs``.
    bank : PolynomialApproximation
    n_star : int
        N* of eq. (22).

    Returns
    -------
    Y : ndarray (M - L, n, P)
        Filtered regressor, pairs with ``bank.apply(tau, 0)``.
    dq_hat : ndarray (M - L, n)
        PA velocity (for the velocity-threshold mask).

    Raises
    ------
    DataError
        Elastic model or too few samples.
    """
    if model.config.elastic:
        raise DataError("pa_product_regressor supports rigid models only")
    q = np.asarray(q, dtype=float)
    zeros = np.zeros_like(q)
    Yg = regressor(model, q, zeros, zeros)
    out = bank.apply(Yg, 0)
    for j in range(model.n):
        e = zeros.copy()
        e[:, j] = 1.0
        A = regressor(model, q, zeros, e) - Yg
        out += bank.apply_product(A, np.repeat(np.repeat(q[:, j, None, None], A.shape[1], 1),
                                               A.shape[2], 2), k=2, n_star=n_star)
    qh, dqh = bank.apply(q, 0), bank.apply(q, 1)
    zh = np.zeros_like(qh)
    out += regressor(model, qh, dqh, zh) - regressor(model, qh, zh, zh)
    return out, dqh
