"""ROS-free core of the hardware-like robot node (:mod:`.hardware_robot`): an arm that runs on
the wall clock whatever its controller does, as ros2_control hardware does.

- The physics advances in whole control periods to the time it is asked for
  (:meth:`HardwareArm.advance`): a process that was starved catches up with the command that
  was in force, it never waits for the controller (no lockstep).
- It applies the LAST command until a new one arrives (``forward_command_controller`` has no
  timeout). Optional: a command latency and jitter (a command is applied from its arrival
  plus ``latency`` plus a uniform draw in [0, ``jitter``]); a hardware command timeout
  (``command_timeout`` > 0: no new command for that long -> the brakes hold the arm, as a
  driver's protective stop); a command's own deadline (``honour_deadline``: a command stamped
  with a deadline, :func:`robot_identification.nodes._common.command_msg`, is not applied
  after it -> brakes).
- Before the first command the brakes hold the arm (as a real arm before its controller
  starts); a diverging integration engages them too.
- Optionally (``tracker``, a :class:`TrajectoryTracker`) a joint_trajectory_controller runs
  in the hardware's own cycle instead of the effort commands: each period it evaluates the
  latest trajectory at the period's start and the core PD law
  (:func:`robot_identification.simulation.make_controller`) computes the torque from the
  state at that instant, as the closed loop of ``simulate`` does (no command delay). Before
  the first trajectory the brakes hold the arm.

The physics is behind :func:`make_physics`: the engine ``builtin`` (the core
:class:`~robot_identification.simulation.Simulator`, pinocchio aba + RK4) or any engine of
``robot_identification.simulation.make_simulator`` where that exists (e.g. ``mujoco``).
"""
from __future__ import annotations

import numpy as np

from robot_identification import simulation
from robot_identification.errors import ConfigError, DataError
from robot_identification.nodes._control_loop import quintic_hermite

#: why the brakes hold an arm that was never released (not a fault): effort commands / the
#: in-cycle trajectory tracker
NO_COMMAND, NO_TRAJECTORY = "no command yet", "no trajectory yet"
#: how the brakes' reason begins when the in-cycle controller refused a trajectory (a new
#: trajectory it can play releases them)
REFUSED = "trajectory refused"
#: The in-cycle trajectory controller's protective stop: the brakes engage when a joint moves
#: faster than this x its velocity limit (the excitation plays within 0.9 of the limits).
VELOCITY_TRIP = 1.1
#: [s] the in-cycle controller's forecast of a trajectory (:class:`TrajectoryTracker`) runs
#: this long past its last point (the arm settling on it).
FORECAST_AFTER = 1.0
#: [s] the in-cycle controller's forecast samples the plan this often at most (the excitation
#: publisher's points are 0.01 s apart), the reference held in between.
FORECAST_PERIOD = 0.01
#: [s] rigid arms: the in-cycle forecast linearises the loop anew at the plan's position after
#: each segment this long (szabo_3dof from 0.05 rad beside the study's start, 1 kHz: the loop
#: at its initial pose is stable, at the start 0.05 rad on it diverges)
FORECAST_SEGMENT = 1.0


def make_physics(model, rate_hz, engine="builtin", seed=0):
    """A stepping simulator of ``model`` at ``rate_hz``: ``step(u)``, ``state`` (``t``, ``q``,
    ``dq``, elastic: ``theta``, ``dtheta``), ``reset(q0, dq0=, theta0=, t0=)``.

    ``engine``: ``builtin`` (:class:`~robot_identification.simulation.Simulator`, positions
    not quantised: the node quantises nothing, a driver's encoders are its own business), or
    any engine ``robot_identification.simulation.make_simulator`` knows.

    Raises
    ------
    ConfigError
        An engine that is not available here.
    """
    make = getattr(simulation, "make_simulator", None)
    if make is not None:
        return make(model, engine=engine, rate_hz=rate_hz, seed=seed, quantise=False)
    if engine != "builtin":
        raise ConfigError(f"physics engine '{engine}' is not available here (builtin only)")
    return simulation.Simulator(model, rate_hz=rate_hz, seed=seed, quantise=False)


