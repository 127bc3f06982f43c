"""Validation of identified models on held-out data: predicted vs measured joint torque.

For every validation file and every model (the nominal URDF and each estimate stored
in results.yaml) the torque predicted by the base model, tau = W_base(q, dq, ddq) beta,
is compared with the measured torque (both after the same zero-phase Butterworth
filter as in identification) per joint:

- ``rms``   = sqrt(mean((tau_pred - tau_meas)^2))                      [N*m]
- ``nrmse`` = rms / sqrt(mean(tau_meas^2))                             [-]

and ``nrmse_mean`` is the mean over joints. Validation needs no excitation: static
runs (no motion) are evaluated too (they test gravity and offsets).

Two predictors, always both (:data:`robot_identification.identification.PREDICTORS`):
``full`` predicts the Coulomb term as identification treated it (the ramp to the stop
velocity or the pre-sliding state, filtered like the torque; ``models``) and ``plain`` is
stateless, sign(v) outside a fixed 2e-4 rad/s deadband, unfiltered (``plain``): the same
function for every model, so that any model (a reference script's too) is scored alike.

validation.yaml (version 1)::

    robot: ur10e
    primary: physical            # the estimate reported in files[*].joints: the results
                                 # file's primary estimate (its base_parameters)
    predictors: {full: ..., plain: ...}   # what each predictor is
    files:
      - file: validation/run.csv
        estimate: physical
        joints: [{name: shoulder_pan_joint, rms: 1.2, nrmse: 0.06}, ...]   # full predictor
        nrmse_mean: 0.08
        nrmse_mean_plain: 0.12   # the primary under the plain predictor
        moving: true
        models:                  # every model, full predictor
          nominal: {joints: [...], nrmse_mean: ...}
          ols: {...}
          wls: {...}
          physical: {...}
        plain:                   # every model, plain predictor, same layout
          nominal: {...}
          ...
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import yaml

from robot_identification.errors import ConfigError, DataError
from robot_identification.identifiability import base_parameters
from robot_identification.identification import (
    PREDICTORS, REST_VELOCITY, SensorSet, filtered_coulomb, plain_coulomb, predict_torque,
    prediction_deadband, preprocess, result_base, torque_errors)
from robot_identification.model import current_parameter_name
from robot_identification.outputs import write_text_atomic
from robot_identification.report import read_results
from robot_identification.validation._rollout import rollout_to_dict

#: Order in which estimates are preferred as the primary validated model.
PREFERENCE = ("physical", "wls", "ols")


def load_estimates(path, model, base=None):
    """Base-parameter vectors of the models in a results.yaml, plus the nominal model.

    Returns
    -------
    base : BaseParameters
    models : dict
        name -> beta (p,); always ``nominal`` first, then ``estimates`` of the file (or
        its single ``base_parameters`` estimate under the file's estimator name).
    doc : ResultsFile
        The parsed file (:func:`robot_identification.report.read_results`).

    Raises
    ------
    DataError
        Missing file, invalid results file (:func:`robot_identification.report.read_results`),
        wrong robot, or base parameters that do not match the model's.
    """
    path = Path(path)
    doc = read_results(path, model)          # also its model fingerprint
    names = [current_parameter_name(n) for n in doc.names]  # fv -> viscous
    sensors = ((doc.get("settings") or {}).get("sensors") or {}) if model.config.elastic \
        else {}
    if base is None and sensors.get("joint_torque"):      # the base of its sensor set
        keys = ("link_positions", "motor_positions", "motor_torque", "joint_torque")
        base = result_base(model, SensorSet(**{k: bool(sensors.get(k, True)) for k in keys}))
    base = base or base_parameters(model)
    if list(base.names) != names:
        extra = [n for n in names if n not in base.names][:3]
        lack = [n for n in base.names if n not in names][:3]
        diff = (f"the file has {extra} the model lacks" if extra else "") + \
            ("; " if extra and lack else "") + \
            (f"the model has {lack} the file lacks" if lack else "") or \
            "the same names in another order"
        raise DataError(f"base parameters of '{path}' do not match robot "
                        f"'{model.config.name}' (different model or friction settings): "
                        f"{diff}")
    models = {"nominal": base.base_values(model.nominal_parameters())}
    if doc.estimates:
        for name in doc.estimates:
            models[name] = doc.values(name)
    else:
        models[doc.estimator or "estimate"] = doc.values()
    return base, models, doc


def positions_cutoff_of(doc):
    """results.yaml ``settings: cutoff_hz_positions`` [Hz] (the cut-off for held-out data
    without measured velocities, :func:`validate`'s ``cutoff_without_velocities``), None
    where the file has none (or a value that is not a positive number). ``doc``: a mapping
    or :func:`load_estimates`' document. Raises nothing."""
    got = (doc.get("settings") if hasattr(doc, "get") else None) or {}
    value = got.get("cutoff_hz_positions") if isinstance(got, dict) else None
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def cutoff_notes(files, doc):
    """Info notes (``cutoff_for_positions``, list of Diagnostic) for the entries of
    :func:`validate` (``files``) filtered at the identification's cut-off for positions (no
    measured velocities in the file: the entry's ``cutoff_hz`` [Hz]); ``doc`` as
    :func:`positions_cutoff_of`."""
    from robot_identification.diagnostics import Diagnostic   # light at start-up
    got = (doc.get("settings") if hasattr(doc, "get") else None) or {}
    return [Diagnostic("cutoff_for_positions", "info",
                       f"{f['file']}: no measured velocities; filtered at {f['cutoff_hz']:g} "
                       f"Hz, the cut-off identification resolved for its positions alone "
                       f"(its measured velocities allowed {got.get('cutoff_hz')} Hz)")
            for f in files if "cutoff_hz" in f]


def check_held_out(model, datasets, labels=None):
    """The data checks ``identify`` runs on each recording, on held-out datasets: joint and
    velocity limits (positions in degrees), torque outliers and saturation, time stamps,
    joints that stand still (``joint_still``,
    :func:`~robot_identification.diagnostics.check_still_joints`), and (rigid arms) the
    URDF-based readings (a torque sign, swapped columns, a dead or mis-scaled torque;
    :func:`robot_identification.diagnostics.recording_summary`). Before this ``validate``
    and ``report`` scored any data: positions in degrees gave an NRMSE of 431 with exit 0
    and no word of the cause (UR5 of example-robot-data, MuJoCo).

    Parameters
    ----------
    model : RobotModel
    datasets : list of Dataset
    labels : list of str, optional
        File label per dataset (default ``metadata['source']``).

    Returns
    -------
    list of Diagnostic
        The errors and warnings (the info notes left out), in file order.

    Raises
    ------
    DataError
        Invalid dataset (:meth:`Dataset.validate`).
    """
    from robot_identification.diagnostics import (  # light at start-up
        check_still_joints, recording_summary)
    out = []
    for i, ds in enumerate(datasets):
        label = labels[i] if labels else ds.metadata.get("source", f"dataset{i + 1}")
        summary = recording_summary(model, ds, str(label))
        out += check_still_joints(model.joint_names, summary["velocity_rms"], str(label))
        out += [d for d in summary["diagnostics"] if d.severity in ("error", "warning")]
    return out


def validate(model, base, models, datasets, settings=None, labels=None, keep_signals=False,
             rest_velocity=None, filter_coulomb=None, cutoff_without_velocities=None):
    """Validate base-parameter models on held-out datasets.

    Parameters
    ----------
    model : RobotModel
        Rigid: the joint torques are compared; elastic: the motor torques (the motor-side
        rows of Zollo et al. 2014, eq. 13; the link rows have no measured right-hand side),
        with the measured joint torque in place of the spring term where joint torque
        sensors are recorded; for data with joint torque sensors and no motor torque, the
        joint torques predicted by the link rows without their spring term
        (docs/elastic.md).
    base : BaseParameters
    models : dict
        name -> beta (p,) (see :func:`load_estimates`).
    datasets : list of Dataset
    settings : IdentificationSettings, optional
        Filtering and the Coulomb ramp (:func:`prediction_deadband`); default the robot
        config's.
    labels : list of str, optional
        File label per dataset (default ``metadata['source']``).
    keep_signals : bool
        Also return the time, measured and predicted torques per file (for plots).
    rest_velocity : float, optional
        See :func:`predict_torque`; default 0 when ``settings.friction_deadband`` is a
        number (the identification's deadband is used), else :data:`REST_VELOCITY`
        [rad/s].
    filter_coulomb : bool or None
        True: predict the Coulomb column as the filtered measurement holds it
        (:func:`filtered_coulomb`); False: the ramp of the filtered velocity (what a plain
        script does; the benchmarks' references). None (default): True where identification
        dropped the friction rows at reversals and stops (``settings.drop_reversals``) - on
        the rows it used the filtered column equals the fitted one up to the filter's
        settling tolerance, on the dropped rows the fitted column says nothing -, else False:
        without ``drop_reversals`` identification fitted the ramp of the filtered velocity on
        every row, and prediction uses that same column.
    cutoff_without_velocities : float, optional
        [Hz] The cut-off for a held-out dataset without measured velocities (rigid: no
        ``dq``; elastic: no ``dq`` or no ``dtheta``), whose velocities and accelerations are
        differentiated from its positions: results.yaml ``settings: cutoff_hz_positions``
        (:func:`~robot_identification.identification.positions_cutoff`, resolved on the
        identification data where measured velocities let ``cutoff_hz: auto`` rise above
        what positions alone allow). Such a file's entry carries ``cutoff_hz``.

    Returns
    -------
    list of dict
        Per file: ``file``, ``moving``, ``models`` {name: {joints, nrmse_mean}} (the full
        predictor), ``plain`` {name: {joints, nrmse_mean}} (the plain predictor,
        :func:`~robot_identification.identification.plain_coulomb`) and, with
        ``keep_signals``, ``signals`` {t, measured, predicted: {name: (N, n)},
        predicted_plain: {name: (N, n)}}.

    Raises
    ------
    DataError
        Invalid dataset (missing joints, NaN, too short).
    ConfigError
        A ``rest_velocity`` that is not a finite number >= 0.
    """
    n = model.n
    motor = slice(n, 2 * n) if model.config.elastic else slice(0, n)
    s = settings or model.config.identification
    dead = None if isinstance(s.friction_deadband, str) else prediction_deadband(model, s)
    if rest_velocity is not None and not 0 <= rest_velocity < np.inf:
        raise ConfigError(f"rest velocity must be a finite number >= 0 rad/s, got "
                          f"{rest_velocity!r}")
    if rest_velocity is None:
        rest_velocity = REST_VELOCITY if dead is None else 0.0
    out = []
    base_settings = s
    for i, ds in enumerate(datasets):
        s = base_settings
        measured = ds.dq is not None and (not model.config.elastic or ds.dtheta is not None)
        if cutoff_without_velocities is not None and not measured:
            s = replace(base_settings, cutoff_hz=float(cutoff_without_velocities))
        states, t = preprocess(model, ds, s)
        meas = states["tau"]
        rows, zero, measured_spring = motor, [], 0.0
        if model.config.elastic and ds.tau_joint is not None:
            # joint torque sensors (docs/elastic.md): the spring term of the equations is
            # measured; without motor torque the link rows' torque without it is the
            # predicted joint torque, with motor torque u = motor rows' torque + tau_J
            spring = {f"{j}.{k}" for j in model.joint_names for k in ("stiffness", "damping")}
            zero = [b for b, nm in enumerate(base.names) if nm in spring]
            if ds.tau is None:
                meas, rows = states["tau_joint"], slice(0, n)
            else:
                measured_spring = states["tau_joint"]
        label = (labels[i] if labels else ds.metadata.get("source", f"dataset{i + 1}"))
        entry = {"file": str(label), "moving": bool(ds.metadata.get(
            "moving", np.abs(states["dq"]).max() > 0.01)), "models": {}, "plain": {}}
        if s is not base_settings:
            entry["cutoff_hz"] = s.cutoff_hz
        preds, plains = {}, {}
        plain = plain_coulomb(states["dtheta" if model.config.elastic else "dq"])
        coulomb = (filtered_coulomb(model, ds, s, dead)
                   if dead is not None and (s.drop_reversals if filter_coulomb is None
                                            else filter_coulomb) else None)
        for name, beta in models.items():
            beta = np.array(beta, dtype=float)
            beta[zero] = 0.0
            pred = predict_torque(model, base, beta, states, rest_velocity=rest_velocity,
                                  friction_deadband=0.0 if dead is None else dead,
                                  coulomb=coulomb)[:, rows] + measured_spring
            preds[name] = pred
            entry["models"][name] = torque_errors(meas, pred, model.joint_names)
            plains[name] = predict_torque(model, base, beta, states,
                                          coulomb=plain)[:, rows] + measured_spring
            entry["plain"][name] = torque_errors(meas, plains[name], model.joint_names)
        if keep_signals:
            entry["signals"] = {"t": t, "measured": meas, "predicted": preds,
                                "predicted_plain": plains, "q": states["q"]}
        out.append(entry)
    return out


def validation_to_dict(robot, files, primary=None, diagnostics=()) -> dict:
    """validation.yaml mapping (schema in the module docstring); with ``diagnostics``
    (:func:`check_held_out`) a list ``diagnostics`` and, where one is an error,
    ``status: error`` (written only with ``--force``)."""
    names = list(files[0]["models"]) if files else []
    if primary is None:
        primary = next((p for p in PREFERENCE if p in names), names[-1] if names else None)
    doc = {"robot": robot, "primary": primary, "predictors": dict(PREDICTORS), "files": []}
    for f in files:
        m = f["models"][primary]
        entry = {"file": f["file"], "estimate": primary,
                 "joints": [dict(j) for j in m["joints"]],
                 "nrmse_mean": m["nrmse_mean"], "moving": f["moving"],
                 "models": f["models"]}
        if f.get("plain"):
            entry["nrmse_mean_plain"] = f["plain"][primary]["nrmse_mean"]
            entry["plain"] = f["plain"]
        doc["files"].append(entry)
    if diagnostics:
        if any(d.severity == "error" for d in diagnostics):
            doc["status"] = "error"
        doc["diagnostics"] = [d.to_dict() for d in diagnostics]
    return doc


def write_validation(path, robot, files, primary=None, inputs=(), rollout=None,
                     diagnostics=()):
    """Write validation.yaml atomically (``inputs`` are refused as ``path``); returns its
    path. ``rollout``: :func:`~robot_identification.validation.rollout_validate` results,
    written under ``rollout:``; ``diagnostics``: see :func:`validation_to_dict`."""
    doc = validation_to_dict(robot, files, primary, diagnostics)
    if rollout:
        doc["rollout"] = rollout_to_dict(rollout)
    return write_text_atomic(path, yaml.safe_dump(doc, sort_keys=False), inputs=inputs)


def format_validation(files) -> str:
    """Text table: NRMSE per joint and mean, per file and model (full predictor), and the
    mean under the plain predictor."""
    lines = []
    for f in files:
        names = [j["name"] for j in next(iter(f["models"].values()))["joints"]]
        short = [n.replace("_joint", "") for n in names]
        lines.append(f"{f['file']}" + ("" if f["moving"] else "  (static)"))
        head = (f"  {'model':<10}" + "".join(f"{s:>14}" for s in short) + f"{'mean':>9}"
                + (f"{'plain':>9}" if f.get("plain") else ""))
        lines.append(head)
        for name, m in f["models"].items():
            # a space before each cell: an RMS of 100 N*m or more ran into the cell before
            # it ("337.1431498.130", positions in degrees); narrower numbers print as before
            cells = "".join(f" {j['rms']:6.3f}/{j['nrmse']:<6.3f}" for j in m["joints"])
            plain = (f"{f['plain'][name]['nrmse_mean']:9.4f}" if f.get("plain", {}).get(name)
                     else "")
            lines.append(f"  {name:<10}{cells}{m['nrmse_mean']:9.4f}{plain}")
        lines.append("  (cells: RMS error [N*m] / NRMSE, full predictor; mean: mean NRMSE "
                     "over joints, full predictor; plain: the same under the plain predictor)")
    return "\n".join(lines)
