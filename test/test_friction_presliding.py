"""The prediction's Coulomb friction state with pre-sliding memory (validation.presliding_state,
a Dahl model reset at stops) and its automatic choice on the identification data
(``friction_presliding: auto``, validation.select_presliding)."""
from dataclasses import replace

import numpy as np
import pytest

from robot_identification.data import Dataset
from robot_identification.model import load_robot
from robot_identification.identification import identify
from robot_identification.identification import presliding_state, settings_from_results
from robot_identification.validation import validate

pytestmark = pytest.mark.slow


def dahl_ode(x, moving, delta, substeps=200):
    """Independent reference: explicit Euler of dz/dx = (1 - z sign(dx)) / delta over each
    position increment cut into ``substeps`` (Dahl 1968, exponential form), z = 0 at t = 0
    and reset to 0 where the joint stops (one joint)."""
    z, out = 0.0, np.zeros(len(x))
    for k in range(1, len(x)):
        if not moving[k] and moving[k - 1]:
            z = 0.0
        if moving[k]:
            h = (x[k] - x[k - 1]) / substeps
            for _ in range(substeps):
                z += (1.0 - z * np.sign(h)) * h / delta
        out[k] = z
    return out


def test_state_is_the_dahl_model_while_sliding_and_reset_at_stops():
    t = np.arange(0.0, 4.0, 0.002)
    x = 2e-3 * np.sin(2 * np.pi * t)                   # reversals every 0.5 s
    x[1000:1400] = x[1000]                              # a stop of 0.8 s
    v = np.gradient(x, t)
    moving = np.abs(v) > 1e-4
    direction = np.where(moving, np.sign(v), 0)[:, None]
    delta = 4e-4
    got = presliding_state(x[:, None], direction, delta)[:, 0]
    want = dahl_ode(x, moving, delta)
    assert np.max(np.abs(got - want)) < 0.01
    # crossing zero over a few delta after each reversal, not a step (sign(v) would be)
    assert np.all(np.abs(got) <= 1.0)
    assert np.all(got[1010:1390] == 0.0)               # stopped: reset, nothing mobilised


def test_a_count_flickering_at_rest_does_not_mobilise_friction_a_creep_does():
    """At rest the state follows the displacement since the stop less the position jitter:
    a count going back and forth (the UR10e logs' 1e-4 rad) leaves it at 0; a joint that
    creeps 20 counts under the motion of the others mobilises its friction that way."""
    count, delta, jitter = 1e-4, 5e-4, 2e-4
    n = 600
    flicker = 0.3 + count * (np.arange(n) % 7 == 0)
    creep = 0.3 - np.linspace(0.0, 20 * count, n)
    x = np.stack([flicker, creep], axis=1)
    z = presliding_state(x, np.zeros((n, 2), dtype=int), delta, jitter)
    assert np.all(z[:, 0] == 0.0)
    want = -(1.0 - np.exp(-(20 * count - jitter) / delta))
    assert z[-1, 1] == pytest.approx(want, rel=1e-9)
    assert want < -0.97


