"""The free refit of the reversal and swap readings (robot_identification.diagnostics._refit)
against a straightforward reference: every reading's held-out score by its own
``np.linalg.lstsq(..., rcond=1e-10)`` of the full weighted regressor (all standard parameters),
as the module computed it before it shared factorisations (issue #29). On simulated data of
several arms, as recorded, with one joint reversed, one torque sign flipped and two joints'
columns swapped: the same readings, scores equal to rounding (relative 1e-8), the same order
wherever the scores differ by more than that, and the same findings of the whole nominal check
(code, severity, subject, message) with either implementation.
"""
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from robot_identification.diagnostics import _nominal, _refit
from robot_identification.diagnostics import recording_summary
from robot_identification.model import load_robot
from robot_identification.regressor import rigid_regressor
from robot_identification.simulation import simulate

REPO = Path(__file__).resolve().parents[1]
ARMS = {"puma560": {"name": "puma560"}, "arm7": {"config": REPO / "test" / "arm7.yaml"},
        "szabo_3dof": {"name": "szabo_3dof"}}
RTOL = 1e-8


def _reference_score(Y, tau, keep):
    N, n, P = Y.shape
    w = 1.0 / np.maximum(np.std(tau, axis=0), 1e-12)
    A = (Y * w[None, :, None]).reshape(N * n, P)
    b = (tau * w).reshape(N * n)
    rows = keep.reshape(-1)
    half = (np.arange(N) * _refit.BLOCKS // max(N, 1)) % 2 == 1
    res, cnt = np.zeros(n), np.zeros(n)
    for test in (half, ~half):
        fit = np.repeat(~test, n) & rows
        if fit.sum() < P:
            return np.nan
        coef = np.linalg.lstsq(A[fit], b[fit], rcond=1e-10)[0]
        r = (b - A @ coef).reshape(N, n)
        m = keep & test[:, None]
        res += np.sum(np.where(m, r, 0.0) ** 2, axis=0)
        cnt += m.sum(axis=0)
    return float(np.sum(res / np.maximum(cnt, 1)))


def reference_free_readings(model, st, live=None, decided=None):
    """free_readings as first written (c8c1fef): one full least squares per reading (every
    reading scored whatever ``decided`` says)."""
    q, dq, ddq, tau = st["q"], st["dq"], st["ddq"], st["tau"]
    N, n = q.shape
    live = np.ones(n, dtype=bool) if live is None else np.asarray(live, dtype=bool)
    dt = st["dt"] * max(1.0, float(np.median(np.diff(st["idx"]))))
    keep = _refit._kept_rows(dq, dt, st["fc"]) & live[None, :]
    Y0 = rigid_regressor(model, q, dq, ddq)
    if keep.sum() < 2 * Y0.shape[2]:
        return None
    rec = _reference_score(Y0, tau, keep)
    out = []
    for k in range(n):
        if not live[k]:
            continue
        s = np.ones(n)
        s[k] = -1.0
        out.append((_reference_score(rigid_regressor(model, q * s, dq * s, ddq * s), tau * s,
                                     _refit._kept_rows(dq * s, dt, st["fc"]) & live[None, :]),
                    "direction", (k,)))
        out.append((_reference_score(Y0, tau * s, keep), "torque sign", (k,)))
    for k in range(n):
        for m in range(k + 1, n):
            if not (live[k] and live[m]):
                continue
            p = np.arange(n)
            p[[k, m]] = p[[m, k]]
            out.append((_reference_score(rigid_regressor(model, q[:, p], dq[:, p], ddq[:, p]),
                                         tau[:, p], keep[:, p]), "columns swapped", (k, m)))
            out.append((_reference_score(Y0, tau[:, p], keep), "torque columns swapped",
                        (k, m)))
    out = [r for r in out if np.isfinite(r[0])]
    out.sort(key=lambda r: r[0])
    if not np.isfinite(rec) or min([rec] + [r[0] for r in out]) > (
            _refit.FREE_EXPLAINED * live.sum()):
        return None
    return rec, out


_MODELS, _DATA = {}, {}


def _model(arm):
    if arm not in _MODELS:
        _MODELS[arm] = load_robot(**ARMS[arm])
    return _MODELS[arm]


def _data(arm):
    if arm not in _DATA:
        _DATA[arm] = simulate(_model(arm), seed=3, snr_db=40.0, derivatives=True)
    return _DATA[arm]


def _variant(ds, kind, k, m):
    n = ds.q.shape[1]
    if kind == "reversed":
        s = np.ones(n)
        s[k] = -1.0
        return replace(ds, **{a: getattr(ds, a) * s for a in ("q", "dq", "ddq", "tau")
                              if getattr(ds, a) is not None})
    if kind == "torque sign":
        s = np.ones(n)
        s[k] = -1.0
        return replace(ds, tau=ds.tau * s)
    if kind == "swapped":
        p = np.arange(n)
        p[[k, m]] = p[[m, k]]
        return replace(ds, **{a: getattr(ds, a)[:, p] for a in ("q", "dq", "ddq", "tau")
                              if getattr(ds, a) is not None})
    return ds


def _states(model, ds):
    band = recording_summary(model, ds)["band_hz"]
    return _nominal._states(model, ds.t, ds.q, ds.tau, ds.dq, _refit.FREE_BAND * band)


def _compare(got, want):
    assert (got is None) == (want is None)
    if want is None:
        return
    assert got[0] == pytest.approx(want[0], rel=RTOL)
    gd = {(kd, g): sc for sc, kd, g in got[1]}
    wd = {(kd, g): sc for sc, kd, g in want[1]}
    assert gd.keys() == wd.keys()
    for key, sc in wd.items():
        assert gd[key] == pytest.approx(sc, rel=RTOL), key
    order = [(kd, g) for _, kd, g in got[1]]
    for i, (sc, kd, g) in enumerate(want[1][:-1]):
        if want[1][i + 1][0] > sc * (1 + 4 * RTOL):     # separated: the same order
            assert order.index((kd, g)) < order.index(want[1][i + 1][1:]), (kd, g)


@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(arm=st.sampled_from(sorted(ARMS)),
       kind=st.sampled_from(["recorded", "reversed", "torque sign", "swapped"]),
       joint=st.integers(0, 6), dead=st.booleans())
def test_fast_free_refit_equals_the_reference(arm, kind, joint, dead):
    model = _model(arm)
    n = model.n
    k = joint % n
    m = k + 1 if k < n - 1 else k - 1
    ds = _variant(_data(arm), kind, min(k, m), max(k, m))
    state = _states(model, ds)
    live = np.ones(n, dtype=bool)
    if dead:
        live[(k + 2) % n] = False           # a dead channel is left out of every reading
    _compare(_refit.free_readings(model, state, live),
             reference_free_readings(model, state, live))


@pytest.mark.parametrize("arm,kind", [("puma560", "reversed"), ("arm7", "swapped"),
                                      ("szabo_3dof", "torque sign"), ("puma560", "recorded")])
def test_findings_of_the_nominal_check_are_those_of_the_reference(arm, kind, monkeypatch):
    model = _model(arm)
    ds = _variant(_data(arm), kind, 1, 2)
    band = recording_summary(model, ds)["band_hz"]

    def findings():
        out, _ = _nominal.check_against_nominal(model, ds.t, ds.q, ds.tau, ds.dq, band)
        return [(d.code, d.severity, d.subject, d.message) for d in out]

    fast = findings()
    monkeypatch.setattr(_nominal, "free_readings", reference_free_readings)
    assert fast == findings()


@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(arm=st.sampled_from(sorted(ARMS)),
       kind=st.sampled_from(["recorded", "reversed", "torque sign", "swapped"]),
       joint=st.integers(0, 6), ratio=st.sampled_from([0.0, 0.5, 4.0, 50.0]))
def test_column_swaps_left_out_only_above_the_decided_ratio(arm, kind, joint, ratio):
    """free_readings(decided=(x, groups)) (issue #29) scores every reading the reference
    scores except column swaps whose reference score is above x times the recorded one (and
    above the FREE_EXPLAINED limit where the recorded score is not below it), never a pair
    of ``groups``; the scored ones equal the reference's to rounding, and the lower bound
    that left a swap out is below its reference score."""
    model = _model(arm)
    n = model.n
    k = joint % n
    m = k + 1 if k < n - 1 else k - 1
    state = _states(model, _variant(_data(arm), kind, min(k, m), max(k, m)))
    want = reference_free_readings(model, state)
    keep_pair = (0, 1)
    got = _refit.free_readings(model, state, decided=(ratio, {keep_pair}))
    if want is None:
        assert got is None
        return
    rec, readings = want
    assert got[0] == pytest.approx(rec, rel=RTOL)
    gd = {(kd, g): sc for sc, kd, g in got[1]}
    limit = _refit.FREE_EXPLAINED * n
    for sc, kd, g in readings:
        if (kd, g) in gd:
            assert gd[kd, g] == pytest.approx(sc, rel=RTOL), (kd, g)
            continue
        assert kd == "columns swapped" and g != keep_pair, (kd, g)
        assert sc > ratio * rec and (rec <= limit or sc > limit), (g, sc, rec)
    # the bounds themselves: below the score of every swap, pruned or not
    N = state["q"].shape[0]
    dt = state["dt"] * max(1.0, float(np.median(np.diff(state["idx"]))))
    keep = _refit._kept_rows(state["dq"], dt, state["fc"])
    half = (np.arange(N) * _refit.BLOCKS // max(N, 1)) % 2 == 1
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]
    swaps = []
    for a, b in pairs:
        p = np.arange(n)
        p[[a, b]] = p[[b, a]]
        swaps.append(tuple(x[:, p] for x in (state["q"], state["dq"], state["ddq"],
                                              state["tau"], keep)))
    ref = {(kd, g): sc for sc, kd, g in readings}
    for g, (bound, slack) in zip(pairs, _refit._score_bounds(model, swaps, half,
                                                             _refit._to_basis(model))):
        if ("columns swapped", g) in ref:
            assert 0 <= bound - slack <= ref["columns swapped", g] * (1 + RTOL), g


def _kept_rows_by_slices(dq, dt, fc):
    """_kept_rows as first written: one slice left out per velocity sign change."""
    win = int(np.ceil(0.6 / (fc * dt)))
    keep = np.abs(dq) >= _refit.SLOW * np.sqrt(np.mean(dq ** 2, axis=0))
    for k in range(dq.shape[1]):
        for i in np.flatnonzero(np.diff(np.sign(dq[:, k])) != 0):
            keep[max(0, i - win): i + win + 2, k] = False
    return keep


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 80), st.integers(1, 3), st.floats(0.3, 120.0), st.integers(0, 2 ** 31),
       st.booleans())
