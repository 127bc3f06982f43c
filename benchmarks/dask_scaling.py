"""Dask scaling of ``identify`` and ``montecarlo`` (issue #29), everything in one run.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=$PWD python benchmarks/dask_scaling.py [--quick]
        [--keep DIR] [--only identify montecarlo] [--samples N ...] [--rounds N]
        [--preload MODULE ...] [--montecarlo CASE ...] [--mc-runs N ...]

``identify``: 4 recordings of the 20-minute 1 kHz elastic PUMA recording
(``benchmarks/elastic_20min.py`` makes it; each a differently rotated cut, the files are
made once and reused with ``--keep``), ``identify --robot puma560_elastic`` (the command, a
fresh process each) with 1 process, a local cluster of 2 workers (``--workers 2``) and an
external ``dask scheduler`` + ``dask worker --nworkers 2 --nthreads 1 --preload
robot_identification.dask_worker`` (``--scheduler``; ``--preload``: other preloads, a fresh
cluster each; the same command twice on one cluster: the first job on fresh workers, and
the second, as a long-lived cluster serves it, on the same files with renewed times), at
two recording sizes (1 M and 100 k samples; ``--quick``: 200 k and 20 k; ``--samples``),
``--rounds`` times with the medians of the paired speed-ups. Printed per run: wall time,
the speed-up against 1 process (wall), the CPU time of every process of the run (the
client, each worker; sampled from ``/proc`` by psutil until it ends, so per-worker figures
are exact up to the last 0.1 s) and the **CPU critical path** (client CPU + the busiest
worker's CPU: the wall time the run needs when each process has a core of its own) with its
speed-up ``1-process CPU / critical path`` -- the figure that does not depend on what else
runs on a shared machine -- and whether the estimates are the same bit for bit
(results.yaml, every base parameter). The **break-even size** is where the 2-worker and the
1-process lines (wall = a + b * samples, fitted through the two sizes) cross, in wall time
and in the CPU critical path.

``montecarlo`` (``--only montecarlo``; ``--montecarlo CASE ...`` picks the cases of
:data:`MC_CASES`, ``--mc-runs`` the run counts, default 25 and 100): each case with 1 worker
(in the process) and 2 (local cluster), whole commands and the same CPU accounting;
identical output checked byte by byte (apart from the time stamp); the break-even run count
(and runs x samples of the excitation) where the 2-worker line crosses the 1-worker one,
and the run count where 2 workers would reach 1.6x (straight lines through the two counts).
Cases: ``szabo_3dof`` (OLS and WLS per run: the issue's command) and ``puma560_physical``
(the physically consistent estimate per run: runs that carry the work).

The load average is printed beside every run: wall-time speed-ups on a machine whose cores
are busy with other work measure the machine, not the code.
"""
from __future__ import annotations

import argparse
import json
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
ENV = dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1")
#: The external cluster's Dask settings: those of ``--workers`` (``_dask.QUIET``) as
#: environment variables, as docs/performance.md recommends for ``dask worker``.
CLUSTER_ENV = dict(ENV, DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED="False",
                   DASK_DISTRIBUTED__ADMIN__SYSTEM_MONITOR__INTERVAL="5s",
                   DASK_DISTRIBUTED__WORKER__MEMORY__MONITOR_INTERVAL="1s",
                   DASK_DISTRIBUTED__ADMIN__TICK__INTERVAL="1s")
#: identify's exit code 3 (an error diagnostic in the result, written with --force) still
#: measured a whole run.
OK = (0, 3)


def load():
    return f"load {os.getloadavg()[0]:.1f}"


