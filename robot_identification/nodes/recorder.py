"""recorder: records link/motor states, commands and references of a run into a rosbag2 (MCAP).

Raw subscriptions (exact CDR bytes) -> :class:`robot_identification.data._bag.BagWriter`, which
flushes every ``flush_period`` s. Header stamps of the state topics are checked for gaps
(missed samples at ``expected_rate_hz``) and out-of-order/duplicate messages.
"""
from __future__ import annotations

import struct
import time
from pathlib import Path

from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from robot_identification.data._bag import BagWriter
from robot_identification.errors import DataError
from robot_identification.nodes._common import QOS, declare, main_for

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
                            "state rate for gap counting [Hz]", low=1.0, high=100000.0)
        topics = {
            declare(self, "joint_states_topic", "joint_states", "link-side states"): JointState,
            declare(self, "motor_states_topic", "motor_states",
                    "motor-side states ('' for rigid arms)"): JointState,
            declare(self, "command_topic", "effort_controller/commands", "torque commands"):
                Float64MultiArray,
            declare(self, "reference_topic", "reference", "excitation reference ('' to skip)"):
                JointTrajectory}
        self.topics, self.subs = {}, []
        for topic, cls in topics.items():
            if topic:
                info = {"stamped": cls is not Float64MultiArray}
                sub = self.create_subscription(cls, topic, lambda data, i=info: self.on_message(
                    i["name"], i["stamped"], data), QOS, raw=True)
                info["name"] = sub.topic_name
                self.topics[sub.topic_name] = _TYPES[cls]
                self.subs.append(sub)
        self.writer = None
        self.last_bag = None
        self.create_service(Trigger, "~/start", self.on_start)
        self.create_service(Trigger, "~/stop", self.on_stop)
        self.received = {}          # messages received per topic (recording or not)
        self.create_service(Trigger, "~/status", self.on_status)
        if declare(self, "autostart", False, "start recording at launch"):
            self.on_start(None, Trigger.Response())

    def on_message(self, topic, stamped, data):
        self.received[topic] = self.received.get(topic, 0) + 1
        if self.writer is None:
            return
        self.writer.write(topic, data, self.get_clock().now().nanoseconds)
        if stamped and len(data) >= 12:  # CDR: 4-byte encapsulation, then header.stamp
            sec, nsec = struct.unpack_from("<iI" if data[1] == 1 else ">iI", data, 4)
            self._check_stamp(topic, sec + 1e-9 * nsec)

    def _check_stamp(self, topic, t):
        last = self.last_stamp.get(topic)
        self.last_stamp[topic] = t if last is None else max(t, last)
        if last is None:
            return
        if t <= last:
            self.stats["out_of_order"] += 1
        elif t - last > 1.5 / self.rate:
            self.stats["missed"] += round((t - last) * self.rate) - 1

    def on_start(self, request, response):
        if self.writer is not None:
            response.success, response.message = False, f"already recording {self.writer.path}"
            return response
        name = f"{self.prefix}_{time.strftime('%Y%m%d_%H%M%S')}"
        path, k = self.data_directory / name, 1
        while path.exists():          # never overwrite recorded data
            path, k = self.data_directory / f"{name}_{k}", k + 1
        try:
            self.writer = BagWriter(path, self.topics, self.flush_period)
        except DataError as exc:
            response.success, response.message = False, str(exc)
            return response
        self.last_stamp, self.stats = {}, {"missed": 0, "out_of_order": 0}
        self.get_logger().info(f"recording {sorted(self.topics)} to {path}")
        response.success, response.message = True, str(path.resolve())
        return response

    def on_stop(self, request, response):
        if self.writer is None:
            response.success, response.message = False, "not recording"
            return response
        writer, self.writer = self.writer, None
        writer.close()
        self.last_bag = writer.path
        counts = ", ".join(f"{t}: {n}" for t, n in writer.counts.items())
        msg = (f"{writer.path.resolve()} ({counts}; missed samples: {self.stats['missed']}, "
               f"out of order/duplicate: {self.stats['out_of_order']})")
        self.get_logger().info(f"stopped recording: {msg}")
        response.success, response.message = True, msg
        return response

    def on_status(self, request, response):
        """Whether the recorder is recording, and the messages received per topic so far
        (a topic at 0 is not connected yet)."""
        counts = ", ".join(f"{t}: {self.received.get(t, 0)}" for t in self.topics)
        state = f"recording {self.writer.path}" if self.writer is not None else "idle"
        response.success = all(self.received.get(t, 0) > 0 for t in self.topics)
        response.message = f"{state}; received {counts}"
        return response

    def shutdown(self):
        if self.writer is not None:
            self.on_stop(None, Trigger.Response())


def main(args=None):
    main_for(Recorder, args)


if __name__ == "__main__":
    main()
