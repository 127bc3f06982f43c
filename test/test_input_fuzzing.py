"""Property-based tests (hypothesis): random and mutated CSVs, bags, npy/npz, robot configs and
results files fed to the loaders and the CLI. The only outcomes allowed are a valid result or a
project error (:class:`IdentificationError`) whose message is one line (issue #12).

CI runs the ``ci`` profile (a bounded number of examples, derandomised: seconds);
``scripts/fuzz_inputs.py`` runs the ``fuzz`` profile (many more examples, random seeds).
Select with ``RI_HYPOTHESIS_PROFILE``.
"""
import json
import os
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from robot_identification import cli
from robot_identification.data import Dataset, load_dataset
from robot_identification.data import read_bag, write_bag
from robot_identification.errors import IdentificationError
from robot_identification.identifiability import base_parameters
from robot_identification.model import load_robot
from robot_identification.report import read_results
from robot_identification.identification import iter_chunks
from robot_identification.validation import load_estimates

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                     HealthCheck.data_too_large])
settings.register_profile("ci", max_examples=25, derandomize=True, database=None, **_COMMON)
_FUZZ = int(os.environ.get("RI_HYPOTHESIS_EXAMPLES", "400"))
settings.register_profile("fuzz", max_examples=_FUZZ, database=None, **_COMMON)
PROFILE = os.environ.get("RI_HYPOTHESIS_PROFILE", "ci")
#: Examples of the slow property (the CLI runs a whole identification per example).
SLOW = {"ci": 6, "fuzz": max(6, _FUZZ // 7)}.get(PROFILE, 6)


def expect_project_error(fn, *args, **kwargs):
    """Call ``fn``; a project error must be one line. Anything else propagates (a bug)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = fn(*args, **kwargs)
        except IdentificationError as exc:
            assert "\n" not in str(exc), f"multi-line message: {exc}"
            assert str(exc).strip(), "empty message"
            event(f"{getattr(fn, '__name__', 'call')}: {type(exc).__name__}")
            return None
        event(f"{getattr(fn, '__name__', 'call')}: valid")
        return out


# ------------------------------------------------------------------------------ strategies
#: Byte mutations: (position as a fraction of the length, new byte) pairs, and an optional cut.
mutations = st.tuples(
    st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), max_size=8),
    st.one_of(st.none(), st.floats(0, 1)))


def mutate(data: bytes, mutation) -> bytes:
    flips, cut = mutation
    b = bytearray(data)
    for frac, val in flips:
        if b:
            b[int(frac * len(b))] = val
    if cut is not None:
        b = b[:int(cut * len(b))]
    return bytes(b)


csv_field = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.floats(-10, 10).map(lambda x: f"{x:.6g}"),
    st.sampled_from(["", "nan", "inf", "-", "1e999", "0x10", " ", "a", "1,2", "\x00"]),
    st.text(max_size=4))


@st.composite
def csv_texts(draw, joints=2):
    """A valid CSV (t, q1..qn, tau1..taun) with rows mutated, dropped or inserted."""
    n = draw(st.integers(0, 60))
    t = np.cumsum(draw(st.lists(st.floats(1e-4, 0.05), min_size=n, max_size=n)) or [0.0])
    rows = [[f"{ti:.6f}"] + [f"{np.sin(ti + j):.6f}" for j in range(joints)]
            + ["1.5"] * joints for ti in t[:n]]
    for _ in range(draw(st.integers(0, 6))):
        if not rows:
            break
        i = draw(st.integers(0, len(rows) - 1))
        action = draw(st.sampled_from(["field", "drop", "extra", "insert", "time"]))
        if action == "field" and rows[i]:
            rows[i][draw(st.integers(0, len(rows[i]) - 1))] = draw(csv_field)
        elif action == "drop":
            rows[i] = rows[i][:draw(st.integers(0, 2 * joints))]
        elif action == "extra":
            rows[i].append(draw(csv_field))
        elif action == "insert":
            rows.insert(i, [draw(csv_field) for _ in range(draw(st.integers(0, 6)))])
        elif action == "time" and rows[i]:
            rows[i][0] = draw(st.sampled_from(["0", "-1", "1e9", "1e300", f"{t[0]:.6f}"]))
    header = draw(st.sampled_from(["", "t,q1,q2,tau1,tau2\n", "# comment\n"]))
    return header + "\n".join(",".join(r) for r in rows) + draw(st.sampled_from(["", "\n"]))


yaml_leaf = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                      st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6),
                      st.lists(st.floats(allow_nan=True), max_size=3),
                      st.dictionaries(st.text(max_size=4), st.integers(), max_size=2))


def leaf_paths(doc, prefix=()):
    """Paths to every node of a YAML document (mappings and lists)."""
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += leaf_paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += leaf_paths(v, prefix + (i,))
    return out


def replace_at(doc, path, value):
    if not path:
        return value
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return doc


@st.composite
def mutated_docs(draw, doc):
    """``doc`` with 1-3 nodes replaced by random YAML values (or deleted)."""
    doc = json.loads(json.dumps(doc))
    for _ in range(draw(st.integers(1, 3))):
        paths = leaf_paths(doc)
        path = draw(st.sampled_from(paths))
        if path and draw(st.booleans()) and isinstance(doc, (dict, list)):
            parent = doc
            for k in path[:-1]:
                parent = parent[k]
            if isinstance(parent, dict):
                del parent[path[-1]]
                continue
        doc = replace_at(doc, path, draw(yaml_leaf))
    return doc


# ------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Valid inputs to mutate: a 2-joint dataset (.npz and bag), szabo_3dof's config and a
    results.yaml of szabo_3dof (identified from a simulation)."""
    d = tmp_path_factory.mktemp("fuzz")
    n = 120
    t = np.arange(n) * 1e-3
    ds = Dataset(t=t, q=np.column_stack([np.sin(5 * t), np.cos(5 * t)]), tau=np.ones((n, 2)),
                 theta=np.column_stack([np.sin(5 * t), np.cos(5 * t)]),
                 joint_names=["joint1", "joint2"])
    ds.save_npz(d / "run.npz")
    write_bag(ds, d / "bag")
    cfg = yaml.safe_load((REPO / "config" / "robots" / "szabo_3dof.yaml").read_text())
    cfg["urdf"] = str(REPO / "urdf" / "szabo_3dof.urdf")
    assert cli.main(["simulate", "--robot", "szabo_3dof", "--duration", "3", "--output",
                     str(d / "sim.npz"), "--quiet"]) == 0
    assert cli.main(["identify", "--robot", "szabo_3dof", "--data", str(d / "sim.npz"),
                     "--output", str(d / "results.yaml"), "--quiet"]) == 0
    model = load_robot("szabo_3dof")
    results = yaml.safe_load((d / "results.yaml").read_text())
    return Inputs({"dir": d, "config": cfg, "results": results, "model": model,
                   "base": base_parameters(model)})


class Inputs(dict):
    """The fixture's files (a short repr for hypothesis' failure reports)."""

    def __repr__(self):
        return f"Inputs({self['dir']})"


# ------------------------------------------------------------------------------ properties
@settings(settings.get_profile(PROFILE))
@given(text=csv_texts())
def test_csv_reader(text):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "run.csv"
        path.write_text(text, errors="surrogateescape")
        ds = expect_project_error(load_dataset, path, time=1, position=2, torque=4, n_joints=2)
        if ds is not None:
            expect_project_error(ds.validate, 2)


@settings(settings.get_profile(PROFILE))
@given(mutation=mutations, member=st.sampled_from(["bag.mcap", "metadata.yaml"]))
def test_bag_reader(files, mutation, member):
    with tempfile.TemporaryDirectory() as d:
        bag = Path(d) / "bag"
        bag.mkdir()
        for f in (files["dir"] / "bag").iterdir():
            data = f.read_bytes()
            (bag / f.name).write_bytes(mutate(data, mutation) if f.name == member else data)
        ds = expect_project_error(read_bag, bag)
        if ds is not None:
            expect_project_error(ds.validate, 2)
        chunks = expect_project_error(lambda: list(iter_chunks(bag, 50)))
        assert chunks is None or all(c.n_samples <= 50 for c in chunks)


@settings(settings.get_profile(PROFILE))
@given(mutation=mutations)
def test_npz_reader(files, mutation):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "run.npz"
        path.write_bytes(mutate((files["dir"] / "run.npz").read_bytes(), mutation))
        ds = expect_project_error(load_dataset, path)
        if ds is not None:
            expect_project_error(ds.validate, 2)
        expect_project_error(lambda: list(iter_chunks(path, 50)))


@settings(settings.get_profile(PROFILE))
@given(mutation=mutations, member=st.sampled_from(["t.npy", "q.npy", "tau.npy", "meta.json"]))
def test_npy_directory_reader(files, mutation, member):
    src = load_dataset(files["dir"] / "run.npz")
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        content = {f"{k}.npy": _npy(getattr(src, k)) for k in ("t", "q", "tau")}
        content["meta.json"] = json.dumps({"joint_names": list(src.joint_names)}).encode()
        for name, data in content.items():
            (d / name).write_bytes(mutate(data, mutation) if name == member else data)
        expect_project_error(lambda: list(iter_chunks(d, 50)))


def _npy(a):
    import io
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


@settings(settings.get_profile(PROFILE))
@given(data=st.data())
def test_robot_config(files, data):
    doc = data.draw(mutated_docs(files["config"]))
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "robot.yaml"
        path.write_text(yaml.safe_dump(doc))
        expect_project_error(load_robot, config=path)


@st.composite
def mutated_urdfs(draw):
    """szabo_3dof's URDF with links/joints removed, duplicated, re-parented, attributes
    replaced, or bytes flipped."""
    import xml.etree.ElementTree as ET
    root = ET.fromstring((REPO / "urdf" / "szabo_3dof.urdf").read_text())
    for _ in range(draw(st.integers(1, 3))):
        elems = [e for e in root.iter() if e is not root]
        e = draw(st.sampled_from(elems))
        action = draw(st.sampled_from(["remove", "duplicate", "attribute", "reparent"]))
        parent = next(p for p in root.iter() if e in list(p))
        if action == "remove":
            parent.remove(e)
        elif action == "duplicate":
            parent.append(ET.fromstring(ET.tostring(e)))
        elif action == "attribute" and e.attrib:
            key = draw(st.sampled_from(sorted(e.attrib)))
            e.set(key, draw(st.sampled_from(["", "nan", "-1", "1e308", "0", "link1", "a b c",
                                             "base_link", "frame3", "1 2"])))
        elif action == "reparent":
            joints = root.findall("joint")
            links = [lk.get("name") for lk in root.findall("link")]
            if joints and links:
                jt = draw(st.sampled_from(joints))
                tag = draw(st.sampled_from(["parent", "child"]))
                if jt.find(tag) is not None:
                    jt.find(tag).set("link", draw(st.sampled_from(links)))
    text = ET.tostring(root, encoding="unicode").encode()
    if draw(st.booleans()):
        text = mutate(text, draw(mutations))
    return text


@settings(settings.get_profile(PROFILE))
@given(text=mutated_urdfs())
def test_urdf(text):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "arm.urdf"
        path.write_bytes(text)
        expect_project_error(load_robot, "szabo_3dof", urdf=path)


@settings(settings.get_profile(PROFILE))
@given(data=st.data(), kind=st.sampled_from(["fourier", "bspline"]))
def test_trajectory_file(files, data, kind):
    """Mutated excitation trajectories: loaded and evaluated, or a ConfigError; a loaded one
    evaluates to finite positions, or its limits check says why not."""
    from robot_identification.excitation import (
        BSplineTrajectory, FourierTrajectory, check_limits, load_trajectory)
    traj = (FourierTrajectory(np.array([[0.1, -0.05], [0.02, 0.1], [0.0, 0.03]]),
                              np.zeros((3, 2)), 0.2) if kind == "fourier"
            else BSplineTrajectory(np.array([[0.3, -0.2, 0.1], [-0.2, 0.4, 0.0]]), 2.0))
    doc = data.draw(mutated_docs(traj.to_dict()))
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "trajectory.yaml"
        path.write_text(yaml.safe_dump(doc))
        loaded = expect_project_error(load_trajectory, path)
        if loaded is not None and loaded.n_joints == files["model"].n:
            expect_project_error(check_limits, files["model"], loaded)


@settings(settings.get_profile(PROFILE))
@given(data=st.data())
def test_results_file(files, data):
    doc = data.draw(mutated_docs(files["results"]))
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "results.yaml"
        path.write_text(yaml.safe_dump(doc))
        expect_project_error(read_results, path, "szabo_3dof")
        out = expect_project_error(load_estimates, path, files["model"], files["base"])
        if out is not None:
            for values in out[1].values():
                assert np.all(np.isfinite(values))


@settings(settings.get_profile(PROFILE), max_examples=SLOW,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data(), command=st.sampled_from(["validate", "export-urdf", "identify"]))
def test_cli_with_mutated_inputs(files, data, command, capsys):
    """The CLI on a mutated results file or CSV: exit 0, exit 2 with one line, or (identify)
    exit 3 for error diagnostics with nothing written (a fuzzed CSV of under a second is
    ``recording_too_short``); the inputs are never modified."""
    d = files["dir"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if command == "identify":
            (tmp / "run.csv").write_text(data.draw(csv_texts(3)), errors="surrogateescape")
            cfg = dict(files["config"], csv={"time": 1, "position": 2, "torque": 5})
            (tmp / "robot.yaml").write_text(yaml.safe_dump(cfg))
            argv = ["identify", "--config", tmp / "robot.yaml", "--data", tmp / "run.csv",
                    "--no-physical", "--quiet"]
        else:
            (tmp / "results.yaml").write_text(
                yaml.safe_dump(data.draw(mutated_docs(files["results"]))))
            argv = [command, "--robot", "szabo_3dof", "--results", tmp / "results.yaml"]
            if command == "validate":
                argv += ["--data", d / "sim.npz", "--quiet"]
        before = {p: p.read_bytes() for p in tmp.iterdir()}
        rc = cli.main([str(a) for a in argv] + ["--output", str(tmp / "out" / "o.yaml")])
        err = capsys.readouterr().err
        assert {p: p.read_bytes() for p in before} == before
        assert rc in ((0, 2, 3) if command == "identify" else (0, 2)), err
        assert "Traceback" not in err
        event(f"{command}: exit {rc}")
        if rc == 3:             # error diagnostics stop the result: nothing written
            assert "nothing written" in err and not (tmp / "out" / "o.yaml").exists(), err
        if rc == 2:
            assert len([ln for ln in err.splitlines() if ": error: " in ln]) == 1, err


# ------------------------------------------------------------------ issue #28: lies, writes
# Properties of the adversarial pass of issue #28 (docs/errors.md lists what it found):
# results files complete or refused, bag metadata that disagrees with its storage refused,
# copies recognised byte for byte, writes that fail or are interrupted at any point leave the
# previous output and no temporary file, names up to the file system's limit, readers given
# anything but a regular file.
@settings(settings.get_profile(PROFILE))
@given(cut=st.floats(0, 1, exclude_max=True))
def test_truncated_results_file_is_refused(files, cut):
    """A results file cut anywhere before its last character is refused, never read."""
    text = (files["dir"] / "results.yaml").read_text()
    at = int(cut * len(text.rstrip("\n")))
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "results.yaml"
        path.write_text(text[:at])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(IdentificationError) as info:
                read_results(path, files["model"])
        assert "\n" not in str(info.value)
        event(f"cut results: {type(info.value).__name__}")


@settings(settings.get_profile(PROFILE))
@given(action=st.sampled_from(["count", "count and total", "drop topic", "add topic",
                               "add file", "drop file"]),
       topic=st.integers(0, 1), delta=st.integers(-50, 50).filter(bool))
def test_bag_metadata_that_disagrees_with_the_storage_is_refused(files, action, topic, delta):
    import shutil
    with tempfile.TemporaryDirectory() as d:
        bag = Path(d) / "bag"
        shutil.copytree(files["dir"] / "bag", bag)
        doc = yaml.safe_load((bag / "metadata.yaml").read_text())
        info = doc["rosbag2_bagfile_information"]
        entries = info["topics_with_message_count"]
        if action.startswith("count"):
            entries[topic]["message_count"] = max(entries[topic]["message_count"] + delta, 0)
        elif action == "drop topic":
            entries.pop(topic)
        elif action == "add topic":
            entries.append({"message_count": abs(delta), "topic_metadata": dict(
                entries[0]["topic_metadata"], name="/other")})
        elif action == "add file":
            info["relative_file_paths"].append("bag_1.mcap")
        else:
            info["relative_file_paths"] = []
        if action != "count":
            info["message_count"] = sum(e["message_count"] for e in entries)
        (bag / "metadata.yaml").write_text(yaml.safe_dump(doc))
        for read in (read_bag, lambda p: list(iter_chunks(p, 50))):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with pytest.raises(IdentificationError) as exc:
                    read(bag)
            assert "\n" not in str(exc.value) and str(bag) in str(exc.value)
        event(f"bag metadata {action}: refused")


@settings(settings.get_profile(PROFILE))
@given(mutation=mutations, identical=st.booleans(),
       kind=st.sampled_from(["file", "bag directory"]))
def test_a_copy_is_the_same_recording_exactly_when_its_bytes_are(files, mutation, identical,
                                                                kind):
    import shutil

    from robot_identification.commands._common import same_recording
    if identical:
        mutation = ([], None)
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        if kind == "file":
            a, b = files["dir"] / "run.npz", d / "copy.npz"
            b.write_bytes(mutate(a.read_bytes(), mutation))
            equal = a.read_bytes() == b.read_bytes()
        else:
            a, b = files["dir"] / "bag", d / "bag"
            shutil.copytree(a, b)
            storage = next(b.glob("*.mcap"))
            storage.write_bytes(mutate(storage.read_bytes(), mutation))
            equal = all((a / f.name).read_bytes() == f.read_bytes() for f in b.iterdir())
        assert same_recording(a, b) == equal
        event(f"{kind}: {'same' if equal else 'different'}")


class _Failing:
    """Writes that fail with ``errno`` at the ``at``-th call (counting from 0)."""

    def __init__(self, at, err):
        self.at, self.err, self.n = at, err, 0

    def __call__(self):
        self.n += 1
        if self.n - 1 == self.at:
            import errno as errnos
            raise OSError(self.err, os.strerror(self.err)) if self.err != errnos.EINTR \
                else KeyboardInterrupt()


@settings(settings.get_profile(PROFILE))
@given(pieces=st.lists(st.binary(max_size=300), min_size=1, max_size=6),
       fail_at=st.integers(0, 8), existing=st.booleans(),
       kind=st.sampled_from(["file", "directory"]),
       err=st.sampled_from([28, 30, 5, 122, 4]))      # ENOSPC EROFS EIO EDQUOT, EINTR: Ctrl-C
def test_a_write_that_fails_anywhere_keeps_the_previous_output(pieces, fail_at, existing,
                                                                kind, err):
    """Writes through ``outputs`` that fail (full disk, read-only, I/O error, quota) or are
    interrupted at any write or at the final rename: the target is as it was, no temporary
    file is left, and the error is one line naming the target."""
    from unittest import mock

    from robot_identification import outputs
    fail = _Failing(fail_at, err)
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        target = d / ("out.bin" if kind == "file" else "out")
        if existing:
            if kind == "file":
                target.write_bytes(b"previous")
            else:
                target.mkdir()
                (target / "old.bin").write_bytes(b"previous")
        before = {str(p.relative_to(d)): p.read_bytes() for p in d.rglob("*") if p.is_file()}
        real_replace, real_exchange, real_rename = os.replace, outputs._exchange, os.rename

        def commit(real):
            def call(*args):
                fail()
                return real(*args)
            return call
        try:
            with mock.patch.object(outputs.os, "replace", commit(real_replace)), \
                    mock.patch.object(outputs, "_exchange", commit(real_exchange)), \
                    mock.patch.object(outputs.os, "rename", commit(real_rename)):
                if kind == "file":
                    with outputs.atomic_output(target) as tmp, open(tmp, "wb") as f:
                        for piece in pieces:
                            fail()
                            f.write(piece)
                else:
                    with outputs.atomic_directory(target, replaceable=lambda p: None) as new:
                        new.mkdir()
                        for i, piece in enumerate(pieces):
                            fail()
                            (new / f"{i}.bin").write_bytes(piece)
        except OSError as exc:
            assert "\n" not in str(exc) and str(target) in str(exc), exc
            outcome = "failed"
        except KeyboardInterrupt:
            outcome = "interrupted"
        else:
            outcome = "written"
        after = {str(p.relative_to(d)): p.read_bytes() for p in d.rglob("*") if p.is_file()}
        if outcome == "written":
            want = (b"".join(pieces) if kind == "file" else
                    {f"out/{i}.bin": p for i, p in enumerate(pieces)})
            assert (after == {"out.bin": want} if kind == "file" else after == want)
        else:
            assert after == before, outcome
        assert not [p for p in d.rglob(".*")], "a temporary file was left"
        event(f"{kind}: {outcome}")


@settings(settings.get_profile(PROFILE))
@given(pieces=st.integers(1, 5), at=st.integers(0, 6),
       signum=st.sampled_from(["SIGINT", "SIGTERM"]), kind=st.sampled_from(["file", "dir"]))
def test_a_signal_while_writing_leaves_the_previous_output(pieces, at, signum, kind):
    """The CLI's handler installed, SIGINT or SIGTERM delivered before the ``at``-th write
    (or at the final rename): the run unwinds, the previous output stays, nothing is left."""
    import signal
    from unittest import mock

    from robot_identification import outputs
    sig = getattr(signal, signum)
    calls = [0]

    def maybe_signal():
        calls[0] += 1
        if calls[0] - 1 == at:
            os.kill(os.getpid(), sig)
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        target = d / ("out.bin" if kind == "file" else "out")
        if kind == "file":
            target.write_bytes(b"previous")
        else:
            target.mkdir()
            (target / "old.bin").write_bytes(b"previous")
        before = {str(p.relative_to(d)): p.read_bytes() for p in d.rglob("*") if p.is_file()}
        real = outputs._exchange if kind == "dir" else os.replace

        def commit(*args):
            maybe_signal()
            return real(*args)
        previous = cli._install_signal_handlers()
        try:
            with mock.patch.object(*((outputs, "_exchange") if kind == "dir"
                                     else (outputs.os, "replace")), commit):
                if kind == "file":
                    with outputs.atomic_output(target) as tmp, open(tmp, "wb") as f:
                        for _ in range(pieces):
                            maybe_signal()
                            f.write(b"new")
                else:
                    with outputs.atomic_directory(target, replaceable=lambda p: None) as new:
                        new.mkdir()
                        for i in range(pieces):
                            maybe_signal()
                            (new / f"{i}.bin").write_bytes(b"new")
            outcome = "written"
        except KeyboardInterrupt as exc:
            outcome = type(exc).__name__
            assert (signum == "SIGTERM") == isinstance(exc, cli.Terminated)
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
        after = {str(p.relative_to(d)): p.read_bytes() for p in d.rglob("*") if p.is_file()}
        if outcome == "written":
            assert at > pieces and after != before
        else:
            assert after == before
        assert not [p for p in d.rglob(".*")], "a temporary file was left"
        event(f"{kind}: {outcome}")


@settings(settings.get_profile(PROFILE))
@given(head=st.text(st.characters(blacklist_categories=("Cs", "Cc"),
                                  blacklist_characters="/\\"), max_size=20),
       length=st.integers(0, 300))
def test_output_names_up_to_the_file_system_limit(head, length):
    name = head + "n" * length + ".yaml"
    from robot_identification.errors import ConfigError
    from robot_identification.outputs import name_max, write_text_atomic
    with tempfile.TemporaryDirectory() as d:
        limit = name_max(d)
        fits = len(os.fsencode(name)) <= limit
        try:
            write_text_atomic(Path(d) / name, "x: 1\n")
        except ConfigError as exc:
            assert not fits and "\n" not in str(exc) and "limit" in str(exc)
            event("name too long: refused")
        else:
            assert fits and (Path(d) / name).read_text() == "x: 1\n"
            assert os.listdir(d) == [name]
            event("name fits: written")


_READERS = {
    "dataset (.npz)": lambda p: load_dataset(p.with_suffix(".npz")),
    "dataset (no suffix)": lambda p: load_dataset(p),
    "streamed dataset": lambda p: list(iter_chunks(p.with_suffix(".npz"), 50)),
    "bag storage (.mcap)": lambda p: read_bag(p.with_suffix(".mcap")),
    "URDF": lambda p: load_robot("szabo_3dof", urdf=p.with_suffix(".urdf")),
    "xacro": lambda p: load_robot("szabo_3dof", urdf=p.with_suffix(".xacro")),
    "robot config": lambda p: load_robot(config=p.with_suffix(".yaml")),
    "results": lambda p: read_results(p.with_suffix(".yaml"), "szabo_3dof"),
    "trajectory": lambda p: __import__("robot_identification.excitation", fromlist=[
        "load_trajectory"]).load_trajectory(p.with_suffix(".yaml")),
    "CSV": lambda p: load_dataset(p.with_suffix(".csv"), time=1, position=2, torque=4,
                                  n_joints=2),
}


@settings(settings.get_profile(PROFILE))
@given(reader=st.sampled_from(sorted(_READERS)),
       kind=st.sampled_from(["fifo", "/dev/zero", "/dev/null", "link loop", "directory",
                             "missing", "dangling link", "empty", "binary"]),
       garbage=st.binary(min_size=1, max_size=200))
def test_readers_given_anything_but_their_file(reader, kind, garbage):
    """Every reader given a FIFO, a device, a link loop, a directory, a missing or dangling
    path, an empty or a binary file: a one-line project error within seconds (an alarm turns
    a reader that blocks into a failure)."""
    import signal

    def blocked(signum, frame):
        raise AssertionError(f"{reader} blocked on a {kind}")
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "input"
        suffix = {"dataset (.npz)": ".npz", "streamed dataset": ".npz", "URDF": ".urdf",
                  "bag storage (.mcap)": ".mcap", "xacro": ".xacro", "CSV": ".csv",
                  "dataset (no suffix)": ""}.get(reader, ".yaml")
        target = p.with_suffix(suffix) if suffix else p
        if kind == "fifo":
            os.mkfifo(target)
        elif kind.startswith("/dev/"):
            target.symlink_to(kind)
        elif kind == "link loop":
            target.symlink_to(target.name)
        elif kind == "directory":
            target.mkdir()
        elif kind == "dangling link":
            target.symlink_to("nowhere")
        elif kind in ("empty", "binary"):
            target.write_bytes(b"" if kind == "empty" else garbage)
        previous = signal.signal(signal.SIGALRM, blocked)
        signal.alarm(60)
        try:
            out = expect_project_error(_READERS[reader], p)
            event(f"{reader} given a {kind}: {'read' if out is not None else 'refused'}")
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
        assert out is None or kind in ("empty", "binary") and reader in (
            "robot config", "trajectory"), f"{reader} accepted a {kind}"


@settings(settings.get_profile(PROFILE))
@given(depth=st.integers(1, 8), width=st.integers(1, 12), where=st.sampled_from(
    ["robot config", "results", "bag metadata"]))
def test_yaml_aliases_are_bounded(depth, width, where):
    """Nested aliases (``a1: &a1 [*a0, *a0, ...]``, each level ``width`` times the one
    below): read when they expand to a bounded document, else a one-line error naming the
    file and the alias bomb; never minutes of CPU or memory."""
    import signal

    from robot_identification._yaml import MAX_ALIAS_EXPANSION, read_yaml_file
    from robot_identification.errors import ConfigError
    lines = [f"a0: &a0 [{', '.join(['x'] * width)}]"] + [
        f"a{k}: &a{k} [{', '.join([f'*a{k - 1}'] * width)}]" for k in range(1, depth + 1)]

    def blocked(signum, frame):
        raise AssertionError(f"YAML of depth {depth}, width {width} not bounded in time")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "doc.yaml"
        path.write_text("\n".join(lines) + "\n")
        previous = signal.signal(signal.SIGALRM, blocked)
        signal.alarm(30)
        try:
            doc = expect_project_error(read_yaml_file, path, where, ConfigError)
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
    if doc is None:
        return
    sizes = {}

    def expanded(node):
        key = id(node)
        if key not in sizes:
            sizes[key] = 1 + (sum(expanded(v) for v in node) if isinstance(node, list)
                              else 0)
        return sizes[key]
    total = sum(expanded(v) for v in doc.values())
    assert total <= MAX_ALIAS_EXPANSION + 10 * (depth + 1) * (width + 1), total
