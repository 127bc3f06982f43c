"""Managed nodes and lifecycle_manager, in process over real DDS (own ROS_DOMAIN_ID): with
``managed: true`` the excitation publisher and the recorder wait in ``unconfigured`` and refuse
``~/start``; lifecycle_manager brings them to ``active`` (also when a transition's answer is
lost, as Fast DDS drops answers to a client it has not matched yet, ros2/rmw_fastrtps#842),
says so on /diagnostics, and leaves a node deactivated on purpose inactive."""

import pytest

rclpy = pytest.importorskip("rclpy")

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.task import Future  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

pytestmark = pytest.mark.ros
from conftest import ros_domain_id, wait_until  # noqa: E402
DOMAIN_ID = ros_domain_id(156)


def spin_until(ex, cond, timeout=30.0, what="condition"):
    wait_until(ex, cond, what, timeout, step=0.02)


def test_lifecycle_manager_activates_managed_nodes(context, tmp_path):
    from robot_identification.nodes.excitation_publisher import ExcitationPublisher
    from robot_identification.nodes.lifecycle_manager import LifecycleManager
    from robot_identification.nodes.recorder import Recorder
    managed = [Parameter("managed", value=True)]
    excitation = ExcitationPublisher(context=context, parameter_overrides=managed)
    recorder = Recorder(context=context, parameter_overrides=managed + [
        Parameter("data_directory", value=str(tmp_path))])
    assert excitation.lifecycle == recorder.lifecycle == "unconfigured"
    refused = excitation.on_start(Trigger.Request(), Trigger.Response())
    assert not refused.success and "unconfigured" in refused.message, refused.message
    manager = LifecycleManager(context=context, parameter_overrides=[
        Parameter("node_names", value=["excitation_publisher", "recorder"]),
        Parameter("response_timeout", value=0.5), Parameter("diagnostics_period", value=0.1),
        Parameter("check_period", value=0.1)])
    # the first change_state answer for the recorder is lost: the request goes out (the
    # node configures) but its answer never arrives
    m = next(m for m in manager.nodes if m.name == "recorder")
    real, lost = m.change.call_async, []

    def lose_first_answer(request):
        future = real(request)
        if not lost:
            lost.append(request)
            return Future()
        return future
    m.change.call_async = lose_first_answer
    client = rclpy.create_node("lifecycle_test_client", context=context)
    status = {}
    client.create_subscription(DiagnosticArray, "/diagnostics", lambda msg: status.update(
        {s.name: s for s in msg.status}), 100)
    ex = SingleThreadedExecutor(context=context)
    for node in (excitation, recorder, manager, client):
        ex.add_node(node)
    name = "lifecycle_manager: lifecycle"
    try:
        spin_until(ex, lambda: excitation.lifecycle == recorder.lifecycle == "active",
                   what="both active")
        assert lost and m.unanswered >= 1
        spin_until(ex, lambda: name in status and status[name].message == "all active",
                   what="'all active' on /diagnostics")
        values = {kv.key: kv.value for kv in status[name].values}
        assert values["recorder"] == values["excitation_publisher"] == "active", values
        # deactivated on purpose: left inactive, WARN
        excitation.trigger_deactivate()
        spin_until(ex, lambda: "excitation_publisher inactive" in status[name].message,
                   what="inactive reported")
        assert status[name].level == DiagnosticStatus.WARN and excitation.lifecycle == "inactive"
        for _ in range(20):
            ex.spin_once(timeout_sec=0.02)
        assert excitation.lifecycle == "inactive"
    finally:
        ex.shutdown()
        for node in (client, manager, recorder, excitation):
            if node is recorder:
                recorder.shutdown()
            node.destroy_node()
