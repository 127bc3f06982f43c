"""Automatic stop velocity: the velocity below which a joint's friction stops following
Coulomb's law, chosen on the identification data.

Coulomb friction ``f_c sign(v)`` holds while a joint slides. Near rest a real drive sticks,
creeps or is in its pre-sliding regime (stiction, Stribeck, Dahl; Szabó & Gincsainé, Sec. 2),
and MuJoCo's ``frictionloss`` is a soft constraint under which the joint creeps: there the
friction torque is anywhere in [-f_c, f_c], and rows fitted with ``f_c sign(v)`` bias every
parameter (a held-out Kinova Jaco 6-dof arm simulated on MuJoCo, no noise: torque-weighted
parameter error 0.106 with the stop velocity at 2 % of the velocity RMS, 7e-4 at 0.02 rad/s;
the selection below: 5e-6).
How wide that band is depends on the drive (or the engine), not on the motion, so
``stop_velocity: auto`` is chosen from the data: the equations of the identification pass
are accumulated for the automatic stop velocity (:data:`~robot_identification.
identification._auto.STOP_VELOCITY_FRACTION` x the velocity RMS) and for
:data:`STOP_VELOCITY_FACTORS` times it, in the identification's pass (on every
:data:`SELECTION_DECIMATE`-th sample; each candidate as the automatic one's equations less
the rows it drops). The row sets are nested (a higher stop velocity drops
more rows), so every candidate's least-squares estimate can be scored on the rows all of
them keep, cross-validated over consecutive stretches of the data: the smallest factor
for all joints whose estimate fits those rows within :data:`STOP_SELECTION_TOLERANCE` of the
best, then per joint the smallest factor that keeps that (a joint's stop rows are its own
row group, so a per-joint choice is a sum of the candidates' per-group sums). The chosen
stop velocity applies to the fit's rows (``settings.fit_stop_velocity`` in results.yaml),
without a second pass: the same pass accumulates, at full rate and from the same regressor
blocks, the rows each candidate drops that the automatic one keeps (few rows;
:class:`~robot_identification.identification._equations.StopDifference`), and the chosen
equations are the automatic one's less those, per joint
(:meth:`~robot_identification.identification._equations.RecordingEquations.with_stop_choice`);
the prediction's Coulomb ramp keeps the
automatic one (``settings.stop_velocity``): on the real UR10e a raised ramp predicted the
other identification run far worse (docs/diagnostics.md). Where Coulomb's law holds down
to the automatic value the candidates' estimates agree and the automatic value stays;
where rows near rest are not Coulomb friction the estimates that keep them are biased and
fit the sliding rows worse.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from robot_identification.diagnostics import Diagnostic
from robot_identification.identifiability import DEPENDENCY_TOLERANCE

#: Candidate stop velocities, as multiples of the automatic one (which is always a candidate).
STOP_VELOCITY_FACTORS = (3.0, 10.0)
#: A candidate is considered only if every base column keeps at least this share of the
#: independent information it has with the automatic stop velocity (fewer rows near rest
#: must not leave a parameter unidentified, e.g. a Coulomb level seen only at low speed).
IDENTIFIABILITY_SHARE = 0.1
#: A candidate is chosen when its estimate's cross-validated weighted residual on the rows
#: every candidate keeps is within this share above the best candidate's.
STOP_SELECTION_TOLERANCE = 0.05
#: The candidates' equations for the selection are accumulated on every this-many-th sample of
#: the identification's (a filtered signal, so little is lost; the selection then costs about
#: 1 / this of a regressor pass's accumulation: the automatic stop velocity's equations, the
#: others as those less the rows they drop); a raised stop velocity's full equations are the
#: automatic one's less the rows it drops, accumulated at full rate in the same pass.
SELECTION_DECIMATE = 4
#: Consecutive stretches of the data the selection cross-validates over.
SELECTION_FOLDS = 4


def stop_velocity_candidates(model, requested, resolved):
    """Settings with larger stop velocities to accumulate beside ``resolved``.

    Parameters
    ----------
    requested : IdentificationSettings
        The settings as given (``stop_velocity: 'auto'`` turns the selection on).
    resolved : IdentificationSettings
        The same with ``auto`` resolved (``stop_velocity`` per joint [rad/s]).

    Returns
    -------
    list of IdentificationSettings
        One per :data:`STOP_VELOCITY_FACTORS` (``stop_velocity`` scaled), or ``[]`` when the
        stop velocity was given, rows near stops are not dropped (``drop_reversals: false``),
        the model has no Coulomb friction, the strategy is not ``butterworth`` or the data
        are not filtered.
    """
    if (not isinstance(requested.stop_velocity, str) or not resolved.drop_reversals
            or "coulomb" not in model.drive_parameter_keys()
            or resolved.preprocessing != "butterworth" or resolved.cutoff_hz is None):
        return []
    stop = np.broadcast_to(np.asarray(resolved.stop_velocity, dtype=float), (model.n,))
    if not np.any(stop > 0):
        return []
    return [replace(resolved, stop_velocity=tuple(float(f"{f * v:.3g}") for v in stop))
            for f in STOP_VELOCITY_FACTORS]


def _least_squares(G, b):
    """Minimum-norm solution of G x = b on column-equilibrated normal equations. Not
    :func:`~robot_identification.estimation.solve_gram`, which refuses a zero column: the
    row groups are weighted by their inverse mean squared torque, so an elastic arm's link
    rows (left-hand side 0) weigh 0 and the columns only they hold are zero here (36 of 60
    on the elastic Kinova of docs/diagnostics.md). The score then judges the motor rows,
    the ones the stop velocity acts on; those columns stay 0."""
    d = np.sqrt(np.clip(np.diag(G), 0.0, None))
    d[d == 0] = 1.0
    x, *_ = np.linalg.lstsq(G / d[:, None] / d[None, :], b / d, rcond=1e-10)
    return x / d


def _independent_share(neq):
    """Per base column, the share of its (normalised) regressor column that the others do
    not explain: 1 / diag((D^-1 G D^-1)^-1), G = W^T W summed over the row groups (0 where
    the columns are dependent)."""
    G = np.sum(neq.G, axis=0)
    d = np.sqrt(np.clip(np.diag(G), 0.0, None))
    if np.any(d <= 1e-12 * max(d.max(), 1e-300)):
        return np.zeros(len(d))
    Gn = G / d[:, None] / d[None, :]
    w, V = np.linalg.eigh(Gn)
    if w[0] <= 1e-14 * w[-1]:
        return np.zeros(len(d))
    return 1.0 / np.einsum("ij,j,ij->i", V, 1.0 / w, V)


def _usable(equations):
    """How many candidates, from the first, keep every base parameter about as well
    identified as the first: each column's independent share at least
    :data:`IDENTIFIABILITY_SHARE` of the first candidate's (its standard deviation grows by
    at most 1 / sqrt of that for the same noise) and above the rank test's tolerance."""
    first = _independent_share(equations[0])
    for i, neq in enumerate(equations[1:], start=1):
        share = _independent_share(neq)
        if np.any(share < IDENTIFIABILITY_SHARE * first) or np.any(
                share <= DEPENDENCY_TOLERANCE ** 2):
            return i
    return len(equations)