@pytest.fixture(scope="module")
def crafted():
    """UR10e motion (Fourier, then a point-to-point phase where joints stop while others
    move) with torque = pinocchio rnea + viscous + offset + f_c z, z a Dahl state of
    pre-sliding displacement 1e-3 rad (reference ODE above) reset where a joint is held
    (its reversals pass without a reset)."""
    import pinocchio as pin
    model = load_robot("ur10e")
    fc = np.array([10.0, 12.0, 6.0, 2.5, 2.5, 2.0])
    fv = np.array([8.0, 8.0, 5.0, 2.0, 2.0, 2.0])

    def run(seed, duration=24.0, rate=200.0):
        rng = np.random.default_rng(seed)
        t = np.arange(0.0, duration, 1.0 / rate)
        n = model.n
        q, held = np.zeros((len(t), n)), np.zeros((len(t), n), dtype=bool)
        w = 2 * np.pi * 0.1
        half, ramp = duration / 2, 0.5
        for j in range(n):
            # second half: joint j holds still in its own window while the others move
            # (its clock stops: raised-cosine ramps keep the acceleration continuous)
            lo = half + j * half / n
            hi = lo + half / (2 * n)
            up = np.clip((t - lo) / ramp, 0, 1)
            down = np.clip((hi - t) / ramp, 0, 1)
            rate = 1.0 - np.minimum(np.sin(np.pi / 2 * up) ** 2, np.sin(np.pi / 2 * down) ** 2)
            held[:, j] = rate < 1e-3
            clock = np.concatenate([[0.0], np.cumsum(0.5 * (rate[1:] + rate[:-1])
                                                     * np.diff(t))])
            a, b = rng.normal(0, 0.25, 4), rng.normal(0, 0.25, 4)
            for k in range(4):
                q[:, j] += (a[k] * np.sin((k + 1) * w * clock)
                            + b[k] * np.cos((k + 1) * w * clock)) / (k + 1)
        q = np.round(q / 1e-6) * 1e-6                                  # encoder counts
        dq = np.gradient(q, t, axis=0)
        ddq = np.gradient(dq, t, axis=0)
        z = np.stack([dahl_ode(q[:, j], ~held[:, j], 1e-3, substeps=20)
                      for j in range(n)], axis=1)
        data = model.pin_model.createData()
        tau = np.array([pin.rnea(model.pin_model, data, model.pin_configuration(q[k]),
                                 model.to_pin_v(dq[k]), model.to_pin_v(ddq[k])
                                 )[model.velocity_indices] for k in range(len(t))])
        tau += fv * dq + fc * z + 0.5
        return Dataset(t=t, q=q, dq=dq, tau=tau, joint_names=tuple(model.joint_names),
                       metadata={"source": f"crafted{seed}"})
    return model, run(0), run(1)


def test_auto_chooses_the_presliding_state_and_it_predicts_held_out_motion(crafted):
    model, ident, held_out = crafted
    s = replace(model.config.identification, cutoff_hz=10.0, estimator="ols")
    res = identify(model, [ident], s)
    table = dict((d, e) for d, e in res.settings["presliding_selection"][1:])
    assert res.settings["friction_presliding"] == pytest.approx([1e-3] * model.n)
    assert min(table, key=table.get) == 1e-3
    said = [d for d in res.diagnostics if d.code == "friction_presliding"]
    assert len(said) == 1 and said[0].severity == "info" and "0.001 rad" in said[0].message
    fit = settings_from_results(model, {"settings": res.settings})
    got = validate(model, res.base, {"m": res.estimate.values}, [held_out], fit)
    ramp = validate(model, res.base, {"m": res.estimate.values}, [held_out],
                    replace(fit, friction_presliding=None))
    with_state = got[0]["models"]["m"]["nrmse_mean"]
    assert with_state < 0.6 * ramp[0]["models"]["m"]["nrmse_mean"]     # 0.072 vs 0.171


def test_the_choice_is_made_on_a_bounded_subsample(crafted, monkeypatch):
    """The candidates are compared on at most PRESLIDING_SAMPLES samples of each recording
    (issue #29: bounded cost), recorded in the result: with the bound at 3600 of the 4800
    samples (windows spread over the recording) the table changes (fewer samples), the
    same delta is chosen, the position jitter (of the whole recording) stays."""
    from robot_identification.identification import _friction
    model, ident, _ = crafted
    s = replace(model.config.identification, cutoff_hz=10.0, estimator="ols")
    res = identify(model, [ident], s)
    assert res.settings["presliding_selection_samples"] == _friction.PRESLIDING_SAMPLES
    assert ident.t.shape[0] < _friction.PRESLIDING_SAMPLES       # compared whole here
    monkeypatch.setattr(_friction, "PRESLIDING_SAMPLES", 3600)
    short = identify(model, [ident], s)
    assert short.settings["presliding_selection_samples"] == 3600
    assert short.settings["friction_presliding"] == pytest.approx([1e-3] * model.n)
    assert short.settings["position_jitter"] == res.settings["position_jitter"]
    assert [e for _, e in short.settings["presliding_selection"]] != [
        e for _, e in res.settings["presliding_selection"]]


