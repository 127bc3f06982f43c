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

``trajectory_controller_topic`` (default '': off) set: a joint_trajectory_controller runs in
the hardware's own cycle instead of the effort forward_command_controller
(:class:`~robot_identification.nodes._hardware.TrajectoryTracker`; the path of
``use_pd_controller:=false``). It takes trajectory_msgs/JointTrajectory on that topic as
ros2_control's controller does on its topic interface: the whole trajectory replaces the one
played (joints by name; ``time_from_start`` counted from ``header.stamp``, or from its
arrival when the stamp is 0), an empty one holds the arm where it is, after the last point it
holds that point; before the first trajectory the brakes hold the arm. The torque applied
each period (published as the effort: link-referred motor torque for elastic arms) is the
core PD law on the state at the period's start, as in ``simulate``; no effort commands are
taken. The gains are ``simulate``'s (:func:`~robot_identification.simulation.closed_loop_gains`:
elastic arms' configured gains that do not damp the loop at ``rate_hz`` are replaced by the
model's design there), elastic arms with the reference's inverse dynamics as feedforward; a
trajectory whose forecast takes a joint beyond 1.1 x its velocity limit is refused before the
motion ("brakes on: trajectory refused: ...", ERROR on ``/diagnostics``, the brakes hold the
arm until a trajectory it can play), and a joint beyond 1.1 x its limit engages the brakes
(``velocity_trips``). docs/ros.md, "The joint_trajectory_controller path on the
hardware-like robot".
"""
from __future__ import annotations

import time

import numpy as np

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.clock import Clock as RosClock
from rclpy.clock import ClockType
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from robot_identification.errors import DataError, IdentificationError
from robot_identification.excitation import trajectory_from_config
from robot_identification.nodes._common import (QOS, command_deadline_ns, command_state_ns,
                                                declare, declare_qos, declare_robot,
                                                diagnostic_status, main_for, publish_live,
                                                ns_stamp)
from robot_identification.nodes._hardware import (NO_COMMAND, NO_TRAJECTORY, HardwareArm,
                                                  TrajectoryTracker, make_physics)


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
        self.engine = engine
        self.jtc_topic = declare(self, "trajectory_controller_topic", "", "joint_trajectory_"
                                 "controller in the hardware's cycle: its JointTrajectory "
                                 "topic ('' = off: effort commands)", read_only=True)
        self.tracker = None
        scale = declare(self, "trajectory_controller_bandwidth_scale", 1.0, "in-cycle "
                        "trajectory controller: gains kp s^2, kd s on the core closed loop's "
                        "(1: as simulate)", low=1e-3, high=1.0, read_only=True)
        if self.jtc_topic:
            self.tracker = TrajectoryTracker(self.model, rate, self.q0, scale)
            self.get_logger().info(
                f"joint_trajectory_controller in the hardware's cycle on '{self.jtc_topic}': "
                f"{self.tracker.gain_choice.describe(self.model.config.name)}"
                + (f"; bandwidth scale {scale:g}: kp={list(self.tracker.law.kp.round(4))} "
                   f"kd={list(self.tracker.law.kd.round(4))}" if scale != 1.0 else ""))
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
        command_topic = declare(self, "command_topic", "effort_controller/commands",
                                "effort commands [N*m] (not with trajectory_controller_topic)")
        command_qos = declare_qos(self, "command", what="of the command subscription")
        if self.tracker is None:
            self.create_subscription(Float64MultiArray, command_topic, self.on_command,
                                     command_qos)
        else:
            self.create_subscription(JointTrajectory, self.jtc_topic, self.on_trajectory,
                                     QOS)
        self.create_service(Trigger, "~/reset", self.on_reset)
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.heartbeat = 0
        steady = RosClock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(1.0 / rate, self.on_tick, clock=steady)
        self.create_timer(declare(self, "diagnostics_period", 0.1, "[s] status (heartbeat) "
                                  "period on /diagnostics", low=0.01, high=10.0),
                          self.publish_status, clock=steady)

    def reset(self):
        self.arm = HardwareArm(self.physics, self.q0, tracker=self.tracker, **self.options)
        # stamps = system time: [ns] at steady0, and the steady clock's advance from there
        # (exact nanoseconds: a float of seconds since 1970 jitters 1 kHz stamps by 2.4e-7 s)
        self.sys0_ns, self.steady0 = time.time_ns(), time.monotonic()
        self.sys0 = self.sys0_ns * 1e-9
        self.arm.start(self.steady0)
        self.loop_delay = self.loop_delay_max = 0.0     # [s] arrival - answered state stamp
        self._delay_window = []

    def on_reset(self, request, response):
        self.reset()
        response.success, response.message = True, f"reset to {list(self.q0)}, brakes on"
        return response

    def system_time(self, steady):
        return self.sys0 + (steady - self.steady0)

    def system_stamp(self, steady):
        """builtin_interfaces/Time of steady clock time ``steady`` [s] on the system clock
        (integer nanoseconds: 1 kHz periods stamped exactly 1 ms apart)."""
        return ns_stamp(self.sys0_ns + int(round((steady - self.steady0) * 1e9)), Time)

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

    def on_trajectory(self, msg):
        """A joint_trajectory_controller's topic interface: joints by name; a stamp of 0
        starts the trajectory on arrival; no points: hold where the arm is."""
        now = time.monotonic()
        stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        start = None if stamp == 0 else stamp - self.sys0 + self.steady0
        try:
            if not msg.points:
                self.arm.trajectory(now)
                return
            names = list(self.model.joint_names)
            if sorted(msg.joint_names) != sorted(names):
                raise DataError(f"trajectory for joints {list(msg.joint_names)}; this arm has "
                                f"{names} (all of them, by name)")
            order = [list(msg.joint_names).index(j) for j in names]

            def field(p, key):
                values = getattr(p, key)
                return [values[i] for i in order] if len(values) == len(order) else values
            pts = msg.points
            acc = all(len(p.accelerations) for p in pts)
            self.arm.trajectory(
                now, [p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in pts],
                [field(p, "positions") for p in pts], [field(p, "velocities") for p in pts],
                [field(p, "accelerations") for p in pts] if acc else None, start=start)
        except DataError as exc:
            self.get_logger().error(f"trajectory ignored: {exc}", throttle_duration_sec=1.0)

    def on_tick(self):
        braked = self.arm.braked
        states = self.arm.advance(time.monotonic())
        if self.arm.braked and self.arm.braked != braked:
            self.get_logger().error(f"brakes on: {self.arm.braked}")
            self.publish_status()
        names = list(self.model.joint_names)
        for s in states:
            stamp = self.system_stamp(s["t"])
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
        faulted = a.braked and a.braked not in (NO_COMMAND, NO_TRAJECTORY)
        level = DiagnosticStatus.ERROR if faulted else DiagnosticStatus.OK
        message = (f"brakes on: {a.braked}" if a.braked else "running: last command applied"
                   if self.tracker is None else "running: holding the last point"
                   if self.tracker.holding else "running: tracking the trajectory")
        values = {"heartbeat": self.heartbeat, "braked": a.braked, "periods": a.k,
                  "commands": a.commands, "command_timeouts": a.timeouts,
                  "late_commands": a.late_commands, "catch_up_steps": a.catch_up_steps,
                  "longest_catch_up_periods": a.longest_catch_up,
                  "loop_delay_s": f"{recent:.4f}",
                  "loop_delay_max_s": f"{self.loop_delay_max:.4f}",
                  "command_timeout_s": a.command_timeout, "honour_deadline": a.honour_deadline,
                  "engine": self.engine}
        if self.tracker is not None:
            values.update(trajectory_controller_topic=self.jtc_topic,
                          trajectories=a.trajectories,
                          kp=[round(float(x), 6) for x in self.tracker.law.kp],
                          kd=[round(float(x), 6) for x in self.tracker.law.kd],
                          velocity_trips=a.velocity_trips,
                          forecast_max_velocity_ratio=round(
                              float(np.max(self.tracker.forecast_ratio)), 4),
                          # on the config's gains: the stable scale x the bandwidth scale
                          gain_scale=round(self.tracker.gain_choice.scale
                                           * self.tracker.scale, 6))
        self.pub_diag.publish(diagnostic_status(self, "hardware", level, message, values))


def main(args=None):
    main_for(HardwareRobot, args)


if __name__ == "__main__":
    main()
