"""UR10e held-out accuracy: default estimate vs plain OLS vs the dataset authors' model, on the
SAME data with the SAME metric (mean over joints of NRMSE = RMS(tau_pred - tau_meas) /
RMS(tau_meas), torques after the identification's low-pass filter).

Protocol (nothing is selected on validation data):

- identify on the shared identification runs (the two unloaded 50 s Fourier runs);
- validate on every shared validation run: a 30 s Fourier run (moving) and two static holds;
- leave-one-recording-out on the identification runs (fit on one, predict the other);
- the torque the arm holds at rest before and after each identification run (same pose): measured
  minus the default model at rest (gravity + offset, no Coulomb term), and whether its sign follows
  the direction of the last motion (a "friction keeps its last sign" model would need it to).

Models compared:

- ``default``: ``robot-identification identify`` with the robot config (WLS, automatic Coulomb
  deadband, friction rows near reversals dropped; the physically consistent estimate with
  the log-det prior is the ``physical`` row);
- ``static friction``: the same with Szabó's smooth static friction model (eq. 7-9), the
  model ``identify --select`` prefers on the identification runs (leave-one-recording-out);
- ``plain OLS``: ordinary least squares with plain sign(dq) friction in identification and
  prediction (what a short script with the same URDF does); the row "validate's Coulomb
  column" predicts it as ``validate`` predicts (ramp filtered like the torque);
- ``authors``: the parameters Mamedov & Mikhel publish with the data
  (shamilmamedov/dynamic_calibration, UR10E_parameters.txt: pi_rgd, pi_drvs, pi_frcn; their
  link frames are the joint frames of their URDF, the shared ``ur10e.urdf``), predicted with
  their friction model fv dq + fc sign(dq) + fo.

    PYTHONPATH=$PWD python benchmarks/ur10e_heldout.py [--dataset DIR]

``--dataset DIR``: the folder ``dataset_ur10e`` of the authors' public repository
(``git clone https://github.com/shamilmamedov/dynamic_calibration``; not shipped here). The
same fit is then also validated on every run of it that has no payload and is not one of the
two identification runs, grouped by motion type: static holds (``validation_data/*-p<k>.csv``),
point-to-point (``*ptp*``), one joint at a time (``jointwise_motion/``) and other Fourier
excitations (``identification_data/``); runs in another column layout are listed as skipped
with the reader's one-line message.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import argparse
import re

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DATA = next((c / "data" / "ur10e" for c in (REPO.parent / "shared", REPO.parents[1] / "shared")
             if (c / "data" / "ur10e").is_dir()), None)
IDENT = ("ur-20_02_19_14harm50sec.csv", "ur-20_02_12-50sec_12harm.csv")
VALID = ("ur-20_02_10-30sec_12harm.csv", "ur-20_01_17-p1.csv", "ur-20_01_17-p2.csv")

# Mamedov & Mikhel (2020), UR10E_parameters.txt. Per link [Ixx Ixy Ixz Iyy Iyz Izz mx my mz m]
# about the link frame; rotor (reflected) inertias; per joint [fv fc fo].
AUTHORS_RIGID = [
    16.0176611535738, -2.00482708189127e-24, -4.24485395869232e-22, 16.0176611535738,
    -4.24485395867403e-22, 9.43727306189725e-07, -6.53436127827057e-22, -6.53436127823637e-22,
    3.50505913361878e-15, 4.82735807687454,
    3.93252112150267, 0.852872700795216, 0.151907227487544, 3.72055571331379,
    -0.594537596685827, 1.90315714825294, 0.0499515018125203, -0.275933516211432,
    3.26326766895734, 7.92588780427583,
    2.22453155994020, -0.536563782355030, -0.176606571084730, 1.38898515931147,
    -0.216688686682940, 1.38868367868425, 0.0239478724955783, 0.242903204545637,
    0.893878743865011, 2.48085522792275,
    1.02973744452979, 0.232810369975328, -0.0122592945631829, 0.0751257822869478,
    0.0743540253355278, 1.06527257146170, -0.000582815216240731, -0.253394468238071,
    0.191762550420584, 2.15599664972997,
    0.0286148910140748, -0.0338326593926075, -0.0256613339921903, 0.108051336487696,
    -0.0138455726459147, 0.111089405220237, 0.00787524242077676, 0.0934251412682158,
    0.114658605760645, 2.15599365882885,
    0.0283844456390803, -0.00207558738053028, -0.0139815283589113, 0.0353598234283524,
    -0.00400838436166993, 0.00814485837826589, 0.00266611685970840, -0.00108021254518030,
    -0.0158005587487420, 0.222170406447329]
AUTHORS_ROTOR = [0.0, 3.7434, 0.0, 0.0708, 0.2342, 0.4365]
AUTHORS_FRICTION = [
    21.2560035178975, 12.5483919746119, 0.196127531079290, 20.2209078488147, 13.2656448586672,
    -0.753542068699768, 10.3777424977617, 4.99431320112810, 0.197915175643975, 3.57505079619634,
    1.99785409182665, 0.0548203669462869, 2.49090134851989, 2.69046065664555,
    -0.00961090201631413, 3.02555317117942, 2.29785428883088, 0.0425285989157143]


def sign_friction(config):
    """The config with viscous + Coulomb sign(dq) + offset friction (plain OLS, authors)."""
    return replace(config, friction=replace(config.friction, model="coulomb_viscous",
                                            offset=True))


def authors_model_and_parameters():
    """RobotModel on the authors' URDF and their standard parameters in our layout."""
    from robot_identification.model import RobotModel, load_robot
    cfg = sign_friction(load_robot("ur10e").config)
    model = RobotModel(cfg, urdf_xml=(DATA / "ur10e.urdf").read_text())
    pi = np.zeros(model.n_parameters)
    names = model.parameter_names
    for k in range(6):
        ixx, ixy, ixz, iyy, iyz, izz, mx, my, mz, m = AUTHORS_RIGID[10 * k: 10 * k + 10]
        pi[10 * k: 10 * k + 10] = [m, mx, my, mz, ixx, ixy, iyy, ixz, iyz, izz]
        j = model.joint_names[k]
        fv, fc, fo = AUTHORS_FRICTION[3 * k: 3 * k + 3]
        for key, v in (("rotor_inertia", AUTHORS_ROTOR[k]), ("viscous", fv), ("coulomb", fc),
                       ("offset", fo)):
            pi[names.index(f"{j}.{key}")] = v
    return model, pi


