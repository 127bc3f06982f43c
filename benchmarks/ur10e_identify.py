"""Benchmark: identify + validate + report on the shared UR10e data (target: identify +
validate under 30 s). Prints wall times and the held-out NRMSE. Skips when the shared data
are absent.

    PYTHONPATH=$PWD python benchmarks/ur10e_identify.py
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
DATA = next((c / "data" / "ur10e" for c in (REPO.parent / "shared", REPO.parents[1] / "shared")
             if (c / "data" / "ur10e").is_dir()), None)


def main():
    from robot_identification.cli import main as cli
    if DATA is None:
        print("shared UR10e data not found; nothing to do")
        return 0
    ident = [str(DATA / "identification" / f) for f in
             ("ur-20_02_19_14harm50sec.csv", "ur-20_02_12-50sec_12harm.csv")]
    valid = [str(DATA / "validation" / f) for f in
             ("ur-20_02_10-30sec_12harm.csv", "ur-20_01_17-p1.csv", "ur-20_01_17-p2.csv")]
    with tempfile.TemporaryDirectory() as tmp:
        res, val = f"{tmp}/results.yaml", f"{tmp}/validation.yaml"
        t0 = time.perf_counter()
        cli(["identify", "--robot", "ur10e", "--quiet", "--output", res, "--data", *ident])
        t1 = time.perf_counter()
        cli(["validate", "--robot", "ur10e", "--quiet", "--results", res, "--output", val,
             "--data", *valid])
        t2 = time.perf_counter()
        cli(["report", "--robot", "ur10e", "--results", res, "--output", f"{tmp}/report",
             "--data", valid[0]])
        t3 = time.perf_counter()
        doc = yaml.safe_load(Path(val).read_text())
    print(f"identify {t1 - t0:.2f} s, validate {t2 - t1:.2f} s (sum {t2 - t0:.2f} s, "
          f"target < 30 s), report {t3 - t2:.2f} s")
    for name, m in doc["files"][0]["models"].items():
        print(f"held-out {Path(doc['files'][0]['file']).name}: {name:<9} mean NRMSE "
              f"{m['nrmse_mean']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
