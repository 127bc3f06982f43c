"""The project's identification and rollout validation beside MuJoCo's ``mujoco.sysid``.

Two cases, the same data, windows, metrics and predictors for both methods:

- ``simulated``: a UR10e whose true parameters are known: the shipped URDF's inertials
  perturbed (seeded: masses and inertias x U(0.8, 1.2), centres of mass moved up to 2 cm)
  plus drive parameters of the size identified on the real arm (rotor inertia, viscous,
  Coulomb friction, offsets), simulated with ``simulate --engine mujoco`` (Coulomb friction
  as MuJoCo's frictionloss) under the config's PD loop (gains re-designed for the rotor
  inertia); identification run and held-out run follow two different seeded Fourier
  excitations (20 s each, 1 kHz, quantised encoders).
- ``real``: the real UR10e (the shared data, ../shared/data/ur10e: identification
  ``ur-20_02_19_14harm50sec.csv``, held out ``validation/ur-20_02_10-30sec_12harm.csv``,
  about 100 Hz).

Methods:

- **project**: ``identify --estimator wls --estimator physical`` (CLI defaults otherwise:
  the robot config's filter, linear least squares on the regressor, then the physically
  consistent fit), ``validate --rollout --closed-loop off``.
- **sysid**: ``mujoco.sysid`` on the MuJoCo model of the robot (``build_mujoco``: the same
  model the project's rollout simulates), parameters per body the log-Cholesky
  pseudo-inertia (``InertiaType.Pseudo``, physically consistent by construction: 10 per
  body) and per joint armature, damping, frictionloss and a constant actuator bias (the
  torque offset); the residual is sysid's default (measured minus simulated joint positions
  and velocities, each channel divided by its norm in the window) over open-loop windows of
  the identification recording of the same length as the rollout's (each from the measured
  state, the recorded torques interpolated onto the 1 ms grid; ``--sysid-windows`` of them,
  default 10, evenly spread over the run: each optimiser iteration rolls every window out
  once per parameter, 85 times); optimiser: sysid's default (``mujoco.minimize`` least
  squares, finite-difference Jacobian), ``--max-iters`` (default 15) iterations. Start: the
  shipped URDF's inertials and armature 0.1 kg*m^2, damping 1 N*m*s/rad, frictionloss 1 N*m,
  offset 0.

Reported for each model (the nominal URDF / the truth, the project's physical estimate,
sysid's estimate), computed by the project's functions so that metric and predictor are
the same:

- rollout error on the held-out run (``validation.rollout``: open loop, the recorded
  torques from the measured state in windows of ``--window`` s; mean over joints of the RMS
  position [rad] / velocity [rad/s] error), and on the identification run (the fit);
- one-step torque prediction on the held-out run (``validation.validate``: the base
  model's torque from the filtered measured states, NRMSE mean over joints);
- simulated case: relative errors of the drive parameters against the truth and the
  normalised mean error of the base parameters (as ``identify`` reports it).

mujoco.sysid (mujoco-core 4.0.1) needed one correction, applied here: its
``InertiaType.Pseudo`` modifier (``apply_body_theta_inertia``) writes the full inertia with
``iquat`` NaN, which MuJoCo 4.0.0/4.0.1's compiler refuses for every body ("mass and inertia
of moving bodies must be larger than mjMINVAL"); :func:`set_pseudo_inertia` writes the same
inertial (sysid's ``pi_from_theta``) with an identity ``iquat``.

Needs the ``sysid`` extra (``pip install -c constraints.txt "mujoco-core[sysid]"``); exits 0
with a note without it, and skips the real case without the shared data::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=$PWD python benchmarks/sysid_comparison.py \
        [--case real simulated] [--window 0.5] [--sysid-windows 10] [--max-iters 15] [--out DIR]
"""
import argparse
import os
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

DATA = next((c / "data" / "ur10e" for c in (ROOT.parent / "shared", ROOT.parents[1] / "shared")
             if (c / "data" / "ur10e").is_dir()), ROOT.parent / "shared" / "data" / "ur10e")
