"""Issue #29's done-when numbers, measured and printed in one run.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=$PWD python benchmarks/identify_performance.py \
        [--only regressor simulator elastic ur10e dask montecarlo] [--keep DIR] \
        [--rounds N] [--elastic-rounds N] [--before DIR]

Every subject runs beside its reference in the same run, each in a fresh process where a
whole command is measured (its start-up and imports included): CPU time = user + system
time of the process (``os.wait4``), peak RSS = its largest resident set. Ratios of CPU
times are the steady measure on the shared 2-core machine; the Dask and Monte-Carlo
speed-ups are wall-clock ratios (parallel work), so run them when the machine is quiet:
the load average is printed beside them.

- ``regressor``: ``benchmarks/regressor_throughput.py`` (regressor() vs the bare Python
  loop, target >= 1.8, and the C++ floor).
- ``simulator``: the built-in simulator on puma560_elastic (target >= 2x real time in CPU
  time; ``benchmarks/builtin_simulator.py``).
- ``elastic``: ``identify`` (the command) on the 20-minute 1 kHz elastic PUMA recording
  (1.2 M samples, ``benchmarks/elastic_20min.py`` makes it) vs the bare 6-dof
  ``computeJointTorqueRegressor`` loop over as many samples (CPU time of the loop alone),
  the two alternated 3 times (``--elastic-rounds``), best of each, every run printed:
  target <= 4x, peak RSS <= 1 GB (the largest of the runs). ``--before DIR``: the command of
  another checkout in the same rounds, the median of the paired rounds' CPU ratios and whether
  the estimates agree.
- ``ur10e``: ``identify --robot ur10e --estimator ols`` on the two real identification runs
  (the shared UR10e data, ``shared/data/ur10e`` beside the repository) vs
  ``benchmarks/plain_ols_ur10e.py`` on the same files, alternately in 3 rounds
  (``--rounds``) after one untimed run of each: the median of the rounds' ratios (each
  round's two runs side by side; the ratio of the best runs beside it), target <= 1.2x.
  ``--before DIR``: the command of another checkout (DIR) in the same rounds, and whether the
  two results files agree.

The children read the project's modules from compiled bytecode, as an installed package
does (``pip install`` compiles it; a checkout writes ``__pycache__`` on its first run):
``PYTHONDONTWRITEBYTECODE`` is dropped from their environment and the bytecode goes to
``PYCACHE/`` of the run's folder (``PYTHONPYCACHEPREFIX``). With it set, every child
compiles the project modules it imports from source, ``identify`` more of them than the
plain script.
- ``dask``: ``identify`` of 4 recordings of 1 M samples (the elastic PUMA recording cut
  into 4 differently rotated copies) with 1 process, a local cluster of 2 workers and an
  external ``dask scheduler`` + 2 ``dask worker --preload robot_identification.dask_worker``
  processes (the first job on them): speed-up (wall) target >= 1.6x, estimates
  bit-identical. Per-process CPU, the second job and rounds: ``benchmarks/dask_scaling.py``.
- ``montecarlo``: ``montecarlo --robot szabo_3dof --runs 100`` with 1 and 2 workers:
  speed-up (wall) target >= 1.6x, identical output. Per-process CPU, the CPU critical path,
  a case whose runs carry the work (puma560, the physical estimate per run) and the
  break-even run count: ``benchmarks/dask_scaling.py --only montecarlo``.
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
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
UR10E = next((c / "data" / "ur10e" for c in (ROOT.parent / "shared", ROOT.parents[1] / "shared")
              if (c / "data" / "ur10e").is_dir()), None)
SECTIONS = ("regressor", "simulator", "elastic", "ur10e", "dask", "montecarlo")


#: Exit codes of an ``identify`` child that still measured a whole run: 3 = the result holds
#: an error diagnostic (written with --force; the first error line is printed beside the
#: numbers).
IDENTIFY_OK = (0, 3)

#: Folder of the children's compiled bytecode (set by :func:`main`).
PYCACHE = None


def child(args, cwd=None, ok=(0,)):
    """Wall time [s] and stdout of ``python ARGS`` in a fresh process."""
    r = timed_child(args, cwd, ok)
    return r["wall"], r["stdout"]


def timed_child(args, cwd=None, ok=(0,), root=None):
    """``python ARGS`` in a fresh process: wall [s], CPU = user + system time of the process
    [s] and peak RSS [MB] (``os.wait4``), stdout, stderr, exit code (``ok``: the accepted
    ones); ``root``: the checkout whose modules it imports (default this one)."""
    env = dict(os.environ, PYTHONPATH=str(root or ROOT), OPENBLAS_NUM_THREADS="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)     # compiled bytecode, as installed (docstring)
    if PYCACHE:
        env["PYTHONPYCACHEPREFIX"] = str(PYCACHE / ("before" if root else ""))
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, *map(str, args)], stdout=out, stderr=err,
                                text=True, env=env, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(map(str, args))} failed ({proc.returncode}):\n{stderr}")
    if proc.returncode:
        print(f"    (exit code {proc.returncode}: {stderr.strip().splitlines()[-1][:300]})",
              flush=True)
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
            "rss_mb": usage.ru_maxrss / 1024.0, "stdout": stdout, "rc": proc.returncode}


def load():
    return f"load average {os.getloadavg()[0]:.1f}"


def section_regressor(args, tmp):
    import regressor_throughput
    regressor_throughput.main([])


def section_simulator(args, tmp):
    import builtin_simulator

    from robot_identification.model import load_robot
    factor, sim = builtin_simulator.speed(load_robot("puma560_elastic"), None, 10.0)
    print(f"built-in simulator, puma560_elastic, 10 s of its excitation, default integrator "
          f"({sim.integrator}): {factor:.2f}x real time in CPU time (target >= 2; {load()})",
          flush=True)


def elastic_file(tmp):
    import elastic_20min
    path = tmp / "puma560_elastic_20min.npz"
    if not path.exists():
        elastic_20min.phase_generate(path, 20.0)
    return path


def results_estimates(path):
    import yaml
    doc = yaml.safe_load(Path(path).read_text())
    return {e["name"]: e["estimate"] for e in doc["base_parameters"]}


def section_elastic(args, tmp):
    """The command and the bare loop alternated ``--elastic-rounds`` times; best of each
    (every value printed: one run on a quiet machine varied by 25 %); ``--before DIR``: that
    checkout's command in the same rounds."""
    import json
    path = elastic_file(tmp)
    runs = {"identify": [], "raw": [], "before": []}
    before = Path(args.before).resolve() if args.before else None
    command = ["-m", "robot_identification.cli", "identify", "--robot", "puma560_elastic",
               "--data", path, "--quiet", "--force", "--output"]
    for _ in range(args.elastic_rounds):
        ident = timed_child([*command, tmp / "elastic.yaml"], ok=IDENTIFY_OK)
        runs["identify"].append((ident["cpu"], ident["rss_mb"]))
        if before is not None:
            old = timed_child([*command, tmp / "elastic_before.yaml"], cwd=before,
                              ok=IDENTIFY_OK, root=before)
            runs["before"].append((old["cpu"], old["rss_mb"]))
        raw = json.loads(timed_child([ROOT / "benchmarks" / "elastic_20min.py", "--phase",
                                      "raw", path])["stdout"].strip().splitlines()[-1])
        runs["raw"].append(raw["cpu"])
    cpu = min(c for c, _ in runs["identify"])
    rss = max(r for _, r in runs["identify"])
    ref = min(runs["raw"])
    every = ", ".join(f"{c:.1f}" for c, _ in runs["identify"])
    every_raw = ", ".join(f"{c:.1f}" for c in runs["raw"])
    print(f"identify command, puma560_elastic 1.2 M samples: CPU {cpu:.1f} s (runs {every}), "
          f"peak RSS {rss:.0f} MB (largest) | bare 6-dof loop CPU {ref:.1f} s (runs "
          f"{every_raw}) | ratio {cpu / ref:.2f} (best of {args.elastic_rounds} each; target "
          f"<= 4), RSS target <= 1024 MB ({load()})", flush=True)
    tail = [line for line in ident["stdout"].splitlines() if line.strip()][-3:]
    for line in tail:
        print(f"    {line}")
    if before is not None:
        old_cpu = [c for c, _ in runs["before"]]
        paired = np.array([c for c, _ in runs["identify"]]) / np.array(old_cpu)
        print(f"    before ({before}): CPU {min(old_cpu):.1f} s (runs "
              f"{', '.join(f'{c:.1f}' for c in old_cpu)}), peak RSS "
              f"{max(r for _, r in runs['before']):.0f} MB, ratio {min(old_cpu) / ref:.2f}; "
              f"this checkout / before {np.median(paired):.3f} (median of the paired rounds: "
              f"{', '.join(f'{r:.3f}' for r in paired)}); estimates "
              f"{_estimates_differ(tmp / 'elastic_before.yaml', tmp / 'elastic.yaml')}",
              flush=True)


