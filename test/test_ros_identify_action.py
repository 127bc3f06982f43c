"""identifier as an action server: a client node sends Identify goals over DDS and receives
feedback and typed results; cancel, queueing and refusal work; the node answers parameter
requests while it identifies; the last result is latched on ~/result."""
import threading
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")
pytest.importorskip("robot_identification_interfaces")

from action_msgs.msg import GoalStatus  # noqa: E402
from rcl_interfaces.srv import GetParameters  # noqa: E402
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
DOMAIN_ID = ros_domain_id(148)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """run_a: 9 s of the simulated zollo_planar arm; long: the same run repeated 8 times
    (72 s, for goals that must still be running when the test acts)."""
    from robot_identification.model import load_robot
    from robot_identification.simulation import simulate
    model = load_robot("zollo_planar")
    ds = simulate(model)
    folder = tmp_path_factory.mktemp("data")
    write_bag(ds, folder / "run_a")
    reps = 8
    dt = float(ds.t[1] - ds.t[0])
    span = ds.t[-1] + dt
    long = type(ds)(t=np.concatenate([ds.t + k * span for k in range(reps)]),
                    q=np.tile(ds.q, (reps, 1)), tau=np.tile(ds.tau, (reps, 1)),
                    theta=np.tile(ds.theta, (reps, 1)), joint_names=ds.joint_names)
    write_bag(long, folder / "long")
    return folder


@pytest.fixture(scope="module")
def graph(context, data, tmp_path_factory):
    """The identifier spun by its own executor thread; a client node spun by the test."""
    from robot_identification.nodes.identifier import Identifier
    out = tmp_path_factory.mktemp("out")
    node = Identifier(context=context, parameter_overrides=[
        Parameter("data_directory", value=str(data)),
        Parameter("results_file", value=str(out / "results.yaml")),
        Parameter("compare_with_nominal", value=True), Parameter("log_table", value=False),
        Parameter("feedback_period", value=0.02), Parameter("chunk_samples", value=1000)])
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    stop = threading.Event()
    thread = threading.Thread(target=lambda: [ex.spin_once(timeout_sec=0.05)
                                              for _ in iter(stop.is_set, True)])
    thread.start()
    client = Node("identify_client", context=context)
    cex = SingleThreadedExecutor(context=context)
    cex.add_node(client)
    action = ActionClient(client, Identify, "/identifier/identify")
    assert action.wait_for_server(timeout_sec=patience(10.0))
    yield node, client, cex, action, out
    stop.set()
    thread.join()
    node.shutdown()
    client.destroy_node()
    node.destroy_node()


def spin_until(cex, predicate, timeout=30.0):
    deadline = time.monotonic() + patience(timeout)
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        cex.spin_once(timeout_sec=0.05)


def send(cex, action, feedback=None, **goal):
    fut = action.send_goal_async(Identify.Goal(**goal), feedback_callback=feedback)
    spin_until(cex, fut.done)
    return fut.result()


def result_of(cex, handle, timeout=60.0):
    fut = handle.get_result_async()
    spin_until(cex, fut.done, timeout)
    return fut.result()


def test_goal_gives_feedback_and_typed_result_latched_on_topic(graph):
    node, client, cex, action, out = graph
    feedback = []
    handle = send(cex, action, lambda m: feedback.append(m.feedback), bag="run_a",
                  estimators=["ols", "wls"])
    assert handle.accepted
    res = result_of(cex, handle)
    assert res.status == GoalStatus.STATUS_SUCCEEDED, res.result.message
    r = res.result
    spin_until(cex, lambda: feedback, 10.0)      # topic and service may arrive in any order
    assert r.success and [x.estimator for x in r.results] == ["ols", "wls"]
    assert feedback and all(0.0 <= f.progress <= 1.0 for f in feedback)
    for x in r.results:
        p = {b.name: b for b in x.parameters}
        # the simulator's stiffness (Zollo et al. 2014, Sec. 6.1: K = 3000, 1800 N*m/rad)
        for name, true in (("joint1.stiffness", 3000.0), ("joint2.stiffness", 1800.0)):
            assert abs(p[name].estimate / true - 1) < 0.01 and p[name].true_value == true
            assert 0 < p[name].std < 0.01 * true and p[name].identified
        assert x.final and x.samples > 1000 and x.robot == "zollo_planar"
        assert all(d.severity in ("info", "warning", "error") for d in x.diagnostics)
    assert r.results_file == str((out / "results.yaml").resolve())
    assert (out / "results.yaml").is_file() and (out / "results_wls.yaml").is_file()
    # a subscriber that joins after the run still gets the (first estimator's) result
    got = []
    client.create_subscription(IdentificationResult, "/identifier/result", got.append, LATCHED)
    spin_until(cex, lambda: got, 10.0)
    assert got[0].estimator == "ols" and len(got[0].parameters) == len(r.results[0].parameters)


