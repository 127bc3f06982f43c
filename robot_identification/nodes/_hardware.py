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

The physics is behind :func:`make_physics`: the engine ``builtin`` (the core
:class:`~robot_identification.simulation.Simulator`, pinocchio aba + RK4) or any engine of
``robot_identification.simulation.make_simulator`` where that exists (e.g. ``mujoco``).
"""
from __future__ import annotations

import numpy as np

from robot_identification import simulation
from robot_identification.errors import ConfigError, DataError


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
    """

    def __init__(self, physics, q0, *, latency=0.0, jitter=0.0, command_timeout=0.0,
                 honour_deadline=True, seed=0):
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
        self.braked = "no command yet"   # why the brakes hold the arm ('' = released)
        self.commands = self.timeouts = self.late_commands = self.catch_up_steps = 0
        self.longest_catch_up = 0   # periods stepped in one advance()

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
            self._apply_due(t - self.dt)
            self._check_command(t - self.dt)
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
        if self.braked in ("no command yet",) or self.braked.startswith("command"):
            self.braked = ""            # a new command releases the command brakes

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
