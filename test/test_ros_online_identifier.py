"""online_identifier on a replayed bag: the recorder records a run played by bag_player
(rosbags reader -> publishers at the recorded timing, /clock from the recording); that bag,
replayed into the online identifier over DDS, gives the estimates of the batch (streaming)
identification of the same bag, well within its standard deviations. The same replay feeds a
``live`` Identify goal of the identifier."""
import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")
pytest.importorskip("robot_identification_interfaces")

from rclpy.action import ActionClient  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from robot_identification_interfaces.action import Identify  # noqa: E402
from robot_identification_interfaces.msg import IdentificationResult  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from robot_identification.data import write_bag  # noqa: E402
from robot_identification.nodes._messages import LATCHED  # noqa: E402

pytestmark = pytest.mark.ros
from conftest import patience, ros_domain_id  # noqa: E402
DOMAIN_ID = ros_domain_id(149)
RATE = 5.0          # replay speed: the recorded timing, 5 times as fast (stamps and /clock kept)


def params(**kw):
    return [Parameter(k, value=v) for k, v in kw.items()]


def spin_until(ex, predicate, timeout=60.0, info=None):
    import time
    deadline = time.monotonic() + patience(timeout)
    while not predicate():
        assert time.monotonic() < deadline, f"timed out: {info() if info else ''}"
        ex.spin_once(timeout_sec=0.05)


def play(context, bag, nodes, done, received, subscribers=1):
    """Spin bag_player (playing ``bag``) with ``nodes`` until ``done()`` after the end;
    paced so that ``received()`` stays within 400 messages of the published ones (a loaded
    machine stretches the wall time instead of overflowing the subscriber queues)."""
    from robot_identification.nodes.bag_player import BagPlayer
    player = BagPlayer(context=context, parameter_overrides=params(
        bag=str(bag), rate=RATE, wait_for_subscribers=subscribers))
    player.paced_by = lambda: player.published - received() < 400
    ex = SingleThreadedExecutor(context=context)
    for n in [player, *nodes]:
        ex.add_node(n)
    try:
        spin_until(ex, lambda: player.finished, 120.0)
        spin_until(ex, done, 30.0, lambda: [getattr(n, "received", None) for n in nodes])
    finally:
        player.shutdown()
        player.destroy_node()
        ex.shutdown()
    return player.published


