"""launch_pytest: launch/identification_robot.launch.py (real-time path, no lockstep) drives the
free-running simulated robot (the stand-in for Gazebo or hardware: a wall timer at rate_hz,
or /clock with use_sim_time) through a full short excitation of ur10e and puma560 at 1 kHz
and 250 Hz, and of the elastic zollo_planar at 1 kHz (its motor loop tolerates no period of
command delay: the robot waits for each command, docs/ros.md "Elastic arms in real time"; on
the former code this case tripped the velocity limit within 0.3 s): the pd_controller reports
0 faults and 0 zero-torque
commands, the excitation starts only once the controller is ready (moving first from where the
robot stands to the first point), and the identifier's parameters predict held-out torques.

Not collected where the launch stack is absent (conftest.py; test_ros_launch_stack.py says why);
the checkout runs from conftest's ament prefix."""
import os
import time
from pathlib import Path

import launch_pytest
import pytest
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from launch import LaunchDescription
from launch.actions import IncludeLaunchDescription, SetEnvironmentVariable
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch_pytest.actions import ReadyToTest
from launch_ros.actions import Node
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, SetParameters
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile
from std_msgs.msg import Bool
from std_srvs.srv import Trigger

from conftest import call_service, patience, recorder_receives, ros_domain_id

ROOT = Path(__file__).resolve().parents[1]
DOMAIN_ID = ros_domain_id(144)
TMP = Path(os.environ.get("TMPDIR", "/tmp")) / f"ri_launch_robot_{os.getpid()}"
#: short excitations within 0.9 of the limits: puma560 4 s (5 harmonics of 0.25 Hz); ur10e
#: 10 s (5 harmonics of 0.1 Hz): its 4 s run left the core pipeline itself at NRMSE 0.05-0.90
EXCITATION = {
    "puma560": {"type": "fourier", "base_frequency": 0.25, "harmonics": 5, "amplitude": 1.0,
                "seed": 1},
    "ur10e": {"type": "fourier", "base_frequency": 0.1, "harmonics": 5, "amplitude": 1.0,
              "seed": 1},
    "zollo_planar": {"type": "bspline", "duration": 4.0, "segments": 5,
                     "amplitude": [4.0, 4.0], "seed": 2}}
WATCHDOG_TIMEOUT = 1.0  # s: processes here stall up to 0.25 s at load 11 (measured)
#: s: the simulated robot's process starved 0.5 s (the launch default) at load 18 and the
#: heartbeats stopped the run (as they should); this test is about the run, not the load
HEARTBEAT_TIMEOUT = 5.0
#: lower controller bandwidth (kp * s^2, kd * s) than the configs' 5 Hz designs: the Python
#: loop over DDS here (2 cores, load 2-14) delays commands by 20-50 ms, and more in stalls.
#: Rule (docs/ros.md): 1.54 w s tau <= 0.6 rad. ur10e has no simulated friction (no passive
#: damping), so it gets the lower one
BANDWIDTH_SCALE = {"puma560": 0.2, "ur10e": 0.1, "zollo_planar": 1.0}
START_OFFSET = 0.05     # rad: the robot stands this far from the first point (move to start)
#: accuracy: torque prediction on held-out simulated data (the robot config's excitation,
#: core simulate, seed 1), mean NRMSE over the joints, beside the core pipeline (simulate +
#: identify the same trajectory at the same rate, no ROS), per robot and rate [Hz]. Measured
#: (docs/ros.md, "Overload"): since the reference follows the robot's stamps, independent of
#: the load: puma560 1 kHz 0.0770-0.0773 (core 0.0774), 250 Hz 0.084-0.086 (core 0.083);
#: ur10e 0.0047-0.0049 (core 0.0070-0.0115; 0.0047 since WLS's iterated weights, docs/ros.md:
#: with feed-forward on 0.0055). Before, with the reference on the wall clock,
#: a robot clock at 0.4 x real time gave up to 1.87 (puma560) and 0.189 (ur10e)
NRMSE_BOUND = {"puma560": {1000.0: 0.15, 250.0: 0.15}, "ur10e": {1000.0: 0.05, 250.0: 0.05},
               "zollo_planar": {1000.0: 0.05}}