class HardwareArm:
    """An arm stepped on a clock, applying the latest command (see the module docstring).

    Parameters
    ----------
    physics : simulator
        :func:`make_physics` of the model.
    q0 : array_like (n,)
        Initial link positions [rad] (at rest; elastic arms in static equilibrium).
    latency, jitter : float
        [s] a command is applied from ``arrival + latency + U(0, jitter)``.
    command_timeout : float
        [s] 0: none (the last command stays applied forever); else the brakes engage when
        the applied command is older than this.
    honour_deadline : bool
        A command's deadline (``command(..., deadline=)``) ends its application: brakes.
    seed : int
        Seed of the jitter draws.
    tracker : TrajectoryTracker, optional
        A joint_trajectory_controller in the hardware's cycle (:meth:`trajectory`); the
        torque each period is its command (effort commands are then not applied).
    """

    def __init__(self, physics, q0, *, latency=0.0, jitter=0.0, command_timeout=0.0,
                 honour_deadline=True, seed=0, tracker=None):
        self.physics = physics
        self.dt = physics.dt
        self.n = physics.n
        self.latency, self.jitter = float(latency), float(jitter)
        self.command_timeout = float(command_timeout)
        self.honour_deadline = bool(honour_deadline)
        self._rng = np.random.default_rng(seed)
        self.physics.reset(np.asarray(q0, dtype=float))
        self.t0 = None              # clock time [s] of period 0
        self.k = 0                  # periods stepped
        self.pending = []           # (effective time [s], u, deadline or None), in arrival order
        self.u = np.zeros(self.n)   # the command applied
        self.u_since = None         # clock time [s] the applied command took effect
        self.deadline = None        # [s] deadline of the applied command
        self.tracker = tracker
        self.braked = NO_COMMAND if tracker is None else NO_TRAJECTORY   # '' = released
        self.commands = self.timeouts = self.late_commands = self.catch_up_steps = 0
        self.longest_catch_up = 0   # periods stepped in one advance()
        self.trajectories = 0       # trajectories received (tracker)
        self.velocity_trips = 0     # protective stops on a joint beyond VELOCITY_TRIP x limit
        self.pending_trajectories = []      # (arrival [s], start [s] or None, points or None)

    # ------------------------------------------------------------------ inputs
    def command(self, u, now, deadline=None):
        """A command (n,) [N*m] arriving at clock time ``now`` [s], optionally valid until
        ``deadline`` [s].

        Raises
        ------
        DataError
            Wrong size or non-finite values (the command is not applied).
        """
        u = np.asarray(u, dtype=float).reshape(-1)
        if u.shape != (self.n,) or not np.all(np.isfinite(u)):
            raise DataError(f"command must be {self.n} finite torques, got {u.tolist()}")
        delay = self.latency + (self._rng.uniform(0.0, self.jitter) if self.jitter else 0.0)
        self.pending.append((now + delay, u, deadline))
        self.commands += 1

    def trajectory(self, now, times=None, q=None, dq=None, ddq=None, start=None):
        """A trajectory for the in-cycle tracker arriving at clock time ``now`` [s]: points
        at ``times`` (m,) [s, increasing] after ``start`` [s, clock time; None: the first
        period from its arrival on, as an unstamped trajectory in ros2_control], positions
        ``q``, velocities ``dq`` and accelerations ``ddq`` (m, n) [rad, rad/s, rad/s^2;
        ``ddq`` None: zeros]. No points (``times`` None or empty): hold the arm where it is.
        It replaces the one played from the first period starting at or after ``now``.

        Raises
        ------
        DataError
            No tracker, wrong shapes, non-finite values or times not increasing (the
            trajectory is not applied).
        """
        if self.tracker is None:
            raise DataError("this arm has no trajectory controller (effort commands only)")
        points = None if times is None or len(times) == 0 else self.tracker.checked(
            times, q, dq, ddq)
        self.pending_trajectories.append((now, start, points))
        self.trajectories += 1

    # ------------------------------------------------------------------ clock
    def start(self, now):
        """Period 0 at clock time ``now`` [s]."""
        self.t0 = now

    @property
    def time(self) -> float:
        """Clock time [s] of the latest period."""
        return self.t0 + self.k * self.dt

    def advance(self, now):
        """Step the physics period by period up to clock time ``now`` [s]; returns the states
        of the periods stepped (list of dict ``t`` [s, clock time], ``q``, ``dq`` [rad,
        rad/s], ``effort`` (n,) [N*m] applied over the period before, elastic ``theta``,
        ``dtheta``)."""
        if self.t0 is None:
            self.start(now)
        target = int(np.floor((now - self.t0) / self.dt + 1e-9))
        out = []
        steps = 0
        while self.k < target:
            t = self.t0 + (self.k + 1) * self.dt
            if self.tracker is None:
                self._apply_due(t - self.dt)
                self._check_command(t - self.dt)
            else:
                self._track(t - self.dt)
            self._step()
            self.k += 1
            steps += 1
            out.append(self.measure(t))
        if steps > 1:
            self.catch_up_steps += steps - 1
            self.longest_catch_up = max(self.longest_catch_up, steps)
        return out

    def _apply_due(self, t):
        due = [p for p in self.pending if p[0] <= t + 1e-12]
        if not due:
            return
        self.pending = [p for p in self.pending if p[0] > t + 1e-12]
        eff, u, deadline = due[-1]
        self.u, self.u_since, self.deadline = u, eff, deadline
        if self.braked == NO_COMMAND or self.braked.startswith("command"):
            self.braked = ""            # a new command releases the command brakes

    def _track(self, t):
        """The tracker's torque for the period starting at ``t`` [s] from the state now."""
        due = [p for p in self.pending_trajectories if p[0] <= t + 1e-12]
        if due:
            self.pending_trajectories = self.pending_trajectories[len(due):]
        if self.braked and self.braked != NO_TRAJECTORY and not (
                due and self.braked.startswith(REFUSED)):
            return                      # diverged or tripped: held until a reset
        meas = self.physics.measure()
        if due:
            _, start, points = due[-1]
            self.tracker.play(t, meas, points, t if start is None else start)
            if self.tracker.refused:    # the brakes hold the arm until a trajectory it can play
                if not self.braked.startswith(REFUSED):
                    self._brake(self.tracker.refused)
                else:
                    self.braked = self.tracker.refused
                return
            self.braked = ""
        if not self.braked:
            fast = np.abs(meas["dq"]) / self.tracker.v_max
            j = int(np.argmax(fast))
            if fast[j] > VELOCITY_TRIP:
                self.velocity_trips += 1
                self._brake(f"velocity limit: {self.tracker.names[j]} at "
                            f"{abs(meas['dq'][j]):.3g} rad/s, {fast[j]:.3g} x its limit")
                return
            self.u = self.tracker.command(t, meas)

    def _check_command(self, t):
        if self.braked or self.u_since is None:
            return
        if self.honour_deadline and self.deadline is not None and t > self.deadline:
            self.late_commands += 1
            self._brake(f"command deadline passed ({t - self.deadline:.4f} s ago)")
        elif self.command_timeout > 0 and t - self.u_since > self.command_timeout:
            self.timeouts += 1
            self._brake(f"command timeout: no command for {t - self.u_since:.4f} s")

    def _brake(self, why):
        self.braked = why
        s = self.physics.state
        self.physics.reset(s.q, theta0=getattr(s, "theta", None), t0=s.t)

    def _step(self):
        if self.braked:                 # the brakes hold the arm where it is, at rest
            self.physics.t = self.physics.t + self.dt
            return
        try:
            self.physics.step(self.u)
        except DataError as exc:        # the integration diverged: a command far too large
            self.braked = f"diverged: {exc}"
            self.physics.t = self.physics.t + self.dt

    def measure(self, t):
        """The current state stamped ``t`` [s] (clock time)."""
        s = self.physics.state
        out = {"t": t, "q": s.q, "dq": s.dq,
               "effort": np.zeros(self.n) if self.braked else self.u.copy()}
        if getattr(s, "theta", None) is not None:
            out.update(theta=s.theta, dtheta=s.dtheta)
        return out