def watch(proc, extra=()):
    """Wait for ``proc``; CPU seconds (user + system) of it and of each of its descendants
    (and of the processes ``extra``), sampled every 0.1 s from /proc: {pid: (name, cpu)}."""
    import psutil
    seen = {}
    root = psutil.Process(proc.pid)

    def sample():
        procs = [root] + list(extra)
        try:
            procs += root.children(recursive=True)
        except psutil.Error:
            pass
        for p in procs:
            try:
                with p.oneshot():
                    t = p.cpu_times()
                    cmd = " ".join(p.cmdline()[-3:])[-60:]
                seen[p.pid] = (cmd, t.user + t.system)
            except psutil.Error:
                pass
    while proc.poll() is None:
        sample()
        time.sleep(0.1)
    return seen


def run(args, extra=(), ok=OK):
    """``python ARGS`` in a fresh process: wall [s], CPU of its own process [s] and of every
    other process watched ({pid: (name, cpu)}), exit code."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, *map(str, args)], stdout=subprocess.DEVNULL,
                                stderr=err, text=True, env=ENV)
        seen = watch(proc, extra)
        _, status, usage = os.wait4(proc.pid, 0) if proc.returncode is None else (0, 0, None)
        wall = time.perf_counter() - t0
        rc = proc.returncode if proc.returncode is not None else \
            os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read()
    if rc not in ok:
        raise SystemExit(f"{' '.join(map(str, args))} failed ({rc}):\n{text[-3000:]}")
    own = seen.pop(proc.pid, ("", 0.0))[1]
    return {"wall": wall, "client": own, "others": seen}


def estimates(path):
    import yaml
    doc = yaml.safe_load(Path(path).read_text())
    return {e["name"]: e["estimate"] for e in doc["base_parameters"]}


def recordings(tmp, samples, n_files=4):
    """4 rotated cuts of the 20-minute elastic PUMA recording, ``samples`` each."""
    from dataclasses import replace

    import elastic_20min

    from robot_identification.data import load_dataset
    paths = [tmp / f"dask_{samples}_{k}.npz" for k in range(n_files)]
    if all(p.exists() for p in paths):
        return paths
    source = tmp / "puma560_elastic_20min.npz"
    if not source.exists():
        elastic_20min.phase_generate(source, 20.0)
    ds = load_dataset(source)
    for k, p in enumerate(paths):
        shift = 2500 * k        # a quarter of the 10-s period per file: different recordings
        cut = {key: np.roll(getattr(ds, key), -shift, axis=0)[:samples]
               for key in ("q", "theta", "tau")}
        replace(ds, t=ds.t[:samples], **cut).save_npz(p)
    return paths


#: The external workers' ``--preload`` (docs/performance.md): the engine imported and a
#: warm-up identification run before the worker connects.
PRELOAD = "robot_identification.dask_worker"


class ExternalCluster:
    """``dask scheduler`` + ``dask worker --nworkers 2 --nthreads 1 --preload PRELOAD``
    (fresh processes; ``preload="none"``: without)."""

    def __init__(self, tmp, n=2, preload=PRELOAD):
        import psutil
        dask = str(Path(sys.executable).parent / "dask")
        sched_file = tmp / "scheduler.json"
        sched_file.unlink(missing_ok=True)
        self.procs = [subprocess.Popen([dask, "scheduler", "--port", "0", "--no-dashboard",
                                        "--scheduler-file", str(sched_file)], env=CLUSTER_ENV,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
        for _ in range(1200):
            if sched_file.exists() and sched_file.stat().st_size:
                break
            time.sleep(0.1)
        self.address = json.loads(sched_file.read_text())["address"]
        self.procs.append(subprocess.Popen(
            [dask, "worker", "--nworkers", str(n), "--nthreads", "1", "--no-dashboard",
             *(["--preload", preload] if preload != "none" else []),
             "--scheduler-file", str(sched_file)], env=CLUSTER_ENV, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL))
        from distributed import Client
        with Client(self.address, timeout=120) as c:
            c.wait_for_workers(n, timeout=300)
        self.watched = []
        for p in self.procs:
            root = psutil.Process(p.pid)
            self.watched += [root] + root.children(recursive=True)

    def cpu(self):
        """{pid: cpu seconds} of the scheduler, nannies and workers now."""
        out = {}
        for p in self.watched:
            try:
                t = p.cpu_times()
                out[p.pid] = t.user + t.system
            except Exception:  # noqa: BLE001 - psutil.Error: gone
                pass
        return out

    def close(self):
        for p in reversed(self.procs):
            p.terminate()
            p.wait(timeout=120)


def describe(r, base_cpu=None, before=None):
    """Text of one run: wall, client CPU, each worker's CPU, the CPU critical path."""
    others = {pid: cpu - (before or {}).get(pid, 0.0) for pid, (_, cpu) in r["others"].items()}
    busy = sorted((c for c in others.values() if c > 0.05), reverse=True)
    path = r["client"] + (busy[0] if busy else 0.0)
    r["critical"] = path
    text = f"wall {r['wall']:.1f} s, client CPU {r['client']:.1f} s"
    if busy:
        text += f", other processes' CPU {', '.join(f'{c:.1f}' for c in busy)} s"
        text += f", CPU critical path {path:.1f} s"
    return text


