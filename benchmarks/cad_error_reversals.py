"""The reversal and swap checks on correct data of arms that differ from their URDF (issue #27).

For each arm and each of N CAD-error draws (:func:`robot_identification.model.cad_error_urdf`:
masses x exp(0.2 N(0,1)), centres of mass + 2 cm N(0,1) per axis, principal inertias
x exp(0.3 N(0,1)); draw ``seed``), the drawn arm is simulated (our simulator, the config's
excitation trajectory, simulation seed = draw) and checked against the nominal URDF with the
per-recording check (``recording_summary``):

- correct data: count the draws with an error-severity ``torque_sign`` or ``joints_swapped``
  finding (target 0);
- each joint reversed in turn (its q, dq, ddq and torque negated): ``named`` when every
  error-severity finding is a ``torque_sign`` naming that joint alone, ``tied`` when it names
  it among readings the data explain equally ("joint2 or joint3"), ``wrong`` when an error
  names anything else (another joint, a swap), ``undetermined`` when there is no error and the
  note ``direction_undetermined`` names the joint (the data cannot tell its direction: an
  honest answer), ``missed`` when neither. ``observable``: the reversal changes the URDF's
  torques by >= 8 x the URDF's own error on that motion on some joint (max_j effect_j /
  (cad_j + 0.05), both as std over the joint's measured torque std);
- one pair of adjacent joints swapped per draw (q, dq, ddq and torque columns; the pair
  cycles with the draw): ``named`` / ``tied`` / ``wrong`` / ``missed`` as above with
  ``joints_swapped`` naming the pair.

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
NOTES = ("direction_undetermined",)


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
            if d.code in CODES + NOTES]


def verdict(found, joint):
    """named: every error is a ``torque_sign`` naming that joint alone; tied: naming it among
    other readings the data explain equally; wrong: an error naming anything else;
    undetermined: no error, a ``direction_undetermined`` note names the joint; missed: none."""
    errors = [(c, s) for c, s, sev in found if sev == "error"]
    if not errors:
        if any(c in NOTES and joint in s.split(", ") for c, s, _ in found):
            return "undetermined"
        return "missed"
    if all(c == "torque_sign" and s == joint for c, s in errors):
        return "named"
    if all(c == "torque_sign" and joint in s.split(" or ") for c, s in errors):
        return "tied"
    return "wrong"


def swap_verdict(found, a, b):
    """named: every error is a ``joints_swapped`` naming that pair (alone: named, among
    others: tied); wrong: an error naming anything else; missed: no error."""
    errors = [(c, s) for c, s, sev in found if sev == "error"]
    if not errors:
        return "missed"
    pair = f"{a} and {b}"
    if all(c == "joints_swapped" and s == pair for c, s in errors):
        return "named"
    if all(c == "joints_swapped" and pair in s.split(" or ") for c, s in errors):
        return "tied"
    return "wrong"


def swapped(ds, k, m):
    p = np.arange(ds.q.shape[1])
    p[[k, m]] = p[[m, k]]
    return replace(ds, **{a: getattr(ds, a)[:, p] for a in ("q", "dq", "ddq", "tau")
                          if getattr(ds, a) is not None})


def study(arm, draws, tmp, log=print):
    from robot_identification.model import cad_error_urdf, load_robot
    from robot_identification.simulation import simulate
    nominal = load_robot(**ARMS[arm])
    clean_errors, counts, wrong, swaps = 0, {}, [], {}
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
                wrong.append((draw, f"{joint} reversed", found))
            row.append(f"{v[0]}{'*' if obs else ''}")
        # a swapped pair: adjacent joints, the pair cycling with the draw
        a = draw % (nominal.n - 1)
        names = nominal.joint_names
        found = findings(nominal, swapped(ds, a, a + 1))
        sv = swap_verdict(found, names[a], names[a + 1])
        swaps[sv] = swaps.get(sv, 0) + 1
        if sv == "wrong":
            wrong.append((draw, f"{names[a]}/{names[a + 1]} swapped", found))
        log(f"  {arm} draw {draw:2d}: correct data {errs or 'no error'}; reversed "
            f"{' '.join(row)}; {names[a]}/{names[a + 1]} swapped: {sv}")
        sys.stdout.flush()
    return nominal, clean_errors, counts, wrong, swaps


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--draws", type=int, default=20)
    p.add_argument("--arms", default=",".join(ARMS))
    args = p.parse_args(argv)
    tmp = tempfile.mkdtemp()
    summary = []
    for arm in args.arms.split(","):
        summary.append((arm, *study(arm, args.draws, tmp)))
    print(f"{args.draws} CAD-error draws per arm. Reversal verdicts over draws x joints (n "
          f"named alone, t named among readings the data explain equally, w wrong, u no "
          f"error and the note 'direction cannot be determined', m missed: no error, no "
          f"note; * observable: >= {OBSERVABLE:g}x the CAD error in the URDF's torque)")
    kinds = ("named", "tied", "wrong", "undetermined", "missed")
    print("| arm | correct data: error torque_sign/joints_swapped | reversed: "
          + " | ".join(kinds) + " | observable ones named (alone or tied) | swapped pair: "
          + " / ".join(kinds[:3] + kinds[4:]) + " |")
    print("|---" * 9 + "|")
    for arm, nominal, clean, counts, wrong, swaps in summary:
        tot = {k: sum(v for (o, kd), v in counts.items() if kd == k) for k in kinds}
        obs = sum(v for (o, _), v in counts.items() if o)
        named_obs = counts.get((True, "named"), 0) + counts.get((True, "tied"), 0)
        total = sum(counts.values())
        print(f"| {arm} ({nominal.n} joints) | {clean} / {args.draws} | "
              + " | ".join(f"{tot[k]}" for k in kinds)
              + f" (of {total}) | {named_obs} / {obs} | "
              + " / ".join(str(swaps.get(k, 0)) for k in kinds[:3] + kinds[4:]) + " |")
    for arm, nominal, clean, counts, wrong, swaps in summary:
        for draw, what, found in wrong:
            print(f"    {arm} wrong: draw {draw} {what} -> {found}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
