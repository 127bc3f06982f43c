"""Held-out data without measured velocities, validated after an identification whose
recordings had them (issue #27's like-for-like validation on held-out sensor sets).

``cutoff_hz: auto`` rises where measured velocities are clean (their noise is not the
positions' differentiated twice); a held-out file of positions alone filtered at that
cut-off has accelerations that are mostly noise, and every model's held-out error, the true
parameters' included, read high (a held-out ``init`` UR5 identified from a CSV with velocities
at 60 dB: 28.8 Hz, mean NRMSE 1.06 for the URDF that simulated the data, 0.025 when
identified from positions). The identification now also resolves the cut-off for its
positions alone (``settings: cutoff_hz_positions``) and ``validate`` filters such files at it.
The reference is the simulator's own model (the robot's URDF), scored on the same file.
"""
from dataclasses import replace

import pytest

from robot_identification.identification import identify, positions_cutoff
from robot_identification.model import load_robot
from robot_identification.simulation import add_measurement_noise, simulate
from robot_identification.validation import cutoff_notes, positions_cutoff_of, validate


@pytest.fixture(scope="module")
def case():
    model = load_robot("puma560")
    auto = replace(model.config.identification, cutoff_hz="auto")
    clean = simulate(model, seed=0, derivatives=True)
    # noisy positions, exact velocities (before 2026-11-29 the SNR's rms put 5-7 x more
    # noise on puma560's joints 2 and 3, which move about 2.1 and 1.5 rad, than on their
    # velocities; the noise is now relative to each channel's motion, simulation.noise_sigma)
    noisy = add_measurement_noise(replace(clean, dq=None, ddq=None), 60.0, seed=0)
    train = replace(noisy, dq=clean.dq)
    held = simulate(model, seed=1, snr_db=60.0)                     # positions only
    return model, auto, train, held


def test_cutoff_for_positions_is_resolved_and_used(case):
    model, auto, train, held = case
    assert held.dq is None and train.dq is not None
    result = identify(model, train, auto)
    doc = {"settings": result.settings}
    pos = positions_cutoff_of(doc)
    assert pos is not None and pos < result.settings["cutoff_hz"]
    from robot_identification.identification import settings_from_results
    s = replace(settings_from_results(model, doc), cutoff_hz=result.settings["cutoff_hz"])
    base = result.base
    truth = {"urdf": base.base_values(model.nominal_parameters())}
    before = validate(model, base, truth, [held], s)[0]
    after = validate(model, base, truth, [held], s, cutoff_without_velocities=pos)[0]
    assert "cutoff_hz" not in before and after["cutoff_hz"] == pytest.approx(pos)
    # the URDF that simulated the data, plain predictor (its Coulomb term from the sign of
    # the velocity: no friction state of the identification's): 18.6 -> 0.155 (the exact
    # training velocities let the cut-off rise far); full predictor 18.6 -> 0.22 (lead,
    # 2026-11-29)
    p0, p1 = (v["plain"]["urdf"]["nrmse_mean"] for v in (before, after))
    assert p1 < 0.5 * p0, (p0, p1)
    e0, e1 = (v["models"]["urdf"]["nrmse_mean"] for v in (before, after))
    assert e1 < 0.7 * e0, (e0, e1)
    # a file with measured velocities keeps the identification's cut-off
    same = validate(model, base, truth, [train], s, cutoff_without_velocities=pos)[0]
    assert "cutoff_hz" not in same
    notes = cutoff_notes([after], doc)
    assert [d.code for d in notes] == ["cutoff_for_positions"]


def test_no_positions_cutoff_where_it_would_not_differ(case):
    model, auto, train, held = case
    result = identify(model, held, auto)            # positions only: one cut-off
    assert "cutoff_hz_positions" not in result.settings
    fixed = model.config.identification             # a configured number: never changed
    assert positions_cutoff(model, replace(fixed, cutoff_hz=5.0), None, [{}], [held]) is None
