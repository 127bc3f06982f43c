"""Control-loop rate and lost messages of the ROS node graph (zollo_planar).

1. lockstep, all nodes in one process: the `demo` command (EventsExecutor and
   SingleThreadedExecutor) -> periods per wall second, demo wall time;
2. real time, separate processes over DDS: simulated_robot (1 kHz wall timer) + pd_controller +
   excitation_publisher + recorder for DURATION s -> achieved state rate, commands per state,
   missed samples (gaps in the recorded stamps).

    PYTHONPATH=$PWD python benchmarks/control_loop_rate.py [--skip-lockstep] [--duration 5]
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

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def lockstep(executor, domain):
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "robot_identification.cli", "demo",
                              "--output", tmp, "--executor", executor, "--domain-id", str(domain)],
                             env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True,
                             text=True, check=True).stdout
        wall = time.perf_counter() - t0
    loop = re.search(r"control loop: .*", out).group(0)
    nme = re.search(r"normalised mean error \(without Coulomb friction\): (\S+)", out).group(1)
    print(f"lockstep, one process, {executor:6s}: {loop}; demo wall {wall:.1f} s; NME {nme}")


def real_time(duration, domain, executor):
    from robot_identification.data._bag import read_bag
    tmp = Path(tempfile.mkdtemp())
    env = dict(os.environ, PYTHONPATH=str(ROOT), ROS_DOMAIN_ID=str(domain),
               ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", ROS_LOG_DIR=str(tmp / "log"))
    rt = ["-p", "lockstep:=false", "-p", "use_sim_time:=false"]
    nodes = {"simulated_robot": ["-p", "lockstep:=false"], "pd_controller": rt,
             "recorder": ["-p", f"data_directory:={tmp}", "-p", "autostart:=true",
                          "-p", "use_sim_time:=false"],
             "excitation_publisher": rt}
    procs = []
    for name, params in nodes.items():
        procs.append(subprocess.Popen(
            [sys.executable, "-m", f"robot_identification.nodes.{name}", "--executor", executor,
             "--ros-args",
             "--params-file", str(ROOT / "config" / f"{name}.yaml"), *params],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    time.sleep(3.0)
    subprocess.run([sys.executable, "-c", (
        "import rclpy; from std_srvs.srv import Trigger; rclpy.init(); n = rclpy.create_node('b');"
        "c = n.create_client(Trigger, '/excitation_publisher/start'); c.wait_for_service(10.0);"
        # refused until the controller is ready and states are fresh: retry for 20 s
        "import time; end = time.monotonic() + 20\n"
        "while time.monotonic() < end:\n"
        "    f = c.call_async(Trigger.Request())\n"
        "    rclpy.spin_until_future_complete(n, f, timeout_sec=5)\n"
        "    if f.done() and f.result().success: break\n"
        "    time.sleep(0.2)\n"
        "else: raise SystemExit('excitation_publisher refused to start')")],
        env=env, check=True)
    time.sleep(duration)
    for p in procs:
        p.send_signal(signal.SIGINT)
    for p in procs:
        p.wait(timeout=10)
    bag = next(tmp.glob("run_*"))
    ds = read_bag(bag)
    gaps = np.round(np.diff(ds.t) * 1000).astype(int) - 1
    from rosbags.rosbag2 import Reader
    log = {}
    with Reader(bag) as r:
        for c, t_ns, _ in r.messages():
            log.setdefault(c.topic, []).append(t_ns * 1e-9)
    t_ref = min(log["/reference"])           # excitation running: closed loop
    states = np.array([t for t in log["/joint_states"] if t >= t_ref])
    commands = [t for t in log["/effort_controller/commands"] if t >= t_ref]
    wall = states[-1] - states[0]
    print(f"real time, separate processes ({executor}), closed loop: {len(states)} states in "
          f"{wall:.2f} s wall = {len(states) / wall:.0f} Hz (target 1000), commands/states "
          f"{len(commands) / len(states):.3f}, missed samples in the recorded stamps: "
          f"{int(gaps.sum())}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--skip-lockstep", action="store_true")
    p.add_argument("--duration", type=float, default=5.0)
    a = p.parse_args()
    if not a.skip_lockstep:
        lockstep("events", 141)
        lockstep("single", 142)
    real_time(a.duration, 143, "single")
    real_time(a.duration, 144, "events")


if __name__ == "__main__":
    main()
