"""The reference look-ahead (ROS-free): the excitation publisher's points
(:meth:`~robot_identification.excitation.ExcitationRun.lookahead`) interpolated as
pd_controller does (:func:`~robot_identification.nodes._control_loop.quintic_hermite`)
reproduce the analytic excitation, checked against the Fourier series and the move's quintic
evaluated here from their formulas, within the Hermite remainder bound.

The bound: e = q - p (p the quintic through q, dq, ddq at both ends of a step h) has six zeros
in the step counted with multiplicity (three at each end), e' five (Rolle), e'' four, and
their 6th, 5th and 4th derivatives are q^(6); so |e| <= M h^6 / 46080 (= M max|(t - t0)^3
(t - t1)^3| / 6!), |e'| <= M h^5 / 5!, |e''| <= M h^4 / 4! with M = max|q^(6)| (the error
of polynomial interpolation at those zeros; e.g. Burden & Faires, *Numerical Analysis*,
Thm. 3.3). For q = sum_l a_l / (w l) sin(w l t) - b_l / (w l) (cos(w l t) - 1):
M <= sum_l sqrt(a_l^2 + b_l^2) (w l)^5.
"""
import numpy as np
import pytest

from robot_identification.excitation import BSplineTrajectory, ExcitationRun, FourierTrajectory
from robot_identification.nodes._control_loop import quintic_hermite


def fourier(traj, t):
    """q, dq, ddq (n,) of the Fourier trajectory at t [s] from its formula (class docstring
    of FourierTrajectory; Szabo & Gincsaine 2021, eq. 22), not from its evaluate."""
    w = 2 * np.pi * traj.base_frequency * np.arange(1, traj.a.shape[1] + 1)
    a, b = traj.a, traj.b
    q = traj.q0 + (a / w * np.sin(w * t)).sum(1) - (b / w * (np.cos(w * t) - 1)).sum(1)
    dq = (a * np.cos(w * t) + b * np.sin(w * t)).sum(1)
    ddq = (-a * w * np.sin(w * t) + b * w * np.cos(w * t)).sum(1)
    return q, dq, ddq


def move(q_from, q_to, T, t):
    """The rest-to-rest quintic s = 10x^3 - 15x^4 + 6x^5, x = t / T, from its formula."""
    x, d = t / T, q_to - q_from
    return (q_from + d * (10 * x**3 - 15 * x**4 + 6 * x**5),
            d * (30 * x**2 - 60 * x**3 + 30 * x**4) / T,
            d * (60 * x - 180 * x**2 + 120 * x**3) / T**2)


def interpolated(run, tau0, horizon, spacing, taus):
    """The look-ahead sent at run time tau0 (point 0 and run.lookahead), evaluated at taus."""
    times = np.concatenate([[tau0], run.lookahead(tau0, horizon, spacing)])
    pts = [run.at(x) for x in times]
    q, dq, ddq = (np.array([p[i] for p in pts]) for i in range(3))
    return [quintic_hermite(t, times, q, dq, ddq) for t in taus], times


@pytest.mark.parametrize("spacing", [0.05, 0.1, 0.2])
def test_lookahead_reproduces_the_fourier_excitation_within_the_hermite_bound(spacing):
    rng = np.random.default_rng(4)
    traj = FourierTrajectory(rng.normal(0, 0.6, (3, 5)), rng.normal(0, 0.6, (3, 5)), 0.1,
                             q0=[0.1, -0.4, 0.8])
    q_now = traj.q0 + [0.3, -0.2, 0.25]
    run = ExcitationRun(traj, q_now, np.full(3, 0.2), hold=0.5)
    T = run.offset
    assert T == pytest.approx(1.875 * 0.3 / 0.2)
    w = 2 * np.pi * 0.1 * np.arange(1, 6)
    M = (np.hypot(traj.a, traj.b) * w**5).sum(1)                 # >= max|q^(6)| per joint
    bound = [M * spacing**6 / 46080, M * spacing**5 / 120, M * spacing**4 / 24]
    worst = np.zeros((3, 3))
    # messages across the move, its join with the series, the series and its end + hold
    for tau0 in [0.0, 0.4321, T - 0.37, T + 0.011, 0.5 * (T + run.planned),
                 T + traj.duration - 0.6, run.planned - 0.3]:
        taus = np.linspace(tau0, tau0 + 1.0, 997)
        got, times = interpolated(run, tau0, 1.0, spacing, taus)
        assert times[-1] == pytest.approx(min(tau0 + 1.0, run.planned), abs=1e-9)
        assert np.all(np.diff(times) <= spacing + 1e-9)
        for tau, g in zip(taus, got):
            x = min(tau, run.planned, times[-1])
            if x < T:
                want = move(q_now, traj.q0, T, x)
            else:                                   # the series, then its end point held
                want = fourier(traj, min(x - T, traj.duration))
            worst = np.maximum(worst, [np.abs(gi - wi) for gi, wi in zip(g, want)])
    for k in range(3):              # position, velocity, acceleration per joint
        assert np.all(worst[k] <= bound[k] + 1e-9), (k, worst[k], bound[k])
    assert np.all(worst[0] > 0)    # measured, not vacuous: the series is not a quintic


def test_lookahead_is_exact_on_bspline_spans():
    """A quintic B-spline (zollo_planar's kind of excitation) is one quintic between two of
    its knots, which the look-ahead includes: interpolated exactly (rounding only), also at
    a step that straddles no knot without them (the knots are there)."""
    rng = np.random.default_rng(2)
    traj = BSplineTrajectory(rng.normal(0, 0.5, (9, 2)), 9.0)
    run = ExcitationRun(traj)
    assert set(np.round(traj.knots, 9)) <= set(np.round(run.breakpoints(), 9))
    taus = np.linspace(2.0, 3.0, 501)
    got, times = interpolated(run, 2.0, 1.0, 0.1, taus)
    assert any(abs(times - k).min() < 1e-9 for k in traj.knots if 2.0 < k < 3.0)
    for tau, g in zip(taus, got):
        q, dq, ddq = traj.evaluate(tau)
        np.testing.assert_allclose(g[0], q[0], atol=1e-9)
        np.testing.assert_allclose(g[1], dq[0], atol=1e-7)
        np.testing.assert_allclose(g[2], ddq[0], atol=1e-5)


def test_quintic_hermite_matches_scipy_and_holds_the_ends():
    from scipy.interpolate import BPoly
    rng = np.random.default_rng(7)
    times = np.array([0.0, 0.03, 0.1, 0.25])
    q, dq, ddq = rng.normal(size=(3, 4, 2))
    for j in range(2):
        ref = BPoly.from_derivatives(times, np.stack([q[:, j], dq[:, j], ddq[:, j]], 1))
        for t in np.linspace(0.0, 0.25, 41):
            got = quintic_hermite(t, times, q, dq, ddq)
            for k in range(3):
                assert got[k][j] == pytest.approx(float(ref(t, nu=k)), rel=1e-9, abs=1e-9)
    # before the first point: the first point; after the last: the last one, as given
    for t, i in [(-1.0, 0), (0.3, -1)]:
        got = quintic_hermite(t, times, q, dq, ddq)
        np.testing.assert_array_equal(got[0], q[i])
        np.testing.assert_array_equal(got[1], dq[i])
