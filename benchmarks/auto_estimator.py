"""``estimator: auto`` against its two candidates on held-out motions: does the estimate it
chooses on the identification data predict motions it never saw at least as well as the better
of ``wls`` and ``physical``?

Per robot (simulated, the shipped configs), excitation length (``short``: the first 2.5 s
of the config's excitation, the run stopped there; ``long``: the config's whole excitation,
10 s), torque noise
level and seed: simulate an identification run, ``identify`` with
``estimators=("auto",)`` (auto computes both candidates: the chosen one is the primary, the
other an extra estimate), then predict held-out motions (10 s, whatever the run's length) of
:func:`heldout_motions.motions` (another seed of the same kind, ``fourier seed``; the
excitation about a start shifted by a third of each joint's range, ``other region``) with
each estimate, through the same predictor ``validate`` uses (:func:`heldout_motions.scores`:
the identification's filter and Coulomb handling; settings from results.yaml). Metric: mean
over joints of NRMSE = RMS(tau_pred - tau_meas) / RMS(tau_meas), over all samples, averaged
over the held-out motions. Recording: :class:`heldout_motions.Recorder` (the config's
simulator, quantised encoders, torque noise 10^(-snr/20) x the identification run's RMS).

Nothing is chosen on held-out data: auto sees the identification run only.

    PYTHONPATH=$PWD python benchmarks/auto_estimator.py [--robots puma560 stanford_arm]
        [--seeds 3] [--snr 40 60]
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

LENGTHS = ("short", "long")
SHORT_S = 2.5               # s: the short run (the first SHORT_S of the excitation)


def truncated(traj, duration):
    """The first ``duration`` seconds of ``traj`` (a run stopped early, as the first 2-3 s of
    a starter excitation): :class:`heldout_motions.TimeScaled` at speed 1, cut."""
    from heldout_motions import TimeScaled

    class Truncated(TimeScaled):
        @property
        def duration(self):
            return float(duration)

        def to_dict(self):
            return {"type": "truncated", "duration": float(duration),
                    "of": self.traj.to_dict()}
    return Truncated(traj, 1.0)


HELD_OUT = ("fourier seed", "other region")
#: auto "does as well" as the better candidate when within this factor of it
AS_WELL = 1.01


def run(name, lengths, seeds, snrs, log=print):
    from heldout_motions import Recorder, motions, scores
    from robot_identification.excitation import trajectory_from_config
    from robot_identification.identification import identify, settings_from_results
    rows = []
    for snr in snrs:
        rec = Recorder(name, snr)
        model = rec.model
        spec = dict(model.config.simulation.excitation)
        settings = replace(model.config.identification, estimator="auto",
                           extra_estimators=())
        for length in lengths:
            for seed in range(seeds):
                rec.sigma = None
                traj = trajectory_from_config(model, dict(
                    spec, seed=int(spec.get("seed", 0)) + seed))
                if length == "short":
                    traj = truncated(traj, SHORT_S)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    data = rec(traj, seed)
                    t0 = time.process_time()
                    res = identify(model, data, settings)
                    cpu = time.process_time() - t0
                sel = res.settings["estimator_selection"]
                s_def = settings_from_results(model, {"settings": res.settings})
                held = {k: [] for k in ("wls", "physical")}
                for i, (motion, mt) in enumerate(motions(model, spec, seed).items()):
                    if motion not in HELD_OUT:
                        continue
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        val = rec(mt, 10 * seed + i + 1, held_out=True)
                    for k in held:
                        held[k].append(scores(model, res.base, res.estimates[k].values, val,
                                              s_def)[0])
                wls_h, phys_h = float(np.mean(held["wls"])), float(np.mean(held["physical"]))
                auto_h = {"wls": wls_h, "physical": phys_h}[sel["chosen"]]
                row = dict(robot=name, length=length, duration=traj.duration, snr=snr,
                           seed=seed, chosen=sel["chosen"], sel_wls=sel.get("wls"),
                           sel_physical=sel.get("physical"), wls=wls_h, physical=phys_h,
                           auto=auto_h, cpu=cpu,
                           ok=auto_h <= AS_WELL * min(wls_h, phys_h))
                rows.append(row)
                log(f"{name} {length} ({traj.duration:.1f} s) snr {snr:g} seed {seed}: "
                    f"auto -> {sel['chosen']} (id. folds wls {sel.get('wls')}, physical "
                    f"{sel.get('physical')}); held-out wls {wls_h:.4f} physical {phys_h:.4f}"
                    f" -> {'ok' if row['ok'] else 'WORSE'}; identify {cpu:.1f} s CPU")
    return rows


def table(rows):
    lines = ["| robot | run | SNR dB | seeds | auto chose (physical/wls) | held-out NRMSE wls "
             "| physical | auto | auto <= 1.01 x better |",
             "|---|---|---|---|---|---|---|---|---|"]
    keys = sorted({(r["robot"], r["length"], r["snr"]) for r in rows},
                  key=lambda k: (k[0], k[1] != "short", k[2]))
    for robot, length, snr in keys:
        rs = [r for r in rows if (r["robot"], r["length"], r["snr"]) == (robot, length, snr)]
        n_phys = sum(r["chosen"] == "physical" for r in rs)
        lines.append(
            f"| {robot} | {length} ({rs[0]['duration']:.1f} s) | {snr:g} | {len(rs)} | "
            f"{n_phys}/{len(rs) - n_phys} | {np.mean([r['wls'] for r in rs]):.4f} | "
            f"{np.mean([r['physical'] for r in rs]):.4f} | "
            f"{np.mean([r['auto'] for r in rs]):.4f} | "
            f"{sum(r['ok'] for r in rs)}/{len(rs)} |")
    ok = sum(r["ok"] for r in rows)
    lines.append(f"\nauto within 1 % of the better candidate in {ok} of {len(rows)} runs")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--robots", nargs="+", default=["puma560", "stanford_arm"])
    ap.add_argument("--lengths", nargs="+", default=list(LENGTHS), choices=LENGTHS)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--snr", nargs="+", type=float, default=[40.0, 60.0])
    args = ap.parse_args(argv)
    rows = []
    for name in args.robots:
        rows += run(name, args.lengths, args.seeds, args.snr)
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
