"""hardware_robot: a stand-in for ros2_control hardware (a real arm, Gazebo) on the wall clock.

Semantics of ``joint_state_broadcaster`` + an effort ``forward_command_controller``
(:class:`~robot_identification.nodes._hardware.HardwareArm`): the physics runs free on the
steady clock at ``rate_hz`` and never waits for a command; the LAST command stays applied
until a new one arrives; before the first command the brakes hold the arm. A process that was
starved catches up (every period is stepped with the command in force and published, stamped
with its own time, as a driver that buffers its samples); optional command ``latency`` and
``jitter``; an optional hardware ``command_timeout`` (off by default, as the
forward_command_controller has none) and, with ``honour_deadline``, the deadline a command
carries (:func:`~robot_identification.nodes._common.command_msg`) engage the brakes (a
protective stop; ERROR on ``/diagnostics``) until the next command.

``joint_states`` (sensor_msgs/JointState: q [rad], dq [rad/s], effort = the torque applied
over the period before [N*m]; elastic arms: ``motor_states`` as :mod:`.simulated_robot`)
are stamped with the system clock (as drivers stamp them) and published with the QoS
``joint_states_reliability`` / ``joint_states_depth`` (default joint_state_broadcaster's:
reliable, keep last 10). ``/diagnostics`` entry ``hardware_robot: hardware`` every
``diagnostics_period`` s (its heartbeat): brakes, commands, timeouts, catch-up steps and the
loop delay measured from the state stamp a command answers. How to rehearse a real-arm
session with it: docs/ros.md, "Rehearsing a real-arm session".
"""
from __future__ import annotations

import time

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.clock import Clock as RosClock
from rclpy.clock import ClockType
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger

from robot_identification.errors import DataError, IdentificationError
from robot_identification.excitation import trajectory_from_config
from robot_identification.nodes._common import (QOS, command_deadline_ns, command_state_ns,
                                                declare, declare_qos, declare_robot,
                                                diagnostic_status, main_for, publish_live,
                                                to_stamp)
from robot_identification.nodes._hardware import HardwareArm, make_physics