def test_replayed_recording_gives_the_batch_estimates(context, tmp_path):
    from robot_identification.model import load_robot
    from robot_identification.nodes.identifier import Identifier
    from robot_identification.nodes.online_identifier import OnlineIdentifier
    from robot_identification.nodes.recorder import Recorder
    from robot_identification.simulation import simulate
    from robot_identification.streaming import identify_streaming
    model = load_robot("zollo_planar")
    ds = simulate(model, duration=4.0)
    n = ds.n_samples
    run = write_bag(ds, tmp_path / "simulated")

    # 1. the recorder records the run as bag_player plays it
    rec = Recorder(context=context, parameter_overrides=params(
        data_directory=str(tmp_path / "recorded"), command_topic="", reference_topic="",
        use_sim_time=True))
    assert rec.on_start(None, Trigger.Response()).success
    # (received, not yet written: without an excitation publisher the recorder keeps them
    # until excitation_discovery s of stamps or ~/stop, which writes them)
    sent = play(context, run, [rec], lambda: sum(rec.received.values()) >= 2 * n,
                lambda: sum(rec.received.values()))
    assert sent == 2 * n            # link + motor states
    stopped = rec.on_stop(None, Trigger.Response())
    assert stopped.success and "missed samples: 0" in stopped.message, stopped.message
    recorded = rec.last_bag
    rec.destroy_node()

    # 2. the recorded bag replayed into the online identifier and a live Identify goal
    online = OnlineIdentifier(context=context, parameter_overrides=params(
        robot="zollo_planar", use_sim_time=True, publish_rate=4.0, block_samples=100))
    identifier = Identifier(context=context, parameter_overrides=params(
        robot="zollo_planar", use_sim_time=True, data_directory=str(tmp_path / "live"),
        log_table=False))
    listener = Node("estimates_listener", context=context)
    got = []
    listener.create_subscription(IdentificationResult, "/online_identifier/estimates",
                                 got.append, LATCHED)
    action = ActionClient(listener, Identify, "/identifier/identify")
    ex = SingleThreadedExecutor(context=context)
    for node in (identifier, listener):
        ex.add_node(node)
    spin_until(ex, lambda: action.server_is_ready(), 10.0)
    sent = action.send_goal_async(Identify.Goal(source="live", duration=3.0))
    spin_until(ex, sent.done, 10.0)
    ex.shutdown()
    live = sent.result().get_result_async()
    # (the replay's /clock stops with it, so the last samples are published on request)
    play(context, recorded, [online, identifier, listener],
         lambda: online.received == 2 * n and online.on_publish() is None
         and online.engine.n_input == n and online.engine.pending == 0    # idle: flushed
         and got and got[-1].samples == online.engine.n_samples
         and live.done(), lambda: online.received, subscribers=2)
    res = live.result().result
    assert res.success, res.message
    assert res.results[0].source.startswith(str(tmp_path / "live" / "live_"))
    from rosbags.rosbag2 import Reader
    with Reader(res.results[0].source) as reader:     # 3 s of stamps at 1 kHz, kept
        counts = {c.topic: c.msgcount for c in reader.connections}
    assert all(2995 <= k <= 3005 for k in counts.values()) and len(counts) == 2, counts
    # the live source counts what it received and lost (DDS sequence numbers) into the bag
    from robot_identification.data import read_bag
    kept = read_bag(res.results[0].source).metadata["recording"]
    assert {t: (c["recorded"], c["lost"]) for t, c in kept.items()} == {
        t: (k, 0) for t, k in counts.items()}, kept
    identifier.destroy_node()
    est = got[-1]
    assert online.engine.gaps == 0 and not est.final and est.estimator == "mrls"
    assert all(p.identified for p in est.parameters)
    # zollo_planar's friction_deadband is 'auto': resolved on the held-back replay, reported
    auto = [d for d in est.diagnostics if d.code == "automatic_settings"]
    assert len(auto) == 1 and "friction_deadband" in auto[0].message, auto

    # 3. the batch identification of the same bag (same filters; least squares)
    batch = identify_streaming(model, recorded, estimator="ols")
    values = np.array([p.estimate for p in est.parameters])
    std = np.array([p.std for p in est.parameters])
    assert [p.name for p in est.parameters] == batch.names
    dev = np.abs(values - batch.estimate.values) / batch.estimate.std
    print(f"max |online - batch| / batch std = {dev.max():.3g} ({batch.names[dev.argmax()]})")
    assert dev.max() < 0.1, dict(zip(batch.names, dev))
    np.testing.assert_allclose(std, batch.estimate.std, rtol=0.05)
    # for the record (not asserted): the identifier's default batch path, zero-phase Butterworth
    from robot_identification.data import load_dataset
    from robot_identification.identification import identify
    butter = identify(model, load_dataset(recorded))
    dev_b = np.abs(values - butter.estimate.values) / butter.estimate.std
    print(f"max |online - Butterworth batch| / its std = {dev_b.max():.3g} "
          f"({butter.names[dev_b.argmax()]}); median {np.median(dev_b):.3g}")
    k = batch.names.index("joint1.stiffness")
    assert abs(values[k] / 3000.0 - 1) < 0.01     # Zollo et al. 2014, Sec. 6.1
    online.destroy_node()
    listener.destroy_node()