def _clusters(preloads):
    """Names of the 2-worker runs of ``section_identify``, each set against 1 process."""
    names = ["local cluster"]
    for pre in preloads:
        tag = "" if len(preloads) == 1 else f" ({pre})"
        names += [f"external scheduler{tag}", f"external scheduler{tag}, second job"]
    return names


def _identify_round(args, tmp, common):
    """One round: 1 process, the local cluster, and per ``--preload`` a fresh external
    cluster's first and second job ({name: run}, {name: bit-identical})."""
    res, outputs = {}, {}
    r = run([*common, "--output", tmp / "d1.yaml"])
    print(f"  1 process: {describe(r)} ({load()})", flush=True)
    res["1 process"] = r
    r = run([*common, "--workers", "2", "--output", tmp / "d2.yaml"])
    print(f"  local cluster, 2 workers: {describe(r)} ({load()})", flush=True)
    res["local cluster"], outputs["local cluster"] = r, "d2.yaml"
    names = _clusters(args.preload)[1:]
    for k, pre in enumerate(args.preload):
        t0 = time.perf_counter()
        cluster = ExternalCluster(tmp, preload=pre)
        print(f"  external cluster --preload {pre}: workers connected after "
              f"{time.perf_counter() - t0:.1f} s ({load()})", flush=True)
        try:
            # The same command twice on one cluster: the first job on freshly started
            # workers, and the second as a long-lived cluster serves it. The files' times
            # are renewed before the second job: a worker's cache of the heads it read
            # (keyed by path, size and time) does not serve it.
            for j, name in enumerate(names[2 * k:2 * k + 2]):
                if j:
                    for p in common[common.index("--data") + 1:]:
                        os.utime(p)
                out = f"d{3 + 2 * k + j}.yaml"
                before = cluster.cpu()
                r = run([*common, "--scheduler", cluster.address, "--output", tmp / out],
                        extra=cluster.watched)
                print(f"  {name}, 2 workers: {describe(r, before=before)} ({load()})",
                      flush=True)
                res[name], outputs[name] = r, out
        finally:
            cluster.close()
    ref = estimates(tmp / "d1.yaml")
    return res, {name: estimates(tmp / out) == ref for name, out in outputs.items()}


