"""``estimator: auto``'s decision rule against variants of it, on held-out motions.

Auto compares WLS and the physically consistent estimate by their held-out NRMSE on folds
of the identification data (``resolve_estimator``, docs/estimators.md section 8) and keeps
``physical`` unless its score exceeds ``ESTIMATOR_TIE`` (1.02) x WLS's. This study records,
per run, what any rule over those folds could use - per fold, per time block of the held-out
part (``RecordingEquations.time_blocks``) and per joint, the residual and measured sums of
squares of WLS and of the physical estimate at the chosen prior weight, each fitted on the
other fold - and the held-out NRMSE of both estimates on motions the identification never
saw; then it replays the rules on the records:

- ``main 1.02``: the shipped rule;
- ``1se fold`` / ``1se block`` / ``1se fold x joint``: the one-standard-error rule (Hastie,
  Tibshirani & Friedman, Elements of Statistical Learning, 2nd ed., 7.10): ``physical``
  unless it is above 1.02 x WLS and above it by more than the standard error (sd / sqrt(n))
  of the per-fold, per-(fold, time block) or per-(fold, joint) score differences;
- ``1se block jackknife``: the same with the jackknife standard error of the score
  difference over the (fold, time block) sums;
- ``always physical``.

Runs (``--noise``): ``positions``: ``simulate(model, duration, seed=seed, snr_db=snr)``, what
``robot-identification simulate --duration D --seed S --snr SNR`` writes (noise on the
positions, ``add_measurement_noise``: 10^(-snr/20) x each joint's position std since main
1236085, x its RMS before; torques exact; the config's excitation: every
seed the same motion, its own noise); ``torque``: benchmarks/auto_estimator.py's recording
(the excitation of config seed + seed, quantised encoders, torque noise). ``--cutoff``
overrides the config's ``cutoff_hz`` (``none``, ``auto`` or Hz). Held out, every run: the
three 10 s motions of benchmarks/auto_estimator.py (``fourier seed``, ``other region``,
``bspline``) recorded by ``heldout_motions.Recorder`` (quantised encoders, torque noise at
the run's SNR); metric: mean over joints of NRMSE = RMS(tau_pred - tau_meas) /
RMS(tau_meas), mean over the motions; predictor: ``validate``'s full one (settings from the
results). Nothing is chosen on held-out data.

    PYTHONPATH=$PWD python benchmarks/auto_estimator_rules.py --robots stanford_arm
        --durations 2.5 5 10 --snr 40 60 --seeds 3 --out runs.json
    PYTHONPATH=$PWD python benchmarks/auto_estimator_rules.py --analyse runs.json [...]
"""
from __future__ import annotations

import argparse
import json
import sys
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from auto_estimator import AS_WELL, BSPLINE, HELD_OUT  # noqa: E402

from robot_identification.identification import ESTIMATOR_TIE as TIE  # noqa: E402

KINDS = HELD_OUT + (BSPLINE,)


def _residuals(G, b, c, beta):
    return np.maximum(c - 2 * b @ beta + np.einsum("i,jik,k->j", beta, G, beta), 0.0)


def _fold_records(captured):
    """Per fold: the held-out part's time blocks' measured sums c and the residual sums of
    WLS and of the physical estimate at the chosen weight, each fitted on the other folds
    (as ``select_prior_weight`` fits them)."""
    from robot_identification.estimation import physically_consistent, wls
    from robot_identification.identification import _prior_weight as pw
    model, base, prior, folds = (captured[k] for k in ("model", "base", "prior", "folds"))
    gamma = captured["out"][0]
    out = []
    for k, f in enumerate(folds):
        rest = pw._fitted_part(pw._others(folds, k))
        w = wls(rest)
        info = np.einsum("j,jik->ik", w.weights, rest.G)
        ph = physically_consistent(model, base, info, w.values, nominal=prior, weight=gamma,
                                   refine=False, fallback=False)
        blocks = f.time_blocks() or [(f.G, f.b, f.c, f.count)]
        out.append({"c": [bl[2].tolist() for bl in blocks],
                    "rw": [_residuals(*bl[:3], w.values).tolist() for bl in blocks],
                    "rp": [_residuals(*bl[:3], ph.base).tolist() for bl in blocks]})
    return out


