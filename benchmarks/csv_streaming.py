"""Peak memory of ``identify`` on CSV recordings: streamed (the default) vs read whole.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=$PWD python benchmarks/csv_streaming.py [--quick]
        [--keep DIR]

Data: the UR10e's configured excitation simulated once (``simulate --robot ur10e
--duration 20 --derivatives --snr 60``), repeated to 100 k and 1 M samples (``--quick``:
50 k and 200 k) and written in the robot config's CSV layout (the ``ur`` preset: 31 columns,
currents = torque / drive gain). Each file is identified by ``identify --robot ur10e
--estimator ols --no-physical`` in a fresh process twice: as the command reads it (files
of 8 MiB and more streamed chunk by chunk, :func:`robot_identification.data.
iter_csv_chunks`) and with the same command forced to read the file whole
(``CSV_STREAM_BYTES`` raised: :func:`read_csv`, the earlier behaviour). Printed: peak RSS
and CPU time of each process (``os.wait4``), and whether both give the same estimates
(relative difference of the base parameters).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
ENV = dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1")
WHOLE = ("import sys; import robot_identification.commands._common as c; "
         "c.CSV_STREAM_BYTES = 1 << 62; from robot_identification.cli import main; "
         "sys.exit(main(sys.argv[1:]))")


def child(args):
    """Peak RSS [MB], CPU [s], wall [s] of ``python ARGS``."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, *map(str, args)], env=ENV,
                                stdout=subprocess.DEVNULL, stderr=err)
        _, status, ru = os.wait4(proc.pid, 0)
        rc = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read()
    if rc not in (0, 3):
        raise SystemExit(f"{args} failed ({rc}):\n{text[-2000:]}")
    return ru.ru_maxrss / 1024.0, ru.ru_utime + ru.ru_stime, time.perf_counter() - t0


def make_csv(tmp, samples):
    from robot_identification.cli import main
    from robot_identification.data import CSV_PRESETS, load_dataset
    from robot_identification.model import load_robot
    path = tmp / f"ur10e_{samples}.csv"
    if path.exists():
        return path
    sim = tmp / "ur10e_20s.npz"
    if not sim.exists():
        assert main(["simulate", "--robot", "ur10e", "--duration", "20", "--derivatives",
                     "--snr", "60", "--seed", "1", "--quiet", "--output", str(sim)]) == 0
    ds = load_dataset(sim)
    model = load_robot("ur10e")
    gains = np.asarray(model.config.extra["csv"]["drive_gains"], dtype=float)
    dt = float(np.median(np.diff(ds.t)))
    idx = np.arange(samples) % ds.t.shape[0]
    table = np.zeros((samples, CSV_PRESETS["ur"]["n_columns"]))
    table[:, 0] = np.arange(samples) * dt
    table[:, 1:7], table[:, 7:13] = ds.q[idx], ds.dq[idx]
    table[:, 13:19] = ds.tau[idx] / gains
    np.savetxt(path, table, fmt="%.9g", delimiter=",")
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="50 k and 200 k samples")
    ap.add_argument("--keep", metavar="DIR", help="keep (and reuse) the generated files")
    args = ap.parse_args(argv)
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ri_csv_"))
    tmp.mkdir(parents=True, exist_ok=True)
    import yaml
    try:
        for samples in ((50_000, 200_000) if args.quick else (100_000, 1_000_000)):
            path = make_csv(tmp, samples)
            common = ["identify", "--robot", "ur10e", "--estimator", "ols", "--no-physical",
                      "--quiet", "--force", "--data", path]
            out = {}
            for how, pre in (("streamed", ["-m", "robot_identification.cli"]),
                             ("whole", ["-c", WHOLE])):
                res = tmp / f"{how}.yaml"
                rss, cpu, wall = child([*pre, *common, "--output", res])
                doc = yaml.safe_load(res.read_text())
                out[how] = np.array([p["estimate"] for p in doc["base_parameters"]])
                print(f"identify ur10e CSV {samples} samples ({path.stat().st_size / 2**20:.0f}"
                      f" MiB), {how}: peak RSS {rss:.0f} MB, CPU {cpu:.1f} s, wall {wall:.1f} s"
                      f" (read: {doc['settings'].get('recordings_read')}; load "
                      f"{os.getloadavg()[0]:.1f})", flush=True)
            rel = np.max(np.abs(out["streamed"] - out["whole"])
                         / np.maximum(np.abs(out["whole"]), 1e-12))
            print(f"  estimates streamed vs whole: largest relative difference {rel:.2e}",
                  flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
