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

from robot_identification.choices import AUTO_ESTIMATOR
from robot_identification.diagnostics import VERDICT_MARGIN, Diagnostic
from robot_identification.errors import ConfigError, DataError, IdentificationError
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


def _fitted_part(neq):
    """``neq`` where every base parameter has rows; else a copy whose columns without rows
    (a joint that stands still in that part of a short run: its rotor and friction) carry
    1e-12 of the largest diagonal entry: WLS gives them 0 (the minimum-norm least-squares
    solution, their right-hand side is 0), the physically consistent estimate the prior's
    value (their data term is negligible). Such a part is what the data of a short run can
    say about the other; scoring it (:func:`heldout_score`) is the point of the folds."""
    diag = np.einsum("jii->ji", neq.G)
    dead = ~np.any(diag > 0, axis=0)
    if not dead.any() or dead.all():
        return neq
    out = NormalEquations(neq.p, neq.groups)
    out += neq
    idx = np.flatnonzero(dead)
    out.G[:, idx, idx] += 1e-12 * float(diag.max())
    return out


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
            rest = _fitted_part(_others(folds, k))
            w = wls(rest)
        except DataError:
            return None, [], float("nan")     # a fold too short: no selection
        fits.append((np.einsum("j,jik->ik", w.weights, rest.G), w.values))
    table = []
    for gamma in weights:
        scores = []
        for k, (info, beta_ls) in enumerate(fits):
            try:
                ph = physically_consistent(model, base, info, beta_ls, nominal=prior,
                                           weight=gamma, refine=False, fallback=False)
            except IdentificationError:
                scores = []
                break
            scores.append(heldout_score(folds[k], ph.base))
        if scores:
            table.append([float(gamma), float(np.mean(scores))])
    if not table:
        raise IdentificationError("prior_weight auto: the physically consistent estimate "
                                  "failed on every cross-validation fold")
    nominal_score = _nominal_score(model, base, folds)
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


def time_halves(neq):
    """The two halves in time of the identification's normal equations: their time blocks
    (:meth:`~robot_identification.identification.RecordingEquations.time_blocks`) split in
    the middle, summed per half (no second pass over the data: streamed recordings and Dask
    included).

    Returns
    -------
    list of NormalEquations (2) or None
        None with fewer than 4 time blocks (or none known).
    """
    blocks = neq.time_blocks() if hasattr(neq, "time_blocks") else None
    if not blocks or len(blocks) < 4:
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
    return folds


def _nominal_score(model, base, folds):
    nominal = base.base_values(np.nan_to_num(np.asarray(model.nominal_parameters(),
                                                        dtype=float)))
    return float(np.mean([heldout_score(f, nominal) for f in folds]))


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
    folds = time_halves(neq)
    if primary not in ("ols", "wls") or model.config.elastic or folds is None:
        return None
    fit = wls if primary == "wls" else ols
    try:
        scores = [heldout_score(f, fit(_others(folds, k)).values)
                  for k, f in enumerate(folds)]
    except (DataError, ValueError, np.linalg.LinAlgError):   # a half too short
        return None
    nominal_score = _nominal_score(model, base, folds)
    score = float(np.mean(scores))
    if not (np.isfinite(score) and np.isfinite(nominal_score)):
        return None
    return {"estimator": primary, "heldout_nrmse": score, "nominal_nrmse": nominal_score,
            "folds": len(folds)}


