"""The weight of the physically consistent estimate's prior, chosen by cross-validation on
the identification data, and the held-out check of the estimate against the nominal model.

The log-det prior of :func:`robot_identification.estimation.physically_consistent` pulls
every body toward the prior's (the URDF's) with weight gamma in units of the data term.
``prior_weight: auto`` chooses gamma from :data:`PRIOR_WEIGHTS` by cross-validation on the
identification data only: leave-one-recording-out with two or more recordings, else the two
halves of the one recording (each fitted on the other). Each fold fits WLS and the
physically consistent estimate on the other folds' normal equations and scores it on its own:
the held-out NRMSE per row group sqrt(r_j / c_j) (r_j the residual sum of squares of the
fold's rows, c_j their measured sum of squares: the rows identification uses, its regressor
columns), averaged over the groups with a measured torque and over the folds. The same score
of the nominal model (the URDF's parameters, no friction) tells whether the estimate predicts
held-out identification data worse than the nominal model does (diagnostic
``worse_than_nominal``).
"""
from __future__ import annotations

import numpy as np

from robot_identification.diagnostics import VERDICT_MARGIN, Diagnostic
from robot_identification.errors import DataError, IdentificationError
from robot_identification.estimation import NormalEquations, ols, physically_consistent, wls
from robot_identification.identification._sources import Recording

#: Candidate weights of the log-det prior (``prior_weight: auto``).
PRIOR_WEIGHTS = (0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0)


def fold_equations(model, datasets, settings, base, equations, summaries=None):
    """Normal equations of each fold's held-out part: one per recording, or the two halves
    (by time) of a single recording.

    Parameters
    ----------
    datasets : list of Dataset
        The identification recordings, in memory.
    summaries : list, optional
        Each recording's ``Recording.summary_cache`` from the engine's pass (per recording
        folds reuse it: the same data give the same summary, and its diagnostics, among them
        the free refit of the torque-sign readings, are not computed a second time).
    settings : IdentificationSettings
        Resolved (numbers, not ``auto``).
    base : BaseParameters
    equations : callable
        ``equations(model, recording, settings, base=base)`` -> NormalEquations: the engine's
        :func:`~robot_identification.identification.recording_normal_equations` (passed in:
        the engine calls this module).

    Returns
    -------
    list of NormalEquations (at least 2)
    """
    parts = list(datasets)
    if len(parts) == 1:
        ds = parts[0]
        half = ds.t.shape[0] // 2
        parts = [ds.slice(slice(0, half)), ds.slice(slice(half, None))]
        summaries = None
    out = []
    for k, d in enumerate(parts):
        rec = Recording.from_dataset(d, model)
        if summaries is not None:
            rec.summary_cache = summaries[k]
        out.append(equations(model, rec, settings, base=base))
    return out


def heldout_score(neq, beta):
    """Mean over the row groups with a measured torque of sqrt(r_j / c_j): the NRMSE of
    ``beta`` on the rows of ``neq`` (dimensionless)."""
    res = neq.residual_sums(beta)
    ok = neq.c > 0
    return float(np.mean(np.sqrt(res[ok] / neq.c[ok]))) if ok.any() else float("nan")


def _others(folds, k):
    first = folds[0]
    out = NormalEquations(first.p, first.groups)
    for i, f in enumerate(folds):
        if i != k:
            out += f
    return out


