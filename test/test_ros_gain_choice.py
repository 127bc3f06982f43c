"""pd_controller's gains on an elastic arm (issue #24): gains that do not tolerate the
command delay of the robot (``command_delay_periods``, auto 1 in real time) are scaled down
with a warning and on ``/diagnostics``, or refused with ``stabilise_gains: false``; a measured
loop delay scales them on the discretised elastic loop, and a delay no scale tolerates is a
fault whose hold uses the most tolerant gains. The chosen gains are checked against the
nonlinear loop with the delay injected (``peak_velocity``, ``tracking_peak_velocity`` of
test_command_delay.py: the core simulator, Stribeck friction), not against the linearisation
they were chosen on.

In process, no DDS traffic: the node's hooks are called directly."""
import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.parameter import Parameter  # noqa: E402

from robot_identification.errors import ConfigError  # noqa: E402
from robot_identification.simulation import make_controller  # noqa: E402

from conftest import ros_domain_id  # noqa: E402
from test_command_delay import peak_velocity, tracking_peak_velocity  # noqa: E402

DOMAIN_ID = ros_domain_id(161)


def controller(context, **params):
    from robot_identification.nodes.pd_controller import PDController
    return PDController(context=context, parameter_overrides=[
        Parameter(k, value=v) for k, v in params.items()])


def test_config_gains_unstable_at_250_hz_are_scaled_and_said(context):
    ctrl = controller(context, rate_hz=250.0, lockstep=False)
    try:
        c = ctrl.gain_choice
        assert c.changed and c.ok and c.required == 1 and c.given_tolerated == -1
        np.testing.assert_allclose(ctrl.law.kp, [10000.0 * c.scale ** 2, 6000.0 * c.scale ** 2])
        np.testing.assert_allclose(ctrl.law.kd, [50.0 * c.scale, 30.0 * c.scale])
        values = ctrl.status_values()
        assert values["gains_stabilised"] == "true" and values["required_delay_periods"] == 1
        text = values["gain_choice"]
        assert "the robot config's gains kp=[1e+04, 6000] kd=[50, 30]" in text
        assert "250 Hz (unstable even without delay), 1 required: using kp=" in text
        # independent check: the nonlinear loop at 250 Hz, every command a period late
        model = ctrl.model
        limit = min(j.limits.velocity for j in model.config.joints)
        law = make_controller(model, ctrl.law.kp, ctrl.law.kd)
        assert peak_velocity(model, 1, 1000, law, rate_hz=250.0) < 0.5 * limit
    finally:
        ctrl.destroy_node()


def test_with_the_feedforward_the_elastic_gains_are_the_core_closed_loops(context):
    """Real time, ``feedforward: true``: the config's gains (a growing pole at 250 Hz) are
    replaced by the core closed loop's (simulation.closed_loop_gains: the damped design at the
    rate), then scaled for the command delay; the choice says so."""
    from robot_identification.simulation import closed_loop_gains
    ctrl = controller(context, rate_hz=250.0, lockstep=False, feedforward=True)
    try:
        c = ctrl.gain_choice
        core = closed_loop_gains(ctrl.model, rate_hz=250.0)
        assert core.source == "damped design"
        np.testing.assert_allclose(c.given_kp, core.kp)
        np.testing.assert_allclose(c.given_kd, core.kd)
        assert c.changed and c.ok and c.required == 1 and c.given_tolerated == 0
        np.testing.assert_allclose(ctrl.law.kp, core.kp * c.scale ** 2)
        np.testing.assert_allclose(ctrl.law.kd, core.kd * c.scale)
        text = ctrl.status_values()["gain_choice"]
        assert "the damped design's gains kp=[2222, 25.21] kd=[77.31, 7.412]" in text
        # independent check: the nonlinear loop at 250 Hz, every command a period late
        limit = min(j.limits.velocity for j in ctrl.model.config.joints)
        law = make_controller(ctrl.model, ctrl.law.kp, ctrl.law.kd)
        assert peak_velocity(ctrl.model, 1, 1000, law, rate_hz=250.0) < 0.5 * limit
    finally:
        ctrl.destroy_node()


