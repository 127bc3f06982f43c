"""Held-out motion types: identify on a robot's default excitation, validate on motion of
other kinds, on simulated data of the shipped rigid robots (ur10e, puma560, stanford_arm,
szabo_3dof). Prints, per robot and motion type, the mean NRMSE over joints of predicted vs
measured torque (RMS(tau_pred - tau_meas) / RMS(tau_meas) per joint, both after the
identification's filter; ``robot_identification.validation.validate``) for

- ``default``: ``identify`` with the robot config (its estimator, automatic deadband, stop and
  reversal rows dropped), predicted with the config's pre-processing as ``validate`` does;
- ``physical``: the physically consistent estimate (log-det prior toward the URDF), what
  ``validate`` reports first for ``identify``'s default output on rigid arms (default,
  physical and truth are predicted as ``validate`` predicts: the Coulomb ramp up to the stop
  velocity, filtered like the measured torque);
- ``plain OLS``: ordinary least squares with plain sign(v) friction, no deadband, no rows
  dropped, the same cut-off, predicted with sign(filtered v) (what a short script does);
- ``truth``: the simulator's parameters through the default's predictor (the floor left by
  noise, filter and the friction model at rest);

and the normalised mean error (NME) of each estimate against the simulator's parameters.
Nothing is selected on validation data: every setting comes from the identification run.

Motion types (each simulated with the identifying model, its own noise seed):

- ``fourier seed``: the config's excitation with another seed (same kind, reference);
- ``slow``: another seed's excitation played at 0.15 x its speed (stick-slip, friction and
  gravity dominated);
- ``fast``: another seed's excitation played faster, its fastest joint at 0.9 x its velocity
  limit;
- ``one joint``: one joint at a time (Lin 1991): each joint out and back alone by half its
  default excursion (quintic moves of 1.5 s, 0.5 s stops), the others held;
- ``point-to-point``: quintic moves of 2 s between random poses, each followed by a 3 s hold;
- ``other region``: the excitation about a start shifted by a third of each joint's range
  (at most 1 rad, within the limits): gravity extrapolation.

Recording: the config's simulator (rate, PD gains, friction laws: Coulomb sign(v) + viscous,
Szabó's static model for szabo_3dof); positions quantised to 2 pi / 1.25e6 rad (1 um for
prismatic joints); torque (current) noise of std 10^(-snr/20) x the identification run's
torque RMS per joint, the same sensor std on every run. The UR10e is recorded like the real
logs instead (benchmarks/ur10e_sim_heldout.py: the dataset authors' rotor inertias and friction,
100 Hz, velocity quantised to 1e-4 rad/s, the torque noise std measured on the real runs).

    PYTHONPATH=$PWD python benchmarks/heldout_motions.py [--robots ur10e puma560]
        [--seeds 2] [--snr 60]
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

ROBOTS = ("ur10e", "puma560", "stanford_arm", "szabo_3dof")
MOTIONS = ("fourier seed", "slow", "fast", "one joint", "point-to-point", "other region")
MODELS = ("default", "physical", "plain OLS", "truth")
COUNTS = 1_250_000          # encoder counts per revolution
PRISMATIC_STEP = 1e-6       # m
REST_VELOCITY = 0.01        # rad/s (m/s): below it a joint counts as at rest
SHIFT = 0.6                 # rad (or m): start shift of the "other region" motion


class TimeScaled:
    """``traj`` played ``factor`` times faster: q(t) = q_0(factor t)."""

    def __init__(self, traj, factor):
        self.traj, self.factor = traj, float(factor)
        self.joint_names = getattr(traj, "joint_names", None)

    @property
    def n_joints(self):
        return self.traj.n_joints

    @property
    def duration(self):
        return self.traj.duration / self.factor

    def evaluate(self, t):
        q, dq, ddq = self.traj.evaluate(self.factor * np.atleast_1d(np.asarray(t, float)))
        return q, self.factor * dq, self.factor ** 2 * ddq

    def to_dict(self):
        return {"type": "time_scaled", "factor": self.factor, "of": self.traj.to_dict()}


def point_to_point(poses, move_s, hold_s, joint_names):
    from ur10e_sim_heldout import PointToPoint
    return PointToPoint(poses, move_s, hold_s, joint_names)


def limits(model):
    from robot_identification.excitation._trajectories import _limit_arrays
    return _limit_arrays(model)


def motions(model, spec, seed):
    """The held-out trajectories of one seed: {motion type: trajectory}."""
    from robot_identification.excitation import trajectory_from_config
    from robot_identification.excitation._trajectories import _default_amplitude
    lo, hi, vmax, _ = limits(model)
    other = trajectory_from_config(model, dict(spec, seed=int(spec.get("seed", 0)) + 100 + seed))
    start = other.evaluate(0.0)[0][0]
    out = {"fourier seed": other}
    slow = trajectory_from_config(model, dict(spec, seed=int(spec.get("seed", 0)) + 200 + seed))
    out["slow"] = TimeScaled(slow, 0.15)
    fast = trajectory_from_config(model, dict(spec, seed=int(spec.get("seed", 0)) + 300 + seed))
    t = np.linspace(0.0, fast.duration, 4001)
    peak = np.max(np.abs(fast.evaluate(t)[1]) / vmax)
    out["fast"] = TimeScaled(fast, 0.9 / peak)
    amp = 0.5 * _default_amplitude(lo, hi)
    poses = [start]
    for k in range(model.n):
        for sgn in (1.0, -1.0, 0.0):
            p = start.copy()
            p[k] += sgn * amp[k]
            poses.append(np.clip(p, lo + 0.05 * (hi - lo), hi - 0.05 * (hi - lo)))
    out["one joint"] = point_to_point(poses, 1.5, 0.5, model.joint_names)
    rng = np.random.default_rng(seed + 50)
    full = _default_amplitude(lo, hi)
    poses = start + rng.uniform(-0.6, 0.6, (7, model.n)) * full
    poses[0] = start
    out["point-to-point"] = point_to_point(poses, 2.0, 3.0, model.joint_names)
    with np.errstate(invalid="ignore"):
        shift = np.where(np.isfinite(hi - lo), np.minimum(SHIFT, (hi - lo) / 4), SHIFT)
        room = np.where(np.isfinite(hi), hi - 0.05 * (hi - lo) - full - start, np.inf)
    shift = np.minimum(shift, np.maximum(room, 0.0))
    shifted = dict(spec, seed=int(spec.get("seed", 0)) + 400 + seed,
                   start=(start + shift).tolist(), scaling="joint")
    out["other region"] = trajectory_from_config(model, shifted)
    return out


def quantise(model, q):
    step = np.where(np.array([jt == "prismatic" for jt in model.joint_types]),
                    PRISMATIC_STEP, 2 * np.pi / COUNTS)
    return np.round(q / step) * step


class Recorder:
    """Simulate and record one robot's runs with one sensor noise model."""

    def __init__(self, name, snr_db, engine="builtin", config=None):
        """``name``: a shipped robot (or ``ur10e``); ``config``: a robot config YAML instead
        (``name`` then only labels it); ``engine``: :func:`simulate`'s physics engine."""
        from robot_identification.model import load_robot
        self.name = name
        self.ur = name == "ur10e" and config is None
        if self.ur:
            from ur10e_sim_heldout import truth_model
            self.model = truth_model()
        else:
            self.model = load_robot(name, config=config)
        self.snr_db = snr_db
        self.engine = engine
        self.sigma = None

    def gains(self, traj):
        """PD gains of the simulator's 5 Hz design on the smallest inertia along ``traj``
        (the config's design uses q = 0, where the Stanford arm's joint 1 sees 3 x the
        inertia it sees elsewhere: its 100 Hz loop chatters there); None with configured
        gains."""
        import pinocchio as pin
        from robot_identification.simulation._control import DEFAULT_BANDWIDTH_HZ
        m = self.model
        if m.config.simulation.kp is not None:
            return None, None
        pm = m.pin_model
        data = pm.createData()
        q = traj.evaluate(np.linspace(0.0, traj.duration, 200))[0]
        inertia = np.min([np.diag(pin.crba(pm, data, m.pin_configuration(x)))[
            m.velocity_indices] for x in q], axis=0)
        w = 2 * np.pi * DEFAULT_BANDWIDTH_HZ
        inertia = np.maximum(inertia, 1e-6)
        return inertia * w ** 2, 2 * inertia * w

    def __call__(self, traj, seed, held_out=False):
        from robot_identification.simulation import simulate
        if self.ur:
            from ur10e_sim_heldout import record
            return record(self.model, traj, seed)
        kp, kd = self.gains(traj) if held_out else (None, None)
        ds = simulate(self.model, trajectory=traj, seed=seed, kp=kp, kd=kd,
                      engine=self.engine)
        if self.sigma is None:      # the sensor's noise: from the identification run
            self.sigma = np.sqrt(np.mean(ds.tau ** 2, axis=0)) * 10 ** (-self.snr_db / 20)
        rng = np.random.default_rng(seed + 1000)
        return replace(ds, q=quantise(self.model, ds.q),
                       tau=ds.tau + self.sigma * rng.standard_normal(ds.tau.shape))


