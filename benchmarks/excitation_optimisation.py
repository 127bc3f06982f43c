"""Excitation optimisation: criterion before/after, condition number and wall time.

For each robot (default: puma560_elastic and ur10e when shipped, plus szabo_3dof and
zollo_planar): a random rest-to-rest Fourier series (M harmonics, period T, start = middle
of the position limits or --start) is optimised with SLSQP for the chosen criterion within
the joint position/velocity/acceleration limits (robot config; --acceleration-limit for
joints without one). The condition number of the column-scaled base regressor is reported
on the optimisation grid and on a dense 100 Hz validation grid, and the result is checked
with check_limits at 1 kHz. Elastic robots are designed on their rigid limit (theta = q).

Run:  PYTHONPATH=$PWD python benchmarks/excitation_optimisation.py [--robots ur10e ...]
      [--criterion cond|frobenius|logdet] [--harmonics 5] [--period 10] [--maxiter 60]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from robot_identification.excitation import check_limits, save_trajectory  # noqa: E402
from robot_identification.excitation._optimize import (  # noqa: E402
    FourierParametrisation, base_regressor_function, criterion_value, design_model,
    optimise_excitation)
from robot_identification.identifiability import base_parameters  # noqa: E402
from robot_identification.model import available_robots, load_robot  # noqa: E402

STARTS = {"szabo_3dof": [0.0, -1.0, 1.5]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", nargs="+")
    ap.add_argument("--criterion", default="cond", choices=("cond", "frobenius", "logdet"))
    ap.add_argument("--harmonics", type=int, default=5)
    ap.add_argument("--period", type=float, default=10.0)
    ap.add_argument("--samples", type=int, default=120)
    ap.add_argument("--maxiter", type=int, default=60)
    ap.add_argument("--acceleration-limit", type=float, default=5.0,
                    help="[rad/s^2] for joints without an acceleration limit (default 5)")
    ap.add_argument("--save", help="folder for the optimised trajectories (<robot>.yaml)")
    a = ap.parse_args(argv)
    shipped = available_robots()
    robots = a.robots or [r for r in ("puma560_elastic", "ur10e", "szabo_3dof", "zollo_planar")
                          if r in shipped]
    print(f"criterion {a.criterion}; Fourier M = {a.harmonics}, period {a.period} s, "
          f"{a.samples} criterion samples, SLSQP maxiter {a.maxiter}")
    print(f"{'robot':16s} {'p':>3} {'x':>3} {'crit before':>12} {'crit after':>11} "
          f"{'cond before':>11} "
          f"{'cond after':>10} {'cond@100Hz b/a':>16} {'time [s]':>8} {'iter':>4} limits")
    for name in robots:
        model = load_robot(name)
        q0 = np.zeros(model.n)
        for k, j in enumerate(model.config.joints):
            if j.limits.position is not None:
                q0[k] = 0.5 * sum(j.limits.position)
        if name in STARTS:
            q0 = np.array(STARTS[name])
        par = FourierParametrisation(model.n, a.harmonics, a.period, q0, model.joint_names)
        dm = design_model(model)
        base = base_parameters(dm)
        res = optimise_excitation(model, par, a.criterion, n_samples=a.samples, maxiter=a.maxiter,
                                  base=base, acceleration_limit=a.acceleration_limit)
        f = base_regressor_function(dm, base)
        tv = np.arange(0.0, a.period, 0.01)
        cb = criterion_value(f(*par.evaluate(res.x0, tv)), "cond")
        ca = criterion_value(f(*par.evaluate(res.x, tv)), "cond")
        traj = par.trajectory(res.x)
        try:
            check_limits(model, traj)
            ok = "ok" if res.within_limits else "VIOLATED"
        except Exception as exc:  # report, do not stop the benchmark
            ok = f"VIOLATED ({exc})"
        print(f"{name:16s} {len(base):3d} {par.size:3d} {res.before:12.4g} {res.after:11.4g} "
              f"{res.cond_before:11.4g} {res.cond_after:10.4g} {cb:7.4g}/{ca:<8.4g} "
              f"{res.seconds:8.1f} {res.iterations:4d} {ok}")
        if a.save:
            save_trajectory(traj, Path(a.save) / f"{name}.yaml")
    return 0


if __name__ == "__main__":
    sys.exit(main())
