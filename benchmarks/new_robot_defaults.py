"""Default settings on robots the project does not ship: normalised mean error (NME, Zollo et
al. 2014, Sec. 6: mean_i |est_i - true_i| / |true_i|) of the identified base parameters
against the simulator's, for each URDF given (a public arm URDF, e.g. from
example-robot-data), with the config exactly as ``robot-identification init`` writes it.

Per robot: ``init`` -> ``simulate(model, seed=0)`` (the starter's 10 s Fourier excitation,
PD + gravity compensation, Coulomb + viscous friction, quantised encoders) -> ``identify``
with the config's settings, noise-free and with ``add_measurement_noise(run, 60 dB, seed=1)``;
beside the config's estimator the other of OLS / WLS on the same data.

    PYTHONPATH=$PWD python benchmarks/new_robot_defaults.py arm1.urdf arm2.urdf ...
"""
from __future__ import annotations

import argparse
import tempfile
from dataclasses import replace
from pathlib import Path


def main(argv=None):
    from robot_identification.model import RobotModel, load_robot_config
    from robot_identification.identification import identify
    from robot_identification.simulation import add_measurement_noise, simulate
    from robot_identification.starter import starter_config
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("urdf", nargs="+", help="URDF files of arms (any number of joints)")
    p.add_argument("--snr", type=float, default=60.0, help="noisy case [dB] (default 60)")
    args = p.parse_args(argv)
    print(f"{'robot':<14}{'n':>3}  {'data':<11}{'cut-off Hz':>11}"
          f"{'NME (config)':>14}{'NME (other)':>13}  warnings")
    with tempfile.TemporaryDirectory() as tmp:
        for urdf in args.urdf:
            cfg = Path(tmp) / f"{Path(urdf).stem}.yaml"
            cfg.write_text(starter_config(urdf, cfg))
            model = RobotModel(load_robot_config(cfg))
            s = model.config.identification
            other = "ols" if s.estimator == "wls" else "wls"
            run = simulate(model, seed=0)
            for label, data in (("noise-free", run),
                                (f"{args.snr:g} dB", add_measurement_noise(run, args.snr,
                                                                           seed=1))):
                r = identify(model, data)
                r2 = identify(model, data, replace(s, estimator=other))
                warn = sorted({d.code for d in r.diagnostics if d.severity != "info"})
                print(f"{model.config.name[:13]:<14}{model.n:>3}  {label:<11}"
                      f"{r.settings['cutoff_hz']:>11.3g}"
                      f"{r.normalised_mean_error():>10.3f} {s.estimator:<3}"
                      f"{r2.normalised_mean_error():>9.3f} {other:<3}  {', '.join(warn)}",
                      flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
