"""On-line identification: base parameters updated as samples arrive (live topics, bag replay).

The identification engine's streaming pieces (:mod:`robot_identification.identification`),
fed sample block by sample block instead of from a recording: causal
polynomial-approximation FIR filters (Lomakin & Deutscher eq. 28-37, :class:`FIRStates`), the
base regressor, the additive normal equations and the modified recursive least squares of
Lomakin & Deutscher (Fig. 1, :class:`~robot_identification.estimation.MRLS`, one update per
pushed block) with its identifiability flags (1 identified, 0 not excited, -1 linearly
dependent). Fed the samples of a recording in any pieces, the estimate equals
:func:`~robot_identification.streaming.identify_streaming` with ``estimator='mrls'`` on that
recording (to rounding) when the recording holds positions and torques only (no measured
velocities: the filters differentiate positions) and is no longer than the settings window
(below), or when the config's settings are not automatic.
Friction at rest: as in the batch engine, the friction rows whose filter window holds a
velocity reversal or a stop of the joint (|filtered v| < ``stop_velocity``) are dropped
(``drop_reversals``, :class:`~robot_identification.identification.ReversalWindow` with
:func:`~robot_identification.identification.fir_reversal_window`): the last t_d (filter
delay) of filtered samples are held back until the samples after them have arrived
(:meth:`finish` at the end of a recording), and the fraction is reported
(``reversal_fraction``).

Automatic settings (``cutoff_hz``/``friction_deadband: auto``, the defaults of a robot config
without an ``identification`` section) are resolved as the batch engine resolves them
(:func:`~robot_identification.identification.resolve_settings` on
:func:`~robot_identification.identification.recording_summaries`), measured on the first
``settings_window`` seconds of samples: those samples are held back until the window is full
(or :meth:`OnlineIdentification.resolve` is called, e.g. when the stream pauses), then fed
to the filters; nothing is dropped. The resolved values are in ``settings`` and the
``automatic_settings`` diagnostic of every estimate. On line the polynomial-approximation
filters are used, so of the three only the Coulomb sign deadband and the stop velocity enter
the equations (the cut-off scales the velocity noise left after filtering, as in the batch
engine): a model without sign-based (Coulomb) friction holds nothing back.

A gap in the samples (a lost message: a step more than ``gap_tolerance`` sample periods off)
restarts the filters: the equations of the samples on both sides are kept (they are
additive), the window across the gap is dropped and counted (``gaps``).

Drives off / braked samples (every joint's effort exactly 0 while the arm moves, or at rest
where the nominal model needs a holding torque) are left out with the filter's window, by the
batch engine's :class:`~robot_identification.identification._engine.DrivesOff` and its
``drives_off_rows`` warning (an error at 95 % or more of the samples).
"""
from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from robot_identification.data import Dataset
from robot_identification.errors import DataError
from robot_identification.estimation import MRLS
from robot_identification.identifiability import base_parameters
from robot_identification.diagnostics import Diagnostic, collect_diagnostics
from robot_identification.identification._auto import (
    needs_resolving, recording_summaries, resolve_settings)
from robot_identification.identification._engine import (
    DrivesOff, ReversalWindow, accumulate_states, drives_off_diagnostic, fir_reversal_window,
    row_labels)
from robot_identification.identification._equations import RecordingEquations
from robot_identification.identification._estimators import estimate_from
from robot_identification.identification._preprocessing import FIRStates, make_bank
from robot_identification.identification._result import IdentificationResult

#: Default length [s] of the first window of samples the automatic settings are measured on.
SETTINGS_WINDOW = 5.0