CASES = [("ur10e", 1000.0, False), ("ur10e", 250.0, False),
         ("puma560", 1000.0, False), ("puma560", 250.0, False), ("puma560", 250.0, True),
         ("zollo_planar", 1000.0, False)]

pytestmark = pytest.mark.launch


def trajectory_file(robot):
    from robot_identification.excitation import save_trajectory, trajectory_from_config
    from robot_identification.model import load_robot
    traj = trajectory_from_config(load_robot(robot), EXCITATION[robot])
    return str(save_trajectory(traj, TMP / f"{robot}_excitation.yaml")), traj


@launch_pytest.fixture(params=CASES, ids=[f"{r}-{int(h)}Hz{'-sim_time' if s else ''}"
                                           for r, h, s in CASES])
def launch_description(request):
    robot, rate, sim_time = request.param
    path, traj = trajectory_file(robot)
    start = traj.evaluate(0.0)[0][0] + START_OFFSET
    data = TMP / f"{robot}_{int(rate)}_{sim_time}"
    flag = "true" if sim_time else "false"
    return LaunchDescription([
        SetEnvironmentVariable("ROS_DOMAIN_ID", str(DOMAIN_ID)),
        SetEnvironmentVariable("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST"),
        Node(package="robot_identification", executable="simulated_robot",
             name="simulated_robot", output="screen", arguments=["--executor", "events"],
             parameters=[{"robot": robot, "lockstep": False, "rate_hz": rate,
                          "initial_positions": [float(x) for x in start],
                          "publish_clock": sim_time, "use_sim_time": False,
                          "joint_states_topic": "/joint_states",
                          "command_topic": "/effort_controller/commands"}]),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(str(ROOT / "launch" / "identification_robot.launch.py")),
            launch_arguments={"robot": robot, "rate_hz": str(rate), "use_sim_time": flag,
                              "trajectory_file": path, "data_directory": str(data),
                              "bandwidth_scale": str(BANDWIDTH_SCALE[robot]),
                              "watchdog_timeout": str(WATCHDOG_TIMEOUT),
                              "heartbeat_timeout": str(HEARTBEAT_TIMEOUT)}.items()),
        ReadyToTest(),
    ])


class Client:
    def __init__(self):
        os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
        self.ctx = rclpy.Context()
        rclpy.init(context=self.ctx, domain_id=DOMAIN_ID)
        self.node = rclpy.create_node("launch_test_client", context=self.ctx)
        self.ex = SingleThreadedExecutor(context=self.ctx)
        self.ex.add_node(self.node)
        self.status, self.active = {}, []
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self.on_diagnostics, 10)
        self.node.create_subscription(
            Bool, "/excitation_publisher/active", lambda m: self.active.append(m.data),
            QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))

    def on_diagnostics(self, msg):
        for st in msg.status:
            if st.name == "pd_controller: control loop":
                self.status = {kv.key: kv.value for kv in st.values}

    def spin_until(self, cond, timeout, what):
        end = time.monotonic() + patience(timeout)
        while not cond():
            assert time.monotonic() < end, f"timed out: {what}"
            self.ex.spin_once(timeout_sec=0.05)

    def call(self, name, srv=Trigger, request=None, timeout=60.0):
        return call_service(lambda: self.ex.spin_once(timeout_sec=0.05), self.node, name,
                            srv, request, timeout)

    def close(self):
        self.ex.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.ctx)