def test_goal_estimator_auto_names_its_choice(graph):
    """``estimators: [auto, ols]``: the result of auto's choice first (the elastic arm: wls,
    with the reason in results.yaml and a diagnostic), then ols, each in its file."""
    import yaml
    node, client, cex, action, out = graph
    res = result_of(cex, send(cex, action, bag="run_a", estimators=["auto", "ols"],
                              results_file=str(out / "auto.yaml")))
    assert res.status == GoalStatus.STATUS_SUCCEEDED, res.result.message
    r = res.result
    assert r.success and [x.estimator for x in r.results] == ["wls", "ols"]
    assert "estimator_auto" in {d.code for d in r.results[0].diagnostics}
    doc = yaml.safe_load((out / "auto.yaml").read_text())
    assert doc["settings"]["estimator"] == "wls"
    assert doc["settings"]["estimator_selection"]["why"].startswith("an elastic arm")
    assert (out / "auto_ols.yaml").is_file()


def test_busy_identifier_answers_queues_refuses_and_cancels(graph):
    node, client, cex, action, out = graph
    node.set_parameters([Parameter("stream_above_samples", value=0)])  # chunked: cancellable
    fa, fb = [], []
    a = send(cex, action, lambda m: fa.append(m.feedback), bag="long", estimators=["ols"])
    b = send(cex, action, lambda m: fb.append(m.feedback), bag="run_a")
    assert a.accepted and b.accepted
    spin_until(cex, lambda: any(f.stage == "estimating" and f.progress > 0 for f in fa))
    spin_until(cex, lambda: any(f.stage == "queued" for f in fb))
    # parameters answer while the worker identifies
    params = client.create_client(GetParameters, "/identifier/get_parameters")
    fut = params.call_async(GetParameters.Request(names=["max_queued_goals"]))
    spin_until(cex, fut.done, 10.0)
    assert fut.result().values[0].integer_value == 4
    # a third goal beyond max_queued_goals is refused
    node.set_parameters([Parameter("max_queued_goals", value=1)])
    assert not send(cex, action, bag="run_a").accepted
    # the queued goal is cancelled without running, then the running one
    for handle, stage in ((b, "queued"), (a, "estimating")):
        cancel = handle.cancel_goal_async()
        spin_until(cex, cancel.done)
        assert len(cancel.result().goals_canceling) == 1
        res = result_of(cex, handle)
        assert res.status == GoalStatus.STATUS_CANCELED and not res.result.success
    assert "queued" in result_of(cex, b).result.message
    assert not any(f.stage != "queued" for f in fb)
    node.set_parameters([Parameter("stream_above_samples", value=2_000_000),
                         Parameter("max_queued_goals", value=4)])


def test_bad_goals_abort_with_the_reason(graph):
    node, client, cex, action, out = graph
    for goal, reason in ((dict(bag="../outside"), "outside the data directory"),
                         (dict(bag="run_a", estimators=["magic"]), "magic"),
                         (dict(source="live", duration=0.0), "duration"),
                         (dict(source="tape"), "unknown source")):
        res = result_of(cex, send(cex, action, **goal))
        assert res.status == GoalStatus.STATUS_ABORTED and reason in res.result.message, goal


def test_trigger_service_for_scripts(graph):
    node, client, cex, action, out = graph
    node.set_parameters([Parameter("bag", value="run_a")])
    srv = client.create_client(Trigger, "/identifier/identify")
    assert srv.wait_for_service(timeout_sec=patience(10.0))
    fut = srv.call_async(Trigger.Request())
    spin_until(cex, fut.done, 60.0)
    assert fut.result().success, fut.result().message
    assert fut.result().message == str((out / "results.yaml").resolve())
    names = list(node.get_parameter("result.names").value)
    est = node.get_parameter("result.estimates").value
    assert abs(est[names.index("joint1.stiffness")] / 3000.0 - 1) < 0.01


def test_readme_python_client(graph):
    """The 20-line client of README.md, run as its own process against the identifier."""
    import os
    import re
    import subprocess
    import sys
    from pathlib import Path
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    code = next(c for c in re.findall(r"```python\n(.*?)```", readme, re.S) if "Identify" in c)
    assert len(code.strip().splitlines()) <= 22
    env = dict(os.environ, ROS_DOMAIN_ID=str(DOMAIN_ID), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    out = subprocess.run([sys.executable, "-c", code.replace('bag=""', 'bag="run_a"')],
                         env=env, capture_output=True, text=True, timeout=patience(120))
    assert out.returncode == 0, out.stderr
    assert "joint1.stiffness" in out.stdout, out.stdout