def test_gains_that_tolerate_the_delay_are_kept(context):
    ctrl = controller(context, rate_hz=1000.0, lockstep=True)
    try:
        assert not ctrl.gain_choice.changed
        np.testing.assert_array_equal(ctrl.law.kp, [10000.0, 6000.0])
        assert ctrl.status_values()["gains_stabilised"] == "false"
    finally:
        ctrl.destroy_node()


def test_unstable_gains_are_refused_when_the_user_forbids_the_change(context):
    with pytest.raises(ConfigError, match=r"kp=\[1e\+04, 6000\].*refused \(stabilise_gains"):
        controller(context, rate_hz=250.0, lockstep=False, stabilise_gains=False)


def test_a_measured_loop_delay_scales_the_elastic_gains_on_the_discrete_loop(context):
    ctrl = controller(context, rate_hz=250.0, lockstep=False)
    try:
        start = ctrl.gain_scale
        ctrl.elastic_delay(0.027)            # 27 ms: 6 periods at 250 Hz (measured, study)
        ctrl._elastic_job.join()
        ctrl.apply_elastic_choice()
        assert ctrl.fault is None and ctrl.gain_scale < start
        assert ctrl.tolerated_delay >= 6 and ctrl.gain_changes == 1
        model = ctrl.model
        limit = min(j.limits.velocity for j in model.config.joints)
        law = make_controller(model, ctrl.law.kp, ctrl.law.kd)
        assert peak_velocity(model, 6, 1000, law, rate_hz=250.0) < 0.5 * limit
        assert tracking_peak_velocity(model, 6, law, 250.0) < 1.5 * limit
        # the start-up gains with that delay: the nonlinear loop following the excitation
        # runs away (held at rest, its friction damps it)
        start_law = make_controller(model, ctrl.base_law.kp * start ** 2,
                                    ctrl.base_law.kd * start)
        assert tracking_peak_velocity(model, 6, start_law, 250.0) == np.inf
    finally:
        ctrl.destroy_node()


def test_a_delay_no_gains_tolerate_is_a_fault(context, monkeypatch):
    from robot_identification.nodes import _control_loop
    ctrl = controller(context, rate_hz=250.0, lockstep=False)
    try:
        c = ctrl.gain_choice
        worst = type(c)(c.kp * 1e-6, c.kd * 1e-3, 1e-3, 30, c.kp, c.kd, 1, 50,
                        250.0)
        monkeypatch.setattr(_control_loop, "delay_tolerant_gains", lambda *a, **k: worst)
        ctrl.elastic_delay(0.1)
        ctrl._elastic_job.join()
        ctrl.apply_elastic_choice()
        assert ctrl.fault and "loop delay 100.0 ms" in ctrl.fault
        assert "no bandwidth scale" in ctrl.fault
        np.testing.assert_allclose(ctrl.law.kp, worst.kp, rtol=1e-9)
    finally:
        ctrl.destroy_node()


def test_a_delay_beyond_the_checked_periods_is_a_fault(context):
    ctrl = controller(context, rate_hz=250.0, lockstep=False)
    try:
        ctrl.elastic_delay(0.2)             # 49 periods at 250 Hz
        ctrl._elastic_job.join()
        ctrl.apply_elastic_choice()
        assert ctrl.fault and "is 49 control periods, beyond the 40 checked" in ctrl.fault
        assert ctrl.tolerated_delay == 40          # the hold's gains tolerate 40 periods
    finally:
        ctrl.destroy_node()


def test_the_feedforward_table_is_a_parameter(context):
    """``feedforward_table`` (default true) switches the elastic feed-forward's table off: the
    loop then computes it on-line (test_control_loop_elastic_feedforward.py: with the
    attribute false no command is tabled)."""
    for params, expected in (({}, True), ({"feedforward_table": False}, False)):
        ctrl = controller(context, rate_hz=250.0, lockstep=False, feedforward=True, **params)
        try:
            assert ctrl.feedforward_table is expected
            assert ctrl.get_parameter("feedforward_table").value is expected
        finally:
            ctrl.destroy_node()
