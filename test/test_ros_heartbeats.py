"""Heartbeats, in process over real DDS (own ROS_DOMAIN_ID): a real-time excitation run whose
controller goes silent is stopped with an ERROR naming it once the silence reaches
``heartbeat_timeout`` (PeerWatchdogs: a timer per peer, reset by its messages), and the run
ends with its last reference point at rest, so that the controller holds the arm at once."""
import threading
import time
from functools import partial
from types import SimpleNamespace

import pytest

rclpy = pytest.importorskip("rclpy")

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

pytestmark = pytest.mark.ros
from conftest import ros_domain_id, wait_until  # noqa: E402
DOMAIN_ID = ros_domain_id(157)
TIMEOUT = 0.3           # s, heartbeat_timeout
CONTROLLER = "pd_controller: control loop"


def test_heartbeat_monitor_names_silent_peers_once():
    from robot_identification.nodes._heartbeat import HeartbeatMonitor
    m = HeartbeatMonitor(0.5)
    m.beat("a", 0.0)
    m.beat("b", 0.3)
    assert m.silent(0.4) == []
    assert m.newly_lost(0.6) == [("a", 0.6)]
    assert m.newly_lost(0.7) == []                      # reported once
    assert [p for p, _ in m.newly_lost(0.9)] == ["b"]
    m.beat("a", 1.0)                                    # heard again: may be lost again
    assert m.newly_lost(1.6) == [("a", pytest.approx(0.6))]
    assert HeartbeatMonitor(0.0).silent(100.0) == []    # 0: never


def test_heartbeat_monitor_judges_stamped_beats_against_the_newest_stamp_heard():
    """A stamped peer silent by arrival is lost once the newest stamp heard of (any other
    source) is more than the timeout past its latest beat's stamp, or once its arrival
    silence passes the bound (2 x timeout) - not while the watcher has heard of nothing much
    newer (its reception is behind). Unstamped beats and the arrival_only mode (the
    watchdogs' thread) go by arrival alone."""
    from robot_identification.nodes._heartbeat import HeartbeatMonitor
    m = HeartbeatMonitor(0.5)
    assert m.bound == 1.0
    m.beat("ctl", 10.0, stamp=1000.0)
    m.beat("joints", 10.0)                              # unstamped
    m.heard(1000.1)                                     # another node, 0.1 s newer
    assert m.silent(10.7) == [("joints", pytest.approx(0.7))]   # ctl: the watcher is behind
    assert m.pending(10.7) == ["ctl"]
    m.arrival_only = True
    assert [p for p, _ in m.silent(10.7)] == ["ctl", "joints"]
    m.arrival_only = False
    m.heard(1000.6)                                     # the graph went on without ctl
    assert [p for p, _ in m.silent(10.7)] == ["ctl", "joints"]
    m.beat("ctl", 11.0, stamp=1000.9)                   # heard again: judged afresh
    m.heard(0.0)                                        # unstamped: no frontier
    assert m.silent(11.9) == [("joints", pytest.approx(1.9))]
    assert m.newly_lost(12.01, ["ctl"]) == [("ctl", pytest.approx(1.01))]   # the bound
    m.forget("ctl")
    assert m.lag("ctl") is None


