"""Re-identify bags of benchmarks/hardware_robot_study.py with this checkout's engine.

For each study folder (``ri_hw_study_*`` in the temporary directory, or the folders given):
the bag read as the identifier node reads it (``load_dataset``, ``/joint_states``,
``effort_lag`` 0.5 as the study's params file sets), identified with the robot config's
settings (the engine's one path), and the held-out torque NRMSE (mean over the joints) on
``simulate(puma560, seed=1)`` at the bag's rate - the study's metric, data and predictor.
Also printed: the samples whose every effort is exactly 0.0 (the braked periods of
hardware_robot) and the error / warning diagnostics' codes.

Usage (docs/ros.md, "The window around a brake"):

    PYTHONPATH=$PWD OPENBLAS_NUM_THREADS=1 python benchmarks/reidentify_study_bags.py \
        [--last 70] [--braked-only] [FOLDER ...]
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import numpy as np


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folders", nargs="*", type=Path)
    p.add_argument("--last", type=int, default=70, help="without folders: the newest N study "
                   "folders")
    p.add_argument("--braked-only", action="store_true",
                   help="only bags with samples whose every effort is exactly 0.0")
    args = p.parse_args(argv)
    from robot_identification.data import load_dataset
    from robot_identification.errors import IdentificationError
    from robot_identification.identification import identify
    from robot_identification.model import load_robot
    from robot_identification.simulation import simulate
    from robot_identification.validation import validate
    folders = args.folders or sorted(Path(tempfile.gettempdir()).glob("ri_hw_study_*"),
                                     key=os.path.getmtime)[-args.last:]
    model = load_robot("puma560")
    held = {}
    for folder in folders:
        bags = [b for b in sorted(folder.glob("data/run_*")) if b.is_dir()]
        if not bags:
            continue
        try:
            ds = load_dataset(bags[-1], joint_topic="/joint_states", effort_lag=0.5)
        except IdentificationError as exc:
            print(json.dumps({"folder": folder.name, "unreadable": str(exc)[:160]}))
            continue
        braked = int(np.all(ds.tau == 0.0, axis=1).sum())
        if args.braked_only and not braked:
            continue
        rate = float(round(1.0 / np.median(np.diff(ds.t))))
        row = {"folder": folder.name, "rate": rate, "samples": ds.n_samples,
               "zero_effort_samples": braked}
        try:
            r = identify(model, ds, model.config.identification, log=lambda *a: None)
        except IdentificationError as exc:
            row["refused"] = str(exc)[:160]
            print(json.dumps(row), flush=True)
            continue
        if rate not in held:
            held[rate] = simulate(model, rate_hz=rate, seed=1)
        m = validate(model, r.base, {"ros": r.estimate.values}, [held[rate]])[0]["models"]
        row["nrmse"] = round(float(m["ros"]["nrmse_mean"]), 4)
        row["diagnostics"] = sorted({d.code for d in r.diagnostics
                                     if d.severity in ("error", "warning")})
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
