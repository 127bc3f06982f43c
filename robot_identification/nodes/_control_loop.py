"""ROS-free safety supervisor of the pd_controller node (:mod:`.pd_controller`): its states,
watchdog, limit checks, fail-safe, overload counts and the delay margin of its gains.

:class:`ControlLoop` holds the logic; the node (or a test, without DDS) provides the clock
and the outputs: ``now()`` [s], ``send(u, state_ns, deadline_ns)``, ``resend()``,
``warn(text)`` / ``error(text)`` (throttled to once a second by the node) and
``publish_status()``. Inputs: :meth:`joint_state`, :meth:`motor_state`,
:meth:`reference_point`, :meth:`reference_trajectory` (a look-ahead, :class:`ReferenceTrajectory`,
interpolated by :func:`quintic_hermite`), :meth:`watchdog` (every control period),
:meth:`enable`.

The delay margin (:func:`delay_margin`): the arm about a held position, per joint an
inertia m (the smallest effective one, 1 / (M^-1)_ii with the rotor inertia; elastic arms: the
motor side) with viscous friction b, under the PD law kp + kd s: the crossover w_c where
|kp + j kd w| = |j w (j m w + b)|, the phase margin PM = atan2(kd w_c, kp) + atan2(b, m w_c),
and the delay margin PM / w_c [s] (e.g. Franklin, Powell & Emami-Naeini, *Feedback Control
of Dynamic Systems*, Sec. 6.7). In real time the controller measures the loop delay (twice
the age of the state a command answers, plus one period of zero-order hold) and scales the
gains (kp s^2, kd s, s <= ``bandwidth_scale``) so that the delay margin is at least
``delay_margin_factor`` times the 95 % quantile of the recent delays (never up again): the
hold holds, and the tracking does not destabilise, when the machine is slower than the gains
were designed for.

Feed-forward (real time, rigid arms, ``feedforward``): scaled-down gains keep the loop stable
but the arm then lags the excitation (and the data excite less); the command adds the nominal
model's inverse dynamics on the reference, a torque that needs no feedback gain and so cannot
destabilise the loop under delay (computed-torque feed-forward, e.g. Craig, *Introduction to
Robotics*, 3rd ed., Sec. 10.5 "Trajectory-following control", and Siciliano et al.,
*Robotics: Modelling, Planning and Control*, Sec. 8.5.1 "Feedforward computed torque"):
tau_ff = M(q_r) ddq_r + C(q_r, dq_r) dq_r + I_m ddq_r + F(dq_r), the link terms by pinocchio
``rnea`` (its gravity term left out: the law compensates g(q) at the measured position), I_m
the link-referred rotor inertia, F the drives' nominal friction at the reference velocity
(:class:`~robot_identification.simulation.FrictionModel`, as the simulator applies it), the
reference acceleration ddq_r from the reference message (the excitation publisher sends the
trajectory's analytic one). Elastic arms: the law's own feed-forward, the reference's
inverse dynamics through the springs (De Luca 1998; motor references theta_d = q_r +
K^-1 tau_J and the motor torque of the arm's model, with the rotor-link coupling of
``coupling: complete``, De Luca & Lucibello 1998,
:meth:`~robot_identification.simulation.ElasticPDController.feedforward_at`, as ``simulate``
and hardware_robot's in-cycle controller apply it, plus F(dtheta_d), the drives' nominal
friction at the motor reference velocity), from the reference one period before, at
and after the state (:meth:`ControlLoop.reference_samples`); on a moving look-ahead stamped
on the states' clock from a table made ahead along it (:class:`FeedforwardTable`: nodes every
12 ms, interpolated), not computed each period. Not in lockstep (the simulated robot's loop
keeps the regulator), not in the hold / fail-safe.
"""
from __future__ import annotations

import math
import threading

import numpy as np
import pinocchio as pin

from robot_identification.errors import ConfigError
from robot_identification.simulation import FrictionModel, delay_tolerant_gains


def rotor_inertia(model):
    """Link-referred rotor inertia per joint (n,) [kg*m^2] (drive ``rotor_inertia`` x gear
    ratio^2)."""
    rotor = np.array([j.drive.get("rotor_inertia", 0.0) or 0.0 for j in model.config.joints])
    return rotor * model.gear_ratios ** 2


def mass_matrix(model, q, data=None):
    """Joint-space mass matrix (n, n) [kg*m^2] at link positions ``q`` (n,) [rad], with the
    link-referred rotor inertia on the diagonal (pinocchio ``crba``, symmetrised)."""
    data = model.pin_model.createData() if data is None else data
    M = pin.crba(model.pin_model, data, model.pin_configuration(np.asarray(q, dtype=float)))
    idx = np.asarray(model.velocity_indices)
    M = M[np.ix_(idx, idx)] + np.diag(rotor_inertia(model))
    return 0.5 * (M + M.T)


def effective_inertia(model, q=None):
    """Smallest effective inertia per joint (n,) [kg*m^2]: 1 / (M^-1)_ii at link positions
    ``q`` (default zeros) with the link-referred rotor inertia on the diagonal; elastic arms:
    the link-referred rotor inertia (the motor side the PD acts on)."""
    if model.config.elastic:
        return np.maximum(rotor_inertia(model), 1e-9)
    M = mass_matrix(model, np.zeros(model.n) if q is None else q)
    return np.maximum(1.0 / np.diag(np.linalg.inv(M)), 1e-9)


def limit_velocity(kp, kd, error, dq_ref, v_limit):
    """Velocity limiting of a PD law (Khatib 1987, IEEE J. Robotics and Automation 3(1),
    Sec. IV, in joint space): kp e + kd (dq_ref - dq) = kd (v_d - dq) with the velocity
    asked of the joint v_d = dq_ref + (kp / kd) e; v_d clipped to +-``v_limit`` makes the law
    kd (v_sat - dq): a large position error ``e`` (a lag to catch up after the arm was held)
    drives the joint towards at most the limit, not beyond it, and the law is unchanged
    while |v_d| is within it. Returns the reference velocity (n,) [rad/s] to give the PD
    law instead of ``dq_ref`` (joints with kd = 0 unchanged)."""
    kp, kd, e, dq_ref = (np.asarray(x, dtype=float) for x in (kp, kd, error, dq_ref))
    ratio = np.divide(kp, kd, out=np.zeros_like(kp), where=kd > 0)
    v_d = dq_ref + ratio * e
    over = (np.abs(v_d) > v_limit) & (kd > 0)
    return np.where(over, dq_ref + np.clip(v_d, -v_limit, v_limit) - v_d, dq_ref)


def time_to_limit(v, a, v_limit):
    """[s] per joint (n,) until velocity ``v`` [rad/s] under constant acceleration ``a``
    [rad/s^2] leaves [-``v_limit``, ``v_limit``] (inf at zero acceleration, 0 when it is
    outside already and moving further out)."""
    v, a = np.asarray(v, dtype=float), np.asarray(a, dtype=float)
    edge = np.where(a > 0, v_limit, -v_limit)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(a != 0, (edge - v) / a, np.inf)
    return np.maximum(t, 0.0)


