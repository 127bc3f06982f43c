"""Held-out motion types on the elastic-joint robots (zollo_planar, puma560_elastic): identify
on the robot's default excitation, validate on motion of other kinds (the sibling of
``heldout_motions.py``, same motion types). Prints, per robot and motion type, the mean NRMSE
over joints of the predicted vs measured MOTOR torque (RMS(u_pred - u_meas) / RMS(u_meas) per
joint, both after the identification's filter; ``robot_identification.validation.validate``,
the motor-side rows of Zollo et al. 2014, eq. 13) for

- ``default``: ``identify`` with the robot config (OLS, the config's 20 Hz filter and motor
  velocity threshold, automatic deadband, stop and reversal rows dropped), validated as
  ``validate`` does with the identification's settings;
- ``plain OLS``: ordinary least squares with plain sign(dtheta) friction, no deadband, no
  velocity threshold, no rows dropped, the same cut-off, predicted with sign(filtered
  dtheta) (what a short script does);
- ``truth``: the simulator's parameters through the default's predictor (the floor left by
  noise, filter and the friction model);

and the normalised mean error (NME) of each estimate's base parameters and of its joint
stiffnesses K against the simulator's. Nothing is selected on validation data.

Motion types: those of ``heldout_motions.py`` (``fourier seed`` is the config's excitation
with another seed, whatever its type), simulated in closed loop with the config's
simulator: the De Luca-Siciliano-Zollo PD on the motor positions + gravity compensation,
the config's gains, simulation friction laws (Zollo's eq. 43 Stribeck model on
zollo_planar), rate and encoders (quantised link and motor positions). A run whose
reference exceeds a velocity limit, or whose simulation diverges, is reported, not hidden.

Recording noise: torque (motor current) noise of std 10^(-snr/20) x the identification
run's motor torque RMS per joint, the same sensor std on every run (as heldout_motions.py).

    PYTHONPATH=$PWD python benchmarks/heldout_motions_elastic.py [--robots zollo_planar]
        [--seeds 2] [--snr 60]
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from heldout_motions import MOTIONS, limits, motions  # noqa: E402

ROBOTS = ("zollo_planar", "puma560_elastic")
MODELS = ("default", "plain OLS", "truth")


class Recorder:
    """Simulate one elastic robot's runs (config simulator) with one torque sensor noise."""

    def __init__(self, name, snr_db, friction=None):
        from robot_identification.model import load_robot
        self.name = name
        self.model = load_robot(name)
        self.snr_db = snr_db
        self.friction = friction
        self.sigma = None

    def __call__(self, traj, seed):
        from robot_identification.simulation import simulate
        ds = simulate(self.model, trajectory=traj, seed=seed, friction=self.friction)
        if self.sigma is None:      # the sensor's noise: from the identification run
            self.sigma = np.sqrt(np.mean(ds.tau ** 2, axis=0)) * 10 ** (-self.snr_db / 20)
        rng = np.random.default_rng(seed + 1000)
        return replace(ds, tau=ds.tau + self.sigma * rng.standard_normal(ds.tau.shape))


def speed_ratio(model, traj):
    """max over the run of |dq_ref| / velocity limit and |ddq_ref| / acceleration limit
    (> 1: the reference exceeds a limit)."""
    _, _, vmax, amax = limits(model)
    t = np.linspace(0.0, traj.duration, 4001)
    _, dq, ddq = traj.evaluate(t)
    return (float(np.max(np.abs(dq) / vmax)), float(np.max(np.abs(ddq) / amax)))


def stiffness_error(model, result, estimator=None):
    """Mean over joints of |K_est - K_true| / K_true, or NaN when K is not a base parameter
    of its own."""
    est = result.estimate if estimator is None else result.estimates[estimator]
    names = list(result.base.names)
    errs = []
    for joint in model.joint_names:
        key = f"{joint}.stiffness"
        if key not in names:
            return float("nan")
        i = names.index(key)
        errs.append(abs(est.values[i] - result.true_values[i]) / abs(result.true_values[i]))
    return float(np.mean(errs))