REAL_IDENT = "identification/ur-20_02_19_14harm50sec.csv"
REAL_HELD_OUT = "validation/ur-20_02_10-30sec_12harm.csv"
#: Drive parameters of the simulated UR10e (the size of the real arm's estimates,
#: docs/ur10e.md): rotor inertia (link-referred, gear 1) [kg*m^2], viscous [N*m*s/rad],
#: Coulomb [N*m], offset [N*m].
TRUE_DRIVES = {"rotor_inertia": [1.0, 1.0, 1.2, 0.4, 0.5, 0.45],
               "viscous": [15.0, 15.0, 8.0, 3.0, 2.0, 2.5],
               "coulomb": [12.0, 14.0, 5.0, 2.4, 3.0, 2.5],
               "offset": [-0.2, -0.8, 0.1, 0.05, -0.05, 0.02]}
#: sysid's start for the drive parameters (the inertials start at the shipped URDF's).
START = {"armature": 0.1, "damping": 1.0, "frictionloss": 1.0, "offset": 0.0}
BOUNDS = {"armature": (0.0, 10.0), "damping": (0.0, 100.0), "frictionloss": (0.0, 100.0),
          "offset": (-30.0, 30.0)}


# --------------------------------------------------------------------------- the data
def simulated_case(work: Path, seed=7):
    """Write the truth (perturbed URDF, config with drives and gains), simulate the
    identification and held-out runs with the CLI; returns (config path, ident, held-out)."""
    from robot_identification.cli import main
    from robot_identification.excitation import save_trajectory, trajectory_from_config
    from robot_identification.model import RobotModel, load_robot_config
    rng = np.random.default_rng(seed)
    tree = ET.parse(ROOT / "urdf" / "ur10e.urdf")
    for inertial in tree.getroot().iter("inertial"):
        f = rng.uniform(0.8, 1.2)
        mass = inertial.find("mass")
        mass.set("value", repr(float(mass.get("value")) * f))
        origin = inertial.find("origin")
        xyz = np.array([float(v) for v in origin.get("xyz").split()]) + rng.uniform(-0.02, 0.02, 3)
        origin.set("xyz", " ".join(repr(float(v)) for v in xyz))
        inertia = inertial.find("inertia")
        for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"):
            inertia.set(key, repr(float(inertia.get(key)) * f))
    urdf = work / "ur10e_truth.urdf"
    tree.write(urdf)
    cfg = yaml.safe_load((ROOT / "config" / "robots" / "ur10e.yaml").read_text())
    cfg["name"] = "ur10e"
    cfg["urdf"] = str(urdf)
    for k, j in enumerate(cfg["joints"]):
        j["drive"] = {key: float(v[k]) for key, v in TRUE_DRIVES.items()}
    # the config's gains are designed on the link inertia alone; the rotor inertia is up to
    # 100 times the wrists': the same 5 Hz design (damping ratio 0.7) on link + rotor
    w = 2 * np.pi * 5.0
    m_link = np.asarray(cfg["simulation"]["kp"]) / w ** 2
    m = m_link + np.asarray(TRUE_DRIVES["rotor_inertia"])
    cfg["simulation"]["kp"] = (m * w ** 2).round(2).tolist()
    cfg["simulation"]["kd"] = (2 * 0.7 * m * w).round(3).tolist()
    config = work / "ur10e_truth.yaml"
    config.write_text(yaml.safe_dump(cfg, sort_keys=False))
    model = RobotModel(load_robot_config(config))
    runs = []
    for name, s in (("ident", 1), ("held_out", 2)):
        traj = trajectory_from_config(model, {"type": "fourier", "base_frequency": 0.1,
                                              "harmonics": 5, "periods": 2, "seed": s,
                                              "amplitude": 1.0})
        tf = work / f"{name}_trajectory.yaml"
        save_trajectory(traj, tf)
        out = work / f"{name}.npz"
        assert main(["simulate", "--config", str(config), "--engine", "mujoco",
                     "--trajectory", str(tf), "--output", str(out)]) == 0
        runs.append(out)
    return config, runs[0], runs[1]


# --------------------------------------------------------------------------- sysid
def set_pseudo_inertia(spec, body, theta):
    """Write sysid's log-Cholesky inertial ``theta`` (10,) into ``spec.body(body)``: sysid's
    own ``pi_from_theta``, the full inertia about the centre of mass with an identity
    ``iquat`` (sysid's modifier leaves it NaN, which MuJoCo 4.0.x refuses)."""
    from mujoco.sysid import model_modifier as mm
    pi = mm.pi_from_theta(np.asarray(theta, float))
    mass, com = pi[0], pi[1:4] / pi[0]
    inertia = pi[4:].reshape(3, 3) + mass * mm.skew(com) @ mm.skew(com)   # about the com
    b = spec.body(body)
    b.mass, b.ipos = mass, com
    b.inertia[:] = 0.0
    b.iquat[:] = [1.0, 0.0, 0.0, 0.0]
    b.fullinertia[:] = [inertia[0, 0], inertia[1, 1], inertia[2, 2], inertia[0, 1],
                        inertia[0, 2], inertia[1, 2]]


