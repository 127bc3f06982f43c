"""recorder: records link/motor states, commands and references of a run into a rosbag2 (MCAP).

Raw subscriptions (exact CDR bytes) -> a queue -> a writer thread (:class:`QueuedBagWriter`,
``nodes/_recording.py``) -> :class:`robot_identification.data._bag.BagWriter`, which flushes
every ``flush_period`` s: the subscription callback never waits for the disk. The subscriptions
keep all messages (reliable, KEEP_ALL): DDS holds whatever arrived until the callback takes it,
so a briefly stalled executor loses nothing (a keep-last history drops the oldest messages once
it is full).

Per recorded topic (:class:`TopicCount`): messages recorded; messages **lost** (published by a
matched publisher - a gap in its DDS publication sequence numbers - but never received);
out-of-order/duplicate sequence numbers. Per state topic (``joint_states``, ``motor_states``):
samples **missing** from the header stamps at ``expected_rate_hz`` (never published, e.g. a
control loop that skipped periods, or lost) and their arrival rate on the recorder's clock
(the wall clock; ``/clock`` with ``use_sim_time``).
The counts are logged, returned by ``~/stop`` and ``~/status`` and stored in the bag
(metadata.yaml ``custom_data``, read back as ``Dataset.metadata['recording']``; the identifier
turns them into ``messages_lost`` / ``samples_missing`` diagnostics).

``~/stop`` first records what was published before it was called: a starved recorder is
behind the graph, and a caller stops it as soon as the run ends. It takes what DDS holds until
a joint state published after the call has arrived (DDS source timestamps), an excitation
run that ended is recorded up to its end and each excitation publisher's latest status was
published after the call (it re-sends it every second), or the publishers were silent for 5 s,
at most ``drain_timeout`` s: the tail of a run is not cut off because the recorder was slow.

Whether the recording holds the whole excitation run: the latest ``/diagnostics`` entry of
an excitation publisher (``<node>: excitation``, :mod:`.excitation_publisher`) when the
recording stops, judged against the recorded joint state stamps
(:func:`~robot_identification.nodes._recording.excitation_coverage`): a run stopped before
its end (a controller fault, ``~/stop``, ...) or a recording that starts after the run's first
reference or ends before its planned end is *incomplete*: said by ``~/stop`` (and a warning in
the log), stored as ``Dataset.metadata['excitation']`` and turned into the identifier's
``recording_incomplete`` diagnostic - never a silently short bag.

Which messages (``window: excitation``, default): those stamped within the excitation run
that starts during the recording, from its first reference to its last
(:class:`~._recording.StampWindow`; commands by the state stamp they answer, references and
states by their header stamps): a starved recorder's backlog from before the run and the
states after its end are left out, whatever their arrival time. Until the run starts the
messages wait in memory; in a graph without an excitation publisher (none seen on
``/diagnostics``, none publishing the reference topic, within ``excitation_discovery`` s of
states) they are written from the ``~/start`` call on (stamps on the recorder's clock), else
all. The status says which (``window``: waiting | run | from_start | all) and which excitation
publishers the recorder has heard of (``excitations``): an excitation publisher refuses its
``~/start`` while a recording recorder has not heard of it or records from its ``~/start``
on - the bag would begin before the run (DDS discovery of that publisher took longer than
the recording's first seconds; seen once, 1.9 s, on the idle machine).
A run whose status never reached the recorder is bounded by its own references' first and
last stamps (a stopped run's rest point, ``header.frame_id`` ``rest``, is not one of them);
the run's periods before the first and after the last joint state received count as missing
samples (``missing_before_first``, ``missing_after_last``: its subscription matched late).
``window: all``: everything received between ``~/start`` and ``~/stop``.

QoS of the state subscriptions: ``state_reliability`` (default reliable, as
joint_state_broadcaster publishes; ``best_effort`` receives a best-effort publisher, which a
reliable subscription never does: that mismatch is reported as an ERROR on ``/diagnostics``
and in the log, naming the parameter) and ``state_depth`` (0 = keep all, default).

Status and heartbeat on ``/diagnostics`` (entry ``recorder: recording``, every
``diagnostics_period`` s, and at ``~/start``): ``state`` idle | recording,
``states_received`` (the fewest messages received on a state topic since start-up: 0 until
its subscriptions matched the robot's publishers; an excitation publisher starts no run
before), ``state_publishers`` / ``reference_publishers`` (publishers its state and reference
subscriptions matched - DDS discovery -: no run starts while the reference has none, its
first references would never arrive), the counts so far, ERROR on a write failure, a QoS
mismatch or a lost peer.
Heartbeats: while it records a real-time excitation run, the controller's entry
(``controller_status``) and the joint states silent for ``heartbeat_timeout`` s stop the
recording (the bag is closed, INCOMPLETE, with the reason); those of them lost within
``heartbeat_timeout`` after that stop are added to its ERROR. The controller's stamped entry
counts as silent only once the newest status heard of from another node on ``/diagnostics``
is also stamped more than ``heartbeat_timeout`` after its latest one (a backlog on this
node's reception is not the controller's silence), at most twice the timeout
(:class:`~._heartbeat.HeartbeatMonitor`).

Managed node (:class:`~._common.Managed`): ``~/start`` is refused unless active; deactivation
stops a recording. Longer than 200 lines: the drain and the completeness judgement of
``~/stop`` need the node's subscriptions (the counting, the window and the coverage are the
ROS-free classes of ``_recording.py``).
"""
from __future__ import annotations