def _run_with_a_peer(context, name, timeout=TIMEOUT):
    """A real-time excitation publisher (no recorder, heartbeat_timeout ``timeout`` s) and a
    peer node ``name`` standing in for the robot (joint states every 0.01 s) and the
    controller (its OK status every 0.05 s, unstamped), which receives the references and the
    run's statuses. Returns (excitation, peer, controller timer, references, run statuses)."""
    from robot_identification.nodes.excitation_publisher import ExcitationPublisher
    excitation = ExcitationPublisher(context=context, parameter_overrides=[
        Parameter("lockstep", value=False), Parameter("heartbeat_timeout", value=timeout),
        Parameter("max_reference_step", value=0.0), Parameter("state_timeout", value=1.0),
        Parameter("recorder_status", value="")])
    q0 = [float(x) for x in excitation.traj.evaluate(0.0)[0][0]]
    names = list(excitation.model.joint_names)
    peer = rclpy.create_node(name, context=context)
    pub_state = peer.create_publisher(JointState, "joint_states", 10)
    pub_diag = peer.create_publisher(DiagnosticArray, "/diagnostics", 10)

    def publish_state():
        msg = JointState(name=names, position=q0, velocity=[0.0] * len(q0))
        msg.header.stamp = peer.get_clock().now().to_msg()
        pub_state.publish(msg)

    def publish_controller_ok():
        pub_diag.publish(DiagnosticArray(status=[DiagnosticStatus(
            level=DiagnosticStatus.OK, name=CONTROLLER, message="running",
            values=[KeyValue(key="state", value="running")])]))
    peer.states = peer.create_timer(0.01, publish_state)
    controller = peer.create_timer(0.05, publish_controller_ok)
    references, runs = [], []
    peer.create_subscription(JointTrajectory, "reference", references.append, 1000)
    peer.create_subscription(DiagnosticArray, "/diagnostics", lambda m: runs.extend(
        s for s in m.status if s.name == "excitation_publisher: excitation"), 100)
    return excitation, peer, controller, references, runs


def _one_executor(*nodes):
    """(executor spinning ``nodes``, its :func:`wait_until`)."""
    ex = SingleThreadedExecutor(context=nodes[0].context)
    for node in nodes:
        ex.add_node(node)
    return ex, partial(wait_until, ex)


def _start(spin_until, excitation, references):
    """Start ``excitation``'s run; returns once its references flow."""
    answers = []
    spin_until(lambda: answers.append(excitation.on_start(
        Trigger.Request(), Trigger.Response())) or answers[-1].success, "started")
    spin_until(lambda: len(references) > 20, "references flow")


def test_silent_controller_stops_the_run_and_the_reference_rests(context):
    excitation, peer, controller, references, runs = _run_with_a_peer(
        context, "heartbeat_test_peer")
    ex, spin_until = _one_executor(excitation, peer)
    try:
        _start(spin_until, excitation, references)
        controller.cancel()                             # the controller goes silent
        spin_until(lambda: runs and "stopped" in runs[-1].message, "stop on /diagnostics")
        stopped = runs[-1]
        assert stopped.level == DiagnosticStatus.ERROR, stopped
        assert f"{CONTROLLER} silent for" in stopped.message, stopped.message
        silent = float(stopped.message.split(" silent for ")[1].split(" s")[0])
        assert silent >= TIMEOUT, stopped.message       # not before the timeout
        spin_until(lambda: not any(references[-1].points[0].velocities), "rest reference")
        rest, moving = references[-1], references[-2]
        assert list(rest.points[0].positions) == list(moving.points[0].positions)
        assert not any(rest.points[0].accelerations)
        stamp = (rest.header.stamp.sec, rest.header.stamp.nanosec)
        assert stamp > (moving.header.stamp.sec, moving.header.stamp.nanosec)
    finally:
        ex.shutdown()
        peer.destroy_node()
        excitation.destroy_node()