def _set_joint(spec, joint, attr, value):
    setattr(spec.joint(joint), attr, [value, 0.0, 0.0] if attr == "damping" else value)


def _set_offset(spec, actuator, value):
    import mujoco
    a = spec.actuator(actuator)
    a.biastype = mujoco.mjtBias.mjBIAS_AFFINE
    a.biasprm[0] = -value                     # tau_measured = tau_dynamics + offset


def sysid_problem(model, start_standard, datasets, window, n_windows=None):
    """The MjSpec, sysid's ParameterDict and ModelSequences of the recordings cut into
    open-loop windows; windows where a joint's measured velocity is zero throughout are
    left out (sysid's default residual divides each channel by its norm in the window);
    with ``n_windows``, that many windows evenly spread over the recording (every k-th)."""
    from mujoco import sysid
    from robot_identification.simulation import build_mujoco
    arm = build_mujoco(model, start_standard)
    spec = arm.spec
    m0 = spec.compile()
    names = list(model.joint_names)
    obs = ([(f"{n}_qpos", sysid.SignalType.MjStateQPos) for n in names]
           + [(f"{n}_qvel", sysid.SignalType.MjStateQVel) for n in names])
    init, ctrl, sens, dropped = [], [], [], 0
    for ds in datasets:
        t, q, tau = ds.t, ds.q, ds.tau
        dq = ds.dq if ds.dq is not None else np.gradient(q, t, axis=0)
        for t0 in np.arange(t[0], t[-1] - 0.5 * window + 1e-12, window):
            sel = np.flatnonzero((t >= t0) & (t < t0 + window))
            if len(sel) < 2:
                continue
            if np.any(np.linalg.norm(np.hstack([q[sel[1:]], dq[sel[1:]]]), axis=0) == 0):
                dropped += 1
                continue
            i0 = sel[0]
            steps = int(np.ceil((t[sel[-1]] - t[i0]) * 1000.0 - 1e-9))
            grid = np.arange(steps + 1) / 1000.0
            u = np.column_stack([np.interp(grid + t[i0], t, tau[:, k])
                                 for k in range(model.n)])
            ctrl.append(sysid.TimeSeries(grid, u))
            sens.append(sysid.TimeSeries.from_names(
                t[sel[1:]] - t[i0], np.hstack([q[sel[1:]], dq[sel[1:]]]), m0,
                names=[(n, typ) for n, typ in obs]))
            init.append(sysid.create_initial_state(m0, q[i0], dq[i0]))
    if n_windows and len(init) > n_windows:
        keep = np.unique(np.linspace(0, len(init) - 1, n_windows).round().astype(int))
        init, ctrl, sens = ([x[i] for i in keep] for x in (init, ctrl, sens))
    seq = sysid.ModelSequences(model.config.name, spec, [f"w{i}" for i in range(len(init))],
                               init, ctrl, sens, allow_missing_sensors=True)
    params = sysid.ParameterDict()
    for n in names:
        params.add(sysid.body_inertia_param(
            spec, m0, f"{n}_body", inertia_type=sysid.InertiaType.Pseudo,
            modifier=lambda s, p, b=f"{n}_body": set_pseudo_inertia(s, b, p.value)))
    for n in names:
        for attr in ("armature", "damping", "frictionloss"):
            lo, hi = BOUNDS[attr]
            params.add(sysid.Parameter(
                f"{n}_{attr}", START[attr], lo, hi,
                modifier=lambda s, p, n=n, a=attr: _set_joint(s, n, a, float(p.value[0]))))
        lo, hi = BOUNDS["offset"]
        params.add(sysid.Parameter(
            f"{n}_offset", START["offset"], lo, hi,
            modifier=lambda s, p, a=f"{n}_motor": _set_offset(s, a, float(p.value[0]))))
    return spec, params, seq, obs, dropped