def run_robot(name, seeds, snr_db, log=print):
    """Rows {(motion, model): [mean NRMSE per seed]} and {model: [NME per seed]}."""
    from robot_identification.excitation import trajectory_from_config
    from robot_identification.identification import identify
    from robot_identification.identification import settings_from_results
    rec = Recorder(name, snr_db)
    model = rec.model
    spec = dict(model.config.simulation.excitation)
    nrmse = {(m, k): [] for m in MOTIONS for k in MODELS}
    moving = {(m, k): [] for m in MOTIONS for k in MODELS}
    nme = {k: [] for k in MODELS if k != "truth"}
    for seed in range(seeds):
        rec.sigma = None
        ident = rec(trajectory_from_config(model, dict(spec, seed=int(spec.get("seed", 0))
                                                       + seed)), seed)
        s0 = model.config.identification
        default = identify(model, ident, estimators=(s0.estimator, "physical"))
        cut = default.settings["cutoff_hz"]
        s_def = settings_from_results(model, {"settings": default.settings})
        s_plain = replace(s0, cutoff_hz=cut, friction_deadband=0.0, drop_reversals=False,
                          velocity_threshold=0.0)
        plain = identify(model, ident, s_plain, estimator="ols")
        for k, r, e in (("default", default, None), ("physical", default, "physical"),
                        ("plain OLS", plain, None)):
            nme[k].append(r.normalised_mean_error(estimator=e))
        betas = {"default": default.estimate.values,
                 "physical": default.estimates["physical"].values,
                 "truth": default.true_values}
        for i, (motion, traj) in enumerate(motions(model, spec, seed).items()):
            val = rec(traj, 10 * seed + i + 1, held_out=True)
            for k in MODELS:
                r = plain if k == "plain OLS" else default
                beta = plain.estimate.values if k == "plain OLS" else betas[k]
                plain_k = k == "plain OLS"       # a short script: sign of the filtered v
                a, m = scores(model, r.base, beta, val, s_plain if plain_k else s_def,
                              filter_coulomb=not plain_k)
                nrmse[(motion, k)].append(a)
                moving[(motion, k)].append(m)
            log(f"{name} seed {seed} {motion:<15} ({traj.duration:5.1f} s) " + "  ".join(
                f"{k} {nrmse[(motion, k)][-1]:.4f}/{moving[(motion, k)][-1]:.4f}"
                for k in MODELS))
        log(f"{name} seed {seed}: cut-off {cut} Hz, NME " + "  ".join(
            f"{k} {nme[k][-1]:.3g}" for k in nme))
    return nrmse, moving, nme