def record_least_squares_check(result, check):
    """results.yaml ``settings.heldout_check`` (:func:`least_squares_check`, or the WLS
    scores of ``estimator: auto``) and the warning ``worse_than_nominal`` where the primary
    predicts the held-out identification data worse than the nominal model."""
    result.settings["heldout_check"] = dict(
        check, heldout_nrmse=float(f"{check['heldout_nrmse']:.4g}"),
        nominal_nrmse=float(f"{check['nominal_nrmse']:.4g}"),
        fold_kind=check.get("fold_kind", "halves in time"))
    if check["heldout_nrmse"] > VERDICT_MARGIN * check["nominal_nrmse"]:
        kind = FOLD_TEXT.get(check.get("fold_kind", "halves in time"),
                             "the two halves in time, each fitted on the other")
        result.diagnostics.append(Diagnostic(
            "worse_than_nominal", "warning",
            f"the {check['estimator']} estimate predicts held-out identification data "
            f"({kind}) worse than the nominal URDF does: mean NRMSE "
            f"{check['heldout_nrmse']:.3g} vs {check['nominal_nrmse']:.3g}; the data do not "
            f"support the identified parameters over the URDF's (too little excitation, a "
            f"recording too short, a payload, a wrong model?); the physically consistent "
            f"estimate (--estimator physical) keeps the URDF's where the data say little",
            check["estimator"]))


def record_prior_weight(result, gamma, table, nominal, folds, warn=True):
    """results.yaml ``settings.prior_weight`` and ``prior_weight_selection`` (folds, table of
    [gamma, held-out mean NRMSE], the nominal model's); with ``warn`` (the physically
    consistent estimate is the primary) the warning ``worse_than_nominal`` where it predicts
    the held-out identification data worse than the nominal model (the URDF's parameters,
    no friction)."""
    result.settings["prior_weight"] = gamma
    result.settings["prior_weight_selection"] = {
        "folds": folds, "table": [[g, float(f"{e:.4g}")] for g, e in table],
        "nominal": float(f"{nominal:.4g}")}
    score = dict((g, e) for g, e in table)[gamma]
    how = FOLD_TEXT.get(result.settings.get("prior_weight_folds"), FOLD_TEXT["recordings"])
    if warn and score > VERDICT_MARGIN * nominal:
        result.diagnostics.append(Diagnostic(
            "worse_than_nominal", "warning",
            f"the physically consistent estimate predicts held-out identification data "
            f"({folds} folds, {how}) worse than the nominal URDF does: mean NRMSE "
            f"{score:.3g} vs {nominal:.3g}; the data do not support the identified "
            f"parameters over the URDF's (too little excitation, a payload, a wrong "
            f"model?)", "physical"))


#: ``estimator: auto`` keeps the physically consistent estimate unless its held-out score
#: exceeds WLS's by more than this factor: on a tie the estimate that is a physical body
#: (positive-definite pseudo-inertias) and keeps the URDF's values where the data say
#: little; it also absorbs the optimism of the physical score, the best of the
#: :data:`PRIOR_WEIGHTS` on the same folds.
ESTIMATOR_TIE = 1.02

#: Error diagnostics of ``estimator: auto``'s WLS screen that concern WLS's own estimate (an
#: impossible sign, which the physically consistent estimate cannot have), not the data:
#: they do not stop the comparison (:func:`resolve_estimator`'s ``screen``).
ESTIMATE_SIGN_CODES = ("negative_rotor_inertia", "negative_mass")


def wls_sign_note(diagnostic):
    """The warning beside a physically consistent primary chosen by ``estimator: auto``
    where WLS's estimate had an impossible sign (an error ``diagnostic`` of
    :data:`ESTIMATE_SIGN_CODES`): the same code and subject, both readings named."""
    return Diagnostic(
        diagnostic.code, "warning",
        f"the wls estimate (not the primary): {diagnostic.message}; the physically "
        f"consistent estimate, which keeps it >= 0, predicts held-out identification data "
        f"better (estimator auto) - too little excitation reads so (a short run), and so "
        f"does a reversed joint or torque sign: if the run is long and rich, check that "
        f"joint's signs", diagnostic.subject)


#: How the folds of a held-out score were made (results.yaml ``fold_kind``) -> words.
FOLD_TEXT = {
    "recordings": "leave-one-recording-out",
    "halves": "two halves of the recording",
    "halves in time": "the two halves in time, each fitted on the other",
}