def standard_from_mujoco(model, m, params):
    """Standard parameters (P,) in ``model.parameter_names`` order of a compiled sysid model
    (bodies: MuJoCo's inertial about the joint frame -> the parameter frames; drives:
    armature / k_m^2, damping, frictionloss, the offset parameter)."""
    import mujoco
    import pinocchio as pin
    values = {}
    for k, jn in enumerate(model.joint_names):
        bid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, f"{jn}_body")
        quat = m.body_iquat[bid]
        R = pin.Quaternion(quat[0], quat[1], quat[2], quat[3]).toRotationMatrix()
        inertia = R @ np.diag(m.body_inertia[bid]) @ R.T
        p = pin.Inertia(float(m.body_mass[bid]), np.array(m.body_ipos[bid]),
                        inertia).toDynamicParameters()
        A = model.frame_changes[k]
        p = p if A is None else np.linalg.solve(A, p)
        link = model.parameter_names[10 * k].split(".")[0]
        for name, v in zip(model.parameter_names[10 * k: 10 * k + 10], p):
            values[name] = v
        assert name.startswith(link)
        dof = m.jnt_dofadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, jn)]
        gear = float(model.gear_ratios[k])
        values[f"{jn}.rotor_inertia"] = m.dof_armature[dof] / gear ** 2
        values[f"{jn}.viscous"] = m.dof_damping[dof]
        values[f"{jn}.coulomb"] = m.dof_frictionloss[dof]
        values[f"{jn}.offset"] = float(params[f"{jn}_offset"].value[0])
    return np.array([values.get(n, 0.0) for n in model.parameter_names])


def run_sysid(model, start_standard, datasets, window, max_iters, log, n_windows=None):
    """mujoco.sysid on ``datasets``; returns (standard parameters, info)."""
    from mujoco import sysid
    spec, params, seq, obs, dropped = sysid_problem(model, start_standard, datasets, window,
                                                    n_windows)
    residual_fn = sysid.build_residual_fn(models_sequences=[seq], enabled_observations=obs,
                                          n_threads=1)
    r0 = np.concatenate(residual_fn(params.as_vector(), params)[0])
    log(f"  sysid: {len(seq.measured_rollout)} windows ({dropped} left out: a joint at "
        f"rest), {params.size} parameters, start cost {0.5 * r0 @ r0:.4g}")
    c0, w0 = time.process_time(), time.time()
    opt, result = sysid.optimize(initial_params=params, residual_fn=residual_fn,
                                 optimizer="mujoco", verbose=False, max_iters=max_iters)
    cpu, wall = time.process_time() - c0, time.time() - w0
    r1 = np.concatenate(residual_fn(opt.as_vector(), opt)[0])
    m = sysid.apply_param_modifiers(opt, spec)
    info = {"windows": len(seq.measured_rollout), "windows_left_out": dropped,
            "parameters": int(params.size), "cost_start": float(0.5 * r0 @ r0),
            "cost_end": float(0.5 * r1 @ r1), "cpu_s": cpu, "wall_s": wall,
            "iterations": len(result.extras.get("objective", [])) or None}
    log(f"  sysid: cost {info['cost_start']:.4g} -> {info['cost_end']:.4g}, "
        f"CPU {cpu:.0f} s")
    pi = standard_from_mujoco(model, m, opt)
    check_same_model(model, m, pi)
    return pi, info


def check_same_model(model, m, pi, states=5):
    """The project's MuJoCo model of standard parameters ``pi`` is sysid's compiled model
    ``m``: mass matrix and bias forces on random states (relative 1e-9), armature, damping,
    frictionloss (measured on a random sysid parameter set: 1.7e-16)."""
    import mujoco
    from robot_identification.simulation import build_mujoco
    m2 = build_mujoco(model, pi).model
    d1, d2 = mujoco.MjData(m), mujoco.MjData(m2)
    rng = np.random.default_rng(0)
    for _ in range(states):
        q, v = rng.uniform(-2, 2, model.n), rng.uniform(-1, 1, model.n)
        M = []
        for mm, d in ((m, d1), (m2, d2)):
            d.qpos[:], d.qvel[:] = q, v
            mujoco.mj_forward(mm, d)
            M.append(np.zeros((model.n, model.n)))
            mujoco.mj_fullM(mm, d, M[-1])
        assert np.abs(M[0] - M[1]).max() <= 1e-9 * np.abs(M[0]).max()
        assert np.abs(d1.qfrc_bias - d2.qfrc_bias).max() <= 1e-9 * np.abs(d1.qfrc_bias).max()
    for key in ("dof_armature", "dof_damping", "dof_frictionloss"):
        assert np.allclose(getattr(m, key), getattr(m2, key), rtol=1e-12, atol=0)