@pytest.mark.launch(fixture=launch_description)
def test_real_time_excitation_and_identification(launch_description, request):
    robot, rate, sim_time = request.node.callspec.params["launch_description"]
    traj_duration = trajectory_file(robot)[1].duration
    c = Client()
    try:
        # the controller arms once states flow (holding the arm)
        c.spin_until(lambda: c.call("/pd_controller/status").success, 60.0, "controller ready")
        # the lifecycle manager activates the recorder on its own schedule: refused, with
        # that reason, until it is active (a user retries the same way)
        starts = []
        c.spin_until(lambda: starts.append(c.call("/recorder/start")) or starts[-1].success,
                     60.0, "recorder start")
        assert all("(lifecycle: activate it)" in a.message for a in starts[:-1]), starts
        # the recorder receives the states before the excitation starts (discovery on a
        # loaded machine is slow: a late match would cut the start of the recording)
        c.spin_until(lambda: recorder_receives(c.call("/recorder/status").message),
                     60.0, "recorder receives joint states")
        # refused (with the reason) until the publisher itself has fresh states and an OK
        # controller status; a user retries the same way
        answers = []
        c.spin_until(lambda: answers.append(c.call("/excitation_publisher/start"))
                     or answers[-1].success, 30.0, "excitation start")
        started = answers[-1]
        assert all(a.message.startswith("not started: ") for a in answers[:-1]), answers
        assert "move to start" in started.message and "0 s move" not in started.message
        c.spin_until(lambda: c.active and c.active[-1], 10.0, "excitation active")
        # every topic (the reference too, once the excitation runs) reaches the recorder
        c.spin_until(lambda: c.call("/recorder/status").success, 30.0, "recorder status")
        # the excitation + the move + hold; the simulated clock may run slower than the wall clock
        c.spin_until(lambda: not c.active[-1], 20.0 * traj_duration, "excitation finished")
        stopped = c.call("/recorder/stop")
        assert stopped.success, stopped.message
        print(f"recorded: {stopped.message}")
        # every message published during the recording is in the bag (DDS sequence numbers)
        assert ", lost messages: 0;" in stopped.message, stopped.message
        c.status = {}
        c.spin_until(lambda: c.status, 10.0, "pd_controller diagnostics")
        st = c.status
        assert st["state"] in ("running", "holding") and st["fault"] == "", st
        assert int(st["faults"]) == 0 and int(st["zero_torque_commands"]) == 0, st
        assert int(st["fail_safe_commands"]) == 0, st
        assert int(st["commands"]) > 0.5 * traj_duration * min(rate, 250.0), st
        # the simulated robot runs the nominal parameters: the identifier compares with them;
        # its efforts are the commands held over the preceding period (docs/ros.md)
        sim = [ParameterMsg(name="compare_with_nominal", value=ParameterValue(
                   type=ParameterType.PARAMETER_BOOL, bool_value=True)),
               ParameterMsg(name="effort_lag_periods", value=ParameterValue(
                   type=ParameterType.PARAMETER_DOUBLE, double_value=0.5))]
        done = c.call("/identifier/set_parameters", SetParameters,
                      SetParameters.Request(parameters=sim))
        assert all(r.successful for r in done.results), done
        res = c.call("/identifier/identify", timeout=180.0)
        assert res.success, res.message
        got = c.call("/identifier/get_parameters", GetParameters,
                     GetParameters.Request(names=["result.file"]))
        ros, core = held_out_nrmse(robot, rate, got.values[0].string_value)
        print(f"{robot} {rate:g} Hz sim_time={sim_time}: {st['commands']} commands; held-out "
              f"torque NRMSE {ros:.4f} (core pipeline {core:.4f})")
        assert ros < NRMSE_BOUND[robot][rate], (ros, core)
    finally:
        c.close()


def held_out_nrmse(robot, rate, results_file):
    """Mean torque NRMSE on held-out simulated data (the robot config's excitation, seed 1)
    of the parameters in ``results_file`` and of the core pipeline's (simulate + identify the
    same trajectory at the same rate, no ROS)."""
    from robot_identification.model import load_robot
    from robot_identification.identification import identify
    from robot_identification.simulation import simulate
    from robot_identification.validation import load_estimates, validate
    model = load_robot(robot)
    base, models, doc = load_estimates(results_file, model)
    ros = models[next(k for k in models if k != "nominal")]
    _, traj = trajectory_file(robot)
    core = identify(model, simulate(model, trajectory=traj, rate_hz=rate, seed=0))
    held_out = simulate(model, rate_hz=rate, seed=1)
    files = validate(model, base, {"ros": ros, "core": core.estimate.values}, [held_out])
    m = files[0]["models"]
    return m["ros"]["nrmse_mean"], m["core"]["nrmse_mean"]