def select_prior_weight(model, base, prior, folds, weights=PRIOR_WEIGHTS):
    """Cross-validated weight of the log-det prior (module docstring).

    Parameters
    ----------
    model : RobotModel
    base : BaseParameters
    prior : ndarray (P,)
        Prior standard parameters (the URDF's for ``prior: nominal``).
    folds : list of NormalEquations
        :func:`fold_equations`.
    weights : sequence of float

    Returns
    -------
    (gamma, table, nominal)
        The chosen weight, the table [[gamma, held-out score], ...] and the nominal
        model's held-out score (the same metric, mean over the folds).

    Raises
    ------
    IdentificationError
        The SDP solver fails on every fold of every weight.
    """
    fits = []
    for k in range(len(folds)):
        try:
            w = wls(_others(folds, k))
        except DataError:
            return None, [], float("nan")     # a fold too short: no selection
        fits.append((np.einsum("j,jik->ik", w.weights, _others(folds, k).G), w.values))
    table = []
    for gamma in weights:
        scores = []
        for k, (info, beta_ls) in enumerate(fits):
            try:
                ph = physically_consistent(model, base, info, beta_ls, nominal=prior,
                                           weight=gamma, refine=False)
            except IdentificationError:
                scores = []
                break
            scores.append(heldout_score(folds[k], ph.base))
        if scores:
            table.append([float(gamma), float(np.mean(scores))])
    if not table:
        raise IdentificationError("prior_weight auto: the physically consistent estimate "
                                  "failed on every cross-validation fold")
    nominal = base.base_values(np.nan_to_num(np.asarray(model.nominal_parameters(),
                                                        dtype=float)))
    nominal_score = float(np.mean([heldout_score(f, nominal) for f in folds]))
    best = min(table, key=lambda r: r[1])
    return best[0], table, nominal_score


def resolve_prior_weight(model, recordings, settings, estimators=None, prior=None,
                         base=None, log=None, *, load, equations):
    """``prior_weight`` of the physically consistent estimate: a number as given; ``auto``
    cross-validated (:func:`select_prior_weight`) where ``physical`` is the primary
    estimate, every recording is in memory, the arm is rigid and there is a prior, else 1.

    Parameters
    ----------
    recordings : list of Recording
    settings : IdentificationSettings
        Resolved (numbers, not ``auto``).
    load, equations : callable
        The engine's ``load_prior(model, prior)`` -> (P,) or None and
        ``recording_normal_equations`` (:func:`fold_equations`).

    Returns
    -------
    (options, chosen)
        The engine's ``options`` ({'prior_weight': gamma}) and (gamma, table, nominal
        score, number of folds) or None.
    """
    wanted = getattr(settings, "prior_weight", 1.0)
    if not isinstance(wanted, str):
        return {"prior_weight": float(wanted)}, None
    primary = (tuple(estimators or ()) or settings.estimators)[0]
    sets = [getattr(r, "dataset", None) for r in recordings]
    if (primary != "physical" or model.config.elastic or not sets
            or any(d is None for d in sets)):
        return {"prior_weight": 1.0}, None
    pri = load(model, prior if prior is not None else settings.prior)
    if pri is None:
        return {"prior_weight": 1.0}, None
    try:
        folds = fold_equations(model, sets, settings, base, equations,
                               [getattr(r, "summary_cache", None) for r in recordings])
        gamma, table, nominal = select_prior_weight(model, base, pri, folds)
    except (DataError, ValueError) as exc:       # a fold too short for the filter
        if log:
            log(f"prior weight not cross-validated ({exc}); weight 1")
        return {"prior_weight": 1.0}, None
    if gamma is None:
        return {"prior_weight": 1.0}, None
    if log:
        log(f"prior weight, cross-validated over {len(folds)} folds: {gamma:g}")
    return {"prior_weight": gamma}, (gamma, table, nominal, len(folds))