def test_a_watcher_behind_on_reception_does_not_stop_a_live_peer(context):
    """At 1 kHz with busy loops, a recorder received the controller's statuses about 0.7 s
    late (heartbeat_timeout 0.5 s) and stopped the run of a live controller: silence was timed
    by arrival at the watcher (docs/ros.md, "Heartbeats"). Here every /diagnostics status
    reaching the excitation publisher - the controller's and another node's - is held back for
    1.3 x heartbeat_timeout and then delivered in a burst, each stamped when it was due: the
    stamps show that the controller beat on time, so the run goes on. Once the controller
    really goes silent while the other node's statuses keep coming, the run stops naming it."""
    timeout, held = 1.0, 1.3
    excitation, peer, controller, references, runs = _run_with_a_peer(
        context, "behind_watcher_peer", timeout=timeout)
    controller.cancel()                 # statuses from here on: stamped, and held back below
    pub_diag = peer.create_publisher(DiagnosticArray, "/diagnostics", 100)
    delivery = SimpleNamespace(hold_until=None, queue=[], controller=True, bursts=0)

    def statuses():
        names = ["hardware_robot: robot"] + ([CONTROLLER] if delivery.controller else [])
        for name in names:
            msg = DiagnosticArray(status=[DiagnosticStatus(
                level=DiagnosticStatus.OK, name=name, message="running",
                values=[KeyValue(key="state", value="running")])])
            msg.header.stamp = peer.get_clock().now().to_msg()
            delivery.queue.append(msg)
        if delivery.hold_until is not None and time.monotonic() < delivery.hold_until:
            return
        if delivery.hold_until is not None:
            delivery.hold_until, delivery.bursts = None, delivery.bursts + 1
        while delivery.queue:
            pub_diag.publish(delivery.queue.pop(0))
    peer.create_timer(0.05, statuses)
    ex, spin_until = _one_executor(excitation, peer)
    try:
        _start(spin_until, excitation, references)
        assert excitation.traj.duration > 4 * timeout + held
        delivery.hold_until = time.monotonic() + held       # the watcher falls behind
        spin_until(lambda: delivery.bursts or excitation.run_state != "running", "the burst")
        heard = excitation.monitor.last[CONTROLLER]
        spin_until(lambda: excitation.monitor.last[CONTROLLER] > heard + timeout
                   or excitation.run_state != "running", "the controller heard on time again")
        assert excitation.run_state == "running", excitation.stop_reason
        delivery.controller = False                         # the controller goes silent
        spin_until(lambda: runs and "stopped" in runs[-1].message, "stop on /diagnostics")
        assert runs[-1].level == DiagnosticStatus.ERROR, runs[-1]
        assert f"{CONTROLLER} silent for" in runs[-1].message, runs[-1].message
    finally:
        ex.shutdown()
        peer.destroy_node()
        excitation.destroy_node()


def test_no_run_starts_before_the_recorder_receives_the_states(context, tmp_path):
    """Root cause of a recording that began 2.2-2.6 s after its run (1 session in 6 against
    the hardware-like robot): the recorder's state subscription had not yet matched the
    robot's publisher (discovery) when the run started, while the controller and the
    excitation publisher received the states. The recorder says on /diagnostics how many
    states it received; the excitation publisher refuses ~/start, naming it, until that is
    above 0 - here a real recorder that first receives nothing (its topic has no publisher),
    then the states."""
    from robot_identification.nodes.excitation_publisher import ExcitationPublisher
    from robot_identification.nodes.recorder import Recorder
    excitation = ExcitationPublisher(context=context, parameter_overrides=[
        Parameter("lockstep", value=False), Parameter("heartbeat_timeout", value=0.0),
        Parameter("state_timeout", value=1.0), Parameter("controller_status", value=""),
        Parameter("joint_states_topic", value="ready_test/robot_states")])
    recorder = Recorder(context=context, parameter_overrides=[
        Parameter("data_directory", value=str(tmp_path)),
        Parameter("joint_states_topic", value="ready_test/recorded_states"),
        Parameter("motor_states_topic", value="")])
    q0 = [float(x) for x in excitation.traj.evaluate(0.0)[0][0]]
    names = list(excitation.model.joint_names)
    peer = rclpy.create_node("ready_test_robot", context=context)
    to_excitation = peer.create_publisher(JointState, "ready_test/robot_states", 10)
    to_recorder = []                    # its publisher, once the robot 'is discovered'

    def publish_state():
        msg = JointState(name=names, position=q0, velocity=[0.0] * len(q0))
        msg.header.stamp = peer.get_clock().now().to_msg()
        for pub in [to_excitation, *to_recorder]:
            pub.publish(msg)
    peer.create_timer(0.01, publish_state)
    statuses = []
    peer.create_subscription(DiagnosticArray, "/diagnostics", lambda m: statuses.extend(
        s for s in m.status if s.name == "recorder: recording"), 100)
    ex = SingleThreadedExecutor(context=context)
    for n in (excitation, recorder, peer):
        ex.add_node(n)

    spin_until = partial(wait_until, ex)

    def start():
        return excitation.on_start(Trigger.Request(), Trigger.Response())
    try:
        assert recorder.on_start(Trigger.Request(), Trigger.Response()).success
        # the excitation publisher has fresh states and the recorder's status
        spin_until(lambda: excitation.state_time is not None and excitation.recorder
                   is not None, "states and the recorder's status")
        refused = start()
        assert not refused.success and "'recorder: recording' has received no joint states" \
            in refused.message, refused.message
        assert not excitation.active
        to_recorder.append(peer.create_publisher(JointState, "ready_test/recorded_states", 10))
        spin_until(lambda: statuses and dict((kv.key, kv.value) for kv in statuses[-1].values)
                   ["states_received"] not in ("", "0"), "the recorder says it receives")
        answers = []
        spin_until(lambda: answers.append(start()) or answers[-1].success, "started")
        assert excitation.active
    finally:
        ex.shutdown()
        recorder.shutdown()
        for n in (peer, recorder, excitation):
            n.destroy_node()


