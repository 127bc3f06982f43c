"""Identification of 100 000 samples: wall time and peak memory of ``identification.identify``.

Usage::

    PYTHONPATH=. python benchmarks/identification_100k.py [--samples 100000]
        [--robot puma560|puma560_elastic|zollo_planar]

Data: a limit-scaled Fourier excitation sampled at 1 kHz.

- rigid robots (default ``puma560``): exact inverse-dynamics torques (regressor @ nominal
  parameters), positions quantised to the config's encoder resolution;
- elastic robots: a closed-loop simulation (:func:`robot_identification.simulation.simulate`);
  its time is reported separately (the 6-dof PUMA takes ~6 s per simulated second).

Reported: samples, identification wall time, the Python heap peak during ``identify``
(tracemalloc; numpy buffers included) and the process peak RSS (getrusage).
"""
import argparse
import resource
import time
import tracemalloc

import numpy as np

from robot_identification.data import Dataset
from robot_identification.excitation import trajectory_from_config
from robot_identification.model import load_robot
from robot_identification.identification import identify
from robot_identification.regressor import iter_regressor_blocks


def rigid_dataset(model, n_samples, rate=1000.0):
    duration = (n_samples - 1) / rate
    traj = trajectory_from_config(model, {"type": "fourier", "base_frequency": 1.0 / duration,
                                          "harmonics": 40, "amplitude": 2.0, "seed": 0})
    t = np.arange(n_samples) / rate
    q, dq, ddq = traj.evaluate(t)
    pi = model.nominal_parameters()
    tau = np.empty_like(q)
    st = {"q": q, "dq": dq, "ddq": ddq, "tau": np.zeros_like(q)}
    for s, Y, _ in iter_regressor_blocks(model, st):
        tau[s: s + Y.shape[0]] = Y @ pi
    step = 2 * np.pi / model.config.simulation.encoder_counts
    return Dataset(t=t, q=np.round(q / step) * step, tau=tau, joint_names=model.joint_names,
                   true_parameters=dict(zip(model.parameter_names, pi)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robot", default="puma560")
    ap.add_argument("--samples", type=int, default=100_000)
    args = ap.parse_args()
    model = load_robot(args.robot)
    t0 = time.perf_counter()
    if model.config.elastic:
        from robot_identification.simulation import simulate
        ds = simulate(model, duration=(args.samples - 1) / model.config.simulation.rate_hz,
                      trajectory=trajectory_from_config(model, {
                          "type": "fourier", "base_frequency": 0.1, "harmonics": 5,
                          "amplitude": 2.0, "seed": 0, "periods": 1}))
        how = "closed-loop simulation"
    else:
        ds = rigid_dataset(model, args.samples)
        how = "inverse dynamics"
    t_data = time.perf_counter() - t0
    tracemalloc.start()
    t0 = time.perf_counter()
    result = identify(model, ds)
    wall = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0   # kB -> MB (Linux)
    print(f"robot {args.robot}: {ds.n_samples} samples x {model.rows_per_sample} rows, "
          f"{model.n_parameters} standard / {len(result.names)} base parameters")
    print(f"data ({how}): {t_data:.1f} s")
    print(f"identify: {wall:.2f} s wall ({ds.n_samples / wall:.0f} samples/s), "
          f"Python heap peak {peak / 2**20:.0f} MB, process peak RSS {rss:.0f} MB")
    print(f"normalised mean error {result.normalised_mean_error():.3g}, "
          f"condition number {result.estimate.condition_number:.3g}")


if __name__ == "__main__":
    main()
