"""``identify --data A B C --workers K``: the recordings' normal equations on Dask workers give
the same estimates as one process."""
import numpy as np
import pytest
import yaml

from robot_identification.cli import main

pytestmark = pytest.mark.slow

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    d = tmp_path_factory.mktemp("recs")
    paths = []
    for seed in (1, 2, 3):
        out = d / f"run{seed}.npz"
        assert main(["simulate", "--robot", "zollo_planar", "--duration", "2", "--seed",
                     str(seed), "--snr", "90", "--output", str(out), "--quiet"]) == 0
        paths.append(str(out))
    return paths


def _estimates(path):
    doc = yaml.safe_load(open(path))
    return np.array([p["estimate"] for p in doc["base_parameters"]])


def test_same_estimates_with_one_process_and_a_two_worker_cluster(recordings, tmp_path):
    args = ["identify", "--robot", "zollo_planar", "--estimator", "wls", "--quiet",
            "--data", *recordings]
    assert main(args + ["--output", str(tmp_path / "one.yaml")]) == 0
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        assert main(args + ["--scheduler", cluster.scheduler_address,
                            "--output", str(tmp_path / "two.yaml")]) == 0
    one, two = _estimates(tmp_path / "one.yaml"), _estimates(tmp_path / "two.yaml")
    assert one.shape == (14,)
    np.testing.assert_array_equal(one, two)


def test_local_cluster_from_the_library(recordings):
    from robot_identification.identification import identify
    from robot_identification.model import load_robot
    model = load_robot("zollo_planar")
    alone = identify(model, recordings[:2])
    # a local cluster of 2 workers (threads here; the CLI starts processes)
    spread = identify(model, recordings[:2], workers=2, processes=False)
    np.testing.assert_array_equal(alone.estimate.values, spread.estimate.values)
    assert alone.n_samples == spread.n_samples


def test_bad_workers_is_a_one_line_error(recordings, capsys):
    assert main(["identify", "--robot", "zollo_planar", "--data", recordings[0],
                 "--workers", "0", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "workers must be a positive integer" in err and len(err.splitlines()) == 1
