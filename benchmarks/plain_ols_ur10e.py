"""The plain OLS script: the reference cost of identifying the UR10e from its real CSV runs.

What a user would write with numpy, scipy and this package's model and regressor, doing the
work ``identify --robot ur10e --estimator ols`` must do and nothing else: read each CSV
(stdlib ``csv``; time, q, dq and currents x the config's drive gains), trim the idle ends,
resample onto the median step, zero-phase Butterworth (the config's order and cut-off) on
q, dq and the torques, ddq by central differences of the filtered dq, the regressor on the
base parameters of the model, one least-squares solve on all runs. No diagnostics, no
results file. ``benchmarks/identify_performance.py`` times it beside the command, each in a
fresh process (start-up and imports included in both).

    PYTHONPATH=$PWD python benchmarks/plain_ols_ur10e.py FILE.csv [FILE.csv ...]
"""
import csv
import sys

import numpy as np
from scipy.signal import butter, sosfiltfilt

from robot_identification.identifiability import base_parameters
from robot_identification.model import load_robot
from robot_identification.regressor import regressor


def read_run(path, gains, idle_velocity, idle_margin):
    with open(path, newline="") as f:
        rows = np.array([[float(x) for x in r] for r in csv.reader(f) if len(r) == 31])
    t, q, dq, tau = rows[:, 0], rows[:, 1:7], rows[:, 7:13], rows[:, 13:19] * gains
    moving = np.flatnonzero(np.abs(dq).max(axis=1) > idle_velocity)
    lo = np.searchsorted(t, t[moving[0]] - idle_margin)
    hi = np.searchsorted(t, t[moving[-1]] + idle_margin, side="right")
    t, q, dq, tau = t[lo:hi], q[lo:hi], dq[lo:hi], tau[lo:hi]
    step = np.median(np.diff(t))
    tu = t[0] + step * np.arange(int((t[-1] - t[0]) / step) + 1)
    q, dq, tau = ([np.column_stack([np.interp(tu, t, x[:, j]) for j in range(6)])
                   for x in (q, dq, tau)])
    return step, q, dq, tau


def main(paths):
    model = load_robot("ur10e")
    ident, opts = model.config.identification, model.config.extra["csv"]
    base = base_parameters(model)
    rows_W, rows_y = [], []
    for path in paths:
        step, q, dq, tau = read_run(path, np.asarray(opts["drive_gains"]),
                                    opts["idle_velocity"], opts["idle_margin"])
        sos = butter(ident.filter_order, ident.cutoff_hz, fs=1.0 / step, output="sos")
        q, dq, tau = (sosfiltfilt(sos, x, axis=0) for x in (q, dq, tau))
        ddq = np.gradient(dq, step, axis=0)
        Y = regressor(model, q, dq, ddq)
        rows_W.append(base.project(Y).reshape(-1, len(base)))
        rows_y.append(tau.reshape(-1))
    estimate, *_ = np.linalg.lstsq(np.vstack(rows_W), np.concatenate(rows_y), rcond=None)
    return base.names, estimate


if __name__ == "__main__":
    names, values = main(sys.argv[1:])
    for name, value in zip(names, values):
        print(f"{name} {value:.6g}")
