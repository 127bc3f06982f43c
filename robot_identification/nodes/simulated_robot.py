"""simulated_robot: the core simulator behind ros2_control-style topics.

Subscribes to effort commands (std_msgs/Float64MultiArray, forward_command_controller
convention), publishes link-side ``joint_states``, motor-side ``motor_states`` (elastic arms;
link-referred, effort = applied motor torque) and ``/clock``.

- lockstep: one control period per received command (deterministic, as fast as the graph
  allows); until the first command (or after 0.5 s without one) the state is re-published
  at 10 Hz.
- realtime: a wall timer steps at ``rate_hz`` with the latest command; before the first
  command the brakes hold the arm (the state is published at ``rate_hz``, its stamp
  advancing, as a real arm before its controller starts).
"""
from __future__ import annotations

import time

import numpy as np
from builtin_interfaces.msg import Time
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger

from robot_identification.nodes._common import (LATEST, QOS, declare, declare_robot, finite,
                                                main_for, to_stamp)
from robot_identification.errors import IdentificationError
from robot_identification.excitation import load_trajectory, trajectory_from_config
from robot_identification.simulation import Simulator


class SimulatedRobot(Node):
    #: [s] of silence after which lockstep re-publishes the state (long enough that a command
    #: still in flight on a loaded machine is not answered twice)
    IDLE = 0.5

    def __init__(self, **kwargs):
        super().__init__("simulated_robot", **kwargs)
        self.model = declare_robot(self)
        sim = self.model.config.simulation
        rate = declare(self, "rate_hz", float(sim.rate_hz), "control rate [Hz]", low=1.0,
                       high=100000.0, read_only=True)
        self.lockstep = declare(self, "lockstep", True, "advance one period per command",
                                read_only=True)
        snr = declare(self, "snr_db", 0.0, "measurement noise SNR [dB]; 0: no noise",
                      low=0.0, high=200.0, read_only=True)
        traj_file = declare(self, "trajectory_file", "", "excitation whose start point is the "
                            "default initial state; '' = the robot config's", read_only=True)
        traj = load_trajectory(traj_file) if traj_file else trajectory_from_config(self.model)
        start = [float(x) for x in traj.evaluate(0.0)[0][0]]
        self.q0 = declare(self, "initial_positions", start, "initial link positions [rad] "
                          "(default: the start of the excitation, so the reference does not jump)")
        if len(self.q0) != self.model.n:
            raise IdentificationError(f"initial_positions has {len(self.q0)} values; robot "
                                      f"'{self.model.config.name}' has {self.model.n} joints")
        self.sim = Simulator(self.model, rate_hz=rate, seed=declare(self, "seed", 0, "noise seed"),
                             snr_db=snr or None)
        self.pub_joint = self.create_publisher(
            JointState, declare(self, "joint_states_topic", "joint_states", "link side"), QOS)
        motor_topic = declare(self, "motor_states_topic", "motor_states", "motor side (elastic)")
        self.pub_motor = (self.create_publisher(JointState, motor_topic, QOS)
                          if self.model.config.elastic else None)
        self.pub_clock = (self.create_publisher(Clock, "/clock", QOS)
                          if declare(self, "publish_clock", True, "publish /clock") else None)
        self.create_subscription(Float64MultiArray, declare(
            self, "command_topic", "effort_controller/commands", "effort commands [N*m]"),
            self.on_command, QOS if self.lockstep else LATEST)
        self.create_service(Trigger, "~/reset", self.on_reset)
        self.u = np.zeros(self.model.n)
        self.commands, self.last_command = 0, 0.0
        self.reset()
        if self.lockstep:
            self.create_timer(0.1, self.on_idle)
        else:
            self.create_timer(1.0 / rate, self.on_tick)

    def reset(self):
        self.sim.reset(np.asarray(self.q0, dtype=float))
        self.u[:] = 0.0
        self.commands = 0
        self.publish(self.sim.state.t, self.u)

    def on_reset(self, request, response):
        self.reset()
        response.success, response.message = True, f"reset to q0 = {list(self.q0)}"
        return response

    def on_command(self, msg):
        u = np.asarray(msg.data, dtype=float)
        if u.shape != (self.model.n,) or not finite(u):
            self.get_logger().error(f"ignored command {list(msg.data)}: expected {self.model.n} "
                                    f"finite torques for {list(self.model.joint_names)}")
            return
        self.u = u
        self.commands += 1
        self.last_command = time.monotonic()
        if self.lockstep:
            self.on_tick()

    def on_idle(self):
        # re-publish while waiting for the first command (or after the graph went quiet), so
        # that late-joining nodes get the state; duplicates carry the same stamp
        if time.monotonic() - self.last_command > self.IDLE:
            self.publish(self.sim.state.t, self.u)

    def on_tick(self):
        if self.commands == 0 and not self.lockstep:    # brakes on until the first command
            self.sim.t += self.sim.dt                   # (the robot's clock runs)
            self.publish(self.sim.t, self.u)
            return
        self.sim.step(self.u)
        self.publish(self.sim.state.t, self.u)

    def publish(self, t, u):
        m = self.sim.measure()
        stamp = to_stamp(t, Time)
        names = list(self.model.joint_names)
        if self.pub_clock is not None:
            self.pub_clock.publish(Clock(clock=stamp))
        if self.pub_motor is not None:
            msg = JointState(name=names, position=m["theta"].tolist(),
                             velocity=m["dtheta"].tolist(), effort=u.tolist())
            msg.header.stamp = stamp
            self.pub_motor.publish(msg)
        msg = JointState(name=names, position=m["q"].tolist(), velocity=m["dq"].tolist(),
                         effort=([] if self.pub_motor is not None else u.tolist()))
        msg.header.stamp = stamp
        self.pub_joint.publish(msg)


def main(args=None):
    main_for(SimulatedRobot, args)


if __name__ == "__main__":
    main()
