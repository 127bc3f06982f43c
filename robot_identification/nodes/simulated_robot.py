"""simulated_robot: the core simulator behind ros2_control-style topics.

Subscribes to effort commands (std_msgs/Float64MultiArray, forward_command_controller
convention), publishes link-side ``joint_states``, motor-side ``motor_states`` (elastic arms;
link-referred, effort = applied motor torque) and ``/clock``.

- lockstep: one control period per received command (deterministic, as fast as the graph
  allows); until the first command (or after 0.5 s without one) the state is re-published
  at 10 Hz, with the same stamp (a keep-alive: late-joining nodes get the state, a lost
  command is sent again). A command labelled with the state it answers (pd_controller,
  :func:`~robot_identification.nodes._common.command_msg`) steps the robot only when it
  answers the current state: a second answer to a re-published state (the first was still on
  its way while a process was starved for longer than the keep-alive period) is ignored and
  counted, so the robot never steps twice with one command whatever the load. Unlabelled
  commands (other controllers) step once each.
- realtime: a wall timer steps at ``rate_hz`` with the latest command; before the first
  command the brakes hold the arm (the state is published at ``rate_hz``, its stamp
  advancing, as a real arm before its controller starts). Every tick advances exactly one
  period: when this process is starved the timer skips periods (rcl timers do) and the
  robot's clock (stamps, ``/clock``) falls behind the wall clock instead of integrating a
  long step with a stale command. A command is applied for at most ``command_timeout`` of
  robot time, then the clock waits for the next one (auto: as long as the loop with the
  config's gains tolerates, :func:`~robot_identification.simulation.tolerated_command_delay`
  - one period for the elastic arms, whose stiff motor loop diverges with a period of command
  delay: the robot then steps at the controller's pace, as a simulator whose controllers run
  in its physics step). Said on ``/diagnostics`` (entry ``simulated_robot: real time``:
  ``skipped_periods``, ``waited_periods``, ``longest_stall_s``, ``real_time_factor`` = robot
  time / wall time, ``command_timeout_s``, ``tolerated_delay_periods``) every second and in a
  warning at most once a second.

The physics is the core's simulator (:mod:`robot_identification.simulation`). Longer than 200
lines: the two modes' timing (lockstep keep-alive and answered-state matching; real-time
ticks, skipped and waited periods) is tied to this node's timers and subscriptions.
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

from robot_identification.nodes._common import (LATEST, QOS, command_state_ns, declare,
                                                declare_robot, diagnostic_status, finite,
                                                main_for, publish_live, stamp_ns, to_stamp)
from robot_identification.errors import DataError, IdentificationError
from robot_identification.excitation import load_trajectory, trajectory_from_config
from robot_identification.simulation import (ENGINES, make_simulator,
                                             tolerated_command_delay)


#: [s] the longest a command is applied in real time with ``command_timeout: -1`` (auto)
MAX_COMMAND_TIMEOUT = 0.01


def auto_command_timeout(tolerated_periods: int, period: float) -> float:
    """``command_timeout`` [s] for a loop that tolerates ``tolerated_periods`` periods of
    command delay (:func:`tolerated_command_delay`): a command may be applied for N periods
    where 2 N - 1 <= the tolerated delay - a command that arrives while the robot runs on
    the previous one answers a state up to N - 1 periods old and is then held N periods -
    at least one period (the controller's pace: lockstep on a wall timer, as a simulator
    whose controllers run in its loop), at most ``MAX_COMMAND_TIMEOUT``."""
    periods = max(1, (tolerated_periods + 1) // 2)
    return min(MAX_COMMAND_TIMEOUT, periods * period)


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
        engine = declare(self, "engine", "builtin", "physics engine: builtin (reference) or "
                         "mujoco (faster)", read_only=True, choices=ENGINES)
        self.sim = make_simulator(self.model, engine, rate_hz=rate,
                                  seed=declare(self, "seed", 0, "noise seed"), snr_db=snr or None)
        self.command_timeout = declare(
            self, "command_timeout", -1.0, "[s] of robot time, real time: the robot's clock "
            "waits (no step) while the latest command is older than this - a starved "
            "controller's torque is not applied longer (a simulation can wait, hardware "
            "cannot); 0 = never wait; -1 = auto: what the arm's loop with the config's gains "
            "tolerates (at most 0.01 s; one period for a stiff elastic-joint motor loop)",
            low=-1.0, high=1e3, read_only=True)
        #: command delay [periods] the linearised loop with the config's gains tolerates
        self.tolerated_delay = (None if self.lockstep else tolerated_command_delay(
            self.model, rate_hz=rate, q=self.q0))
        if self.command_timeout < 0 and not self.lockstep:
            self.command_timeout = auto_command_timeout(self.tolerated_delay, 1.0 / rate)
            if self.tolerated_delay < 0:
                self.get_logger().warning(
                    f"the loop with the config's gains is unstable at {rate:g} Hz even "
                    f"without command delay (linearised): the arm may diverge (brakes)")
            self.get_logger().info(
                f"command_timeout {self.command_timeout:g} s ({self.tolerated_delay} periods "
                f"of command delay tolerated by the loop with the config's gains): the "
                f"robot's clock waits for the controller beyond that")
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
        self.state_ns = None                # [ns] stamp of the latest published state
        self.duplicate_commands = 0         # lockstep: answers to an already answered state
        self.reset()
        self.period = 1.0 / rate
        self.ticks = self.skipped = 0       # real time: timer ticks, periods it skipped
        self.waited = 0                     # real time: ticks spent waiting for a command
        self.steps_since_command = 0        # steps with the latest command
        self.longest_stall = 0.0            # [s] longest time between two ticks
        self.first_tick = self.last_tick = None    # steady clock [s]
        self.t_first = 0.0                  # robot time [s] at the first tick
        self.heartbeat = 0
        if self.lockstep:
            self.create_timer(0.1, self.on_idle)
            self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
            self.create_timer(1.0, self.publish_lockstep_status,
                              clock=RosClock(clock_type=ClockType.STEADY_TIME))
        else:
            self.create_timer(1.0 / rate, self.on_tick)
            self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
            self.create_timer(1.0, self.publish_status,
                              clock=RosClock(clock_type=ClockType.STEADY_TIME))

    def reset(self):
        self.diverged = None                # why the simulation stopped (brakes), if it did
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
        answers = command_state_ns(msg) if self.lockstep else None
        if answers is not None and answers != self.state_ns:
            # an answer to an earlier state (a re-sent command for a re-published state,
            # after the first answer had already stepped the robot): stepping again would
            # apply that torque over one more period
            self.duplicate_commands += 1
            self.get_logger().info(
                f"command for the state at {answers * 1e-9:.4f} s ignored: the robot is at "
                f"{(self.state_ns or 0) * 1e-9:.4f} s ({self.duplicate_commands} repeated "
                f"answers ignored)", throttle_duration_sec=1.0)
            return
        self.u = u
        self.commands += 1
        self.last_command = time.monotonic()
        self.steps_since_command = 0
        if self.lockstep:
            self.on_tick()

    def on_idle(self):
        # re-publish while waiting for the first command (or after the graph went quiet), so
        # that late-joining nodes get the state; duplicates carry the same stamp
        if time.monotonic() - self.last_command > self.IDLE:
            self.publish(self.sim.state.t, self.u)

    def on_tick(self):
        if not self.lockstep:
            self.count_tick(time.monotonic())
        if self.commands == 0 and not self.lockstep:    # brakes on until the first command
            self.sim.t += self.sim.dt                   # (the robot's clock runs)
            self.publish(self.sim.t, self.u)
            return
        if (not self.lockstep and self.command_timeout > 0 and self.diverged is None
                and self.steps_since_command * self.sim.dt >= self.command_timeout - 1e-12):
            # the latest command is too old: the robot's clock waits for the controller
            self.waited += 1
            self.get_logger().warning(
                f"waiting for a command: the latest is {self.steps_since_command} periods old "
                f"(command_timeout {self.command_timeout:g} s; {self.waited} periods waited)",
                throttle_duration_sec=1.0)
            if time.monotonic() - self.last_command > self.IDLE:
                # a command lost for good (none comes without a new state): the state again
                self.last_command = time.monotonic()
                self.publish(self.sim.state.t, self.u)
            return
        self.steps_since_command += 1
        if self.diverged is None:
            try:
                self.sim.step(self.u)
            except DataError as exc:    # the integration diverged (a command far too large)
                self.diverged = str(exc)
                self.get_logger().error(f"{exc}: the brakes hold the arm from now on (until "
                                        f"~/reset)")
        if self.diverged is not None:   # brakes: the last finite state, the clock runs
            self.sim.t += self.sim.dt
            self.publish(self.sim.t, self.u)
            return
        self.publish(self.sim.state.t, self.u)

    def count_tick(self, now):
        """Real time: count the periods the timer skipped before this tick (``now``, steady
        clock [s])."""
        previous, self.last_tick = self.last_tick, now
        self.ticks += 1
        if self.first_tick is None:
            self.first_tick, self.t_first = now, self.sim.t
        else:
            gap = now - previous
            if gap > 1.5 * self.period:
                self.skipped += int(round(gap / self.period)) - 1
                self.longest_stall = max(self.longest_stall, gap)
                if gap > 10 * self.period:
                    self.get_logger().warning(
                        f"real time not kept: no step for {gap:.3f} s ({self.skipped} periods "
                        f"skipped so far, the robot's clock at {self.real_time_factor():.2f} x "
                        f"real time)", throttle_duration_sec=1.0)

    def real_time_factor(self) -> float:
        """Robot time over wall time since the first tick (1 when real time is kept)."""
        wall = (self.last_tick or 0.0) - (self.first_tick or 0.0)
        return (self.sim.t - self.t_first) / wall if wall > 0 else 1.0

    def publish_lockstep_status(self):
        """Lockstep: status and heartbeat on /diagnostics every second (steady clock)."""
        self.heartbeat += 1
        level = DiagnosticStatus.ERROR if self.diverged else DiagnosticStatus.OK
        values = {"heartbeat": self.heartbeat, "robot_time_s": f"{self.sim.t:.3f}",
                  "commands": self.commands, "repeated_answers": self.duplicate_commands}
        self.pub_diag.publish(diagnostic_status(
            self, "lockstep", level, self.diverged or "stepping on commands", values))

    def publish_status(self):
        self.heartbeat += 1
        factor = self.real_time_factor()
        level = (DiagnosticStatus.ERROR if self.diverged else
                 DiagnosticStatus.OK if self.skipped == 0 and self.waited == 0
                 else DiagnosticStatus.WARN)
        values = {"rate_hz": 1.0 / self.period, "ticks": self.ticks,
                  "skipped_periods": self.skipped, "waited_periods": self.waited,
                  "longest_stall_s": f"{self.longest_stall:.4f}",
                  "command_timeout_s": f"{self.command_timeout:g}",
                  "tolerated_delay_periods": self.tolerated_delay,
                  "real_time_factor": f"{factor:.3f}", "robot_time_s": f"{self.sim.t:.3f}",
                  "heartbeat": self.heartbeat}
        message = ("real time kept" if self.skipped == 0 and self.waited == 0 else
                   f"{self.skipped} periods skipped, {self.waited} waited for a command: the "
                   f"robot's clock runs at {factor:.2f} x real time")
        if self.diverged:
            message = f"{self.diverged}: brakes on until ~/reset; {message}"
        self.pub_diag.publish(diagnostic_status(self, "real time", level, message, values))

    def publish(self, t, u):
        m = self.sim.measure()
        stamp = to_stamp(t, Time)
        self.state_ns = stamp_ns(stamp)
        names = list(self.model.joint_names)
        if self.pub_clock is not None:
            publish_live(self, self.pub_clock, Clock(clock=stamp))
        if self.pub_motor is not None:
            msg = JointState(name=names, position=m["theta"].tolist(),
                             velocity=m["dtheta"].tolist(), effort=u.tolist())
            msg.header.stamp = stamp
            publish_live(self, self.pub_motor, msg)
        msg = JointState(name=names, position=m["q"].tolist(), velocity=m["dq"].tolist(),
                         effort=([] if self.pub_motor is not None else u.tolist()))
        msg.header.stamp = stamp
        publish_live(self, self.pub_joint, msg)


def main(args=None):
    main_for(SimulatedRobot, args)


if __name__ == "__main__":
    main()
