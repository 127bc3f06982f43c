"""excitation_publisher: plays an excitation trajectory as a streamed reference.

The reference (trajectory_msgs/JointTrajectory: positions [rad], velocities [rad/s],
accelerations [rad/s^2]; header.stamp = the time its first point applies to, each point's
time_from_start counted from it, as ros2_control's joint_trajectory_controller reads them; its
first point the current reference) is published

- lockstep (``lockstep: true``): once per ``/clock`` tick of the simulated robot, for that tick
  (a tick going back stops the run: the robot was reset, or another robot's clock shares the
  ROS domain);
- real time, ``reference_clock: states`` (default): on the robot's clock - for each joint state
  whose header stamp advanced by at least a period (1 / ``rate_hz``), for that stamp. The
  reference never runs ahead of the robot: a robot (or a simulator) that slows down or stalls
  is driven along the trajectory in its own time, and the reference resumes where it stopped;
- real time, ``reference_clock: node``: on a timer at ``rate_hz`` of this node's clock (for
  drivers whose joint states carry no advancing stamps).

Look-ahead (real time, ``lookahead`` s, default 1; lockstep: the current point only): each
reference also carries the trajectory ahead - its points on the run's grid of
``lookahead_spacing`` s and at the joins of its pieces (move to start, B-spline knots, end),
to at least ``lookahead`` s ahead, then a stop ``lookahead_ramp`` s later at rest on the
trajectory's path. pd_controller keeps the latest reference whole and interpolates it
(quintic Hermite) at each joint state's stamp, so a starved publisher's silence does not stop
the arm's excitation (issue #24: the zollo_planar 1 kHz launch-test flake). After a silence
beyond the look-ahead the references rejoin the trajectory, over ``lookahead_ramp`` s, from
where the controller is (its stop, or the stop's rest point).

Nothing is published before ``~/start``. When the arm is away from the trajectory's first
point (measured on ``joint_states_topic``), a move-to-start segment comes first: a quintic
rest-to-rest polynomial, s(x) = 10x^3 - 15x^4 + 6x^5, whose peak velocity 1.875 |dq| / T is at
most ``move_to_start_velocity`` (and the joint's limit). After the end the final rest point is
held for ``hold_time`` s, then publication stops (which ends a lockstep run). With
``trajectory_controller_topic`` set, ``~/start`` also sends the whole trajectory (sampled every
``trajectory_sample_period`` s, starting after the move-to-start time, at least
``move_to_start_min_time``) to a joint_trajectory_controller; a run stopped before its end
(``~/stop``, a lost peer, deactivation) sends it an empty trajectory, which cancels the one
it plays and makes it hold the arm where it is (the controller's topic interface). A
trajectory violating the robot's position/velocity/acceleration limits is refused at start-up.

``~/start`` is refused, with the reason in the answer, unless the arm is ready
(``require_ready``; default true in real-time mode): joint states arrived within
``state_timeout`` s and, unless ``controller_status`` is '', the controller's latest entry on
``/diagnostics`` (at most ``status_timeout`` s old) is OK, and a recorder heard of
(``recorder_status``, its entry at most ``status_timeout`` s old) receives the joint states
(its ``states_received`` value above 0): right after start-up its subscription may not yet
have matched the robot's publisher (DDS discovery: seen 2.2 s after the robot's first state on
an idle machine, while the controller and this node received them), and a run started then
was recorded from seconds after its first reference on (incomplete). While it records, the
recorder must also have heard of this node (its ``excitations`` value) and wait for a run
(``window`` not ``from_start``): a recorder that had not heard of any excitation publisher
within its ``excitation_discovery`` writes from its ``~/start`` on, and its bag began 1.9 s
before the run (once, on the idle machine: this node's ``/diagnostics`` writer was discovered
late), and its reference subscription must have matched a publisher (``reference_publishers``
not 0: references published before the match never reach it). With ``require_recorder``
(the launch file) a recorder's status must have been heard of at all: without it, a run could
start while this node's ``/diagnostics`` reader had not yet matched the recorder's writer, and
the checks above were skipped. A controller fault
(ERROR) during the excitation stops it; a new ``~/start`` is refused until the controller is
re-enabled.

The run's state is on ``/diagnostics`` (entry ``excitation_publisher: excitation``), at every
change and every second (steady clock): ``idle``, ``running``, ``finished`` (level OK) or
``stopped`` before its end (level WARN, the reason in the message: ``~/stop``, a controller
fault, a stamp going back), with ``start_stamp_s`` (the time of its first reference: in
lockstep and with ``reference_clock: states`` the robot's stamp), ``played_s`` and
``planned_s`` (move to start + trajectory + hold). The recorder keeps it in the bag and judges
from it whether the recording holds the whole run (:mod:`~robot_identification.nodes.recorder`).
A lockstep run only ends at its planned end or on one of those reasons, never because the
machine is slow: no wall-clock time limit applies to it.

Heartbeats (real time, :class:`~._heartbeat.HeartbeatMonitor`): while a run plays, the
controller's and a recording recorder's ``/diagnostics`` entries (``controller_status``,
``recorder_status``) and the joint states must keep coming; one of them silent for
``heartbeat_timeout`` s (steady clock) after it was heard of stops the run with an ERROR
naming it, at that moment (:class:`~._common.PeerWatchdogs`) - for a stamped status once the
newest status heard of from another node is also stamped more than ``heartbeat_timeout``
after its latest one (this node's reception may be behind), at most twice the timeout. A
real-time run stopped before its end (any reason) ends with its last reference point at rest
(:meth:`rest_reference`): the controller holds the arm there at once. The status is
re-published every ``diagnostics_period`` s (its heartbeat).

Managed node (:class:`~._common.Managed`): ``~/start`` is refused unless it is active;
deactivation stops a run.

What a run plays (move to start, trajectory, hold) is the ROS-free
:class:`~robot_identification.excitation.ExcitationRun`. Longer than 200 lines: when it plays
is node logic - the three clocks above (``/clock`` ticks, the robot's stamps with the pauses
of a starved process, a timer), the readiness checks, the heartbeats and the run's status,
each tied to this node's subscriptions and timers.
"""
from __future__ import annotations

