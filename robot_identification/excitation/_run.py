"""The reference of one streamed excitation run (ROS-free; the excitation_publisher node plays
it on the robot's clock and wraps it into messages)."""
from __future__ import annotations

import numpy as np


class ExcitationRun:
    """What a run plays, against the time tau [s] since its start: a quintic rest-to-rest move
    from the measured position to the trajectory's first point, s(x) = 10x^3 - 15x^4 + 6x^5
    with x = tau / T (peak velocity 1.875 |dq| / T), then the trajectory, then its last point
    held for ``hold`` s.

    Parameters
    ----------
    traj : FourierTrajectory or BSplineTrajectory
        The excitation trajectory (n joints).
    q_now : (n,) array, optional
        [rad] where the arm stands; ``None`` (unknown): no move.
    v_max : (n,) array, optional
        [rad/s] peak velocity of the move per joint (required with ``q_now``).
    start_tolerance : float
        [rad] no move when every joint is within this of the first point.
    hold : float
        [s] rest at the end.
    min_move_time : float
        [s] shortest move.
    """

    def __init__(self, traj, q_now=None, v_max=None, start_tolerance=0.0, hold=0.0,
                 min_move_time=0.1):
        self.traj, self.hold = traj, float(hold)
        #: (q0 (n,), dq (n,), T [s]) of the move to the first point, or None
        self.move = None
        if q_now is not None:
            q_now = np.asarray(q_now, dtype=float)
            dq = traj.evaluate(0.0)[0][0] - q_now
            if np.max(np.abs(dq)) > start_tolerance:
                T = max(float(np.max(1.875 * np.abs(dq) / np.asarray(v_max, dtype=float))),
                        min_move_time)
                self.move = (q_now.copy(), dq, T)

    @property
    def offset(self) -> float:
        """[s] from the start to the trajectory's first point (the move)."""
        return self.move[2] if self.move else 0.0

    @property
    def planned(self) -> float:
        """[s] of the whole run: move + trajectory + hold."""
        return self.offset + self.traj.duration + self.hold

    def at(self, tau):
        """(q, dq, ddq), each (n,) [rad, rad/s, rad/s^2], ``tau`` s after the start (after
        the trajectory's end: its end point, as the trajectory's ``evaluate``)."""
        if self.move is not None and tau < self.move[2]:
            q0, d, T = self.move
            x = tau / T
            s = 10 * x**3 - 15 * x**4 + 6 * x**5
            ds = (30 * x**2 - 60 * x**3 + 30 * x**4) / T
            dds = (60 * x - 180 * x**2 + 120 * x**3) / T**2
            return q0 + d * s, d * ds, d * dds
        q, dq, ddq = self.traj.evaluate(tau - self.offset)
        return q[0], dq[0], ddq[0]

    def breakpoints(self):
        """Run times (k,) [s] where its smooth pieces join: the end of the move, the
        trajectory's knots (B-splines: :attr:`~.BSplineTrajectory.knots`), its end, the end of
        the hold. Between two of them the reference is one analytic piece (a quintic
        polynomial: the move, a B-spline span, the hold; a Fourier series)."""
        knots = np.asarray(getattr(self.traj, "knots", ()), dtype=float)
        times = [self.offset, *(self.offset + knots), self.offset + self.traj.duration,
                 self.planned]
        return np.unique([t for t in times if t > 0])

    def lookahead(self, tau, horizon, spacing):
        """Run times (k,) [s] of a look-ahead from ``tau`` [s]: every ``spacing`` [s] on the
        grid of its multiples, the :meth:`breakpoints` and ``tau + horizon`` [s], all in
        (``tau``, ``tau + horizon``] and at most the planned end; empty when ``horizon`` <= 0.
        A quintic Hermite interpolation of the positions, velocities and accelerations at
        these times reproduces a quintic piece exactly (it is one polynomial of degree 5
        between two of the times); within a Fourier series it errs by at most
        max|q^(6)| h^6 / 46080 on a step h (the Hermite remainder,
        f^(6)(xi) / 6! * (t - t0)^3 (t - t1)^3, with |(t - t0)(t - t1)| <= h^2 / 4)."""
        end = min(tau + horizon, self.planned)
        if horizon <= 0 or end <= tau:
            return np.zeros(0)
        grid = np.arange(np.floor(tau / spacing) + 1, np.floor(end / spacing) + 1) * spacing
        bp = self.breakpoints()
        times = np.concatenate([grid, bp[(bp > tau) & (bp < end)], [end]])
        times = np.unique(np.round(times, 9))           # whole nanoseconds, as sent
        return times[(times > tau + 1e-6) & (times <= end)]