def test_no_run_starts_that_the_recording_would_not_begin_at(context, tmp_path):
    """Root cause of a bag that began 478 periods (1.9 s) before its run against the
    hardware-like robot (once, a full-suite run on the idle machine): the recorder had heard of
    no excitation publisher (its status, or a publisher of the reference topic) within its
    first second of states - DDS discovery of that publisher was late - and wrote from its
    ~/start on; the run started 1.9 s later. Reproduced here by making the recorder deaf to
    the excitation publisher's statuses (the late discovery) and not recording the reference
    topic. The excitation publisher now refuses ~/start while the recording recorder has not
    heard of it, and while it records from its ~/start on; a recording started once the
    recorder heard of it begins within one sample of the run's first reference."""
    from robot_identification.data import read_bag
    from robot_identification.nodes.excitation_publisher import ExcitationPublisher
    from robot_identification.nodes.recorder import Recorder
    rate = 100.0
    recorder = Recorder(context=context, parameter_overrides=[
        Parameter("data_directory", value=str(tmp_path)),
        Parameter("joint_states_topic", value="early_test/joint_states"),
        Parameter("motor_states_topic", value=""), Parameter("command_topic", value=""),
        # the reference topic not recorded ('': a recorded reference topic nobody publishes
        # would now refuse the run - "has not matched a publisher of the reference topic")
        Parameter("reference_topic", value=""),
        Parameter("expected_rate_hz", value=rate), Parameter("controller_status", value=""),
        Parameter("heartbeat_timeout", value=0.0),
        Parameter("excitation_discovery", value=0.3)])
    deaf = [True]                       # the excitation publisher not yet discovered
    hear = recorder.diag_sub.callback

    def late_discovery(msg):
        if deaf[0]:
            msg.status = [st for st in msg.status if not st.name.endswith(": excitation")]
        hear(msg)
    recorder.diag_sub.callback = late_discovery
    excitation = ExcitationPublisher(context=context, parameter_overrides=[
        Parameter("lockstep", value=False), Parameter("heartbeat_timeout", value=0.0),
        Parameter("state_timeout", value=1.0), Parameter("controller_status", value=""),
        Parameter("rate_hz", value=rate),
        Parameter("joint_states_topic", value="early_test/joint_states"),
        Parameter("reference_topic", value="early_test/reference")])
    q0 = [float(x) for x in excitation.traj.evaluate(0.0)[0][0]]
    names = list(excitation.model.joint_names)
    robot = rclpy.create_node("early_test_robot", context=context)
    pub = robot.create_publisher(JointState, "early_test/joint_states", 10)

    def publish_state():
        msg = JointState(name=names, position=q0, velocity=[0.0] * len(q0),
                         effort=[0.0] * len(q0))
        msg.header.stamp = robot.get_clock().now().to_msg()
        pub.publish(msg)
    robot.create_timer(1.0 / rate, publish_state)
    ex = SingleThreadedExecutor(context=context)
    for n in (excitation, recorder, robot):
        ex.add_node(n)
    spin_until = partial(wait_until, ex)

    def start():
        return excitation.on_start(Trigger.Request(), Trigger.Response())

    def recorder_says(window):
        seen = excitation.recorder
        return seen is not None and seen[0] and seen[2].get("window") == window
    try:
        assert recorder.on_start(Trigger.Request(), Trigger.Response()).success
        spin_until(lambda: recorder_says("waiting"), "the recorder's status, receiving")
        refused = start()
        assert not refused.success and "has not heard of this node" in refused.message, \
            refused.message
        # no excitation publisher heard of within excitation_discovery: from ~/start on
        spin_until(lambda: recorder_says("from_start"), "the recorder writes from ~/start")
        refused = start()
        assert not refused.success and "records from its ~/start on" in refused.message, \
            refused.message
        assert not excitation.active
        deaf[0] = False                 # discovered: a new recording waits for the run
        assert recorder.on_stop(None, Trigger.Response(), drain=False).success
        assert recorder.on_start(Trigger.Request(), Trigger.Response()).success
        answers = []
        spin_until(lambda: answers.append(start()) or answers[-1].success, "started")
        spin_until(lambda: excitation.last is not None
                   and excitation.last - excitation._start_stamp > 0.3, "0.3 s of the run")
        assert excitation.on_stop(Trigger.Request(), Trigger.Response()).success
        end = excitation.last
        spin_until(lambda: recorder.bounds[1] is not None and recorder.counts[
            recorder.joint_topic].last_stamp is not None, "the run's end")
        stopped = recorder.on_stop(None, Trigger.Response(), drain=False)
    finally:
        ex.shutdown()
        recorder.shutdown()
        for n in (robot, recorder, excitation):
            n.destroy_node()
    assert stopped.success, stopped.message
    ds = read_bag(recorder.last_bag, joint_topic="/early_test/joint_states", elastic=False)
    first, last = ds.metadata["t0"], ds.metadata["t0"] + ds.t[-1]
    start_stamp = excitation._start_stamp
    assert abs(first - start_stamp) * rate <= 1.0, (first, start_stamp)
    assert abs(last - end) * rate <= 1.0, (last, end)