import threading
import time

import numpy as np
from builtin_interfaces.msg import Duration, Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.clock import Clock as RosClock
from rclpy.clock import ClockType
from rclpy.lifecycle import LifecycleNode
from rclpy.qos import DurabilityPolicy, QoSProfile
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from robot_identification.excitation import (ExcitationRun, check_limits, load_trajectory,
                                             trajectory_from_config)
from robot_identification.nodes._common import (LATEST, QOS, Managed, PeerWatchdogs, declare,
                                                declare_robot, diagnostic_status, main_for,
                                                serialized, to_sec, to_stamp)
from robot_identification.nodes._control_loop import quintic_hermite
from robot_identification.nodes._heartbeat import HeartbeatMonitor
from robot_identification.nodes._recording import REST_FRAME


class ExcitationPublisher(Managed, LifecycleNode):
    def __init__(self, **kwargs):
        super().__init__("excitation_publisher", **kwargs)
        self.state_lock = threading.RLock()     # the run's state (PeerWatchdogs' thread)
        self.model = declare_robot(self)
        path = declare(self, "trajectory_file", "",
                       "trajectory YAML; '' = the robot config's simulation.excitation",
                       read_only=True)
        self.traj = load_trajectory(path) if path else trajectory_from_config(self.model)
        self.rate = declare(self, "rate_hz", float(self.model.config.simulation.rate_hz),
                            "reference rate [Hz]", low=1.0, high=100000.0, read_only=True)
        self.period = 1.0 / self.rate
        check_limits(self.model, self.traj, 1.0 / self.rate)   # raises ExcitationError
        self.hold = declare(self, "hold_time", 0.5, "rest after the end [s]", low=0.0, high=1e3)
        self.lockstep = declare(self, "lockstep", True, "one reference per /clock tick",
                                read_only=True)
        self.reference_clock = declare(
            self, "reference_clock", "states", "real time: 'states' = the reference follows "
            "the joint states' header stamps (the robot's clock; never runs ahead of a robot "
            "that slows down or stalls), 'node' = a timer on this node's clock",
            choices=("states", "node"), read_only=True)
        self.pub = self.create_publisher(JointTrajectory, declare(
            self, "reference_topic", "reference", "streamed reference"), QOS)
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.pub_active = self.create_publisher(Bool, "~/active", latched)
        jtc = declare(self, "trajectory_controller_topic", "",
                      "joint_trajectory_controller topic; '' = do not send", read_only=True)
        self.pub_jtc = self.create_publisher(JointTrajectory, jtc, QOS) if jtc else None
        self.sample = declare(self, "trajectory_sample_period", 0.01,
                              "waypoint spacing sent to the controller [s]", low=1e-4, high=10.0)
        self.require_ready = declare(
            self, "require_ready", not self.lockstep, "refuse ~/start unless states are fresh "
            "and the controller is OK (default: true in real-time mode)")
        self.controller_status = declare(
            self, "controller_status", "pd_controller: control loop",
            "/diagnostics entry of the controller that must be OK; '' = none (e.g. a "
            "joint_trajectory_controller)")
        self.state_timeout = declare(self, "state_timeout", 0.1, "[s] joint states older "
                                     "than this are not fresh", low=1e-3, high=1e4)
        self.status_timeout = declare(self, "status_timeout", 2.0, "[s] controller status "
                                      "older than this (steady clock) is unknown",
                                      low=1e-2, high=1e4)
        self.v_move = declare(self, "move_to_start_velocity", 0.2, "[rad/s] peak velocity "
                              "of the move to the first point", low=1e-3, high=100.0)
        self.t_move_min = declare(self, "move_to_start_min_time", 1.0, "[s] shortest move "
                                  "to the first point (trajectory controller)", low=0.0,
                                  high=1e3)
        self.start_tolerance = declare(self, "start_tolerance", 0.005, "[rad] no move to "
                                       "start within this distance", low=0.0, high=10.0)
        self.max_step = declare(
            self, "max_reference_step", 0.01, "[s] real time, lookahead 0: a state stamped more "
            "than this after the last reference (this node missed the states between: its "
            "process was starved) advances the trajectory by one period only, so the "
            "reference resumes where it stopped - the controller held it meanwhile - instead "
            "of jumping ahead (with a lookahead: a state after its end rejoins the trajectory "
            "from where the controller is, lookahead_ramp); the trajectory's time then lags "
            "the robot's (reference_lag_s on /diagnostics); 0 = always follow the stamps",
            low=0.0, high=1e3)
        lookahead = declare(
            self, "lookahead", 1.0, "[s] real time: each reference also carries the "
            "trajectory this far ahead (points at time_from_start > 0 after the current one; "
            "pd_controller interpolates them while no newer reference comes, e.g. while this "
            "node is starved); 0 = the current point only; lockstep: 0", low=0.0, high=60.0,
            read_only=True)
        self.lookahead = 0.0 if self.lockstep else lookahead
        self.ramp_time = declare(
            self, "lookahead_ramp", 1.0, "[s] real time, with a lookahead: each reference's "
            "points end with a stop this long after the look-ahead (at rest on the "
            "trajectory's path, half of this further in its time): a controller that hears "
            "nothing more slows down to it instead of stopping at once; after such a silence "
            "the references rejoin the trajectory from where the controller is over this "
            "long - never a step of the reference velocity, which an elastic arm's stiff "
            "motor loop overshoots", low=1e-3, high=60.0, read_only=True)
        self.lookahead_spacing = declare(
            self, "lookahead_spacing", 0.2, "[s] step of the look-ahead's points (on the "
            "run's time grid; the joins of the trajectory's pieces are added): quintic "
            "interpolation between them is exact on quintic pieces (move to start, B-spline "
            "spans), within max|q^(6)| h^6 / 46080 on a Fourier series", low=1e-3, high=10.0,
            read_only=True)
        self.resume = None              # (robot time [s], from (q, dq, ddq), to (q, dq, ddq))
        #                                 of the latest rejoin
        self.stop_at = None             # [s] robot time where the latest reference's stop
        #                                 begins (None: its look-ahead reaches the run's end)
        self.reference_lag, self.reference_pauses = 0.0, 0     # [s], count (latest run)
        self.q_now, self.state_time = None, None     # latest joint positions, arrival [s]
        self.status = None              # (level, message, steady time) of the controller
        self.recorder = None            # (states it received or None, steady time, values)
        #                                 of the recorder's latest status
        self.create_subscription(JointState, declare(
            self, "joint_states_topic", "joint_states", "link side (readiness, move to start)"),
            self.on_joint, QOS if self.lockstep else LATEST)
        # every node's status (about 60 a second in the launch graph): a history that holds
        # more than a heartbeat_timeout of them, for the watchdogs' check (PeerWatchdogs)
        self.diag_sub = self.create_subscription(DiagnosticArray, "/diagnostics",
                                                 self.on_diagnostics, 100)
        self.t_start = None
        self.run = ExcitationRun(self.traj, hold=self.hold)    # what the latest run plays
        self.last, self.last_msg = None, None
        self.create_service(Trigger, "~/start", self.on_start)
        self.create_service(Trigger, "~/stop", self.on_stop)
        self.robot_clock = not self.lockstep and self.reference_clock == "states"
        self.state_stamp, self.stamps_advance = None, True   # of the latest joint state
        self.stamp_problems = 0         # joint state stamps that did not advance (robot clock)
        if self.lockstep:
            self.create_subscription(Clock, "/clock", lambda m: self.tick_on_clock(
                to_sec(m.clock)), QOS)
        elif not self.robot_clock:
            self.create_timer(1.0 / self.rate, lambda: self.tick(
                self.get_clock().now().nanoseconds * 1e-9))
        self.run_state, self.stop_reason = "idle", ""   # of the latest run (/diagnostics)
        self.stop_level = DiagnosticStatus.WARN         # of a run stopped before its end
        self.recorder_status = declare(
            self, "recorder_status", "recorder: recording", "/diagnostics entry of a "
            "recorder whose silence while it records stops the run; '' = none")
        self.require_recorder = declare(
            self, "require_recorder", False, "refuse ~/start (require_ready) until the "
            "recorder_status entry has been heard of, at most status_timeout s old: a graph "
            "with a recorder (the launch file) whose status this node has not heard yet (DDS "
            "discovery) would start a run the recorder may not receive")
        self.monitor = HeartbeatMonitor(0.0 if self.lockstep else declare(
            self, "heartbeat_timeout", 1.0, "[s] real time: the controller's or a recording "
            "recorder's /diagnostics entry, or the joint states, silent this long (steady "
            "clock) stop the run with an ERROR (0: never)", low=0.0, high=1e4))
        self.heartbeat = 0
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        steady = RosClock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(declare(self, "diagnostics_period", 0.1, "[s] status (heartbeat) "
                                  "period on /diagnostics", low=0.01, high=60.0),
                          self.publish_status, clock=steady)
        self.watchdogs = PeerWatchdogs(self, self.monitor, self.check_peers,
                                       carriers=[self.diag_sub], lock=self.state_lock)
        self.pub_active.publish(Bool(data=False))
        self.publish_status()
        self.get_logger().info(f"excitation {self.traj!r}, {self.traj.duration:.3g} s")
        self.start_lifecycle()

    _logged_tenth = 0                   # progress logged up to this tenth of the run

    @property
    def active(self) -> bool:
        return self.t_start is not None

    @serialized
    def on_active(self, active):
        if not active and self.active:
            self.get_logger().warning("excitation stopped: node deactivated")
            self.end("stopped", "node deactivated (lifecycle)")

    _peer_stop = -1.0                   # [s, steady] a lost peer stopped the latest run then

    @serialized
    def check_peers(self):
        """Real time, while a run plays: a peer silent for heartbeat_timeout stops it. For
        heartbeat_timeout after such a stop, the peers lost since are added to the stop's
        ERROR: a peer that stalled (a starved or blocked process) can stop the run just
        before the peer that is really gone (a killed robot: the controller stalled 1-3 s
        on the dead robot's shared-memory port, docs/ros.md) would have been named."""
        now = time.monotonic()
        later = (not self.active and self.run_state == "stopped"
                 and now - self._peer_stop <= self.monitor.timeout)
        if not self.active and not later:
            return
        peers = [p for p in ("joint_states", self.controller_status, self.recorder_status) if p]
        lost = self.monitor.newly_lost(now, peers)
        if not lost:
            return
        reason = self.watchdogs.reason(lost)
        if later:
            self.stop_reason += f"; then {reason}"
            self.get_logger().error(f"after the stop: {reason}")
            self.publish_status()
            return
        self._peer_stop = now
        self.get_logger().error(f"excitation stopped: {reason}")
        self.end("stopped", reason, DiagnosticStatus.ERROR)

    @serialized
    def on_joint(self, msg):
        self.watchdogs.beat("joint_states")
        d = dict(zip(msg.name, msg.position))
        q = np.array([d.get(j, np.nan) for j in self.model.joint_names], dtype=float)
        self.q_now = q if np.all(np.isfinite(q)) else None
        self.state_time = self.get_clock().now().nanoseconds * 1e-9
        stamp = to_sec(msg.header.stamp)
        self.stamps_advance = self.state_stamp is None or stamp > self.state_stamp
        self.state_stamp = stamp
        if self.robot_clock:
            self.tick_on_state(to_sec(msg.header.stamp))

    def tick_on_state(self, t):
        """Real time on the robot's clock: one reference for the state stamped ``t`` [s] once
        it is a period past the last reference; a stamp going back stops the excitation (the
        robot was restarted: the trajectory cannot continue from where it was)."""
        if not self.active:
            return
        if self.last is not None and t < self.last:
            self.stamp_problems += 1
            reason = f"joint state stamp went back from {self.last:.6f} s to {t:.6f} s"
            self.get_logger().error(f"excitation stopped: {reason}")
            self.end("stopped", reason)
            return
        if self.last is None or t >= self.last + self.period * (1.0 - 1e-6):
            self.tick(t)

    @serialized
    def tick_on_clock(self, t):
        """Lockstep: one reference per ``/clock`` tick ``t`` [s]. The simulated robot's clock
        only advances (or repeats, its keep-alive): a tick going back stops the excitation
        (the robot was reset, or another robot's clock shares this ROS domain: its time would
        end the run early or play it out of order)."""
        if self.active and self.last is not None and t < self.last:
            reason = (f"/clock went back from {self.last:.6f} s to {t:.6f} s (the simulated "
                      f"robot was reset, or another robot's /clock shares this ROS domain)")
            self.get_logger().error(f"excitation stopped: {reason}")
            self.end("stopped", reason)
            return
        self.tick(t)

    @serialized
    def on_diagnostics(self, msg):
        for st in msg.status:
            if st.name == self.recorder_status:
                recording = any(kv.key == "state" and kv.value == "recording"
                                for kv in st.values)
                values = {kv.key: kv.value for kv in st.values}
                received = values.get("states_received", "")
                self.recorder = (int(received) if received.isdigit() else None,
                                 time.monotonic(), values)
                if recording:
                    self.watchdogs.beat(st.name, stamp=to_sec(msg.header.stamp))
                else:
                    self.monitor.forget(st.name)
            if st.name == self.controller_status:
                self.watchdogs.beat(st.name, stamp=to_sec(msg.header.stamp))
                self.status = (st.level, st.message, time.monotonic())
                if st.level >= DiagnosticStatus.ERROR and self.active:
                    self.get_logger().error(f"excitation stopped: {st.name}: {st.message}")
                    self.end("stopped", f"{st.name}: {st.message}")
        self.watchdogs.heard(msg)

    def not_ready(self) -> str:
        """Why an excitation may not start now ('' when it may)."""
        if not self.require_ready:
            return ""
        if self.state_time is None:
            return "no joint states received"
        age = self.get_clock().now().nanoseconds * 1e-9 - self.state_time
        if age > self.state_timeout:
            return f"joint states {age:.3f} s old (state_timeout {self.state_timeout:g} s)"
        if self.controller_status:
            if self.status is None:
                return f"no status of '{self.controller_status}' on /diagnostics"
            level, text, at = self.status
            if time.monotonic() - at > self.status_timeout:
                return f"'{self.controller_status}' status {time.monotonic() - at:.1f} s old"
            if level != DiagnosticStatus.OK:
                return f"{self.controller_status}: {text}"
        if self.q_now is None:
            return "joint states are not finite"
        if self.recorder is not None and time.monotonic() - self.recorder[1] \
                <= self.status_timeout:
            why = self.recorder_not_ready(*self.recorder)
            if why:
                return why
        elif self.require_recorder and self.recorder_status:
            return (f"no status of '{self.recorder_status}' on /diagnostics within "
                    f"status_timeout {self.status_timeout:g} s (require_recorder; DDS "
                    f"discovery of the recorder not done): a run now might not be recorded")
        if self.robot_clock and not self.stamps_advance:
            return (f"joint state stamps do not advance ({self.state_stamp:.6f} s twice): the "
                    f"reference follows them (reference_clock 'states'; 'node' for a timer)")
        return ""

    def recorder_not_ready(self, received, at, values) -> str:
        """Why the recorder's latest status (``states_received``, and while it records its
        ``window`` and the ``excitations`` it has heard of) forbids a run now ('' if not)."""
        if received == 0:
            return (f"'{self.recorder_status}' has received no joint states yet (its "
                    f"subscription has not matched the robot's publisher - discovery - or "
                    f"the QoS do not match): a run now would start before its recording")
        window = values.get("window", "")
        if values.get("state") != "recording" or window not in ("waiting", "from_start"):
            return ""                   # idle, window 'all', a run's window, older recorder
        if window == "from_start":
            return (f"'{self.recorder_status}' records from its ~/start on (it heard of no "
                    f"excitation publisher within its excitation_discovery): its bag would "
                    f"begin before this run - restart the recording (~/stop, ~/start)")
        me = f"{self.get_name()}: excitation"
        if me not in values.get("excitations", "").split(","):
            return (f"'{self.recorder_status}' has not heard of this node yet (its "
                    f"/diagnostics subscription has not matched this publisher - discovery): "
                    f"it could not bound its bag by this run")
        if values.get("reference_publishers", "") == "0":
            return (f"'{self.recorder_status}' has not matched a publisher of the reference "
                    f"topic yet (DDS discovery): the run's first references and the joint "
                    f"states stamped meanwhile would be missing from its bag")
        return ""

    @serialized
    def on_start(self, request, response):
        if self.lifecycle != "active":
            response.success = False
            response.message = f"not started: node {self.lifecycle} (lifecycle: activate it)"
            return response
        if self.active:
            response.success, response.message = False, "already running"
            return response
        reason = self.not_ready()
        if reason:
            response.success, response.message = False, f"not started: {reason}"
            self.get_logger().warning(response.message)
            return response
        v = np.array([min(self.v_move, j.limits.velocity or np.inf)
                      for j in self.model.config.joints])
        # with a trajectory controller its move (at least move_to_start_min_time) is the
        # streamed reference's too: the recorded reference and the run's window are the
        # motion that controller plays (a rest-to-rest quintic either way)
        self.run = ExcitationRun(self.traj, self.q_now, v, self.start_tolerance, self.hold,
                                 **({} if self.pub_jtc is None
                                    else {"min_move_time": self.t_move_min}))
        self.t_start = "next"           # starts at the next tick
        self._logged_tenth = 0
        self.last, self.last_msg = None, None
        self.run_state, self.stop_reason, self._start_stamp = "running", "", None
        self.stop_level = DiagnosticStatus.WARN
        now = time.monotonic()          # peers heard of before the run count from its start
        for peer in list(self.monitor.last):
            self.watchdogs.beat(peer, max(self.monitor.last[peer], now))
        if self.pub_jtc is not None:
            self.pub_jtc.publish(self.joint_trajectory())
        self.pub_active.publish(Bool(data=True))
        t_move = self.run.offset
        response.success, response.message = True, (
            f"{self.traj.duration:.6g} s trajectory after a {t_move:.3g} s move to start")
        return response

    @property
    def move(self):
        """(q0, dq, T) of the latest run's move to the first point, or None."""
        return self.run.move

    @property
    def offset(self) -> float:
        """[s] from the start to the trajectory's first point (the move to start)."""
        return self.run.offset

    @property
    def planned(self) -> float:
        """[s] of the whole run: move to start + trajectory + hold."""
        return self.run.planned

    @serialized
    def on_stop(self, request, response):
        response.success, response.message = self.active, "stopped" if self.active else "idle"
        if self.active:
            self.get_logger().warning("excitation stopped by ~/stop")
            self.end("stopped", "stopped by ~/stop")
        return response

    @serialized
    def end(self, state, reason="", level=None):
        """End the run: ``finished`` (its planned end) or ``stopped`` (before it, for
        ``reason``; ``level`` on /diagnostics, default WARN); said on /diagnostics and by
        ``~/active`` false."""
        if not self.active:
            return
        self.run_state, self.stop_reason = state, reason
        self.stop_level = DiagnosticStatus.WARN if level is None else level
        self.publish_status()           # before ~/active: a recorder stopped on it knows why
        self.t_start = None
        self.pub_active.publish(Bool(data=False))
        if state == "stopped" and not self.lockstep and self.last_msg is not None:
            self.pub.publish(self.rest_reference())
        if state == "stopped" and self.pub_jtc is not None:
            # a joint_trajectory_controller given the whole trajectory would play it on:
            # an empty trajectory on its topic cancels it and holds the current position
            self.pub_jtc.publish(JointTrajectory(joint_names=list(self.model.joint_names)))

    def rest_reference(self):
        """A stopped real-time run's last reference point at rest (zero velocity and
        acceleration), stamped one period after it (after the run: a recording's window
        leaves it out): the controller holds the arm there at once, instead of tracking the
        last moving reference until its reference watchdog (``watchdog_timeout``) notices that
        none comes (measured: a killed recorder's run, arm held 0.8-3.1 s after the kill).
        Its ``header.frame_id`` is :data:`REST_FRAME`."""
        last = self.last_msg.points[0]
        zero = [0.0] * len(last.positions)
        msg = JointTrajectory(joint_names=list(self.last_msg.joint_names), points=[
            JointTrajectoryPoint(positions=list(last.positions), velocities=zero,
                                 accelerations=zero, time_from_start=last.time_from_start)])
        msg.header.stamp = to_stamp(to_sec(self.last_msg.header.stamp) + self.period, Time)
        msg.header.frame_id = REST_FRAME    # not a reference of the run (a recorder's bounds)
        return msg

    @serialized
    def publish_status(self):
        """The run's state on /diagnostics (see the module docstring)."""
        start = self._start_stamp
        played = self.last - start if start is not None and self.last is not None else 0.0
        planned = self.planned
        self.heartbeat += 1
        if self.run_state == "stopped":
            level = self.stop_level
            message = (f"stopped after {played:.3f} of {planned:.3f} s: {self.stop_reason}")
        elif self.run_state == "running":
            level, message = DiagnosticStatus.OK, f"running: {played:.3f} of {planned:.3f} s"
        elif self.run_state == "finished":
            level, message = DiagnosticStatus.OK, f"finished: {planned:.3f} s played"
        else:
            level, message = DiagnosticStatus.OK, "idle"
        values = {"state": self.run_state, "reason": self.stop_reason,
                  "start_stamp_s": "" if start is None else f"{start:.9f}",
                  "played_s": f"{played:.6f}", "planned_s": f"{planned:.6f}",
                  "clock": "robot" if self.lockstep or self.robot_clock else "node",
                  "reference_lag_s": f"{self.reference_lag:.6f}",
                  "reference_pauses": self.reference_pauses,
                  "lockstep": self.lockstep, "heartbeat": self.heartbeat,
                  "lifecycle": self.lifecycle,
                  # wall clock [ns]: a recorder's ~/stop knows whether this status is older
                  # than the call (a reliable reader behind a gap gets it seconds late)
                  "published_ns": time.time_ns()}
        self.pub_diag.publish(diagnostic_status(self, "excitation", level, message, values))

    _start_stamp = None                 # [s] first tick of the latest run (kept after its end)

    @serialized
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
            self.t_start = self._start_stamp = self.last = t
            self.resume = self.stop_at = None
            self._points, self._times = {}, ((None, None), None)
            self.reference_lag, self.reference_pauses = 0.0, 0
            self.publish_status()       # the start stamp: a recorder judges its coverage
        elif (not self.lockstep and self.max_step > 0 and self.last is not None
              and (self.stop_at is not None and t > self.stop_at + 1e-9 if self.lookahead
                   else t - self.last > self.max_step * (1.0 + 1e-6))):
            # this node missed states (starved) beyond its last reference's look-ahead: the
            # controller followed that, then its stop: rejoin the trajectory from where the
            # controller is (lookahead_ramp); without a look-ahead, resume where it stopped,
            # one period on (the controller held it) - a jump would be a step of the
            # reference that a stiff (elastic) loop turns into a velocity spike (docs/ros.md,
            # "Elastic arms in real time")
            lag = self.rejoin(t) if self.lookahead else t - self.last - self.period
            self.t_start += lag
            self.reference_lag += lag
            self.reference_pauses += 1
            self.get_logger().warning(
                f"no joint state processed for {t - self.last:.3f} s of robot time (this node "
                f"was starved): the trajectory "
                + ("rejoins from the controller on its stop" if self.lookahead
                   else "resumes where it stopped")
                + f", "
                f"{self.reference_lag:.3f} s behind the robot's clock ({self.reference_pauses} "
                f"pauses)",
                throttle_duration_sec=1.0)
        self.last = t
        tau = t - self.t_start
        if tau > self.planned:
            # trial time (a real-time clock would print epoch seconds)
            self.get_logger().info(f"excitation finished {tau:.3f} s after the start "
                                   f"({self.offset:.3g} s move to start, "
                                   f"{self.traj.duration:.3g} s trajectory, {self.hold:.3g} s "
                                   f"hold)")
            self.end("finished")
            return
        total = self.planned
        tenth = int(10 * tau / total) if total > 0 else 10
        if tenth > self._logged_tenth:
            self._logged_tenth = tenth        # progress every 10 % of the run (sim time)
            if 0 < tenth < 10:
                self.get_logger().info(f"excitation {10 * tenth} %: {tau:.1f} of {total:.1f} s")
        msg = JointTrajectory(joint_names=list(self.model.joint_names),
                              points=[self.point_at(t)])
        if self.lookahead:
            msg.points += self.lookahead_points(t, tau)
        msg.header.stamp = to_stamp(t, Time)
        self.last_msg = msg
        self.pub.publish(msg)

    def lookahead_points(self, t, tau):
        """The points after the current one (robot time ``t``, run time ``tau`` [s]): while
        it rejoins the trajectory (:meth:`rejoin`) the rejoin's end; the run at least
        ``lookahead`` s ahead, to the next step of its grid of ``lookahead_spacing`` (the
        same points in every message: made once) and at its joins; then, unless that is the
        run's end, its stop: at rest ``lookahead_ramp`` s later where the run is after half
        of that (on its path; the controller's quintic between the two is the stop, its
        speed falling from the run's to zero: 1 - 3x^2 + 2x^3 on a straight path, x the
        fraction of the stop). Sets :attr:`stop_at` (robot time where the stop begins)."""
        step, points = self.lookahead_spacing, []
        start = tau
        if self.rejoining(t):
            t_j = self.resume[0] + self.ramp_time
            points.append(self.make_point(self.resume[2], t_j - t))
            start = t_j - self.t_start
        end = min(max(np.ceil((tau + self.lookahead) / step - 1e-6) * step, start),
                  self.planned)
        if self._times[0] != (start if self.rejoining(t) else None, end):
            # the run's times to the look-ahead's end (made anew once per grid step)
            self._times = ((start if self.rejoining(t) else None, end),
                           [(int(round(x * 1e9)), x) for x in
                            self.run.lookahead(start, end - start, step).tolist()])
        start += 1e-6
        points += [self.cached(key, x - tau, x) for key, x in self._times[1] if x > start]
        self.stop_at = None
        if end < self.planned:
            self.stop_at = self.t_start + end
            zero = np.zeros(self.model.n)
            points.append(self.cached(
                ("stop", int(round(end * 1e9))), end + self.ramp_time - tau,
                lambda: (self.run.at(end + self.ramp_time / 2)[0], zero, zero)))
        return points

    def rejoin(self, t) -> float:
        """After a silence beyond the last reference's look-ahead (at robot time ``t`` [s],
        the controller on that reference's stop or at rest after it): the next references
        rejoin the run over ``lookahead_ramp`` s, a quintic from where the controller is
        (its reference at ``t``: the last message's points, quintic Hermite, as
        pd_controller evaluates them) to the run at its full speed, where the run's time
        has advanced by the stop's rate, from the controller's to 1, over the rejoin (on a
        straight path: no step of the reference's position, velocity or acceleration).
        Returns the lag [s] added to the run's time."""
        msg, T = self.last_msg, self.ramp_time
        times = np.array([to_sec(p.time_from_start) for p in msg.points])
        q, dq, ddq = (np.array([getattr(p, f) for p in msg.points], dtype=float)
                      for f in ("positions", "velocities", "accelerations"))
        elapsed = t - to_sec(msg.header.stamp)
        now = quintic_hermite(elapsed, times, q, dq, ddq)
        if elapsed > times[-1]:
            now = (now[0], np.zeros_like(now[1]), np.zeros_like(now[2]))   # held there
        x = min(max((t - self.stop_at) / T, 0.0), 1.0)
        tau = self.stop_at - self.t_start + T * (x - x**3 + x**4 / 2)   # the stop's run time
        rate = 1 - 3 * x * x + 2 * x**3
        tau_j = tau + T * (1 + rate) / 2
        self.resume = (t, now, self.run.at(tau_j))
        return t + T - tau_j - self.t_start

    def cached(self, key, after, tau):
        """The point ``key`` (the run at ``tau`` [s], or ``tau()`` the values, made the
        first time), its time_from_start set to ``after`` [s]; the oldest are forgotten."""
        point = self._points.get(key)
        if point is None:
            if len(self._points) > 200:
                first = min(k if isinstance(k, int) else k[1] for k in self._points)
                self._points = {k: v for k, v in self._points.items()
                                if (k if isinstance(k, int) else k[1]) > first}
            values = tau() if callable(tau) else self.run.at(tau)
            point = self._points[key] = self.make_point(values, after)
        else:
            ns = int(round(after * 1e9))
            point.time_from_start.sec, point.time_from_start.nanosec = divmod(ns, 10**9)
        return point

    _points = {}                        # look-ahead points made (cached), by run time [ns]
    _times = ((None, None), None)       # (key, run times) of the latest look-ahead

    def rejoining(self, t) -> bool:
        """Whether robot time ``t`` [s] is within the latest rejoin (:meth:`rejoin`)."""
        return self.resume is not None and t < self.resume[0] + self.ramp_time - 1e-9

    def point_at(self, t, after=0.0):
        """The reference at robot time ``t`` [s] (real time; lockstep: run time ``t`` -
        ``t_start``), its time_from_start ``after`` [s]."""
        if self.rejoining(t):
            (t_r, c, j), T = self.resume, self.ramp_time
            values = quintic_hermite(t - t_r, np.array([0.0, T]), *(
                np.array([c[i], j[i]]) for i in range(3)))
            return self.make_point(values, after)
        return self.point(t - self.t_start, after)

    def point(self, tau, after=0.0):
        """Reference at ``tau`` s after the start (move to start, then the trajectory), its
        time_from_start ``after`` [s] (after the message's stamp)."""
        return self.make_point(self.run.at(tau), after)

    @staticmethod
    def make_point(values, after):
        q, dq, ddq = (x.tolist() for x in values)
        ns = int(round(after * 1e9))
        return JointTrajectoryPoint(positions=q, velocities=dq, accelerations=ddq,
                                    time_from_start=Duration(sec=ns // 10**9,
                                                             nanosec=ns % 10**9))

    def joint_trajectory(self):
        """The whole trajectory for a joint_trajectory_controller: its first point at the
        move-to-start time (at least ``move_to_start_min_time``; the controller interpolates
        from the current state to it), then every ``trajectory_sample_period`` s."""
        t0 = max(self.offset, self.t_move_min)
        n = int(self.traj.duration / self.sample) + 1
        points = []
        for k in range(n):
            tau = min(k * self.sample, self.traj.duration)
            p = self.point(self.offset + tau)
            ns = int(round((t0 + tau) * 1e9))
            p.time_from_start = Duration(sec=ns // 10**9, nanosec=ns % 10**9)
            points.append(p)
        return JointTrajectory(joint_names=list(self.model.joint_names), points=points)


def main(args=None):
    main_for(ExcitationPublisher, args)


if __name__ == "__main__":
    main()
