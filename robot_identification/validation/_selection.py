"""Model selection by cross-validation on the identification data alone.

``robot-identification identify --select`` chooses the low-pass cut-off, the Coulomb sign
deadband, whether friction rows near velocity reversals are dropped and the friction model
(the configured one or Szabó & Gincsainé's smooth static model, eq. 7-9) by their
prediction error on data left out of the fit:

- two or more recordings: leave-one-recording-out (fit on the others, predict the one left
  out);
- one recording: ``blocks`` contiguous time blocks, each left out in turn.

Other friction models are scored too and reported (the results' parameter layout stays the
robot config's; a better model is reported as a diagnostic).

The score of a candidate is the mean over folds and joints of the NRMSE of its predicted
torque against the measured torque filtered with one reference filter (the configured /
automatic cut-off), so that candidates with different filters are compared on the same
signal. Validation files are never used. The candidate with the lowest score is used for the
final identification on all the data; the whole table is reported (results.yaml
``selection:``).
"""
from __future__ import annotations

from dataclasses import replace
from itertools import product

import numpy as np

from robot_identification.diagnostics import Diagnostic, recording_summary
from robot_identification.errors import DataError, IdentificationError
from robot_identification.identification import (
    filtered_coulomb, predict_torque, prediction_deadband, preprocess, resolve_settings,
    torque_errors)
from robot_identification.model import RobotModel
from robot_identification.identification import identify

#: Cut-off factors (times the configured or automatic cut-off) tried by default.
CUTOFF_FACTORS = (0.5, 1.0, 2.0)


def folds(datasets, blocks=3):
    """(train, test) pairs of dataset lists: leave-one-recording-out, or time blocks of a
    single recording."""
    if len(datasets) >= 2:
        return [([d for j, d in enumerate(datasets) if j != i], [datasets[i]])
                for i in range(len(datasets))]
    ds = datasets[0]
    edges = np.linspace(0, ds.n_samples, blocks + 1).astype(int)
    parts = [ds.slice(slice(a, b)) for a, b in zip(edges[:-1], edges[1:])]
    return [([p for j, p in enumerate(parts) if j != i], [parts[i]]) for i in range(blocks)]


def _with_friction(model, friction_model):
    if friction_model == model.config.friction.model:
        return model
    cfg = replace(model.config, friction=replace(model.config.friction, model=friction_model))
    return RobotModel(cfg, urdf_xml=model.urdf_xml)


def candidates(model, settings):
    """Default candidate grid: list of (friction model, IdentificationSettings)."""
    s = settings
    cut = s.cutoff_hz
    cuts = [cut] if cut is None or cut == "auto" else [float(f"{f * cut:.3g}")
                                                       for f in CUTOFF_FACTORS]
    if cut == "auto":
        cuts = ["auto:0.5", "auto", "auto:2"]
    elif cut is None:                 # no filter (e.g. exact derivatives) or the automatic one
        cuts = [None, "auto", "auto:2"]
    fms = [model.config.friction.model]
    if fms[0] == "coulomb_viscous":
        fms.append("static")
    out = []
    for fm, c, dead, drop in product(fms, cuts, ("auto", 0.0), (True, False)):
        if fm != "coulomb_viscous" and (dead != "auto" or not drop):
            continue             # no sign term: deadband and reversals do not matter
        out.append((fm, {"cutoff_hz": c, "friction_deadband": dead, "drop_reversals": drop}))
    return out


def _resolve_cutoff(model, settings, datasets, spec):
    if isinstance(spec, str) and spec.startswith("auto"):
        factor = float(spec.split(":")[1]) if ":" in spec else 1.0
        auto = resolve_settings(model, replace(settings, cutoff_hz="auto"),
                                [recording_summary(model, d) for d in datasets]).cutoff_hz
        return float(f"{factor * auto:.3g}")
    return spec


