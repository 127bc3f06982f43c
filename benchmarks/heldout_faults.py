"""Fault diagnostics and error exits on arms the project was not tuned on (issue #27, items 4-5).

The referee's view: each URDF given (public arms the project does not ship, e.g. Franka Panda,
Kinova Jaco2, Unitree Z1 of example-robot-data) is set up as a user would, through the
command line run in this process (``robot_identification.cli.main``):

- ``init --urdf ARM.urdf`` writes the starter config (its identification defaults unchanged);
- per CAD-error draw k (:func:`robot_identification.model.cad_error_urdf`, rng seed k: masses
  x exp(0.2 N(0,1)), centres of mass + 2 cm N(0,1) per axis, principal inertias
  x exp(0.3 N(0,1))): ``simulate --urdf DRAWN.urdf --engine mujoco --seed k`` (the independent
  physics: the drawn arm is the true one, the config's excitation, friction and encoders), then
  ``identify --config ARM.yaml`` (the nominal URDF: the arm differs from its URDF like a real
  one) on:

  * the data as simulated (correct): counted are the draws where ``identify`` exits non-zero
    and those with an error-severity ``torque_sign`` / ``joints_swapped`` finding (target 0);
  * each joint's torque sign flipped (its torque column negated) and each joint's direction
    reversed (its position and torque negated), one joint at a time: ``named`` when ``identify``
    exits 3 and every error-severity finding is a ``torque_sign`` naming that joint alone,
    ``tied`` naming it among readings the data explain equally ("j2 or j3"), ``wrong`` when an
    error names anything else, ``undetermined`` when there is no error and the note
    ``direction_undetermined`` names the joint, ``missed`` when neither (target: every one
    named);
- on draw 0, positions in degrees, the torque columns of joints 2 and 3 swapped and joint 2
  reversed: ``identify`` must exit 3 with the cause on its last line and write nothing, and
  with ``--force`` write the file with ``status: error``; ``validate`` of the correct draw-0
  result on a held-out run (another excitation seed) must exit 0;
- bad inputs (each must exit 2 with one line naming the file, no traceback): a CSV with a
  joint's column missing, a NaN torque, a time column that goes back; the URDF with a
  continuous joint without limits, a mimic joint, a tail of fixed joints (``init``, then
  ``simulate`` + ``identify``: accepted and exit 0, or refused with one line).

    PYTHONPATH=$PWD OPENBLAS_NUM_THREADS=1 python benchmarks/heldout_faults.py \\
        [--draws 20] [--engine mujoco] [--snr DB] [--torque-noise FRACTION] ARM.urdf ...

Without URDF arguments the panda, kinova and z1 URDFs of the ``example-robot-data`` wheel are
used where it is installed (``pip install example-robot-data``; a study dependency only).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cad_error_reversals import verdict  # noqa: E402  (the same verdicts as the shipped arms)

ERD_ARMS = ("panda_description/urdf/panda.urdf", "kinova_description/robots/kinova.urdf",
            "z1_description/urdf/z1.urdf")
CODES = ("torque_sign", "joints_swapped")
NOTES = ("direction_undetermined",)
KINDS = ("named", "tied", "wrong", "undetermined", "missed")


def run_cli(*argv):
    """``robot-identification ARGV`` in this process: (exit code, stderr lines)."""
    from robot_identification import cli
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            rc = cli.main([str(a) for a in argv])
        except SystemExit as e:         # argparse
            rc = e.code
        except Exception as e:          # a traceback: a bug (counted)
            import traceback
            return -1, [f"TRACEBACK {type(e).__name__}: {e}",
                        *traceback.format_exc().splitlines()[-4:]]
    if rc in (130, 143):                # the CLI's Ctrl-C / SIGTERM: end the study too
        raise SystemExit(rc)
    return rc, err.getvalue().strip().splitlines()


def identify(cfg, data, out, *extra):
    """identify with --force: (exit code, stderr lines, [(code, subject, severity)])."""
    rc, err = run_cli("identify", "--config", cfg, "--data", data, "--output", out,
                      "--quiet", "--force", *extra)
    found = []
    if Path(out).exists():
        found = [(d["code"], d.get("subject") or "", d["severity"], d["message"])
                 for d in yaml.safe_load(Path(out).read_text()).get("diagnostics") or []]
        Path(out).unlink()
    return rc, err, found


def load_npz(path):
    with np.load(path, allow_pickle=True) as d:
        return {k: d[k] for k in d.files}


def save_npz(path, d):
    np.savez(path, **{k: np.ascontiguousarray(v) if v.ndim else v for k, v in d.items()})
    return path


def modified(d, q_sign=None, tau_sign=None, tau_perm=None, q_scale=1.0):
    d = dict(d)
    for key, s in (("q", q_sign), ("dq", q_sign), ("ddq", q_sign), ("tau", tau_sign)):
        if s is not None and key in d:
            d[key] = d[key] * s
    if q_scale != 1.0:
        for key in ("q", "dq", "ddq"):
            if key in d:
                d[key] = d[key] * q_scale
    if tau_perm is not None:
        d["tau"] = d["tau"][:, tau_perm]
    return d


def arm_study(urdf, draws, engine, tmp, snr=None, torque_noise=0.0, log=print):
    from robot_identification.model import RobotModel, cad_error_urdf, load_robot_config
    tmp = Path(tmp) / Path(urdf).stem
    tmp.mkdir()
    cfg = tmp / f"{Path(urdf).stem}.yaml"
    rc, err = run_cli("init", "--urdf", urdf, "--output", cfg, "--quiet")
    if rc != 0:
        log(f"  {urdf}: init failed: {err[-1:]}")
        return None
    model = RobotModel(load_robot_config(cfg))
    names, n = model.joint_names, model.n
    arm = model.config.name
    res = {"arm": arm, "n": n, "rc_correct": 0, "err_correct": 0, "flip": {}, "rev": {},
           "bad": [], "stops": [], "tracebacks": []}
    nominal_xml = Path(urdf).read_text()
    for draw in range(draws):
        drawn = tmp / f"{arm}_{draw}.urdf"
        drawn.write_text(cad_error_urdf(nominal_xml, np.random.default_rng(draw)))
        data = tmp / f"{arm}_{draw}.npz"
        rc, err = run_cli("simulate", "--config", cfg, "--urdf", drawn, "--engine", engine,
                          "--seed", draw, "--output", data, "--quiet", "--force",
                          *(("--snr", snr) if snr else ()))
        if rc != 0:
            log(f"  {arm} draw {draw}: simulate exit {rc}: {err[-1:]}")
            res["tracebacks"] += [(draw, "simulate", err)] if rc == -1 else []
            continue
        base = load_npz(data)
        if torque_noise:
            # white torque noise, std = torque_noise x each joint's torque std (a sensor's)
            rng = np.random.default_rng(1000 + draw)
            base["tau"] = base["tau"] + torque_noise * np.std(base["tau"], axis=0) \
                * rng.standard_normal(base["tau"].shape)
            save_npz(data, base)
        out = tmp / f"{arm}_{draw}.yaml"
        rc, err, found = identify(cfg, data, out)
        errs = [f[:3] for f in found if f[2] == "error"]
        res["rc_correct"] += rc != 0
        rc0 = rc
        res["err_correct"] += any(c in CODES for c, _, _ in errs)
        row = {"flip": [], "rev": []}
        for k, joint in enumerate(names):
            s = np.ones(n)
            s[k] = -1.0
            for kind, mod in (("flip", modified(base, tau_sign=s)),
                              ("rev", modified(base, q_sign=s, tau_sign=s))):
                f = save_npz(tmp / f"{arm}_{draw}_{kind}{k}.npz", mod)
                rc, err, found = identify(cfg, f, out)
                mine = [f for f in found if f[0] in CODES + NOTES]
                v = verdict([f[:3] for f in mine], joint) if rc in (0, 3) else "missed"
                if v == "named" and kind == "flip":
                    # the reading: a flipped torque named as a reversed direction is half right
                    reading = [f[3] for f in mine if f[2] == "error"]
                    if not all("torque sign reversed" in m for m in reading):
                        res["flip_as_reversal"] = res.get("flip_as_reversal", 0) + 1
                if rc == -1:
                    res["tracebacks"].append((draw, f"{kind} {joint}", err))
                if v in ("named", "tied") and rc != 3:
                    v = "missed"      # named but the run did not stop
                res[kind][v] = res[kind].get(v, 0) + 1
                if v not in ("named", "tied"):
                    log(f"    {arm} draw {draw} {kind} {joint}: {v} (exit {rc}) "
                        f"{[x[:3] for x in mine]} {[x[3][:300] for x in mine if x[2] == 'error']}")
                row[kind].append(v[0])
                f.unlink()
        log(f"  {arm} draw {draw:2d}: correct data exit {rc0} "
            f"{errs or 'no error'}; sign flipped {''.join(row['flip'])}; "
            f"reversed {''.join(row['rev'])}")
        sys.stdout.flush()
        if draw == 0:
            res["stops"] = stop_checks(cfg, base, data, names, tmp, log)
            res["validate"] = validate_check(cfg, out, tmp, engine, log)
            res["bad"] = bad_inputs(cfg, urdf, base, tmp, engine, log)
    return res


def stop_checks(cfg, base, data, names, tmp, log):
    """Degrees, torque columns of joints 2 and 3 swapped, joint 2 reversed: exit 3, the cause on
    the last line, nothing written; --force writes status: error."""
    n = len(names)
    s = np.ones(n)
    s[1] = -1.0
    p = np.arange(n)
    p[[1, 2]] = [2, 1]
    cases = (("degrees", modified(base, q_scale=180.0 / np.pi)),
             ("torque columns 2/3 swapped", modified(base, tau_perm=p)),
             (f"{names[1]} reversed", modified(base, q_sign=s, tau_sign=s)))
    rows = []
    for what, d in cases:
        f = save_npz(Path(tmp) / "stop.npz", d)
        out = Path(tmp) / "stop.yaml"
        rc, err = run_cli("identify", "--config", cfg, "--data", f, "--output", out, "--quiet")
        written = out.exists()
        last = err[-1] if err else ""
        rc2, err2 = run_cli("identify", "--config", cfg, "--data", f, "--output", out,
                            "--quiet", "--force")
        status = yaml.safe_load(out.read_text()).get("status") if out.exists() else None
        ok = (rc == 3 and not written and last.startswith("robot-identification identify: error:")
              and rc2 == 3 and status == "error")
        rows.append((what, ok, rc, last))
        log(f"    stop {'ok ' if ok else 'FAIL'} {what}: exit {rc}, written {written}, "
            f"--force: exit {rc2} status {status}; {last[:200]}")
        if out.exists():
            out.unlink()
    return rows


def validate_check(cfg, result, tmp, engine, log):
    """validate the correct draw-0 result on a held-out run of the nominal arm (excitation
    seed 2 instead of the config's): exit 0."""
    tmp = Path(tmp)
    c = yaml.safe_load(Path(cfg).read_text())
    c["simulation"]["excitation"]["seed"] = 2
    c["urdf"] = str((Path(cfg).parent / c["urdf"]).resolve())
    held_cfg = tmp / "heldout.yaml"
    held_cfg.write_text(yaml.safe_dump(c, sort_keys=False))
    held = tmp / "heldout.npz"
    rc, err = run_cli("simulate", "--config", held_cfg, "--engine", engine, "--seed", 99,
                      "--output", held, "--quiet", "--force")
    rc1, err1 = run_cli("identify", "--config", cfg, "--data", tmp / f"{c['name']}_0.npz",
                        "--output", result, "--quiet", "--force")
    v = tmp / "validation.yaml"
    rc2, err2 = run_cli("validate", "--config", cfg, "--results", result, "--data", held,
                        "--output", v, "--quiet", "--force")
    log(f"    validate: simulate {rc}, identify {rc1}, validate exit {rc2} "
        f"{(err2 or [''])[-1][:200]}")
    return rc2


def bad_inputs(cfg, urdf, base, tmp, engine, log):
    """Each bad input: (what, ok, exit code, last stderr line). ok: exit 2 with one line
    naming the file, or (URDF variants) accepted end to end with exit 0."""
    tmp = Path(tmp)
    c = yaml.safe_load(Path(cfg).read_text())
    n = base["q"].shape[1]
    t = base["t"]
    rows = []
    full = np.column_stack([t, base["q"], np.gradient(base["q"], t, axis=0), base["tau"]])
    lay = c["csv"]

    def csv_case(what, arr):
        f = tmp / f"bad_{len(rows)}.csv"
        np.savetxt(f, arr, delimiter=",", fmt="%.10g")
        rc, err = run_cli("identify", "--config", cfg, "--data", f, "--output",
                          tmp / f"bad_{len(rows)}.yaml", "--quiet")
        last = err[-1] if err else ""
        # refused in one line naming the file, or (a malformed row) dropped with a warning
        # naming the file and the line (docs/errors.md: CSV)
        ok = (rc == 2 and len(err) == 1 and f.name in last) or (
            rc == 0 and any(f.name in e and "line" in e for e in err if "warning" in e))
        last = next((e for e in err if f.name in e), last)
        rows.append((what, ok, rc, last))
    # the starter's csv layout: time, q (n), dq (n), tau (n)
    assert lay["position"] == 2 and lay["torque"] == 2 + 2 * n, lay
    csv_case("CSV: a joint's torque column missing", full[:, :-1])
    a = full.copy()
    a[len(a) // 2, 1 + 2 * n + 1] = np.nan
    csv_case("CSV: a NaN torque", a)
    a = full.copy()
    a[len(a) // 2, 0] = a[len(a) // 2 - 50, 0]
    csv_case("CSV: time goes back", a)
    variants = [(w, x, ()) for w, x in urdf_variants(Path(urdf).read_text())]
    variants.append(("init --joints: all but the first joint (locked)", Path(urdf).read_text(),
                     ("--joints", *[j["name"] for j in c["joints"][1:]])))
    for what, xml, extra in variants:
        f = tmp / f"variant_{len(rows)}.urdf"
        f.write_text(xml)
        vcfg = tmp / f"variant_{len(rows)}.yaml"
        rc, err = run_cli("init", "--urdf", f, "--output", vcfg, "--quiet", *extra)
        steps = [("init", rc, err)]
        if rc == 0:
            d = tmp / f"variant_{len(rows)}.npz"
            steps.append(("simulate", *run_cli("simulate", "--config", vcfg, "--output", d,
                                               "--quiet", "--engine", engine, "--force")))
            if steps[-1][1] == 0:
                steps.append(("identify", *run_cli("identify", "--config", vcfg, "--data", d,
                                                   "--output", tmp / "v.yaml", "--quiet",
                                                   "--force", "--no-physical")))
        step, rc, err = steps[-1]
        last = err[-1] if err else ""
        ok = rc in (0, 3) if rc != 2 else (f.name in last)
        rows.append((f"{what} ({step})", ok and rc != -1, rc, last))
    for what, ok, rc, last in rows:
        log(f"    bad input {'ok ' if ok else 'FAIL'} {what}: exit {rc}: {last[:220]}")
    return rows


def urdf_variants(xml):
    """The arm's URDF with (a) its first revolute joint made continuous without <limit>,
    (b) a two-finger gripper at the tip (prismatic fingers, the second a <mimic> of the
    first), (c) a
    tail of three fixed joints with massless and massive links at the tip."""
    import xml.etree.ElementTree as ET
    root = ET.fromstring(xml)
    joints = root.findall("joint")
    movable = [j for j in joints if j.get("type") in ("revolute", "continuous")]
    children = {j.find("parent").get("link") for j in joints}
    tips = [j.find("child").get("link") for j in joints
            if j.find("child").get("link") not in children]
    tip = tips[0]
    out = []
    r = ET.fromstring(xml)
    j = [j for j in r.findall("joint") if j.get("name") == movable[0].get("name")][0]
    j.set("type", "continuous")
    lim = j.find("limit")
    if lim is not None:
        j.remove(lim)
    out.append(("URDF: first joint continuous without <limit>", ET.tostring(r, "unicode")))
    r = ET.fromstring(xml)
    for i, sign in ((1, "1"), (2, "-1")):      # a two-finger gripper, finger 2 mimics 1
        ET.SubElement(r, "link", name=f"finger_link{i}").append(_inertial(0.05))
        m = ET.SubElement(r, "joint", name=f"finger_joint{i}", type="prismatic")
        ET.SubElement(m, "parent", link=tip)
        ET.SubElement(m, "child", link=f"finger_link{i}")
        ET.SubElement(m, "origin", xyz="0 0 0.05", rpy="0 0 0")
        ET.SubElement(m, "axis", xyz=f"0 {sign} 0")
        ET.SubElement(m, "limit", lower="0", upper="0.04", effort="20", velocity="0.2")
        if i == 2:
            ET.SubElement(m, "mimic", joint="finger_joint1", multiplier="1", offset="0")
    out.append(("URDF: a gripper at the tip, one finger a <mimic>", ET.tostring(r, "unicode")))
    r = ET.fromstring(xml)
    parent = tip
    for i, mass in enumerate((0.0, 0.3, 0.0)):
        link = ET.SubElement(r, "link", name=f"tail_{i}")
        if mass:
            link.append(_inertial(mass))
        fj = ET.SubElement(r, "joint", name=f"tail_fixed_{i}", type="fixed")
        ET.SubElement(fj, "parent", link=parent)
        ET.SubElement(fj, "child", link=f"tail_{i}")
        ET.SubElement(fj, "origin", xyz="0 0 0.03", rpy="0 0 0")
        parent = f"tail_{i}"
    out.append(("URDF: a tail of fixed joints", ET.tostring(r, "unicode")))
    return out


def _inertial(mass):
    import xml.etree.ElementTree as ET
    i = ET.Element("inertial")
    ET.SubElement(i, "origin", xyz="0 0 0.02", rpy="0 0 0")
    ET.SubElement(i, "mass", value=str(mass))
    ET.SubElement(i, "inertia", ixx="1e-4", ixy="0", ixz="0", iyy="1e-4", iyz="0", izz="1e-4")
    return i


def default_urdfs():
    try:
        import cmeel
        prefix = Path(cmeel.__file__).resolve().parents[0]
    except ImportError:
        prefix = None
    roots = [Path(sys.prefix) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"]
    roots += [p / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
              for p in map(Path, sys.path) if p.is_dir()]
    if prefix is not None:
        roots.append(prefix / "share" / "example-robot-data" / "robots")
    for root in roots:
        if all((root / a).is_file() for a in ERD_ARMS):
            return [str(root / a) for a in ERD_ARMS]
    raise SystemExit("example-robot-data not found: pip install example-robot-data, or give "
                     "the URDF paths")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("urdf", nargs="*", help="URDF files of arms (default: panda, kinova, z1 "
                   "of example-robot-data)")
    p.add_argument("--draws", type=int, default=20)
    p.add_argument("--engine", default="mujoco", choices=("mujoco", "builtin"))
    p.add_argument("--snr", type=float, default=None,
                   help="simulate --snr: noise on the positions [dB] (default none)")
    p.add_argument("--torque-noise", type=float, default=0.0,
                   help="white noise added to each joint's torque, as a fraction of its std "
                        "(default 0)")
    args = p.parse_args(argv)
    urdfs = args.urdf or default_urdfs()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for urdf in urdfs:
            r = arm_study(urdf, args.draws, args.engine, tmp, args.snr, args.torque_noise)
            if r is not None:
                results.append(r)
    print(f"\n{args.draws} CAD-error draws per arm, simulated with --engine {args.engine} "
          f"(--snr {args.snr}, torque noise {args.torque_noise:g} x std), identified with "
          f"the starter config (nominal URDF)")
    print("| arm | correct data: identify exit != 0 / error torque_sign or joints_swapped | "
          "torque sign flipped: " + " / ".join(KINDS) + " | direction reversed: "
          + " / ".join(KINDS) + " | stops (degrees, swapped, reversed) | bad inputs ok |")
    print("|---" * 6 + "|")
    for r in results:
        tot = r["n"] * args.draws
        print(f"| {r['arm']} ({r['n']} joints) | {r['rc_correct']} / {r['err_correct']} of "
              f"{args.draws} | " + " / ".join(str(r["flip"].get(k, 0)) for k in KINDS)
              + f" (of {tot}) | " + " / ".join(str(r["rev"].get(k, 0)) for k in KINDS)
              + f" (of {tot}) | {sum(ok for _, ok, _, _ in r['stops'])} / {len(r['stops'])} | "
              f"{sum(ok for _, ok, _, _ in r['bad'])} / {len(r['bad'])} |")
    for r in results:
        print(f"    {r['arm']}: torque sign flips named as a reversed direction instead: "
              f"{r.get('flip_as_reversal', 0)}")
        for draw, what, err in r["tracebacks"]:
            print(f"    {r['arm']} TRACEBACK draw {draw} {what}: {err}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