def _folds(neq, n_folds):
    """The time blocks of ``neq`` in ``n_folds`` consecutive groups: list of
    ``(G, b, c, count)`` (None without time blocks)."""
    blocks = neq.time_blocks() if hasattr(neq, "time_blocks") else None
    if not blocks or len(blocks) < 2:
        return None
    groups = np.array_split(np.arange(len(blocks)), min(n_folds, len(blocks)))
    return [tuple(sum(blocks[i][k] for i in g) for k in range(4)) for g in groups]


def select_stop_velocity(equations, settings):
    """Choose among candidate stop velocities (see the module docstring).

    Parameters
    ----------
    equations : list of RecordingEquations
        One per candidate, in increasing stop velocity (nested row sets), per row group
        ``G`` (g, p, p), ``b`` (g, p), ``c`` (g,) [sum of y^2], ``count`` (g,), with their
        time blocks. Candidates from the first that loses identifiability on
        (:data:`IDENTIFIABILITY_SHARE`) are not considered.
    settings : list of IdentificationSettings
        The candidates' settings, in the same order.

    Returns
    -------
    index : int
        The largest factor chosen for any joint (0: the automatic stop velocity stays).
    record : dict
        ``candidates`` (stop velocities per joint [rad/s]), ``scores`` (each factor for all
        joints: its cross-validated weighted mean squared residual on the rows every
        candidate keeps, relative to the best), ``rows`` (rows each candidate keeps),
        ``folds``, ``chosen`` (index), ``per_joint`` (each joint's candidate),
        ``score_gain`` (the automatic stop velocity's score / the chosen one's); only the
        candidates considered.

    Scoring is cross-validated over :data:`SELECTION_FOLDS` consecutive stretches of the
    data (each candidate fitted without a stretch, scored on the stretch's common rows), so
    that a candidate fitted on fewer rows gains nothing from fitting its own score rows.
    Each row group (joint) is weighted by the inverse of its mean squared torque on the
    common rows, so that joints of every torque scale count; the least-squares estimates
    are minimum-norm solutions. Without time blocks (sums added without them) the
    automatic stop velocity stays.
    """
    usable = _usable(equations)
    equations, settings = equations[:usable], settings[:usable]
    last = equations[-1]
    count = np.asarray(last.count, dtype=float)
    ms = np.where(count > 0, last.c / np.maximum(count, 1.0), 0.0)
    weights = np.where(ms > 0, 1.0 / np.where(ms > 0, ms, 1.0), 0.0)
    folds = [_folds(neq, SELECTION_FOLDS) for neq in equations]
    stops = [np.atleast_1d(np.asarray(st.stop_velocity, dtype=float)) for st in settings]
    n = max(len(v) for v in stops)
    stops = [np.broadcast_to(v, (n,)) for v in stops]
    record = {"candidates": [v.tolist() for v in stops],
              "rows": [int(np.sum(neq.count)) for neq in equations]}
    if len(equations) < 2 or any(f is None or len(f) != len(folds[0]) for f in folds):
        return 0, dict(record, scores=[1.0] * len(equations), folds=0, chosen=0,
                       per_joint=[0] * n)
    groups = len(count)
    # the row group of joint j whose friction rows the stop velocity drops: rigid arms j,
    # elastic arms the motor row n + j (their link rows are never dropped)
    group_of = np.arange(n) + (groups - n)

    def score(choice):
        """Cross-validated weighted residual with candidate choice[j] for joint j's rows."""
        src = np.zeros(groups, dtype=int)
        src[group_of] = choice
        G = np.stack([equations[src[g]].G[g] for g in range(groups)])
        b = np.stack([equations[src[g]].b[g] for g in range(groups)])
        total = 0.0
        for f, (Gk, bk, ck, _) in enumerate(folds[-1]):
            Gf = np.stack([folds[src[g]][f][0][g] for g in range(groups)])
            bf = np.stack([folds[src[g]][f][1][g] for g in range(groups)])
            x = _least_squares(np.einsum("g,gij->ij", weights, G - Gf),
                               weights @ (b - bf))
            total += max(float(weights @ ck) - 2.0 * x @ (weights @ bk)
                         + x @ np.einsum("g,gij->ij", weights, Gk) @ x, 0.0)
        return total

    uniform = np.array([score(np.full(n, i)) for i in range(len(equations))])
    limit = (1.0 + STOP_SELECTION_TOLERANCE) * uniform.min()
    start = int(np.flatnonzero(uniform <= limit)[0])
    choice = np.full(n, start)        # the same factor for every joint, then per joint the
    current = uniform[start]          # smallest that keeps the score within the tolerance
    for j in range(n):
        for i in range(choice[j]):
            c = choice.copy()
            c[j] = i
            v = score(c)
            if v <= limit:
                choice, current = c, v
                break
    best = uniform.min()
    rel = uniform / best if best > 0 else np.where(uniform > 0, np.inf, 1.0)
    index = int(choice.max())
    return index, dict(record, scores=[float(v) for v in rel], folds=len(folds[0]),
                       chosen=index, per_joint=[int(c) for c in choice],
                       score_gain=float(uniform[0] / current) if current > 0 else 1.0)


def stop_selection_diagnostics(record, joint_names=None):
    """An info note when a stop velocity above the automatic one was chosen (naming the
    joints by ``joint_names`` when given)."""
    per = record.get("per_joint") or []
    raised = [j for j, c in enumerate(per) if c]
    if not raised:
        return []
    auto, cand = record["candidates"][0], record["candidates"]
    name = (lambda j: str(joint_names[j])) if joint_names is not None else (
        lambda j: f"joint {j + 1}")
    parts = ", ".join(f"{name(j)}: {auto[j]:.3g} -> {cand[per[j]][j]:.3g}" for j in raised)
    return [Diagnostic(
        "stop_velocity_raised", "info",
        f"friction near rest does not follow Coulomb's law (sticking, creep or pre-sliding): "
        f"stop_velocity raised for the fit on {len(raised)} joint(s) ({parts} rad/s); with "
        f"the automatic one the fit predicted the sliding rows "
        f"{record.get('score_gain', 1.0):.3g}x worse (docs/diagnostics.md)", "stop_velocity")]