def section_identify(args, tmp):
    sizes = args.samples or ((200_000, 20_000) if args.quick else (1_000_000, 100_000))
    clusters = _clusters(args.preload)
    fits = {}
    for samples in sizes:
        paths = recordings(tmp, samples)
        common = ["-m", "robot_identification.cli", "identify", "--robot", "puma560_elastic",
                  "--quiet", "--force", "--data", *paths]
        rounds = []
        print(f"identify, 4 x {samples} samples (puma560_elastic, .npz):", flush=True)
        for i in range(args.rounds):
            if args.rounds > 1:
                print(f" round {i + 1} of {args.rounds}:", flush=True)
            res, same = _identify_round(args, tmp, common)
            rounds.append(res)
            one = res["1 process"]
            for name in clusters:
                r = res[name]
                print(f"  {name}: speed-up {one['wall'] / r['wall']:.2f} (wall), "
                      f"{one['critical'] / r['critical']:.2f} (1-process CPU / CPU critical "
                      f"path; target >= 1.6); estimates bit-identical to 1 process: "
                      f"{same[name]}", flush=True)
        if args.rounds > 1:
            for name in clusters:
                wall = [r["1 process"]["wall"] / r[name]["wall"] for r in rounds]
                cpu = [r["1 process"]["critical"] / r[name]["critical"] for r in rounds]
                print(f"  {name}, median of {args.rounds} paired rounds: speed-up "
                      f"{np.median(wall):.2f} wall ({', '.join(f'{x:.2f}' for x in wall)}), "
                      f"{np.median(cpu):.2f} CPU critical path "
                      f"({', '.join(f'{x:.2f}' for x in cpu)})", flush=True)
        fits[samples] = {k: (v["wall"], v["critical"]) for k, v in rounds[-1].items()}
    if len(sizes) < 2:
        return
    lo, hi = sorted(sizes)[:2]
    for name in clusters:
        for k, what in ((0, "wall"), (1, "CPU critical path")):
            b1 = (fits[hi]["1 process"][k] - fits[lo]["1 process"][k]) / (hi - lo)
            a1 = fits[lo]["1 process"][k] - b1 * lo
            b2 = (fits[hi][name][k] - fits[lo][name][k]) / (hi - lo)
            a2 = fits[lo][name][k] - b2 * lo
            x, none = _crossing(a1, b1, a2, b2)
            be = (f"{x * 4:,.0f} samples in all (4 recordings)" if none is None
                  else f"none: 2 workers are {none} (sizes / sample)")
            print(f"break-even, {name} vs 1 process ({what}, lines through 4 x {lo} and "
                  f"4 x {hi}): {be}", flush=True)


#: Monte-Carlo cases (``--montecarlo``): robot, noise and estimator arguments. The first is
#: the issue's command (OLS and WLS per run, a few ms each: the simulation of the excitation
#: and the imports carry the command); the second a study whose runs carry the work (the
#: physically consistent SDP estimate per run, ~0.1-0.2 s each).
MC_CASES = {"szabo_3dof": ["--robot", "szabo_3dof", "--sigma", "0.5", "0.3", "0.7"],
            "puma560_physical": ["--robot", "puma560", "--snr", "30", "--estimator",
                                 "physical"]}


def _samples(path):
    import yaml
    return int(yaml.safe_load(Path(path).read_text())["samples"])


