"""Does the recorder lose published messages? Bursts and disk stalls (docs/ros.md).

The recorder runs as its own process (its node's ``main``, as ``ros2 run`` starts it); a
publisher in this process sends ``sensor_msgs/JointState`` numbered by their stamps (k ms) to
``/joint_states``:

- ``burst``: N messages as fast as possible, publisher reliable with keep-last depth D or
  KEEP_ALL;
- ``stall``: a 1 kHz stream (reliable, depth 1000, as the nodes publish) for T s while the
  recorder's disk writer blocks once for S s (``BagWriter.write`` patched in the recorder
  process: a disk stall).

Printed per case: published, in the bag (rosbags count), and the recorder's own counts (``lost
messages`` from the DDS publication sequence numbers, ``missed samples`` from the stamps).

    PYTHONPATH=$PWD python benchmarks/recorder_losses.py [--domain-id 60]
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: the recorder's main with its disk writer blocking once, at the 1000th message, for STALL s
STALLED_RECORDER = """
import os, sys, time
from robot_identification.data import _bag
from robot_identification.nodes import recorder
write, n = _bag.BagWriter.write, [0]
def slow(self, *a):
    n[0] += 1
    if n[0] == 1000:
        time.sleep(float(os.environ.get("STALL", "0")))
    return write(self, *a)
_bag.BagWriter.write = slow
recorder.main()
"""


def run_case(domain, burst=0, depth="1000", stream=0.0, stall=0.0):
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
    from rosbags.rosbag2 import Reader
    from sensor_msgs.msg import JointState
    from std_srvs.srv import Trigger
    data = Path(tempfile.mkdtemp(prefix="recorder_losses_"))
    env = dict(os.environ, PYTHONPATH=str(ROOT), ROS_DOMAIN_ID=str(domain),
               ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", STALL=str(stall),
               ROS_LOG_DIR=str(data / "log"))
    rec = subprocess.Popen([sys.executable, "-c", STALLED_RECORDER, "--ros-args",
                            "-p", f"data_directory:={data}", "-p", "motor_states_topic:=''",
                            "-p", "command_topic:=''", "-p", "reference_topic:=''"],
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=domain)
    node = rclpy.create_node("recorder_losses", context=ctx)
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(node)
    qos = (QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
           if depth == "all" else
           QoSProfile(depth=int(depth), reliability=ReliabilityPolicy.RELIABLE))
    pub = node.create_publisher(JointState, "/joint_states", qos)

    def call(name):
        cli = node.create_client(Trigger, name)
        assert cli.wait_for_service(timeout_sec=30.0), name
        future = cli.call_async(Trigger.Request())
        ex.spin_until_future_complete(future, timeout_sec=60.0)
        return future.result().message

    count = [0]

    def publish():
        k = count[0]
        m = JointState(name=["j1"], position=[float(k)], velocity=[0.0], effort=[0.0])
        m.header.stamp.sec, m.header.stamp.nanosec = k // 1000, (k % 1000) * 1000000
        pub.publish(m)
        count[0] += 1

    try:
        while pub.get_subscription_count() == 0:
            ex.spin_once(timeout_sec=0.05)
        call("/recorder/start")
        t0 = time.monotonic()
        if burst:
            for _ in range(burst):
                publish()
        else:
            timer = node.create_timer(0.001, publish)
            while time.monotonic() - t0 < stream:
                ex.spin_once(timeout_sec=0.01)
            node.destroy_timer(timer)
        took = time.monotonic() - t0
        # wait until the recorder has received all, or nothing more arrives for 2 s
        last, since = -1, time.monotonic()
        while time.monotonic() - since < 2.0:
            got = int(re.search(r"received /joint_states: (\d+)", call("/recorder/status"))[1])
            if got >= count[0]:
                break
            if got != last:
                last, since = got, time.monotonic()
            ex.spin_once(timeout_sec=0.2)
        stopped = call("/recorder/stop")
    finally:
        rec.send_signal(signal.SIGINT)
        rec.wait(timeout=60)
        node.destroy_node()
        rclpy.shutdown(context=ctx)
    with Reader(next(data.glob("run_*"))) as reader:
        in_bag = sum(c.msgcount for c in reader.connections)
    lost, missed = (re.search(rf"{what}: (\d+)", stopped) for what in ("lost messages",
                                                                       "missed samples"))
    lost, missed = (m[1] if m else "not counted" for m in (lost, missed))
    case = (f"burst of {burst}, publisher depth {depth}" if burst else
            f"{stream:g} s at 1 kHz, publisher depth {depth}, disk stalled {stall:g} s once")
    print(f"{case}: published {count[0]} in {took:.2f} s, in the bag {in_bag}; recorder: "
          f"lost messages {lost}, missed samples {missed}", flush=True)


CASES = [dict(burst=5000, depth="1000"), dict(burst=20000, depth="all"),
         dict(burst=20000, depth="1000"), dict(stream=6.0, stall=3.0),
         dict(stream=13.0, stall=10.0)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--domain-id", type=int, default=60)
    p.add_argument("--case", type=int, help="run only CASES[i] (in this process)")
    a = p.parse_args()
    if a.case is not None:
        run_case(a.domain_id, **CASES[a.case])
        return
    for i in range(len(CASES)):       # one process per case: a fresh DDS participant
        subprocess.run([sys.executable, __file__, "--domain-id", str(a.domain_id),
                        "--case", str(i)], check=True)


if __name__ == "__main__":
    main()