def _estimates_differ(a, b):
    """'identical' where two results files' base-parameter estimates agree to the bit, else
    their largest relative difference."""
    x, y = results_estimates(a), results_estimates(b)
    if x == y:
        return "identical"
    if set(x) != set(y):
        return "differ: other base parameters"
    rel = max(abs(x[k] - y[k]) / max(abs(x[k]), abs(y[k]), 1e-300) for k in x)
    return f"differ by at most {rel:.1e} relative"


def section_ur10e(args, tmp):
    if UR10E is None:
        print("ur10e: shared UR10e data not found; skipped")
        return
    files = [UR10E / "identification" / f for f in
             ("ur-20_02_19_14harm50sec.csv", "ur-20_02_12-50sec_12harm.csv")]
    runs = {"identify": [], "plain": [], "before": []}
    before = Path(args.before).resolve() if args.before else None
    command = ["-m", "robot_identification.cli", "identify", "--robot", "ur10e", "--estimator",
               "ols", "--quiet", "--force", "--data", *files, "--output"]
    for i in range(args.rounds + 1):  # the first run of each writes the bytecode: not timed
        cpu = {"identify": timed_child([*command, tmp / "ur10e.yaml"], ok=IDENTIFY_OK)["cpu"]}
        if before is not None:
            cpu["before"] = timed_child([*command, tmp / "ur10e_before.yaml"], cwd=before,
                                        ok=IDENTIFY_OK, root=before)["cpu"]
        cpu["plain"] = timed_child([ROOT / "benchmarks" / "plain_ols_ur10e.py", *files])["cpu"]
        for key, value in cpu.items() if i else ():
            runs[key].append(value)
    best = {key: min(v) for key, v in runs.items() if v}
    # each round's ratio pairs runs made side by side (the machine's speed drifts between
    # rounds on a shared machine): the median of the rounds' ratios is the figure to quote
    ratios = np.array(runs["identify"]) / np.array(runs["plain"])
    print(f"ur10e real runs (2 files): identify --estimator ols CPU {best['identify']:.2f} s | "
          f"plain OLS script CPU {best['plain']:.2f} s (best of {args.rounds}) | ratio "
          f"{np.median(ratios):.2f} median of {args.rounds} paired rounds (each "
          f"{', '.join(f'{r:.2f}' for r in ratios)}; of the bests "
          f"{best['identify'] / best['plain']:.2f}) (target <= 1.2; {load()})", flush=True)
    if before is not None:
        same = _results_differ(tmp / "ur10e_before.yaml", tmp / "ur10e.yaml")
        gain = np.median(np.array(runs["identify"]) - np.array(runs["before"]))
        mine = np.array(runs["before"]) / np.array(runs["plain"])
        print(f"    before ({before}): CPU {best['before']:.2f} s (best), ratio "
              f"{np.median(mine):.2f} (median of the paired rounds); this checkout "
              f"{gain:+.3f} s (median of the paired differences); results files {same}",
              flush=True)


