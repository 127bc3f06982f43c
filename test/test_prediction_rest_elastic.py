"""Motor torque predicted on an elastic arm at rest and moving slowly (what the held-out
slow and point-to-point runs of benchmarks/heldout_motions_elastic.py consist of): the motor
rows of Zollo et al. (2014), eq. 13, checked against pinocchio's gravity torque and the
config's stiffness and friction (independent of the identification)."""
from dataclasses import replace

import numpy as np
import pytest

from robot_identification.model import load_robot
from robot_identification.identification import identify
from robot_identification.simulation import simulate
from robot_identification.validation import validate

pytestmark = pytest.mark.slow

B = 800                                          # samples per block (1 kHz)
STOP = 1e-2                                      # rad/s, the stop velocity (ramp width)


@pytest.fixture(scope="module")
def planar():
    model = load_robot("zollo_planar")
    run = simulate(model, duration=2.0, seed=0, friction="regressor")
    n = model.n
    s = replace(model.config.identification, velocity_threshold=0.0, cutoff_hz=20.0,
                friction_deadband=(1e-3,) * n, stop_velocity=(STOP,) * n, drop_reversals=True)
    return model, run, s, identify(model, run, s)


def hold(model, run):
    """The arm still at its start (link at rest, motors deflected by the gravity torque:
    theta - q = K^-1 g(q), pinocchio), each motor moving at +3 x the stop velocity, then
    creeping at +-0.3 x (flickering sign), then moving at -3 x, then creeping again;
    measured accelerations 0."""
    import pinocchio as pin
    n, q0 = model.n, run.q[0]
    g = pin.computeGeneralizedGravity(model.pin_model, model.pin_model.createData(),
                                      model.pin_configuration(q0))[model.velocity_indices]
    K = np.array([j.drive["stiffness"] for j in model.config.joints])
    creep = np.tile(np.repeat([1.0, -1.0], B // 4), 2)
    v = STOP * np.concatenate([np.full(B, 3.0), 0.3 * creep, np.full(B, -3.0), 0.3 * creep])
    N = v.size
    data = replace(run, t=np.arange(N) * 1e-3, q=np.tile(q0, (N, 1)),
                   theta=np.tile(q0 + g / K, (N, 1)), dq=np.zeros((N, n)),
                   ddq=np.zeros((N, n)), dtheta=np.tile(v[:, None], (1, n)),
                   ddtheta=np.zeros((N, n)), tau=np.zeros((N, n)),
                   metadata=dict(run.metadata, source="hold"))
    return data, g, v


def test_motor_torque_at_rest_and_moving(planar):
    """Predicted motor torque away from the filter's settling at the blocks' edges: gravity
    (pinocchio, carried by the spring) + viscous + f_c sign(dtheta) while moving, + f_c
    dtheta / stop velocity while creeping (0.3 f_c following the flicker, not +-f_c)."""
    model, run, s, res = planar
    data, g, v = hold(model, run)
    files = validate(model, res.base, {"truth": res.true_values}, [data], s,
                     keep_signals=True)
    pred = files[0]["signals"]["predicted"]["truth"]
    fc = np.array([j.drive["coulomb"] for j in model.config.joints])
    fv = np.array([j.drive["viscous"] for j in model.config.joints])
    quarter = B // 4
    rows = np.concatenate([np.arange(lo + 70, lo + quarter - 70)
                           for lo in range(quarter, 4 * B - quarter, quarter)])
    ramp = np.clip(v[rows] / STOP, -1.0, 1.0)[:, None]
    want = g + fv * v[rows][:, None] + fc * ramp
    assert np.all(np.abs(pred[rows] - want) < 0.05 * fc)
    assert np.all(np.abs(pred[rows] - g) > 0.25 * fc)       # friction is predicted at all