def delay_margin(kp, kd, inertia, viscous=None):
    """Delay margin [s] per joint (n,) of PD (``kp`` [N*m/rad], ``kd`` [N*m*s/rad]) on
    ``inertia`` [kg*m^2] with ``viscous`` friction [N*m*s/rad] (module docstring)."""
    kp, kd, m = (np.asarray(x, dtype=float) for x in (kp, kd, inertia))
    b = np.zeros_like(m) if viscous is None else np.asarray(viscous, dtype=float)
    c = b ** 2 - kd ** 2
    x = (-c + np.sqrt(c ** 2 + 4 * m ** 2 * kp ** 2)) / (2 * m ** 2)    # w_c^2
    w = np.sqrt(np.maximum(x, 1e-30))
    pm = np.arctan2(kd * w, kp) + np.arctan2(b, m * w)
    return pm / w


def margin_scale(kp, kd, inertia, viscous, delay, factor=2.0, upper=1.0):
    """Largest bandwidth scale s in (0, ``upper``] (gains kp s^2, kd s) whose delay margin is
    at least ``factor`` x ``delay`` [s] on every joint (bisection on log s; the margin grows
    as s shrinks). ``upper`` when ``delay`` <= 0."""
    def ok(s):
        return bool(np.all(delay_margin(kp * s * s, kd * s, inertia, viscous)
                           >= factor * delay))
    if delay <= 0 or ok(upper):
        return upper
    lo, hi = upper * 1e-3, upper
    if not ok(lo):
        return lo
    for _ in range(40):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


def quintic_hermite(t, times, q, dq, ddq):
    """The trajectory through points with positions, velocities and accelerations, at time
    ``t`` [s]: between two points the quintic polynomial that matches all three at both
    (Hermite interpolation; ros2_control's joint_trajectory_controller interpolates
    position/velocity/acceleration waypoints the same way, a quintic spline). ``times`` (m,)
    [s] increasing; ``q``, ``dq``, ``ddq`` (m, n) [rad, rad/s, rad/s^2]. Returns (q, dq, ddq)
    (n,) at ``t``; before the first point the first point, after the last one the last
    point (as given: the caller decides what holding it means). On one polynomial of degree
    <= 5 exact; elsewhere the error is at most max|q^(6)| h^6 / 46080 on a step h (the
    Hermite remainder f^(6)(xi) / 6! (t - t0)^3 (t - t1)^3; e.g. Burden & Faires, *Numerical
    Analysis*, Sec. 3.4)."""
    k = int(np.searchsorted(times, t, side="right"))
    if k == 0:
        return q[0], dq[0], ddq[0]
    if k >= len(times):
        return q[-1], dq[-1], ddq[-1]
    t0, h = times[k - 1], times[k] - times[k - 1]
    if h <= 0.0:
        return q[k], dq[k], ddq[k]
    p0, v0, a0, p1, v1, a1 = q[k - 1], dq[k - 1], ddq[k - 1], q[k], dq[k], ddq[k]
    # the polynomial in s = (t - t0) / h in [0, 1]: sum c_i s^i
    d, hv0, hv1, h2a0, h2a1 = p1 - p0, h * v0, h * v1, h * h * a0, h * h * a1
    c2 = 0.5 * h2a0
    c3 = 10 * d - 6 * hv0 - 4 * hv1 - 1.5 * h2a0 + 0.5 * h2a1
    c4 = -15 * d + 8 * hv0 + 7 * hv1 + 1.5 * h2a0 - h2a1
    c5 = 6 * d - 3 * hv0 - 3 * hv1 - 0.5 * h2a0 + 0.5 * h2a1
    s = (t - t0) / h
    pos = p0 + s * (hv0 + s * (c2 + s * (c3 + s * (c4 + s * c5))))
    vel = (hv0 + s * (2 * c2 + s * (3 * c3 + s * (4 * c4 + s * 5 * c5)))) / h
    acc = (2 * c2 + s * (6 * c3 + s * (12 * c4 + s * 20 * c5))) / (h * h)
    return pos, vel, acc


class ReferenceTrajectory:
    """A reference with a look-ahead (a JointTrajectory of several points): ``stamp`` [s]
    (its header stamp: the points' times count from it), ``times`` (m,) [s] (their
    time_from_start), ``q``, ``dq``, ``ddq`` (m, n), ``arrival`` [s] (on the node's clock)."""

    def __init__(self, stamp, times, q, dq, ddq, arrival):
        self.stamp, self.arrival = float(stamp), float(arrival)
        self.times = np.asarray(times, dtype=float)
        self.q, self.dq = np.asarray(q, dtype=float), np.asarray(dq, dtype=float)
        self.ddq = np.where(np.isfinite(ddq), ddq, 0.0)
        #: holding its last point is as meant (not counted): it ends at rest and it does not
        #: start moving (a run's final hold), i.e. no source that went silent mid-motion
        self.rest_is_meant = bool(np.max(np.abs(self.dq[-1])) <= 1e-6
                                  and np.max(np.abs(self.dq[0])) <= 1e-6)

    def elapsed(self, state_stamp, now):
        """[s] of the trajectory at a joint state stamped ``state_stamp`` [s]: the stamps'
        difference when both are on one clock (within 10 s of each other), else the time
        since it arrived on the node's clock ``now`` [s] (an unstamped trajectory starts when
        it arrives, as in ros2_control)."""
        if self.stamp and abs(state_stamp - self.stamp) < 10.0:
            return state_stamp - self.stamp
        return now - self.arrival

    def at(self, elapsed):
        """(q, dq, ddq) (n,) ``elapsed`` [s] after the stamp (:func:`quintic_hermite`) and
        whether that is after the last point."""
        return (*quintic_hermite(elapsed, self.times, self.q, self.dq, self.ddq),
                elapsed > self.times[-1] + 1e-9)

    def sample(self, elapsed):
        """(q, dq, ddq) (n,) ``elapsed`` [s] after the stamp for the feed-forward's
        differences: :meth:`at`; after the last point that point at rest; before the first
        one that point extended at its constant acceleration (q + dq x + ddq x^2 / 2, dq +
        ddq x, x < 0 the time to it). The jerk before the first point is not in the
        reference: a central difference about a state at the reference's own stamp (the
        excitation publisher stamps each reference with the state it answers) misses it
        (zollo_planar, 2 s of the study's excitation, on-line: 38 N*m off the core loop's
        command in the median at 250 Hz, 185 N*m at 1 kHz, the feed-forward's part 210 N*m;
        ``benchmarks/elastic_feedforward_cpu.py --lag 0``); :class:`FeedforwardTable` takes
        its nodes from earlier references."""
        x = elapsed - self.times[0]
        if x < 0.0:
            return (self.q[0] + x * self.dq[0] + 0.5 * x * x * self.ddq[0],
                    self.dq[0] + x * self.ddq[0], self.ddq[0])
        q, dq, ddq, after = self.at(elapsed)
        return (q, 0 * dq, 0 * ddq) if after else (q, dq, ddq)