def section_montecarlo(args, tmp):
    """``montecarlo`` with 1 worker (in the process) and 2 (local cluster, forked), whole
    commands, at two run counts per case; the speed-ups, the identical output and the
    break-even run count (and runs x samples) where the 2-worker line crosses the 1-worker
    line (wall = a + b * runs through the two counts)."""
    sizes = args.mc_runs or ((100,) if args.quick else (25, 100))
    for case in args.mc_cases:
        common = ["-m", "robot_identification.cli", "montecarlo", *MC_CASES[case],
                  "--quiet", "--force"]
        fits = {}
        for runs in sizes:
            r1 = run([*common, "--runs", runs, "--workers", "1", "--output",
                      tmp / "mc1.yaml"], ok=(0,))
            print(f"montecarlo {case} {runs} runs, 1 worker: {describe(r1)} ({load()})",
                  flush=True)
            r2 = run([*common, "--runs", runs, "--workers", "2", "--output",
                      tmp / "mc2.yaml"], ok=(0,))
            print(f"montecarlo {case} {runs} runs, 2 workers: {describe(r2)} ({load()})",
                  flush=True)
            same = (tmp / "mc1.yaml").read_text().split("written")[0] == \
                (tmp / "mc2.yaml").read_text().split("written")[0]
            print(f"  speed-up {r1['wall'] / r2['wall']:.2f} (wall), "
                  f"{r1['critical'] / r2['critical']:.2f} (CPU critical path; target >= 1.6 "
                  f"at 100 runs); identical output: {same}", flush=True)
            fits[runs] = ((r1["wall"], r1["critical"]), (r2["wall"], r2["critical"]))
        if len(sizes) < 2:
            continue
        samples = _samples(tmp / "mc1.yaml")
        lo, hi = min(sizes), max(sizes)
        for k, what in ((0, "wall"), (1, "CPU critical path")):
            b1 = (fits[hi][0][k] - fits[lo][0][k]) / (hi - lo)
            a1 = fits[lo][0][k] - b1 * lo
            b2 = (fits[hi][1][k] - fits[lo][1][k]) / (hi - lo)
            a2 = fits[lo][1][k] - b2 * lo
            n, none = _crossing(a1, b1, a2, b2)
            be = (f"{n:,.0f} runs ({n * samples:,.0f} runs x samples; 1.6x from "
                  f"{_runs_for(1.6, a1, b1, a2, b2)})" if none is None
                  else f"none: 2 workers are {none} (counts / run)")
            print(f"break-even, montecarlo {case} ({samples} samples), 2 vs 1 worker "
                  f"({what}, lines through {lo} and {hi} runs): {be}", flush=True)


def _crossing(a1, b1, a2, b2):
    """Where the cost lines a1 + b1 x (one process) and a2 + b2 x (2 workers) cross:
    ``(x, None)``, or ``(None, reason)`` when 2 workers never catch up or always lead."""
    if b1 > b2 and a2 > a1:
        return (a2 - a1) / (b1 - b2), None
    if a2 <= a1 and b2 <= b1:
        return None, "faster at both"
    return None, "not faster per unit"


def _runs_for(ratio, a1, b1, a2, b2):
    """Runs where (a1 + b1 n) / (a2 + b2 n) reaches ``ratio`` (text), if ever."""
    if b1 <= ratio * b2:
        return "never (per-run ratio below it)"
    return f"{max(0.0, (ratio * a2 - a1) / (b1 - ratio * b2)):,.0f} runs"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="smaller recordings (200 k and 20 k samples), 100 runs only")
    ap.add_argument("--only", nargs="+", choices=("identify", "montecarlo"),
                    default=["identify", "montecarlo"])
    ap.add_argument("--keep", metavar="DIR", help="keep (and reuse) the generated recordings")
    ap.add_argument("--samples", type=int, nargs="+", metavar="N",
                    help="identify: samples per recording (default 1000000 100000; --quick: "
                         "200000 20000)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="identify: rounds of every run, with the median of the paired "
                         "speed-ups (default 1)")
    ap.add_argument("--preload", nargs="+", default=[PRELOAD], metavar="MODULE",
                    help=f"identify: the external workers' --preload, a fresh cluster each "
                         f"(default {PRELOAD}; 'none': without; e.g. "
                         f"robot_identification.identification: the engine's imports only)")
    ap.add_argument("--montecarlo", dest="mc_cases", nargs="+", choices=tuple(MC_CASES),
                    default=list(MC_CASES), metavar="CASE",
                    help=f"Monte-Carlo cases (default all: {', '.join(MC_CASES)})")
    ap.add_argument("--mc-runs", type=int, nargs="+", metavar="RUNS",
                    help="Monte-Carlo run counts (default 25 100; --quick: 100)")
    args = ap.parse_args(argv)
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ri_dask_"))
    tmp.mkdir(parents=True, exist_ok=True)
    print(f"Dask scaling, {load()}, {os.cpu_count()} CPUs", flush=True)
    try:
        for name in ("identify", "montecarlo"):
            if name in args.only:
                globals()[f"section_{name}"](args, tmp)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