def _results_differ(a, b):
    """'identical' where two results files agree apart from timing fields and the robot's
    file paths, else the first differing line."""
    skip = ("t_regressor:", "written:", "elapsed_s:", "robot_config:", "urdf:")
    la, lb = ([ln for ln in Path(p).read_text().splitlines() if not ln.strip().startswith(skip)]
              for p in (a, b))
    for x, y in zip(la, lb):
        if x != y:
            return f"differ: {x.strip()[:80]!r} vs {y.strip()[:80]!r}"
    return "identical" if len(la) == len(lb) else "differ in length"


def dask_files(tmp, n_files=4, samples=1_000_000):
    from dataclasses import replace

    from robot_identification.data import load_dataset
    paths = [tmp / f"dask_{k}.npz" for k in range(n_files)]
    if all(p.exists() for p in paths):
        return paths
    ds = load_dataset(elastic_file(tmp))
    for k, p in enumerate(paths):
        shift = 2500 * k        # a quarter of the 10-s period per file: different recordings
        cut = {key: np.roll(getattr(ds, key), -shift, axis=0)[:samples]
               for key in ("q", "theta", "tau")}
        replace(ds, t=ds.t[:samples], **cut).save_npz(p)
    return paths


def section_dask(args, tmp):
    paths = dask_files(tmp)
    common = ["-m", "robot_identification.cli", "identify", "--robot", "puma560_elastic",
              "--quiet", "--force", "--data", *paths]
    runs = {}
    runs["1 process"] = child([*common, "--output", tmp / "d1.yaml"], ok=IDENTIFY_OK)[0]
    runs["local cluster, 2 workers"] = child([*common, "--workers", "2", "--output",
                                              tmp / "d2.yaml"], ok=IDENTIFY_OK)[0]
    from dask_scaling import ExternalCluster     # its workers preloaded and warmed up
    cluster = ExternalCluster(tmp)
    try:
        runs["external scheduler, 2 workers"] = child([*common, "--scheduler", cluster.address,
                                                       "--output", tmp / "d3.yaml"],
                                                      ok=IDENTIFY_OK)[0]
    finally:
        cluster.close()
    ref = results_estimates(tmp / "d1.yaml")
    same = all(results_estimates(tmp / f) == ref for f in ("d2.yaml", "d3.yaml"))
    base = runs["1 process"]
    for name, wall in runs.items():
        print(f"dask, identify 4 x 1 M samples (puma560_elastic), {name}: wall {wall:.1f} s, "
              f"speed-up {base / wall:.2f}" + (" (target >= 1.6)" if name != "1 process" else ""),
              flush=True)
    print(f"    estimates bit-identical across the three: {same} ({load()})")