def test_trajectory_controller_is_told_to_hold_when_a_run_stops(context):
    """The joint_trajectory_controller mode (real arms, use_pd_controller:=false): the whole
    trajectory goes to the arm's controller at ~/start; a run stopped before its end - the
    joint states silent for heartbeat_timeout, or ~/stop - sends that controller an empty
    trajectory on its topic, which cancels the trajectory it plays and holds the arm where it
    is (joint_trajectory_controller's topic interface), instead of playing it to its end."""
    from robot_identification.nodes.excitation_publisher import ExcitationPublisher
    topic = "/jtc_test/joint_trajectory"
    excitation = ExcitationPublisher(context=context, parameter_overrides=[
        Parameter("lockstep", value=False), Parameter("heartbeat_timeout", value=TIMEOUT),
        Parameter("state_timeout", value=1.0), Parameter("controller_status", value=""),
        Parameter("recorder_status", value=""),
        Parameter("joint_states_topic", value="jtc_test/joint_states"),
        Parameter("reference_topic", value="jtc_test/reference"),
        Parameter("trajectory_controller_topic", value=topic)])
    q0 = [float(x) for x in excitation.traj.evaluate(0.0)[0][0]]
    names = list(excitation.model.joint_names)
    arm = rclpy.create_node("jtc_test_arm", context=context)
    pub_state = arm.create_publisher(JointState, "jtc_test/joint_states", 10)

    def publish_state():
        msg = JointState(name=names, position=q0, velocity=[0.0] * len(q0))
        msg.header.stamp = arm.get_clock().now().to_msg()
        pub_state.publish(msg)
    states = arm.create_timer(0.01, publish_state)
    received = []
    arm.create_subscription(JointTrajectory, topic, received.append, 10)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(excitation)
    ex.add_node(arm)

    spin_until = partial(wait_until, ex)

    def start():
        answers = []
        spin_until(lambda: answers.append(excitation.on_start(
            Trigger.Request(), Trigger.Response())) or answers[-1].success, "started")
        spin_until(lambda: received and received[-1].points, "the trajectory sent")
        assert list(received[-1].joint_names) == names and len(received[-1].points) > 10
    try:
        spin_until(lambda: excitation.pub_jtc.get_subscription_count() > 0, "discovery")
        start()
        states.cancel()                                 # the arm's states go silent
        spin_until(lambda: not excitation.active, "stopped on the silent states")
        assert excitation.run_state == "stopped" and "silent" in excitation.stop_reason
        spin_until(lambda: not received[-1].points, "hold (an empty trajectory)")
        assert list(received[-1].joint_names) == names
        states.reset()
        start()
        excitation.on_stop(Trigger.Request(), Trigger.Response())
        spin_until(lambda: not received[-1].points, "hold after ~/stop")
        # one trajectory and one hold per run
        assert [bool(m.points) for m in received] == [True, False, True, False]
    finally:
        ex.shutdown()
        arm.destroy_node()
        excitation.destroy_node()