class TrajectoryTracker:
    """A joint_trajectory_controller in the hardware's cycle (ros2_control's semantics on its
    topic interface): it plays the latest trajectory, interpolated at each period's start by
    :func:`~robot_identification.nodes._control_loop.quintic_hermite` (the quintic spline
    joint_trajectory_controller uses for points with positions, velocities and
    accelerations), from the arm's state when it arrived (the point before the trajectory,
    zero acceleration) to its first point, holds the last point (zero velocity) after it,
    and holds where the arm is on an empty trajectory. The torque is the core closed loop's
    law, :func:`robot_identification.simulation.make_controller` (rigid arms: PD + gravity
    compensation, Takegaki & Arimoto 1981; elastic arms: PD on the motor positions with
    gravity compensation, De Luca, Siciliano & Zollo 2005, and the reference's inverse
    dynamics as feedforward, :meth:`~robot_identification.simulation.ElasticPDController.
    feedforward`, from the plan one period before and after), with the gains of
    :func:`robot_identification.simulation.closed_loop_gains` at ``rate_hz`` (as
    ``simulate``), times an optional bandwidth scale (kp s^2, kd s; an override).

    Before a trajectory is played, :class:`~robot_identification.simulation.TrackingForecast`
    forecasts the loop along it (from the arm's state, :data:`FORECAST_AFTER` past its last
    point): a joint forecast beyond :data:`VELOCITY_TRIP` x its velocity limit, where the
    brakes would stop it, refuses it (``refused`` says why; :class:`HardwareArm` engages the
    brakes until a trajectory it can play: holding with the same loop where the forecast
    diverges would diverge too).

    Parameters
    ----------
    model : RobotModel
    rate_hz : float
        Control rate [Hz] (the hardware's).
    q0 : array_like (n,)
        [rad] linearisation point of the gain choice (the initial pose).
    bandwidth_scale : float
        s > 0: the gains kp s^2, kd s (1: exactly ``simulate``'s closed loop).

    Raises
    ------
    ConfigError
        ``bandwidth_scale`` not finite and positive.
    """

    def __init__(self, model, rate_hz, q0, bandwidth_scale=1.0):
        s = float(bandwidth_scale)
        if not (np.isfinite(s) and s > 0):
            raise ConfigError(f"trajectory controller bandwidth scale must be > 0, got {s}")
        self.model = model
        self.n = model.n
        self.dt = 1.0 / float(rate_hz)
        self.names = tuple(model.joint_names)
        self.v_max = np.array([j.limits.velocity if j.limits.velocity else np.inf
                               for j in model.config.joints], dtype=float)
        self.gain_choice = simulation.closed_loop_gains(model, rate_hz=rate_hz,
                                                        q=np.asarray(q0, dtype=float))
        self.scale = s
        self.law = simulation.make_controller(model, self.gain_choice.kp * s ** 2,
                                              self.gain_choice.kd * s)
        self.elastic = bool(model.config.elastic)
        # the loop linearised at the initial pose (rigid arms: anew every FORECAST_SEGMENT s
        # of a plan, a few ms each; elastic arms: once, 0.5 s for six elastic joints)
        self._forecaster = simulation.TrackingForecast(
            model, self.law, rate_hz, np.asarray(q0, dtype=float),
            segment=np.inf if self.elastic else FORECAST_SEGMENT)
        self.plan = None        # (times (m,) [s, clock time], q, dq, ddq (m, n))
        self.holding = True     # after the last point / an empty trajectory / none yet
        self.refused = ""       # why the latest trajectory was refused ('' = played)
        self.forecast_ratio = np.zeros(self.n)  # its forecast peak |dq| / velocity limit

    def checked(self, times, q, dq, ddq=None):
        """(times, q, dq, ddq) as float arrays (m,), (m, n) x 3.

        Raises
        ------
        DataError
            Shapes, non-finite values, times not strictly increasing or negative.
        """
        times = np.asarray(times, dtype=float).reshape(-1)
        m = len(times)
        try:
            q, dq = (np.asarray(x, dtype=float).reshape(m, self.n) for x in (q, dq))
            ddq = (np.zeros((m, self.n)) if ddq is None
                   else np.asarray(ddq, dtype=float).reshape(m, self.n))
        except ValueError:
            raise DataError(f"trajectory: every one of its {m} points needs {self.n} positions "
                            f"and velocities (accelerations optional)") from None
        if not all(np.all(np.isfinite(x)) for x in (times, q, dq, ddq)):
            raise DataError("trajectory: non-finite times, positions, velocities or "
                            "accelerations")
        if times[0] < 0 or np.any(np.diff(times) <= 0):
            raise DataError(f"trajectory: time_from_start must be >= 0 and strictly "
                            f"increasing, got {times.tolist()[:6]}")
        return times, q, dq, ddq

    def play(self, t, meas, points, start):
        """From ``t`` [s] on, play ``points`` ((times, q, dq, ddq) of :meth:`checked`, times
        after ``start`` [s]), starting from the measured state ``meas`` (``q``, ``dq``);
        ``points`` None: hold ``meas['q']``. A trajectory (or hold) whose forecast takes a
        joint beyond :data:`VELOCITY_TRIP` x its velocity limit is not played: the arm holds
        ``meas['q']`` and :attr:`refused` says why."""
        q_now, dq_now = (np.asarray(meas[k], dtype=float) for k in ("q", "dq"))
        hold = (np.array([t]), q_now[None], np.zeros((1, self.n)), np.zeros((1, self.n)))
        self.refused = ""
        if points is None:              # hold where the arm is
            times, q, dq, ddq = hold
        else:
            times, q, dq, ddq = points
            times = times + start
            if times[0] > t:            # the point before the trajectory: the state now
                times = np.concatenate([[t], times])
                q, dq = np.vstack([q_now, q]), np.vstack([dq_now, dq])
                ddq = np.vstack([np.zeros(self.n), ddq])
        self.plan = (times, q, dq, ddq)
        self.forecast_ratio = self.forecast(t, meas)
        why = simulation.velocity_message(self.names, self.v_max, self.forecast_ratio,
                                          "this trajectory", VELOCITY_TRIP)
        if why:
            self.refused = f"{REFUSED}: {why}"
            self.plan = hold

    def forecast(self, t, meas):
        """Forecast peak |dq| / velocity limit (n,) of the plan from ``t`` [s] and the state
        ``meas`` to :data:`FORECAST_AFTER` past its last point
        (:class:`~robot_identification.simulation.TrackingForecast`, linearised at the
        initial pose when the tracker was made, rigid arms anew every
        :data:`FORECAST_SEGMENT`; the plan sampled every
        :data:`FORECAST_PERIOD` at most and held in between, the feedforward's derivatives
        over that period: it runs in the hardware's cycle)."""
        times = self.plan[0]
        stride = max(1, int(FORECAST_PERIOD / self.dt + 1e-9))
        h = stride * self.dt
        grid = t + h * np.arange(int(np.ceil((times[-1] + FORECAST_AFTER - t) / h)) + 1)
        refs = [self._ref(x) for x in grid]
        q, dq, ddq = (np.array([r[k] for r in refs]) for k in range(3))
        ff = (simulation.sampled_feedforward(self.law, q, dq, ddq, h, self._ref(grid[-1] + h))
              if self.elastic else None)
        state = {k: meas[k] for k in ("q", "dq", "theta", "dtheta") if k in meas}
        return self._forecaster.ratio(q, dq, state, ff, stride)

    def _ref(self, t):
        """(q_d, dq_d, ddq_d) (n,) [rad, rad/s, rad/s^2] of the plan at clock time ``t``
        [s]: interpolated; before its first point that point; after its last point that
        point at rest."""
        times, q, dq, ddq = self.plan
        q_d, dq_d, ddq_d = quintic_hermite(t, times, q, dq, ddq)
        if t >= times[-1]:
            return q_d, np.zeros(self.n), np.zeros(self.n)
        return q_d, dq_d, ddq_d

    def reference(self, t):
        """(q_d, dq_d) (n,) [rad, rad/s] at clock time ``t`` [s]: the plan interpolated,
        after its last point that point at rest."""
        q_d, dq_d, _ = self._ref(t)
        self.holding = t >= self.plan[0][-1]
        return q_d, dq_d

    def command(self, t, meas):
        """Torque (n,) [N*m; elastic: link-referred motor torque] for the period starting at
        ``t`` [s] from the measurement ``meas`` (``q``, ``dq``; elastic ``theta``,
        ``dtheta``)."""
        q_d, dq_d = self.reference(t)
        if not self.elastic:
            return self.law(q_d, dq_d, meas)
        refs = [self._ref(t - self.dt), self._ref(t), self._ref(t + self.dt)]
        return self.law(q_d, dq_d, meas, self.law.feedforward_at(refs, self.dt))
