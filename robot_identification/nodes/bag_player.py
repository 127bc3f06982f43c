"""bag_player: replays a rosbag2 into the ROS graph at its recorded timing (``ros2 bag play``
for machines without the rosbag2 tools), with ``/clock`` from the recording (``clock_rate``
messages per recorded second, as ``ros2 bag play --clock``).

Messages are read with ``rosbags`` and published as the recorded CDR bytes (no conversion) on
their recorded topics, in log-time order, ``rate`` times faster than recorded; ``/clock``
(rosgraph_msgs/Clock) carries the recorded log time, so nodes with ``use_sim_time`` see the
recording's time. Playback starts when every topic has ``wait_for_subscribers`` subscribers
(0: at once) or on ``~/start`` (std_srvs/Trigger) when ``autostart`` is false; ``finished``
(attribute) and a log line mark the end, and the process ends there (``exit_at_end``, as
``ros2 bag play``).

In-process users (tests, the demo) may set :attr:`BagPlayer.paced_by` to a callable: messages
are published only while it returns True (e.g. while the subscribers in the same process have
caught up), so an overloaded machine stretches the wall-clock timing instead of losing
messages in full subscriber queues; the recorded timing in ``/clock`` and the stamps is kept.
"""
from __future__ import annotations

import importlib
from pathlib import Path

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.clock import Clock, ClockType
from rclpy.duration import Duration
from rclpy.node import Node
from rosgraph_msgs.msg import Clock as ClockMsg
from std_srvs.srv import Trigger

from robot_identification.errors import DataError
from robot_identification.nodes._common import QOS, declare, diagnostic_status, main_for


def message_class(type_name):
    """``pkg/msg/Type`` -> the rclpy message class.

    Raises
    ------
    DataError
        The package is not installed.
    """
    pkg, kind, name = type_name.split("/")
    try:
        return getattr(importlib.import_module(f"{pkg}.{kind}"), name)
    except (ImportError, AttributeError):
        raise DataError(f"message type {type_name} is not installed") from None


class BagPlayer(Node):
    def __init__(self, **kwargs):
        super().__init__("bag_player", **kwargs)
        from rosbags.rosbag2 import Reader  # rosbags: 45 ms, bags only
        given = declare(self, "bag", "", "rosbag2 directory or .mcap to play (required; '' = "
                        "not given: refused)", read_only=True)
        bag = Path(given)
        self.rate = declare(self, "rate", 1.0, "playback speed relative to the recording",
                            low=0.01, high=1000.0, read_only=True)
        self.clock_rate = declare(self, "clock_rate", 100.0,
                                  "/clock messages per second of recorded time (0: none)",
                                  low=0.0, high=100000.0)
        self.min_subscribers = declare(
            self, "wait_for_subscribers", 0, "start when every topic has this many subscribers",
            low=0, high=1000)
        topics = declare(self, "topics", [""], "topics to play ([''] = all)")
        if not given:         # Path('') is '.', which exists: say what is missing instead
            raise DataError("bag_player: parameter 'bag' is not given (a rosbag2 directory or "
                            ".mcap file)")
        if not bag.exists():
            raise DataError(f"bag_player: bag '{bag}' does not exist")
        try:
            self.reader = Reader(bag)
            self.reader.open()
        except Exception as exc:  # noqa: BLE001 - any unreadable bag: one line
            raise DataError(f"bag_player: cannot read '{bag}': {exc}") from None
        wanted = [t for t in topics if t]
        self.connections = [c for c in self.reader.connections
                            if not wanted or c.topic in wanted]
        self.pubs = {c.topic: self.create_publisher(message_class(c.msgtype), c.topic, QOS)
                     for c in self.connections}
        self.clock_pub = self.create_publisher(ClockMsg, "/clock", 10)
        self.messages = self.reader.messages(connections=self.connections)
        self.pending = None
        self.clock_ns = None
        self.t0 = None
        self.start = None
        self.finished = False
        self.published = 0
        self.paced_by = None
        self.steady = Clock(clock_type=ClockType.STEADY_TIME)
        self.create_service(Trigger, "~/start", self.on_start)
        self.autostart = declare(self, "autostart", True, "play once subscribers are there")
        self.exit_at_end = declare(self, "exit_at_end", True, "the process ends after the "
                                   "last message (as ros2 bag play)")
        self.exit_requested = False
        self.timer = self.create_timer(0.001, self.on_tick, clock=self.steady)
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.heartbeat = 0
        self.create_timer(1.0, self.publish_status, clock=self.steady)
        self.get_logger().info(f"playing {bag} ({self.reader.message_count} messages, "
                               f"{self.reader.duration * 1e-9:.2f} s) at {self.rate:g}x")

    def on_start(self, request, response):
        response.success = self.start is None
        response.message = "started" if response.success else "already started"
        if self.start is None:
            self.start = self.steady.now().nanoseconds
        return response

    def on_tick(self):
        if self.finished:
            return
        if self.start is None:
            if self.autostart and all(p.get_subscription_count() >= self.min_subscribers
                                      for p in self.pubs.values()):
                self.start = self.steady.now().nanoseconds
            return
        horizon = (self.steady.now().nanoseconds - self.start) * self.rate
        while True:
            if self.pending is None:
                self.pending = next(self.messages, None)
                if self.pending is None:
                    self._finish()
                    break
            conn, t_ns, raw = self.pending
            if self.t0 is None:
                self.t0 = t_ns
            if t_ns - self.t0 > horizon or (self.paced_by is not None and not self.paced_by()):
                break
            if self.clock_rate and (self.clock_ns is None
                                    or t_ns - self.clock_ns >= 1e9 / self.clock_rate):
                self.clock_ns = t_ns
                self.clock_pub.publish(ClockMsg(clock=_time(t_ns)))
            self.pubs[conn.topic].publish(bytes(raw))
            self.published += 1
            self.pending = None

    def publish_status(self):
        """Status and heartbeat on /diagnostics every second (steady clock)."""
        self.heartbeat += 1
        state = ("finished" if self.finished else "waiting" if self.start is None
                 else "playing")
        self.pub_diag.publish(diagnostic_status(
            self, "playback", DiagnosticStatus.OK, state,
            {"heartbeat": self.heartbeat, "published": self.published, "state": state}))

    def _finish(self):
        self.finished = True
        self.get_logger().info(f"finished: {self.published} messages published")
        if self.exit_at_end:            # main_for ends the process: once all is delivered
            for pub in self.pubs.values():
                pub.wait_for_all_acked(Duration(seconds=10.0))
            self.exit_requested = True

    def shutdown(self):
        self.reader.close()


def _time(t_ns):
    return Time(sec=t_ns // 1_000_000_000, nanosec=t_ns % 1_000_000_000)


def main(args=None):
    main_for(BagPlayer, args)


if __name__ == "__main__":
    main()