def test_a_starved_node_hears_queued_beats_before_it_judges_silence(context):
    """rclpy's Python executors run a node's ready timers before its ready subscriptions: a
    node starved for longer than the timeout wakes with its watchdog timer expired and the
    peer's beat queued. The check must see that beat (a false 'silent' stopped recordings
    under load, docs/ros.md), and a peer that stays silent is still reported. A starved
    process starves the watchdogs' own thread too: holding its lock for the starvation
    makes it wake late, so it leaves the verdict to the executor (an executor stopped while
    that thread runs on time is stuck: the thread judges, the tests below)."""
    from std_msgs.msg import Empty

    from robot_identification.nodes._common import PeerWatchdogs
    from robot_identification.nodes._heartbeat import HeartbeatMonitor
    node = rclpy.create_node("watchdog_test_node", context=context)
    peer = rclpy.create_node("watchdog_test_peer", context=context)
    monitor, checks = HeartbeatMonitor(0.2), []
    watchdogs = PeerWatchdogs(node, monitor,
                              lambda: checks.append(monitor.newly_lost(time.monotonic())))
    node.create_subscription(Empty, "watchdog_beat", lambda _: watchdogs.beat("peer"), 10)
    pub = peer.create_publisher(Empty, "watchdog_beat", 10)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    try:
        wait_until(ex, lambda: pub.get_subscription_count() > 0, "discovery")
        pub.publish(Empty())
        wait_until(ex, lambda: "peer" in monitor.last, "the first beat")
        pub.publish(Empty())        # the peer beats while this node is starved:
        with watchdogs.lock:        # the starvation itself (longer than the timeout), of
            time.sleep(0.35)        # the executor and the watchdogs' thread (the process)
        wait_until(ex, lambda: checks, "the watchdog's check")
        assert checks[0] == [], "a beat queued during the starvation was not counted"
        wait_until(ex, lambda: any(checks), "the silent peer reported")
        assert [p for p, _ in next(c for c in checks if c)] == ["peer"]
    finally:
        ex.shutdown()
        node.destroy_node()
        peer.destroy_node()