def test_kept_rows_are_those_of_the_slices(N, n, fc, seed, smooth):
    """_kept_rows (cumulative counts of the sign changes, issue #29) leaves out exactly the
    rows the per-change slices left out, at the ends of the recording too."""
    rng = np.random.default_rng(seed)
    dq = rng.normal(size=(N, n)) * (rng.random((N, n)) > 0.2)
    if smooth:
        dq = np.cumsum(dq, axis=0)
    np.testing.assert_array_equal(_refit._kept_rows(dq, 0.01, fc),
                                  _kept_rows_by_slices(dq, 0.01, fc))


def test_the_structural_basis_reaches_every_regressor_row():
    """Y = (Y V) V^T on states far from the random ones the basis was found on (the fast
    path's fits live in V's coordinates)."""
    for arm in ARMS:
        model = _model(arm)
        V = _refit._basis(model)
        assert V is not None and V.shape[1] < model.n_parameters
        ds = _data(arm)
        Y = rigid_regressor(model, ds.q, 3 * ds.dq, 5 * ds.ddq).reshape(-1, model.n_parameters)
        assert np.linalg.norm(Y - (Y @ V) @ V.T) <= 1e-12 * np.linalg.norm(Y)


def test_the_column_subset_spans_the_basis():
    """Y[..., S] M = Y V on states far from the random ones S was found on (the fast path's
    fits run on the regressor's S columns, computed alone), with M well conditioned, and
    _reduced gives exactly the regressor's S columns."""
    for arm in ARMS:
        model = _model(arm)
        S, M = _refit._columns(model)
        V = _refit._basis(model)
        assert len(S) == V.shape[1] and np.linalg.cond(M) <= _refit.SUBSET_COND
        ds = _data(arm)
        Y = rigid_regressor(model, ds.q, 3 * ds.dq, 5 * ds.ddq).reshape(-1, model.n_parameters)
        assert np.linalg.norm(Y[:, S] @ M - Y @ V) <= 1e-12 * np.linalg.norm(Y)
        got = _refit._reduced(model, ds.q, 3 * ds.dq, 5 * ds.ddq).reshape(-1, len(S))
        np.testing.assert_array_equal(got, Y[:, S])


