"""The reversal and swap checks on correct data of arms that differ from their URDF (issue #27).

For each arm and each of N CAD-error draws (:func:`robot_identification.model.cad_error_urdf`:
masses x exp(0.2 N(0,1)), centres of mass + 2 cm N(0,1) per axis, principal inertias
x exp(0.3 N(0,1)); draw ``seed``), the drawn arm is simulated (our simulator, the config's
excitation trajectory, simulation seed = draw) and checked against the nominal URDF with the
per-recording check (``recording_summary``):

- correct data: count the draws with an error-severity ``torque_sign`` or ``joints_swapped``
  finding (target 0);
- each joint reversed in turn (its q, dq, ddq and torque negated): ``named`` when every
  error-severity finding is ``torque_sign`` and names a reading with that joint, ``wrong`` when
  an error names anything else (another joint, a swap), ``missed`` when no error (a note or
  nothing). ``observable``: the reversal changes the URDF's torques by >= 8 x the URDF's own
  error on that motion on some joint (max_j effect_j / (cad_j + 0.05), both as std over the
  joint's measured torque std), as in test/test_reversal_property.py.

    PYTHONPATH=$PWD OPENBLAS_NUM_THREADS=1 python benchmarks/cad_error_reversals.py \\
        [--draws 20] [--arms ur10e,puma560,arm7]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
ARMS = {"ur10e": {"name": "ur10e"}, "puma560": {"name": "puma560"},
        "arm7": {"config": REPO / "test" / "arm7.yaml"}}
OBSERVABLE = 8.0
CODES = ("torque_sign", "joints_swapped")


def rigid_torque(model, q, dq, ddq):
    """The URDF's rigid-body torque (inertials and rotor inertias, no friction)."""
    from robot_identification.regressor import rigid_regressor
    pi = np.nan_to_num(model.nominal_parameters())
    keep = np.array([k in ("inertial", "rotor_inertia") for k in model.layout.kinds])
    return rigid_regressor(model, q, dq, ddq)[..., keep] @ pi[keep]


def reversed_joint(ds, k):
    s = np.ones(ds.q.shape[1])
    s[k] = -1.0
    return replace(ds, **{a: getattr(ds, a) * s for a in ("q", "dq", "ddq", "tau")
                          if getattr(ds, a) is not None})


def observability(nominal, true, ds, k):
    """max over joints of effect_j / (cad_j + 0.05): how far reversing joint k moves the
    URDF's torques (effect) against the URDF's own error on that motion (cad), both as std
    over the joint's measured torque std, on every 10th sample."""
    q, dq, ddq, sub = ds.q[::10], ds.dq[::10], ds.ddq[::10], ds.tau[::10]
    scale = np.std(sub, axis=0)
    tau0 = rigid_torque(nominal, q, dq, ddq)
    cad = np.std(rigid_torque(true, q, dq, ddq) - tau0, axis=0) / scale
    s = np.ones(nominal.n)
    s[k] = -1.0
    effect = np.std(s * tau0 - rigid_torque(nominal, q * s, dq * s, ddq * s), axis=0) / scale
    return float(np.max(effect / (cad + 0.05)))


def findings(model, ds):
    from robot_identification.diagnostics import recording_summary
    return [(d.code, d.subject, d.severity) for d in recording_summary(model, ds)["diagnostics"]
            if d.code in CODES]


def verdict(found, joint):
    errors = [(c, s) for c, s, sev in found if sev == "error"]
    if not errors:
        return "missed"
    if all(c == "torque_sign" and joint in s.split(" or ") for c, s in errors):
        return "named"
    return "wrong"


def study(arm, draws, tmp, log=print):
    from robot_identification.model import cad_error_urdf, load_robot
    from robot_identification.simulation import simulate
    nominal = load_robot(**ARMS[arm])
    clean_errors, counts, wrong = 0, {}, []
    for draw in range(draws):
        path = Path(tmp) / f"{arm}_{draw}.urdf"
        path.write_text(cad_error_urdf(nominal.urdf_xml, np.random.default_rng(draw)))
        true = load_robot(**ARMS[arm], urdf=path)
        ds = simulate(true, seed=draw, derivatives=True)
        errs = [f for f in findings(nominal, ds) if f[2] == "error"]
        clean_errors += bool(errs)
        row = []
        for k, joint in enumerate(nominal.joint_names):
            obs = observability(nominal, true, ds, k) >= OBSERVABLE
            found = findings(nominal, reversed_joint(ds, k))
            v = verdict(found, joint)
            counts[(obs, v)] = counts.get((obs, v), 0) + 1
            if v == "wrong":
                wrong.append((draw, joint, found))
            row.append(f"{v[0]}{'*' if obs else ''}")
        log(f"  {arm} draw {draw:2d}: correct data {errs or 'no error'}; reversed "
            f"{' '.join(row)}")
        sys.stdout.flush()
    return nominal, clean_errors, counts, wrong


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--draws", type=int, default=20)
    p.add_argument("--arms", default=",".join(ARMS))
    args = p.parse_args(argv)
    tmp = tempfile.mkdtemp()
    summary = []
    for arm in args.arms.split(","):
        nominal, clean, counts, wrong = study(arm, args.draws, tmp)
        summary.append((arm, nominal, clean, counts, wrong))
    print(f"{args.draws} CAD-error draws per arm; reversal verdicts over draws x joints "
          f"(n = named, w = wrong, m = missed; * observable >= {OBSERVABLE:g}x the CAD error)")
    for arm, nominal, clean, counts, wrong in summary:
        obs = sum(v for (o, _), v in counts.items() if o)
        named_obs = counts.get((True, "named"), 0)
        total = sum(counts.values())
        named = named_obs + counts.get((False, "named"), 0)
        n_wrong = counts.get((True, "wrong"), 0) + counts.get((False, "wrong"), 0)
        print(f"{arm} ({nominal.n} joints): correct data with an error-severity "
              f"torque_sign/joints_swapped: {clean}/{args.draws}; reversed joint named "
              f"{named}/{total} ({100 * named / total:.0f} %), of the observable ones "
              f"{named_obs}/{obs} ({100 * named_obs / max(obs, 1):.0f} %); wrongly named "
              f"{n_wrong}; missed (no error) {total - named - n_wrong}")
        for draw, joint, found in wrong:
            print(f"    wrong: draw {draw} {joint} reversed -> {found}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
