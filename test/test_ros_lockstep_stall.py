"""A lockstep run whose controller process is starved for longer than the simulated robot's
keep-alive period (SIGSTOP until the robot re-publishes its state, then SIGCONT): the injected
form of a heavily loaded machine. The run may only get slower: every state is answered once,
the torque applied over each period is the controller's answer to the state at its start, and
the recording is complete, also when the recorder was starved at the end of the run (its
~/stop waits for the tail still on its way). A run that does end early (here ``~/stop``) is
said by the excitation publisher, the recorder and the identification diagnostics. Separate
processes over DDS (unique ROS_DOMAIN_ID, localhost discovery)."""
import signal

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSProfile,  # noqa: E402
                       ReliabilityPolicy)
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Bool, Float64MultiArray  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from conftest import await_lockstep_end, recorder_receives, ros_domain_id  # noqa: E402
from robot_identification.nodes._common import command_state_ns, stamp_ns  # noqa: E402
from test_ros_graph import Graph, call, client_node, spin_until  # noqa: E402

pytestmark = pytest.mark.ros
DOMAIN_ID = ros_domain_id(152)
DURATION, HOLD = 1.0, 0.1           # s of excitation and rest (1 kHz: 1101 periods)
KEEP_ALL = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)


@pytest.fixture
def client():
    yield from client_node(DOMAIN_ID, "stall_test_client")


