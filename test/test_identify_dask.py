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


_FORKED = r'''
import json, os, signal, sys
def unwind(signum, frame):           # as the CLI's handlers: unwind the run's outputs
    raise KeyboardInterrupt
signal.signal(signal.SIGTERM, unwind)
from robot_identification._dask import dask_client, start_method
from robot_identification.identification import identify
from robot_identification.model import load_robot
model = load_robot("zollo_planar")
method = start_method()
with dask_client(2) as client:
    handlers = sorted(set(client.run(lambda: str(signal.getsignal(signal.SIGTERM))).values()))
    pids = sorted(client.run(os.getpid).values())
    two = identify(model, sys.argv[1:], scheduler=client.scheduler.address)
one = identify(model, sys.argv[1:])
print(json.dumps({"method": method, "handlers": handlers, "pids": pids, "me": os.getpid(),
                  "one": one.estimate.values.tolist(), "two": two.estimate.values.tolist()}))
'''


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"),
                    reason="forked workers on Linux only")
def test_forked_local_workers_same_estimates_and_a_fresh_interpreters_signals(recordings):
    """A single-threaded caller (the CLI) forks its local workers (no imports to repeat);
    a forked worker does not keep the caller's SIGTERM handler, and the estimates are those
    of one process bit for bit."""
    import json
    import os
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", _FORKED, *recordings[:2]],
                         capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["method"] == "fork"
    assert got["handlers"] == [str(__import__("signal").SIG_DFL)]
    assert len(got["pids"]) == 2 and got["me"] not in got["pids"]
    assert got["one"] == got["two"]


def test_a_caller_with_threads_of_its_own_keeps_spawned_workers():
    import threading

    from robot_identification._dask import start_method
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        assert start_method() == "spawn"
    finally:
        stop.set()
        worker.join()


def _task_thread():
    import threading

    from robot_identification import dask_worker
    return threading.current_thread().name, list(dask_worker.WARM_UPS)


def test_preloaded_workers_warm_up_on_their_task_thread_and_give_the_same_estimates(
        recordings, tmp_path):
    """``dask worker --preload robot_identification.dask_worker --warm-up ROBOT``: each
    worker process runs the warm-up identification before it connects, on the thread its
    tasks run on; a job on those workers gives the one-process estimates bit for bit."""
    args = ["identify", "--robot", "zollo_planar", "--estimator", "wls", "--quiet",
            "--data", *recordings[:2]]
    assert main(args + ["--output", str(tmp_path / "one.yaml")]) == 0
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None,
                                  preload=["robot_identification.dask_worker"],
                                  preload_argv=["--warm-up", "zollo_planar"]) as cluster, \
            distributed.Client(cluster) as client:
        # before any job: every worker has warmed up once, on its (one) task thread
        for name, warm_ups in client.run(_task_thread).values():
            assert [w[0] for w in warm_ups] == ["zollo_planar"]
        threads = [client.submit(_task_thread, pure=False, workers=[w]).result()
                   for w in client.scheduler_info()["workers"]]
        assert len(threads) == 2
        for name, warm_ups in threads:
            assert warm_ups[0][1] == name
        assert main(args + ["--scheduler", cluster.scheduler_address,
                            "--output", str(tmp_path / "two.yaml")]) == 0
    np.testing.assert_array_equal(_estimates(tmp_path / "one.yaml"),
                                  _estimates(tmp_path / "two.yaml"))
