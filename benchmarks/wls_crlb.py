"""Szabó & Gincsainé (2021) Table 2 Monte Carlo: LS vs WLS on the 3-dof arm with static
friction, and the WLS variance against the Cramér-Rao bound (W^T Sigma^-1 W)^-1.

Data as in the paper (Sec. 3): inverse dynamics (pinocchio rnea + eq. 7-9 friction) along
an excitation trajectory (Fourier series eq. 22, optimised for CondF(W^T W), eq. 20-21),
torques corrupted by zero-mean Gaussian noise sigma_tau = [0.5, 0.3, 0.7] N m. WLS is run
with the noise variances estimated from OLS residuals (the practical estimator) and with
the true ones (eq. 19).

Run:  PYTHONPATH=$PWD python benchmarks/wls_crlb.py [--runs 500] [--samples 2000] [--workers K]
The Monte-Carlo runs are :func:`robot_identification.identification.monte_carlo` (run i draws its
noise from seed SEED + 100 + i), the computation behind ``robot-identification montecarlo``.
Prints one row per base parameter (Szabó's Table 2 order): exact, LS mean/variance, WLS
mean/variance, CRLB, WLS variance / CRLB (goal <= 1.2), and the paper's printed values.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test"))

from robot_identification.excitation._optimize import (  # noqa: E402
    FourierParametrisation, optimise_excitation)
from robot_identification.identifiability import base_parameters_from_matrix  # noqa: E402
from robot_identification.identifiability._base import random_states  # noqa: E402
from robot_identification.model import load_robot  # noqa: E402
from robot_identification.regressor import regressor  # noqa: E402
from robot_identification.identification import monte_carlo  # noqa: E402
from test_szabo_table2 import (  # noqa: E402
    SIGMA, TABLE2, TRUE_FRICTION, rnea_static_friction, szabo_columns)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--samples", type=int, default=2000, help="samples over the 10 s period")
    ap.add_argument("--no-optimise", action="store_true", help="random Fourier coefficients")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1,
                    help="Dask workers (local cluster); the numbers do not depend on it")
    a = ap.parse_args(argv)

    model = load_robot("szabo_3dof")
    cols = szabo_columns(model)
    names = [model.parameter_names[c] for c in cols]
    st = random_states(model, 200, np.random.default_rng(0))
    W_random = regressor(model, **st).reshape(-1, model.n_parameters)[:, cols]
    base = base_parameters_from_matrix(W_random, names)
    par = FourierParametrisation(3, 5, 10.0, np.array([0.0, -1.0, 1.5]), model.joint_names)
    if a.no_optimise:
        x = par.initial(np.random.default_rng(2), 0.4)
        how = "random Fourier coefficients"
    else:
        # the robot's own base set includes the (zero) rotor-inertia columns; optimise on
        # Szabó's 24-column base regressor instead
        class _Base:
            def project(self, Y):
                return base.project(Y[..., cols])

            def __len__(self):
                return len(base)
        res = optimise_excitation(model, par, "frobenius", n_samples=150, maxiter=40, base=_Base(),
                                  seed=a.seed)
        x = res.x
        how = (f"optimised for CondF (eq. 20): {res.before:.4g} -> {res.after:.4g}, cond "
               f"{res.cond_before:.4g} -> {res.cond_after:.4g}, {res.seconds:.1f} s")
    t = np.linspace(0.0, 10.0, a.samples, endpoint=False)
    q, dq, ddq = par.evaluate(x, t)
    W = base.project(regressor(model, q, dq, ddq)[:, :, cols])
    tau = rnea_static_friction(model, q, dq, ddq, **TRUE_FRICTION)
    beta = base.base_values(model.nominal_parameters()[cols])
    mc = monte_carlo(W, tau, SIGMA, a.runs, seed=a.seed + 100, true=beta,
                     estimators=("ols", "wls", "wls_known"), workers=a.workers)
    crlb = np.diag(mc.crlb)
    est = {"ls": mc.estimates["ols"], "wls": mc.estimates["wls"],
           "wls_known": mc.estimates["wls_known"]}
    mean = {k: v.mean(axis=0) for k, v in est.items()}
    var = {k: v.var(axis=0, ddof=1) for k, v in est.items()}
    print(f"Szabó 3-dof arm: {a.runs} Monte-Carlo runs, {a.samples} samples x 3 joints, "
          f"sigma_tau = {SIGMA.tolist()} N m, K_v = {model.config.friction.stiction_sharpness}, "
          f"delta = {model.config.friction.stribeck_sharpness} s/rad")
    print(f"trajectory: {how}; {a.workers} worker(s)")
    order = {e: i for i, e in enumerate(base.expressions())}
    hdr = (f"{'#':>2} {'expression':58s} {'exact':>7} {'LS mean':>8} {'LS var':>9} "
           f"{'WLS mean':>8} "
           f"{'WLS var':>9} {'CRLB':>9} {'WLS/CRLB':>8} {'WLSk/CRLB':>9} | {'paper LS':>8} "
           f"{'var':>8} {'WLS':>7} {'var':>8}")
    print(hdr)
    print("-" * len(hdr))
    ratios = []
    for k, (expr, exact, pls, pvls, pw, pvw) in enumerate(TABLE2, 1):
        i = order[expr]
        r, rk = var["wls"][i] / crlb[i], var["wls_known"][i] / crlb[i]
        ratios.append(r)
        print(f"{k:2d} {expr:58s} {beta[i]:7.3f} {mean['ls'][i]:8.3f} {var['ls'][i]:9.2e} "
              f"{mean['wls'][i]:8.3f} {var['wls'][i]:9.2e} {crlb[i]:9.2e} {r:8.2f} {rk:9.2f} | "
              f"{pls:8.3f} {pvls:8.2e} {pw:7.3f} {pvw:8.2e}")
    ratios = np.array(ratios)
    se = 2.0 * np.sqrt(2.0 / (a.runs - 1))
    print(f"WLS (estimated sigma) variance / CRLB: median {np.median(ratios):.3f}, max "
          f"{ratios.max():.3f} (sampling error of a variance ratio, 2 sigma: +-{se:.3f}); "
          f"goal <= 1.2: {'met' if ratios.max() <= 1.2 else 'NOT met'}")
    lw = var["wls"] / var["ls"]
    print(f"var(WLS) / var(LS): min {lw.min():.2f}, median {np.median(lw):.2f}, "
          f"max {lw.max():.2f}")
    zmax = np.max(np.abs(mean["wls"] - beta) / np.sqrt(var["wls"] / a.runs))
    print(f"largest |WLS mean - exact| in standard errors: {zmax:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
