"""online_identifier: identification while the robot moves (live topics or a replayed bag).

Subscribes to ``joint_states_topic`` (link side, sensor_msgs/JointState with positions and,
for rigid arms, efforts) and for elastic arms ``motor_states_topic`` (motor positions referred
to the link side and motor torques as efforts), pairs them by header stamp and feeds them in
blocks of ``block_samples`` to :class:`robot_identification.identification.OnlineIdentification`
(polynomial-approximation filters, modified recursive least squares with identifiability
flags). Every 1/``publish_rate`` s of steady (wall) time - also while a replay's ``/clock``
stands still or after it ended - the current estimate goes out latched on ``~/estimates``
(robot_identification_interfaces/msg/IdentificationResult, ``final`` false; each
parameter's ``identified`` is its MRLS flag, std NaN until identified). ``~/reset``
(std_srvs/Trigger) starts over; so does a header stamp that goes back (a restarted simulation
or replay). The sample rate is measured on the first block.

Automatic identification settings (``friction_deadband: auto``, the default of a robot config
without an ``identification`` section, with Coulomb friction) are resolved as the batch engine
resolves them, on the first ``settings_window`` seconds of samples (held back until then, or
until no sample has arrived for ``idle_timeout`` s of steady time: a short replay), logged once
and reported in the ``automatic_settings`` diagnostic of every estimate
(:class:`~robot_identification.identification.OnlineIdentification`). Friction rows within one
filter window of a velocity reversal or stop are dropped as by the batch engine; the last t_d
(filter delay) of filtered samples waits for its successors, or for ``idle_timeout`` s without a
sample (the stream paused or ended: they are added, the filters restart with the next
sample). Drives off / braked samples (every effort exactly 0 while the arm moves) are left
out as by the batch engine: the ``drives_off_rows`` warning in each estimate's diagnostics,
the node's log (at most every 10 s while the count grows) and ``drives_off_samples`` on
``/diagnostics`` (WARN); an estimate the core refuses (95 % or more of them) is an ERROR
there, no estimate is published meanwhile.

The estimation is the core's :class:`~robot_identification.identification.OnlineIdentification`.
Longer than 200 lines: pairing link and motor states by stamp, the idle and restart handling
of a replay, the parameters and the result message are this node's.
"""
from __future__ import annotations

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.parameter import Parameter
from robot_identification_interfaces.msg import IdentificationResult as ResultMsg
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

from robot_identification.errors import IdentificationError
from robot_identification.nodes._common import (declare, declare_optional, declare_robot,
                                                diagnostic_status, main_for)
from robot_identification.nodes._recording import RECORD_QOS
from robot_identification.nodes._messages import LATCHED, result_msg
from robot_identification.identification import OnlineIdentification, SETTINGS_WINDOW