def test_a_starved_node_hears_a_beat_queued_behind_other_nodes_statuses(context):
    """The peers' beats share /diagnostics with every other node's status (about 60 a second
    in the launch graph): a node starved for longer than the timeout wakes with its watchdog
    expired and other nodes' statuses queued BEFORE the peer's beat. The executor takes one
    message per subscription per wait, so the check must first take what DDS already holds
    for the subscriptions that carry beats (a live controller was reported silent and a
    recording stopped, docs/ros.md, "Heartbeats")."""
    from std_msgs.msg import String

    from robot_identification.nodes._common import PeerWatchdogs
    from robot_identification.nodes._heartbeat import HeartbeatMonitor
    node = rclpy.create_node("watchdog_queue_node", context=context)
    peer = rclpy.create_node("watchdog_queue_peer", context=context)
    monitor, checks = HeartbeatMonitor(0.2), []
    watchdogs = PeerWatchdogs(node, monitor,
                              lambda: checks.append(monitor.newly_lost(time.monotonic())))
    sub = node.create_subscription(
        String, "watchdog_statuses",
        lambda m: watchdogs.beat("peer") if m.data == "peer" else None, 100)
    watchdogs.carriers.append(sub)
    pub = peer.create_publisher(String, "watchdog_statuses", 100)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    try:
        wait_until(ex, lambda: pub.get_subscription_count() > 0, "discovery")
        pub.publish(String(data="peer"))
        wait_until(ex, lambda: "peer" in monitor.last, "the first beat")
        for _ in range(5):          # other nodes' statuses, then the peer's beat, while
            pub.publish(String(data="other"))   # this node is starved
        pub.publish(String(data="peer"))
        with watchdogs.lock:        # the starvation itself (longer than the timeout), of
            time.sleep(0.35)        # the executor and the watchdogs' thread (the process)
        wait_until(ex, lambda: checks, "the watchdog's check")
        assert checks[0] == [], "a beat queued behind other statuses was not counted"
        wait_until(ex, lambda: any(checks), "the silent peer reported")
        assert [p for p, _ in next(c for c in checks if c)] == ["peer"]
    finally:
        ex.shutdown()
        node.destroy_node()
        peer.destroy_node()


def _spin_in_a_thread(executor, release, ex, watchdogs):
    """Spin ``executor`` in a thread of its own until ``release`` is set; returns the thread
    once the watchdogs know it as their executor's (``ex`` spun meanwhile)."""
    def spin():
        while not release.is_set():
            executor.spin_once(timeout_sec=0.01)
    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    wait_until(ex, lambda: watchdogs.executor_tid == spinner.native_id, "the executor's thread")
    return spinner


def _started_on_its_own_executor(context, name):
    """:func:`_run_with_a_peer` with the excitation publisher on an executor of its own
    (``own``) and the peer on ``ex``; returns them once the run's references flow."""
    excitation, peer, controller, references, runs = _run_with_a_peer(context, name)
    own = SingleThreadedExecutor(context=context)
    own.add_node(excitation)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(peer)
    both = SimpleNamespace(spin_once=lambda timeout_sec: (own.spin_once(timeout_sec=0.0),
                                                          ex.spin_once(timeout_sec=timeout_sec)))
    answers = []
    wait_until(both, lambda: answers.append(excitation.on_start(
        Trigger.Request(), Trigger.Response())) or answers[-1].success, "started")
    wait_until(both, lambda: len(references) > 20, "references flow")
    return SimpleNamespace(excitation=excitation, peer=peer, controller=controller,
                           references=references, runs=runs, own=own, ex=ex, both=both)


def _tear_down(g, release, spinner, *nodes):
    release.set()
    if spinner is not None:
        spinner.join()
    g.own.shutdown()
    g.ex.shutdown()
    for node in (*nodes, g.peer, g.excitation):
        node.destroy_node()