def scores(model, base, beta, dataset, settings, filter_coulomb=True):
    """Mean NRMSE over joints of the predicted torque on ``dataset`` (what ``validate``
    reports), and the same over the samples where the joint moves (|filtered velocity| >=
    REST_VELOCITY; each joint's error RMS there over its measured torque RMS there)."""
    from robot_identification.identification import preprocess
    from robot_identification.identification import (
        filtered_coulomb, predict_torque, prediction_deadband, torque_errors)
    states, _ = preprocess(model, dataset, settings)
    meas = states["tau"]
    width = prediction_deadband(model, settings)
    pred = predict_torque(model, base, beta, states, friction_deadband=width,
                          coulomb=filtered_coulomb(model, dataset, settings, width)
                          if filter_coulomb else None)
    full = torque_errors(meas, pred, model.joint_names)["nrmse_mean"]
    move = np.abs(states["dq"]) >= REST_VELOCITY
    err = np.where(move, pred - meas, 0.0)
    ref = np.where(move, meas, 0.0)
    per = np.sqrt((err ** 2).sum(0)) / np.maximum(np.sqrt((ref ** 2).sum(0)), 1e-12)
    return full, float(np.mean(per[move.any(0)]))


def format_table(name, nrmse, moving, nme, seeds):
    lines = [f"{name}: mean NRMSE over joints, all samples / samples where the joint moves "
             f"(|v| >= {REST_VELOCITY}), mean over {seeds} seed(s)",
             f"  {'motion':<16}" + "".join(f"{k:>17}" for k in MODELS)]
    for m in MOTIONS:
        lines.append(f"  {m:<16}" + "".join(
            f"{np.mean(nrmse[(m, k)]):9.4f} /{np.mean(moving[(m, k)]):6.3f}" for k in MODELS))
    lines.append(f"  {'NME vs truth':<16}" + "".join(
        f"{np.mean(nme[k]):17.3g}" if k in nme else f"{'-':>17}" for k in MODELS))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--robots", nargs="+", default=list(ROBOTS), choices=ROBOTS)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--snr", type=float, default=60.0,
                    help="torque (current) noise [dB of the identification run's RMS]")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    tables = []
    for name in args.robots:
        nrmse, moving, nme = run_robot(name, args.seeds, args.snr,
                                       log=(lambda *_: None) if args.quiet else print)
        tables.append(format_table(name, nrmse, moving, nme, args.seeds))
        print(tables[-1], flush=True)
    print("\n\n".join(tables))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