import math
import struct
import threading
import time
from pathlib import Path

from diagnostic_msgs.msg import DiagnosticArray
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.clock import Clock as RosClock
from rclpy.clock import ClockType
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.lifecycle import LifecycleNode
from rclpy.serialization import deserialize_message
from rclpy.task import Future
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from robot_identification.data import BagWriter
from robot_identification.errors import DataError
from robot_identification.nodes._common import (Managed, PeerWatchdogs, command_state_ns,
                                                declare, declare_qos, diagnostic_status,
                                                main_for, serialized, to_sec)
from robot_identification.nodes._heartbeat import HeartbeatMonitor
from robot_identification.nodes._recording import (RECORD_QOS, REST_FRAME, QueuedBagWriter,
                                                   StampWindow, TopicCount, WindowedBagWriter,
                                                   excitation_coverage, excitation_status)

#: [s] of state stamps a message inside the window waits before it is written: the run's end
#: status arrives after the states of its last period
HOLDBACK = 0.5

__all__ = ["Recorder", "TopicCount", "QueuedBagWriter", "RECORD_QOS", "main"]

_TYPES = {JointState: "sensor_msgs/msg/JointState",
          Float64MultiArray: "std_msgs/msg/Float64MultiArray",
          JointTrajectory: "trajectory_msgs/msg/JointTrajectory"}


def _rest_point(data) -> bool:
    """Whether a serialized JointTrajectory (CDR) is a stopped run's rest point (its
    ``header.frame_id`` is :data:`~._recording.REST_FRAME`, read without
    deserializing: after the 4-byte encapsulation and the 8-byte stamp, a uint32 length)."""
    if len(data) < 16:
        return False
    (n,) = struct.unpack_from("<I" if data[1] == 1 else ">I", data, 12)
    return n == len(REST_FRAME) + 1 and bytes(data[16:16 + n - 1]) == REST_FRAME.encode()