def mean_nrmse(files, name):
    return {Path(f["file"]).name: f["models"][name]["nrmse_mean"] for f in files}


def rest_holds(model, result, paths, move_velocity=0.01, sign_velocity=0.005):
    """Torque held at rest at the start and end of each raw run minus the model at rest.

    Returns a list of (file, 'start'|'end', hold (n,) [N m], sign of each joint's last motion
    (n,) or None at the start). Raw CSV rows (no trimming, no filter): rest = all joints below
    ``move_velocity`` [rad/s] before the first / after the last motion (20 samples margin).
    """
    from robot_identification.data import read_csv
    from robot_identification.identification import predict_torque
    out = []
    for path in paths:
        d = read_csv(path, model=model, trim_idle=False, resample=False)
        moving = np.abs(d.dq).max(axis=1) > move_velocity
        first, last = np.argmax(moving), len(moving) - 1 - np.argmax(moving[::-1])
        spans = (("start", slice(0, max(first - 20, 1))), ("end", slice(last + 20, None)))
        for label, rows in spans:
            q = d.q[rows].mean(axis=0)[None]
            zero = np.zeros_like(q)
            at_rest = predict_torque(model, result.base, result.estimate.values,
                                     {"q": q, "dq": zero, "ddq": zero})[0]
            sign = None
            if label == "end":
                sign = np.array([np.sign(d.dq[np.nonzero(np.abs(d.dq[:last + 1, j])
                                                          > sign_velocity)[0][-1], j])
                                 for j in range(model.n)])
            out.append((Path(path).name, label, d.tau[rows].mean(axis=0) - at_rest, sign))
    return out