def record(args):
    """Run the study; write the records to ``args.out`` (JSON) as they come."""
    import auto_estimator as ae
    from heldout_motions import Recorder
    from robot_identification.excitation import trajectory_from_config
    from robot_identification.identification import _prior_weight as pw
    from robot_identification.identification import identify, settings_from_results
    from robot_identification.simulation import simulate
    from robot_identification.validation import validate
    captured = {}
    select = pw.select_prior_weight

    def capture(model, base, prior, folds, weights=pw.PRIOR_WEIGHTS):   # auto's folds
        out = select(model, base, prior, folds, weights)
        captured.update(model=model, base=base, prior=prior, folds=folds, out=out)
        return out
    pw.select_prior_weight = capture
    rows = []
    items = [(n, None) for n in args.robots] + [
        (Path(c).stem if Path(c).stem != "cfg" else Path(c).parent.name, c)
        for c in args.configs]
    for name, cfg in items:
        for snr in args.snr:
            rec = Recorder(name, snr, engine=args.engine, config=cfg)
            model = rec.model
            spec = dict(model.config.simulation.excitation)
            s = replace(model.config.identification, estimator="auto", extra_estimators=())
            if args.cutoff != "config":
                s = replace(s, cutoff_hz=None if args.cutoff == "none" else
                            args.cutoff if args.cutoff == "auto" else float(args.cutoff))
            for duration in args.durations:
                for seed in range(args.seeds):
                    captured.clear()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        rec.sigma = None
                        if args.noise == "positions":
                            ds = simulate(model, duration=duration, seed=seed, snr_db=snr,
                                          engine=args.engine)
                            rec.sigma = np.sqrt(np.mean(ds.tau ** 2, axis=0)) * 10 ** (
                                -snr / 20)
                        else:
                            traj = trajectory_from_config(model, dict(
                                spec, seed=int(spec.get("seed", 0)) + seed))
                            if duration < traj.duration:
                                traj = ae.truncated(traj, duration)
                            ds = rec(traj, seed)
                        res = identify(model, [ds], s)
                        sel = res.settings["estimator_selection"]
                        folds = _fold_records(captured) if captured else None
                        betas = {k: e.values for k, e in res.estimates.items()
                                 if k in ("wls", "physical")}
                        if "physical" not in betas:
                            betas["physical"] = identify(model, [ds], replace(
                                s, estimator="physical")).estimates["physical"].values
                        vals = [rec(mt, 10 * seed + i + 1, held_out=True) for i, mt in
                                enumerate(ae.held_out(model, spec, seed, KINDS).values())]
                        files = validate(model, res.base, betas, vals,
                                         settings_from_results(model, {"settings": res.settings}),
                                         labels=[f"m{i}" for i in range(len(vals))])
                    held = {k: [f["models"][k]["nrmse_mean"] for f in files] for k in betas}
                    rows.append(dict(noise=args.noise, cutoff=args.cutoff, robot=name,
                                     engine=args.engine, snr=snr, duration=duration, seed=seed,
                                     sel=sel, folds=folds, held=held))
                    print(f"{name} {duration:g} s {snr:g} dB seed {seed}: auto -> "
                          f"{sel.get('chosen')} (folds: wls {sel.get('wls')}, physical "
                          f"{sel.get('physical')}); held out: wls {np.mean(held['wls']):.4f}, "
                          f"physical {np.mean(held['physical']):.4f}", flush=True)
                    Path(args.out).write_text(json.dumps(rows))


def _se(d):
    d = np.asarray(d, dtype=float)
    return float(np.std(d, ddof=1) / np.sqrt(d.size)) if d.size > 1 else 0.0


def _nrmse(r, c):
    ok = c > 0
    return np.sqrt(np.maximum(r[ok], 0.0) / c[ok])