class FeedforwardTable:
    """Elastic arms' feed-forward (theta_d, dtheta_d, du) of a reference trajectory known
    ahead (a look-ahead, :class:`ReferenceTrajectory`), precomputed on a grid of ``step`` [s]
    and interpolated at each state's time: the complete model's inverse dynamics
    (:meth:`~robot_identification.simulation.ElasticPDController.feedforward`, 2 ``rnea`` a
    node in blocks of :attr:`BLOCK` nodes, its differences over ``step``) instead of 4 ``rnea``
    and the per-call set-up every control period (:meth:`ControlLoop.elastic_feedforward`).

    Nodes at times t0 + j ``step`` on the reference's stamp clock (its stamp + the elapsed
    time; held as an offset from the stamp of the reference it was started from, so that
    epoch stamps lose no precision), kept :attr:`LEAD` s ahead of the latest state and
    extended from whichever reference is current: every reference of the excitation
    publisher carries the same trajectory. A node stays valid while the current reference at
    the state agrees with the table's (linear between its nodes) within :attr:`TOLERANCE`
    plus the bound of that interpolation's error (|second difference| / 8 of the nodes'
    reference); else the table is made anew from the current reference (a rejoin, a new
    run: ``rebuilds``). Between two nodes theta_d by cubic Hermite interpolation with
    dtheta_d as its derivative, dtheta_d and du linearly: errors step^4 / 384
    max|theta_d''''|, step^2 / 8 max|dtheta_d''| and step^2 / 8 max|du''| (Burden & Faires,
    *Numerical Analysis*, Sec. 3.4). The step (:attr:`ControlLoop.FEEDFORWARD_STEP`, 12 ms)
    also spreads the kink of the look-ahead's quintic at its points (its jerk jumps there;
    the differences of the feed-forward's deflection turn that into a spike): zollo_planar
    on the hardware-robot study's excitation with the publisher's references, against the
    core loop's command on the analytic excitation (3 s from 0.5 s, each reference stamped
    with its state), at 250 Hz and 1 kHz: 0.18 N*m off in the median (the feed-forward's
    part: 169 N*m), 3.4 N*m at most; nodes every 4 ms: 0.11 and 20 N*m, every period at 1
    kHz: 0.10 and 94 N*m (``test/test_control_loop_elastic_feedforward.py`` checks the
    first). ``law``: an
    :class:`~robot_identification.simulation.ElasticPDController` (the feed-forward does not
    depend on its gains: one table for every gain scale)."""

    #: [s] the table reaches this far ahead of the latest state
    LEAD = 0.05
    #: nodes made per extension (fewer at the start); more nodes per call, less overhead
    BLOCK = 4
    #: largest difference (q [rad], dq [rad/s], ddq [rad/s^2]) between the current reference
    #: and the table's at the state (beyond the bound of the interpolation's error) for the
    #: table to be kept (the publisher's references differ from one another by up to 1.2e-5
    #: rad, 1.4e-4 rad/s and 7e-3 rad/s^2 between their points: zollo_planar, the study's
    #: excitation)
    TOLERANCE = (1e-4, 1e-3, 0.1)

    def __init__(self, law, step):
        self.law, self.step = law, float(step)
        self.base = None                # [s] stamp of the reference the table started from
        self.t0 = 0.0                   # [s] node 0, after ``base``
        self.first = self.end = 0       # node indices held: [first, end)
        self.rebuilds = self.nodes = 0
        self.tol = None

    def at(self, plan, origin, elapsed, current):
        """(theta_d, dtheta_d, du) (n,) x 3 at ``elapsed`` [s] of ``plan`` (stamp clock origin
        ``origin`` [s]), whose reference there is ``current`` (q, dq, ddq) (n,) x 3: nodes
        made from ``plan`` where the table does not reach or does not agree with it."""
        if self.base is None:
            self._reset(origin, elapsed)
        x = ((origin - self.base) + elapsed - self.t0) / self.step
        j = int(math.floor(x))
        if j < self.first or j + 1 >= self.end + 4 * self.BLOCK:
            self._reset(origin, elapsed)    # behind the table, or far beyond it: anew
            x, j = 0.0, 0
        self._reach(plan, origin, j)
        k, s = j - self.first, x - j
        ref, slack = self.stack, self.slack
        if self.tol is None:
            self.tol = np.repeat(self.TOLERANCE, len(current[0]))
        # (a state before the reference's first point has that point as its reference)
        if elapsed >= plan.times[0] and np.any(
                np.abs(ref[k] + s * (ref[k + 1] - ref[k]) - np.concatenate(current))
                > self.tol + slack[k] + slack[k + 1]):
            self._reset(origin, elapsed)    # another trajectory: anew from this one
            x = s = 0.0
            k = j = 0
            self._reach(plan, origin, j)
        th, dth, du = self.ff
        h = self.step
        # cubic Hermite of theta_d with dtheta_d as its derivative; dtheta_d, du linear
        h00, h10 = (1 + 2 * s) * (1 - s) ** 2, s * (1 - s) ** 2
        h01, h11 = s * s * (3 - 2 * s), s * s * (s - 1)
        theta = h00 * th[k] + h10 * h * dth[k] + h01 * th[k + 1] + h11 * h * dth[k + 1]
        out = (theta, (1 - s) * dth[k] + s * dth[k + 1], (1 - s) * du[k] + s * du[k + 1])
        if k > 2 * self.BLOCK:           # forget the nodes behind
            drop = k - 2
            self.first += drop
            self.ref, self.ff = [r[drop:] for r in self.ref], [f[drop:] for f in self.ff]
            self.stack, self.slack = self.stack[drop:], self.slack[drop:]
        return out

    def _reach(self, plan, origin, j):
        """Nodes to :attr:`LEAD` s after node ``j``, made from ``plan``."""
        need = j + 2 + int(math.ceil(self.LEAD / self.step))
        while self.end < need:
            self._extend(plan, origin, max(self.end + self.BLOCK, j + 2))

    def _elapsed(self, j, origin):
        """[s] of node ``j`` after ``origin``."""
        return (self.base - origin) + self.t0 + j * self.step

    def _reset(self, origin, elapsed):
        self.base, self.t0 = origin, elapsed
        self.first = self.end = 0
        self.ref = self.ff = self.stack = self.slack = None
        self.rebuilds += 1

    def _extend(self, plan, origin, stop):
        """Nodes ``end`` ... ``stop`` - 1 from ``plan``: the reference one node before each
        to one after, the feed-forward at radius 1, the nodes' reference (q, dq, ddq side by
        side) and the bound of its linear interpolation's error."""
        start = self.end
        known = 0 if self.ref is None else 2        # samples end - 1 and end already held
        samples = [plan.sample(self._elapsed(j, origin))
                   for j in range(start - 1 + known, stop + 1)]
        new = [np.array([s[i] for s in samples]) for i in range(3)]
        refs = (new if self.ref is None else
                [np.concatenate([r[-2:], x]) for r, x in zip(self.ref, new)])
        ff = self.law.feedforward(*refs, self.step, 1)
        both = np.hstack(refs)
        stack, slack = both[1:-1], 0.125 * np.abs(both[2:] - 2 * both[1:-1] + both[:-2])
        if self.ref is None:
            self.ref, self.ff, self.stack, self.slack = refs, list(ff), stack, slack
        else:
            self.ref = [np.concatenate([r, x]) for r, x in zip(self.ref, new)]
            self.ff = [np.concatenate([f, x]) for f, x in zip(self.ff, ff)]
            self.stack = np.vstack([self.stack, stack])
            self.slack = np.vstack([self.slack, slack])
        self.end = stop
        self.nodes += stop - start


