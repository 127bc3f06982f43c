"""excitation_publisher: plays an excitation trajectory as a streamed reference.

The reference (trajectory_msgs/JointTrajectory with one point: positions [rad], velocities
[rad/s], accelerations [rad/s^2]; header.stamp = the time the point applies to) is published

- lockstep (``lockstep: true``): once per ``/clock`` tick of the simulated robot, for that tick;
- otherwise on a timer at ``rate_hz``.

Nothing is published before ``~/start``; after the end the final rest point is held for
``hold_time`` s, then publication stops (which ends a lockstep run). With
``trajectory_controller_topic`` set, ``~/start`` also sends the whole trajectory (sampled every
``trajectory_sample_period`` s) to a joint_trajectory_controller. A trajectory violating the
robot's position/velocity/acceleration limits is refused at start-up.
"""
from __future__ import annotations

from builtin_interfaces.msg import Duration, Time
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from rosgraph_msgs.msg import Clock
from std_msgs.msg import Bool
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_identification.excitation import check_limits, load_trajectory, trajectory_from_config
from robot_identification.nodes._common import (QOS, declare, declare_robot, main_for, to_sec,
                                                to_stamp)


class ExcitationPublisher(Node):
    def __init__(self, **kwargs):
        super().__init__("excitation_publisher", **kwargs)
        self.model = declare_robot(self)
        path = declare(self, "trajectory_file", "",
                       "trajectory YAML; '' = the robot config's simulation.excitation",
                       read_only=True)
        self.traj = load_trajectory(path) if path else trajectory_from_config(self.model)
        self.rate = declare(self, "rate_hz", float(self.model.config.simulation.rate_hz),
                            "reference rate [Hz]", low=1.0, high=100000.0, read_only=True)
        check_limits(self.model, self.traj, 1.0 / self.rate)   # raises ExcitationError
        self.hold = declare(self, "hold_time", 0.5, "rest after the end [s]", low=0.0, high=1e3)
        self.lockstep = declare(self, "lockstep", True, "one reference per /clock tick",
                                read_only=True)
        self.pub = self.create_publisher(JointTrajectory, declare(
            self, "reference_topic", "reference", "streamed reference"), QOS)
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.pub_active = self.create_publisher(Bool, "~/active", latched)
        jtc = declare(self, "trajectory_controller_topic", "",
                      "joint_trajectory_controller topic; '' = do not send", read_only=True)
        self.pub_jtc = self.create_publisher(JointTrajectory, jtc, QOS) if jtc else None
        self.sample = declare(self, "trajectory_sample_period", 0.01,
                              "waypoint spacing sent to the controller [s]", low=1e-4, high=10.0)
        self.t_start = None
        self.last, self.last_msg = None, None
        self.create_service(Trigger, "~/start", self.on_start)
        self.create_service(Trigger, "~/stop", self.on_stop)
        if self.lockstep:
            self.create_subscription(Clock, "/clock", lambda m: self.tick(to_sec(m.clock)), QOS)
        else:
            self.create_timer(1.0 / self.rate, lambda: self.tick(
                self.get_clock().now().nanoseconds * 1e-9))
        self.pub_active.publish(Bool(data=False))
        self.get_logger().info(f"excitation {self.traj!r}, {self.traj.duration:.3g} s")

    @property
    def active(self) -> bool:
        return self.t_start is not None

    def on_start(self, request, response):
        if self.active:
            response.success, response.message = False, "already running"
            return response
        self.t_start = "next"           # starts at the next tick
        self.last, self.last_msg = None, None
        if self.pub_jtc is not None:
            self.pub_jtc.publish(self.joint_trajectory())
        self.pub_active.publish(Bool(data=True))
        response.success, response.message = True, f"{self.traj.duration:.6g} s trajectory"
        return response

    def on_stop(self, request, response):
        response.success, response.message = self.active, "stopped" if self.active else "idle"
        self.t_start = None
        self.pub_active.publish(Bool(data=False))
        return response

    def tick(self, t):
        if not self.active:
            return
        if t == self.last:
            # the simulated robot re-publishes a state (and /clock) when the loop went quiet,
            # e.g. because this reference was published before the controller had matched
            # the topic: send the same reference again, or the lockstep loop would stall
            self.pub.publish(self.last_msg)
            return
        if self.t_start == "next":
            self.t_start = t
        self.last = t
        tau = t - self.t_start
        if tau > self.traj.duration + self.hold:
            self.get_logger().info(f"excitation finished at t = {t:.4f} s")
            self.on_stop(None, Trigger.Response())
            return
        msg = JointTrajectory(joint_names=list(self.model.joint_names),
                              points=[self.point(tau)])
        msg.header.stamp = to_stamp(t, Time)
        self.last_msg = msg
        self.pub.publish(msg)

    def point(self, tau):
        q, dq, ddq = (x[0].tolist() for x in self.traj.evaluate(tau))
        ns = int(round(tau * 1e9))
        return JointTrajectoryPoint(positions=q, velocities=dq, accelerations=ddq,
                                    time_from_start=Duration(sec=ns // 10**9,
                                                             nanosec=ns % 10**9))

    def joint_trajectory(self):
        n = int(self.traj.duration / self.sample) + 1
        return JointTrajectory(joint_names=list(self.model.joint_names),
                               points=[self.point(min(k * self.sample, self.traj.duration))
                                       for k in range(n)])


def main(args=None):
    main_for(ExcitationPublisher, args)


if __name__ == "__main__":
    main()
