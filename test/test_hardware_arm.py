"""The hardware-like arm without ROS (robot_identification.nodes._hardware.HardwareArm):
free-running in whole periods, the last command applied until a new one (checked against the
core Simulator stepped by hand with the same torques), catch-up after a stall, latency,
hardware command timeout and a command's deadline -> brakes (the arm at rest where it was)."""
import numpy as np
import pytest

from robot_identification.errors import DataError
from robot_identification.model import load_robot
from robot_identification.nodes._hardware import HardwareArm, make_physics
from robot_identification.simulation import Simulator

RATE = 500.0


@pytest.fixture(scope="module")
def model():
    return load_robot("puma560")


def reference(model, q0, torques):
    """The core simulator stepped by hand: one torque per period."""
    sim = Simulator(model, rate_hz=RATE, quantise=False)
    sim.reset(np.asarray(q0))
    for u in torques:
        sim.step(u)
    return sim.state


def test_last_command_held_and_catch_up(model):
    q0 = np.full(model.n, 0.2)
    arm = HardwareArm(make_physics(model, RATE), q0)
    arm.start(0.0)
    assert arm.advance(0.0) == []
    out = arm.advance(0.0101)           # brakes until the first command: at rest
    assert len(out) == 5 and all(np.all(s["dq"] == 0) for s in out)
    u1, u2 = np.linspace(-3, 3, model.n), np.linspace(2, -1, model.n)
    arm.command(u1, 0.0105)
    out = arm.advance(0.0205)           # 5 periods, the first starts at 0.010: u1 from 0.012
    assert len(out) == 5 and not np.any(out[0]["effort"]) and np.all(out[1]["effort"] == u1)
    arm.command(u2, 0.0301)             # a stall: the next call steps 10 periods at once
    out += arm.advance(0.0405)
    assert len(out) == 15 and arm.longest_catch_up == 10
    np.testing.assert_allclose(out[-1]["t"], 0.040 + 1e-9, atol=1e-6)
    # the brakes hold the arm at rest until u1 takes effect (period starting 0.012), u1 until
    # the period starting 0.030, u2 from 0.032 (the physics steps only while released)
    torques = [u1] * 10 + [u2] * 4
    expect = reference(model, q0, torques)
    sim_states = out[-1]
    np.testing.assert_allclose(sim_states["q"], expect.q, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sim_states["dq"], expect.dq, rtol=1e-12, atol=1e-12)
    assert np.all(out[-1]["effort"] == u2)


def test_latency_timeout_and_deadline_engage_the_brakes(model):
    q0 = np.zeros(model.n)
    u = np.full(model.n, 1.0)
    arm = HardwareArm(make_physics(model, RATE), q0, latency=0.004, command_timeout=0.02)
    arm.start(0.0)
    arm.command(u, 0.0)
    out = arm.advance(0.006)            # periods starting 0, 0.002 (braked), 0.004 (u)
    assert [bool(np.any(s["effort"])) for s in out] == [False, False, True]
    out = arm.advance(0.05)
    moving = [s for s in out if np.any(s["dq"] != 0)]
    assert moving and "command timeout" in arm.braked and arm.timeouts == 1
    assert np.all(out[-1]["dq"] == 0) and np.all(out[-1]["effort"] == 0)
    held = out[-1]["q"]
    np.testing.assert_array_equal(arm.advance(0.1)[-1]["q"], held)      # held where it was
    # a new command releases the brakes; its deadline ends it again
    arm = HardwareArm(make_physics(model, RATE), q0)
    arm.start(0.0)
    arm.command(u, 0.0, deadline=0.01)
    out = arm.advance(0.03)
    assert "deadline" in arm.braked and arm.late_commands == 1
    assert np.all(out[-1]["dq"] == 0)
    assert sum(bool(np.any(s["effort"])) for s in out) == 6     # periods starting 0..0.010
    with pytest.raises(DataError, match="finite"):
        arm.command([np.nan] * model.n, 0.04)
