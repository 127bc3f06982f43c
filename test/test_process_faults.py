"""Process faults (issue #28): full disks, read-only places, long names, a report that
fails over a previous one, signals (Ctrl-C, SIGTERM) at any point, a deleted working
directory. Each ends in one line naming the output and the cause (exit 2, 130 or 143),
never a traceback; no partial output and no temporary file is left; inputs never change.
"""
import errno
import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

import test_unusual_files_and_values
from conftest import assert_one_line, digest, run_cli
from robot_identification import cli, outputs
from robot_identification.outputs import atomic_directory, name_max, write_text_atomic

pytestmark = pytest.mark.slow

run = test_unusual_files_and_values.run          # fixture: the szabo_3dof config and a 3 s run

REPO = Path(__file__).resolve().parents[1]


def _identify(run, out, *extra):
    return ["identify", "--config", run / "robot.yaml", "--data", run / "run.npz",
            "--output", out, "--quiet", "--no-physical", "--force", *extra]


@pytest.fixture(scope="module")
def results(run, tmp_path_factory):
    """A results.yaml of ``run`` (for the report)."""
    out = tmp_path_factory.mktemp("results") / "results.yaml"
    assert cli.main([str(a) for a in _identify(run, out)]) == 0
    return out


def _report(run, results, out, *extra):
    return ["report", "--config", run / "robot.yaml", "--results", results, "--output", out,
            "--quiet", "--force", *extra]


def _leftovers(folder):
    """Temporary files or directories of the writers (hidden names) below ``folder``."""
    return [p for p in Path(folder).rglob(".*")]


