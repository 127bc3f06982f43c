"""On-line identification: base parameters updated as samples arrive (live topics, bag replay).

The identification engine's streaming pieces (:mod:`robot_identification.identification`),
fed sample block by sample block instead of from a recording: causal
polynomial-approximation FIR filters (Lomakin & Deutscher eq. 28-37, :class:`FIRStates`), the
base regressor, the additive normal equations and the modified recursive least squares of
Lomakin & Deutscher (Fig. 1, :class:`~robot_identification.estimation.MRLS`, one update per
pushed block) with its identifiability flags (1 identified, 0 not excited, -1 linearly
dependent). Fed the samples of a recording in any pieces, the estimate equals
:func:`~robot_identification.streaming.identify_streaming` with ``estimator='mrls'`` on that
recording (to rounding). Not applied here: the engine's automatic settings resolved on a
whole recording (``cutoff_hz``/``friction_deadband`` ``'auto'``) and reversal dropping.

A gap in the samples (a lost message: a step more than ``gap_tolerance`` sample periods off)
restarts the filters: the equations of the samples on both sides are kept (they are
additive), the window across the gap is dropped and counted (``gaps``).
"""
from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from robot_identification.data import Dataset
from robot_identification.errors import DataError
from robot_identification.estimation import MRLS, NormalEquations
from robot_identification.identifiability import base_parameters
from robot_identification.identification import (
    FIRStates, IdentificationResult, accumulate_states, estimate_from, make_bank, row_labels)


class OnlineIdentification:
    """Recursive identification from samples that arrive in pieces.

    Parameters
    ----------
    model : RobotModel
    fs : float
        Sample rate [Hz] of the pushed samples.
    pa : dict, optional
        Polynomial-approximation filter settings (``window`` [s], default 0.044; ``N`` 1;
        ``alpha``, ``beta`` 3, 3), as :func:`~robot_identification.streaming.identify_streaming`.
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

    Raises
    ------
    DataError
        Bad filter settings or effort lag.
    """

    def __init__(self, model, fs, *, pa=None, decimate=1, velocity_threshold=None,
                 effort_lag=0.0, theta0=None, mrls_options=None, gap_tolerance=0.5):
        if not 0 <= effort_lag < 1:
            raise DataError(f"effort_lag must lie in [0, 1) sample periods, got {effort_lag}")
        self.model = model
        self.fs = float(fs)
        kw = {"window": 0.044, "N": 1, "alpha": 3.0, "beta": 3.0}
        kw.update(pa or {})
        self.bank = make_bank("pa", self.fs, **kw)
        self.decimate = int(decimate)
        self.threshold = (model.config.identification.velocity_threshold
                          if velocity_threshold is None else float(velocity_threshold))
        self.effort_lag = float(effort_lag)
        self.gap_tolerance = float(gap_tolerance)
        self.base = base_parameters(model)
        p = len(self.base)
        if theta0 is None:
            theta0 = self.base.base_values(model.nominal_parameters())
        self.mrls = MRLS(p, theta0=np.asarray(theta0, dtype=float), names=self.base.names,
                         **(mrls_options or {}))
        self.neq = NormalEquations(p, model.rows_per_sample)
        # the engine's accumulation step: this threshold, plain sign(v) (no 'auto' deadband)
        self._settings = replace(model.config.identification, velocity_threshold=self.threshold,
                                 friction_deadband=0.0)
        self.fir = FIRStates(model, self.bank, self.decimate)
        self.n_input = 0            # samples pushed
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
            self.fir = FIRStates(self.model, self.bank, self.decimate)
            start = c
        yield slice(start, t.size)

    def _accumulate(self, ds):
        self.n_input += ds.t.shape[0]
        out = self.fir.push(ds)
        if out is None:
            return 0
        st, _ = out
        m = st["q"].shape[0]

        def update(W, y, mask):          # MRLS: one update per pushed block
            if mask is not None:
                W, y = W * mask[:, :, None], y * mask
            self.mrls.update(W, y)
        accumulate_states(self.model, self.base, self.neq, st, self._settings,
                          block=max(m, 1), on_block=update)
        self.n_samples += m
        return m

    def estimate(self):
        """The current estimate.

        Returns
        -------
        IdentificationResult
            Method ``mrls``; ``settings['flags']`` (1 identified, 0 not excited, -1 linearly
            dependent), standard deviations NaN for parameters not identified, ``gaps``,
            ``n_input``.

        Raises
        ------
        DataError
            No equations yet.
        """
        from robot_identification.diagnostics import Diagnostic
        if self.n_samples == 0:
            raise DataError(f"no equations yet: {self.n_input} samples pushed, the filter "
                            f"needs {self.bank.L + 1}")
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
        return IdentificationResult(
            robot=self.model.config.name, names=list(self.base.names),
            expressions=self.base.expressions(), estimate=est, base=self.base,
            true_values=None, row_labels=row_labels(self.model), n_samples=self.n_samples,
            n_used_rows=int(self.neq.count.sum()),
            elapsed=time.perf_counter() - self._t_start,
            settings={"estimator": "mrls", "flags": [int(f) for f in r.flags],
                      "filter": type(b).__name__, "window": b.window, "delay": b.delay,
                      "decimate": self.decimate, "velocity_threshold": self.threshold,
                      "gaps": self.gaps, "n_input": self.n_input},
            units=[self.model.layout.units[i] for i in self.base.independent],
            normal_equations=self.neq, diagnostics=diagnostics)


__all__ = ["OnlineIdentification"]