class Recorder(Managed, LifecycleNode):
    def __init__(self, **kwargs):
        super().__init__("recorder", **kwargs)
        self.state_lock = threading.RLock()     # the recording's state (PeerWatchdogs' thread)
        self.data_directory = Path(declare(
            self, "data_directory", "robot_identification_data",
            "directory of the recorded bags (relative: to the working directory)")).expanduser()
        self.prefix = declare(self, "bag_prefix", "run", "bag name prefix: <prefix>_<date>_<time>")
        self.flush_period = declare(self, "flush_period", 1.0, "seconds between flushes to disk",
                                    low=0.01, high=60.0)
        self.rate = declare(self, "expected_rate_hz", 1000.0,
                            "state rate for counting missing samples [Hz]", low=1.0,
                            high=100000.0)
        topics = {
            declare(self, "joint_states_topic", "joint_states", "link-side states"):
                (JointState, True),
            declare(self, "motor_states_topic", "motor_states",
                    "motor-side states ('' for rigid arms)"): (JointState, True),
            declare(self, "command_topic", "effort_controller/commands", "torque commands"):
                (Float64MultiArray, False),
            declare(self, "reference_topic", "reference", "excitation reference ('' to skip)"):
                (JointTrajectory, False)}
        # rclpy's EventsExecutor cannot call a callback that takes the message info (it
        # fails with "SystemError: null argument to internal routine"): main_for and demo
        # set this false with it, and lost messages are then 'unknown'
        message_info = declare(
            self, "message_info", True, "count lost messages from the DDS publication "
            "sequence numbers (needs the message info, which rclpy's EventsExecutor does not "
            "give: false there, lost messages 'unknown')", read_only=True)
        self.message_info = message_info
        self.newest_source_ns = 0   # [ns] latest publication time of a recorded joint state
        state_qos = declare_qos(self, "state", "reliable", 0, "of the state subscriptions")
        self.window_mode = declare(self, "window", "excitation", "excitation: keep the messages "
                                   "stamped within the excitation run; all: everything "
                                   "received between ~/start and ~/stop",
                                   choices=("excitation", "all"), read_only=True)
        self.problems = {}          # topic -> QoS mismatch text
        self.topics, self.states, self.subs = {}, set(), []
        self.reference_topic = ""   # resolved excitation reference topic ('' = not recorded)
        self.joint_topic = None     # resolved link-side state topic (the first one)
        for topic, (cls, state) in topics.items():
            if topic:
                info = {}
                if message_info:
                    def callback(data, msg_info, i=info):
                        self.on_message(i["name"], data, msg_info)
                else:
                    def callback(data, i=info):
                        self.on_message(i["name"], data)
                events = SubscriptionEventCallbacks(
                    incompatible_qos=lambda e, i=info: self.on_incompatible(i["name"], e))
                sub = self.create_subscription(cls, topic, callback,
                                               state_qos if state else RECORD_QOS, raw=True,
                                               event_callbacks=events)
                info["name"] = sub.topic_name
                self.topics[sub.topic_name] = _TYPES[cls]
                if cls is JointTrajectory:
                    self.reference_topic = sub.topic_name
                if state:
                    self.states.add(sub.topic_name)
                    self.joint_topic = self.joint_topic or sub.topic_name
                self.subs.append(sub)
        self.writer = None
        self.bounds = [None, None]
        self.from_start = False
        self.last_bag = None
        self.counts = {}            # topic -> TopicCount of the current/last recording
        self.create_service(Trigger, "~/start", self.on_start)
        # its own callback group: while its drain waits (a coroutine), the subscriptions and
        # timers of the node's default (mutually exclusive) group must keep running
        self._stop_group = ReentrantCallbackGroup()
        self.create_service(Trigger, "~/stop", self.on_stop_service,
                            callback_group=self._stop_group)
        self.received = {}          # messages received per topic (recording or not)
        self.create_service(Trigger, "~/status", self.on_status)
        self.excitations = {}       # excitation publisher -> its latest status (plain values)
        self.running_seen = set()   # ... that were running during the current recording
        self.diag_sub = self.create_subscription(DiagnosticArray, "/diagnostics",
                                                 self.on_diagnostics, RECORD_QOS)
        self.drain_timeout = declare(
            self, "drain_timeout", 10.0, "[s] at most this long (steady clock) ~/stop waits "
            "for the states published before it was called and up to the end of an "
            "excitation run that ended (a starved recorder is behind the graph: the tail is "
            "still on its way); 0 = only what DDS holds already", low=0.0, high=600.0)
        self.controller_status = declare(
            self, "controller_status", "pd_controller: control loop", "/diagnostics entry of "
            "the controller whose silence stops a real-time recording; '' = none")
        self.monitor = HeartbeatMonitor(declare(
            self, "heartbeat_timeout", 1.0, "[s] while a real-time excitation runs: the "
            "controller's entry or the joint states silent this long stop the recording "
            "(0: never)", low=0.0, high=1e4))
        self.watchdogs = PeerWatchdogs(self, self.monitor,
                                       lambda: self.check_peers(time.monotonic()),
                                       carriers=[self.diag_sub], lock=self.state_lock)
        self.heartbeat, self.aborted = 0, ""
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        steady = RosClock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(declare(self, "diagnostics_period", 0.1, "[s] status (heartbeat) "
                                  "period on /diagnostics", low=0.01, high=60.0),
                          self.publish_status, clock=steady)
        self.autostart = declare(self, "autostart", False, "start recording at launch "
                                 "(activation)")
        self.discovery = declare(
            self, "excitation_discovery", 5.0, "[s] of joint state stamps after ~/start "
            "within which an excitation publisher must be heard of (its /diagnostics status "
            "or a publisher of the reference topic) for the recording to wait for its run "
            "(window: excitation; the messages wait in memory meanwhile); none heard of by "
            "then: written from the ~/start call on", low=0.0, high=3600.0, read_only=True)
        self.start_lifecycle()

    @serialized
    def on_active(self, active):
        if active and self.autostart and self.writer is None:
            self.on_start(None, Trigger.Response())
        elif not active and self.writer is not None:
            self.abort("node deactivated (lifecycle)")

    @serialized
    def on_incompatible(self, topic, event):
        self.problems[topic] = (
            f"{topic}: QoS incompatible with a publisher ({event.last_policy_kind.name}): "
            f"nothing is received from it (a best-effort publisher needs "
            f"state_reliability:=best_effort)")
        self.get_logger().error(self.problems[topic])
        self.publish_status()

    @serialized
    def publish_status(self):
        self.heartbeat += 1
        now = time.monotonic()
        if self.writer is not None and self.monitor.timeout > 0:
            self.check_peers(now)
        recording = self.writer is not None
        problems = list(self.problems.values()) + (
            [self.writer.error] if recording and self.writer.error else []) + (
            [self.aborted] if self.aborted else [])
        level = DiagnosticStatus.ERROR if problems else DiagnosticStatus.OK
        message = "; ".join(problems) or (f"recording {self.writer.path}" if recording
                                          else "idle")
        values = {"state": "recording" if recording else "idle", "heartbeat": self.heartbeat,
                  "bag": str(self.writer.path) if recording else str(self.last_bag or ""),
                  "lifecycle": self.lifecycle,
                  # whether its state subscriptions receive (matched the robot's publisher):
                  # an excitation publisher starts no run before (a run it missed the start of)
                  "states_received": min((self.received.get(t, 0) for t in self.states),
                                         default=0),
                  # what bounds the recording: an excitation publisher starts no run that
                  # this recording would not begin at (excitation_publisher's readiness)
                  "window": self.window_state(),
                  "excitations": ",".join(sorted(self.excitations)),
                  # publishers its subscriptions matched (DDS discovery): an excitation
                  # publisher starts no run before this recorder receives its references
                  # (a run's first references published before the match never arrive)
                  "state_publishers": min((self.matched(t) for t in self.states), default=0),
                  "reference_publishers": (self.matched(self.reference_topic)
                                           if self.reference_topic else "")}
        if recording:
            t = self.totals()
            values.update(missed_samples=t["missed"], lost_messages=t["lost"],
                          backlog=self.writer.backlog())
        self.pub_diag.publish(diagnostic_status(self, "recording", level, message, values))

    def matched(self, topic) -> int:
        """Publishers the subscription of ``topic`` has matched (0 before DDS discovery)."""
        for sub in self.subs:
            if sub.topic_name == topic:
                try:
                    return sub.get_publisher_count()
                except Exception:          # noqa: BLE001 - a destroyed subscription
                    return 0
        return 0

    def window_state(self) -> str:
        """What bounds the current recording's window: ``''`` (not recording), ``all``
        (``window: all``), ``waiting`` (for a run's first reference: nothing written yet),
        ``run`` (a run's first reference) or ``from_start`` (no excitation publisher heard
        of within ``excitation_discovery``: from the ``~/start`` call on)."""
        if self.writer is None:
            return ""
        if self.window_mode != "excitation":
            return "all"
        if self.bounds[0] is None:
            return "waiting"
        return "from_start" if self.from_start else "run"

    _peer_stop = -math.inf              # [s, steady] a lost peer stopped the recording then

    @serialized
    def check_peers(self, now):
        """Recording a real-time excitation run: a silent controller or robot stops it. For
        heartbeat_timeout after such a stop, the peers lost since are added to its ERROR (a
        controller stalled on a killed robot's port can stop the recording just before the
        robot would have been named; as the excitation publisher, docs/ros.md)."""
        later = self.writer is None and 0.0 <= now - self._peer_stop <= self.monitor.timeout
        if self.writer is None and not later:
            return
        if not later and not any(s.get("state") == "running" and s.get("lockstep") == "False"
                                 for s in self.excitations.values()):
            return
        peers = [p for p in (self.joint_topic, self.controller_status) if p]
        lost = self.monitor.newly_lost(now, peers)
        if not lost:
            return
        reason = self.watchdogs.reason(lost)
        if later:
            self.aborted += f"; then {reason}"
            self.get_logger().error(f"after the recording stopped: {reason}")
            self.publish_status()
            return
        self._peer_stop = now
        self.abort(reason)

    @serialized
    def abort(self, reason):
        """Stop the recording at once (the bag closed, judged incomplete) for ``reason``."""
        self.aborted = f"recording stopped: {reason}"
        self.get_logger().error(self.aborted)
        self.on_stop(None, Trigger.Response(), drain=False)
        self.publish_status()

    @serialized
    def on_message(self, topic, data, info=None):
        self.received[topic] = self.received.get(topic, 0) + 1
        if topic == self.joint_topic:
            self.watchdogs.beat(topic)
            if info:
                self.newest_source_ns = max(self.newest_source_ns,
                                            int(info.get("source_timestamp") or 0))
        if self.writer is None:
            return
        now = self.get_clock().now().nanoseconds      # wall clock, or /clock (use_sim_time)
        if self.topics[topic] == _TYPES[Float64MultiArray]:
            answered = command_state_ns(deserialize_message(bytes(data), Float64MultiArray))
            stamp = None if answered is None else answered * 1e-9
        elif len(data) >= 12:   # CDR: 4-byte encapsulation, then header.stamp
            sec, nsec = struct.unpack_from("<iI" if data[1] == 1 else ">iI", data, 4)
            stamp = sec + 1e-9 * nsec
        else:
            stamp = None
        if self.first_state_stamp is None and topic in self.states and stamp is not None:
            self.first_state_stamp = stamp
            self.stamps_on_clock = abs(now * 1e-9 - stamp) < 10.0
        if (self.window_mode == "excitation" and self.bounds[0] is None
                and topic in self.states and stamp is not None
                and stamp - self.first_state_stamp >= self.discovery and not (
                    self.excitations or (self.reference_topic and
                                         self.count_publishers(self.reference_topic)))):
            # no excitation publisher in this graph (none heard of in excitation_discovery
            # s of states): no run to wait for; from ~/start on. An excitation publisher
            # heard of later refuses its ~/start (this window's state on /diagnostics):
            # its run would not bound this bag
            self.bounds[0] = (self.recording_started_ns * 1e-9 if self.stamps_on_clock
                              else -math.inf)
            self.from_start = True
            self.writer.bound(lower=self.bounds[0], no_end=True)
            self.get_logger().warning(
                f"no excitation publisher heard of within {self.discovery:g} s of joint "
                f"states (excitation_discovery): recording from ~/start on")
            self.publish_status()
        if self.window_mode == "excitation":
            self.writer.write(topic, data, now, stamp, topic in self.states, info,
                              reference=topic == self.reference_topic
                              and not _rest_point(data))
        else:
            self.writer.write(topic, data, now)
            self.record(topic, data, now, stamp, info)

    def record(self, topic, data, now, stamp, info=None):
        """Count one written message (the writer thread calls it in window mode)."""
        stamp = stamp if topic in self.states else None
        info = info or {}
        gid = info.get("publisher_gid")
        self.counts[topic].add(info.get("publication_sequence_number"),
                               None if gid is None else bytes(gid.get("data", b"")), stamp,
                               now * 1e-9)

    @serialized
    def on_diagnostics(self, msg):
        for st in msg.status:
            if st.name == self.controller_status:
                self.watchdogs.beat(st.name, stamp=to_sec(msg.header.stamp))
            if st.name.endswith(": excitation"):
                status = excitation_status(st)
                self.excitations[st.name] = status
                if self.writer is not None and status.get("state") == "running":
                    self.running_seen.add(st.name)
                if self.writer is not None:
                    self.bound_window(status)
        self.watchdogs.heard(msg)

    def bound_window(self, status):
        """Open the recording's window at the first reference of a run on the robot's clock
        that runs during the recording (or started after it began), close it at the run's
        last reference (the writer thread applies them, :class:`WindowedBagWriter`)."""
        start, played, state = (status.get(k) for k in ("start_stamp_s", "played_s", "state"))
        if (self.window_mode != "excitation" or self.writer is None
                or status.get("clock") != "robot" or start is None):
            return
        tol = 0.5 / self.rate
        if self.bounds[0] is None and (state == "running" or (
                state in ("finished", "stopped") and self.first_state_stamp is not None
                and start >= self.first_state_stamp - tol)):
            self.bounds[0] = start
            self.writer.bound(lower=start)
            self.get_logger().info(
                f"the run of '{status.get('name')}' starts at {start:.6f} s: recording from "
                f"its first reference (publishers matched: joint states "
                f"{min((self.matched(t) for t in self.states), default=0)}, reference "
                f"{self.matched(self.reference_topic) if self.reference_topic else '-'})")
        if (self.bounds[0] is not None and self.bounds[1] is None and played is not None
                and state in ("finished", "stopped") and abs(start - self.bounds[0]) < 1e-6):
            self.bounds[1] = start + played
            self.writer.bound(upper=start + played)

    def take_pending(self) -> int:
        """Take and record the messages DDS already holds for the recorder's subscriptions
        (and ``/diagnostics``) now, from a callback (``~/stop``). Returns how many."""
        n = 0
        for sub in (*self.subs, self.diag_sub):
            while True:
                try:
                    with sub.handle:
                        taken = sub.handle.take_message(sub.msg_type, sub.raw)
                except Exception:          # noqa: BLE001 - a destroyed subscription
                    break
                if taken is None:
                    break
                n += 1
                if sub is self.diag_sub:
                    self.on_diagnostics(taken[0])
                elif self.message_info:
                    sub.callback(taken[0], taken[1])
                else:
                    sub.callback(taken[0])
        return n

    def pending_end(self):
        """[s] joint state stamp an ended excitation run (``finished`` or ``stopped``, on the
        robot's clock, overlapping this recording) reached and the recording has not yet, or
        ``None``."""
        joint = self.counts.get(self.joint_topic)
        if joint is None or joint.last_stamp is None:
            return None
        tol = 0.5 / self.rate
        for status in self.excitations.values():
            start, played = status.get("start_stamp_s"), status.get("played_s")
            if (status.get("clock") != "robot" or start is None or played is None
                    or status.get("state") not in ("finished", "stopped")):
                continue
            end = start + played
            if end >= joint.first_stamp - tol and joint.last_stamp < end - tol:
                return end
        return None

    #: [s] steady time without any message after which the publishers count as silent
    #: (longer than DDS takes to re-send what a starved reader missed: Fast DDS's reliable
    #: heartbeat period is 3 s)
    QUIET = 5.0

    def drain(self, called_ns):
        """Before the bag closes, record what was published before ``~/stop`` was called
        (``called_ns``, wall clock [ns]) - a starved recorder is behind the graph, the tail
        still on its way. Takes what DDS holds until a joint state published after the call
        arrived (its DDS source timestamp; the lockstep robot's keep-alive comes within
        0.6 s of an idle graph) and an excitation run that ended is recorded up to its end
        (:meth:`pending_end`) and no excitation status is older than the call
        (:meth:`stale_excitations`), or the publishers were silent for :attr:`QUIET` s, at most
        ``drain_timeout`` s (steady clock). Without message info (EventsExecutor) only the
        run's end is awaited. This blocks the caller's executor: from a node's executor use
        :meth:`stop_async` (the ``~/stop`` service does), which lets the other callbacks - of
        this node and of nodes sharing the executor - run while it waits."""
        for _ in self._drain_steps(called_ns, self.take_pending):
            time.sleep(0.005)

    async def stop_async(self):
        """``~/stop`` as a coroutine for the executor (:meth:`drain` without blocking it: the
        messages and statuses it waits for are delivered by the executor meanwhile); returns
        the Trigger response."""
        for _ in self._drain_steps(time.time_ns(), lambda: 0):
            await self._pause(0.005)
        return self.on_stop(None, Trigger.Response(), drain=False)

    async def on_stop_service(self, request, response):
        if self.writer is None:
            return self.on_stop(request, response, drain=False)
        return await self.stop_async()

    async def _pause(self, seconds):
        done = Future()
        timer = self.create_timer(seconds, lambda: None if done.done() else done.set_result(1),
                                  clock=RosClock(clock_type=ClockType.STEADY_TIME),
                                  callback_group=self._stop_group)
        try:
            await done
        finally:
            self.destroy_timer(timer)

    def _drain_steps(self, called_ns, take):
        """The drain's wait (:meth:`drain`), one step per iteration (a generator)."""
        begin = heard = time.monotonic()
        received = sum(self.received.values())
        while self.context.ok() and self.writer is not None:   # (shutting down: no more)
            now_received = sum(self.received.values())
            if take() or now_received != received:
                heard, received = time.monotonic(), now_received
            caught_up = not self.message_info or self.newest_source_ns >= called_ns
            end = self.pending_end()
            stale = self.stale_excitations(called_ns)
            now = time.monotonic()
            if not stale and ((caught_up and end is None)
                              or (end is None and now - heard > self.QUIET)):
                return
            if now - begin > self.drain_timeout:
                joint = self.counts[self.joint_topic].last_stamp if self.joint_topic in \
                    self.counts else None
                self.get_logger().warning(
                    f"stopping after waiting {self.drain_timeout:g} s for the states "
                    f"published before ~/stop (recorded up to {joint} s"
                    + (f", the excitation run ended at {end:.6f} s" if end else "")
                    + (f"; the latest status of {stale} is older than ~/stop: the recording "
                       f"is judged on it" if stale else "") + ")")
                return
            yield

    def stale_excitations(self, called_ns):
        """Excitation publishers whose latest ``/diagnostics`` status was published (its
        ``published_ns``, wall clock [ns]) before ``called_ns``: a reliable reader that missed
        messages (a starved recorder) gets the later ones only once the gap is repaired
        (Fast DDS: at its next heartbeat, up to 3 s), so a run's start or stop may still be
        on its way. The publisher re-sends its status every second. Statuses without the
        stamp (older publishers) are taken as they are."""
        out = []
        for name, status in sorted(self.excitations.items()):
            try:
                published = int(status.get("published_ns") or 0)
            except (TypeError, ValueError):
                published = 0
            if 0 < published < called_ns:
                out.append(name)
        return out

    def excitation_summary(self) -> dict:
        """Excitation publisher -> :func:`excitation_coverage` of its latest run against the
        recorded joint state stamps (runs that do not overlap the recording left out)."""
        joint = self.counts.get(self.joint_topic)
        first, last = (joint.first_stamp, joint.last_stamp) if joint else (None, None)
        out = {}
        for name, status in sorted(self.excitations.items()):
            if status.get("clock") != "robot" and name not in self.running_seen:
                continue                # node clock: only runs seen running while recording
            cover = excitation_coverage(status, first, last, self.rate)
            if cover is not None:
                out[name] = cover
        return out

    def totals(self) -> dict:
        """Sums over the topics: ``missed`` (state samples missing from the stamps),
        ``out_of_order`` (sequence numbers and state stamps) and ``lost`` (``'unknown'`` when
        the middleware reported no sequence numbers for a topic)."""
        c = self.counts.values()
        return {"missed": sum(x.missing for x in c),
                "out_of_order": sum(x.out_of_order + x.repeated_stamps for x in c),
                "lost": (sum(x.lost for x in c) if all(x.sequenced for x in c)
                         else "unknown")}

    def counts_text(self) -> str:
        t = self.totals()
        per_topic = "; ".join(f"{name}: {c.text()}" for name, c in self.counts.items())
        return (f"missed samples: {t['missed']}, out of order/duplicate: {t['out_of_order']}, "
                f"lost messages: {t['lost']}; {per_topic}")

    @serialized
    def on_start(self, request, response):
        if self.writer is not None:
            response.success, response.message = False, f"already recording {self.writer.path}"
            return response
        if self.lifecycle != "active":
            response.success = False
            response.message = f"not recording: node {self.lifecycle} (lifecycle: activate it)"
            return response
        name = f"{self.prefix}_{time.strftime('%Y%m%d_%H%M%S')}"
        path, k = self.data_directory / name, 1
        while path.exists():          # never overwrite recorded data
            path, k = self.data_directory / f"{name}_{k}", k + 1
        try:
            bag = BagWriter(path, self.topics, self.flush_period)
            self.writer = (WindowedBagWriter(bag, StampWindow(0.5 / self.rate, HOLDBACK),
                                             self.record, self.get_logger().error)
                           if self.window_mode == "excitation"
                           else QueuedBagWriter(bag, self.get_logger().error))
        except DataError as exc:
            response.success, response.message = False, str(exc)
            return response
        self.counts = {t: TopicCount(self.rate if t in self.states else None)
                       for t in self.topics}
        self.recording_started_ns = self.get_clock().now().nanoseconds
        self.first_state_stamp, self.stamps_on_clock, self.aborted = None, None, ""
        self.bounds = [None, None]      # the window's [lower, upper] sent to the writer
        self.from_start = False         # ... its lower bound the ~/start call (no run)
        for excitation in self.excitations.values():    # a run already going: its window
            self.bound_window(excitation)
        self.running_seen = {n for n, s in self.excitations.items()
                             if s.get("state") == "running"}
        self.get_logger().info(f"recording {sorted(self.topics)} to {path}")
        self.publish_status()           # 'recording' goes out before the answer
        response.success, response.message = True, str(path.resolve())
        return response

    @serialized
    def on_stop(self, request, response, drain=True):
        if self.writer is None:
            response.success, response.message = False, "not recording"
            return response
        if drain:                       # (not while the process ends: close at once)
            self.drain(time.time_ns())
        writer, self.writer = self.writer, None
        judged = {}

        def metadata():         # once the writer thread has counted every message
            window = getattr(writer, "window", None)
            if window is not None and window.bounded_by in ("run", "references"):
                # the run's periods the recorder never received count as missing
                for t in self.states:
                    self.counts[t].cover(window.lower, window.upper)
            judged["window"] = window
            judged["excitation"] = excitation = self.excitation_summary()
            writer.writer.set_metadata({"recording": {t: c.summary()
                                                      for t, c in self.counts.items()},
                                        "excitation": excitation})
        try:
            if isinstance(writer, WindowedBagWriter):
                # no run bounded the window: from the ~/start call on (stamps on this clock)
                writer.close(self.recording_started_ns * 1e-9 if self.stamps_on_clock
                             else -math.inf, metadata)
            else:
                writer.close(metadata)
        except DataError as exc:
            response.success, response.message = False, f"{exc}; {self.counts_text()}"
            self.get_logger().error(f"stopped recording: {response.message}")
            return response
        incomplete = "; ".join(f"{n}: {c['why']}" for n, c in judged["excitation"].items()
                               if not c["complete"])
        window = judged.get("window")
        if window is not None and window.bounded_by == "references":
            self.get_logger().warning(
                f"no status of the excitation run reached the recorder: the bag is bounded "
                f"by the run's references, {window.lower:.6f} to {window.upper:.6f} s")
        joint = self.counts.get(self.joint_topic)
        if joint is not None and (joint.missing_before or joint.missing_after):
            gap = (f"the recorder never received the run's first {joint.missing_before} and "
                   f"last {joint.missing_after} joint state(s) (its subscription matched the "
                   f"publisher late, or they were lost before the first one it got)")
            incomplete = f"{incomplete}; {gap}" if incomplete else gap
        self.last_bag = writer.path
        counts = ", ".join(f"{t}: {n}" for t, n in writer.counts.items())
        msg = f"{writer.path.resolve()} ({counts}; {self.counts_text()})"
        if incomplete:
            msg += f"; INCOMPLETE recording: {incomplete}"
            self.get_logger().warning(f"stopped recording, incomplete: {msg}")
        elif self.totals()["lost"] not in (0, "unknown"):
            self.get_logger().warning(f"stopped recording, messages lost: {msg}")
        else:
            self.get_logger().info(f"stopped recording: {msg}")
        response.success, response.message = True, msg
        return response

    @serialized
    def on_status(self, request, response):
        """Whether the recorder is recording, the messages received per topic so far (a
        topic at 0 is not connected yet) and, while recording, the counts."""
        counts = ", ".join(f"{t}: {self.received.get(t, 0)}" for t in self.topics)
        state = f"recording {self.writer.path}" if self.writer is not None else "idle"
        response.success = all(self.received.get(t, 0) > 0 for t in self.topics)
        response.message = f"{state}; received {counts}"
        if self.writer is not None:
            response.message += (f"; {self.counts_text()}; waiting to be written: "
                                 f"{self.writer.backlog()}")
            if self.writer.error is not None:
                response.success = False
                response.message += f"; {self.writer.error}"
        return response

    @serialized
    def shutdown(self):
        if self.writer is not None:
            self.on_stop(None, Trigger.Response(), drain=False)


def main(args=None):
    main_for(Recorder, args)


if __name__ == "__main__":
    main()
