"""Sign and swap findings on a short recording (issue #27): the first 2-3 s of the starter
excitation, simulated from the URDF itself (correct data), gave error-severity
``torque_sign`` / ``joints_swapped`` findings (the shipped PUMA 560 at 2 and 2.5 s: "joints
joint4 and joint6: columns swapped"; test/arm7 at 2 and 3 s: "torque sign reversed" of j4,
j2). A reading of a refit on half of such a recording scored better on the other half, but
fitted its own half worse: the fit of a short stretch extrapolates, and another reading only
moved the parameters it leaves undetermined. Such a reading is now a warning that says so,
and a real fault on the same 2 s, which also fits better in-sample, is still an error naming
its joint.
"""
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from robot_identification.diagnostics import recording_summary
from robot_identification.model import load_robot
from robot_identification.simulation import simulate

CODES = ("torque_sign", "joints_swapped")
ARM7 = Path(__file__).resolve().parent / "arm7.yaml"


def _model(robot):
    return load_robot(config=ARM7) if robot == "arm7" else load_robot(robot)


def _found(model, ds):
    return [d for d in recording_summary(model, ds)["diagnostics"] if d.code in CODES]


@pytest.mark.filterwarnings("ignore:simulate")
@pytest.mark.parametrize("robot, duration", [("puma560", 2.0), ("puma560", 2.5),
                                             ("arm7", 2.0), ("arm7", 3.0)])
def test_correct_short_recording_gives_no_sign_or_swap_error(robot, duration):
    model = _model(robot)
    ds = simulate(model, duration=duration, seed=0)
    found = _found(model, ds)
    assert not [d for d in found if d.severity == "error"], found
    # the reading is named, and why it is not decided
    warned = [d for d in found if d.severity == "warning" and "too short" in d.message]
    assert warned and all(d.subject for d in warned), found


@pytest.mark.filterwarnings("ignore:simulate")
def test_reversed_joint_of_a_short_recording_is_still_an_error():
    model = load_robot("puma560")
    ds = simulate(model, duration=2.0, seed=0)
    s = np.ones(model.n)
    s[1] = -1.0
    reversed_joint2 = replace(ds, **{a: getattr(ds, a) * s for a in ("q", "dq", "ddq", "tau")
                                     if getattr(ds, a) is not None})
    errors = [d for d in _found(model, reversed_joint2) if d.severity == "error"]
    assert [(d.code, d.subject) for d in errors] == [("torque_sign", "joint2")], errors
    assert "direction reversed" in errors[0].message
