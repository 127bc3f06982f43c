"""Scale-aware errors against the true parameters of simulated data (issue #27): the NME is
dominated by parameters whose true value is ~0 (a product of inertia of 1e-9 estimated at
1e-5 is a relative error of 1e4), so results carry a torque-weighted error, the median
error in standard deviations and the NME over the parameters that carry torque."""
from dataclasses import replace

import numpy as np
import pytest

from robot_identification.identification import identify
from robot_identification.model import load_robot
from robot_identification.simulation import simulate


@pytest.fixture(scope="module")
def result():
    model = load_robot("szabo_3dof")
    return identify(model, simulate(model, duration=10.0, seed=1), estimators=("ols",))


def test_truth_scores_zero_and_a_negligible_parameter_is_left_out(result):
    exact = replace(result, estimate=replace(result.estimate, values=result.true_values.copy()))
    errs = exact.truth_errors()
    assert errs["torque_weighted_error"] == 0.0 and errs["median_error_std"] == 0.0
    assert errs["normalised_mean_error_significant"] == 0.0
    # a base parameter whose true value is 0 (or carries no torque) is not significant
    neq = result.normal_equations
    norm = np.sqrt(np.einsum("jkk->k", neq.G))
    share = np.abs(result.true_values) * norm / np.sqrt(neq.c.sum())
    assert errs["significant"] == int((share >= result.NEGLIGIBLE_CONTRIBUTION).sum())
    assert 0 < errs["significant"] < len(result.names)


def test_an_error_on_a_negligible_parameter_moves_the_nme_not_the_scaled_errors(result):
    neq = result.normal_equations
    norm = np.sqrt(np.einsum("jkk->k", neq.G))
    share = np.abs(result.true_values) * norm / np.sqrt(neq.c.sum())
    small = (share > 0) & (share < result.NEGLIGIBLE_CONTRIBUTION)
    assert small.any()
    k = int(np.flatnonzero(small)[0])
    vals = result.true_values.copy()
    vals[k] *= 11                                  # a relative error of 10
    off = replace(result, estimate=replace(result.estimate, values=vals))
    errs = off.truth_errors()
    assert off.normalised_mean_error() == pytest.approx(10 / len(vals))
    assert errs["normalised_mean_error_significant"] == 0.0
    # the torque this error causes, relative to the torque: |delta| ||W_k|| / ||y||
    assert errs["torque_weighted_error"] == pytest.approx(
        abs(vals[k] - result.true_values[k]) * norm[k] / np.sqrt(neq.c.sum()))


def test_results_and_table_carry_them(result):
    from robot_identification.report import format_table, result_to_dict
    metrics = result_to_dict(result)["metrics"]
    assert {"torque_weighted_error", "median_error_std", "normalised_mean_error_significant",
            "significant"} <= set(metrics)
    assert "torque-weighted" in format_table(result, width=80)
    assert max(map(len, format_table(result, width=80).splitlines())) <= 80
    assert metrics["torque_weighted_error"] < 0.05
