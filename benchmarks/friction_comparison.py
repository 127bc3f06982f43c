"""Friction models compared on Zollo's planar elastic arm, data simulated under his
Stribeck law (Zollo et al. 2014, eq. 43).

Identification models: Coulomb + viscous (f_c sign(v) + f_v v; Zollo eq. 5) without and
with the 0.5 rad/s velocity threshold of Zollo Sec. 6.1, and the static-friction model of
Szabó & Gincsainé (2021, eq. 7-9) with shape constants K_v, delta. Printed per model:
normalised mean error (Zollo's measure) over all base parameters and over the non-friction
ones, motor-row residual RMS, and the friction estimates next to their references:
Coulomb + viscous -> (f1, f2) of eq. 43 (Zollo's Table 1 truth); static model -> the least-
squares fit of eq. 7 to eq. 43 over the motor velocities of the data (the best static-model
approximation of the simulated law, over the same velocity range as the rows used).

Run:  PYTHONPATH=$PWD python benchmarks/friction_comparison.py [--kv 100] [--delta 10] [--seed 0]
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from robot_identification.model import RobotModel, load_robot  # noqa: E402
from robot_identification.model._config import FrictionConfig  # noqa: E402
from robot_identification.identification import identify  # noqa: E402
from robot_identification.simulation import simulate, zollo_stribeck  # noqa: E402

FRICTION_KEYS = ("viscous", "coulomb", "stiction", "stribeck")


def static_fit(model, dtheta, kv, delta, threshold=0.0):
    """Least-squares fit of eq. 7 (fs, fsc, fv) to each joint's eq. 43 friction over the
    samples of dtheta with |dtheta| > threshold."""
    out = []
    for k, j in enumerate(model.config.joints):
        law = j.simulation_friction
        v = dtheta[:, k]
        v = v[np.abs(v) > threshold]
        F = zollo_stribeck(v, *(law[f"f{i}"] for i in range(1, 7)))
        A = np.column_stack([2 / np.pi * np.arctan(kv * v), 2 / np.pi * np.arctan(delta * v), v])
        fs, fsc, fv = np.linalg.lstsq(A, F, rcond=None)[0]
        out.append({"stiction": fs, "stribeck": fsc, "viscous": fv})
    return out


def compare(seed=0, kv=100.0, delta=10.0, dataset=None, exact=False):
    """Rows of the comparison table (list of dict), the dataset used and the static fit.

    ``exact``: record the simulator's exact derivatives, unquantised positions and the held
    command torque (consistent with those derivatives), and use
    them unfiltered (isolates the friction-model mismatch from the measurement chain);
    otherwise Zollo's chain (encoders, 20 Hz Butterworth, central differences)."""
    zollo = load_robot("zollo_planar")
    if dataset is not None:
        ds = dataset
    elif exact:
        ds = simulate(zollo, seed=seed, derivatives=True, quantise=False, torque="command")
    else:
        ds = simulate(zollo, seed=seed)
    static = RobotModel(replace(zollo.config, friction=FrictionConfig(
        model="static", stiction_sharpness=kv, stribeck_sharpness=delta)),
                        urdf_xml=zollo.urdf_xml)
    dtheta = ds.dtheta if ds.dtheta is not None else np.gradient(ds.theta, ds.t, axis=0)
    fit = static_fit(zollo, dtheta, kv, delta)
    rows = []
    for label, model, thr in (("Coulomb+viscous", zollo, 0.0),
                              ("Coulomb+viscous, |v|>0.5", zollo, 0.5),
                              (f"static (Kv={kv:g}, delta={delta:g})", static, 0.0),
                              ("static, |v|>0.5", static, 0.5)):
        settings = replace(model.config.identification, velocity_threshold=thr)
        if exact:
            settings = replace(settings, cutoff_hz=None)
        res = identify(model, [ds], settings, use_measured_derivatives=exact)
        true = res.true_values.copy()
        est = dict(zip(res.names, res.estimate.values))
        if model is static:          # reference for fs, fsc, fv: the static fit of eq. 43
            fit_thr = static_fit(zollo, dtheta, kv, delta, thr)
            for i, nm in enumerate(res.names):
                joint, key = nm.rsplit(".", 1)
                if key in ("stiction", "stribeck", "viscous"):
                    true[i] = fit_thr[model.joint_names.index(joint)][key]
        err = np.abs(res.estimate.values - true)
        nz = np.abs(true) > 1e-12
        err[nz] /= np.abs(true[nz])
        fr = np.array([nm.rsplit(".", 1)[-1] in FRICTION_KEYS for nm in res.names])
        rows.append({"model": label, "nme_all": float(err.mean()),
                     "nme_nonfriction": float(err[~fr].mean()),
                     "nme_friction": float(err[fr].mean()),
                     "residual_rms": res.estimate.residual_rms[model.n:].tolist(),
                     "friction": {nm: (est[nm], true[i])
                                  for i, nm in enumerate(res.names) if fr[i]}})
    return rows, ds, fit


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kv", type=float, default=100.0, help="K_v [s/rad]")
    ap.add_argument("--delta", type=float, default=10.0, help="delta [s/rad]")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--exact", action="store_true",
                    help="exact derivatives, no quantisation or filtering")
    a = ap.parse_args(argv)
    rows, ds, fit = compare(a.seed, a.kv, a.delta, exact=a.exact)
    chain = ("exact derivatives, unquantised" if a.exact else
             "encoders, 20 Hz Butterworth, central differences")
    print(f"Zollo planar arm, simulated under eq. 43 (config excitation, {ds.t[-1]:.1f} s, "
          f"{len(ds.t)} samples, seed {a.seed}; {chain})")
    print(f"{'model':34s} {'NME all':>8} {'NME non-fr.':>11} {'NME fr.':>8} "
          f"{'motor resid. RMS [N m]':>24}")
    for r in rows:
        rr = ", ".join(f"{x:.4f}" for x in r["residual_rms"])
        print(f"{r['model']:34s} {r['nme_all']:8.4f} {r['nme_nonfriction']:11.4f} "
              f"{r['nme_friction']:8.3f} {rr:>24}")
    print("\nfriction estimates (estimate / reference):")
    for r in rows:
        items = "  ".join(f"{k}={e:.4f}/{t:.4f}" for k, (e, t) in r["friction"].items())
        print(f"  {r['model']:34s} {items}")
    print("\nstatic-model fit of eq. 43 over the data's motor velocities (reference): "
          + "; ".join(f"joint{k + 1}: stiction={f['stiction']:.4f} "
                      f"stribeck={f['stribeck']:.4f} viscous={f['viscous']:.4f}"
                      for k, f in enumerate(fit)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
