"""Benchmark: streaming identification of a 1-hour, 1 kHz recording of a 6-dof arm.

3.6 M samples are generated chunk by chunk (finite Fourier excitation, pinocchio ``rnea``
torques + rotor inertia + Coulomb/viscous friction, encoder quantisation and torque noise)
into a memory-mapped dataset directory, never holding the recording in memory. Then, each in
a fresh process (so that its peak RSS is its own):

- ``identify``: :func:`robot_identification.streaming.identify_streaming` reads the directory
  in chunks, applies the polynomial-approximation FIR bank (T = 50 ms, N = 1,
  alpha = beta = 3; a low-pass, hence the anti-alias filter), evaluates the regressor on every
  ``decimate``-th filtered sample and accumulates the normal equations (OLS);
- ``raw``: the bare per-sample Python loop over ``pinocchio.computeJointTorqueRegressor`` for
  all 3.6 M samples (the reference cost of "just evaluating the regressor").

Usage::

    PYTHONPATH=$PWD .venv/bin/python benchmarks/streaming_1h.py [--robot puma560]
        [--hours 1] [--decimate 10 [5 ...]] [--full] [--keep DIR]

``--full`` also runs the identification without decimation (every sample). Prints one line
per phase (wall time, peak RSS) and the parameter errors.
"""
from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FS = 1000.0
CHUNK = 100_000


def load(args):
    from robot_identification.model import load_robot
    return load_robot(args.robot, config=args.config)


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def fourier_coefficients(n, seed=7, harmonics=5, wf=0.1, vmax=1.0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, size=(harmonics, n))
    b = rng.uniform(-1, 1, size=(harmonics, n))
    scale = vmax / (np.abs(a).sum(0) + np.abs(b).sum(0))
    return a * scale, b * scale, 2 * np.pi * wf * np.arange(1, harmonics + 1)


def trajectory(t, a, b, w):
    S, C = np.sin(np.outer(t, w)), np.cos(np.outer(t, w))
    q = (S / w) @ a - (C / w) @ b
    return q, C @ a + S @ b, -(S * w) @ a + (C * w) @ b


def phase_generate(args):
    import pinocchio as pin
    from robot_identification.identification import NpyDirWriter
    model = load(args)
    n = model.n
    N = int(args.hours * 3600 * FS)
    pi = model.nominal_parameters()
    drive = dict(zip(model.parameter_names, pi))
    km2 = model.gear_ratios ** 2
    jm = np.array([drive.get(f"{j}.rotor_inertia", 0.0) for j in model.joint_names])
    fv = np.array([drive.get(f"{j}.viscous", 0.0) for j in model.joint_names])
    fc = np.array([drive.get(f"{j}.coulomb", 0.0) for j in model.joint_names])
    a, b, w = fourier_coefficients(n)
    rng = np.random.default_rng(11)
    counts = 2 ** 20                      # encoder counts/rev (link side)
    sigma_tau = args.noise
    pm = model.pin_model
    data = pm.createData()
    w_ = NpyDirWriter(args.dir, N, model.joint_names,
                      true_parameters=dict(zip(model.parameter_names, map(float, pi))),
                      metadata={"robot": model.config.name, "fs": FS, "sigma_tau": sigma_tau,
                                "encoder_counts": counts})
    t0 = time.perf_counter()
    for s in range(0, N, CHUNK):
        t = np.arange(s, min(s + CHUNK, N)) / FS
        q, dq, ddq = trajectory(t, a, b, w)
        qp, vp, ap = model.pin_configuration(q), model.to_pin_v(dq), model.to_pin_v(ddq)
        tau = np.empty_like(q)
        for i in range(len(t)):
            tau[i] = pin.rnea(pm, data, qp[i], vp[i], ap[i])
        tau = model.from_pin_v(tau) + km2 * jm * ddq + fv * dq + fc * np.sign(dq)
        tau += sigma_tau * rng.standard_normal(tau.shape)
        qm = np.round(q * counts / (2 * np.pi)) * (2 * np.pi / counts)
        w_.append(t=t, q=qm, tau=tau)
    w_.close()
    return {"phase": "generate", "samples": N, "wall_s": time.perf_counter() - t0,
            "peak_rss_mb": peak_rss_mb()}


