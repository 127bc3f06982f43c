"""pd_controller: joint-space PD with gravity compensation, a watchdog and a fail-safe.

Elastic arms: PD on motor positions with on-line gravity compensation (De Luca, Siciliano &
Zollo 2005); rigid arms: PD + gravity compensation. Both from
:func:`robot_identification.simulation.make_controller` (torques clipped to the effort limits).

States of the controller (reported on ``/diagnostics``, diagnostic_msgs/DiagnosticArray, and
by ``~/status``, std_srvs/Trigger):

- ``waiting``: no joint state yet; nothing is published.
- ``holding``: states flow (the watchdog is armed), no reference yet: in real-time mode the
  arm is held where it was first seen (PD to that position + gravity compensation).
- ``running``: tracking the streamed reference.
- ``fault`` (latched until ``~/enable`` true) or ``disabled`` (``~/enable`` false): the
  fail-safe command, ``fail_safe: hold`` (default; PD to the position at the fault with zero
  velocity reference + gravity compensation: holds a gravity-loaded arm and damps its
  motion) or ``fail_safe: zero`` (zero torque).

Faults, each checked where it can first be seen:

- no joint state for more than ``watchdog_timeout`` s (arrival on the node's clock, checked
  every control period once states flow);
- stamps frozen (states keep arriving but their stamp has not advanced for
  ``watchdog_timeout`` s after it once advanced) or going back (real-time mode; in lockstep a
  stamp going back is the simulated robot's ``~/reset`` and restarts the controller);
- a non-finite state or reference; a state or reference beyond the position/velocity limits.

lockstep: a command is computed once per state stamp, when the link state, the motor state
(elastic) and the reference with that stamp have all arrived, and labelled with that stamp
(:func:`~robot_identification.nodes._common.command_msg`: the simulated robot steps once per
state, also when a command is re-sent for a re-published state); otherwise once per joint
state with the latest reference - for elastic arms once the motor state of that stamp is in
too (the stiff motor loop tolerates no period of delay; a motor topic lagging by more than
``watchdog_timeout`` is used as it is).

Overload (real time) degrades safely and is counted (``/diagnostics`` values, warnings at most
once a second): ``missed_periods`` (control periods this node's timer could not run: the
process was starved), ``longest_stall_s``; ``state_gaps`` (joint states that arrived more than
half the watchdog timeout after the previous one) and ``longest_state_gap_s``; a reference that
stopped arriving for more than ``watchdog_timeout`` s is held at its last position with zero
velocity (``stale_reference_commands``) instead of driving on at its last velocity.

Reference trajectories (real time; issue #24): a reference of several points (the excitation
publisher's look-ahead, or any JointTrajectory whose points' time_from_start count from its
header stamp, as joint_trajectory_controller reads them) is kept whole until the next one: the
reference of each joint state is its quintic Hermite interpolation of positions, velocities
and accelerations at the state's stamp (:func:`~._control_loop.quintic_hermite`; stamps on
the states' clock, else the time since it arrived), so a silent publisher's trajectory is
followed as planned (commands counted as ``lookahead_commands`` once it is silent for
``watchdog_timeout``); after its last point that point is held at zero velocity (counted as
``stale_reference_commands`` unless the trajectory was at rest: a run's final hold). A single
point is taken as it comes, as before; lockstep: the first point.

Gains (issue #24): at start-up the gains (``kp``/``kd``, else the robot config's, else the
default design, x ``bandwidth_scale``) are checked against the command delay they must
tolerate (``command_delay_periods``; auto: 0 in lockstep, 1 in real time), by
:func:`~robot_identification.simulation.tolerated_command_delay` of the linearised loop at
``rate_hz``; gains that do not are scaled down (kp s^2, kd s) until they do
(:func:`~robot_identification.simulation.delay_tolerant_gains`), with a warning naming the
given gains, the chosen ones and the delay, on ``/diagnostics`` too (``gain_choice``,
``gains_stabilised``, ``stabilising_scale``, ``kp``, ``kd``); ``stabilise_gains: false``
refuses them instead (the node exits with that line). E.g. zollo_planar's config gains are
unstable at 250 Hz even without delay.

Delay and deadlines (real time, joint state stamps on this node's clock, as drivers stamp
them): the loop delay is measured on every state (2 x its age when the command goes out + one
period) and the gains are scaled down (never up) so that their delay margin stays at least
``delay_margin_factor`` x the 95 % quantile of the recent delays (:mod:`._control_loop`):
the hold and the tracking stay stable on a machine slower than the gains were designed for.
Rigid arms in real time (``feedforward``, default true: docs/ros.md): the command adds the
nominal inverse dynamics of the reference (its acceleration from the reference message), so
that scaled-down gains still follow the excitation (:meth:`~._control_loop.ControlLoop.
feedforward_torque`). Elastic arms in real time with ``feedforward: true``: the start-up
gains are the core closed loop's at ``rate_hz``
(:func:`~robot_identification.simulation.closed_loop_gains`: the damped design where the
config's leave the loop undamped, as ``simulate``), then scaled for the delay as above; the
law gets the reference's feed-forward of the complete model (De Luca 1998, De Luca &
Lucibello 1998), as ``simulate`` does, plus the drives' nominal friction at the motor
reference velocity, at any gain scale
(:meth:`~._control_loop.ControlLoop.elastic_feedforward`; on the excitation publisher's
look-ahead made ahead along it every 12 ms and interpolated,
:class:`~._control_loop.FeedforwardTable`, ``tabled_feedforward_commands`` and
``feedforward_tables`` on ``/diagnostics``; ``feedforward_table: false``: computed on-line
every period). Both with ``feedforward: true``
only (default false for elastic arms: docs/ros.md, "Elastic arms on the pd_controller
path"); otherwise the configured gains and the regulator, as before. Each command names
the state it answers and carries a deadline, that state's stamp + ``command_deadline`` s
(a hardware-like robot that honours it brakes when no newer command came by then;
ros2_control ignores the label). Status and heartbeat on ``/diagnostics``
every ``diagnostics_period`` s.

Managed node (rclpy lifecycle, :class:`~._common.Managed`): unconfigured/inactive before its
first activation it publishes nothing; deactivated it holds the arm (the fail-safe, as
``disabled``); ``managed: true`` waits for a lifecycle manager (the launch files).

The logic is the ROS-free :class:`~._control_loop.ControlLoop`; this node converts messages.
Longer than 200 lines: about twenty parameters declared with descriptors and ranges (gains,
watchdog, deadline, delay margin, QoS, topics), the lifecycle, services and status.
"""
from __future__ import annotations

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.clock import Clock, ClockType
from rclpy.lifecycle import LifecycleNode
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory

from robot_identification.errors import ConfigError
from robot_identification.nodes._common import (LATEST, QOS, Managed, command_msg, declare,
                                                declare_optional, declare_robot, main_for,
                                                publish_live, stamp_ns, to_sec)
from robot_identification.nodes._control_loop import ControlLoop
from robot_identification.simulation import (closed_loop_gains, delay_tolerant_gains,
                                             make_controller, tolerated_command_delay)

#: name of this controller's entry in /diagnostics (``<node name>: control loop``)
STATUS_SUFFIX = ": control loop"


def choose_gains(node, model, base, rate, source, stabilise):
    """The gains' :class:`~robot_identification.simulation.GainChoice` at ``rate`` [Hz]
    for the node's ``required_delay`` and ``scale`` (bandwidth_scale) of ``base``'s gains
    (:func:`~robot_identification.simulation.delay_tolerant_gains`), said in the log: info
    when they tolerate the delay as given, a warning naming the given and the chosen gains
    when they are scaled, an error when no scale tolerates it (the most tolerant are used,
    the velocity trip guards the arm); ``stabilise`` false and gains that do not tolerate
    it: :class:`~robot_identification.errors.ConfigError` (the node exits with that line)."""
    s = node.scale
    choice = delay_tolerant_gains(model, base.kp * s * s, base.kd * s, rate_hz=rate,
                                  periods=node.required_delay)
    text = choice.describe(model.config.name, f"{source} gains"
                           + (f" x bandwidth_scale {s:g}" if s != 1.0 else ""))
    node.gain_choice_text = text
    if not choice.changed and choice.ok:
        node.get_logger().info(text)
    elif not stabilise:
        raise ConfigError(f"{text} - refused (stabilise_gains: false): give gains that "
                          f"tolerate command_delay_periods {node.required_delay}, or let the "
                          f"node scale them")
    elif choice.ok:
        node.get_logger().warning(text)
    else:
        node.get_logger().error(text)
    return choice