def test_starved_controller_neither_doubles_a_step_nor_cuts_the_run(client, tmp_path):
    from robot_identification.excitation import save_trajectory, trajectory_from_config
    from robot_identification.model import load_robot
    traj = trajectory_from_config(load_robot("zollo_planar"), {
        "type": "bspline", "duration": DURATION, "segments": 3, "amplitude": [0.5, 0.5],
        "seed": 3})
    traj_file = save_trajectory(traj, tmp_path / "traj.yaml")
    q0 = [float(x) for x in traj.evaluate(0.0)[0][0]]
    states, motor, commands, active = [], {}, [], []
    client.create_subscription(JointState, "/joint_states",
                               lambda m: states.append(stamp_ns(m.header.stamp)), KEEP_ALL)
    client.create_subscription(     # elastic arm: the motor-side effort = the applied torque
        JointState, "/motor_states",
        lambda m: motor.setdefault(stamp_ns(m.header.stamp), list(m.effort)), KEEP_ALL)
    client.create_subscription(Float64MultiArray, "/effort_controller/commands",
                               lambda m: commands.append((command_state_ns(m), list(m.data))),
                               KEEP_ALL)
    client.create_subscription(
        Bool, "/excitation_publisher/active", lambda m: active.append(m.data),
        QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    g = Graph(DOMAIN_ID, tmp_path)
    try:
        g.start("simulated_robot", initial_positions=q0)
        g.start("excitation_publisher", trajectory_file=str(traj_file), hold_time=HOLD)
        g.start("pd_controller")
        g.start("recorder", data_directory=str(tmp_path / "data"))
        wanted = {"/joint_states": 3, "/motor_states": 3, "/reference": 2,
                  "/effort_controller/commands": 3, "/clock": 2}
        spin_until(client, lambda: all(client.count_subscribers(t) >= k
                                       for t, k in wanted.items()), 60.0)
        spin_until(client, lambda: states, 60.0)             # the robot's idle keep-alive
        spin_until(client, lambda: recorder_receives(call(client, Trigger, "/recorder/status")
                                                     .message), 60.0)
        assert call(client, Trigger, "/recorder/start").success
        assert call(client, Trigger, "/excitation_publisher/start").success
        controller = g.procs["pd_controller"]
        spin_until(client, lambda: len(commands) >= 200, 60.0)
        controller.send_signal(signal.SIGSTOP)               # starved ...
        n = len(states)
        # ... until the robot re-publishes its state (its keep-alive, 0.5 s on the wall
        # clock): the controller then holds that state twice (and maybe its own answer)
        spin_until(client, lambda: len(set(states[n - 1:])) < len(states[n - 1:]), 60.0)
        controller.send_signal(signal.SIGCONT)
        # the recorder starved for the last 300 periods: it is behind when the run ends,
        # and ~/stop comes at once (as a caller awaiting the end does): it must wait for them
        spin_until(client, lambda: len(commands) >= 800, 60.0)
        recorder = g.procs["recorder"]
        recorder.send_signal(signal.SIGSTOP)
        await_lockstep_end(lambda: client.executor_.spin_once(timeout_sec=0.05), client, active)
        spin_until(client, lambda: max(states) in motor, 30.0)
        recorder.send_signal(signal.SIGCONT)
        full = call(client, Trigger, "/recorder/stop")
        # a run that ends early: stopped by ~/stop after 100 periods
        assert call(client, Trigger, "/recorder/start").success
        n, active[:] = len(commands), []
        assert call(client, Trigger, "/excitation_publisher/start").success
        spin_until(client, lambda: len(commands) >= n + 100, 60.0)
        assert call(client, Trigger, "/excitation_publisher/stop").success
        await_lockstep_end(lambda: client.executor_.spin_once(timeout_sec=0.05), client, active)
        short = call(client, Trigger, "/recorder/stop")
        logs = "".join(f"\n--- {k}\n{g.log(k)}" for k in g.procs)
    finally:
        g.close()
    # the run is complete: every period of the excitation and the hold, each stamped once
    t = np.array(sorted(set(states))) * 1e-9
    np.testing.assert_allclose(np.diff(t), 1e-3, atol=1e-9)
    assert t[-1] - t[0] >= DURATION + HOLD, (t[-1] - t[0], logs)
    # lockstep: the torque over [t_k-1, t_k] is the first answer to the state at t_k-1 (the
    # robot stepped once per state; a second answer to the re-published state is ignored).
    # Every state from the first answer seen (this client's discovery) to the end is
    # answered, the injected stall included.
    answer = {}
    for k, u in commands:
        answer.setdefault(k, u)
    stamps = sorted(motor)
    run = [(a, b) for a, b in zip(stamps, stamps[1:]) if a >= min(answer)]
    assert len(run) >= len(answer) - 1 >= 200, (len(run), len(answer))
    wrong = [(a * 1e-9, motor[b], answer.get(a)) for a, b in run if motor[b] != answer.get(a)]
    assert not wrong, (wrong[:5], logs)
    # answers sent twice (the controller's re-sent command) are said and ignored
    assert len(commands) == len(answer) or "repeated answers ignored" in logs, logs

    # the recordings: the stalled run complete, the stopped one said to be incomplete
    from robot_identification.data import read_bag
    from robot_identification.diagnostics import check_excitation_complete
    assert full.success and "INCOMPLETE" not in full.message, full.message
    assert short.success and "INCOMPLETE recording" in short.message, (short.message, logs)
    assert "stopped by ~/stop" in short.message, short.message
    assert "excitation stopped by ~/stop" in g.log("excitation_publisher")
    bags = sorted((tmp_path / "data").glob("run_*"))
    assert len(bags) == 2, bags
    complete, stopped = (read_bag(b).metadata["excitation"] for b in bags)
    assert [c["complete"] for c in complete.values()] == [True], complete
    assert [c["state"] for c in stopped.values()] == ["stopped"], stopped
    diags = check_excitation_complete(stopped, "short")
    assert [d.code for d in diags] == ["recording_incomplete"], diags
    assert "stopped after" in diags[0].message and not check_excitation_complete(complete)


# -- the same rules in process (no graph): what each node does with the injected event -------
def test_robot_steps_once_per_state_whatever_the_answers(context):
    """A command labelled with the state it answers steps the robot only while that state is
    the current one; a second answer is ignored and counted; unlabelled commands (another
    controller) step once each."""
    from rclpy.parameter import Parameter

    from robot_identification.nodes._common import command_msg
    from robot_identification.nodes.simulated_robot import SimulatedRobot
    sim = SimulatedRobot(context=context, parameter_overrides=[
        Parameter("initial_positions", value=[0.3, -0.2])])
    try:
        u = [1.0, -2.0]
        at0 = sim.state_ns
        sim.on_command(command_msg(u, at0))                 # the answer to the state at 0
        assert sim.sim.state.t == pytest.approx(1e-3) and sim.commands == 1
        sim.on_command(command_msg(u, at0))                 # re-sent: ignored, counted
        assert sim.sim.state.t == pytest.approx(1e-3) and sim.duplicate_commands == 1
        sim.on_command(command_msg(u, sim.state_ns))        # the next state's answer
        assert sim.sim.state.t == pytest.approx(2e-3) and sim.commands == 2
        sim.on_command(Float64MultiArray(data=u))           # unlabelled: one step each
        sim.on_command(Float64MultiArray(data=u))
        assert sim.sim.state.t == pytest.approx(4e-3) and sim.commands == 4
    finally:
        sim.destroy_node()


def test_excitation_says_why_it_stopped_and_the_recording_is_judged(context):
    """/clock going back stops a lockstep excitation with the reason on /diagnostics; the
    recorder's judgement of a recording against that status (excitation_coverage)."""
    from diagnostic_msgs.msg import DiagnosticStatus

    from robot_identification.nodes._recording import excitation_coverage, excitation_status
    from robot_identification.nodes.excitation_publisher import ExcitationPublisher
    exc = ExcitationPublisher(context=context)
    sent = []
    exc.pub_diag.publish = lambda m: sent.extend(excitation_status(s) for s in m.status)
    try:
        assert exc.on_start(None, Trigger.Response()).success
        for t in (10.0, 10.001, 10.002):
            exc.tick_on_clock(t)
        status = sent[-1]
        assert status["state"] == "running" and status["start_stamp_s"] == 10.0
        planned = status["planned_s"]
        assert planned == pytest.approx(exc.traj.duration + exc.hold)
        # a recording of the whole run, of its first half, and one started late
        assert excitation_coverage(status, 10.0, 10.0 + planned, 1000.0)["complete"]
        half = excitation_coverage(status, 10.0, 10.0 + planned / 2, 1000.0)
        assert not half["complete"] and "ends" in half["why"], half
        late = excitation_coverage(status, 10.5, 10.0 + planned, 1000.0)
        assert not late["complete"] and "starts 0.500 s after" in late["why"], late
        assert excitation_coverage(status, 20.0 + planned, 30.0, 1000.0) is None  # later rec.
        exc.tick_on_clock(0.5)                      # another robot's clock (or a reset)
        assert not exc.active
        status = sent[-1]
        assert status["state"] == "stopped" and status["level"] == DiagnosticStatus.WARN[0]
        assert "/clock went back from 10.002000 s to 0.500000 s" in status["reason"], status
        assert status["played_s"] == pytest.approx(0.002)
        stopped = excitation_coverage(status, 10.0, 10.002, 1000.0)
        assert not stopped["complete"] and "stopped after 0.002" in stopped["why"], stopped
    finally:
        exc.destroy_node()