def select(model, datasets, settings=None, grid=None, blocks=3, log=None):
    """Cross-validate candidate settings on identification data.

    Parameters
    ----------
    model : RobotModel
    datasets : list of Dataset
        Identification recordings only.
    settings : IdentificationSettings, optional
        Base settings (default: the robot config's).
    grid : list of (str, dict), optional
        (friction model, settings overrides) candidates; default :func:`candidates`.
    blocks : int
        Time blocks when there is a single recording.

    Returns
    -------
    best_settings : IdentificationSettings
        The best candidate with the configured friction model (the parameter layout follows
        the robot config; :func:`selection_diagnostics` says when another model predicts
        better).
    table : list of dict
        One row per candidate: ``friction``, ``cutoff_hz``, ``friction_deadband``,
        ``drop_reversals``, ``cv_nrmse`` (mean NRMSE over folds and joints; None when a fold
        could not be fitted), ``selected``.

    Raises
    ------
    DataError
        No candidate could be fitted on every fold.
    """
    if model.config.elastic:
        raise DataError("--select supports rigid models (torque prediction on the joint rows)")
    s0 = settings or model.config.identification
    ref = replace(s0, cutoff_hz=_resolve_cutoff(model, s0, datasets, "auto")
                  if s0.cutoff_hz == "auto" else s0.cutoff_hz)
    pairs = folds(datasets, blocks)
    rows = []
    for fm, over in (grid or candidates(model, s0)):
        m = _with_friction(model, fm)
        over = dict(over)
        over["cutoff_hz"] = _resolve_cutoff(m, s0, datasets, over.get("cutoff_hz", s0.cutoff_hz))
        s = replace(s0, **over)
        scores = []
        try:
            for train, test in pairs:
                res = identify(m, train, s)
                fit = replace(s, friction_deadband=tuple(res.settings["friction_deadband"]),
                              stop_velocity=tuple(np.broadcast_to(
                                  res.settings.get("stop_velocity", 0.0), (m.n,))))
                for ds in test:      # predicted as validate does
                    st, _ = preprocess(m, ds, fit)
                    meas, _ = preprocess(m, ds, ref)
                    width = prediction_deadband(m, fit)
                    pred = predict_torque(m, res.base, res.estimate.values, st,
                                          friction_deadband=width,
                                          coulomb=filtered_coulomb(m, ds, fit, width))
                    scores.append(torque_errors(meas["tau"], pred, m.joint_names)["nrmse_mean"])
            score = float(np.mean(scores))
        except (DataError, IdentificationError):
            score = None
        row = {"friction": fm, "cutoff_hz": over["cutoff_hz"],
               "friction_deadband": over.get("friction_deadband", s0.friction_deadband),
               "drop_reversals": bool(over.get("drop_reversals", s0.drop_reversals)),
               "cv_nrmse": score, "selected": False}
        rows.append(row)
        if log:
            log(f"  {fm:<16} cut-off {row['cutoff_hz']} Hz, deadband "
                f"{row['friction_deadband']}, drop reversals {row['drop_reversals']}: "
                f"{'failed' if score is None else f'{score:.4f}'}")
    ok = [r for r in rows if r["cv_nrmse"] is not None
          and r["friction"] == model.config.friction.model]
    if not ok:
        raise DataError("model selection: no candidate could be fitted on every fold")
    best = min(ok, key=lambda r: r["cv_nrmse"])
    best["selected"] = True
    s = replace(s0, cutoff_hz=best["cutoff_hz"], friction_deadband=best["friction_deadband"],
                drop_reversals=best["drop_reversals"])
    return s, rows


def selection_diagnostics(model, rows):
    """``friction_model_selection`` (info): another friction model predicts the left-out
    data better than the configured one (the parameter layout follows the robot config, so
    the switch is the user's: ``friction.model`` in the robot YAML)."""
    ok = [r for r in rows if r["cv_nrmse"] is not None]
    if not ok:
        return []
    best = min(ok, key=lambda r: r["cv_nrmse"])
    chosen = next((r for r in rows if r["selected"]), None)
    if chosen is None or best["friction"] == chosen["friction"]:
        return []
    return [Diagnostic("friction_model_selection", "info",
                       f"friction model '{best['friction']}' predicts the left-out "
                       f"identification data better (CV NRMSE {best['cv_nrmse']:.4f} vs "
                       f"{chosen['cv_nrmse']:.4f}); set friction.model: {best['friction']} in "
                       f"the robot config to use it", "friction.model")]


def format_selection(rows, folds_label="") -> str:
    """Text table of :func:`select`'s rows."""
    lines = [f"model selection by cross-validation{folds_label} (mean NRMSE over folds and "
             f"joints; identification data only)",
             f"  {'friction':<16}{'cut-off Hz':>11}{'deadband':>10}{'drop rev.':>10}"
             f"{'CV NRMSE':>10}"]
    for r in rows:
        sc = "failed" if r["cv_nrmse"] is None else f"{r['cv_nrmse']:.4f}"
        lines.append(f"{'*' if r['selected'] else ' '} {r['friction']:<16}"
                     f"{str(r['cutoff_hz']):>11}{str(r['friction_deadband']):>10}"
                     f"{str(r['drop_reversals']):>10}{sc:>10}")
    return "\n".join(lines)
