"""The free-running (real-time) simulated elastic arm under CPU load: does the excitation run
to its end, or does the controller trip (and after how much robot time)?

Starts ``ros2 launch robot_identification identification_sim.launch.py robot:=R
lockstep:=false`` (the simulated robot on a 1 kHz wall timer, the controller and the
excitation on its /clock) beside ``--load`` busy-loop processes, starts the excitation once it
is accepted and watches /diagnostics until the excitation ends or the pd_controller faults.
One line per run: outcome, robot time of the fault after the start, the robot's real-time
factor, periods the simulated robot skipped and waited, the controller's faults; for a run
that ended, the identification of its recorded bag (the launch's identifier, true values from
the simulator): normalised mean error without Coulomb friction (Zollo et al. 2014, Sec. 6)
and the stiffness errors.

    PYTHONPATH=$PWD python benchmarks/realtime_elastic.py --robot zollo_planar --runs 5 --load 3

Needs the ROS launch tools (docs/ros.md, "Launch tests"); the checkout is made launchable as
in the launch tests (test/conftest.py). ROS_DOMAIN_ID: ``--domain`` (default 109).
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "test")]


def run(robot, domain, timeout):
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import DurabilityPolicy, QoSProfile
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Bool
    from std_srvs.srv import Trigger
    tmp = Path(tempfile.mkdtemp(prefix="realtime_elastic_"))
    # PYTHONPATH: the launch file imports this checkout's package (not an installed one)
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain), ROS_LOG_DIR=str(tmp / "log"),
               ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", PYTHONPATH=str(ROOT))
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    with open(tmp / "launch.log", "w") as log:
        launch = subprocess.Popen(
            [str(Path(sys.executable).parent / "ros2"), "launch", "robot_identification",
             "identification_sim.launch.py", f"robot:={robot}", "lockstep:=false",
             f"data_directory:={tmp}"], env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=domain)
    node = rclpy.create_node("realtime_elastic", context=ctx)
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(node)
    st = {"pd": {}, "sim": {}, "active": [], "stamp": None, "fault_stamp": None}

    def on_diagnostics(msg):
        for s in msg.status:
            values = {kv.key: kv.value for kv in s.values}
            if s.name.startswith("pd_controller"):
                st["pd"] = values
                if values.get("fault") and st["fault_stamp"] is None:
                    st["fault_stamp"] = st["stamp"]
            elif s.name.startswith("simulated_robot"):
                st["sim"] = values

    def on_joint(msg):
        st["stamp"] = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec

    node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 50)
    node.create_subscription(JointState, "/joint_states", on_joint, 1)
    node.create_subscription(Bool, "/excitation_publisher/active",
                             lambda m: st["active"].append(m.data),
                             QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))

    def spin_until(cond, seconds, what):
        end = time.monotonic() + seconds
        while not cond():
            if time.monotonic() > end:
                raise TimeoutError(what)
            ex.spin_once(timeout_sec=0.05)

    def call(name, seconds=60.0):
        cli = node.create_client(Trigger, name)
        spin_until(cli.service_is_ready, 60.0, name)
        future = cli.call_async(Trigger.Request())
        spin_until(future.done, seconds, name)
        node.destroy_client(cli)
        return future.result()

    def call_ok(name, **kw):
        res = call(name, **kw)
        if not res.success:
            raise RuntimeError(f"{name}: {res.message}")
        return res

    try:
        from conftest import recorder_receives
        call_ok("/recorder/start")
        spin_until(lambda: recorder_receives(call("/recorder/status").message,
                                             ("/joint_states", "/motor_states")), 60.0,
                   "recorder receives the states")
        answers = []
        spin_until(lambda: answers.append(call("/excitation_publisher/start"))
                   or answers[-1].success, 90.0, "excitation start")
        spin_until(lambda: st["stamp"] is not None, 10.0, "joint states")
        t0, wall0 = st["stamp"], time.monotonic()
        try:
            spin_until(lambda: st["pd"].get("fault") or (
                st["active"] and True in st["active"] and st["active"][-1] is False),
                timeout, "excitation end")
        except TimeoutError:
            pass
        wall = time.monotonic() - wall0
        end = time.monotonic() + 2.5              # the nodes' next /diagnostics entries
        while time.monotonic() < end:
            ex.spin_once(timeout_sec=0.05)
        pd, sim = st["pd"], st["sim"]
        fault = pd.get("fault", "")
        outcome = ("FAULT" if fault else "done" if st["active"] and st["active"][-1] is False
                   else "timeout")
        at = "" if st["fault_stamp"] is None else f" at {st['fault_stamp'] - t0:.3f} s"
        ident = ""
        if outcome == "done":
            stopped = call_ok("/recorder/stop").message
            ident = identification(call_ok("/identifier/identify", seconds=600.0).message)
            ident += f"\n  recorder: {stopped}"
        print(f"{robot}: {outcome}{at} (robot time after the start); wall {wall:.1f} s, load "
              f"{os.getloadavg()[0]:.1f}; real-time factor {sim.get('real_time_factor')}, "
              f"skipped {sim.get('skipped_periods')}, waited {sim.get('waited_periods')}, "
              f"command_timeout {sim.get('command_timeout_s', '0.01')} s; controller faults "
              f"{pd.get('faults')}, fail-safe commands {pd.get('fail_safe_commands')}"
              + (f"; '{fault[:100]}'" if fault else "") + ident, flush=True)
    finally:
        os.killpg(launch.pid, signal.SIGINT)
        try:
            launch.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(launch.pid, signal.SIGKILL)
        ex.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=ctx)


def identification(results_file):
    """'; NME ...' of a results.yaml whose parameters carry their true values."""
    import numpy as np
    import yaml
    with open(results_file) as f:
        params = yaml.safe_load(f)["base_parameters"]
    friction = ("coulomb", "stiction", "stribeck")
    err = [abs(p["estimate"] - p["true"]) / (abs(p["true"]) if abs(p["true"]) > 1e-12 else 1.0)
           for p in params if p.get("true") is not None
           and p["name"].rsplit(".", 1)[-1] not in friction]
    stiffness = [f"{p['name']} {100 * abs(p['estimate'] / p['true'] - 1):.3f} %"
                 for p in params if p["name"].endswith(".stiffness")]
    return (f"; identified: NME without Coulomb friction {np.mean(err):.4f}, stiffness errors "
            + ", ".join(stiffness))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robot", action="append", help="default: zollo_planar, puma560_elastic")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--load", type=int, default=3, help="busy-loop processes beside the graph")
    ap.add_argument("--domain", type=int, default=109)
    ap.add_argument("--timeout", type=float, default=300.0, help="[s] wall time per run")
    args = ap.parse_args()
    import conftest
    if conftest.LAUNCH_SKIP_REASON:
        raise SystemExit(conftest.LAUNCH_SKIP_REASON)
    busy = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(args.load)]
    try:
        for _ in range(args.runs):
            for robot in args.robot or ["zollo_planar", "puma560_elastic"]:
                run(robot, args.domain, args.timeout)
    finally:
        for p in busy:
            p.kill()
            p.wait()


if __name__ == "__main__":
    main()