def test_windows_spread_over_the_recording():
    """presliding_windows: the whole recording up to the bound, else equal windows from
    its first sample to its last, the bound in all."""
    from robot_identification.identification import presliding_windows
    assert presliding_windows(4800, 5000) == [slice(0, 4800)]
    got = presliding_windows(100_000, 5000, 5)
    assert [(w.start, w.stop) for w in got] == [(0, 1000), (24750, 25750), (49500, 50500),
                                                (74250, 75250), (99000, 100000)]


def test_a_recording_that_begins_with_a_long_rest_is_not_judged_on_the_rest(crafted,
                                                                           monkeypatch):
    """The crafted recording after 24 s of rest (the arm held at its first position: the
    torque is gravity (pinocchio rnea) + the offset, no friction mobilised), the bound at
    the rest's length: its first samples (the rest) cannot tell the candidates apart (the
    ramp kept), the windows spread over the recording see the motion and choose the
    pre-sliding displacement the torque was made with (1e-3 rad)."""
    import pinocchio as pin
    from robot_identification.identification import _friction
    model, ident, _ = crafted
    n_rest = ident.t.shape[0]
    q0 = ident.q[0]
    rest_tau = pin.rnea(model.pin_model, model.pin_model.createData(),
                        model.pin_configuration(q0), np.zeros(model.pin_model.nv),
                        np.zeros(model.pin_model.nv))[model.velocity_indices] + 0.5
    dt = ident.t[1] - ident.t[0]
    ds = Dataset(t=np.arange(2 * n_rest) * dt, q=np.vstack([np.tile(q0, (n_rest, 1)), ident.q]),
                 dq=np.vstack([np.zeros_like(ident.dq), ident.dq]),
                 tau=np.vstack([np.tile(rest_tau, (n_rest, 1)), ident.tau]),
                 joint_names=ident.joint_names, metadata={"source": "rest_first"})
    s = replace(model.config.identification, cutoff_hz=10.0, estimator="ols")
    monkeypatch.setattr(_friction, "PRESLIDING_SAMPLES", n_rest)
    monkeypatch.setattr(_friction, "PRESLIDING_WINDOWS", 1)    # the former choice: the
    # first PRESLIDING_SAMPLES samples
    rest_only = identify(model, [ds], s)
    table = [e for _, e in rest_only.settings["presliding_selection"]]
    assert rest_only.settings["friction_presliding"] is None
    assert max(table) - min(table) < 1e-3 * table[0]          # the rest: all alike
    monkeypatch.setattr(_friction, "PRESLIDING_WINDOWS", 5)
    res = identify(model, [ds], s)
    assert res.settings["presliding_selection_samples"] == n_rest
    assert res.settings["friction_presliding"] == pytest.approx([1e-3] * model.n)


def test_presliding_null_keeps_the_ramp_and_is_recorded(crafted):
    model, ident, _ = crafted
    s = replace(model.config.identification, cutoff_hz=10.0, estimator="ols",
                friction_presliding=None)
    res = identify(model, [ident], s)
    assert res.settings["friction_presliding"] is None
    assert settings_from_results(model, {"settings": res.settings}).friction_presliding is None


def test_datasets_with_joints_the_model_lacks(crafted):
    """A recording that also holds a joint the config does not list (a gripper): the state
    is computed on the model's joints, the same delta is chosen."""
    model, ident, _ = crafted
    ds = replace(ident, q=np.hstack([ident.q, ident.q[:, :1]]),
                 dq=np.hstack([ident.dq, ident.dq[:, :1]]),
                 tau=np.hstack([ident.tau, 0 * ident.tau[:, :1]]),
                 joint_names=tuple(ident.joint_names) + ("gripper",))
    s = replace(model.config.identification, cutoff_hz=10.0, estimator="ols")
    res = identify(model, [ds], s)
    assert res.settings["friction_presliding"] == pytest.approx([1e-3] * model.n)