@pytest.mark.parametrize("cond", [1e0, 1e4, 1e8, 1e9, 3e9, 1e10, 1e13])
@pytest.mark.parametrize("rows", [0, 40, 64, 300])
def test_least_squares_through_dgeqrf_equals_lstsq(cond, rows):
    """_triangle (LAPACK dgeqrf called directly) gives numpy's triangular factor, and
    _least_squares (the cheap conditioning bound before the SVD) lstsq's solution with
    rcond=RCOND: the bound never takes the triangular solve where the singular values say
    otherwise, on matrices from well conditioned to past the cut-off."""
    rng = np.random.default_rng(int(np.log10(cond)) * 1000 + rows)
    r = 20
    u, _ = np.linalg.qr(rng.standard_normal((max(rows, r), r)))
    v, _ = np.linalg.qr(rng.standard_normal((r, r)))
    A = (u * np.geomspace(1.0, 1.0 / cond, r)) @ v.T
    X = np.concatenate([A, rng.standard_normal((A.shape[0], 2))], axis=1)[:rows]
    R = _refit._triangle(X, r)
    want = np.linalg.qr(X, mode="r")[: min(rows, r)]
    assert R.shape == want.shape
    np.testing.assert_allclose(R, want, rtol=0, atol=1e-13 * max(np.abs(want).max(initial=0), 1))
    if rows >= r:
        T = R[:, :r]
        s = np.linalg.svd(T, compute_uv=False)
        if _refit._well_conditioned(T):
            assert s[-1] > 2 * _refit.RCOND * s[0]
        if s[-1] > 4 * _refit.RCOND * s[0] and cond <= 1e8:
            assert _refit._well_conditioned(T)     # the cheap bound is not overly strict
        if rows > r:
            got = _refit._least_squares(X, r)
            ref = np.linalg.lstsq(X[:, :r], X[:, r:], rcond=_refit.RCOND)[0]
            pred, pref = X[:, :r] @ got, X[:, :r] @ ref
            # the fitted values agree to rounding x the condition number
            tol = (1e-9 + 1e-15 * min(cond, 1e10)) * np.abs(pref).max()
            np.testing.assert_allclose(pred, pref, rtol=0, atol=tol)


