"""Property test of the reversal check (``torque_sign``, robot_identification.diagnostics
._nominal) over arms and joints, on data of an arm that differs from its URDF (a CAD-error
draw: masses x exp(0.2 N(0,1)), centres of mass moved by 2 cm N(0,1) per axis, principal
inertias x exp(0.3 N(0,1))), simulated by our simulator and checked against the URDF:

- the data as recorded: no error-severity ``torque_sign``;
- one joint's direction reversed (q, dq, ddq and torque negated): an error never names a
  reading without that joint, and where the reversal changes the URDF's torques by at least
  8 x the URDF's own error on that motion (observable beyond the CAD error; the 20-draw
  study of docs/diagnostics.md also reports the weaker cases) the reversed joint is named.
"""
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from robot_identification.diagnostics import recording_summary
from robot_identification.model import load_robot
from robot_identification.regressor import rigid_regressor
from robot_identification.simulation import simulate

REPO = Path(__file__).resolve().parents[1]
ARMS = {"ur10e": {"name": "ur10e"}, "puma560": {"name": "puma560"},
        "arm7": {"config": REPO / "test" / "arm7.yaml"}}
OBSERVABLE = 8.0
_MODELS = {}


def _nominal(arm):
    if arm not in _MODELS:
        _MODELS[arm] = load_robot(**ARMS[arm])
    return _MODELS[arm]


def _cad_draw(xml, rng):
    """The URDF with every link's inertial perturbed (module docstring)."""
    def inertial(match):
        block = match.group(0)
        mass = float(re.search(r'<mass value="([^"]+)"', block).group(1))
        if mass <= 0:
            return block
        f = float(np.exp(0.2 * rng.normal()))
        block = re.sub(r'<mass value="[^"]+"', f'<mass value="{mass * f:.9g}"', block)
        xyz = re.search(r'<origin[^>]*xyz="([^"]+)"', block)
        if xyz:
            c = np.array([float(v) for v in xyz.group(1).split()]) + 0.02 * rng.normal(size=3)
            block = block.replace(f'xyz="{xyz.group(1)}"',
                                  f'xyz="{" ".join(f"{v:.9g}" for v in c)}"', 1)
        v = {k: float(x) for k, x in re.findall(r'(i[xyz]{2})="([^"]+)"', block)}
        inertia = np.array([[v["ixx"], v["ixy"], v["ixz"]], [v["ixy"], v["iyy"], v["iyz"]],
                            [v["ixz"], v["iyz"], v["izz"]]])
        s = np.exp(0.3 * rng.normal(size=3))
        new = f * inertia * np.sqrt(np.outer(s, s))
        ev = np.linalg.eigvalsh(new)
        if ev[0] <= 0 or ev[2] > ev[0] + ev[1]:
            new = f * inertia
        for (a, b), k in zip([(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)],
                             ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")):
            block = re.sub(rf'{k}="[^"]+"', f'{k}="{new[a, b]:.9g}"', block)
        return block
    return re.sub(r"<inertial>.*?</inertial>", inertial, xml, flags=re.S)


def _rigid(model, q, dq, ddq):
    pi = np.nan_to_num(model.nominal_parameters())
    keep = np.array([k in ("inertial", "rotor_inertia") for k in model.layout.kinds])
    return rigid_regressor(model, q, dq, ddq)[..., keep] @ pi[keep]


def _reversed(ds, k):
    s = np.ones(ds.q.shape[1])
    s[k] = -1.0
    return replace(ds, **{a: getattr(ds, a) * s for a in ("q", "dq", "ddq", "tau")
                          if getattr(ds, a) is not None})


def _signs(model, ds):
    return [d for d in recording_summary(model, ds)["diagnostics"] if d.code == "torque_sign"]


@settings(max_examples=5, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(arm=st.sampled_from(sorted(ARMS)), draw=st.integers(0, 10_000),
       joint=st.integers(0, 6))
def test_reversal_is_named_and_correct_data_raise_no_error(arm, draw, joint, tmp_path):
    nominal = _nominal(arm)
    k = joint % nominal.n
    urdf = tmp_path / f"{arm}_{draw}.urdf"
    urdf.write_text(_cad_draw(nominal.urdf_xml, np.random.default_rng(draw)))
    true = load_robot(**ARMS[arm], urdf=urdf)
    ds = simulate(true, seed=draw % 100, derivatives=True)
    assert not [d for d in _signs(nominal, ds) if d.severity == "error"]
    # how far reversing joint k moves the URDF's torques, against the URDF's own error
    q, dq, ddq, sub = ds.q[::10], ds.dq[::10], ds.ddq[::10], ds.tau[::10]
    s = np.ones(nominal.n)
    s[k] = -1.0
    tau0 = _rigid(nominal, q, dq, ddq)
    scale = np.std(sub, axis=0)
    effect = np.std(s * tau0 - _rigid(nominal, q * s, dq * s, ddq * s), axis=0) / scale
    cad = np.std(_rigid(true, q, dq, ddq) - tau0, axis=0) / scale
    found = _signs(nominal, _reversed(ds, k))
    errors = [d for d in found if d.severity == "error"]
    name = nominal.joint_names[k]
    assert all(name in d.subject.split(" or ") for d in errors), (found, name)
    if np.max(effect / (cad + 0.05)) >= OBSERVABLE:
        assert errors, (found, name, effect.round(2), cad.round(2))