def section_montecarlo(args, tmp):
    common = ["-m", "robot_identification.cli", "montecarlo", "--robot", "szabo_3dof",
              "--runs", "100", "--sigma", "0.5", "0.3", "0.7", "--quiet", "--force"]
    w1 = child([*common, "--workers", "1", "--output", tmp / "mc1.yaml"])[0]
    w2 = child([*common, "--workers", "2", "--output", tmp / "mc2.yaml"])[0]
    same = (tmp / "mc1.yaml").read_bytes() == (tmp / "mc2.yaml").read_bytes()
    print(f"montecarlo szabo_3dof 100 runs: 1 worker wall {w1:.1f} s, 2 workers {w2:.1f} s, "
          f"speed-up {w1 / w2:.2f} (target >= 1.6); identical output: {same} ({load()})",
          flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    ap.add_argument("--keep", metavar="DIR", help="keep (and reuse) the generated recordings")
    ap.add_argument("--rounds", type=int, default=3, help="ur10e: timed rounds (best of)")
    ap.add_argument("--elastic-rounds", type=int, default=3,
                    help="elastic: timed rounds of the command and the bare loop (best of)")
    ap.add_argument("--before", metavar="DIR",
                    help="ur10e, elastic: also time identify of this checkout (e.g. `git archive "
                         "COMMIT | tar -x -C DIR` plus the compiled kernel in "
                         "robot_identification/regressor/build) in the same rounds and "
                         "compare the results files")
    args = ap.parse_args(argv)
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ri_perf29_"))
    tmp.mkdir(parents=True, exist_ok=True)
    global PYCACHE
    PYCACHE = tmp / "PYCACHE"
    print(f"issue #29 benchmarks, {load()}, {os.cpu_count()} CPUs", flush=True)
    try:
        for name in SECTIONS:
            if name in args.only:
                print(f"--- {name}", flush=True)
                globals()[f"section_{name}"](args, tmp)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
