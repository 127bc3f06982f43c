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
"""
from __future__ import annotations

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory

from robot_identification.nodes._common import (LATEST, QOS, command_msg, declare,
                                                declare_optional, declare_robot, main_for,
                                                stamp_ns, to_sec)
from robot_identification.simulation import make_controller, tolerated_command_delay

#: name of this controller's entry in /diagnostics (``<node name>: control loop``)
STATUS_SUFFIX = ": control loop"


class PDController(Node):
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
        scale = declare(self, "bandwidth_scale", 1.0, "scales the bandwidth of the gains: "
                        "kp * s^2, kd * s (below 1: more tolerant of command delay)",
                        low=0.01, high=10.0, read_only=True)
        self.law = make_controller(model, None if kp is None else list(kp),
                                   None if kd is None else list(kd))
        if scale != 1.0:
            self.law = make_controller(model, self.law.kp * scale**2, self.law.kd * scale)
        self.lockstep = declare(self, "lockstep", True, "one command per state stamp",
                                read_only=True)
        self.max_age = declare(self, "watchdog_timeout", 0.05,
                               "[s] states older than this (arrival) or with a stamp frozen "
                               "this long -> fail-safe", low=1e-4, high=1e4)
        self.fail_safe = declare(self, "fail_safe", "hold", "reaction to a fault: hold "
                                 "(position + gravity compensation + damping) or zero torque",
                                 choices=("hold", "zero"))
        factor = declare(self, "state_limit_factor", 1.5,
                         "measured states may exceed the velocity limits by this factor "
                         "(elastic vibration); references may not", low=1.0, high=100.0)
        lim = [j.limits for j in model.config.joints]
        self.q_lo = np.array([li.position[0] if li.position else -np.inf for li in lim])
        self.q_hi = np.array([li.position[1] if li.position else np.inf for li in lim])
        self.v_max = np.array([li.velocity or np.inf for li in lim])
        self.factor = factor
        #: real time: command delay [periods] the linearised loop with these gains tolerates
        #: (docs/ros.md, "Overload"), said with a measured velocity beyond the limits
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
        self.create_timer(declare(self, "diagnostics_period", 0.5, "[s] /diagnostics period",
                                  low=0.01, high=60.0), self.publish_status,
                          clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.enabled = declare(self, "enabled", True, "start enabled", read_only=True)
        self.fault = None
        self.faults = 0                # faults since start
        self.joint = self.motor = self.ref = None
        self.last_usable = None       # last finite measurement (dict of (n,) arrays)
        self.hold_q = None            # [rad] position held by the fail-safe / before a reference
        self.last_state_time = None   # node clock [s] of the last joint state
        self.stamp_time = None        # node clock [s] when the state stamp last advanced
        self.stamp_advanced = False   # the stamp advanced at least once
        self.last_tick = None         # node clock [s] of the last watchdog tick
        self.stale_tick = -np.inf     # node clock [s] of the previous watchdog tick
        self.state_seen = False       # a joint state arrived since the previous tick
        self.stale_for = 0.0          # [s] of this node's running time without a state
        self.watchdog_gap = None      # [s] counted by the tick that tripped on stale states
        self.last_stamp = -np.inf     # state stamp of the last command
        self.last_u = None            # last command [N*m] (re-sent for a repeated state)
        self.last_msg = None          # ... as published (lockstep: labelled with its state)
        self.joint_ns = None          # [ns] header stamp of the latest joint state
        self.commands = self.fail_safe_commands = self.zero_commands = 0
        self.ref_time = None          # node clock [s] when the reference last arrived
        self.previous_state_time = None   # node clock [s] of the joint state before the last
        # overload counts (real time)
        self.missed_periods = self.state_gaps = self.stale_reference_commands = 0
        self.longest_stall = self.longest_state_gap = 0.0     # [s]

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

    def now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

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

    def publish_status(self):
        s = self.state
        level = (DiagnosticStatus.ERROR if s == "fault" else DiagnosticStatus.OK if self.ready
                 else DiagnosticStatus.WARN)
        values = {"state": s, "fault": self.fault or "", "fail_safe": self.fail_safe,
                  "faults": self.faults, "commands": self.commands,
                  "fail_safe_commands": self.fail_safe_commands,
                  "zero_torque_commands": self.zero_commands,
                  "state_age_s": f"{self.state_age():.4f}",
                  "watchdog_timeout_s": self.max_age,
                  "missed_periods": self.missed_periods,
                  "longest_stall_s": f"{self.longest_stall:.4f}",
                  "state_gaps": self.state_gaps,
                  "longest_state_gap_s": f"{self.longest_state_gap:.4f}",
                  "stale_reference_commands": self.stale_reference_commands,
                  "tolerated_delay_periods": ("" if self.tolerated_delay is None
                                              else self.tolerated_delay)}
        status = DiagnosticStatus(
            level=level, name=self.get_name() + STATUS_SUFFIX, message=self.status_message(),
            hardware_id=self.model.config.name,
            values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self.get_clock().now().to_msg()
        self.pub_diag.publish(msg)

    def on_status(self, request, response):
        response.success, response.message = self.ready, self.status_message()
        return response

    # -- inputs --------------------------------------------------------------------------
    def _vector(self, names, values):
        d = dict(zip(names, values))
        return np.array([d.get(j, np.nan) for j in self.model.joint_names], dtype=float)

    def on_joint(self, msg):
        stamp = to_sec(msg.header.stamp)
        now = self.now()
        previous = self.joint[0] if self.joint is not None else None
        self.joint = (stamp, self._vector(msg.name, msg.position),
                      self._vector(msg.name, msg.velocity))
        self.joint_ns = stamp_ns(msg.header.stamp)
        if self.last_state_time is not None and not self.lockstep:
            gap = now - self.last_state_time
            self.longest_state_gap = max(self.longest_state_gap, gap)
            if gap > self.max_age / 2:
                self.state_gaps += 1
                self.get_logger().warning(
                    f"joint states arrived {gap:.3f} s after the previous one ({self.state_gaps} "
                    f"such gaps; watchdog {self.max_age:g} s)", throttle_duration_sec=1.0)
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
            self.get_logger().warning(f"state t = {stamp:.4f} s repeated: command re-sent")
            self.pub.publish(self.last_msg)
            return
        self.update()

    def on_motor(self, msg):
        self.motor = (to_sec(msg.header.stamp), self._vector(msg.name, msg.position),
                      self._vector(msg.name, msg.velocity))
        if self.lockstep or (self.joint is not None and self.joint[0] > self.last_stamp):
            self.update()       # real time: a joint state that waited for its motor state

    def on_reference(self, msg):
        p = msg.points[0] if msg.points else None
        self.ref = (to_sec(msg.header.stamp),
                    self._vector(msg.joint_names, p.positions if p else []),
                    self._vector(msg.joint_names, p.velocities if p else []))
        self.ref_time = self.now()
        if self.lockstep:
            self.update()

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
                self.get_logger().info(f"state time went back to {t:.4f} s: controller reset")
                self.last_stamp, self.last_u = -np.inf, None
            if t <= self.last_stamp:
                return
        elif (self.motor is not None and self.motor[0] < t and t > self.last_stamp
              and t - self.motor[0] <= self.max_age):
            # real time, elastic: the law acts on the motor state; one of an older stamp
            # than the link state is a period of delay, which the stiff motor loop may not
            # tolerate (docs/ros.md, "Overload"): wait for the motor state of this stamp
            # (on_motor computes then); a motor topic that lags by more than the watchdog
            # timeout is used as it is
            return
        new = t > self.last_stamp
        self.last_stamp = max(t, self.last_stamp)
        meas = self.measurement()
        self.remember(meas)
        if new:
            self.check(meas, *(self.ref[1:] if self.ref is not None else ()))
        if self.fault is not None or not self.enabled:
            self.command(self.fallback(meas), fail_safe=True)
        elif self.ref is None:           # armed: hold the arm until the reference flows
            self.command(self.fallback(meas))
        elif new:
            self.command(self.law(*self.reference(), meas))
        elif self.last_u is not None:    # a repeated stamp: nothing new, same command
            self.command(self.last_u)

    def reference(self):
        """(q_ref, dq_ref) (n,) [rad, rad/s] to track: the latest reference; in real time one
        that arrived more than ``watchdog_timeout`` s ago (its publisher stalled or ended) is
        held at its position with zero velocity (counted, warned). Stale means: joint states
        kept arriving for that long after it (a stall of this node delays both)."""
        q_ref, dq_ref = self.ref[1], self.ref[2]
        behind = (0.0 if self.previous_state_time is None
                  else self.previous_state_time - self.ref_time)
        if not self.lockstep and behind > self.max_age:
            if np.max(np.abs(dq_ref)) <= 1e-6:
                return q_ref, np.zeros_like(dq_ref)     # a rest point (the end): as meant
            self.stale_reference_commands += 1
            self.get_logger().warning(
                f"no reference for {behind:.3f} s while joint states arrived (watchdog "
                f"{self.max_age:g} s): holding its position at zero velocity "
                f"({self.stale_reference_commands} commands)", throttle_duration_sec=1.0)
            return q_ref, np.zeros_like(dq_ref)
        return q_ref, dq_ref

    def fallback(self, meas):
        """Fail-safe / holding command (n,) [N*m]: PD to the held position at zero velocity
        + gravity compensation (the position when the fault or the hold began), or zero
        torque (``fail_safe: zero``, or no finite state yet). A non-finite state is replaced
        by the last finite one."""
        self.remember(meas)
        if self.fail_safe == "zero" and (self.fault is not None or not self.enabled):
            return np.zeros(self.model.n)
        meas = self.last_usable         # a non-finite state: the last finite one
        if meas is None:
            return np.zeros(self.model.n)
        if self.hold_q is None:
            self.hold_q = meas["q"].copy()
        return self.law(self.hold_q, np.zeros(self.model.n), meas)

    def remember(self, meas):
        needed = ("q", "dq", "theta", "dtheta") if self.model.config.elastic else ("q", "dq")
        if all(k in meas and np.all(np.isfinite(meas[k])) for k in needed):
            self.last_usable = meas

    def command(self, u, fail_safe=False):
        self.last_u = u
        self.last_msg = command_msg(u, self.joint_ns if self.lockstep else None)
        self.pub.publish(self.last_msg)
        self.commands += 1
        self.fail_safe_commands += fail_safe
        self.zero_commands += not np.any(u)

    def check(self, meas, q_ref=None, dq_ref=None):
        refs = [] if q_ref is None else [("reference position", q_ref),
                                         ("reference velocity", dq_ref)]
        for name, x in [*meas.items(), *refs]:
            if not np.all(np.isfinite(x)):
                return self.trip(f"non-finite {name}: {x.tolist()}")
        positions = [("position", meas["q"])] + refs[:1]
        for name, q in positions:
            if np.any(q < self.q_lo) or np.any(q > self.q_hi):
                return self.trip(f"{name} {q.tolist()} outside the limits")
        velocities = [("velocity", meas["dq"], self.v_max * self.factor)] + [
            (name, v, self.v_max) for name, v in refs[1:]]
        for name, v, lim in velocities:
            if np.any(np.abs(v) > lim):
                hint = ("" if name != "velocity" or self.tolerated_delay is None else
                        f" (this loop tolerates {self.tolerated_delay} periods of command "
                        f"delay; more - a late command, or a robot that steps on without "
                        f"one - destabilises it: lower bandwidth_scale, or let the robot "
                        f"wait for the command)")
                return self.trip(f"{name} {v.tolist()} beyond the limits {lim.tolist()}{hint}")

    def trip(self, reason):
        if self.fault is None:
            self.get_logger().error(f"{reason}: fail-safe '{self.fail_safe}' until re-enabled "
                                    f"(~/enable)")
            self.fault = reason
            self.faults += 1
            self.hold_q = None          # hold where the fault happened
            self.publish_status()

    def on_watchdog(self):
        now = self.now()
        gap = None if self.last_tick is None else now - self.last_tick
        late = gap is not None and gap > max(self.max_age / 2, 3 * self.period)
        self.last_tick = now
        if gap is not None and gap > 1.5 * self.period and not self.lockstep:
            # the timer skips the periods it could not run (rcl): deadlines missed
            self.missed_periods += int(round(gap / self.period)) - 1
            self.longest_stall = max(self.longest_stall, gap)
            if late:
                self.get_logger().warning(
                    f"control loop stalled {gap:.3f} s ({self.missed_periods} control periods "
                    f"missed so far)", throttle_duration_sec=1.0)
        if self.last_state_time is None:
            return                      # not armed before states flow
        age = now - self.last_state_time
        # time without a state counted on this node's running time: a stall of this process
        # counts as at most 3 periods (the states may be queued behind it, or their publisher
        # shares this stall), so only states missing while this node ran trip the watchdog
        if self.state_seen:                 # a state since the previous tick (on simulation
            self.state_seen = False         # time both may carry the same clock reading)
            self.stale_for = min(age, 3 * self.period)
        else:
            step = min(gap, 3 * self.period) if gap is not None else self.period
            self.stale_for += step
        if self.stale_for > self.max_age and self.fault is None:
            self.watchdog_gap = now - self.stale_tick  # since the previous tick
            self.trip(f"stale joint states ({age:.4f} s old; none for {self.stale_for:.4f} s "
                      f"of this node's running time)")
        self.stale_tick = now
        if self.fault is not None and age > self.period:
            self.command(self.fallback(self.measurement()), fail_safe=True)

    def on_enable(self, request, response):
        self.enabled = request.data
        self.fault = None
        self.hold_q = None
        if request.data and not self.lockstep:
            self.ref = None             # hold until a new reference arrives
        response.success, response.message = True, "enabled" if request.data else "disabled"
        self.publish_status()
        return response


def main(args=None):
    main_for(PDController, args)


if __name__ == "__main__":
    main()