@pytest.mark.parametrize("cond", [1e0, 1e2, 1e4, 1e6, 1e9, 1e13])
@pytest.mark.parametrize("scaled", [False, True])
def test_normal_equations_only_where_well_conditioned(cond, scaled):
    """_fit_solve (the Jacobi-scaled normal equations with one refinement step) gives the
    fitted values of lstsq with rcond=RCOND, and takes the normal equations only where the
    scaled condition number is at most GRAM_COND (else _least_squares): badly scaled but
    well conditioned columns (``scaled``: columns multiplied by 1e-3..1e3) keep them where
    the unscaled condition number is also clearly below the cut-off."""
    rng = np.random.default_rng(int(np.log10(cond)) + 100 * scaled)
    rows, r = 300, 20
    u, _ = np.linalg.qr(rng.standard_normal((rows, r)))
    v, _ = np.linalg.qr(rng.standard_normal((r, r)))
    A = (u * np.geomspace(1.0, 1.0 / cond, r)) @ v.T
    if scaled:
        A = A * np.geomspace(1e-3, 1e3, r)
    X = np.concatenate([A, A @ rng.standard_normal((r, 2)) + rng.standard_normal((rows, 2))],
                       axis=1)
    factor = _refit._gram_factor(X[:, :r].T @ X[:, :r])
    scaled_cond = np.linalg.cond(A / np.linalg.norm(A, axis=0))
    if factor is not None:
        assert scaled_cond <= _refit.GRAM_COND
        assert np.linalg.cond(A) < 0.25 / _refit.RCOND
    if scaled_cond <= 1e2 and np.linalg.cond(A) <= 1e8:
        assert factor is not None          # the bound is not overly strict
    got = _refit._fit_solve(X, r)
    ref = np.linalg.lstsq(X[:, :r], X[:, r:], rcond=_refit.RCOND)[0]
    pred, pref = X[:, :r] @ got, X[:, :r] @ ref
    tol = (1e-12 + 1e-15 * min(np.linalg.cond(A), 1e10)) * np.abs(pref).max()
    np.testing.assert_allclose(pred, pref, rtol=0, atol=tol)


@pytest.mark.parametrize("cond", [1e0, 1e4, 1e9, 1e13])
def test_fits_on_the_column_subset_are_those_in_the_basis(cond):
    """_fit_solve with the map M of _columns (X[:, :r] M: the coordinates of _basis) gives
    the fitted values of lstsq in those coordinates, on the normal equations or, past their
    bound (which includes cond(M)), by _least_squares on X[:, :r] M."""
    rng = np.random.default_rng(int(np.log10(cond)) + 7)
    rows, r = 300, 20
    u, _ = np.linalg.qr(rng.standard_normal((rows, r)))
    v, _ = np.linalg.qr(rng.standard_normal((r, r)))
    A = (u * np.geomspace(1.0, 1.0 / cond, r)) @ v.T
    M = np.eye(r) + 0.3 * rng.standard_normal((r, r)) / np.sqrt(r)
    X = np.concatenate([A, rng.standard_normal((rows, 2))], axis=1)
    got = _refit._fit_solve(X, r, M)
    ref = np.linalg.lstsq(A @ M, X[:, r:], rcond=_refit.RCOND)[0]
    pred, pref = A @ got, A @ M @ ref
    tol = (1e-12 + 1e-15 * min(cond, 1e10)) * np.abs(pref).max()
    np.testing.assert_allclose(pred, pref, rtol=0, atol=tol)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2 ** 31), st.integers(1, 7), st.sampled_from(["random", "one-way",
                                                                    "dead", "scaled"]))
