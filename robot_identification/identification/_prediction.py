"""Torque predicted by identified base parameters: the forward model that validation
(held-out data) and the pre-sliding selection (identification data) evaluate."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from robot_identification.regressor import (
    coulomb_sign, iter_regressor_blocks, nominal_load, rigid_regressor)


#: The plain predictor's Coulomb deadband [rad/s] (:func:`plain_coulomb`): fixed, the same
#: for every model and robot (twice the 1e-4 rad/s velocity resolution of the UR logs).
PLAIN_DEADBAND = 2e-4

#: What validation.yaml, the report and the benchmarks call the two predictors.
PREDICTORS = {
    "full": "the identification's Coulomb friction as the filtered measurement holds it: "
            "the ramp to the stop velocity or the pre-sliding (Dahl) state chosen on the "
            "identification data, evaluated on the recorded velocity and low-pass filtered "
            "like the torque",
    "plain": f"stateless: f_v v + (f_c + f_l |tau_0|) sign(v) [|v| > {PLAIN_DEADBAND:g} rad/s] "
             f"+ offset on the filtered velocity, Coulomb term not filtered",
}


def plain_coulomb(velocity, deadband=PLAIN_DEADBAND):
    """The plain predictor's Coulomb column: sign(v) where |v| > ``deadband``, else 0.

    Stateless and unfiltered, on the pre-processed (filtered) velocity (N, n) [rad/s]: what
    a short script predicts; every model compared under it gets the same column.
    """
    v = np.asarray(velocity, dtype=float)
    return np.sign(v) * (np.abs(v) > deadband)


#: Velocities below this magnitude count as rest when predicting [rad/s]: the Coulomb
#: term sign(dq) of a joint at rest is undetermined (stiction balances the load), and the
#: UR logs resolve velocity to 1e-4 rad/s, so quantisation noise would flip it.
REST_VELOCITY = 1e-3


def settings_from_results(model, doc):
    """The robot config's identification settings with the pre-processing actually used in
    identification (results.yaml ``settings``: ``cutoff_hz``, ``filter_order``,
    ``friction_deadband``, ``stop_velocity``), so that validation filters and predicts like
    identification did and never resolves an automatic setting on held-out data (the stop
    velocity, which only selects identification rows, is 0 when the file has none)."""
    s = model.config.identification
    got = (doc or {}).get("settings") or {}
    kw = {}
    if "cutoff_hz" in got:
        kw["cutoff_hz"] = None if got["cutoff_hz"] is None else float(got["cutoff_hz"])
    if isinstance(got.get("filter_order"), int):
        kw["filter_order"] = got["filter_order"]
    dead = got.get("friction_deadband")
    if isinstance(dead, list) and len(dead) == model.n:
        kw["friction_deadband"] = tuple(float(v) for v in dead)
    elif isinstance(dead, (int, float)):
        kw["friction_deadband"] = float(dead)
    stop = got.get("stop_velocity")
    kw["stop_velocity"] = (tuple(float(v) for v in stop)
                           if isinstance(stop, list) and len(stop) == model.n else 0.0)
    if isinstance(got.get("drop_reversals"), bool):
        kw["drop_reversals"] = got["drop_reversals"]
    pre, jit = got.get("friction_presliding"), got.get("position_jitter")
    kw["friction_presliding"] = (tuple(float(v) for v in pre) if isinstance(pre, list)
                                 and len(pre) == model.n else None)
    kw["position_jitter"] = (tuple(float(v) for v in jit) if isinstance(jit, list)
                             and len(jit) == model.n else None)
    return replace(s, **kw)


def predict_torque(model, base, beta, states, chunk=2048, rest_velocity=0.0,
                   friction_deadband=0.0, coulomb=None):
    """Torque predicted by base parameters, shape (N, rows).

    Parameters
    ----------
    states : mapping
        ``q, dq, ddq`` (N, n) [rad, rad/s, rad/s^2].
    beta : ndarray (p,)
    rest_velocity : float
        |dq| below this is set to 0 before evaluating the model [rad/s]
        (see :data:`REST_VELOCITY`; for results without a ``friction_deadband``).
    friction_deadband : float or ndarray (n,)
        Coulomb sign deadband [rad/s], as in identification
        (:func:`robot_identification.regressor.coulomb_sign`).
    coulomb : ndarray (N, n), optional
        Values of the Coulomb columns replacing coulomb_sign(v, friction_deadband)
        (:func:`filtered_coulomb`, :func:`plain_coulomb`); with load-dependent Coulomb
        friction the load column f_l |tau_0| follows the same column.
    """
    return _predict_with_scale(model, base, beta, states, chunk, rest_velocity,
                               friction_deadband, coulomb)[0]


def _predict_with_scale(model, base, beta, states, chunk=2048, rest_velocity=0.0,
                        friction_deadband=0.0, coulomb=None):
    """:func:`predict_torque` and, where ``coulomb`` is given, the Coulomb level it used,
    as :func:`coulomb_scale` gives it ((N, n) with load-dependent friction, else (n,); None
    without ``coulomb``): the load f_l |tau_0| from the same regressor pass instead of a
    second one (issue #29)."""
    out, scales = [], []
    st = dict(states)
    if rest_velocity > 0:
        for key in ("dq", "dtheta"):
            if key in st:
                st[key] = np.where(np.abs(st[key]) < rest_velocity, 0.0, st[key])
    st.setdefault("tau", np.zeros_like(st["q"]))
    n = model.n
    rows = n if model.config.elastic else 0
    fc = coulomb_coefficients(model, base, beta) if coulomb is not None else None
    fl = load_coefficients(model, base, beta) if coulomb is not None else None
    v_all = st["dtheta" if model.config.elastic else "dq"]
    # a rigid arm's Coulomb level with load: the base columns and the URDF torque that
    # scaled the load columns from one regressor pass (its full matrix a temporary; the
    # same numbers as base.project(Y) and nominal_load(Y), issue #29)
    with_load = coulomb is not None and np.any(fl) and not model.config.elastic
    blocks = (_rigid_base_blocks(model, base, st, chunk, friction_deadband) if with_load
              else ((start, base.project(Y), None) for start, Y, _ in iter_regressor_blocks(
                  model, st, chunk, friction_deadband=friction_deadband)))
    for start, W, tau0 in blocks:
        sl = slice(start, start + W.shape[0])
        block = W @ beta
        if coulomb is not None:
            scale = fc
            if np.any(fl):
                scale = fc + fl * np.abs(tau0)
                scales.append(scale)
            old = coulomb_sign(v_all[sl], friction_deadband)
            block[:, rows:rows + n] += (coulomb[sl] - old) * scale
        out.append(block)
    if coulomb is None:
        scale = None
    elif not np.any(fl):
        scale = fc
    else:
        scale = np.concatenate(scales, axis=0)
    return np.concatenate(out, axis=0), scale


def _rigid_base_blocks(model, base, states, chunk, friction_deadband):
    """``(start, W, tau_0)`` per block of ``chunk`` samples of a rigid arm with
    load-dependent Coulomb friction among its base columns: W = base.project(Y) and tau_0
    = nominal_load(Y) of the blocks of :func:`iter_regressor_blocks` (Y its regressor)."""
    N = np.asarray(states["q"]).shape[0]
    for s in range(0, N, chunk):
        sl = slice(s, min(s + chunk, N))
        W, tau0 = rigid_regressor(model, states["q"][sl], states["dq"][sl], states["ddq"][sl],
                                  friction_deadband, columns=base.independent,
                                  return_load=True)
        yield s, W, tau0


def _per_joint_base_parameter(model, base, beta, suffix):
    """Per joint the base parameter ``beta`` gives ``<joint>.<suffix>``, shape (n,); 0 where
    the model has no such parameter or it is merged with other columns (not independent)."""
    index = {int(k): b for b, k in enumerate(base.independent)}
    names = list(model.parameter_names)
    out = np.zeros(model.n)
    for j, joint in enumerate(model.joint_names):
        name = f"{joint}.{suffix}"
        if name in names and names.index(name) in index:
            out[j] = beta[index[names.index(name)]]
    return out


def coulomb_coefficients(model, base, beta):
    """Per joint the base parameter multiplying its Coulomb column, shape (n,): f_c where
    the column is a base column of its own, else 0 (no Coulomb term, or one merged with
    other columns, which a replacement column cannot change)."""
    return _per_joint_base_parameter(model, base, beta, "coulomb")


def load_coefficients(model, base, beta):
    """Per joint the base parameter multiplying its load-dependent Coulomb column f_l
    (``friction.load_dependent``), shape (n,); 0 without the term (or where it is merged)."""
    return _per_joint_base_parameter(model, base, beta, "coulomb_load")


def coulomb_scale(model, base, beta, states):
    """The Coulomb level per sample and joint, f_c + f_l |tau_0(q, dq, ddq)| (N, n) [N*m],
    or f_c (n,) without load-dependent friction: what multiplies a replaced Coulomb column."""
    fc = coulomb_coefficients(model, base, beta)
    fl = load_coefficients(model, base, beta)
    if not np.any(fl):
        return fc
    Y = rigid_regressor(model, states["q"], states["dq"], states["ddq"])
    return fc + fl * np.abs(nominal_load(model, Y))


def torque_errors(measured, predicted, names):
    """Per-joint RMS error [N*m] and NRMSE of predicted vs measured torque (N, n)."""
    err = predicted - measured
    rms = np.sqrt(np.mean(err ** 2, axis=0))
    ref = np.sqrt(np.mean(measured ** 2, axis=0))
    nrmse = rms / np.maximum(ref, 1e-12)
    joints = [{"name": nm, "rms": float(r), "nrmse": float(e)}
              for nm, r, e in zip(names, rms, nrmse)]
    return {"joints": joints, "nrmse_mean": float(np.mean(nrmse))}