def more_runs(folder):
    """The unloaded runs of the authors' dataset folder beyond the shared ones, by motion type.

    Returns {motion type: [path, ...]} (types in a fixed order, files sorted)."""
    root = Path(folder)
    groups = {"static holds": [], "point-to-point": [], "one joint at a time": [],
              "other Fourier runs": []}
    for f in sorted(root.glob("*/*.csv"), key=lambda f: (f.parent.name, f.name)):
        name, part = f.name, f.parent.name
        if name in IDENT or re.search(r"(?<!un)load", name.lower()) or part == "collision":
            continue                        # identification data, payload, external force
        if "ptp" in name:
            groups["point-to-point"].append(f)
        elif re.search(r"-p\d+\.csv$", name):
            groups["static holds"].append(f)
        elif part == "jointwise_motion":
            groups["one joint at a time"].append(f)
        elif part == "identification_data":
            groups["other Fourier runs"].append(f)
    return groups


def compare(ours, ref):
    """'<x> % lower' or '<x> % higher' (ours against ref)."""
    x = 100 * (1 - ours / ref)
    return f"{abs(x):.0f} % {'lower' if x >= 0 else 'higher'}"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", type=Path, help="the authors' dataset_ur10e folder: also "
                   "validate on all its other unloaded runs, grouped by motion type")
    args = p.parse_args(argv)
    if args.dataset is not None and not any(args.dataset.glob("*/*.csv")):
        p.error(f"--dataset {str(args.dataset)!r}: no <folder>/<run>.csv files there (the "
                "dataset_ur10e folder of shamilmamedov/dynamic_calibration)")
    from robot_identification.data import load_dataset
    from robot_identification.errors import DataError
    from robot_identification.identifiability import base_parameters
    from robot_identification.model import RobotModel, load_robot
    from robot_identification.identification import identify
    from robot_identification.identification import settings_from_results
    from robot_identification.validation import validate
    if DATA is None:
        print("shared UR10e data not found; nothing to do")
        return 0
    model = load_robot("ur10e")
    plain_model = RobotModel(sign_friction(model.config), urdf_xml=model.urdf_xml)
    ident = [load_dataset(DATA / "identification" / f, model=model) for f in IDENT]
    valid = [load_dataset(DATA / "validation" / f, model=model) for f in VALID]
    labels = list(VALID)

    static_model = RobotModel(replace(model.config, friction=replace(
        model.config.friction, model="static")), urdf_xml=model.urdf_xml)

    def fit(datasets):
        default = identify(model, datasets, estimators=("wls", "physical"))
        est = default.estimates                                  # config: WLS, auto deadband
        static = identify(static_model, datasets)
        plain_s = replace(model.config.identification, friction_deadband=0.0,
                          drop_reversals=False)
        plain = identify(plain_model, datasets, plain_s, estimator="ols")
        return default, est, static, plain, plain_s

    def evaluate(default, est, static, plain, plain_s, datasets, names):
        s = settings_from_results(model, {"settings": default.settings})   # as validate
        rows = {}
        for key in ("wls", "physical"):
            beta = est[key].values
            files = validate(model, default.base, {key: beta}, datasets, s, labels=names,
                             rest_velocity=0.0)
            rows["default " + key] = mean_nrmse(files, key)
        files = validate(static_model, static.base, {"m": static.estimate.values}, datasets,
                         replace(s, friction_deadband=0.0), labels=names, rest_velocity=0.0)
        rows["static friction"] = mean_nrmse(files, "m")
        amodel, api = authors_model_and_parameters()
        abase = base_parameters(amodel)
        ref_s = replace(plain_s, cutoff_hz=default.settings["cutoff_hz"])
        for own in (False, True):     # their own prediction (sign of the filtered dq); ours
            tail = ", validate's Coulomb column" if own else ""
            files = validate(plain_model, plain.base, {"ols": plain.estimate.values},
                             datasets, ref_s, labels=names, rest_velocity=0.0,
                             filter_coulomb=own)
            rows["plain OLS" + tail] = mean_nrmse(files, "ols")
            files = validate(amodel, abase, {"authors": abase.base_values(api)}, datasets,
                             ref_s, labels=names, rest_velocity=0.0, filter_coulomb=own)
            rows["authors" + tail] = mean_nrmse(files, "authors")
        return rows

    def show(title, rows):
        cols = list(next(iter(rows.values())))
        print(title)
        print(f"  {'model':<40}" + "".join(f"{c[:28]:>30}" for c in cols))
        for name, r in rows.items():
            print(f"  {name:<40}" + "".join(f"{r[c]:>30.4f}" for c in cols))

    fitted = fit(ident)
    d = fitted[0]
    print(f"identified on {', '.join(IDENT)}: cut-off {d.settings['cutoff_hz']} Hz, deadband "
          f"{np.round(d.settings['friction_deadband'], 5).tolist()} rad/s")
    show("held-out runs, mean NRMSE over joints", evaluate(*fitted, valid, labels))
    holds = rest_holds(model, d, [DATA / "identification" / f for f in IDENT])
    print("torque held at rest minus the default model at rest [N m] (identification runs, "
          "same pose at start and end)")
    agree = total = 0
    for name, label, hold, sign in holds:
        extra = ""
        if sign is not None:
            agree += int(np.sum(np.sign(hold) == sign))
            total += len(sign)
            extra = "  last motion " + " ".join(f"{x:+.0f}" for x in sign)
        print(f"  {name[:28]:<28} {label:<5} " + " ".join(f"{h:7.2f}" for h in hold) + extra)
    print(f"  sign of the end hold = sign of the last motion: {agree} of {total} joints")
    for i in range(len(ident)):
        train = [ident[j] for j in range(len(ident)) if j != i]
        show(f"leave-one-recording-out: fit on {IDENT[1 - i]}, predict",
             evaluate(*fit(train), [ident[i]], [IDENT[i]]))
    if args.dataset is not None:
        summary = {}
        for kind, paths in more_runs(args.dataset).items():
            sets, names = [], []
            for f in paths:
                try:
                    sets.append(load_dataset(f, model=model))
                    names.append(f.name)
                except DataError as e:
                    print(f"skipped {f.name}: {str(e)[:120]}")
            if not sets:
                continue
            rows = evaluate(*fitted, sets, names)
            print(f"{kind} ({len(sets)} runs of {args.dataset.name}), mean NRMSE over "
                  f"joints; columns: {', '.join(rows)}")
            for n in names:
                print(f"  {n:<34}" + "".join(f"{r[n]:>9.4f}" for r in rows.values()))
            summary[kind] = {name: float(np.mean(list(r.values()))) for name, r in rows.items()}
            summary[kind]["runs"] = len(sets)
        print("mean over the runs of each motion type (default physical vs the better of "
              "plain OLS and the authors, each predicted as a plain script does / as our "
              "validate does)")
        for kind, m in summary.items():
            ours = m["default physical"]
            ref = min(m["plain OLS"], m["authors"])
            ols_v = m["plain OLS, validate's Coulomb column"]
            authors_v = m["authors, validate's Coulomb column"]
            ref_v = min(ols_v, authors_v)
            print(f"  {kind:<22} {m['runs']:>2} runs  default physical {ours:.4f}  "
                  f"plain OLS {m['plain OLS']:.4f}  authors {m['authors']:.4f}  "
                  f"(default {compare(ours, ref)})  validate's Coulomb "
                  f"column: OLS {ols_v:.4f}  authors {authors_v:.4f}  "
                  f"(default {compare(ours, ref_v)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
