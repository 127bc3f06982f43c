"""pd_controller: joint-space PD with gravity compensation and a watchdog.

Elastic arms: PD on motor positions with on-line gravity compensation (De Luca, Siciliano &
Zollo 2005); rigid arms: PD + gravity compensation. Both from
:func:`robot_identification.simulation.make_controller` (torques clipped to the effort limits).

Safety: the command becomes zero torque and an error is logged when
- the states are older than ``watchdog_periods`` control periods (checked every period),
- a state or reference is not finite, or
- a state or reference violates the robot's position/velocity limits.
A fault latches until ``~/enable`` (std_srvs/SetBool) is called again with true.

lockstep: a command is computed once per state stamp, when the link state, the motor state
(elastic) and the reference with that stamp have all arrived; otherwise on every joint state
with the latest reference.
"""
from __future__ import annotations

import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool
from trajectory_msgs.msg import JointTrajectory

from robot_identification.nodes._common import QOS, declare, declare_robot, main_for, to_sec
from robot_identification.simulation import make_controller


class PDController(Node):
    def __init__(self, **kwargs):
        super().__init__("pd_controller", **kwargs)
        self.model = model = declare_robot(self)
        sim, n = model.config.simulation, model.n
        rate = declare(self, "rate_hz", float(sim.rate_hz), "control rate [Hz]", low=1.0,
                       high=100000.0, read_only=True)
        self.period = 1.0 / rate
        kp = declare(self, "kp", [float(x) for x in (sim.kp or [0.0] * n)],
                     "P gains [N*m/rad]; zeros: default design", read_only=True)
        kd = declare(self, "kd", [float(x) for x in (sim.kd or [0.0] * n)],
                     "D gains [N*m*s/rad]", read_only=True)
        self.law = make_controller(model, kp if any(kp) else None, kd if any(kd) else None)
        self.lockstep = declare(self, "lockstep", True, "one command per state stamp",
                                read_only=True)
        self.max_age = declare(self, "watchdog_periods", 10, "stale after this many periods",
                               low=1, high=100000) / rate
        factor = declare(self, "state_limit_factor", 1.5,
                         "measured states may exceed the velocity limits by this factor "
                         "(elastic vibration); references may not", low=1.0, high=100.0)
        lim = [j.limits for j in model.config.joints]
        self.q_lo = np.array([li.position[0] if li.position else -np.inf for li in lim])
        self.q_hi = np.array([li.position[1] if li.position else np.inf for li in lim])
        self.v_max = np.array([li.velocity or np.inf for li in lim])
        self.factor = factor
        self.pub = self.create_publisher(Float64MultiArray, declare(
            self, "command_topic", "effort_controller/commands", "effort commands"), QOS)
        self.create_subscription(JointState, declare(
            self, "joint_states_topic", "joint_states", "link side"), self.on_joint, QOS)
        if model.config.elastic:
            self.create_subscription(JointState, declare(
                self, "motor_states_topic", "motor_states", "motor side"), self.on_motor, QOS)
        self.create_subscription(JointTrajectory, declare(
            self, "reference_topic", "reference", "reference"), self.on_reference, QOS)
        self.create_service(SetBool, "~/enable", self.on_enable)
        self.create_timer(1.0 / rate, self.on_watchdog)
        self.enabled = declare(self, "enabled", True, "start enabled", read_only=True)
        self.fault = None
        self.joint = self.motor = self.ref = None
        self.last_state_time = None   # node clock [s] of the last joint state
        self.last_stamp = -np.inf     # state stamp of the last command
        self.last_u = None            # last command [N*m] (re-sent for a repeated state)
        self.commands = 0

    def _vector(self, names, values):
        d = dict(zip(names, values))
        return np.array([d.get(j, np.nan) for j in self.model.joint_names], dtype=float)

    def on_joint(self, msg):
        self.joint = (to_sec(msg.header.stamp), self._vector(msg.name, msg.position),
                      self._vector(msg.name, msg.velocity))
        self.last_state_time = self.get_clock().now().nanoseconds * 1e-9
        if self.lockstep and self.joint[0] == self.last_stamp and self.last_u is not None:
            # the simulated robot re-publishes a state when the loop went quiet: the command
            # for it was lost (e.g. sent before the robot had matched the topic); resend it
            self.get_logger().warning(f"state t = {self.joint[0]:.4f} s repeated: "
                                      f"command re-sent")
            self.pub.publish(Float64MultiArray(data=self.last_u.tolist()))
            return
        self.update()

    def on_motor(self, msg):
        self.motor = (to_sec(msg.header.stamp), self._vector(msg.name, msg.position),
                      self._vector(msg.name, msg.velocity))
        self.update()

    def on_reference(self, msg):
        p = msg.points[0] if msg.points else None
        self.ref = (to_sec(msg.header.stamp),
                    self._vector(msg.joint_names, p.positions if p else []),
                    self._vector(msg.joint_names, p.velocities if p else []))
        self.update()

    def update(self):
        if self.joint is None or self.ref is None or (
                self.model.config.elastic and self.motor is None):
            return
        t = self.joint[0]
        if self.lockstep and (self.ref[0] != t or (self.motor is not None
                                                    and self.motor[0] != t)):
            return
        if t < self.last_stamp - 1.5 * self.period:
            # the robot's time went back (simulated_robot ~/reset): start afresh
            self.get_logger().info(f"state time went back to {t:.4f} s: controller reset")
            self.last_stamp, self.last_u = -np.inf, None
        if t <= self.last_stamp:
            return
        self.last_stamp = t
        meas = {"q": self.joint[1], "dq": self.joint[2]}
        if self.motor is not None:
            meas.update(theta=self.motor[1], dtheta=self.motor[2])
        self.check(meas, self.ref[1], self.ref[2])
        u = np.zeros(self.model.n)
        if self.enabled and self.fault is None:
            u = self.law(self.ref[1], self.ref[2], meas)
        self.last_u = u
        self.pub.publish(Float64MultiArray(data=u.tolist()))
        self.commands += 1

    def check(self, meas, q_ref, dq_ref):
        for name, x in [*meas.items(), ("reference position", q_ref),
                        ("reference velocity", dq_ref)]:
            if not np.all(np.isfinite(x)):
                return self.trip(f"non-finite {name}: {x.tolist()}")
        for name, q in (("position", meas["q"]), ("reference position", q_ref)):
            if np.any(q < self.q_lo) or np.any(q > self.q_hi):
                return self.trip(f"{name} {q.tolist()} outside the limits")
        for name, v, lim in (("velocity", meas["dq"], self.v_max * self.factor),
                             ("reference velocity", dq_ref, self.v_max)):
            if np.any(np.abs(v) > lim):
                return self.trip(f"{name} {v.tolist()} beyond the limits {lim.tolist()}")

    def trip(self, reason):
        if self.fault is None:
            self.get_logger().error(f"{reason}: zero torque until re-enabled (~/enable)")
        self.fault = reason

    def on_watchdog(self):
        now = self.get_clock().now().nanoseconds * 1e-9
        if self.last_state_time is not None and now - self.last_state_time > self.max_age:
            if self.fault is None:
                self.trip(f"stale joint states ({now - self.last_state_time:.4f} s old)")
            self.pub.publish(Float64MultiArray(data=[0.0] * self.model.n))

    def on_enable(self, request, response):
        self.enabled = request.data
        self.fault = None
        response.success, response.message = True, "enabled" if request.data else "disabled"
        return response


def main(args=None):
    main_for(PDController, args)


if __name__ == "__main__":
    main()
