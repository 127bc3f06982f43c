"""Monte-Carlo studies (identification.monte_carlo, ``robot-identification montecarlo``): the
Cramér-Rao bound, unbiasedness and efficiency of WLS on a linear Gaussian model, and the
same numbers in-process and on a Dask cluster."""
import numpy as np
import pytest
import yaml

from robot_identification.cli import main
from robot_identification.identification import (
    cramer_rao_bound, monte_carlo, simulated_observations)

pytestmark = pytest.mark.slow


def _linear_model(seed=0, N=150, rows=2, p=3):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(N, rows, p))
    beta = np.array([1.0, -2.0, 0.5])[:p]
    return W, W @ beta, beta


def test_crlb_is_inverse_fisher_of_stacked_weighted_rows():
    W, _, _ = _linear_model()
    sigma = np.array([0.2, 1.5])
    A = (W / sigma[None, :, None]).reshape(-1, W.shape[2])   # rows whitened and stacked
    reference = np.linalg.pinv(A.T @ A)
    np.testing.assert_allclose(cramer_rao_bound(W, sigma), reference, rtol=1e-10)


def test_wls_with_true_sigma_is_unbiased_and_attains_the_bound():
    W, y, beta = _linear_model()
    sigma = np.array([0.2, 1.5])
    runs = 400
    res = monte_carlo(W, y, sigma, runs, seed=3, true=beta,
                      estimators=("ols", "wls", "wls_known"))
    band = 2 * np.sqrt(2 / (runs - 1))          # 2-sigma error of a variance ratio
    for name in ("wls", "wls_known"):
        s = res.summary(name)
        assert np.all(np.abs(s["bias_z"]) < 4.0), name
        assert np.all(np.abs(s["variance_ratio"] - 1.0) < 1.5 * band), (name, s)
    # Gauss-Markov: OLS is no better than the bound, and worse with unequal sigmas
    assert np.all(res.summary("ols")["variance_ratio"] > 1.0 - band)
    assert np.median(res.summary("ols")["variance_ratio"]) > 1.2


def test_same_numbers_in_process_and_on_two_dask_workers():
    W, y, beta = _linear_model(1)
    sigma = np.array([0.3, 0.3])
    one = monte_carlo(W, y, sigma, 12, seed=5, true=beta)
    two = monte_carlo(W, y, sigma, 12, seed=5, true=beta, workers=2, processes=False,
                      adaptive=False)
    assert one.ran_on == "this process" and two.ran_on == "2 local workers"
    for name in one.estimates:
        np.testing.assert_array_equal(one.estimates[name], two.estimates[name])


def test_a_study_too_small_for_workers_runs_here_and_a_large_one_starts_them(monkeypatch):
    # 12 runs of a 150-sample model cost well under a millisecond each: starting workers
    # would cost more than they save, so the runs stay in this process and say why
    from robot_identification.identification import _montecarlo
    W, y, beta = _linear_model(1)
    sigma = np.array([0.3, 0.3])
    one = monte_carlo(W, y, sigma, 12, seed=5, true=beta)
    small = monte_carlo(W, y, sigma, 12, seed=5, true=beta, workers=2, processes=False)
    assert small.ran_on.startswith("this process: the 12 runs cost")
    # a cluster that costs nothing to start pays from the first run on: one run here, the
    # other 11 on the workers, the same numbers
    monkeypatch.setattr(_montecarlo, "LOCAL_CLUSTER_START_S",
                        dict.fromkeys(_montecarlo.LOCAL_CLUSTER_START_S, 0.0))
    spread = monte_carlo(W, y, sigma, 12, seed=5, true=beta, workers=2, processes=False)
    assert spread.ran_on == "2 local workers"
    for name in one.estimates:
        np.testing.assert_array_equal(one.estimates[name], small.estimates[name])
        np.testing.assert_array_equal(one.estimates[name], spread.estimates[name])


def test_run_ols_is_the_stacked_least_squares_of_its_noise_draw():
    # a run's OLS estimate (normal equations from W's Gram matrices computed once) against
    # an independent reference: np.linalg.lstsq on the run's stacked rows, same noise draw
    from robot_identification.identification import run_seeds
    W, y, _ = _linear_model(2)
    sigma = np.array([0.4, 0.1])
    est = run_seeds(W, y, sigma, [11, 12], estimators=("ols",))
    for i, seed in enumerate([11, 12]):
        noisy = y + sigma * np.random.default_rng(seed).standard_normal(y.shape)
        ref = np.linalg.lstsq(W.reshape(-1, W.shape[2]), noisy.reshape(-1), rcond=None)[0]
        np.testing.assert_allclose(est[i, 0], ref, rtol=1e-10, atol=1e-12)
    # the Gram matrices computed once (FixedDesign) or per run (a plain W): the same bits
    from robot_identification.estimation import FixedDesign
    fixed = run_seeds(FixedDesign(W), y, sigma, [11, 12], estimators=("ols", "wls"))
    assert np.array_equal(fixed, run_seeds(W, y, sigma, [11, 12], estimators=("ols", "wls")))


def test_simulated_observations_are_exact():
    from robot_identification.model import load_robot
    model = load_robot("szabo_3dof")
    W, y, base, true = simulated_observations(model, duration=1.0)
    assert W.shape == (1001, 3, len(base)) and y.shape == (1001, 3)
    # noise-free torques of the simulator equal the base regressor times the true values
    assert np.abs(W @ true - y).max() < 1e-8 * np.abs(y).max()


def test_cli_same_yaml_with_one_worker_and_a_two_worker_scheduler(tmp_path, capsys):
    distributed = pytest.importorskip("distributed")
    args = ["montecarlo", "--robot", "szabo_3dof", "--duration", "2", "--runs", "8",
            "--sigma", "0.5", "0.3", "0.7", "--quiet"]
    assert main(args + ["--output", str(tmp_path / "one.yaml")]) == 0
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        assert main(args + ["--scheduler", cluster.scheduler_address,
                            "--output", str(tmp_path / "two.yaml")]) == 0
    out = capsys.readouterr().out
    assert "var/CRLB" in out and "2 sigma" in out
    one = (tmp_path / "one.yaml").read_text()
    assert one == (tmp_path / "two.yaml").read_text()
    doc = yaml.safe_load(one)
    assert doc["runs"] == 8 and doc["sigma"] == [0.5, 0.3, 0.7]
    entry = doc["base_parameters"][0]
    assert {"name", "expression", "true", "crlb_std", "ols", "wls"} <= set(entry)
    assert {"mean", "bias", "std", "variance_ratio", "bias_z"} <= set(entry["wls"])


@pytest.mark.parametrize("extra, message", [
    (["--robot", "zollo_planar", "--snr", "40"], "elastic joints"),
    (["--robot", "szabo_3dof", "--sigma", "0.5", "0.3"], "--sigma needs 3"),
    (["--robot", "szabo_3dof", "--snr", "40", "--workers", "0"], "workers must be"),
    (["--robot", "szabo_3dof", "--snr", "40", "--runs", "1"], "--runs must be"),
])
def test_cli_errors_are_one_line(extra, message, capsys):
    assert main(["montecarlo", "--duration", "1", "--quiet"] + extra) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