# --------------------------------------------------------------------------- evaluation
def evaluate(model, models, held_out, ident, window):
    """Rollout (held-out and identification runs) and torque prediction (held-out) of the
    standard-parameter sets ``models`` (name -> (P,))."""
    from robot_identification.identifiability import base_parameters
    from robot_identification.validation import rollout, validate
    base = base_parameters(model)
    betas = {k: base.base_values(v) for k, v in models.items()}
    val = validate(model, base, betas, [held_out])[0]["models"]
    out = {}
    for name, pi in models.items():
        r_ho = rollout(model, pi, held_out, window=window)
        r_id = rollout(model, pi, ident, window=window)
        out[name] = {"held_out_q_rms": r_ho["q_rms_mean"], "held_out_dq_rms": r_ho["dq_rms_mean"],
                     "held_out_q_rms_joints": [j["q_rms"] for j in r_ho["joints"]],
                     "held_out_diverged": r_ho["diverged"], "windows": r_ho["windows"],
                     "ident_q_rms": r_id["q_rms_mean"], "ident_dq_rms": r_id["dq_rms_mean"],
                     "held_out_torque_nrmse": val[name]["nrmse_mean"]}
    return out, base


def drive_errors(model, pi, truth):
    out = {}
    for k, name in enumerate(model.parameter_names):
        if "." in name and name.split(".")[0] in model.joint_names:
            t = truth[k]
            out[name] = float((pi[k] - t) / abs(t)) if t else float(pi[k])
    return out


def nme(base, pi, truth):
    """Normalised mean error of the base parameters: mean |beta - beta_true| / |beta_true|
    (as ``identify`` reports it against true parameters)."""
    b, bt = base.base_values(pi), base.base_values(truth)
    return float(np.mean(np.abs(b - bt)) / np.mean(np.abs(bt)))


def compare(label, config_args, ident_path, held_out_path, window, max_iters, n_windows, work,
            log, truth=None):
    from robot_identification.cli import main
    from robot_identification.commands.export_urdf import physical_standard
    from robot_identification.data import load_dataset
    from robot_identification.model import RobotModel, load_robot, load_robot_config
    model = (load_robot(config_args[1]) if config_args[0] == "--robot"
             else RobotModel(load_robot_config(config_args[1])))
    results, validation = work / f"{label}_results.yaml", work / f"{label}_validation.yaml"
    log(f"[{label}] project: identify --estimator wls --estimator physical")
    c0 = time.process_time()
    assert main(["identify", *config_args, "--quiet", "--data", str(ident_path),
                 "--estimator", "wls", "--estimator", "physical", "--output",
                 str(results)]) == 0
    identify_cpu = time.process_time() - c0
    assert main(["validate", *config_args, "--quiet", "--results", str(results), "--data",
                 str(held_out_path), "--rollout", "--window", str(window), "--closed-loop",
                 "off", "--output", str(validation)]) == 0
    project = physical_standard(model, results)
    ident = load_dataset(ident_path, model=model)
    held_out = load_dataset(held_out_path, model=model)
    urdf = load_robot("ur10e").nominal_parameters()          # the shipped URDF, no drives
    log(f"[{label}] sysid (start: shipped URDF inertials, drives {START})")
    sysid_pi, info = run_sysid(model, urdf, [ident], window, max_iters, log, n_windows)
    (work / f"{label}_sysid.yaml").write_text(yaml.safe_dump(
        {"sysid": info, "standard_parameters": dict(zip(model.parameter_names,
                                                         map(float, sysid_pi)))},
        sort_keys=False))
    models = {"nominal": model.nominal_parameters(), "project": project, "sysid": sysid_pi}
    log(f"[{label}] evaluation: rollout ({window:g} s windows, open loop) and torque "
        f"prediction")
    metrics, base = evaluate(model, models, held_out, ident, window)
    roll = yaml.safe_load(validation.read_text())["rollout"][0]["models"]["physical"]
    assert abs(roll["q_rms_mean"] - metrics["project"]["held_out_q_rms"]) < 1e-12, \
        "validate --rollout and the benchmark's rollout disagree"
    doc = {"case": label, "window_s": window, "sysid": info,
           "project_identify_cpu_s": identify_cpu, "metrics": metrics,
           "standard_parameters": {k: dict(zip(model.parameter_names, map(float, v)))
                                   for k, v in models.items()}}
    if truth is not None:
        doc["drive_relative_errors"] = {k: drive_errors(model, models[k], truth)
                                        for k in ("project", "sysid")}
        doc["base_nme"] = {k: nme(base, models[k], truth) for k in ("project", "sysid")}
    return doc