def least_squares_check(model, neq, settings, estimators, base):
    """The held-out comparison with the nominal model where the primary estimate is least
    squares (``ols`` or ``wls``, e.g. ``init``'s starter config): the identification's own
    normal equations split in two by time (the halves of their time blocks,
    :meth:`~robot_identification.identification.RecordingEquations.time_blocks`: no second
    pass over the data, streamed recordings included), each half's rows scored by the
    primary estimator fitted on the other half, and by the nominal model (the URDF's
    parameters, no friction), with :func:`heldout_score`. The physically consistent primary
    gets the comparison from its prior-weight selection; before this, a least-squares primary
    was "not checked" (issue #27: a held-out verdict per model): a 2 s run of the Unitree
    Z1's starter excitation was written with a WLS estimate whose error on a held-out motion
    was 0.17-0.30 against the URDF's 0.01, with no word.

    Parameters
    ----------
    neq : RecordingEquations
        The identification's normal equations (rows as identification used them).
    settings : IdentificationSettings
    estimators : sequence of str or None
        The estimators asked for (the first is the primary); default ``settings``'.
    base : BaseParameters

    Returns
    -------
    dict or None
        ``{"estimator", "heldout_nrmse", "nominal_nrmse", "folds"}``; None where not checked
        (another primary, an elastic arm, fewer than 4 time blocks, a half too short to
        fit).
    """
    primary = (tuple(estimators or ()) or settings.estimators)[0]
    blocks = neq.time_blocks() if hasattr(neq, "time_blocks") else None
    if primary not in ("ols", "wls") or model.config.elastic or not blocks or len(blocks) < 4:
        return None
    half = len(blocks) // 2
    folds = []
    for part in (blocks[:half], blocks[half:]):
        f = NormalEquations(neq.p, neq.groups)
        for G, b, c, count in part:
            f.G += G
            f.b += b
            f.c += c
            f.count += count
        folds.append(f)
    fit = wls if primary == "wls" else ols
    try:
        scores = [heldout_score(f, fit(_others(folds, k)).values)
                  for k, f in enumerate(folds)]
    except (DataError, ValueError, np.linalg.LinAlgError):   # a half too short
        return None
    nominal = base.base_values(np.nan_to_num(np.asarray(model.nominal_parameters(),
                                                        dtype=float)))
    nominal_score = float(np.mean([heldout_score(f, nominal) for f in folds]))
    score = float(np.mean(scores))
    if not (np.isfinite(score) and np.isfinite(nominal_score)):
        return None
    return {"estimator": primary, "heldout_nrmse": score, "nominal_nrmse": nominal_score,
            "folds": len(folds)}


def record_least_squares_check(result, check):
    """results.yaml ``settings.heldout_check`` (:func:`least_squares_check`) and the warning
    ``worse_than_nominal`` where the primary predicts the held-out identification data worse
    than the nominal model."""
    result.settings["heldout_check"] = dict(
        check, heldout_nrmse=float(f"{check['heldout_nrmse']:.4g}"),
        nominal_nrmse=float(f"{check['nominal_nrmse']:.4g}"), fold_kind="halves in time")
    if check["heldout_nrmse"] > VERDICT_MARGIN * check["nominal_nrmse"]:
        kind = "the two halves in time, each fitted on the other"
        result.diagnostics.append(Diagnostic(
            "worse_than_nominal", "warning",
            f"the {check['estimator']} estimate predicts held-out identification data "
            f"({kind}) worse than the nominal URDF does: mean NRMSE "
            f"{check['heldout_nrmse']:.3g} vs {check['nominal_nrmse']:.3g}; the data do not "
            f"support the identified parameters over the URDF's (too little excitation, a "
            f"recording too short, a payload, a wrong model?); the physically consistent "
            f"estimate (--estimator physical) keeps the URDF's where the data say little",
            check["estimator"]))


def record_prior_weight(result, gamma, table, nominal, folds):
    """results.yaml ``settings.prior_weight`` and ``prior_weight_selection`` (folds, table of
    [gamma, held-out mean NRMSE], the nominal model's); the warning ``worse_than_nominal``
    where the chosen estimate predicts the held-out identification data worse than the
    nominal model (the URDF's parameters, no friction)."""
    result.settings["prior_weight"] = gamma
    result.settings["prior_weight_selection"] = {
        "folds": folds, "table": [[g, float(f"{e:.4g}")] for g, e in table],
        "nominal": float(f"{nominal:.4g}")}
    score = dict((g, e) for g, e in table)[gamma]
    how = ("leave-one-recording-out" if result.settings.get("prior_weight_folds") != "halves"
           else "two halves of the recording")
    if score > VERDICT_MARGIN * nominal:
        result.diagnostics.append(Diagnostic(
            "worse_than_nominal", "warning",
            f"the physically consistent estimate predicts held-out identification data "
            f"({folds} folds, {how}) worse than the nominal URDF does: mean NRMSE "
            f"{score:.3g} vs {nominal:.3g}; the data do not support the identified "
            f"parameters over the URDF's (too little excitation, a payload, a wrong "
            f"model?)", "physical"))