def _wls_heldout(folds):
    """Mean over the folds of :func:`heldout_score` of WLS fitted on the other folds."""
    return float(np.mean([heldout_score(f, wls(_fitted_part(_others(folds, k))).values)
                          for k, f in enumerate(folds)]))


def format_estimator_selection(selection):
    """One line about ``estimator: auto``'s choice (results.yaml
    ``settings.estimator_selection``, :func:`resolve_estimator`): the chosen estimator and
    the held-out scores, or why WLS without a comparison."""
    if "why" in selection:
        return f"estimator auto: wls, not compared ({selection['why']})"
    return (f"estimator auto: {selection['chosen']} (held-out mean NRMSE on the identification "
            f"data, {selection['folds']} folds, {FOLD_TEXT[selection['fold_kind']]}: "
            f"physical {selection['physical']:.4g} (prior weight "
            f"{selection['prior_weight']:g}), wls {selection['wls']:.4g}, nominal URDF "
            f"{selection['nominal']:.4g}; physical unless above {ESTIMATOR_TIE:g} x wls)")


def resolve_estimator(model, recordings, neq, settings, estimators=None, prior=None,
                      base=None, log=None, *, load, equations, screen=None):
    """The primary estimator and the physically consistent estimate's prior weight.

    ``estimator: auto`` (first among the estimators) chooses between ``wls`` and
    ``physical`` by their held-out score on the identification data only
    (:func:`heldout_score`, mean over the folds, each fold's rows scored by the estimate
    fitted on the other folds): the folds of the prior weight's cross-validation
    (:func:`fold_equations`: leave-one-recording-out, or the two halves of one recording)
    where every recording is in memory, else the two halves in time of the identification's
    own normal equations (:func:`time_halves`: streamed recordings, Dask). The physical
    estimate's score is that of its cross-validated prior weight (:func:`select_prior_weight`;
    a numeric ``prior_weight``: that weight), so the chosen physical estimate is the one
    ``estimator: physical`` gives. ``physical`` is chosen unless its score exceeds
    :data:`ESTIMATOR_TIE` x WLS's; the other of the two is computed too (an extra estimate).
    An elastic arm, no prior, data with an error diagnostic (``screen``: the result is
    refused anyway, and such data, degrees read as radians, left each SDP of the selection
    at the solver's iteration limit: 104 s CPU on a simulated Panda), fewer than 4 time
    blocks, a fold too short to fit or the SDP failing on every fold: ``wls``, and
    ``selection`` says why. Other primaries: as given, and the prior weight of
    :func:`resolve_prior_weight`.

    Parameters
    ----------
    recordings : list of Recording
    neq : RecordingEquations
        The identification's normal equations (rows as identification used them).
    settings : IdentificationSettings
        Resolved (numbers, not ``auto``, except ``estimator`` and ``prior_weight``).
    estimators : str or sequence of str, optional
        The estimators asked for (the first is the primary); default ``settings``'.
    load, equations : callable
        See :func:`resolve_prior_weight`.
    screen : callable, optional
        ``screen()`` -> the codes of the error diagnostics of the data (the engine's WLS
        result); any: no selection.

    Returns
    -------
    (names, options, chosen, selection)
        The estimators to compute (the primary first, ``auto`` resolved), the engine's
        ``options`` ({'prior_weight': gamma}), the prior weight's cross-validation
        (:func:`record_prior_weight`'s arguments) or None, and results.yaml
        ``settings.estimator_selection`` (None without ``auto``).

    Raises
    ------
    ConfigError
        ``auto`` given but not first.
    """
    names = ((estimators,) if isinstance(estimators, str) else tuple(estimators or ())) \
        or settings.estimators
    names = tuple(dict.fromkeys(names))
    if AUTO_ESTIMATOR not in names:
        options, chosen = resolve_prior_weight(model, recordings, settings, names, prior, base,
                                               log, load=load, equations=equations)
        return names, options, chosen, None
    if names[0] != AUTO_ESTIMATOR:
        raise ConfigError(f"estimator '{AUTO_ESTIMATOR}' chooses the primary estimate: give "
                          f"it first (got {list(names)})")
    rest = names[1:]
    wanted = getattr(settings, "prior_weight", 1.0)
    weights = PRIOR_WEIGHTS if isinstance(wanted, str) else (float(wanted),)
    why, folds, kind = None, None, None
    pri = None
    if model.config.elastic:
        why = "an elastic arm: the held-out comparison is made on rigid arms"
    else:
        pri = load(model, prior if prior is not None else settings.prior)
        if pri is None:
            why = "no prior (prior: none) to regularise the physically consistent estimate"
    if why is None and screen is not None:
        errors = screen()
        if errors:
            why = f"the data carry error diagnostic(s): {', '.join(dict.fromkeys(errors))}"
    if why is None:
        sets = [getattr(r, "dataset", None) for r in recordings]
        if sets and all(d is not None for d in sets):
            try:
                folds = fold_equations(model, sets, settings, base, equations,
                                       [getattr(r, "summary_cache", None) for r in recordings])
                kind = "recordings" if len(sets) > 1 else "halves"
            except (DataError, ValueError):       # a fold too short for the filter
                folds = None
        if folds is None:
            folds, kind = time_halves(neq), "halves in time"
        if folds is None:
            why = ("fewer than 4 time blocks of identification data: too short to hold a "
                   "part out")
    if why is None:
        try:
            gamma, table, nominal = select_prior_weight(model, base, pri, folds, weights)
            if gamma is None:
                why = "a fold too short to fit WLS on the others"
            else:
                wls_score = _wls_heldout(folds)
        except IdentificationError as exc:
            why = str(exc)
        except (DataError, ValueError, np.linalg.LinAlgError) as exc:
            why = f"a fold too short to fit WLS on the others ({exc})"
    if why is not None:
        selection = {"chosen": "wls", "why": why}
        if log:
            log(format_estimator_selection(selection))
        names = ("wls",) + tuple(e for e in rest if e != "wls")
        options, _ = resolve_prior_weight(model, recordings, settings, names, prior, base,
                                          log, load=load, equations=equations)
        return names, options, None, selection
    physical = dict((g, e) for g, e in table)[gamma]
    choice = ("physical" if not np.isfinite(wls_score) or physical <= ESTIMATOR_TIE * wls_score
              else "wls")
    other = "wls" if choice == "physical" else "physical"
    selection = {"chosen": choice, "wls": float(f"{wls_score:.4g}"),
                 "physical": float(f"{physical:.4g}"), "nominal": float(f"{nominal:.4g}"),
                 "prior_weight": float(gamma), "folds": len(folds), "fold_kind": kind,
                 "tie": ESTIMATOR_TIE}
    if log:
        log(format_estimator_selection(selection))
    names = (choice, other) + tuple(e for e in rest if e not in (choice, other))
    return names, {"prior_weight": float(gamma)}, (gamma, table, nominal, len(folds)), selection


def record_estimator_selection(result, selection):
    """results.yaml ``settings.estimator_selection`` (:func:`resolve_estimator`), the info
    diagnostic ``estimator_auto`` (the choice and the scores, or why WLS), and where WLS
    was chosen by its score, its held-out comparison with the nominal model
    (``settings.heldout_check``, the warning ``worse_than_nominal``: the same folds)."""
    result.settings["estimator_requested"] = AUTO_ESTIMATOR
    result.settings["estimator_selection"] = dict(selection)
    result.diagnostics.append(Diagnostic("estimator_auto", "info",
                                         format_estimator_selection(selection),
                                         selection["chosen"]))
    if selection["chosen"] == "wls" and "why" not in selection:
        record_least_squares_check(result, {
            "estimator": "wls", "heldout_nrmse": selection["wls"],
            "nominal_nrmse": selection["nominal"], "folds": selection["folds"],
            "fold_kind": selection["fold_kind"]})
