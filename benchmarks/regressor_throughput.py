"""Regressor throughput: samples/s of ``regressor()`` for a 6-dof arm vs raw pinocchio.

Usage::

    PYTHONPATH=. python benchmarks/regressor_throughput.py [--samples 5000]

For ``puma560_elastic`` (elastic complete model: 12-dof augmented pinocchio model, link
and motor rows, K and friction columns) and ``puma560`` (rigid, armature and friction
columns), times :func:`robot_identification.regressor.regressor` on random states and,
in the same run, a bare loop of ``pin.computeJointTorqueRegressor`` over the same
samples on the model pinocchio evaluates (the augmented rotor model for the elastic arm).
Both run alternately, best of ``--repeat``, with one BLAS thread; the throughput ratio
(raw time / our time) is printed for wall-clock and for process CPU time (on a shared
machine the CPU-time ratio is the steadier of the two).
"""
import argparse
import time

import numpy as np
import pinocchio as pin
from threadpoolctl import threadpool_limits

from robot_identification.identifiability import random_states
from robot_identification.model import load_robot
from robot_identification.regressor import _kernel, regressor


def _best_interleaved(fns, repeat, clock):
    """Best time of each function, the functions run alternately (fair under varying load)."""
    best = [np.inf] * len(fns)
    for _ in range(repeat):
        for j, fn in enumerate(fns):
            t0 = clock()
            fn()
            best[j] = min(best[j], clock() - t0)
    return best


def bench(name, n_samples, repeat):
    model = load_robot(name)
    st = random_states(model, n_samples, np.random.default_rng(0))
    if model.config.elastic:
        pm = model.rotor_model
        qa = np.zeros((n_samples, pm.nq))
        qa[:, : model.pin_model.nq] = model.pin_configuration(st["q"])
        va, aa = np.zeros((n_samples, pm.nv)), np.zeros((n_samples, pm.nv))
        va[:, : model.n], aa[:, : model.n] = st["dq"], st["ddq"]
        va[:, model.n:], aa[:, model.n:] = st["dtheta"], st["ddtheta"]
    else:
        pm = model.pin_model
        qa = model.pin_configuration(st["q"])
        va, aa = st["dq"], st["ddq"]
    data = pm.createData()

    def raw():
        for i in range(n_samples):
            pin.computeJointTorqueRegressor(pm, data, qa[i], va[i], aa[i])
    fns = [lambda: regressor(model, **st), raw]
    t_ours, t_raw = _best_interleaved(fns, repeat, time.perf_counter)
    c_ours, c_raw = _best_interleaved(fns, repeat, time.process_time)
    rows = model.rows_per_sample
    print(f"{name:16s} {model.n_parameters:3d} params x {rows:2d} rows: "
          f"regressor() {n_samples / t_ours:9.0f} samples/s | raw pinocchio "
          f"computeJointTorqueRegressor ({pm.nv}-dof) {n_samples / t_raw:9.0f} samples/s | "
          f"throughput ratio {t_raw / t_ours:.2f} wall, {c_raw / c_ours:.2f} CPU time "
          f"(target >= 0.8)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    print(f"pinocchio {pin.__version__}, {args.samples} random samples, best of {args.repeat}; "
          f"regressor path: {_kernel.status()}")
    with threadpool_limits(1, user_api="blas"):
        for name in ("puma560_elastic", "puma560"):
            bench(name, args.samples, args.repeat)


if __name__ == "__main__":
    main()