def test_per_joint_fits_equal_lstsq(seed, B, kind):
    """The nominal check's per-joint fits (_nominal._lstsq: the normal equations where
    clearly well conditioned, else the SVD, per problem; issue #29) give each problem's
    np.linalg.lstsq(rcond=None) fit: joints moving one way (sign(dq) = the constant column:
    rank deficient, minimum-norm), a dead torque, columns scaled by 1e6."""
    rng = np.random.default_rng(seed)
    N = int(rng.integers(20, 400))
    dq = np.cumsum(rng.normal(size=(N, B)), axis=0) * 0.1
    nom = rng.normal(size=(N, B)) * 30
    tau = 1.2 * nom + np.sign(dq) + 0.3 * dq + rng.normal(size=(N, B))
    if kind == "one-way":
        dq = np.abs(dq) + 0.1
    if kind == "dead":
        tau[:, 0] = 0.0
    if kind == "scaled":
        nom = nom * 1e6
    X, y = _nominal._design(tau, nom, dq)
    got = _nominal._lstsq(X, y)
    for b in range(B):
        want = np.linalg.lstsq(X[b], y[b], rcond=None)[0]
        np.testing.assert_allclose(X[b] @ got[b], X[b] @ want, rtol=0,
                                   atol=1e-9 * max(np.abs(y[b]).max(), 1e-300))
        if kind != "one-way":
            np.testing.assert_allclose(got[b], want, rtol=1e-7, atol=1e-12 * np.abs(want).max())
    e, c = _nominal._fit(tau, nom, dq)
    # the torque-column swaps refit only the exchanged pair: the same as all joints refitted
    if B >= 2:
        st_ = {"tau": tau, "dq": dq, "nominal": {"recorded": nom}}
        p = np.arange(B)
        p[[0, B - 1]] = p[[B - 1, 0]]
        e2, c2 = _nominal._swapped_torque_fit(st_, tau, nom, dq, 0, B - 1, p)
        e3, c3 = _nominal._fit(tau[:, p], nom, dq)
        np.testing.assert_allclose(e2, e3, rtol=1e-12, atol=0)
        np.testing.assert_allclose(c2, c3, rtol=1e-12, atol=1e-300)
        np.testing.assert_allclose(_nominal._fit_of(st_, "recorded", tau, nom, dq)[0], e)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2 ** 31), st.integers(1, 5), st.integers(1, 4))
def test_stacked_per_joint_fits_are_each_fit_to_the_bit(seed, R, n):
    """_nominal._fits and _heldout_fits (the readings of _alternatives, _reversal and
    _check_delay in one stack, issue #29) give every problem's _fit and _heldout_fit to the
    bit, also with a joint moving one way (the SVD path for it)."""
    rng = np.random.default_rng(seed)
    N = int(rng.integers(20, 300))
    problems = []
    for i in range(R):
        dq = np.cumsum(rng.normal(size=(N, n)), axis=0) * 0.1
        if i == 1:
            dq[:, 0] = np.abs(dq[:, 0]) + 0.1
        nom = rng.normal(size=(N, n)) * 30
        problems.append((1.2 * nom + np.sign(dq) + rng.normal(size=(N, n)), nom, dq))
    for (e, c), pr in zip(_nominal._fits(problems), problems):
        e1, c1 = _nominal._fit(*pr)
        np.testing.assert_array_equal(e, e1)
        np.testing.assert_array_equal(c, c1)
    for e, pr in zip(_nominal._heldout_fits(problems), problems):
        np.testing.assert_array_equal(e, _nominal._heldout_fit(*pr))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=9), st.booleans())
def test_median_is_numpys(values, nan):
    """_nominal._median (no per-call overhead) is np.median, NaN included."""
    x = np.array(values + ([np.nan] if nan else []))
    want, got = np.median(x), _nominal._median(x)
    assert (np.isnan(want) and np.isnan(got)) or want == got
