"""Property test of the reversal and swap checks (``torque_sign``, ``joints_swapped``,
``direction_undetermined``; robot_identification.diagnostics._nominal and ._refit) over arms,
joints and pairs, on data of an arm that differs from its URDF (a CAD-error draw: masses
x exp(0.2 N(0,1)), centres of mass moved by 2 cm N(0,1) per axis, principal inertias
x exp(0.3 N(0,1))), simulated by our simulator and checked against the URDF:

- the data as recorded: no error-severity ``torque_sign`` or ``joints_swapped``;
- one joint's direction reversed (q, dq, ddq and torque negated): never a wrong name and
  never silence - either an error ``torque_sign`` naming that joint (alone, or among readings
  the data explain equally) or, without an error, the note ``direction_undetermined`` naming
  it (the data cannot tell its direction);
- two adjacent joints' columns exchanged: an error ``joints_swapped`` naming that pair, never
  a reversal (the study: 60 of 60 draws).

The 20-draw study over every joint and a pair per draw is benchmarks/cad_error_reversals.py.
"""
import sys
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from robot_identification.model import cad_error_urdf, load_robot
from robot_identification.simulation import simulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from cad_error_reversals import (  # noqa: E402
    ARMS, findings, reversed_joint, swap_verdict, swapped, verdict)

_MODELS = {}


def _nominal(arm):
    if arm not in _MODELS:
        _MODELS[arm] = load_robot(**ARMS[arm])
    return _MODELS[arm]


@settings(max_examples=4, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(arm=st.sampled_from(sorted(ARMS)), draw=st.integers(0, 10_000),
       joint=st.integers(0, 6))
def test_reversal_and_swap_are_named_and_correct_data_raise_no_error(arm, draw, joint,
                                                                     tmp_path):
    nominal = _nominal(arm)
    k = joint % nominal.n
    names = nominal.joint_names
    urdf = tmp_path / f"{arm}_{draw}.urdf"
    urdf.write_text(cad_error_urdf(nominal.urdf_xml, np.random.default_rng(draw)))
    true = load_robot(**ARMS[arm], urdf=urdf)
    ds = simulate(true, seed=draw % 100, derivatives=True)
    clean = findings(nominal, ds)
    assert not [f for f in clean if f[2] == "error"], clean
    found = findings(nominal, reversed_joint(ds, k))
    assert verdict(found, names[k]) in ("named", "tied", "undetermined"), (found, names[k])
    a = k if k < nominal.n - 1 else k - 1
    found = findings(nominal, swapped(ds, a, a + 1))
    assert swap_verdict(found, names[a], names[a + 1]) in ("named", "tied"), found