def run_robot(name, seeds, snr_db, log=print, friction=None):
    """{(motion, model): [mean NRMSE per seed]}, {model: [NME]}, {model: [K error]}."""
    from robot_identification.errors import DataError
    from robot_identification.excitation import trajectory_from_config
    from robot_identification.identification import identify
    from robot_identification.identification import settings_from_results
    from robot_identification.validation import validate
    rec = Recorder(name, snr_db, friction)
    model = rec.model
    spec = dict(model.config.simulation.excitation)
    nrmse = {(m, k): [] for m in MOTIONS for k in MODELS}
    nme = {"default": [], "plain OLS": []}
    kerr = {"default": [], "plain OLS": []}
    for seed in range(seeds):
        rec.sigma = None
        ident = rec(trajectory_from_config(model, dict(spec, seed=int(spec.get("seed", 0))
                                                       + seed)), seed)
        s0 = model.config.identification
        default = identify(model, ident)
        cut = default.settings["cutoff_hz"]
        s_def = settings_from_results(model, {"settings": default.settings})
        s_plain = replace(s0, cutoff_hz=cut, friction_deadband=0.0, drop_reversals=False,
                          velocity_threshold=0.0)
        plain = identify(model, ident, s_plain, estimator="ols")
        for k, r in (("default", default), ("plain OLS", plain)):
            nme[k].append(r.normalised_mean_error())
            kerr[k].append(stiffness_error(model, r))
        for i, (motion, traj) in enumerate(motions(model, spec, seed).items()):
            ratio = speed_ratio(model, traj)
            try:
                val = rec(traj, 10 * seed + i + 1)
            except DataError as exc:
                log(f"{name} seed {seed} {motion}: simulation failed: {exc}")
                for k in MODELS:
                    nrmse[(motion, k)].append(np.nan)
                continue
            betas = {"default": default.estimate.values, "truth": default.true_values}
            v_d = validate(model, default.base, betas, [val], settings=s_def)[0]["models"]
            v_p = validate(model, plain.base, {"plain OLS": plain.estimate.values}, [val],
                           settings=s_plain, filter_coulomb=False)[0]["models"]
            for k in MODELS:
                nrmse[(motion, k)].append((v_p if k == "plain OLS" else v_d)[k]["nrmse_mean"])
            log(f"{name} seed {seed} {motion:<15} ({traj.duration:5.1f} s, peak v "
                f"{ratio[0]:.2f}, a {ratio[1]:.2f} x limit) " + "  ".join(
                    f"{k} {nrmse[(motion, k)][-1]:.4f}" for k in MODELS))
        log(f"{name} seed {seed}: cut-off {cut} Hz, NME " + "  ".join(
            f"{k} {nme[k][-1]:.3g} (K {kerr[k][-1]:.2g})" for k in nme))
    return nrmse, nme, kerr


def format_table(name, nrmse, nme, kerr, seeds):
    lines = [f"{name}: mean NRMSE over joints of the motor torque, mean over {seeds} seed(s)",
             f"  {'motion':<16}" + "".join(f"{k:>11}" for k in MODELS)]
    for m in MOTIONS:
        lines.append(f"  {m:<16}" + "".join(f"{np.mean(nrmse[(m, k)]):11.4f}"
                                             for k in MODELS))
    for label, d in (("NME base", nme), ("NME K", kerr)):
        lines.append(f"  {label:<16}" + "".join(
            f"{np.mean(d[k]):11.3g}" if k in d else f"{'-':>11}" for k in MODELS))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--robots", nargs="+", default=list(ROBOTS), choices=ROBOTS)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--snr", type=float, default=60.0,
                    help="motor torque (current) noise [dB of the identification run's RMS]")
    ap.add_argument("--friction", choices=("regressor",), default=None,
                    help="simulate every joint with the identification's friction law "
                         "(default: the config's simulation_friction)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    tables = []
    for name in args.robots:
        nrmse, nme, kerr = run_robot(name, args.seeds, args.snr,
                                     log=(lambda *_: None) if args.quiet else print,
                                     friction=args.friction)
        tables.append(format_table(name, nrmse, nme, kerr, args.seeds))
        print(tables[-1], flush=True)
    print("\n\n".join(tables))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
