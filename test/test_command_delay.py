"""The command delay a PD loop tolerates (``simulation.tolerated_command_delay``), checked
against the nonlinear closed loop with the delay injected: the simulator (friction and
encoders as configured) holding each command one period later than the lockstep loop does.

Why the free-running elastic arm diverged (docs/ros.md, "Overload"): the De Luca-Siciliano-
Zollo PD on the motor positions of zollo_planar (kp 10000 N*m/rad on 0.21 kg*m^2 of
link-referred rotor inertia, K = 3000 N*m/rad) tolerates no period of command delay; rigid
arms at their 5 Hz designs tolerate several.
"""
import numpy as np

from robot_identification.errors import DataError
from robot_identification.excitation import trajectory_from_config
from robot_identification.model import load_robot
from robot_identification.simulation import (Simulator, make_controller,
                                             tolerated_command_delay)


def peak_velocity(model, delay, periods, law=None, offset=0.02):
    """Peak |dq| [rad/s] of the closed loop holding a set point ``offset`` rad from the
    start of the config's excitation, each command held ``delay`` periods late (inf once
    the integration diverged)."""
    law = law or make_controller(model)
    q0 = trajectory_from_config(model).evaluate(0.0)[0][0]
    sim = Simulator(model)
    sim.reset(q0)
    sent, peak = [], 0.0
    for _ in range(periods):
        sent.append(law(q0 + offset, np.zeros(model.n), sim.measure()))
        try:
            sim.step(sent[max(0, len(sent) - 1 - delay)])
        except DataError:
            return np.inf
        peak = max(peak, float(np.max(np.abs(sim.state.dq))))
    return peak


def test_elastic_motor_loop_tolerates_no_delay():
    model = load_robot("zollo_planar")
    assert tolerated_command_delay(model) == 0
    limit = min(j.limits.velocity for j in model.config.joints)        # 3 rad/s
    assert peak_velocity(model, 0, 400) < 0.5 * limit                   # lockstep: holds
    assert peak_velocity(model, 1, 400) > 1.5 * limit   # one period late: the velocity trip


def test_rigid_loop_tolerates_several_periods():
    model = load_robot("puma560")
    d = tolerated_command_delay(model)
    assert d >= 5
    limit = min(j.limits.velocity for j in model.config.joints)
    assert peak_velocity(model, d, 300) < 0.5 * limit


def test_unstable_without_delay_is_minus_one():
    model = load_robot("zollo_planar")
    # a D gain that makes the discretised motor loop unstable even in lockstep
    # (kd dt / B = 600 * 0.001 / 0.2118 = 2.8 > 2)
    law = make_controller(model, kd=[600.0, 600.0], saturate=False)
    assert tolerated_command_delay(model, law) == -1
    assert peak_velocity(model, 0, 200, law) > 10.0
