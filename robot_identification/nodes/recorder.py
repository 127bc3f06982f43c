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
"""
from __future__ import annotations

import struct
import time
from pathlib import Path

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from robot_identification.data._bag import BagWriter
from robot_identification.errors import DataError
from robot_identification.nodes._common import declare, main_for
from robot_identification.nodes._recording import (RECORD_QOS, QueuedBagWriter, TopicCount,
                                                   excitation_coverage, excitation_status)

__all__ = ["Recorder", "TopicCount", "QueuedBagWriter", "RECORD_QOS", "main"]

_TYPES = {JointState: "sensor_msgs/msg/JointState",
          Float64MultiArray: "std_msgs/msg/Float64MultiArray",
          JointTrajectory: "trajectory_msgs/msg/JointTrajectory"}


class Recorder(Node):
    def __init__(self, **kwargs):
        super().__init__("recorder", **kwargs)
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
        self.topics, self.states, self.subs = {}, set(), []
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
                sub = self.create_subscription(cls, topic, callback, RECORD_QOS, raw=True)
                info["name"] = sub.topic_name
                self.topics[sub.topic_name] = _TYPES[cls]
                if state:
                    self.states.add(sub.topic_name)
                    self.joint_topic = self.joint_topic or sub.topic_name
                self.subs.append(sub)
        self.writer = None
        self.last_bag = None
        self.counts = {}            # topic -> TopicCount of the current/last recording
        self.create_service(Trigger, "~/start", self.on_start)
        self.create_service(Trigger, "~/stop", self.on_stop)
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
        if declare(self, "autostart", False, "start recording at launch"):
            self.on_start(None, Trigger.Response())

    def on_message(self, topic, data, info=None):
        self.received[topic] = self.received.get(topic, 0) + 1
        if self.writer is None:
            return
        now = self.get_clock().now().nanoseconds      # wall clock, or /clock (use_sim_time)
        self.writer.write(topic, data, now)
        stamp = None
        if topic in self.states and len(data) >= 12:  # CDR: 4-byte encapsulation, header.stamp
            sec, nsec = struct.unpack_from("<iI" if data[1] == 1 else ">iI", data, 4)
            stamp = sec + 1e-9 * nsec
        info = info or {}
        if topic == self.joint_topic:
            self.newest_source_ns = max(self.newest_source_ns,
                                        int(info.get("source_timestamp") or 0))
        gid = info.get("publisher_gid")
        self.counts[topic].add(info.get("publication_sequence_number"),
                               None if gid is None else bytes(gid.get("data", b"")), stamp,
                               now * 1e-9)

    def on_diagnostics(self, msg):
        for st in msg.status:
            if st.name.endswith(": excitation"):
                status = excitation_status(st)
                self.excitations[st.name] = status
                if self.writer is not None and status.get("state") == "running":
                    self.running_seen.add(st.name)

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
        run's end is awaited."""
        begin = heard = time.monotonic()
        while self.context.ok():                # (shutting down: nothing more comes)
            if self.take_pending():
                heard = time.monotonic()
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
            time.sleep(0.005)

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

    def on_start(self, request, response):
        if self.writer is not None:
            response.success, response.message = False, f"already recording {self.writer.path}"
            return response
        name = f"{self.prefix}_{time.strftime('%Y%m%d_%H%M%S')}"
        path, k = self.data_directory / name, 1
        while path.exists():          # never overwrite recorded data
            path, k = self.data_directory / f"{name}_{k}", k + 1
        try:
            self.writer = QueuedBagWriter(BagWriter(path, self.topics, self.flush_period),
                                          self.get_logger().error)
        except DataError as exc:
            response.success, response.message = False, str(exc)
            return response
        self.counts = {t: TopicCount(self.rate if t in self.states else None)
                       for t in self.topics}
        self.running_seen = {n for n, s in self.excitations.items()
                             if s.get("state") == "running"}
        self.get_logger().info(f"recording {sorted(self.topics)} to {path}")
        response.success, response.message = True, str(path.resolve())
        return response

    def on_stop(self, request, response, drain=True):
        if self.writer is None:
            response.success, response.message = False, "not recording"
            return response
        if drain:                       # (not while the process ends: close at once)
            self.drain(time.time_ns())
        writer, self.writer = self.writer, None
        excitation = self.excitation_summary()
        incomplete = "; ".join(f"{n}: {c['why']}" for n, c in excitation.items()
                               if not c["complete"])
        writer.writer.set_metadata({"recording": {t: c.summary()
                                                  for t, c in self.counts.items()},
                                    "excitation": excitation})
        try:
            writer.close()
        except DataError as exc:
            response.success, response.message = False, f"{exc}; {self.counts_text()}"
            self.get_logger().error(f"stopped recording: {response.message}")
            return response
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

    def shutdown(self):
        if self.writer is not None:
            self.on_stop(None, Trigger.Response(), drain=False)


def main(args=None):
    main_for(Recorder, args)


if __name__ == "__main__":
    main()
