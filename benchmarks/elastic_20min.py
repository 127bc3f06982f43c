"""Benchmark: identify a 20-minute 1 kHz recording of the elastic-joint PUMA 560 (1.2 M samples)
and compare with the bare 6-dof pinocchio regressor loop over the same number of samples.

Data: the config's Fourier excitation (``simulation.excitation``, base frequency 0.1 Hz)
simulated in closed loop for two 10-s periods (``simulate``: PD control, the built-in engine,
1.25 M-count encoders on link and motor positions, interval-mean motor torque); the second
period (the loop settled on its periodic orbit: the copies join without a jump) repeated
120 times to 20 min, written as a ``.npz`` dataset. Then, each in a fresh
process (so that its peak RSS is its own):

- ``identify``: :func:`robot_identification.identification.identify` of the file (the engine
  reads it in chunks: memory bounded by the chunk) with the robot config's identification settings
  (zero-phase Butterworth + central differences, OLS, complete elastic model: link and motor
  rows, 12-dof rotor-augmented pinocchio regressor); ``--in-memory`` also identifies the
  dataset loaded whole;
- ``raw``: the bare per-sample Python loop over ``pinocchio.computeJointTorqueRegressor`` of
  the 6-dof link model over the same 1.2 M samples (the issue's reference cost).

Goal (issue #9): identify <= 4x raw, peak RSS <= 1 GB. Prints wall and CPU time (the machine
is shared: CPU time is the steadier measure) and the ratio of each.

Usage::

    PYTHONPATH=$PWD python benchmarks/elastic_20min.py [--minutes 20] [--keep DIR]
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
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
ROBOT = "puma560_elastic"


def _peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def phase_generate(path, minutes):
    from robot_identification.model import load_robot
    from robot_identification.simulation import simulate
    from robot_identification.excitation import trajectory_from_config
    model = load_robot(ROBOT)
    traj = trajectory_from_config(model)
    traj.periods *= 2                             # two periods of the excitation
    run = simulate(model, trajectory=traj, duration=2.0 / traj.base_frequency, seed=0)
    P = (run.n_samples - 1) // 2                  # one 10-s period
    # the second period: the closed loop has settled on its periodic orbit, so the copies
    # join without a jump (the first period starts at rest and ends elsewhere)
    period = run.slice(slice(P, 2 * P + 1))
    N = int(round(minutes * 60 * period.sample_rate))
    reps = -(-N // P)

    def tile(x):
        return np.tile(x[:P], (reps, 1))[:N]
    ds = replace(period, t=np.arange(N) / period.sample_rate, q=tile(period.q),
                 theta=tile(period.theta), tau=tile(period.tau), dq=None, ddq=None,
                 dtheta=None, ddtheta=None)
    ds.save_npz(path)
    return {"samples": N, "period_samples": P}


def phase_identify(path, streamed=True):
    from robot_identification._threads import one_blas_thread
    from robot_identification.data import load_dataset
    from robot_identification.model import load_robot
    from robot_identification.identification import identify
    from robot_identification.regressor import _kernel
    model = load_robot(ROBOT)
    source = path if streamed else load_dataset(path)   # a path is read in chunks
    w0, c0 = time.perf_counter(), time.process_time()
    with one_blas_thread():
        res = identify(model, source)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    err = None
    if res.true_values is not None:
        big = np.abs(res.true_values) > 0.01 * np.abs(res.true_values).max()
        rel = np.abs(res.estimate.values - res.true_values)[big] / np.abs(res.true_values)[big]
        err = [float(np.median(rel)), float(rel.max())]
    return {"wall": wall, "cpu": cpu, "rss_mb": _peak_rss_mb(), "samples": int(res.n_samples),
            "base_parameters": len(res.names), "relative_error_median_max": err,
            "regressor_path": _kernel.status()}


def phase_raw(path):
    import pinocchio as pin

    from robot_identification.data import load_dataset
    from robot_identification.model import load_robot
    model = load_robot(ROBOT)
    ds = load_dataset(path)
    pm = model.pin_model
    data = pm.createData()
    qa = model.pin_configuration(ds.q)
    va = model.to_pin_v(np.gradient(ds.q, ds.t, axis=0))
    aa = model.to_pin_v(np.gradient(va, ds.t, axis=0))
    w0, c0 = time.perf_counter(), time.process_time()
    for i in range(qa.shape[0]):
        pin.computeJointTorqueRegressor(pm, data, qa[i], va[i], aa[i])
    return {"wall": time.perf_counter() - w0, "cpu": time.process_time() - c0,
            "rss_mb": _peak_rss_mb(), "samples": int(qa.shape[0])}


def _run_phase(name, *args):
    out = subprocess.run([sys.executable, __file__, "--phase", name, *map(str, args)],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"phase {name} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=20.0)
    ap.add_argument("--keep", metavar="DIR",
                    help="keep the dataset in DIR (and reuse one already there)")
    ap.add_argument("--in-memory", action="store_true",
                    help="also identify the dataset loaded whole into memory")
    ap.add_argument("--phase", help=argparse.SUPPRESS)
    ap.add_argument("path", nargs="?", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.phase:
        fn = {"identify": phase_identify, "raw": phase_raw,
              "identify-memory": lambda p: phase_identify(p, streamed=False)}[a.phase]
        print(json.dumps(fn(a.path)))
        return 0
    tmp = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="ri_elastic20_"))
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / "puma560_elastic_20min.npz"
    try:
        t0 = time.perf_counter()
        if a.keep and path.exists():
            print(f"reusing {path}")
        else:
            gen = phase_generate(path, a.minutes)
            print(f"generated {gen['samples']} samples ({a.minutes:g} min at 1 kHz, "
                  f"{gen['period_samples']}-sample period repeated) in "
                  f"{time.perf_counter() - t0:.1f} s")
        ident = _run_phase("identify", path)
        raw = _run_phase("raw", path)
        if a.in_memory:
            mem = _run_phase("identify-memory", path)
            print(f"identify of the dataset loaded in memory (one chunk): wall "
                  f"{mem['wall']:.1f} s, CPU {mem['cpu']:.1f} s, peak RSS {mem['rss_mb']:.0f} MB")
        print(f"identify (identification.identify of the file, read in chunks, "
              f"{ident['base_parameters']} base parameters, regressor: "
              f"{ident['regressor_path']}): "
              f"wall {ident['wall']:.1f} s, CPU {ident['cpu']:.1f} s, peak RSS "
              f"{ident['rss_mb']:.0f} MB; relative error of base parameters (|true| > 1 % of "
              f"max) median / max {ident['relative_error_median_max']}")
        print(f"raw 6-dof pin.computeJointTorqueRegressor loop, {raw['samples']} samples: wall "
              f"{raw['wall']:.1f} s, CPU {raw['cpu']:.1f} s")
        print(f"ratio identify / raw: wall {ident['wall'] / raw['wall']:.2f}, CPU "
              f"{ident['cpu'] / raw['cpu']:.2f} (goal <= 4); peak RSS {ident['rss_mb']:.0f} MB "
              f"(goal <= 1024)")
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