class PDController(Managed, ControlLoop, LifecycleNode):
    def __init__(self, **kwargs):
        super().__init__("pd_controller", **kwargs)
        self.model = model = declare_robot(self)
        sim, n = model.config.simulation, model.n
        rate = declare(self, "rate_hz", float(sim.rate_hz), "control rate [Hz]", low=1.0,
                       high=100000.0, read_only=True)
        self.period = 1.0 / rate
        kp = declare_optional(self, "kp", Parameter.Type.DOUBLE_ARRAY, "P gains [N*m/rad]; "
                              "unset: the robot config's simulation.kp (else the default "
                              "design)", low=0.0, high=1e9, length=n, read_only=True)
        kd = declare_optional(self, "kd", Parameter.Type.DOUBLE_ARRAY, "D gains [N*m*s/rad]; "
                              "unset: the robot config's simulation.kd", low=0.0, high=1e9,
                              length=n, read_only=True)
        self.scale = declare(self, "bandwidth_scale", 1.0, "scales the bandwidth of the "
                             "gains: kp * s^2, kd * s (below 1: more tolerant of command "
                             "delay); the largest scale used", low=0.01, high=10.0,
                             read_only=True)
        self.lockstep = declare(self, "lockstep", True, "one command per state stamp",
                                read_only=True)
        kp, kd = (None if kp is None else list(kp)), (None if kd is None else list(kd))
        given = kp is not None or kd is not None
        self.feedforward = declare(
            self, "feedforward", not model.config.elastic, "real time: add the nominal "
            "model's inverse dynamics of the reference to the tracking command (rigid arms: "
            "rnea without gravity + rotor inertia x reference acceleration + nominal friction "
            "at the reference velocity): the arm follows the excitation when the delay margin "
            "scales the gains down. Elastic arms: the core closed loop instead (simulate's: "
            "the gains of simulation.closed_loop_gains at rate_hz, the damped design where "
            "the configured ones leave the loop undamped, and the reference's feed-forward of "
            "the complete model, De Luca 1998, plus the drives' nominal friction at the motor "
            "reference velocity, at any gain scale). Default true for rigid "
            "arms, false for elastic arms (docs/ros.md, 'Elastic arms on the pd_controller "
            "path')", read_only=True)
        self.feedforward_table = declare(
            self, "feedforward_table", True, "elastic arms, feedforward: true: the "
            "feed-forward on the excitation publisher's look-ahead from a table made ahead "
            "along it (nodes every 12 ms, interpolated; about 0.7 x the CPU per period); "
            "false: computed on-line every period from the reference one period before, at "
            "and after the state (docs/ros.md)", read_only=True)
        loop_gains = None
        if model.config.elastic and not self.lockstep and self.feedforward:
            # the core closed loop's gains at this rate: the damped design where the config's
            # (or the default design's) leave the loop undamped, as simulate uses them
            try:
                loop_gains = closed_loop_gains(model, kp, kd, rate_hz=rate)
            except ConfigError as exc:      # no damped design at this rate: scaled below
                self.get_logger().warning(f"{exc}: the gains as configured, scaled for the "
                                          f"command delay")
            else:
                kp, kd = loop_gains.kp, loop_gains.kd
                if loop_gains.note:
                    self.get_logger().warning(loop_gains.describe(model.config.name))
        base = make_controller(model, kp, kd)
        self.law_for = lambda s: make_controller(model, base.kp * s * s, base.kd * s)
        delay = declare(self, "command_delay_periods", -1, "command delay [control periods] "
                        "the gains must tolerate (simulation.tolerated_command_delay of the "
                        "linearised loop); -1: 0 in lockstep, 1 in real time (a robot that "
                        "runs free of this node applies a command from the period after the "
                        "state it answers)", low=-1, high=40, read_only=True)
        self.required_delay = (0 if self.lockstep else 1) if delay < 0 else delay
        stabilise = declare(self, "stabilise_gains", True, "gains whose loop does not "
                            "tolerate command_delay_periods: true - scaled down (kp s^2, kd "
                            "s) until it does, with a warning naming both; false - refused "
                            "(the node exits naming them)", read_only=True)
        source = ("the damped design's" if getattr(loop_gains, "source", "") == "damped design"
                  else "the parameters'" if given
                  else "the robot config's" if sim.kp is not None or sim.kd is not None
                  else "the default design's")
        self.gain_choice = choose_gains(self, model, base, rate, source, stabilise)
        self.margin_factor = declare(
            self, "delay_margin_factor", 2.0, "real time: gains scaled so that their delay "
            "margin is at least this times the largest loop delay measured (0: never scaled)",
            low=0.0, high=100.0, read_only=True)
        self.max_age = declare(self, "watchdog_timeout", 0.05,
                               "[s] states older than this (arrival) or with a stamp frozen "
                               "this long -> fail-safe", low=1e-4, high=1e4)
        deadline = declare(self, "command_deadline", -1.0, "[s] after the answered state's "
                           "stamp a command must not be applied (-1: the smaller of "
                           "watchdog_timeout and 0.1 s, 0: no deadline); real time", low=-1.0,
                           high=1e4, read_only=True)
        #: a robot honouring the deadline applies a dead controller's last torque at most this
        #: long: 1 s of it let puma560 reach 1.2-2.0 x its velocity limits (measured)
        self.deadline = min(self.max_age, 0.1) if deadline < 0 else deadline
        self.fail_safe = declare(self, "fail_safe", "hold", "reaction to a fault: hold "
                                 "(position + gravity compensation + damping) or zero torque",
                                 choices=("hold", "zero"))
        self.factor = declare(self, "state_limit_factor", 1.5,
                              "measured states may exceed the velocity limits by this factor "
                              "(elastic vibration); references may not", low=1.0, high=100.0)
        self.enabled_param = declare(self, "enabled", True, "start enabled", read_only=True)
        self.velocity_limit_factor = declare(
            self, "velocity_limit_factor", 0.9, "real time: the velocity the PD law asks of a "
            "joint (reference velocity + kp/kd x position error) is clipped to this x its "
            "velocity limit (Khatib's velocity limiting): a lag is caught up at most at the "
            "limit; 0 = off; rigid arms", low=0.0, high=10.0, read_only=True)
        self.velocity_deadline = declare(
            self, "velocity_deadline", True, "real time: a command's deadline is shortened "
            "to the time its torque, held open loop, takes to bring a joint to its velocity "
            "limit (a robot honouring deadlines then brakes instead); rigid arms",
            read_only=True)
        self.scale *= self.gain_choice.scale      # the stable gains: scaled from there on
        self.enabled = False            # until activated
        self.stamps_on_clock = None     # judged from the first state
        self.init_loop()
        if not self.margin_factor:
            self.measure_delay = lambda stamp: None
        #: real time: command delay [periods] the linearised loop with these gains tolerates
        self.tolerated_delay = (None if self.lockstep else tolerated_command_delay(
            model, self.law, rate_hz=rate))
        # lockstep: every message counts; real time: the newest state is what matters
        sub_qos = QOS if self.lockstep else LATEST
        self.pub = self.create_publisher(Float64MultiArray, declare(
            self, "command_topic", "effort_controller/commands", "effort commands"), QOS)
        self.create_subscription(JointState, declare(
            self, "joint_states_topic", "joint_states", "link side"), self.on_joint, sub_qos)
        if model.config.elastic:
            self.create_subscription(JointState, declare(
                self, "motor_states_topic", "motor_states", "motor side"), self.on_motor,
                sub_qos)
        self.create_subscription(JointTrajectory, declare(
            self, "reference_topic", "reference", "reference"), self.on_reference, sub_qos)
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_service(SetBool, "~/enable", self.on_enable)
        self.create_service(Trigger, "~/status", self.on_status)
        self.create_timer(1.0 / rate, self.on_watchdog)
        # diagnostics on the steady clock: also while a simulated clock stands still
        self.create_timer(declare(self, "diagnostics_period", 0.5, "[s] /diagnostics period "
                                  "(status and heartbeat)", low=0.01, high=60.0),
                          self.publish_status, clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.last_msg = None
        self.ever_active = False
        self.start_lifecycle()

    # -- lifecycle, clock, outputs (ControlLoop's hooks) ----------------------------------
    def on_active(self, active):
        self.ever_active |= active
        if active != self.enabled:
            self.enable(active and self.enabled_param)

    def now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def send(self, u, state_ns, deadline_ns):
        self.last_msg = command_msg(u, state_ns, deadline_ns)
        publish_live(self, self.pub, self.last_msg)

    def resend(self):
        publish_live(self, self.pub, self.last_msg)

    def update(self):
        if self.ever_active:            # before the first activation: nothing is published
            ControlLoop.update(self)

    def info(self, text):
        self.get_logger().info(text)

    def warn(self, text):
        self.get_logger().warning(text, throttle_duration_sec=1.0)

    def error(self, text):
        self.get_logger().error(text)

    def publish_status(self):
        s = self.state
        level = (DiagnosticStatus.ERROR if s == "fault" else DiagnosticStatus.OK if self.ready
                 else DiagnosticStatus.WARN)
        status = DiagnosticStatus(
            level=level, name=self.get_name() + STATUS_SUFFIX, message=self.status_message(),
            hardware_id=self.model.config.name,
            values=[KeyValue(key=k, value=str(v)) for k, v in
                    {**self.status_values(), "lifecycle": self.lifecycle}.items()])
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self.get_clock().now().to_msg()
        self.pub_diag.publish(msg)

    # -- ROS inputs ----------------------------------------------------------------------
    def on_status(self, request, response):
        response.success, response.message = self.ready, self.status_message()
        return response

    def _vector(self, names, values):
        d = dict(zip(names, values))
        return np.array([d.get(j, np.nan) for j in self.model.joint_names], dtype=float)

    def on_joint(self, msg):
        self.joint_state(to_sec(msg.header.stamp), stamp_ns(msg.header.stamp),
                         self._vector(msg.name, msg.position),
                         self._vector(msg.name, msg.velocity))

    def on_motor(self, msg):
        self.motor_state(to_sec(msg.header.stamp), self._vector(msg.name, msg.position),
                         self._vector(msg.name, msg.velocity))

    def on_reference(self, msg):
        if len(msg.points) > 1:         # a look-ahead: the controller keeps the trajectory
            self.reference_trajectory(to_sec(msg.header.stamp), *self._points(msg))
            return
        p = msg.points[0] if msg.points else None
        self.reference_point(to_sec(msg.header.stamp),
                             self._vector(msg.joint_names, p.positions if p else []),
                             self._vector(msg.joint_names, p.velocities if p else []),
                             self._vector(msg.joint_names, p.accelerations if p else []))

    def _points(self, msg):
        """times (m,) [s] (time_from_start) and q, dq, ddq (m, n) of a trajectory's points
        in this robot's joint order (a joint or field missing: NaN)."""
        index = {name: i for i, name in enumerate(msg.joint_names)}
        cols = [index.get(j, -1) for j in self.model.joint_names]
        times = np.array([to_sec(p.time_from_start) for p in msg.points])

        def matrix(field):
            rows = [getattr(p, field) for p in msg.points]
            width = len(msg.joint_names)
            if min(cols) >= 0 and all(len(row) == width for row in rows):
                try:                    # rclpy: array.array('d') rows, read as one buffer
                    flat = np.frombuffer(b"".join(rows), dtype=float)
                except TypeError:       # (lists)
                    flat = np.array(rows, dtype=float)
                return flat.reshape(len(rows), width)[:, cols]
            out = np.full((len(rows), len(cols)), np.nan)
            for k, row in enumerate(rows):
                for j, c in enumerate(cols):
                    if 0 <= c < len(row):
                        out[k, j] = row[c]
            return out
        return times, matrix("positions"), matrix("velocities"), matrix("accelerations")

    def on_watchdog(self):
        if self.ever_active:
            self.watchdog()

    def on_enable(self, request, response):
        self.enable(request.data)
        response.success, response.message = True, "enabled" if request.data else "disabled"
        return response


def main(args=None):
    main_for(PDController, args)


if __name__ == "__main__":
    main()