def test_replay_at_1x_from_a_separate_process(context, tmp_path):
    """`bag_player` as its own process at the recorded timing (1x, /clock from the bag), the
    online identifier on use_sim_time: nothing lost, no restart, estimates published after
    the replay's clock stopped (steady-time timer; the end of the bag flushed on idle), the
    last one within 1 std of the batch estimate with the same (polynomial-approximation)
    filters on the same bag."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from robot_identification.model import load_robot
    from robot_identification.nodes.online_identifier import OnlineIdentifier
    from robot_identification.simulation import simulate
    from robot_identification.streaming import identify_streaming
    model = load_robot("zollo_planar")
    ds = simulate(model, duration=4.0, seed=3)
    n = ds.n_samples
    bag = write_bag(ds, tmp_path / "simulated")
    online = OnlineIdentifier(context=context, parameter_overrides=params(
        robot="zollo_planar", use_sim_time=True, publish_rate=4.0, block_samples=100))
    listener = Node("estimates_listener_1x", context=context)
    got = []
    listener.create_subscription(IdentificationResult, "/online_identifier/estimates",
                                 got.append, LATCHED)
    ex = SingleThreadedExecutor(context=context)
    for node in (online, listener):
        ex.add_node(node)
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, ROS_DOMAIN_ID=str(DOMAIN_ID), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
               PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", ""))
                                          if p))
    player = subprocess.Popen(
        [sys.executable, "-m", "robot_identification.nodes.bag_player", "--ros-args",
         "-p", f"bag:={bag}", "-p", "rate:=1.0", "-p", "wait_for_subscribers:=1"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        spin_until(ex, lambda: online.received == 2 * n and online.engine is not None
                   and online.engine.pending == 0 and got
                   and got[-1].samples == online.engine.n_samples, 600.0,
                   lambda: (online.received, 2 * n))    # (bounds a hang, not the speed)
        assert player.wait(300) == 0, player.stdout.read()
    finally:
        if player.poll() is None:
            player.kill()
        ex.shutdown()
    assert online.engine.gaps == 0 and online.unpaired == 0 and online.errors == 0
    est = got[-1]
    batch = identify_streaming(model, bag, estimator="ols")
    values = np.array([p.estimate for p in est.parameters])
    dev = np.abs(values - batch.estimate.values) / batch.estimate.std
    print(f"1x replay, separate process: max |online - batch| / batch std = {dev.max():.3g}")
    assert dev.max() < 1.0, dict(zip(batch.names, dev))
    online.destroy_node()
    listener.destroy_node()


def test_drives_off_samples_are_left_out_and_reported(context):
    """A stream whose efforts are exactly 0 while the arm moves (a braked arm, drives off):
    the node leaves those samples out by the batch engine's rule (the core's DrivesOff, the
    count checked against the zeroed samples plus the FIR window) and says so in the
    estimate's diagnostics and on /diagnostics (WARN, ``drives_off_samples``). Real DDS: the
    states published by a node, the estimate and the status received by another."""
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    from robot_identification.model import load_robot
    from robot_identification.nodes.online_identifier import OnlineIdentifier
    from robot_identification.simulation import simulate
    model = load_robot("puma560")
    ds = simulate(model, seed=0, snr_db=80, duration=3.0)
    tau = ds.tau.copy()
    braked = (ds.t >= 1.0) & (ds.t < 1.4)
    speed = np.abs(np.diff(ds.q, axis=0)).max(axis=1) * ds.sample_rate
    assert speed[braked[1:]].min() > 0.01              # the arm moves meanwhile
    tau[braked] = 0.0
    online = OnlineIdentifier(context=context, parameter_overrides=params(
        robot="puma560", joint_states_topic="braked_test/joint_states", publish_rate=1000.0,
        block_samples=100))
    peer = Node("braked_test_peer", context=context)
    pub = peer.create_publisher(JointState, "braked_test/joint_states", QoSProfile(
        history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE))
    got, status = [], []
    peer.create_subscription(IdentificationResult, "/online_identifier/estimates",
                             got.append, LATCHED)
    peer.create_subscription(DiagnosticArray, "/diagnostics", lambda m: status.extend(
        st for st in m.status if st.name == "online_identifier: estimation"), 100)
    ex = SingleThreadedExecutor(context=context)
    for node in (online, peer):
        ex.add_node(node)
    names = list(model.joint_names)
    try:
        spin_until(ex, lambda: pub.get_subscription_count() > 0, 30.0)
        for k in range(ds.n_samples):
            msg = JointState(name=names, position=ds.q[k].tolist(), effort=tau[k].tolist())
            sec, nsec = divmod(int(round(ds.t[k] * 1e9)) + 10**9, 10**9)
            msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nsec
            pub.publish(msg)
            if k % 200 == 199:          # paced by what the node took (no fixed sleep)
                spin_until(ex, lambda k=k: online.received > k - 100, 30.0)
        spin_until(ex, lambda: online.received == ds.n_samples, 30.0)
        online.on_idle()                # the end of the stream: the held-back rows added
        online.on_idle()
        count = int(braked.sum()) + int(online.engine.bank.L)
        spin_until(ex, lambda: got and got[-1].samples == online.engine.n_samples
                   and any(d.code == "drives_off_rows" for d in got[-1].diagnostics), 30.0,
                   lambda: (online.engine.n_samples, got[-1].samples if got else None))
        spin_until(ex, lambda: status and dict((kv.key, kv.value) for kv in status[-1].values)
                   .get("drives_off_samples") == str(count), 30.0,
                   lambda: status[-1] if status else None)
    finally:
        ex.shutdown()
    assert online.engine.neq.drives_off == count
    [d] = [d for d in got[-1].diagnostics if d.code == "drives_off_rows"]
    assert f"{count} of {online.engine.n_samples} samples" in d.message, d.message
    level = status[-1].level
    assert (level[0] if isinstance(level, bytes) else level) == 1      # WARN
    assert "excluded as drives off / braked" in status[-1].message
    online.destroy_node()
    peer.destroy_node()