def test_a_stuck_executor_does_not_keep_the_run_going(context):
    """The deterministic stand-in for a stuck executor (docs/ros.md, kill matrix: after a
    peer's SIGKILL, Fast DDS held a reader's lock about 1-3 s and the node's ``rcl_wait``
    waited for it, so its watchdog timers ran late): the excitation publisher's executor
    thread is blocked (asleep) in another node's callback when the controller goes silent.
    The watchdogs' own thread still stops the run: the ERROR naming the controller reaches
    /diagnostics and the rest reference goes out, from that thread."""
    g = _started_on_its_own_executor(context, "stuck_executor_peer")
    blocked, release, spinner = threading.Event(), threading.Event(), None
    blocker = rclpy.create_node("stuck_executor_blocker", context=context)
    try:
        spinner = _spin_in_a_thread(g.own, release, g.ex, g.excitation.watchdogs)
        # its executor's thread waits in another node's callback
        blocker.create_timer(0.001, lambda: blocked.set() or release.wait())
        g.own.add_node(blocker)
        wait_until(g.ex, blocked.is_set, "the executor blocked")
        g.controller.cancel()                           # the controller goes silent
        wait_until(g.ex, lambda: g.runs and "stopped" in g.runs[-1].message,
                   "stop on /diagnostics")
        stopped = g.runs[-1]
        assert stopped.level == DiagnosticStatus.ERROR, stopped
        assert "silent for" in stopped.message, stopped.message
        assert "judged by the watchdogs' thread" in stopped.message, stopped.message
        # counted by that thread after its verdict went out (the message can arrive first)
        wait_until(g.ex, lambda: g.excitation.watchdogs.thread_verdicts >= 1,
                   "the thread's verdict counted")
        wait_until(g.ex, lambda: not any(g.references[-1].points[0].velocities),
                   "rest reference")
        assert list(g.references[-1].points[0].positions) == list(
            g.references[-2].points[0].positions)
    finally:
        _tear_down(g, release, spinner, blocker)


def test_a_busy_executor_is_starved_not_stuck(context):
    """The other side: an executor thread that runs (here busy in another node's callback;
    in the kill matrix, waiting for a CPU at load 13) is not stuck - its queued beats will be
    taken before the verdict. The watchdogs' thread sees it runnable and leaves the verdict
    to the executor: a run whose controller keeps beating goes on (it was stopped once when
    the thread judged on executor silence alone)."""
    g = _started_on_its_own_executor(context, "busy_executor_peer")
    working, release, spinner = threading.Event(), threading.Event(), None
    worker = rclpy.create_node("busy_executor_worker", context=context)
    watchdogs = g.excitation.watchdogs
    try:
        spinner = _spin_in_a_thread(g.own, release, g.ex, watchdogs)

        def work():
            working.set()
            while not release.is_set():
                pass
        worker.create_timer(0.001, work)
        g.own.add_node(worker)
        wait_until(g.ex, working.is_set, "the executor busy")
        # the thread's checks of the late executor cover the timeout and its stuck_after
        checks = watchdogs.runnable_checks + int(
            (TIMEOUT + watchdogs.stuck_after) / watchdogs.poll) + 2
        wait_until(g.ex, lambda: watchdogs.runnable_checks >= checks, "the thread's checks")
        release.set()
        spinner.join()
        seen = len(g.runs)
        wait_until(g.both, lambda: len(g.runs) > seen + 2, "the excitation publisher runs again")
        assert watchdogs.thread_verdicts == 0
        assert g.excitation.run_state == "running", g.runs[-1].message
    finally:
        _tear_down(g, release, spinner, worker)


def test_a_peer_lost_just_after_the_stop_is_named_too(context):
    """A killed robot's states stop; the controller, stalled on the dead robot's port (Fast
    DDS, docs/ros.md), went silent just before: the run stops naming the controller, and the
    robot's loss, noticed within heartbeat_timeout of that stop, is added to the stop's
    ERROR (it was named only seconds later, by the controller once it ran again)."""
    g = _started_on_its_own_executor(context, "lost_after_stop_peer")
    try:
        g.peer.states.cancel()                          # the robot is gone
        g.controller.cancel()                           # and the controller silent
        wait_until(g.both, lambda: g.runs and "joint_states silent for" in g.runs[-1].message
                   and f"{CONTROLLER} silent for" in g.runs[-1].message, "both named")
        assert g.runs[-1].level == DiagnosticStatus.ERROR
        assert g.excitation.run_state == "stopped"
    finally:
        g.own.shutdown()
        g.ex.shutdown()
        g.peer.destroy_node()
        g.excitation.destroy_node()