# ------------------------------------------------------------------------------ full disk
@contextmanager
def _tmpfs(path, size="256k"):
    """A small tmpfs at ``path`` (root only; skip where mounting is not allowed)."""
    path.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                      capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def _fill(folder):
    """Fill the file system of ``folder`` up to its last bytes."""
    with open(folder / "filler", "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 512)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC


def test_full_disk_names_the_output_and_keeps_the_previous_files(run, results, tmp_path,
                                                                 capsys):
    """On a full disk identify and simulate failed with '[Errno 28] No space left on
    device', naming no file; a failed report must keep the previous one whole."""
    with _tmpfs(tmp_path / "disk", "1m") as disk:
        (disk / "results.yaml").write_text("old: results\n")
        assert cli.main([str(a) for a in _report(run, results, disk / "report")]) == 0
        capsys.readouterr()
        report = digest(disk / "report")
        _fill(disk)
        cases = [
            (_identify(run, disk / "results.yaml"), "results.yaml"),
            (["simulate", "--config", run / "robot.yaml", "--duration", "1", "--output",
              disk / "run.npz", "--quiet"], "run.npz"),
            (["simulate", "--config", run / "robot.yaml", "--duration", "1", "--output",
              disk / "bag", "--quiet"], "bag"),
            (_report(run, results, disk / "report"), "report"),
        ]
        for argv, name in cases:
            rc, err = run_cli(argv, capsys, run)
            assert_one_line(rc, err, f"'{disk / name}'", "No space left on device")
            assert ".tmp" not in err
            assert sorted(p.name for p in disk.iterdir()) == ["filler", "report",
                                                              "results.yaml"], name
            assert (disk / "results.yaml").read_text() == "old: results\n"
            assert digest(disk / "report") == report
            assert not _leftovers(disk)


@pytest.mark.parametrize("stage", ["write", "rename"])
def test_enospc_at_the_write_layer_names_the_output(run, tmp_path, capsys, monkeypatch,
                                                    stage):
    """The same without a tmpfs: ENOSPC injected while the file is written or renamed."""
    target = tmp_path / "results.yaml"
    target.write_text("old: results\n")
    if stage == "rename":
        def replace(a, b):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        monkeypatch.setattr(outputs.os, "replace", replace)
    else:
        monkeypatch.setattr(outputs, "open", _full_after(100), raising=False)
    rc, err = run_cli(_identify(run, target), capsys, run)
    assert_one_line(rc, err, f"'{target}'", "No space left on device")
    assert target.read_text() == "old: results\n" and not _leftovers(tmp_path)


def _full_after(limit):
    """``open`` whose files take ``limit`` bytes, then raise ENOSPC (no file name)."""
    import builtins

    class Full:
        def __init__(self, f):
            self.f, self.n = f, 0

        def write(self, data):
            self.n += len(data)
            if self.n > limit:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return self.f.write(data)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def __getattr__(self, name):
            return getattr(self.f, name)

    def fake_open(*args, **kwargs):
        f = builtins.open(*args, **kwargs)
        mode = args[1] if len(args) > 1 else kwargs.get("mode", "r")
        return Full(f) if "w" in mode else f
    return fake_open


def test_read_only_place_names_the_output(run, tmp_path, capsys):
    with _tmpfs(tmp_path / "ro") as ro:
        (ro / "old.yaml").write_text("kept\n")
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
        for out in (ro / "results.yaml", ro / "sub" / "results.yaml"):
            rc, err = run_cli(_identify(run, out), capsys, run)
            assert_one_line(rc, err, f"'{out}'", "Read-only file system")
        assert sorted(p.name for p in ro.iterdir()) == ["old.yaml"]


@pytest.fixture(scope="module")
def physical_results(run, tmp_path_factory):
    """A results.yaml of ``run`` with the physically consistent estimate (the exports)."""
    out = tmp_path_factory.mktemp("physical") / "results.yaml"
    assert cli.main([str(a) for a in _identify(run, out)[:-2]] + ["--force"]) == 0
    return out


def _every_writer(run, results, physical, disk):
    """(argv, output, replaces) of every command writing a file besides identify, simulate
    (.npz, bag) and report (above): ``replaces`` -- a previous output exists (--force)."""
    cfg = ["--config", run / "robot.yaml"]
    return [
        (["identify-stream", *cfg, "--data", run / "run.npz", "--output",
          disk / "stream.yaml", "--force"], disk / "stream.yaml", True),
        (["validate", *cfg, "--results", results, "--data", run / "run.npz", "--output",
          disk / "validation.yaml", "--force"], disk / "validation.yaml", True),
        (["export-urdf", *cfg, "--results", physical, "--output", disk / "arm.urdf",
          "--force"], disk / "arm.urdf", True),
        (["export-mjcf", *cfg, "--results", physical, "--output", disk / "arm.xml",
          "--force"], disk / "arm.xml", True),
        (["excite", *cfg, "--output", disk / "excitation.yaml", "--harmonics", "2",
          "--samples", "20", "--maxiter", "2", "--duration", "2", "--force"],
         disk / "excitation.yaml", True),
        (["montecarlo", *cfg, "--runs", "2", "--duration", "1", "--engine", "builtin",
          "--snr", "40", "--output", disk / "mc.yaml", "--force"], disk / "mc.yaml", True),
        (["simulate", *cfg, "--duration", "0.5", "--output", disk / "run.csv", "--force"],
         disk / "run.csv", True),
        (["init", "--urdf", REPO / "urdf" / "szabo_3dof.urdf", "--output",
          disk / "new_robot.yaml"], disk / "new_robot.yaml", False),
    ]


@pytest.mark.parametrize("fault, cause", [("full", "No space left on device"),
                                          ("read-only", "Read-only file system")])
def test_every_writer_names_its_output_on_a_full_or_read_only_disk(run, results, tmp_path,
                                                                   physical_results, capsys,
                                                                   fault, cause):
    """The class of the full-disk and read-only tests above over every other command that
    writes a file: one line naming the output and the cause, a previous output unchanged,
    no temporary file, no new file."""
    with _tmpfs(tmp_path / "disk", "1m") as disk:
        cases = _every_writer(run, results, physical_results, disk)
        for _, out, replaces in cases:
            if replaces:
                out.write_text("old: output\n")
        before = digest(disk)
        if fault == "full":
            _fill(disk)
            before = digest(disk)
        else:
            subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        for argv, out, _ in cases:
            rc, err = run_cli(argv, capsys, run)
            assert_one_line(rc, err, f"'{out}'", cause)
            assert digest(disk) == before, argv[0]
            assert not _leftovers(disk), argv[0]


# ------------------------------------------------------------------------------ long names
def test_names_up_to_the_file_system_limit_are_written(run, tmp_path, capsys):
    """A valid 245-character name was refused: the temporary file's name added 12."""
    limit = name_max(tmp_path)
    yaml_out = tmp_path / ("r" * (limit - 5) + ".yaml")
    npz_out = tmp_path / ("s" * (limit - 4) + ".npz")
    bag_out = tmp_path / ("b" * 245)                 # rosbag2 adds '_0.mcap' inside
    assert cli.main([str(a) for a in _identify(run, yaml_out)]) == 0
    for out in (npz_out, bag_out):
        assert cli.main(["simulate", "--config", str(run / "robot.yaml"), "--duration",
                         "0.5", "--output", str(out), "--quiet"]) == 0
    capsys.readouterr()
    assert yaml_out.is_file() and npz_out.is_file() and (bag_out / "metadata.yaml").is_file()
    assert not _leftovers(tmp_path)
    too_long = tmp_path / ("x" * (limit + 1) + ".yaml")
    rc, err = run_cli(_identify(run, too_long), capsys, run)
    assert_one_line(rc, err, "File name too long", f"limit of {limit} bytes")


# ------------------------------------------------------------------------------ reports
def test_a_failed_report_keeps_the_previous_one(run, results, tmp_path, capsys, monkeypatch):
    """A report that failed over an existing one left the old report.html beside the new
    run's figures (only report.html was written atomically)."""
    from robot_identification.report import _html
    out = tmp_path / "report"
    assert cli.main([str(a) for a in _report(run, results, out, "--data", run / "run.npz")]) \
        == 0
    capsys.readouterr()
    before = digest(out)
    assert "file1_torque.png" in before

    def broken(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(_html, "plot_residuals", broken)
    rc, err = run_cli(_report(run, results, out, "--data", run / "run.npz"), capsys, run)
    assert_one_line(rc, err, f"'{out}'", "No space left on device")
    assert digest(out) == before and not _leftovers(tmp_path)
    monkeypatch.undo()
    assert cli.main([str(a) for a in _report(run, results, out)]) == 0     # no held-out data
    assert "file1_torque.png" not in digest(out)            # replaced whole: nothing mixed
    assert not _leftovers(tmp_path)


def test_report_never_replaces_a_directory_of_other_files(run, results, tmp_path, capsys):
    """The report replaces its directory as a whole: a directory holding anything but a
    previous report (notes, data, an input) is refused, nothing in it changes."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("keep me\n")
    (notes / "report.html").write_text("<p>my own page</p>\n")
    rc, err = run_cli(_report(run, results, notes), capsys, notes)
    assert_one_line(rc, err, f"'{notes}'", "todo.txt", "give a new directory")
    rc, err = run_cli(_report(run, results, run), capsys, run)     # holds the inputs
    assert_one_line(rc, err, f"'{run}'")
    assert not _leftovers(tmp_path)


def test_atomic_directory_swaps_only_on_success(tmp_path):
    target = tmp_path / "out"
    with atomic_directory(target) as new:
        new.mkdir()
        (new / "a.txt").write_text("1")
    assert (target / "a.txt").read_text() == "1"
    with pytest.raises(RuntimeError):
        with atomic_directory(target, replaceable=lambda p: None) as new:
            new.mkdir()
            (new / "b.txt").write_text("2")
            raise RuntimeError("crash while writing")
    assert sorted(p.name for p in target.iterdir()) == ["a.txt"]
    with atomic_directory(target, replaceable=lambda p: None) as new:
        new.mkdir()
        (new / "b.txt").write_text("2")
    assert sorted(p.name for p in target.iterdir()) == ["b.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


# ------------------------------------------------------------------------------ signals
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
@pytest.mark.parametrize("where", ["file", "directory", "bag"])
def test_signal_while_writing_leaves_nothing(run, results, tmp_path, capsys, monkeypatch,
                                             signum, code, where):
    """Ctrl-C or SIGTERM arriving while an output is written: exit 130/143 with one line,
    no partial output, no temporary file; a previous output stays as it was."""
    if where == "file":
        out = tmp_path / "results.yaml"
        out.write_text("old: results\n")
        argv = _identify(run, out)
        patch = (outputs.os, "replace")
    elif where == "directory":
        out = tmp_path / "report"
        assert cli.main([str(a) for a in _report(run, results, out)]) == 0
        argv = _report(run, results, out)
        patch = (outputs, "_exchange")
    else:
        out = tmp_path / "bag"
        argv = ["simulate", "--config", run / "robot.yaml", "--duration", "0.5", "--output",
                out, "--quiet"]
        from robot_identification.data import _bag
        patch = (_bag.BagWriter, "write")
    before = digest(tmp_path)
    real = getattr(*patch)

    def signalled(*args, **kwargs):
        os.kill(os.getpid(), signum)            # delivered before the next bytecode
        return real(*args, **kwargs)
    monkeypatch.setattr(*patch, signalled)
    capsys.readouterr()
    rc, err = run_cli(argv, capsys, run)
    assert rc == code, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert digest(tmp_path) == before and not _leftovers(tmp_path)
    assert signal.getsignal(signal.SIGINT) is not cli._on_signal      # handlers restored


@pytest.mark.parametrize("command, signum", [
    ("identify", signal.SIGINT), ("identify", signal.SIGTERM), ("simulate", signal.SIGTERM),
    ("excite", signal.SIGINT), ("report", signal.SIGTERM), ("montecarlo", signal.SIGINT),
])
def test_signal_while_computing_leaves_nothing(run, results, tmp_path, capsys, monkeypatch,
                                               command, signum):
    """Ctrl-C or SIGTERM in the middle of the work (at the first step of its progress
    bar: samples of identify, simulated time, optimiser iterations, report figures,
    Monte-Carlo runs): exit 130/143 with one line, no output, a previous one unchanged,
    no temporary file."""
    from tqdm.std import tqdm
    out = tmp_path / {"report": "report", "simulate": "run.npz"}.get(command, "out.yaml")
    cfg = ["--config", run / "robot.yaml"]
    argv = {
        "identify": _identify(run, out),
        "simulate": ["simulate", *cfg, "--duration", "1", "--output", out, "--force"],
        "excite": ["excite", *cfg, "--output", out, "--harmonics", "2", "--samples", "20",
                   "--maxiter", "4", "--duration", "2", "--force"],
        "report": _report(run, results, out),
        "montecarlo": ["montecarlo", *cfg, "--runs", "3", "--duration", "1", "--engine",
                       "builtin", "--snr", "40", "--output", out, "--force"],
    }[command]
    if command == "report":
        assert cli.main([str(a) for a in argv]) == 0
    else:
        out.write_text("old: output\n")
    before = digest(tmp_path)
    real, sent = tqdm.update, []

    def update(self, n=1):
        if not sent:
            sent.append(signum)
            os.kill(os.getpid(), signum)          # delivered before the next bytecode
        return (real if isinstance(self, tqdm) else silent)(self, n)
    from robot_identification.progress import _Silent   # a disabled bar imports no tqdm
    silent = _Silent.update
    monkeypatch.setattr(tqdm, "update", update)
    monkeypatch.setattr(_Silent, "update", update)
    capsys.readouterr()
    rc, err = run_cli(argv, capsys, run)
    assert sent, f"{command}: no progress step reached"
    assert rc == {signal.SIGINT: 130, signal.SIGTERM: 143}[signum], err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert digest(tmp_path) == before and not _leftovers(tmp_path)
    assert signal.getsignal(signal.SIGINT) is not cli._on_signal      # handlers restored


def _start_cli(argv, **kwargs):
    """The CLI as its console script runs it, in a new process."""
    script = ("import sys; sys.argv[0] = 'robot-identification'; "
              "from robot_identification.cli import main; sys.exit(main())")
    env = dict(os.environ, PYTHONPATH=str(REPO), OPENBLAS_NUM_THREADS="1", **kwargs)
    return subprocess.Popen([sys.executable, "-c", script, *map(str, argv)], env=env,
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)


@pytest.mark.parametrize("signum, module", [
    (signal.SIGINT, "robot_identification.errors"),    # the console script imports the CLI
    (signal.SIGINT, "argparse"),
    (signal.SIGINT, "numpy"),                          # the commands' imports
    (signal.SIGTERM, "scipy"),                         # the command runs: the model's imports
])
def test_signal_during_start_up(run, tmp_path, signum, module):
    """Ctrl-C during start-up (Python importing the libraries) printed a traceback. The
    signal is sent once the process reports (PYTHONPROFILEIMPORTTIME) that it imported
    ``module``."""
    proc = _start_cli(_identify(run, tmp_path / "results.yaml"), PYTHONPROFILEIMPORTTIME="1")
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if not line.startswith("import time:") or line.split("|")[-1].strip() == module:
            break
    assert lines[-1].split("|")[-1].strip() == module, "".join(lines[-5:])
    proc.send_signal(signum)
    _, rest = proc.communicate(timeout=300)
    err = [ln for ln in lines + rest.splitlines(keepends=True)
           if not ln.startswith("import time:")]
    assert proc.returncode in ({signal.SIGINT: 130, signal.SIGTERM: 143}[signum], -signum), \
        "".join(err)
    assert "Traceback" not in "".join(err) and len(err) <= 1, "".join(err)
    assert not (tmp_path / "results.yaml").exists() and not _leftovers(tmp_path)


@pytest.mark.parametrize("when", ["start-up", "run"])
def test_a_signal_python_swallows_still_ends_the_run(tmp_path, when):
    """A signal whose handler runs inside a weakref callback (as the import machinery's lock
    callback can: Python then reports the exception as unraisable and goes on) once let a
    run exit 0 after printing the ignored exception's traceback (a full-suite run of
    test_signal_during_start_up). Here the signal is raised in such a callback on purpose:
    before ``main`` (the start-up handler) or while the command runs (the CLI's handler)."""
    script = f"""
import signal, sys, weakref
sys.argv[0] = 'robot-identification'
import robot_identification.cli as cli

class Obj:
    pass

def swallowed():
    obj = Obj()
    ref = weakref.ref(obj, lambda r: signal.raise_signal(signal.SIGINT))
    del obj
    return ref

if {when == "start-up"!r}:
    swallowed()
else:
    import robot_identification.commands._common as common
    real = common.robot_from_args
    def patched(*a, **k):
        swallowed()
        return real(*a, **k)
    common.robot_from_args = patched
sys.exit(cli.main(sys.argv[1:]))
"""
    out = tmp_path / "sim.npz"
    proc = subprocess.run([sys.executable, "-c", script, "simulate", "--robot", "szabo_3dof",
                           "--duration", "1", "--output", str(out)], capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=str(REPO),
                                              OPENBLAS_NUM_THREADS="1"), timeout=300)
    assert proc.returncode == 130, proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, \
        proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "robot-identification: interrupted", \
        proc.stderr
    assert not out.exists() and not _leftovers(tmp_path)     # nothing put in place


# ------------------------------------------------------------------------------ working dir
def test_deleted_working_directory_is_named(run, tmp_path, capsys):
    gone = tmp_path / "gone"
    gone.mkdir()
    here = os.getcwd()
    os.chdir(gone)
    try:
        gone.rmdir()
        rc = cli.main([str(a) for a in _identify(run, "results.yaml")])
    finally:
        os.chdir(here)
    err = capsys.readouterr().err
    assert_one_line(rc, err, "working directory", "deleted")


def test_write_text_atomic_replaces_and_cleans(tmp_path):
    target = tmp_path / "a.yaml"
    write_text_atomic(target, "1\n")
    write_text_atomic(target, "2\n")
    assert target.read_text() == "2\n" and sorted(tmp_path.iterdir()) == [target]


def test_dataset_directory_writer_never_overwrites_a_recording(tmp_path):
    """NpyDirWriter opened an existing dataset directory's arrays for writing."""
    import numpy as np
    from robot_identification.errors import DataError
    from robot_identification.identification import NpyDirWriter
    w = NpyDirWriter(tmp_path / "rec", 3, ["j"])
    w.append(t=np.arange(3) * 1e-3, q=np.zeros((3, 1)), tau=np.zeros((3, 1)))
    w.close()
    before = digest(tmp_path / "rec")
    with pytest.raises(DataError, match="never overwritten"):
        NpyDirWriter(tmp_path / "rec", 3, ["j"])
    assert digest(tmp_path / "rec") == before


@pytest.mark.parametrize("step", ["temporary directory created", "between two renames"])
def test_a_signal_inside_a_step_that_must_not_be_cut_is_held(tmp_path, monkeypatch, step):
    """A signal right after the temporary directory was created (before it was registered
    for removal), or between the two renames that swap directories where renameat2 is
    missing: handled at the step's end - nothing left, the previous output whole."""
    import ctypes
    import tempfile
    target = tmp_path / "out"
    target.mkdir()
    (target / "old.txt").write_text("previous")
    if step == "temporary directory created":
        real = tempfile.mkdtemp

        def mkdtemp(*args, **kwargs):
            path = real(*args, **kwargs)
            os.kill(os.getpid(), signal.SIGTERM)
            return path
        monkeypatch.setattr(outputs.tempfile, "mkdtemp", mkdtemp)
    else:
        monkeypatch.setattr(ctypes, "CDLL", lambda *a, **k: object())   # no renameat2
        real_rename, calls = os.rename, []

        def rename(a, b):
            calls.append(a)
            if len(calls) == 1:
                os.kill(os.getpid(), signal.SIGINT)
            return real_rename(a, b)
        monkeypatch.setattr(outputs.os, "rename", rename)
    previous = cli._install_signal_handlers()
    try:
        with pytest.raises(KeyboardInterrupt):
            with atomic_directory(target, replaceable=lambda p: None) as new:
                new.mkdir()
                (new / "new.txt").write_text("new")
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if step == "between two renames":       # the swap completed, then the signal was handled
        assert sorted(p.name for p in target.iterdir()) == ["new.txt"]
    else:
        assert sorted(p.name for p in target.iterdir()) == ["old.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