class OnlineIdentification:
    """Recursive identification from samples that arrive in pieces.

    Parameters
    ----------
    model : RobotModel
    fs : float
        Sample rate [Hz] of the pushed samples.
    pa : dict, optional
        Overrides of the polynomial-approximation settings (``window`` [s], ``N``,
        ``alpha``, ``beta``, ``delay`` [s]); default: ``settings``' ``pa_*``.
    decimate : int
        Regressor on every k-th filtered sample.
    velocity_threshold : float, optional
        Friction rows with |velocity| below it are dropped [rad/s]; default: the robot
        config's.
    effort_lag : float
        In [0, 1) sample periods: tau_k = (1 - lag) e_k + lag e_{k+1} (one sample is held
        back until its successor arrives).
    theta0 : ndarray (p,), optional
        MRLS initial guess (kept for parameters not yet identified); default the base values
        of the model's nominal parameters.
    mrls_options : dict, optional
        ``sigma2``, ``excitation_tol``, ``dependence_tol``, ``update`` of :class:`MRLS`.
    gap_tolerance : float
        A step differing from 1/fs by more than this many periods is a gap.
    settings : IdentificationSettings, optional
        Default: the robot config's ``identification`` section; ``velocity_threshold`` and
        ``friction_deadband`` (a number, per-joint numbers or ``'auto'``) are used.
    settings_window : float
        Automatic settings: measured on the first this many seconds of samples [s]
        (at least 20 samples), which are held back until then.

    Raises
    ------
    DataError
        Bad filter settings, effort lag or settings window.
    """

    def __init__(self, model, fs, *, pa=None, decimate=1, velocity_threshold=None,
                 effort_lag=0.0, theta0=None, mrls_options=None, gap_tolerance=0.5,
                 settings=None, settings_window=SETTINGS_WINDOW):
        if not 0 <= effort_lag < 1:
            raise DataError(f"effort_lag must lie in [0, 1) sample periods, got {effort_lag}")
        if not settings_window > 0:
            raise DataError(f"settings_window must be positive [s], got {settings_window}")
        self.model = model
        self.fs = float(fs)
        settings = settings or model.config.identification
        kw = {"window": settings.pa_window, "N": settings.pa_degree, "alpha": settings.pa_alpha,
              "beta": settings.pa_beta, "delay": settings.pa_delay}
        kw.update(pa or {})
        self.bank = make_bank("polynomial", self.fs, **kw)
        self.decimate = int(decimate)
        self.threshold = (settings.velocity_threshold
                          if velocity_threshold is None else float(velocity_threshold))
        self.effort_lag = float(effort_lag)
        self.gap_tolerance = float(gap_tolerance)
        self.base = base_parameters(model)
        p = len(self.base)
        if theta0 is None:
            theta0 = self.base.base_values(model.nominal_parameters())
        self.mrls = MRLS(p, theta0=np.asarray(theta0, dtype=float), names=self.base.names,
                         **(mrls_options or {}))
        self.neq = RecordingEquations(p, model.rows_per_sample)
        self.requested = replace(settings, velocity_threshold=self.threshold)
        #: the settings in use (``'auto'`` resolved); None while the first window is collected
        self.settings = self.requested
        if needs_resolving(self.requested):
            # only the Coulomb deadband enters the on-line equations: without sign-based
            # friction there is nothing to measure and no sample is held back
            sign = any(k in ("coulomb", "fc") for k in model.drive_parameter_keys())
            automatic = sign and (isinstance(self.requested.friction_deadband, str)
                                  or isinstance(self.requested.stop_velocity, str))
            self.settings = None if automatic else resolve_settings(model, self.requested, [])
        self.window_samples = max(int(round(settings_window * self.fs)), 20)
        self.auto_samples = 0       # samples the automatic settings were measured on
        self._held = []             # (t, q, tau, theta) pieces of the first window
        self._summaries = []        # recording_summary of the first window ('auto' only)
        self._auto = []             # the automatic_settings diagnostic
        self._restart_filters()     # self.fir, self.brakes
        self.rev = None             # ReversalWindow of the current filter run
        self.drop_reversals = bool(settings.drop_reversals) and (
            "coulomb" in model.drive_parameter_keys())
        self.n_input = 0            # samples fed to the filters
        self.n_samples = 0          # filtered samples in the equations
        self.gaps = 0
        self.t_last = None
        self._carry = None          # (t, q, tau, theta) held back for the effort lag
        self._t_start = time.perf_counter()

    def push(self, t, q, tau, theta=None):
        """Add samples (in time order, continuing the previous ones).

        Parameters
        ----------
        t : ndarray (m,)
            Sample times [s] (e.g. header stamps).
        q, tau : ndarray (m, n)
            Link positions [rad or m] and joint torques [N*m or N] (elastic arms: motor
            torques), in the model's joint order.
        theta : ndarray (m, n), optional
            Motor positions referred to the link side [rad] (elastic arms).

        Returns
        -------
        int
            Filtered samples added to the equations.

        Raises
        ------
        DataError
            Wrong shapes, NaN, time going back, missing motor positions of an elastic arm.
        """
        t = np.asarray(t, dtype=float)
        q, tau = np.asarray(q, dtype=float), np.asarray(tau, dtype=float)
        theta = None if theta is None else np.asarray(theta, dtype=float)
        if self.settings is None:
            return self._hold(t, q, tau, theta)
        return self._push(t, q, tau, theta)

    @property
    def held(self):
        """Samples held back until the automatic settings are resolved."""
        return sum(piece[0].size for piece in self._held)

    def _hold(self, t, q, tau, theta):
        if t.size == 0:
            return 0
        last = self._held[-1][0][-1] if self._held else -np.inf
        prev = np.concatenate([[last], t[:-1]])
        if np.any(t <= prev):
            i = int(np.argmax(t <= prev))
            raise DataError(f"samples must arrive in time order: t = {t[i]:.9f} s after "
                            f"{prev[i]:.9f} s")
        self._held.append((t, q, tau, theta))
        if self.held < self.window_samples:
            return 0
        return self.resolve()

    def resolve(self):
        """Resolve the automatic settings now, on the samples held back so far (fewer than
        ``settings_window`` s: a short recording, a stream that paused), and feed those
        samples to the filters. Nothing to do once resolved.

        Returns
        -------
        int
            Filtered samples added to the equations.

        Raises
        ------
        DataError
            Held samples of inconsistent shapes (see :meth:`push`).
        """
        if self.settings is not None:
            return 0
        held, self._held = self._held, []
        if not held:
            return 0
        t = np.concatenate([h[0] for h in held])
        q = np.concatenate([h[1] for h in held])
        tau = np.concatenate([h[2] for h in held])
        theta = None if any(h[3] is None for h in held) else np.concatenate(
            [h[3] for h in held])
        # the batch engine's measurement of one recording (positions only: the filters
        # differentiate them) and its resolution of 'auto'
        window = Dataset(t=t, q=q, tau=tau, theta=theta, joint_names=list(self.model.joint_names),
                         metadata={"source": "first window"})
        summaries = recording_summaries(self.model, [window])
        self.settings = resolve_settings(self.model, self.requested, summaries)
        self.auto_samples = int(t.size)
        self._summaries = [r for r in summaries if r]
        self._auto = [Diagnostic("automatic_settings", "info", self.describe_settings(),
                                 "settings")]
        return self._push(t, q, tau, theta)

    def describe_settings(self):
        """One line: the resolved automatic settings and what they were measured on (a
        node logs it once)."""
        s, r = self.settings, self.requested
        if s is None:
            return (f"automatic settings: collecting the first {self.window_samples} samples "
                    f"({self.held} so far)")
        parts = []
        if isinstance(r.friction_deadband, str):
            dead = np.broadcast_to(s.friction_deadband, (self.model.n,))
            parts.append("friction_deadband [" + ", ".join(f"{v:.3g}" for v in dead)
                         + "] rad/s")
        if isinstance(r.stop_velocity, str):
            stop = np.broadcast_to(s.stop_velocity, (self.model.n,))
            parts.append("stop_velocity [" + ", ".join(f"{v:.3g}" for v in stop) + "] rad/s")
        if r.cutoff_hz == "auto":
            parts.append(f"cutoff_hz {s.cutoff_hz} Hz (the deadband's noise measure; "
                         f"on line the polynomial-approximation filters are used)")
        if not parts:
            return "no automatic settings"
        return (f"automatic settings measured on the first {self.auto_samples} samples "
                f"({self.auto_samples / self.fs:.3g} s), as the batch engine: "
                + "; ".join(parts))

    def _push(self, t, q, tau, theta):
        if self._carry is not None:
            ct, cq, ctau, cth = self._carry
            t, q, tau = np.concatenate([ct, t]), np.concatenate([cq, q]), np.concatenate(
                [ctau, tau])
            theta = None if theta is None or cth is None else np.concatenate([cth, theta])
        if t.size == 0:
            return 0
        if self.effort_lag:
            self._carry = (t[-1:], q[-1:], tau[-1:], None if theta is None else theta[-1:])
            if t.size < 2:
                return 0
            tau = (1 - self.effort_lag) * tau[:-1] + self.effort_lag * tau[1:]
            t, q = t[:-1], q[:-1]
            theta = None if theta is None else theta[:-1]
        added = 0
        for sl in self._segments(t):
            added += self._accumulate(Dataset(
                t=t[sl], q=q[sl], tau=tau[sl], theta=None if theta is None else theta[sl],
                joint_names=list(self.model.joint_names)))
        return added

    def _segments(self, t):
        """Slices of ``t`` between gaps; a gap restarts the filters."""
        period = 1.0 / self.fs
        prev = np.concatenate([[self.t_last if self.t_last is not None else t[0] - period],
                               t[:-1]])
        step = t - prev
        if np.any(step <= 0):
            i = int(np.argmax(step <= 0))
            raise DataError(f"samples must arrive in time order: t = {t[i]:.9f} s after "
                            f"{prev[i]:.9f} s")
        cuts = np.flatnonzero(np.abs(step - period) > self.gap_tolerance * period)
        self.t_last = float(t[-1])
        start = 0
        for c in cuts:
            if c > start:
                yield slice(start, c)
            self.gaps += 1
            self._flush()
            self._restart_filters()
            start = c
        yield slice(start, t.size)

    def _restart_filters(self):
        """New FIR filter states and drives-off scan (at the start, after a gap, after
        :meth:`finish`): the batch engine's :class:`DrivesOff` for a causal FIR bank (a
        filtered sample is left out when a braked raw sample lies within the bank's window
        of L samples before the raw sample it stands for)."""
        self.fir = FIRStates(self.model, self.bank, self.decimate)
        self.brakes = DrivesOff(self.model, self.fs, int(self.bank.L), 0,
                                delay=float(self.bank.delay))

    def _accumulate(self, ds):
        self.n_input += ds.t.shape[0]
        self.brakes.scan(ds)            # drives off / braked samples, as the batch engine
        out = self.fir.push(ds)
        if out is None:
            return 0
        if self.rev is None:
            before, after = fir_reversal_window(self.bank, self.decimate)
            self.rev = ReversalWindow(self.model, before, self.settings.stop_velocity,
                                      ahead=after)
        return self._equations(self.rev.push(dict(out[0],
                                                  drives_off=self.brakes.mark(out[1]))))

    def _equations(self, st):
        if st is None:
            return 0
        m = st["q"].shape[0]

        def update(W, y, mask):          # MRLS: one update per pushed block
            if mask is not None:
                W, y = W * mask[:, :, None], y * mask
            self.mrls.update(W, y)
        accumulate_states(self.model, self.base, self.neq, st, self.settings,
                          block=max(m, 1), drop_reversals=self.drop_reversals,
                          on_block=update)
        self.n_samples += m
        return m

    def _flush(self):
        rev, self.rev = self.rev, None
        return 0 if rev is None else self._equations(rev.finish())

    @property
    def pending(self):
        """Filtered samples held back for the reversal window (enter with later samples or
        :meth:`finish`)."""
        return 0 if self.rev is None else int(self.rev.flips.shape[0])

    def finish(self):
        """End of a recording: resolve pending automatic settings (:meth:`resolve`) and add
        the filtered samples held back for the reversal window (their successors will not
        come). Samples pushed afterwards start the filters afresh, as after a gap (not
        counted). Fed a whole recording and finished, the estimate is
        :func:`~robot_identification.streaming.identify_streaming`'s ``mrls`` estimate.

        Returns
        -------
        int
            Filtered samples added to the equations.
        """
        added = self.resolve()
        added += self._flush()
        self._restart_filters()
        self.t_last = None
        self._carry = None
        return added

    def estimate(self, true_values=None):
        """The current estimate.

        Parameters
        ----------
        true_values : ndarray (p,), optional
            Known base parameters (simulation): set on the result and checked
            (``far_from_truth``, ``std_understates_error``).

        Returns
        -------
        IdentificationResult
            Method ``mrls``; ``settings['flags']`` (1 identified, 0 not excited, -1 linearly
            dependent), standard deviations NaN for parameters not identified, ``gaps``,
            ``n_input``, ``friction_deadband`` and ``stop_velocity`` (per joint [rad/s]),
            ``reversal_fraction`` (of the friction rows near a reversal or stop; dropped
            with ``drop_reversals``), ``auto_samples`` (samples
            'auto' was measured on; 0: nothing automatic), ``drives_off`` (filtered samples
            left out as drives off / braked). Diagnostics: ``automatic_settings``
            (info, the resolved values), the batch engine's checks
            (:func:`~robot_identification.diagnostics.collect_diagnostics`: condition, signs,
            standard deviations, velocity threshold, dropped rows, truth; with the first
            window's summary, when 'auto' was measured on it, also its joint limits, torque
            outliers, saturation, time jumps and residual against the torque noise), then
            ``not_identified``, ``samples_lost`` and ``drives_off_rows``.

        Raises
        ------
        DataError
            No equations yet (too few samples, or the first window still being collected);
            95 % or more of the samples drives off / braked (the batch engine's rule).
        """
        if self.n_samples == 0:
            if self.settings is None:
                raise DataError(f"no equations yet: collecting the first {self.window_samples}"
                                f" samples for the automatic settings ({self.held} so far)")
            raise DataError(f"no equations yet: {self.n_input} samples pushed, the filter "
                            f"needs {self.bank.L + 1} and the reversal window "
                            f"{fir_reversal_window(self.bank, self.decimate)[1]} more (or "
                            f"finish())")
        r = self.mrls.result()
        est = estimate_from(self.neq, r.values, r.K_inv, "mrls", flags=r.flags)
        b = self.bank
        diagnostics = []
        missing = [n for n, f in zip(self.base.names, r.flags) if f != 1]
        if missing:
            diagnostics.append(Diagnostic(
                "not_identified", "warning", f"{len(missing)} of {len(r.flags)} base parameters "
                f"not identified yet (not excited or linearly dependent): {', '.join(missing)}"))
        if self.gaps:
            diagnostics.append(Diagnostic(
                "samples_lost", "warning", f"{self.gaps} gap(s) in the samples: the filters "
                f"restarted and the windows across the gaps were dropped"))
        braked = drives_off_diagnostic(self.neq, self.brakes.margin_s)    # (the batch rule)
        if braked is not None:
            diagnostics.append(braked)
        result = IdentificationResult(
            robot=self.model.config.name, names=list(self.base.names),
            expressions=self.base.expressions(), estimate=est, base=self.base,
            true_values=None if true_values is None else np.asarray(true_values, dtype=float),
            row_labels=row_labels(self.model), n_samples=self.n_samples,
            n_used_rows=int(self.neq.count.sum()),
            elapsed=time.perf_counter() - self._t_start,
            settings={"estimator": "mrls", "flags": [int(f) for f in r.flags],
                      "filter": type(b).__name__, "window": b.window, "delay": b.delay,
                      "decimate": self.decimate, "velocity_threshold": self.threshold,
                      "friction_deadband": [float(v) for v in np.broadcast_to(
                          self.settings.friction_deadband, (self.model.n,))],
                      "preprocessing": "polynomial", "drop_reversals": self.drop_reversals,
                      "stop_velocity": [float(v) for v in np.broadcast_to(
                          self.settings.stop_velocity, (self.model.n,))],
                      "reversal_window_s": round(max(fir_reversal_window(
                          self.bank, self.decimate)) * self.decimate / self.fs, 6),
                      "reversal_fraction": round(int(self.neq.reversal_counts[0])
                                                 / max(int(self.neq.reversal_counts[1]), 1), 4),
                      "auto_samples": self.auto_samples,
                      "drives_off": int(self.neq.drives_off),
                      "gaps": self.gaps, "n_input": self.n_input},
            units=[self.model.layout.units[i] for i in self.base.independent],
            normal_equations=self.neq)
        result.diagnostics = (self._auto + collect_diagnostics(self.model, result,
                                                                self._summaries) + diagnostics)
        return result


__all__ = ["OnlineIdentification"]