def statistics(folds):
    """The two scores (auto's: mean over folds of the mean over joints of the NRMSE), their
    difference and its standard errors (module docstring)."""
    fold_w, fold_p, cell_d, block_d = [], [], [], []
    arrays = [tuple(np.asarray(f[k]) for k in ("c", "rw", "rp")) for f in folds]
    for c, rw, rp in arrays:
        w, p = _nrmse(rw.sum(0), c.sum(0)), _nrmse(rp.sum(0), c.sum(0))
        fold_w.append(w.mean())
        fold_p.append(p.mean())
        cell_d += list(p - w)
        block_d += [np.mean(_nrmse(rp[b], c[b])) - np.mean(_nrmse(rw[b], c[b]))
                    for b in range(c.shape[0]) if np.any(c[b] > 0)]
    jack = []
    for k, (c, rw, rp) in enumerate(arrays):
        for b in range(c.shape[0]):
            sw, sp = [], []
            for k2, (c2, rw2, rp2) in enumerate(arrays):
                C, RW, RP = c2.sum(0), rw2.sum(0), rp2.sum(0)
                if k2 == k:
                    C, RW, RP = C - c2[b], RW - rw2[b], RP - rp2[b]
                sw.append(np.mean(_nrmse(RW, C)))
                sp.append(np.mean(_nrmse(RP, C)))
            jack.append(np.mean(sp) - np.mean(sw))
    jack = np.asarray(jack)
    n = jack.size
    sw, sp = float(np.mean(fold_w)), float(np.mean(fold_p))
    return dict(wls=sw, physical=sp, diff=sp - sw,
                se_fold=_se(np.subtract(fold_p, fold_w)), se_cell=_se(cell_d),
                se_block=_se(block_d),
                se_jack=float(np.sqrt((n - 1) / n * np.sum((jack - jack.mean()) ** 2))))


def _one_se(key):
    return lambda s: s["physical"] <= TIE * s["wls"] or s["diff"] <= s[key]


RULES = {
    "main 1.02": lambda s: s["physical"] <= TIE * s["wls"],
    "1se fold": _one_se("se_fold"),
    "1se block": _one_se("se_block"),
    "1se fold x joint": _one_se("se_cell"),
    "1se block jackknife": _one_se("se_jack"),
    "always physical": lambda s: True,
}


def analyse(rows, log=print):
    """Per run and in total: each rule's choice, whether it is within 1 % of the better
    candidate on the held-out motions, and its held-out NRMSE over the better one's."""
    runs = [r for r in rows if r["folds"]]
    ok = {k: 0 for k in RULES}
    ratio = {k: [] for k in RULES}
    log("| robot | noise | cutoff | s | dB | seed | folds: wls | physical | held out: wls | "
        "physical | " + " | ".join(RULES) + " |")
    log("|" + "---|" * (10 + len(RULES)))
    for r in runs:
        st = statistics(r["folds"])
        hw, hp = float(np.mean(r["held"]["wls"])), float(np.mean(r["held"]["physical"]))
        cells = []
        for k, rule in RULES.items():
            h = hp if rule(st) else hw
            good = h <= AS_WELL * min(hw, hp)
            ok[k] += good
            ratio[k].append(h / min(hw, hp))
            cells.append(("physical" if rule(st) else "wls") + ("" if good else " (worse)"))
        log(f"| {r['robot']} | {r['noise']} | {r['cutoff']} | {r['duration']:g} | "
            f"{r['snr']:g} | {r['seed']} | {st['wls']:.4f} | {st['physical']:.4f} | {hw:.4f} | "
            f"{hp:.4f} | " + " | ".join(cells) + " |")
    log("\n| rule | within 1 % of the better | mean auto / better | max auto / better |")
    log("|---|---|---|---|")
    for k in RULES:
        log(f"| {k} | {ok[k]}/{len(runs)} | {np.mean(ratio[k]):.3f} | "
            f"{np.max(ratio[k]):.3f} |")
    return ok, ratio


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--robots", nargs="*", default=["stanford_arm"])
    ap.add_argument("--configs", nargs="*", default=[], metavar="YAML")
    ap.add_argument("--engine", choices=("builtin", "mujoco"), default="builtin")
    ap.add_argument("--noise", choices=("positions", "torque"), default="positions")
    ap.add_argument("--cutoff", default="config",
                    help="cutoff_hz of the identification: config, none, auto or Hz")
    ap.add_argument("--durations", nargs="+", type=float, default=[2.5])
    ap.add_argument("--snr", nargs="+", type=float, default=[60.0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", help="JSON file of the records (written as they come)")
    ap.add_argument("--analyse", nargs="+", metavar="JSON", help="replay the rules on records")
    args = ap.parse_args(argv)
    if args.analyse:
        rows = []
        for path in args.analyse:
            rows += json.loads(Path(path).read_text())
        analyse(rows)
        return 0
    if not args.out:
        ap.error("--out is required to record")
    record(args)
    analyse(json.loads(Path(args.out).read_text()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