class ControlLoop:
    """The controller's logic (see the module docstring and :mod:`.pd_controller`).

    Attributes set by the owner before use: ``model``, ``law_for(scale)`` (-> a control law
    ``law(q_d, dq_d, measurement)``), ``lockstep``, ``period`` [s], ``max_age`` [s] (watchdog
    timeout), ``fail_safe`` ('hold' | 'zero'), ``factor`` (state velocity limit factor),
    ``enabled``, ``scale`` (bandwidth_scale), ``margin_factor``, ``deadline`` [s] (0: none),
    ``stamps_on_clock`` (bool or None: the state stamps are on ``now()``'s clock; None = judge
    from the first state); optionally ``velocity_limit_factor`` and ``velocity_deadline``
    (real time: :meth:`limited`, :meth:`command_deadline`); then call :meth:`init_loop`.
    """

    #: real time: the velocity a command asks of a joint is clipped to this x its limit
    #: (:func:`limit_velocity`); 0 = off
    velocity_limit_factor = 0.9
    #: real time: a command's deadline shortened to the time its torque, held open loop,
    #: takes to drive a joint to its velocity limit (:meth:`command_deadline`)
    velocity_deadline = True
    #: real time: the nominal inverse dynamics of the reference added to the tracking
    #: command (module docstring, :meth:`feedforward_torque`; elastic arms
    #: :meth:`elastic_feedforward`; the node's parameter
    #: ``feedforward`` sets it, default true: docs/ros.md; off for users of the class alone)
    feedforward = False
    #: real time, elastic arms, ``feedforward``: a moving look-ahead reference on the states'
    #: clock gets the feed-forward from a :class:`FeedforwardTable` (nodes every
    #: :attr:`FEEDFORWARD_STEP`) instead of computing it on-line every period (the fallback;
    #: the node's parameter ``feedforward_table`` sets it, default true)
    feedforward_table = True
    #: [s] node spacing of that table (a whole number of control periods, at least one)
    FEEDFORWARD_STEP = 0.012

    def init_loop(self):
        lim = [j.limits for j in self.model.config.joints]
        self.q_lo = np.array([li.position[0] if li.position else -np.inf for li in lim])
        self.q_hi = np.array([li.position[1] if li.position else np.inf for li in lim])
        self.v_max = np.array([li.velocity or np.inf for li in lim])
        self.inertia = effective_inertia(self.model)
        self._pin_data = self.model.pin_model.createData()
        self.limited_commands = self.shortened_deadlines = 0
        self.shortest_deadline = np.inf
        self.viscous = np.array([j.drive.get("viscous", 0.0) or 0.0
                                 for j in self.model.config.joints])
        self.rotor = rotor_inertia(self.model)
        self._friction = None
        self.feedforward_commands = self.tabled_feedforward_commands = 0
        self._ff_table = None
        self.gain_scale = self.scale
        self.law = self.law_for(self.scale)
        self.base_law = self.law_for(1.0)
        self.fault = None
        self.faults = 0
        self.joint = self.motor = self.ref = None
        self.plan = None              # the latest reference trajectory (look-ahead), real time
        self.lookahead_commands = 0
        self.joint_ns = None
        self.last_usable = None       # last finite measurement (dict of (n,) arrays)
        self.hold_q = None            # [rad] position held by the fail-safe / before a reference
        self.last_state_time = None   # now() [s] of the last joint state
        self.previous_state_time = None
        self.stamp_time = None        # now() [s] when the state stamp last advanced
        self.stamp_advanced = False
        self.last_tick = None
        self.stale_tick = -np.inf
        self.state_seen = False
        self.stale_for = 0.0
        self.watchdog_gap = None
        self.last_stamp = -np.inf     # state stamp of the last command
        self.last_u = None
        self.commands = self.fail_safe_commands = self.zero_commands = 0
        self.ref_time = None
        self.missed_periods = self.state_gaps = self.stale_reference_commands = 0
        self.longest_stall = self.longest_state_gap = 0.0
        self.loop_delay = self.loop_delay_max = 0.0     # [s] measured (real time)
        self.gain_changes = 0
        self.heartbeat = 0

    # -- status --------------------------------------------------------------------------
    @property
    def state(self) -> str:
        if self.fault is not None:
            return "fault"
        if not self.enabled:
            return "disabled"
        if self.joint is None:
            return "waiting"
        return "running" if self.ref is not None else "holding"

    @property
    def ready(self) -> bool:
        """Enabled, no fault, fresh states: an excitation may start."""
        return self.state in ("holding", "running") and self.state_age() <= self.max_age

    def state_age(self) -> float:
        """[s] since the last joint state arrived (inf before the first)."""
        return np.inf if self.last_state_time is None else self.now() - self.last_state_time

    def status_message(self) -> str:
        s = self.state
        if s == "fault":
            return f"fault: {self.fault}; fail-safe '{self.fail_safe}' until ~/enable true"
        if s == "disabled":
            return f"disabled: fail-safe '{self.fail_safe}' until ~/enable true"
        if s == "waiting":
            return "waiting for joint states"
        age = self.state_age()
        if age > self.max_age:
            return f"joint states {age:.3f} s old (watchdog {self.max_age:g} s)"
        return f"ready: {s}"

    def status_values(self) -> dict:
        self.heartbeat += 1
        margin = float(np.min(delay_margin(self.law.kp, self.law.kd, self.inertia,
                                           self.viscous)))
        return {"state": self.state, "fault": self.fault or "", "fail_safe": self.fail_safe,
                "faults": self.faults, "commands": self.commands,
                "fail_safe_commands": self.fail_safe_commands,
                "zero_torque_commands": self.zero_commands,
                "state_age_s": f"{self.state_age():.4f}", "watchdog_timeout_s": self.max_age,
                "missed_periods": self.missed_periods,
                "longest_stall_s": f"{self.longest_stall:.4f}", "state_gaps": self.state_gaps,
                "longest_state_gap_s": f"{self.longest_state_gap:.4f}",
                "stale_reference_commands": self.stale_reference_commands,
                "reference_points": (0 if self.ref is None else 1 if self.plan is None
                                     else len(self.plan.times)),
                "lookahead_commands": self.lookahead_commands,
                "tolerated_delay_periods": ("" if self.tolerated_delay is None
                                            else self.tolerated_delay),
                "loop_delay_s": f"{self.loop_delay:.4f}",
                "loop_delay_max_s": f"{self.loop_delay_max:.4f}",
                "delay_margin_s": f"{margin:.4f}", "gain_scale": f"{self.gain_scale:.4g}",
                "kp": " ".join(f"{v:.4g}" for v in self.law.kp),
                "kd": " ".join(f"{v:.4g}" for v in self.law.kd),
                **self.gain_choice_values(),
                "gain_changes": self.gain_changes,
                "velocity_limited_commands": self.limited_commands,
                "shortened_deadlines": self.shortened_deadlines,
                "feedforward_commands": self.feedforward_commands,
                "tabled_feedforward_commands": self.tabled_feedforward_commands,
                "feedforward_tables": (0 if self._ff_table is None
                                       else self._ff_table.rebuilds),
                "shortest_deadline_s": ("" if not np.isfinite(self.shortest_deadline)
                                        else f"{self.shortest_deadline:.4f}"),
                "heartbeat": self.heartbeat}

    def gain_choice_values(self) -> dict:
        """``/diagnostics`` values of the gain choice (``gain_choice``, a
        :class:`~robot_identification.simulation.GainChoice`, when the owner made one at
        start-up; elastic arms: the latest made on a measured loop delay,
        :meth:`elastic_delay`): ``required_delay_periods``, ``gains_stabilised`` (true: the
        given gains were scaled, ``stabilising_scale``) and ``gain_choice`` (the line the
        log said, ``gain_choice_text``)."""
        c = getattr(self, "gain_choice", None)
        if c is None:
            return {}
        return {"required_delay_periods": c.required,
                "gains_stabilised": str(c.changed).lower(),
                "stabilising_scale": f"{c.scale:.4g}",
                "gain_choice": getattr(self, "gain_choice_text", "")}

    # -- inputs --------------------------------------------------------------------------
    def joint_state(self, stamp, stamp_ns, q, dq):
        """A joint state stamped ``stamp`` [s] (``stamp_ns`` [ns]): q, dq (n,) [rad, rad/s]."""
        now = self.now()
        previous = self.joint[0] if self.joint is not None else None
        self.joint = (stamp, q, dq)
        self.joint_ns = stamp_ns
        if self.stamps_on_clock is None:         # stamps from a clock of their own (0 at start)?
            self.stamps_on_clock = abs(now - stamp) < 10.0
        if self.last_state_time is not None and not self.lockstep:
            gap = now - self.last_state_time
            self.longest_state_gap = max(self.longest_state_gap, gap)
            if gap > self.max_age / 2:
                self.state_gaps += 1
                self.warn(f"joint states arrived {gap:.3f} s after the previous one "
                          f"({self.state_gaps} such gaps; watchdog {self.max_age:g} s)")
        self.previous_state_time, self.last_state_time = self.last_state_time, now
        self.state_seen = True
        if previous is None or stamp > previous:
            self.stamp_advanced |= previous is not None
            self.stamp_time = now
        elif stamp < previous and not self.lockstep:
            self.trip(f"joint state stamp went back from {previous:.6f} s to {stamp:.6f} s")
        elif (stamp == previous and self.stamp_advanced and not self.lockstep
              and now - self.stamp_time > self.max_age):
            self.trip(f"joint state stamp frozen at {stamp:.6f} s for "
                      f"{now - self.stamp_time:.3f} s")
        if self.lockstep and stamp == self.last_stamp and self.last_u is not None:
            # the simulated robot re-publishes a state when the loop went quiet: the command
            # for it was lost (e.g. sent before the robot had matched the topic) or is still
            # on its way (a process starved for longer than the robot's keep-alive period);
            # resend it: labelled with this state's stamp, the robot steps once either way
            self.warn(f"state t = {stamp:.4f} s repeated: command re-sent")
            self.resend()
            return
        self.update()

    def motor_state(self, stamp, theta, dtheta):
        self.motor = (stamp, theta, dtheta)
        if self.lockstep or (self.joint is not None and self.joint[0] > self.last_stamp):
            self.update()       # real time: a joint state that waited for its motor state

    def reference_point(self, stamp, q, dq, ddq=None):
        """A reference point stamped ``stamp`` [s]: q, dq, ddq (n,) [rad, rad/s, rad/s^2]
        (``ddq`` None or non-finite: zero, as a reference without accelerations)."""
        ddq = (np.zeros_like(np.asarray(dq, dtype=float)) if ddq is None
               else np.where(np.isfinite(ddq), ddq, 0.0))
        self.ref = (stamp, q, dq, ddq)
        self.ref_time = self.now()
        self.plan = None
        if self.lockstep:
            self.update()

    def reference_trajectory(self, stamp, times, q, dq, ddq):
        """A reference with a look-ahead: points at ``stamp`` + ``times`` (m,) [s] with q,
        dq, ddq (m, n) [rad, rad/s, rad/s^2] (m >= 2; non-finite accelerations: zero). Real
        time: kept whole, evaluated at each joint state's stamp (:meth:`reference`); lockstep:
        its first point, as :meth:`reference_point`."""
        self.reference_point(stamp, q[0], dq[0], ddq[0])
        if not self.lockstep:
            self.plan = ReferenceTrajectory(stamp, times, q, dq, ddq, self.ref_time)

    # -- control -------------------------------------------------------------------------
    def measurement(self):
        meas = {"q": self.joint[1], "dq": self.joint[2]}
        if self.motor is not None:
            meas.update(theta=self.motor[1], dtheta=self.motor[2])
        return meas

    def update(self):
        """One command: lockstep once per state stamp with the matching reference (and motor
        state); real time once per joint state (and the motor state of its stamp) with the
        latest reference."""
        if self.joint is None or (self.model.config.elastic and self.motor is None):
            return
        t = self.joint[0]
        if self.lockstep:
            if self.ref is None or self.ref[0] != t or (self.motor is not None
                                                         and self.motor[0] != t):
                return
            if t < self.last_stamp - 1.5 * self.period:
                # the robot's time went back (simulated_robot ~/reset): start afresh
                self.info(f"state time went back to {t:.4f} s: controller reset")
                self.last_stamp, self.last_u = -np.inf, None
            if t <= self.last_stamp:
                return
        elif (self.motor is not None and self.motor[0] < t and t > self.last_stamp
              and t - self.motor[0] <= self.max_age):
            # real time, elastic: wait for the motor state of this stamp (on_motor computes
            # then); a motor topic that lags by more than the watchdog timeout is used as is
            return
        new = t > self.last_stamp
        self.last_stamp = max(t, self.last_stamp)
        meas = self.measurement()
        self.remember(meas)
        reference = None
        if new:
            reference = self.reference_now() if self.ref is not None else None
            self.check(meas, *(reference[:2] if reference is not None else ()))
            self.measure_delay(t)
        if self.fault is not None or not self.enabled:
            self.command(self.fallback(meas), fail_safe=True)
        elif self.ref is None:           # armed: hold the arm until the reference flows
            self.command(self.fallback(meas))
        elif new:
            q_ref, dq_ref, ddq_ref = self.reference(reference)
            if self.model.config.elastic:
                self.command(self.law(q_ref, dq_ref, meas, self.elastic_feedforward(
                    q_ref, dq_ref, ddq_ref)))
            else:
                u = self.law(q_ref, self.limited(q_ref, dq_ref, meas), meas)
                self.command(self.with_feedforward(u, q_ref, dq_ref, ddq_ref, meas["dq"]))
        elif self.last_u is not None:    # a repeated stamp: nothing new, same command
            self.command(self.last_u)

    #: loop delays over which the delay statistic is taken, and how often it is taken
    DELAY_WINDOW, DELAY_EVERY = 500, 50
    #: the statistic: this quantile of the window (a single stall of this process is not a
    #: loop delay the gains must tolerate: the robot's deadline covers it)
    DELAY_QUANTILE = 0.95

    def measure_delay(self, stamp):
        """Real time, stamps on this node's clock: the loop delay (2 x the state's age + one
        period of zero-order hold); every :attr:`DELAY_EVERY` states, when the
        :attr:`DELAY_QUANTILE` of the last :attr:`DELAY_WINDOW` grew, gains scaled to its
        delay margin (never up)."""
        if self.lockstep or not self.stamps_on_clock:
            return
        self.apply_elastic_choice()
        delay = 2.0 * max(self.now() - stamp, 0.0) + self.period
        self.loop_delay = delay
        if not hasattr(self, "_delays"):
            self._delays, self._n_delays = np.zeros(self.DELAY_WINDOW), 0
        self._delays[self._n_delays % self.DELAY_WINDOW] = delay
        self._n_delays += 1
        if self._n_delays % self.DELAY_EVERY:
            return
        recent = float(np.quantile(self._delays[:min(self._n_delays, self.DELAY_WINDOW)],
                                   self.DELAY_QUANTILE))
        if recent <= self.loop_delay_max:
            return
        self.loop_delay_max = recent
        if self.model.config.elastic and getattr(self, "gain_choice", None) is not None:
            self.elastic_delay(recent)
            return
        kp, kd = self.base_law.kp, self.base_law.kd
        s = margin_scale(kp, kd, self.inertia, self.viscous, recent, self.margin_factor,
                         upper=self.scale)
        if s < self.gain_scale * 0.97:
            self.gain_scale = s
            self.law = self.law_for(s)
            self.gain_changes += 1
            self.warn(f"loop delay {1e3 * recent:.1f} ms ({100 * self.DELAY_QUANTILE:g} % "
                      f"quantile): gains scaled to {s:.3g} (kp * s^2, kd * s) for a delay "
                      f"margin of {self.margin_factor:g} x that delay")

    #: elastic arms: the longest loop delay [control periods] :meth:`elastic_delay` checks
    #: gains for (the eigenvalue problems grow with it); a longer one is a fault
    MAX_DELAY_PERIODS = 40

    def elastic_delay(self, recent):
        """Elastic arms: a loop delay quantile ``recent`` [s] in control periods, d =
        ceil((recent - period) / period) (at least ``required_delay``): gains that tolerate
        d periods in the discretised loop (:func:`~robot_identification.simulation.
        delay_tolerant_gains`, from the start-up gains down) are chosen in a worker thread
        (0.1 s for a 2-joint arm, 0.6 s for a 6-joint one at 40 periods; the loop runs on
        meanwhile) and applied by :meth:`apply_elastic_choice`; d beyond
        :attr:`MAX_DELAY_PERIODS` is a fault (held with gains that tolerate that many). Not
        the delay margin of the rigid arms: on the rotor inertia alone it leaves out the
        spring, whose stiff motor-side modes a few periods of delay destabilise
        (zollo_planar at 250 Hz on the hardware-like robot: a 49 ms loop delay scaled the
        gains to 0.036 by that margin, where the linearised loop tolerates 1 period, and the
        arm ran away to 4.2 x its velocity limit; docs/ros.md, "Elastic arms at 250 Hz")."""
        d = max(int(self.required_delay),
                int(math.ceil((recent - self.period) / self.period - 1e-9)))
        if d <= max(self.tolerated_delay or 0, getattr(self, "_elastic_asked", -1)):
            return
        self._elastic_asked, self._elastic_latest = d, recent
        job = getattr(self, "_elastic_job", None)
        if job is not None and job.is_alive():
            return                  # asked again once this one is done

        base, upper, rate = self.base_law, self.scale, 1.0 / self.period

        def work():
            c = delay_tolerant_gains(self.model, base.kp * upper ** 2, base.kd * upper,
                                     rate_hz=rate, periods=min(d, self.MAX_DELAY_PERIODS))
            self._elastic_result = (c, recent, d)
        self._elastic_job = threading.Thread(target=work, daemon=True,
                                             name="elastic delay gains")
        self._elastic_job.start()

    def apply_elastic_choice(self):
        """The gains :meth:`elastic_delay` chose, once its thread is done: scaled down (never
        up) with a warning; when no scale tolerates the delay, a fault (the excitation
        stops) whose hold uses the most tolerant gains found (at the smallest scales little
        more than the gravity compensation: the arm floats, damped by its friction)."""
        result = getattr(self, "_elastic_result", None)
        if result is None:
            return
        self._elastic_result = None
        c, recent, d = result
        s = self.scale * c.scale
        self.tolerated_delay = c.tolerated
        self.gain_choice = c
        self.gain_choice_text = (f"loop delay {1e3 * recent:.1f} ms "
                                 f"({100 * self.DELAY_QUANTILE:g} % quantile): "
                                 + c.describe(self.model.config.name, "the start-up gains"))
        if d > c.required:
            self.gain_choice_text += (f"; the delay is {d} control periods, beyond the "
                                      f"{self.MAX_DELAY_PERIODS} checked")
        if s < self.gain_scale * 0.97:
            self.gain_scale = s
            self.law = self.law_for(s)
            self.gain_changes += 1
        if c.ok and d <= c.required:
            self.warn(self.gain_choice_text)
        else:
            self.trip(self.gain_choice_text)
        if self._elastic_latest > recent:       # the delay grew while the thread ran
            self._elastic_asked = d
            self.elastic_delay(self._elastic_latest)

    def reference(self, reference=None):
        """(q_ref, dq_ref, ddq_ref) (n,) to track (:meth:`reference_now`, or ``reference``,
        its result for this state); a held one is counted (``stale_reference_commands``)
        and warned."""
        q_ref, dq_ref, ddq_ref, held = reference or self.reference_now()
        if (self.plan is not None and not self.lockstep
                and self.plan.elapsed(self.joint[0], self.now()) > self.max_age):
            self.lookahead_commands += 1     # its source silent: the look-ahead in use
        if held:
            self.stale_reference_commands += 1
            self.warn(f"{held}: holding its position at zero velocity "
                      f"({self.stale_reference_commands} commands)")
        return q_ref, dq_ref, ddq_ref

    def reference_now(self):
        """(q_ref, dq_ref, ddq_ref, held) for the latest joint state: in real time a
        reference trajectory (several points: a look-ahead) is evaluated at the state's stamp
        (:class:`ReferenceTrajectory`, quintic Hermite between its points), after its last
        point that point at zero velocity and acceleration; a single point is taken as it
        is, and one that arrived more than ``watchdog_timeout`` s ago (while joint states
        kept arriving) is held at its position with zero velocity and acceleration. ``held``
        says why a moving reference is held ('' otherwise: also for a rest point, which is
        meant to be held). Lockstep: the latest point as it is."""
        if self.plan is not None:
            plan = self.plan
            elapsed = plan.elapsed(self.joint[0], self.now())
            q_ref, dq_ref, ddq_ref, after = plan.at(elapsed)
            if not after:
                return q_ref, dq_ref, ddq_ref, ""
            zero = np.zeros_like(dq_ref)
            return q_ref, zero, zero, ("" if plan.rest_is_meant else
                                       f"state {elapsed - plan.times[-1]:.3f} s after the "
                                       f"last point of a moving reference trajectory")
        q_ref, dq_ref, ddq_ref = self.ref[1], self.ref[2], self.ref[3]
        behind = (0.0 if self.previous_state_time is None
                  else self.previous_state_time - self.ref_time)
        if not self.lockstep and behind > self.max_age:
            zero = np.zeros_like(dq_ref)
            return q_ref, zero, zero, ("" if np.max(np.abs(dq_ref)) <= 1e-6 else
                                       f"no reference for {behind:.3f} s while joint states "
                                       f"arrived (watchdog {self.max_age:g} s)")
        return q_ref, dq_ref, ddq_ref, ""

    def feedforward_torque(self, q_ref, dq_ref, ddq_ref):
        """Nominal inverse dynamics of the reference without gravity (n,) [N*m]:
        M(q_r) ddq_r + C(q_r, dq_r) dq_r (pinocchio ``rnea`` minus its gravity term) + the
        link-referred rotor inertia x ddq_r + the drives' nominal friction at dq_r
        (module docstring); zeros in lockstep, for elastic arms (theirs:
        :meth:`elastic_feedforward`) and with ``feedforward`` off. A robot whose friction
        laws the simulator cannot apply (``coulomb_load``) gets no friction term."""
        n = self.model.n
        if self.lockstep or not self.feedforward or self.model.config.elastic:
            return np.zeros(n)
        pm = self.model.pin_model
        idx = np.asarray(self.model.velocity_indices)
        v, a = np.zeros(pm.nv), np.zeros(pm.nv)
        v[idx], a[idx] = dq_ref, ddq_ref
        qc = self.model.pin_configuration(np.asarray(q_ref, dtype=float))
        tau = (pin.rnea(pm, self._pin_data, qc, v, a)
               - pin.computeGeneralizedGravity(pm, self._pin_data, qc))
        return (self.model.from_pin_v(tau) + self.rotor * np.asarray(ddq_ref)
                + self.drive_friction(dq_ref))

    def drive_friction(self, velocity):
        """The drives' nominal friction torque (n,) [N*m] at ``velocity`` (n,) [rad/s; the
        link velocity of a rigid arm, the link-referred motor velocity of an elastic one]:
        :class:`~robot_identification.simulation.FrictionModel`, the laws the simulator
        applies; zero where the config has a law it cannot apply (``coulomb_load``)."""
        if self._friction is None:
            try:
                self._friction = FrictionModel(self.model)
            except ConfigError:
                self._friction = FrictionModel(self.model, "none")
        return self._friction(np.asarray(velocity, dtype=float))

    def reference_samples(self, q_ref, dq_ref, ddq_ref):
        """The reference one control period before, at and after the latest state: three
        (q, dq, ddq) (n,) x 3 [rad, rad/s, rad/s^2] (the middle one ``q_ref``, ``dq_ref``,
        ``ddq_ref``, :meth:`reference`). A moving reference trajectory (look-ahead) is
        evaluated at the state's stamp -+ one period (:meth:`ReferenceTrajectory.sample`:
        after its last point that point at rest, before its first one that point extended);
        a single point, or one held at rest, is extended at its constant acceleration
        (q -+ dq dt + ddq dt^2 / 2, dq -+ ddq dt)."""
        h = self.period
        if self.plan is not None and np.any(dq_ref):
            e = self.plan.elapsed(self.joint[0], self.now())
            return [self.plan.sample(e - h), (q_ref, dq_ref, ddq_ref), self.plan.sample(e + h)]
        return [(q_ref + k * h * dq_ref + 0.5 * h * h * ddq_ref, dq_ref + k * h * ddq_ref,
                 ddq_ref) for k in (-1.0, 0.0, 1.0)]

    def elastic_feedforward(self, q_ref, dq_ref, ddq_ref):
        """Elastic arms in real time (``feedforward``): the reference's motor references and
        torque (theta_d, dtheta_d, du) (n,) x 3 for the law
        (:meth:`~robot_identification.simulation.ElasticPDController.feedforward_at` on
        :meth:`reference_samples`: the complete model's inverse dynamics, as ``simulate``
        and the in-cycle trajectory controller apply it); None (the regulator's references:
        De Luca, Siciliano & Zollo 2005) in lockstep and with ``feedforward`` off. On a
        moving look-ahead stamped on the states' clock (the excitation publisher's) from a
        :class:`FeedforwardTable` made ahead along it (``feedforward_table``; counted as
        ``tabled_feedforward_commands``), else computed on-line. The torque adds the drives'
        nominal friction at the motor reference velocity dtheta_d (:meth:`drive_friction`,
        as the rigid arms' feed-forward at dq_r): the law's inverse dynamics leave friction
        out, and under delay-scaled gains the regulator's torque does not break a drive's
        Coulomb friction away (puma560_elastic at 250 Hz, gain scale 0.107, the core loop in
        MuJoCo with each command 6 periods late: joints 1 and 3 moved 0.012 and 0.015 rad of
        the reference's 0.55 and 0.43 rad without it, a hardware-robot session's bag 0.014
        and 0.015 rad; with it within 0.033 and 0.044 rad of the reference; docs/ros.md).

        Not gated by the measured velocity, unlike the rigid arms' feed-forward: with the
        weak gains a delay leaves, the regulator alone does not brake a moving elastic arm
        but lets it swing on its springs. The hardware-robot study at 250 Hz (docs/ros.md,
        "Elastic arms on the pd_controller path"): a gate per joint at 0.9 x the velocity
        limit (the excitation's own peak) switched zollo_planar's joint-1 torque between 30
        and 120 N*m from one period to the next and the arm ran away in 2 of 3 sessions;
        a gate of every joint at 1 x the limit was followed by a runaway 0.25 s after it
        closed. The velocity trip (``state_limit_factor``) stays."""
        if self.lockstep or not self.feedforward:
            return None
        self.feedforward_commands += 1
        plan, stamp = self.plan, self.joint[0]
        if (self.feedforward_table and plan is not None and np.any(dq_ref) and plan.stamp
                and abs(stamp - plan.stamp) < 10.0):
            if self._ff_table is None:
                stride = max(1, int(round(self.FEEDFORWARD_STEP / self.period)))
                self._ff_table = FeedforwardTable(self.base_law, stride * self.period)
            self.tabled_feedforward_commands += 1
            theta_d, dtheta_d, du = self._ff_table.at(plan, plan.stamp, stamp - plan.stamp,
                                                      (q_ref, dq_ref, ddq_ref))
        else:
            theta_d, dtheta_d, du = self.law.feedforward_at(
                self.reference_samples(q_ref, dq_ref, ddq_ref), self.period)
        return theta_d, dtheta_d, du + self.drive_friction(dtheta_d)

    def with_feedforward(self, u, q_ref, dq_ref, ddq_ref, dq=None):
        """Command ``u`` (n,) [N*m] of the law plus :meth:`feedforward_torque`, clipped to
        the effort limits (``u`` itself where the feed-forward is off). On a joint whose
        measured velocity ``dq`` (n,) [rad/s] is beyond ``velocity_limit_factor`` x its
        limit the feed-forward is left out (the velocity-limited law alone, as without it)."""
        ff = self.feedforward_torque(q_ref, dq_ref, ddq_ref)
        if dq is not None and self.velocity_limit_factor:
            ff = np.where(np.abs(dq) > self.velocity_limit_factor * self.v_max, 0.0, ff)
        if not np.any(ff):
            return u
        self.feedforward_commands += 1
        limits = getattr(self.law, "limits", np.inf)
        return np.clip(u + ff, -limits, limits)

    def fallback(self, meas):
        """Fail-safe / holding command (n,) [N*m]: PD (the delay-margin gains) to the held
        position at zero velocity + gravity compensation, or zero torque (``fail_safe:
        zero`` on a fault, or no finite state yet). A non-finite state is replaced by the
        last finite one."""
        self.remember(meas)
        if self.fail_safe == "zero" and (self.fault is not None or not self.enabled):
            return np.zeros(self.model.n)
        meas = self.last_usable
        if meas is None:
            return np.zeros(self.model.n)
        if self.hold_q is None:
            self.hold_q = meas["q"].copy()
        zero = np.zeros(self.model.n)
        return self.law(self.hold_q, self.limited(self.hold_q, zero, meas), meas)

    def limited(self, q_ref, dq_ref, meas):
        """Real time: the reference velocity (n,) [rad/s] that makes the PD law ask at most
        ``velocity_limit_factor`` x each joint's velocity limit (:func:`limit_velocity`);
        ``dq_ref`` in lockstep, when off, and for elastic arms (their motor-side error holds
        the spring's deflection, g / K, until the arm settles: clipped, the law would not
        hold the arm where the core law does). Simulated (puma560 at 250 Hz, the study's
        excitation, brakes held 0.1-0.4 s while the reference ran on, one period of command
        delay, gains from the delay margin): catching up the whole lag at once reached up to
        1.9 x the velocity limit after the release, 1.03 x with the clip at 0.9."""
        if self.lockstep or not self.velocity_limit_factor or self.model.config.elastic:
            return dq_ref
        e = self.law.position_error(q_ref, meas["q"])
        out = limit_velocity(self.law.kp, self.law.kd, e, dq_ref,
                             self.velocity_limit_factor * self.v_max)
        self.limited_commands += bool(np.any(out != dq_ref))
        return out

    def command_deadline(self, u) -> float:
        """[s] after the answered state's stamp until which command ``u`` (n,) [N*m] may be
        applied: ``deadline``, shortened (``velocity_deadline``) to the time the command,
        held open loop from that state - a robot applies the last command until a new one
        or its deadline - takes to bring a joint to its velocity limit: the acceleration
        M(q)^-1 (u - g(q)), friction left out (it decelerates); rigid arms only (an elastic
        arm's motor side, rotor inertia alone, would give deadlines shorter than any loop
        delay). Measured before (study, puma560 at
        250 Hz, 2 busy loops): a starved controller's one command of 30 N*m held for the
        whole 0.1 s deadline drove a joint from rest to 1.116 x its limit. A deadline
        shorter than the loop delay leaves the arm on its brakes: the safe side."""
        meas = self.last_usable
        if (self.lockstep or not self.velocity_deadline or meas is None
                or self.model.config.elastic):
            return self.deadline
        M = mass_matrix(self.model, meas["q"], self._pin_data)
        a = np.linalg.solve(M, u - self.law.gravity(meas["q"]))
        # a robot checks the deadline at the start of a period and applies the command over
        # that whole period: one period less
        t = max(float(np.min(time_to_limit(meas["dq"], a, self.v_max))) - self.period, 0.0)
        if t < self.deadline:
            self.shortened_deadlines += 1
            self.shortest_deadline = min(self.shortest_deadline, t)
            return t
        return self.deadline

    def remember(self, meas):
        needed = ("q", "dq", "theta", "dtheta") if self.model.config.elastic else ("q", "dq")
        if all(k in meas and np.all(np.isfinite(meas[k])) for k in needed):
            self.last_usable = meas

    def command(self, u, fail_safe=False):
        self.last_u = u
        state_ns = self.joint_ns if (self.lockstep or self.stamps_on_clock) else None
        deadline_ns = (None if self.lockstep or not self.deadline or state_ns is None
                       else state_ns + int(round(self.command_deadline(u) * 1e9)))
        self.send(u, state_ns, deadline_ns)
        self.commands += 1
        self.fail_safe_commands += fail_safe
        self.zero_commands += not np.any(u)

    def check(self, meas, q_ref=None, dq_ref=None):
        refs = [] if q_ref is None else [("reference position", q_ref),
                                         ("reference velocity", dq_ref)]
        for name, x in [*meas.items(), *refs]:
            if not np.all(np.isfinite(x)):
                return self.trip(f"non-finite {name}: {x.tolist()}")
        for name, q in [("position", meas["q"])] + refs[:1]:
            if np.any(q < self.q_lo) or np.any(q > self.q_hi):
                return self.trip(f"{name} {q.tolist()} outside the limits")
        velocities = [("velocity", meas["dq"], self.v_max * self.factor)] + [
            (name, v, self.v_max) for name, v in refs[1:]]
        for name, v, lim in velocities:
            if np.any(np.abs(v) > lim):
                hint = ("" if name != "velocity" or self.tolerated_delay is None else
                        f" (if commands came late: this loop tolerates "
                        f"{self.tolerated_delay} periods of command delay; more - a late "
                        f"command, or a robot that steps on without one - destabilises it: "
                        f"lower bandwidth_scale, or let the robot wait for the command"
                        + (f"; {self.stale_reference_commands} commands held a stale "
                           f"reference" if self.stale_reference_commands else "") + ")")
                return self.trip(f"{name} {v.tolist()} beyond the limits {lim.tolist()}{hint}")

    def trip(self, reason):
        if self.fault is None:
            self.error(f"{reason}: fail-safe '{self.fail_safe}' until re-enabled (~/enable)")
            self.fault = reason
            self.faults += 1
            self.hold_q = None          # hold where the fault happened
            self.publish_status()

    def watchdog(self):
        """Every control period: missed periods, stale states -> fault; the fail-safe is
        sent while states are missing."""
        now = self.now()
        gap = None if self.last_tick is None else now - self.last_tick
        late = gap is not None and gap > max(self.max_age / 2, 3 * self.period)
        self.last_tick = now
        if gap is not None and gap > 1.5 * self.period and not self.lockstep:
            self.missed_periods += int(round(gap / self.period)) - 1
            self.longest_stall = max(self.longest_stall, gap)
            if late:
                self.warn(f"control loop stalled {gap:.3f} s ({self.missed_periods} control "
                          f"periods missed so far)")
        if self.last_state_time is None:
            return                      # not armed before states flow
        age = now - self.last_state_time
        # time without a state counted on this node's running time: a stall of this process
        # counts as at most 3 periods (the states may be queued behind it, or their publisher
        # shares this stall), so only states missing while this node ran trip the watchdog
        if self.state_seen:
            self.state_seen = False
            self.stale_for = min(age, 3 * self.period)
        else:
            self.stale_for += min(gap, 3 * self.period) if gap is not None else self.period
        if self.stale_for > self.max_age and self.fault is None:
            self.watchdog_gap = now - self.stale_tick
            self.trip(f"stale joint states ({age:.4f} s old; none for {self.stale_for:.4f} s "
                      f"of this node's running time)")
        self.stale_tick = now
        if self.fault is not None and age > self.period:
            self.command(self.fallback(self.measurement()), fail_safe=True)

    def enable(self, on):
        self.enabled = bool(on)
        self.fault = None
        self.hold_q = None
        if on and not self.lockstep:
            self.ref = self.plan = None     # hold until a new reference arrives
        self.publish_status()
