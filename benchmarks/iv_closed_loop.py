"""IDIM-IV vs OLS / WLS on noisy closed-loop simulations (the same data for all three).

The arm follows a Fourier excitation under the PD controller with gravity compensation
(robot_identification.simulation, 1 kHz); the controller sees the NOISY positions (Gaussian
noise of std ``--q-noise`` rad on every encoder reading, fed back into the torque: the
closed-loop correlation that biases OLS) and the same noisy positions are recorded; white
noise is added to the recorded torques (ur10e: the std measured on the real runs, see
ur10e_sim_heldout.py; puma560: 1 % of the torque RMS). Velocities and accelerations are
differentiated from the recorded positions by the configured filter.

Metrics, per seed and estimator on the SAME data: the normalised mean error against the
simulator's true base parameters (mean_i |est_i - true_i| / |true_i|), the relative
parameter error ||est - true|| / ||true||, and the held-out mean torque NRMSE on a
point-to-point run with stops (ur10e_sim_heldout.PointToPoint; same noise, another seed),
beside that of the true parameters on the same run (the floor set by the noise).

    PYTHONPATH=$PWD OPENBLAS_NUM_THREADS=1 python benchmarks/iv_closed_loop.py \\
        --robot puma560 --seeds 3 [--duration 10] [--q-noise 5e-4]
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ur10e_sim_heldout import TORQUE_NOISE, PointToPoint, truth_model  # noqa: E402


def noisy_run(model, traj, seed, q_noise, tau_noise, duration=None):
    """Closed-loop run whose PD controller reads positions with noise; records them."""
    from robot_identification.simulation import RigidPDController, simulate
    rng = np.random.default_rng(seed)
    dt = 1.0 / model.config.simulation.rate_hz
    n_samples = int(round((duration or traj.duration) / dt)) + 1
    noise = q_noise * rng.standard_normal((n_samples, model.n))
    ctrl = RigidPDController(model)
    calls = iter(range(n_samples))

    def controller(q_d, dq_d, meas):
        i = next(calls)
        return ctrl(q_d, dq_d, dict(meas, q=meas["q"] + noise[i]))
    ds = simulate(model, trajectory=traj, seed=seed, controller=controller,
                  duration=duration, quantise=False)
    sigma = tau_noise(ds.tau)
    tau = ds.tau + sigma * rng.standard_normal(ds.tau.shape)
    meta = dict(ds.metadata, controller="RigidPDController", kp=ctrl.kp.tolist(),
                kd=ctrl.kd.tolist(), q_noise=q_noise)
    return replace(ds, q=ds.q + noise, tau=tau, metadata=meta)


def main(argv=None):
    from robot_identification.excitation import trajectory_from_config
    from robot_identification.identification import identify
    from robot_identification.model import load_robot
    from robot_identification.validation import validate
    ap = argparse.ArgumentParser()
    ap.add_argument("--robot", choices=("puma560", "ur10e"), default="puma560")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--q-noise", type=float, default=5e-4)
    args = ap.parse_args(argv)
    if args.robot == "ur10e":
        model = truth_model()

        def tau_noise(tau):
            return TORQUE_NOISE
        start = [0.0, -1.5, 1.0, -1.0, 0.0, 0.0]
    else:
        model = load_robot("puma560")

        def tau_noise(tau):
            return 0.01 * np.sqrt(np.mean(tau ** 2, axis=0))
        start = [0.0] * model.n
    names = ("ols", "wls", "iv")
    table = {e: {"nme": [], "rel": [], "nrmse": []} for e in names}
    floor = []      # held-out NRMSE of the true parameters: the noise floor of the metric
    for seed in range(args.seeds):
        exc = trajectory_from_config(model, {
            "type": "fourier", "base_frequency": 1.0 / args.duration, "harmonics": 5,
            "amplitude": 1.0, "seed": seed, "start": start})
        ident = noisy_run(model, exc, seed, args.q_noise, tau_noise)
        rng = np.random.default_rng(seed + 50)
        lo, hi = (np.array(v) for v in zip(*[j.limits.position for j in model.config.joints]))
        poses = rng.uniform(0.3 * lo, 0.3 * hi, (5, model.n))
        poses[0] = exc.evaluate(0.0)[0][0]
        val = noisy_run(model, PointToPoint(poses, 2.0, 1.0, model.joint_names), seed + 100,
                        args.q_noise, tau_noise)
        t0 = time.process_time()
        r = identify(model, ident, estimators=names)
        cpu = time.process_time() - t0
        truth = r.true_values
        f = validate(model, r.base, {"m": truth}, [val], model.config.identification)
        floor.append(f[0]["models"]["m"]["nrmse_mean"])
        for e in names:
            if e not in r.estimates:
                print(f"seed {seed}: {e} failed: "
                      f"{[d.message for d in r.diagnostics if d.subject == e]}")
                continue
            v = r.estimates[e].values
            table[e]["nme"].append(r.normalised_mean_error(estimator=e))
            table[e]["rel"].append(np.linalg.norm(v - truth) / np.linalg.norm(truth))
            f = validate(model, r.base, {"m": v}, [val], model.config.identification)
            table[e]["nrmse"].append(f[0]["models"]["m"]["nrmse_mean"])
        it = r.estimates["iv"].details["iterations"] if "iv" in r.estimates else "-"
        print(f"seed {seed}: " + ", ".join(
            f"{e} NME {table[e]['nme'][-1]:.4f} held-out NRMSE {table[e]['nrmse'][-1]:.4f}"
            for e in names if len(table[e]["nme"]) == seed + 1)
            + f"; true parameters {floor[-1]:.4f}; iv iterations {it}; identify CPU "
            f"{cpu:.0f} s")
    print(f"{args.robot}, {args.seeds} seeds, {args.duration:g} s Fourier excitation, "
          f"position noise {args.q_noise:g} rad (fed back), mean over seeds:")
    for e in names:
        if table[e]["nme"]:
            print(f"  {e:4s} normalised mean error {np.mean(table[e]['nme']):.4f}  "
                  f"||err||/||true|| {np.mean(table[e]['rel']):.4f}  held-out point-to-point "
                  f"mean NRMSE {np.mean(table[e]['nrmse']):.4f}")
    print(f"  true parameters: held-out point-to-point mean NRMSE {np.mean(floor):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
