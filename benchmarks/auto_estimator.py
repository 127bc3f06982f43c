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
excitation about a start shifted by a third of each joint's range, ``other region``; with
``--held-out ... bspline`` also a B-spline of seed 5 + seed) with each estimate, through
``validate`` itself (:func:`robot_identification.validation.validate`, settings from
results.yaml): its full predictor (the identification's filter and Coulomb handling) and its
plain one. Metric: mean over joints of NRMSE = RMS(tau_pred - tau_meas) / RMS(tau_meas), over
all samples, averaged over the held-out motions. Recording: :class:`heldout_motions.Recorder`
(the config's simulator on ``--engine``: ``builtin`` or ``mujoco``, every run; quantised
encoders, torque noise 10^(-snr/20) x the identification run's RMS). ``--configs``: robot
config files (e.g. ``init --urdf`` starter configs of robots the project does not ship),
labelled by their file name (``cfg.yaml``: its folder's).

Nothing is chosen on held-out data: auto sees the identification run only.

    PYTHONPATH=$PWD python benchmarks/auto_estimator.py [--robots puma560 stanford_arm]
        [--seeds 3] [--snr 40 60] [--engine mujoco] [--configs cfg.yaml ...]
        [--held-out "fourier seed" "other region" bspline]
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
#: a further held-out motion of another kind: a B-spline (``excite --type bspline``'s
#: starting point) of seed BSPLINE_SEED + seed, each joint scaled to its limits
BSPLINE = "bspline"
BSPLINE_SEED = 5
#: auto "does as well" as the better candidate when within this factor of it
AS_WELL = 1.01


def held_out(model, spec, seed, kinds):
    """{motion: trajectory} of the held-out ``kinds`` for ``seed``."""
    from heldout_motions import motions
    from robot_identification.excitation import trajectory_from_config
    out = {k: t for k, t in motions(model, spec, seed).items() if k in kinds}
    if BSPLINE in kinds:
        out[BSPLINE] = trajectory_from_config(model, dict(
            type="bspline", seed=BSPLINE_SEED + seed, scaling="joint"))
    return out


def run(name, lengths, seeds, snrs, log=print, engine="builtin", config=None,
        kinds=HELD_OUT):
    """Rows of one robot (a shipped name, or ``config``: a robot config YAML labelled
    ``name``); ``engine`` simulates every run (identification and held-out)."""
    from heldout_motions import Recorder
    from robot_identification.excitation import trajectory_from_config
    from robot_identification.identification import identify, settings_from_results
    from robot_identification.validation import validate
    rows = []
    for snr in snrs:
        rec = Recorder(name, snr, engine=engine, config=config)
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
                betas = {k: e.values for k, e in res.estimates.items()
                         if k in ("wls", "physical")}
                if "physical" not in betas:     # auto chose wls without comparing (sel["why"])
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        betas["physical"] = identify(model, data, replace(
                            settings, estimator="physical")).estimates["physical"].values
                vals = []
                for i, (motion, mt) in enumerate(held_out(model, spec, seed, kinds).items()):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        vals.append(rec(mt, 10 * seed + i + 1, held_out=True))
                # validate's predictors (full and plain), every candidate on the same data
                files = validate(model, res.base, betas, vals, s_def,
                                 labels=[f"m{i}" for i in range(len(vals))])
                held = {(p, k): float(np.mean([f[p][k]["nrmse_mean"] for f in files]))
                        for p in ("models", "plain") for k in betas}
                row = dict(robot=name, length=length, duration=traj.duration, snr=snr,
                           seed=seed, chosen=sel["chosen"], sel_wls=sel.get("wls"),
                           sel_physical=sel.get("physical"), cpu=cpu, engine=engine,
                           why=sel.get("why"), errors=sorted(
                               {d.code for d in res.diagnostics if d.severity == "error"}))
                for p, tag in (("models", ""), ("plain", "_plain")):
                    w, ph = held[(p, "wls")], held[(p, "physical")]
                    a = {"wls": w, "physical": ph}[sel["chosen"]]
                    row.update({f"wls{tag}": w, f"physical{tag}": ph, f"auto{tag}": a,
                                f"ok{tag}": a <= AS_WELL * min(w, ph)})
                rows.append(row)
                log(f"{name} [{engine}] {length} ({traj.duration:.1f} s) snr {snr:g} seed "
                    f"{seed}: auto -> {sel['chosen']} (id. folds wls {sel.get('wls')}, "
                    f"physical {sel.get('physical')}{'; ' + row['why'] if row['why'] else ''}"
                    f"; errors {row['errors']}); held-out full: wls {row['wls']:.4f} "
                    f"physical {row['physical']:.4f} -> {'ok' if row['ok'] else 'WORSE'}; "
                    f"plain: wls {row['wls_plain']:.4f} physical {row['physical_plain']:.4f}"
                    f" -> {'ok' if row['ok_plain'] else 'WORSE'}; identify {cpu:.1f} s CPU",
                    flush=True)
    return rows


def table(rows):
    lines = ["| robot | engine | run | SNR dB | seeds | auto chose (physical/wls) | held-out "
             "NRMSE full: wls | physical | auto | auto <= 1.01 x better | plain: wls "
             "| physical | auto | auto <= 1.01 x better |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    group = ("robot", "engine", "length", "snr")
    keys = sorted({tuple(r[g] for g in group) for r in rows},
                  key=lambda k: (k[0], k[1], k[2] != "short", k[3]))
    for robot, engine, length, snr in keys:
        rs = [r for r in rows if tuple(r[g] for g in group) == (robot, engine, length, snr)]
        n_phys = sum(r["chosen"] == "physical" for r in rs)
        cells = "".join(
            f" {np.mean([r['wls' + t] for r in rs]):.4f} | "
            f"{np.mean([r['physical' + t] for r in rs]):.4f} | "
            f"{np.mean([r['auto' + t] for r in rs]):.4f} | "
            f"{sum(r['ok' + t] for r in rs)}/{len(rs)} |" for t in ("", "_plain"))
        lines.append(
            f"| {robot} | {engine} | {length} ({rs[0]['duration']:.1f} s) | {snr:g} | "
            f"{len(rs)} | {n_phys}/{len(rs) - n_phys} |{cells}")
    for t, what in (("", "full"), ("_plain", "plain")):
        ok = sum(r["ok" + t] for r in rows)
        lines.append(f"\nauto within 1 % of the better candidate ({what} predictor) in {ok} "
                     f"of {len(rows)} runs")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--robots", nargs="*", default=["puma560", "stanford_arm"])
    ap.add_argument("--lengths", nargs="+", default=list(LENGTHS), choices=LENGTHS)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--snr", nargs="+", type=float, default=[40.0, 60.0])
    ap.add_argument("--engine", choices=("builtin", "mujoco"), default="builtin",
                    help="physics engine of every simulated run (simulate --engine)")
    ap.add_argument("--configs", nargs="+", default=[], metavar="YAML",
                    help="robot config files (e.g. `init --urdf` starter configs) compared "
                         "besides --robots (pass --robots with no name for these only)")
    ap.add_argument("--held-out", nargs="+", default=list(HELD_OUT),
                    choices=list(HELD_OUT) + [BSPLINE], dest="held_out",
                    help="held-out motions (mean NRMSE over them)")
    args = ap.parse_args(argv)
    rows = []
    for name in args.robots:
        rows += run(name, args.lengths, args.seeds, args.snr, engine=args.engine,
                    kinds=args.held_out)
    for cfg in args.configs:
        rows += run(Path(cfg).stem if Path(cfg).stem != "cfg" else Path(cfg).parent.name,
                    args.lengths, args.seeds, args.snr, engine=args.engine, config=cfg,
                    kinds=args.held_out)
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