def phase_identify(args):
    from robot_identification.streaming import identify_streaming
    model = load(args)
    dec = args.decimate[0]
    t0 = time.perf_counter()
    res = identify_streaming(model, Path(args.dir), pa={"window": args.window, "N": 1},
                             decimate=dec, velocity_threshold=0.05)
    wall = time.perf_counter() - t0
    err = np.abs(res.estimate.values - res.true_values)
    rel = err / np.maximum(np.abs(res.true_values), 1e-12)
    big = np.abs(res.true_values) > 1e-2 * np.abs(res.true_values).max()
    return {"phase": f"identify (decimate {dec})", "samples": res.settings["n_input"],
            "regressor_samples": res.n_samples, "wall_s": wall,
            "regressor_s": res.settings["t_regressor"], "peak_rss_mb": peak_rss_mb(),
            "n_base": len(res.names), "median_rel_err": float(np.median(rel[big])),
            "max_rel_err_large": float(rel[big].max()),
            "residual_rms": [float(x) for x in res.estimate.residual_rms]}


def phase_raw(args):
    import pinocchio as pin
    model = load(args)
    pm = model.pin_model
    data = pm.createData()
    q_all = np.load(Path(args.dir) / "q.npy", mmap_mode="r")
    t0 = time.perf_counter()
    for s in range(0, q_all.shape[0], CHUNK):
        q = np.array(q_all[s:s + CHUNK])
        qp = model.pin_configuration(q)
        vp = model.to_pin_v(q)
        for i in range(q.shape[0]):
            pin.computeJointTorqueRegressor(pm, data, qp[i], vp[i], vp[i])
    wall = time.perf_counter() - t0
    return {"phase": "raw pinocchio regressor loop", "samples": int(q_all.shape[0]),
            "wall_s": wall, "us_per_sample": 1e6 * wall / q_all.shape[0],
            "peak_rss_mb": peak_rss_mb()}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--robot", default="puma560")
    p.add_argument("--config", help="robot config YAML instead of --robot")
    p.add_argument("--hours", type=float, default=1.0)
    p.add_argument("--decimate", type=int, nargs="+", default=[10],
                   help="decimation factor(s) of the identification runs")
    p.add_argument("--window", type=float, default=0.05, help="PA window T [s]")
    p.add_argument("--noise", type=float, default=0.5, help="torque noise sigma [N m]")
    p.add_argument("--full", action="store_true", help="also identify without decimation")
    p.add_argument("--keep", help="directory for the generated recording (kept)")
    p.add_argument("--phase", choices=["generate", "identify", "raw"], help=argparse.SUPPRESS)
    p.add_argument("--dir", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.phase:
        fn = {"generate": phase_generate, "identify": phase_identify, "raw": phase_raw}
        print(json.dumps(fn[args.phase](args)))
        return 0
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ri_stream_"))
    base = [sys.executable, __file__, "--hours", str(args.hours), "--window", str(args.window),
            "--noise", str(args.noise), "--dir", str(tmp)]
    base += ["--config", args.config] if args.config else ["--robot", args.robot]
    decs = list(args.decimate) + ([1] if args.full and 1 not in args.decimate else [])
    runs = [["--phase", "generate"]]
    runs += [["--phase", "identify", "--decimate", str(d)] for d in decs]
    runs.append(["--phase", "raw"])
    try:
        for r in runs:
            out = subprocess.run(base + r, capture_output=True, text=True)
            if out.returncode:
                print(out.stderr, file=sys.stderr)
                return out.returncode
            res = json.loads(out.stdout.strip().splitlines()[-1])
            line = f"{res['phase']:34s} {res['samples']:>9d} samples  " \
                   f"wall {res['wall_s']:7.2f} s" \
                   f"  peak RSS {res['peak_rss_mb']:7.1f} MB"
            if "us_per_sample" in res:
                line += f"  ({res['us_per_sample']:.2f} us/sample)"
            if "regressor_samples" in res:
                line += (f"  regressor samples {res['regressor_samples']} "
                         f"({res['regressor_s']:.2f} s in pinocchio)  base params {res['n_base']}"
                         f"  median rel. err {100 * res['median_rel_err']:.3f} %"
                         f"  max {100 * res['max_rel_err_large']:.2f} %")
            print(line, flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