class HardwareRobot(Node):
    def __init__(self, **kwargs):
        super().__init__("hardware_robot", **kwargs)
        self.model = declare_robot(self)
        rate = declare(self, "rate_hz", float(self.model.config.simulation.rate_hz),
                       "control and publication rate [Hz]", low=1.0, high=100000.0,
                       read_only=True)
        engine = declare(self, "engine", "builtin", "physics: builtin (pinocchio aba + RK4) "
                         "or an engine of simulation.make_simulator (mujoco)", read_only=True)
        start = [float(x) for x in trajectory_from_config(self.model).evaluate(0.0)[0][0]]
        self.q0 = declare(self, "initial_positions", start, "initial link positions [rad]",
                          read_only=True)
        if len(self.q0) != self.model.n:
            raise IdentificationError(f"initial_positions has {len(self.q0)} values; robot "
                                      f"'{self.model.config.name}' has {self.model.n} joints")
        self.options = dict(
            latency=declare(self, "command_latency", 0.0, "[s] a command is applied this long "
                            "after it arrives", low=0.0, high=10.0, read_only=True),
            jitter=declare(self, "command_jitter", 0.0, "[s] plus a uniform draw in [0, "
                           "jitter]", low=0.0, high=10.0, read_only=True),
            command_timeout=declare(self, "command_timeout", 0.0, "[s] no new command for "
                                    "this long -> brakes (0 = none, as forward_command_"
                                    "controller)", low=0.0, high=1e3, read_only=True),
            honour_deadline=declare(self, "honour_deadline", True, "a command's own deadline "
                                    "(layout label deadline_ns=) ends it -> brakes",
                                    read_only=True),
            seed=declare(self, "seed", 0, "seed of the jitter draws", read_only=True))
        self.physics = make_physics(self.model, rate, engine)
        self.reset()
        state_qos = declare_qos(self, "joint_states", what="of joint_states/motor_states")
        self.pub_joint = self.create_publisher(JointState, declare(
            self, "joint_states_topic", "joint_states", "link side"), state_qos)
        self.pub_motor = (self.create_publisher(JointState, declare(
            self, "motor_states_topic", "motor_states", "motor side (elastic)"), state_qos)
            if self.model.config.elastic else None)
        self.pub_clock = (self.create_publisher(Clock, "/clock", QOS) if declare(
            self, "publish_clock", False, "also publish /clock (the stamps' time)",
            read_only=True) else None)
        self.create_subscription(Float64MultiArray, declare(
            self, "command_topic", "effort_controller/commands", "effort commands [N*m]"),
            self.on_command, declare_qos(self, "command", what="of the command subscription"))
        self.create_service(Trigger, "~/reset", self.on_reset)
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.heartbeat = 0
        steady = RosClock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(1.0 / rate, self.on_tick, clock=steady)
        self.create_timer(declare(self, "diagnostics_period", 0.1, "[s] status (heartbeat) "
                                  "period on /diagnostics", low=0.01, high=10.0),
                          self.publish_status, clock=steady)

    def reset(self):
        self.arm = HardwareArm(self.physics, self.q0, **self.options)
        self.sys0, self.steady0 = time.time(), time.monotonic()   # stamps = system time
        self.arm.start(self.steady0)
        self.loop_delay = self.loop_delay_max = 0.0     # [s] arrival - answered state stamp
        self._delay_window = []

    def on_reset(self, request, response):
        self.reset()
        response.success, response.message = True, f"reset to {list(self.q0)}, brakes on"
        return response

    def system_time(self, steady):
        return self.sys0 + (steady - self.steady0)

    def on_command(self, msg):
        now = time.monotonic()
        deadline = command_deadline_ns(msg)
        try:
            self.arm.command(msg.data, now, None if deadline is None
                             else deadline * 1e-9 - self.sys0 + self.steady0)
        except DataError as exc:
            self.get_logger().error(f"ignored: {exc}", throttle_duration_sec=1.0)
            return
        answered = command_state_ns(msg)
        if answered is not None:
            delay = self.system_time(now) - answered * 1e-9
            self._delay_window.append((now, delay))
            self.loop_delay_max = max(self.loop_delay_max, delay)

    def on_tick(self):
        braked = self.arm.braked
        states = self.arm.advance(time.monotonic())
        if self.arm.braked and self.arm.braked != braked:
            self.get_logger().error(f"brakes on: {self.arm.braked}")
            self.publish_status()
        names = list(self.model.joint_names)
        for s in states:
            stamp = to_stamp(self.system_time(s["t"]), Time)
            if self.pub_motor is not None:
                m = JointState(name=names, position=s["theta"].tolist(),
                               velocity=s["dtheta"].tolist(), effort=s["effort"].tolist())
                m.header.stamp = stamp
                publish_live(self, self.pub_motor, m)
            m = JointState(name=names, position=s["q"].tolist(), velocity=s["dq"].tolist(),
                           effort=[] if self.pub_motor is not None else s["effort"].tolist())
            m.header.stamp = stamp
            publish_live(self, self.pub_joint, m)
        if states and self.pub_clock is not None:
            publish_live(self, self.pub_clock, Clock(clock=stamp))

    def publish_status(self):
        now = time.monotonic()
        self._delay_window = [(t, d) for t, d in self._delay_window if now - t <= 1.0]
        recent = max((d for _, d in self._delay_window), default=0.0)
        self.heartbeat += 1
        a = self.arm
        faulted = a.braked and a.braked != "no command yet"
        level = DiagnosticStatus.ERROR if faulted else DiagnosticStatus.OK
        message = f"brakes on: {a.braked}" if a.braked else "running: last command applied"
        values = {"heartbeat": self.heartbeat, "braked": a.braked, "periods": a.k,
                  "commands": a.commands, "command_timeouts": a.timeouts,
                  "late_commands": a.late_commands, "catch_up_steps": a.catch_up_steps,
                  "longest_catch_up_periods": a.longest_catch_up,
                  "loop_delay_s": f"{recent:.4f}",
                  "loop_delay_max_s": f"{self.loop_delay_max:.4f}",
                  "command_timeout_s": a.command_timeout, "honour_deadline": a.honour_deadline}
        self.pub_diag.publish(diagnostic_status(self, "hardware", level, message, values))


def main(args=None):
    main_for(HardwareRobot, args)


if __name__ == "__main__":
    main()