def table(doc):
    lines = [f"{doc['case']}: held-out rollout ({doc['metrics']['project']['windows']} windows "
             f"of {doc['window_s']:g} s, open loop; mean over joints of the RMS error) and "
             f"one-step torque prediction (NRMSE mean over joints)",
             f"  {'model':8s} {'q [rad]':>10s} {'dq [rad/s]':>11s} {'torque NRMSE':>13s} "
             f"{'fit q [rad]':>12s}"]
    for name, m in doc["metrics"].items():
        lines.append(f"  {name:8s} {m['held_out_q_rms']:10.3g} {m['held_out_dq_rms']:11.3g} "
                     f"{m['held_out_torque_nrmse']:13.4f} {m['ident_q_rms']:12.3g}"
                     + (f"  ({m['held_out_diverged']} windows diverged)"
                        if m["held_out_diverged"] else ""))
    s = doc["sysid"]
    lines.append(f"  sysid: {s['parameters']} parameters, {s['windows']} windows, cost "
                 f"{s['cost_start']:.4g} -> {s['cost_end']:.4g}, CPU {s['cpu_s']:.0f} s; "
                 f"project identify CPU {doc['project_identify_cpu_s']:.1f} s")
    if "drive_relative_errors" in doc:
        lines.append(f"  base-parameter NME: project {doc['base_nme']['project']:.4f}, "
                     f"sysid {doc['base_nme']['sysid']:.4f}")
        lines.append("  drive parameters, relative error (project / sysid):")
        pe, se = doc["drive_relative_errors"]["project"], doc["drive_relative_errors"]["sysid"]
        for k in pe:
            lines.append(f"    {k:32s} {pe[k]:+9.3f} {se[k]:+9.3f}")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--case", nargs="+", choices=("simulated", "real"),
                   default=["simulated", "real"])
    p.add_argument("--window", type=float, default=0.5, help="rollout window [s]")
    p.add_argument("--max-iters", type=int, default=15, help="sysid optimiser iterations")
    p.add_argument("--sysid-windows", type=int, default=10,
                   help="windows sysid fits (evenly spread over the identification run; "
                        "0: all). Each optimiser iteration rolls every window out once per "
                        "parameter (finite differences): about 85 x 0.1 s CPU with 10")
    p.add_argument("--out", help="directory for the results (default: a temporary one)")
    args = p.parse_args(argv)
    try:
        from mujoco import sysid
        sysid.optimize                                      # noqa: B018 (the extra's modules)
    except (ImportError, AttributeError):
        print("mujoco.sysid is not installed (pip install -c constraints.txt "
              "'mujoco-core[sysid]'): nothing to compare")
        return 0
    work = Path(args.out or tempfile.mkdtemp(prefix="sysid_comparison_"))
    work.mkdir(parents=True, exist_ok=True)

    def log(msg):
        print(msg, flush=True)

    docs = []
    for case in args.case:
        if case == "simulated":
            config, ident, held_out = simulated_case(work)
            from robot_identification.model import RobotModel, load_robot_config
            truth = RobotModel(load_robot_config(config)).nominal_parameters()
            doc = compare("simulated", ["--config", str(config)], ident, held_out,
                          args.window, args.max_iters, args.sysid_windows, work, log,
                          truth=truth)
        else:
            if not (DATA / REAL_IDENT).is_file():
                log(f"real: {DATA} not available, skipped")
                continue
            doc = compare("real", ["--robot", "ur10e"], DATA / REAL_IDENT,
                          DATA / REAL_HELD_OUT, args.window, args.max_iters,
                          args.sysid_windows, work, log)
        (work / f"{case}_comparison.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
        docs.append(doc)
        print(table(doc), flush=True)
    print(f"results in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