class OnlineIdentifier(Node):
    def __init__(self, **kwargs):
        super().__init__("online_identifier", **kwargs)
        self.model = declare_robot(self)
        self.elastic = self.model.config.elastic
        joint_topic = declare(self, "joint_states_topic", "joint_states", "link-side states")
        motor_topic = declare(self, "motor_states_topic", "motor_states",
                              "motor-side states (elastic arms)")
        self.rate = declare(self, "publish_rate", 2.0, "estimates per second (steady time) [Hz]",
                            low=0.01, high=1000.0)
        self.block = declare(self, "block_samples", 100, "samples per recursive update",
                             low=2, high=1_000_000)
        self.effort_lag = declare(
            self, "effort_lag_periods", 0.0, "efforts lag the states by this many periods "
            "(0.5: torque held over the previous period, as simulated_robot publishes)",
            low=0.0, high=0.999)
        self.threshold = declare_optional(
            self, "velocity_threshold", Parameter.Type.DOUBLE,
            "friction-row velocity threshold [rad/s]; unset: the robot config's",
            low=0.0, high=100.0)
        self.window = declare_optional(
            self, "filter_window", Parameter.Type.DOUBLE, "polynomial-approximation window T "
            "[s]; unset: the robot config's identification.pa_window", low=0.001, high=10.0)
        self.nominal = declare(self, "compare_with_nominal", False,
                               "simulation: report the nominal parameters as true values")
        self.settings_window = declare(
            self, "settings_window", SETTINGS_WINDOW, "automatic settings (friction_deadband: "
            "auto) are measured on the first this many seconds of samples [s]",
            low=0.02, high=3600.0)
        self.idle_timeout = declare(
            self, "idle_timeout", 1.0, "no sample for this long (steady time) [s]: resolve the "
            "automatic settings on the samples so far (a replay shorter than settings_window)",
            low=0.05, high=3600.0)
        self.pub = self.create_publisher(ResultMsg, "~/estimates", LATCHED)
        # keep all: a replay from another process at 1x loses nothing while a block is solved
        self.subs = [self.create_subscription(
            JointState, joint_topic, lambda m: self.on_state(m, 0), RECORD_QOS)]
        if self.elastic:
            self.subs.append(self.create_subscription(
                JointState, motor_topic, lambda m: self.on_state(m, 1), RECORD_QOS))
        self.create_service(Trigger, "~/reset", self.on_reset)
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(1.0 / self.rate, self.on_publish, clock=steady)
        # steady time: a replay's /clock stops with it, and the samples it left held back
        # must still be identified
        self.create_timer(self.idle_timeout, self.on_idle,
                          clock=Clock(clock_type=ClockType.STEADY_TIME))
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.heartbeat = 0
        self.create_timer(1.0, self.publish_status, clock=steady)
        self.engine = None
        self.received = 0           # state messages taken (both topics)
        self._received_at_idle = 0
        self.reset()

    def reset(self):
        self.engine = None
        self._settings_logged = False
        self.rows = []              # (t, q, tau, theta) waiting for the next block
        self.pending = ({}, {})     # stamp [ns] -> message, per side, waiting for its partner
        self.last_stamp = None
        self.unpaired = 0
        self.errors = 0
        self.failure = ""           # why the latest estimate could not be given
        self.drives_off_logged = 0  # drives-off samples the log has named

    def publish_status(self):
        """Status and heartbeat on /diagnostics every second (steady clock)."""
        self.heartbeat += 1
        e = self.engine
        values = {"heartbeat": self.heartbeat, "received": self.received,
                  "samples": 0 if e is None else e.n_samples,
                  "gaps": 0 if e is None else e.gaps, "unpaired": self.unpaired,
                  "errors": self.errors,
                  # drives off / braked samples left out (the batch engine's rule)
                  "drives_off_samples": 0 if e is None else int(e.neq.drives_off)}
        level = DiagnosticStatus.WARN if (self.errors or values["gaps"]
                                          or values["drives_off_samples"]) \
            else DiagnosticStatus.OK
        message = ("waiting for states" if e is None else
                   f"{values['samples']} samples identified on line")
        if self.failure:
            level, message = DiagnosticStatus.ERROR, f"{message}; {self.failure}"
        elif values["drives_off_samples"]:
            message += (f"; {values['drives_off_samples']} excluded as drives off / braked "
                        f"(every effort exactly 0 while the arm moves)")
        self.pub_diag.publish(diagnostic_status(self, "estimation", level, message, values))

    def on_reset(self, request, response):
        n = 0 if self.engine is None else self.engine.n_input
        self.reset()
        response.success, response.message = True, f"reset after {n} samples"
        return response

    def _arrays(self, msg, field):
        names = list(msg.name)
        v = np.asarray(getattr(msg, field), dtype=float)
        if v.size != len(names):
            return None
        try:
            return v[[names.index(j) for j in self.model.joint_names]]
        except ValueError:
            return None

    def on_state(self, msg, side):
        self.received += 1
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        if not self.elastic:
            return self._add(stamp, msg, None)
        mine, other = self.pending[side], self.pending[1 - side]
        partner = other.pop(stamp, None)
        if partner is None:
            mine[stamp] = msg
            return
        for old in [s for s in other if s < stamp]:     # partners that never came
            del other[old]
            self.unpaired += 1
        link, motor = (msg, partner) if side == 0 else (partner, msg)
        self._add(stamp, link, motor)

    def _add(self, stamp, link, motor):
        if self.last_stamp is not None and stamp <= self.last_stamp:
            if stamp < self.last_stamp:
                self.get_logger().warning("time went back: starting over")
                self.reset()
            else:
                return
        self.last_stamp = stamp
        q = self._arrays(link, "position")
        tau = self._arrays(motor if self.elastic else link, "effort")
        theta = self._arrays(motor, "position") if self.elastic else None
        if q is None or tau is None or (self.elastic and theta is None):
            self.errors += 1
            if self.errors == 1:
                self.get_logger().error(
                    f"state messages lack joints {self.model.joint_names} or positions/efforts;"
                    f" ignored")
            return
        self.rows.append((stamp * 1e-9, q, tau, theta))
        if len(self.rows) >= self.block:
            self._push()

    def _push(self):
        rows, self.rows = self.rows, []
        t = np.array([r[0] for r in rows])
        q = np.array([r[1] for r in rows])
        tau = np.array([r[2] for r in rows])
        theta = np.array([r[3] for r in rows]) if self.elastic else None
        try:
            if self.engine is None:
                fs = 1.0 / float(np.median(np.diff(t)))
                self.engine = OnlineIdentification(
                    self.model, fs, pa=None if self.window is None else {"window": self.window},
                    velocity_threshold=self.threshold,
                    effort_lag=self.effort_lag, settings_window=self.settings_window)
                self.get_logger().info(f"identifying on line at {fs:.6g} Hz")
                if self.engine.settings is None:
                    self.get_logger().info(self.engine.describe_settings())
            self.engine.push(t, q, tau, theta)
        except IdentificationError as exc:
            self.get_logger().error(f"on-line identification: {exc}; starting over")
            self.reset()
            return
        self._log_settings()

    def _log_settings(self):
        if (not self._settings_logged and self.engine is not None
                and self.engine.settings is not None and self.engine.auto_samples):
            self._settings_logged = True
            self.get_logger().info(self.engine.describe_settings())

    def on_idle(self):
        """No sample since the last tick: the stream paused or ended. Samples held back for
        the automatic settings: resolve them on what arrived (a replay shorter than
        settings_window); filtered samples held back for the reversal window: add them
        (:meth:`OnlineIdentification.finish`; the filters restart with the next sample)."""
        idle = self.received == self._received_at_idle
        self._received_at_idle = self.received
        if not idle or (self.engine is None and len(self.rows) < 2):
            return
        if self.engine is not None and self.engine.settings is not None:
            if self.rows:
                self._push()
            if self.engine.pending:
                self.engine.finish()
                self.on_publish()
            return
        if self.rows:
            self._push()
        if self.engine is None or self.engine.settings is not None:
            return
        try:
            self.engine.resolve()
        except IdentificationError as exc:
            self.get_logger().error(f"on-line identification: {exc}; starting over")
            self.reset()
            return
        self._log_settings()
        self.on_publish()

    def on_publish(self):
        if self.rows and (self.engine is not None or len(self.rows) >= 2):
            self._push()
        if self.engine is None or self.engine.n_samples == 0:
            return
        try:
            result = self.engine.estimate(true_values=self.engine.base.base_values(
                self.model.nominal_parameters()) if self.nominal else None)
        except IdentificationError as exc:      # e.g. nearly every sample drives off
            if str(exc) != self.failure:
                self.get_logger().error(f"on-line identification: no estimate: {exc}")
            self.failure = str(exc)
            return
        self.failure = ""
        braked = [d for d in result.diagnostics if d.code == "drives_off_rows"]
        if braked and self.engine.neq.drives_off > self.drives_off_logged:
            self.drives_off_logged = self.engine.neq.drives_off
            self.get_logger().warning(f"warning: drives_off_rows: {braked[0].message}",
                                      throttle_duration_sec=10.0)
        source = "live:" + ",".join(s.topic_name for s in self.subs)
        self.pub.publish(result_msg(result, source=source, final=False,
                                    stamp=self.get_clock().now().to_msg()))


def main(args=None):
    main_for(OnlineIdentifier, args)


if __name__ == "__main__":
    main()
