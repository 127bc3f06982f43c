"""Streaming identification of arbitrarily long recordings in bounded memory.

Data arrive as an iterable of consecutive :class:`Dataset` chunks (from
:func:`iter_npz_chunks`, :func:`iter_npy_dir_chunks`, :func:`iter_bag_chunks` or
:func:`iter_dataset_chunks`). Each chunk is pre-processed by a causal FIR filter bank --
the polynomial-approximation operator of Lomakin & Deutscher (:class:`PolynomialApproximation`)
or a Savitzky-Golay bank (:class:`SavitzkyGolay`) -- which yields positions, velocities and
accelerations from positions only, and filters the torques with the same smoothing kernel so
that both sides of the regression refer to the same delayed instant t - t_d (Lomakin &
Deutscher eq. 28-37). The last L samples of each chunk are carried over to the next, so chunk
borders are exact: the streamed result equals the one-chunk result to rounding.

The filtered states are optionally decimated (``decimate``): the FIR bank is a low-pass
(anti-alias) filter, and the regression equation holds at every instant, so evaluating the
regressor on every k-th filtered sample only drops strongly correlated equations (the noise
after the filter has a bandwidth of about 1/T). This is what makes long recordings cheap: the
per-sample pinocchio regressor dominates the cost.

Regressor blocks are projected onto the base parameters and accumulated in
:class:`NormalEquations` (O(rows p^2) memory) and, for ``estimator='mrls'``, fed to
:class:`MRLS` chunk by chunk. Memory is bounded by the chunk size, whatever the length.

Regressor composition: the regressor is evaluated on the PA estimates,
Y_B(q^, q^', q^''), i.e. the composition rule (21) of the paper is used for every column.
Columns linear in derivatives with constant coefficients (rotor inertia, viscous friction)
are then exact projections; columns with position-dependent coefficients carry an O(T^2)
composition error (seed notes Sec. 1.8).
"""
from __future__ import annotations

import os
import time
import zipfile
import zlib
from pathlib import Path

import numpy as np

from robot_identification.data import Dataset
from robot_identification.errors import DataError
from robot_identification.estimation import (
    MRLS, Estimate, NormalEquations, bounded_ls, condition_number, ols, wls)
from robot_identification.identifiability import base_parameters, check_excitation
from robot_identification.pipeline import row_labels, row_mask, true_base_values
from robot_identification.regressor import CHUNK, regressor, torque_vector

_SIGNALS = ("q", "theta", "tau")

#: Default samples per chunk read from files.
READ_CHUNK = 200_000


# --------------------------------------------------------------------------- readers
def iter_dataset_chunks(dataset: Dataset, chunk: int = READ_CHUNK):
    """Yield consecutive slices of an in-memory dataset (for tests and small files)."""
    N = dataset.t.shape[0]
    for s in range(0, N, chunk):
        yield dataset.slice(slice(s, min(s + chunk, N)))


def _npy_member_reader(fp, size=None, name="array"):
    """(shape, read(nrows)) for an open .npy stream, reading rows sequentially.

    The header is checked against the stream's ``size`` [bytes] (when known) before anything
    is allocated: a header that declares more (or fewer) rows than the file holds is refused.

    Raises
    ------
    DataError
        Not a .npy header, non-numeric dtype, Fortran order, or a size mismatch.
    """
    from robot_identification.data._dataset import read_npy_header
    shape, fortran, dtype = read_npy_header(fp, size, name)
    if fortran and len(shape) > 1:
        raise DataError(f"{name}: Fortran-ordered arrays cannot be streamed; save in C order")
    row = int(np.prod(shape[1:])) if len(shape) > 1 else 1

    def read(n):
        buf = fp.read(n * row * dtype.itemsize)
        if len(buf) != n * row * dtype.itemsize:
            raise DataError(f"{name}: ends after {len(buf)} of {n * row * dtype.itemsize} "
                            f"bytes of a chunk (truncated)")
        a = np.frombuffer(buf, dtype=dtype)
        return a.reshape((-1,) + tuple(shape[1:])).astype(float)
    return shape, read


def _chunks_from_readers(readers, meta, chunk):
    N = readers["t"][0][0]
    for name, (shape, _) in readers.items():
        if shape[0] != N:
            raise DataError(f"array '{name}' has {shape[0]} samples, 't' has {N}")
    for s in range(0, N, chunk):
        n = min(chunk, N - s)
        arrays = {k: rd(n) for k, (_, rd) in readers.items()}
        yield Dataset(t=arrays.pop("t"), joint_names=list(meta["joint_names"]),
                      true_parameters=meta.get("true_parameters") or {},
                      metadata=meta.get("metadata") or {}, **arrays)


def _meta_from(raw, source):
    import json
    try:
        meta = json.loads(str(raw))
    except ValueError as exc:
        raise DataError(f"'{source}': metadata is not JSON ({exc})") from None
    names = meta.get("joint_names") if isinstance(meta, dict) else None
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise DataError(f"'{source}': metadata lacks 'joint_names' (a list of joint names)")
    return meta


def iter_npz_chunks(path, chunk: int = READ_CHUNK, arrays=("q", "tau", "theta")):
    """Read a dataset ``.npz`` (as written by :meth:`Dataset.save_npz`) chunk by chunk.

    Members are decompressed as streams, so memory is O(chunk) for compressed and
    uncompressed archives alike.

    Parameters
    ----------
    path : path
    chunk : int
        Samples per yielded :class:`Dataset`.
    arrays : tuple of str
        Arrays to read besides ``t`` (those absent from the file are skipped); measured
        derivatives are not needed by the streaming estimators.

    Yields
    ------
    Dataset

    Raises
    ------
    DataError
        Missing file or members, inconsistent lengths.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"dataset file '{path}' does not exist")
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        raise DataError(f"'{path}' is not an .npz archive") from None
    with zf:
        names = {Path(n).stem for n in zf.namelist()}
        for need in ("t", "meta", "q", "tau"):
            if need not in names:
                raise DataError(f"'{path}' lacks the array '{need}'")
        try:
            with zf.open("meta.npy") as fp:
                raw = np.lib.format.read_array(fp, allow_pickle=False)
        except Exception as exc:  # noqa: BLE001 - zipfile/zlib/numpy header parsing
            raise DataError(f"'{path}': cannot read its metadata ({type(exc).__name__}: "
                            f"{str(exc)[:80]})") from None
        meta = _meta_from(raw, path)
        handles = {}
        try:
            for k in ("t",) + tuple(arrays):
                if k in names:
                    handles[k] = zf.open(k + ".npy")
            readers = {k: _npy_member_reader(fp, zf.getinfo(k + ".npy").file_size,
                                             f"'{path}' member {k}.npy")
                       for k, fp in handles.items()}
            yield from _chunks_from_readers(readers, meta, chunk)
        except (zipfile.BadZipFile, zlib.error, EOFError, KeyError, NotImplementedError) as exc:
            raise DataError(f"'{path}' is damaged: {str(exc)[:80]}") from None
        finally:
            for fp in handles.values():
                fp.close()


def iter_npy_dir_chunks(path, chunk: int = READ_CHUNK):
    """Read a directory of ``t.npy, q.npy, tau.npy[, theta.npy]`` + ``meta.json`` chunk by chunk
    (the format written by :class:`NpyDirWriter` for recordings too large to assemble in
    memory). Files are read sequentially (not memory-mapped), so the resident memory stays
    O(chunk).

    Raises
    ------
    DataError
        Missing directory or files.
    """
    path = Path(path)
    if not (path / "meta.json").is_file():
        raise DataError(f"'{path}' is not a dataset directory (no meta.json)")
    meta = _meta_from((path / "meta.json").read_bytes().decode("utf-8", "replace"),
                      path / "meta.json")
    handles = {}
    for k in ("t", "q", "tau", "theta"):
        f = path / f"{k}.npy"
        if f.is_file():
            handles[k] = open(f, "rb")
        elif k in ("t", "q", "tau"):
            for fp in handles.values():
                fp.close()
            raise DataError(f"dataset directory '{path}' lacks {k}.npy")
    try:
        readers = {k: _npy_member_reader(fp, os.fstat(fp.fileno()).st_size,
                                         f"'{path / (k + '.npy')}'")
                   for k, fp in handles.items()}
        yield from _chunks_from_readers(readers, meta, chunk)
    finally:
        for fp in handles.values():
            fp.close()


class NpyDirWriter:
    """Append-only writer of a dataset directory read by :func:`iter_npy_dir_chunks`
    (sequential .npy writes, O(chunk) memory).

    Parameters
    ----------
    path : path
        Directory (created).
    n_samples : int
        Total samples (written into the .npy headers up front).
    joint_names : list of str
    elastic : bool
        Also write ``theta``.
    true_parameters, metadata : dict, optional
    """

    def __init__(self, path, n_samples, joint_names, elastic=False, true_parameters=None,
                 metadata=None):
        import json
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        n = len(joint_names)
        (self.path / "meta.json").write_text(json.dumps({
            "joint_names": list(joint_names), "true_parameters": true_parameters or {},
            "metadata": metadata or {}}))
        self.shapes = {"t": (n_samples,), "q": (n_samples, n), "tau": (n_samples, n)}
        if elastic:
            self.shapes["theta"] = (n_samples, n)
        self.files = {}
        for k, shape in self.shapes.items():
            fp = open(self.path / f"{k}.npy", "wb")
            np.lib.format.write_array_header_1_0(
                fp, {"descr": np.lib.format.dtype_to_descr(np.dtype(float)),
                     "fortran_order": False, "shape": shape})
            self.files[k] = fp
        self.n_samples = n_samples
        self.pos = 0

    def append(self, **arrays):
        """Append a chunk: ``t`` (m,), ``q``, ``tau`` [, ``theta``] (m, n).

        Raises
        ------
        DataError
            More samples than announced, or wrong shapes.
        """
        m = len(arrays["t"])
        if self.pos + m > self.n_samples:
            raise DataError(f"NpyDirWriter: {self.pos + m} samples exceed the announced "
                            f"{self.n_samples}")
        for k, fp in self.files.items():
            a = np.ascontiguousarray(arrays[k], dtype=float)
            if a.shape != (m,) + self.shapes[k][1:]:
                raise DataError(f"NpyDirWriter: {k} has shape {a.shape}, expected "
                                f"{(m,) + self.shapes[k][1:]}")
            fp.write(a.tobytes())
        self.pos += m

    def close(self):
        """Close the files.

        Raises
        ------
        DataError
            Fewer samples written than announced.
        """
        for fp in self.files.values():
            fp.close()
        self.files = {}
        if self.pos != self.n_samples:
            raise DataError(f"NpyDirWriter: wrote {self.pos} of {self.n_samples} samples")


def iter_bag_chunks(path, chunk: int = READ_CHUNK, *, joint_topic=None, motor_topic=None,
                    elastic=None, effort_lag: float = 0.0):
    """Read a rosbag2 recording (directory or ``.mcap``) message by message in chunks.

    Same topic conventions, time base (link header stamps, shifted to start at 0) and
    ``effort_lag`` meaning as :func:`robot_identification.data._bag.read_bag`, but memory is
    O(chunk): messages are deserialised and converted as they are read. Messages must arrive
    in stamp order (as recorded); duplicate stamps are dropped. For elastic arms the link and
    motor messages are paired by identical stamps (messages without a partner are dropped and
    counted in ``metadata['unpaired']`` of the last chunk).

    Parameters
    ----------
    path : path
    chunk : int
        Samples per yielded Dataset.
    joint_topic, motor_topic : str, optional
        Default ``/joint_states``, ``/motor_states``.
    elastic : bool, optional
        Default: elastic when the first message batch contains motor states.
    effort_lag : float
        In [0, 1) sample periods: tau_k = (1 - lag) e_k + lag e_{k+1}.

    Yields
    ------
    Dataset

    Raises
    ------
    DataError
        Unreadable bag, missing topic, out-of-order stamps, missing efforts.
    """
    try:
        from robot_identification.data import _bag
    except ImportError:
        raise DataError("rosbag2 input needs robot_identification.data._bag, which is not "
                        "available in this installation") from None
    path = Path(path)
    if not path.exists():
        raise DataError(f"bag '{path}' does not exist")
    if not 0 <= effort_lag < 1:
        raise DataError(f"effort_lag must lie in [0, 1) sample periods, got {effort_lag}")
    jt = joint_topic or _bag.JOINT_TOPIC
    mt = motor_topic or _bag.MOTOR_TOPIC
    store = _bag._typestore()
    custom = _bag._custom_data(path)
    true = custom.get("true_parameters") or {}
    meta0 = dict(custom.get("metadata", {}))
    meta0.update(source=str(path), effort_lag=effort_lag)
    state = {"names": None, "t0": None, "last": -np.inf, "unpaired": 0, "elastic": elastic,
             "carry": None}
    pend = {jt: {}, mt: {}}
    rows = []

    def convert(m):
        names = list(m.name)
        if state["names"] is None:
            state["names"] = names
        idx = _bag._name_index(names, state["names"])
        pos = np.asarray(m.position, dtype=float)
        eff = np.asarray(m.effort, dtype=float)
        return (pos[idx] if pos.size == len(names) else None,
                eff[idx] if eff.size == len(names) else None)

    def emit(final=False):
        if not rows and state["carry"] is None:
            return None
        data = rows[:]
        rows.clear()
        if state["carry"] is not None:
            data.insert(0, state["carry"])
            state["carry"] = None
        if effort_lag and not final:
            state["carry"] = data[-1]
            if len(data) < 2:
                return None
        t = np.array([r[0] for r in data])
        q = np.array([r[1] for r in data])
        tau = np.array([r[2] for r in data])
        theta = np.array([r[3] for r in data]) if state["elastic"] else None
        if effort_lag:
            nxt = tau[1:]
            tau = (1 - effort_lag) * tau[:-1] + effort_lag * nxt if not final else np.vstack(
                [(1 - effort_lag) * tau[:-1] + effort_lag * nxt, tau[-1:]])
            if not final:
                t, q = t[:-1], q[:-1]
                theta = None if theta is None else theta[:-1]
        meta = dict(meta0, t0=state["t0"])
        if final:
            meta["unpaired"] = state["unpaired"]
        return Dataset(t=t - state["t0"], q=q, tau=tau, theta=theta,
                       joint_names=state["names"], true_parameters=true, metadata=meta)

    def add(ts, pos, eff, mpos):
        if ts <= state["last"]:
            if ts == state["last"]:
                return
            raise DataError(f"bag '{path}': stamps out of order at t = {ts:.9f} s; read it with "
                            f"read_bag (which sorts) instead of streaming")
        state["last"] = ts
        if state["t0"] is None:
            state["t0"] = ts
        rows.append((ts, pos, eff, mpos))

    import itertools
    stream = _bag._iter_bag(path, {jt, mt})
    head = list(itertools.islice(stream, 200))  # peek: are there motor states?
    if state["elastic"] is None:
        state["elastic"] = any(topic == mt for topic, *_ in head)
    for topic, msgtype, raw, t_ns in itertools.chain(head, stream):
        if msgtype != _bag.JOINT_STATE:
            raise DataError(f"topic '{topic}' in '{path}' has type {msgtype}; expected "
                            f"{_bag.JOINT_STATE}")
        if not state["elastic"] and topic != jt:
            continue
        m = _bag.decode(store, raw, msgtype, path, topic, t_ns)
        ts = m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec
        pos, eff = convert(m)
        if pos is None:
            raise DataError(f"'{topic}' messages in '{path}' have fewer positions than names")
        if state["elastic"]:
            other = mt if topic == jt else jt
            if ts in pend[other]:
                po, eo = pend[other].pop(ts)
                lp, mp_, me = (pos, po, eo) if topic == jt else (po, pos, eff)
                if me is None:
                    raise DataError(f"'{mt}' messages in '{path}' carry no efforts (motor torque)")
                add(ts, lp, me, mp_)
                for tt in [k for k in pend[other] if k < ts]:  # partner never came
                    pend[other].pop(tt)
                    state["unpaired"] += 1
            else:
                pend[topic][ts] = (pos, eff)
        else:
            if eff is None:
                raise DataError(f"'{jt}' messages in '{path}' carry no efforts (torques)")
            add(ts, pos, eff, None)
        if len(rows) >= chunk:
            out = emit()
            if out is not None:
                yield out
    if state["t0"] is None:
        raise DataError(f"bag '{path}' has no messages on '{jt}'"
                        + (f" paired with '{mt}'" if state["elastic"] else ""))
    state["unpaired"] += sum(len(v) for v in pend.values())
    out = emit(final=True)
    if out is not None:
        yield out


def iter_chunks(path, chunk: int = READ_CHUNK, effort_lag: float = 0.0):
    """Chunked reader dispatching on the input: ``.npz``, a dataset directory of .npy files,
    or a rosbag2 directory / ``.mcap`` (``effort_lag`` [periods]: see
    :func:`iter_bag_chunks`; bags only).

    Raises
    ------
    DataError
        Unknown format or missing path.
    """
    path = Path(path)
    is_bag = path.is_dir() and not (path / "meta.json").is_file() or \
        path.suffix in (".mcap", ".db3")
    if effort_lag and not is_bag:
        raise DataError(f"an effort lag applies to rosbag2 recordings only, not '{path}'")
    if path.suffix == ".npz":
        return iter_npz_chunks(path, chunk)
    if path.is_dir() and (path / "meta.json").is_file():
        return iter_npy_dir_chunks(path, chunk)
    if path.is_dir() or path.suffix in (".mcap", ".db3"):
        return iter_bag_chunks(path, chunk, effort_lag=effort_lag)
    if not path.exists():
        raise DataError(f"input '{path}' does not exist")
    raise DataError(f"cannot stream '{path}': expected .npz, a dataset directory or a rosbag2")


# --------------------------------------------------------------------------- FIR states
class FIRStates:
    """Chunk-wise FIR pre-processing with exact chunk borders.

    Parameters
    ----------
    model : RobotModel
    bank : PolynomialApproximation or SavitzkyGolay
        FIR bank with ``kernels[0..2]``, ``L``, ``delay`` and ``apply``.
    decimate : int
        Keep every ``decimate``-th filtered sample (global alignment across chunks).

    Notes
    -----
    Positions (and motor positions for elastic arms) are filtered with kernels 0, 1, 2
    (x, x', x'' at t - t_d); torques with kernel 0 (same instant). The first L samples of
    the recording produce no output (no full window).
    """

    def __init__(self, model, bank, decimate=1):
        if int(decimate) != decimate or decimate < 1:
            raise DataError(f"decimate must be a positive integer, got {decimate}")
        self.model = model
        self.bank = bank
        self.decimate = int(decimate)
        self.joint_names = list(model.joint_names)
        self.elastic = model.config.elastic
        self.buf = None
        self.consumed = 0          # global index of buf's first sample
        self.t_last = None
        self.dt = None

    def _check_time(self, t):
        if t.size == 0:
            return
        d = np.diff(t)
        if self.dt is None:
            if d.size == 0:
                return
            self.dt = float(np.median(d))
            if abs(1.0 / self.dt - self.bank.fs) > 1e-3 * self.bank.fs:
                raise DataError(f"data sampled at {1 / self.dt:.6g} Hz but the filter bank was "
                                f"built for {self.bank.fs:.6g} Hz")
        if self.t_last is not None:
            d = np.concatenate([[t[0] - self.t_last], d])
        if d.size and np.max(np.abs(d - self.dt)) > 0.05 * self.dt:
            i = int(np.argmax(np.abs(d - self.dt)))
            raise DataError(f"streaming needs uniform sampling: step of {d[i]:.6g} s near t = "
                            f"{t[min(i, t.size - 1)]:.6g} s (expected {self.dt:.6g} s)")
        self.t_last = float(t[-1])

    def push(self, ds: Dataset):
        """Add a chunk; return the states ``{q, dq, ddq, tau[, theta, dtheta, ddtheta]}`` and
        times (t - t_d) of all new full-window outputs, or None."""
        ds = ds.select_joints(self.joint_names)
        if self.elastic and ds.theta is None:
            raise DataError(f"robot '{self.model.config.name}' has elastic joints: the data need "
                            f"motor positions (theta)")
        for k in ("q", "tau") + (("theta",) if self.elastic else ()):
            v = getattr(ds, k)
            if not np.all(np.isfinite(v)):
                raise DataError(f"{k}: non-finite value (NaN/inf) in the chunk starting at "
                                f"t = {ds.t[0]:.6g} s")
        t = np.asarray(ds.t, dtype=float)
        self._check_time(t)
        cols = [t[:, None], ds.q, ds.tau] + ([ds.theta] if self.elastic else [])
        new = np.concatenate(cols, axis=1)
        data = new if self.buf is None else np.concatenate([self.buf, new], axis=0)
        L, n = self.bank.L, len(self.joint_names)
        out = None
        if data.shape[0] > L:
            first_out = self.consumed + L          # global index of data's first output
            off = (-(first_out - L)) % self.decimate  # align to global grid (g - L) % d == 0
            if data.shape[0] - L > off:
                b = self.bank
                tt = data[L + off::self.decimate, 0] - b.delay
                q = data[:, 1:1 + n]
                st = {"q": b.apply(q, 0, self.decimate, off),
                      "dq": b.apply(q, 1, self.decimate, off),
                      "ddq": b.apply(q, 2, self.decimate, off),
                      "tau": b.apply(data[:, 1 + n:1 + 2 * n], 0, self.decimate, off)}
                if self.elastic:
                    th = data[:, 1 + 2 * n:1 + 3 * n]
                    st["theta"] = b.apply(th, 0, self.decimate, off)
                    st["dtheta"] = b.apply(th, 1, self.decimate, off)
                    st["ddtheta"] = b.apply(th, 2, self.decimate, off)
                out = (st, tt)
        keep = min(L, data.shape[0])
        self.consumed += data.shape[0] - keep
        self.buf = data[data.shape[0] - keep:].copy()
        return out


def make_bank(kind, fs, **kw):
    """FIR bank by name: ``'pa'`` -> :class:`PolynomialApproximation` (``window`` [s], ``N``,
    ``alpha``, ``beta``, ``delay``) or ``'savgol'`` -> :class:`SavitzkyGolay` (``length``
    [samples], ``order``).

    Raises
    ------
    DataError
        Unknown kind or bad settings.
    """
    from robot_identification.signal import PolynomialApproximation, SavitzkyGolay
    if kind == "pa":
        return PolynomialApproximation(fs=fs, **kw)
    if kind == "savgol":
        return SavitzkyGolay(fs=fs, **kw)
    raise DataError(f"unknown FIR bank '{kind}' (expected 'pa' or 'savgol')")


# --------------------------------------------------------------------------- estimation
def accumulate(model, chunks, bank, *, base=None, decimate=1, velocity_threshold=0.0,
               block=CHUNK, mrls=None, log=None):
    """Stream chunks through the FIR bank, the regressor and the normal equations.

    Parameters
    ----------
    model : RobotModel
    chunks : iterable of Dataset
        Consecutive, uniformly sampled pieces of one recording.
    bank : PolynomialApproximation or SavitzkyGolay
    base : BaseParameters, optional
    decimate : int
    velocity_threshold : float
        Friction rows with |velocity| below it are dropped [rad/s].
    block : int
        Samples per regressor block.
    mrls : MRLS, optional
        Updated with every regressor block (masked rows zeroed).
    log : callable, optional

    Returns
    -------
    neq : NormalEquations
    info : dict
        ``n_input`` (raw samples), ``n_samples`` (regressor samples), ``t_regressor`` [s] (time
        in the pinocchio regressor), ``t_total`` [s].

    Raises
    ------
    DataError
        Non-uniform sampling, NaN, wrong joints, no full window.
    """
    t0 = time.perf_counter()
    base = base or base_parameters(model)
    fir = FIRStates(model, bank, decimate)
    neq = NormalEquations(len(base), model.rows_per_sample)
    n_in = n_out = 0
    t_reg = 0.0
    from robot_identification.progress import bar
    pbar = bar(desc="identify-stream", unit="sample", unit_scale=True)
    for ds in chunks:
        n_in += ds.t.shape[0]
        pbar.update(ds.t.shape[0])
        res = fir.push(ds)
        if res is None:
            continue
        st, _ = res
        M = st["q"].shape[0]
        mask = row_mask(model, st, velocity_threshold or 0.0)
        for s in range(0, M, block):
            sl = slice(s, min(s + block, M))
            extra = {k: st[k][sl] for k in ("theta", "dtheta", "ddtheta")} if fir.elastic else {}
            tr = time.perf_counter()
            Y = regressor(model, st["q"][sl], st["dq"][sl], st["ddq"][sl], **extra)
            t_reg += time.perf_counter() - tr
            W = base.project(Y)
            y = torque_vector(model, st["tau"][sl])
            m = None if mask is None else mask[sl]
            neq.add(W, y, m)
            if mrls is not None:
                if m is not None:
                    W = W * m[:, :, None]
                    y = y * m
                mrls.update(W, y)
        n_out += M
        if log:
            log(f"{n_in} samples read, {n_out} regressor samples")
    pbar.close()
    if n_out == 0:
        raise DataError(f"no complete filter window: the recording has {n_in} samples, the "
                        f"filter needs {bank.L + 1}")
    return neq, {"n_input": n_in, "n_samples": n_out, "t_regressor": t_reg,
                 "t_total": time.perf_counter() - t0}


def _estimate_from(neq, x, K_inv, method, flags=None):
    M = int(neq.count.sum())
    p = len(x)
    s2 = neq.residual_sums(x).sum() / max(M - p, 1)
    cov = K_inv * s2
    if flags is not None:      # MRLS: not identified -> unknown (NaN) uncertainty, not zero
        bad = np.asarray(flags) != 1
        cov[bad, :] = np.nan
        cov[:, bad] = np.nan
    with np.errstate(invalid="ignore"):
        std = np.sqrt(np.clip(np.diag(cov), 0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = 100.0 * std / np.abs(x)
    rms = np.sqrt(neq.residual_sums(x) / np.maximum(neq.count, 1))
    return Estimate(values=x, covariance=cov, std=std, relative_std=rel, residual_rms=rms,
                    sigma2=np.full(neq.groups, s2), condition_number=condition_number(neq.gram),
                    method=method, n_rows=M, weights=np.ones(neq.groups))


def identify_streaming(model, chunks, *, bank=None, pa=None, decimate=1, estimator="ols",
                       velocity_threshold=None, base=None, bounds=None, theta0=None,
                       mrls_options=None, block=CHUNK, log=None):
    """Identify base parameters from a recording streamed in chunks (bounded memory).

    Parameters
    ----------
    model : RobotModel
    chunks : iterable of Dataset, or a path (see :func:`iter_chunks`)
    bank : PolynomialApproximation or SavitzkyGolay, optional
        FIR pre-processing; default: a PA bank built from ``pa``.
    pa : dict, optional
        Settings of the default PA bank: ``window`` [s] (default 0.044), ``N`` (1), ``alpha``,
        ``beta`` (3, 3), ``delay``. The sample rate is read from the first chunk.
    decimate : int
        Regressor on every k-th filtered sample (documented anti-alias decimation).
    estimator : {'ols', 'wls', 'mrls', 'bounded'}
        'mrls': Lomakin & Deutscher Fig. 1, one update per regressor block (a chunk, or
        ``block`` samples of it when the chunk is longer; flags in
        ``result.settings['flags']``); 'bounded': batch box-constrained LS.
    velocity_threshold : float, optional
        Default: the robot config's identification setting.
    base : BaseParameters, optional
    bounds : (lower, upper), optional
        Box on the *base* parameters (see :func:`base_bounds`), used by 'mrls' and 'bounded'.
    theta0 : ndarray (p,), optional
        MRLS initial guess (default: the base values of the model's nominal parameters,
        clipped into the bounds).
    mrls_options : dict, optional
        ``sigma2``, ``excitation_tol``, ``dependence_tol``, ``update`` of :class:`MRLS`.
    block : int
        Regressor block size [samples].
    log : callable, optional

    Returns
    -------
    IdentificationResult
        ``settings`` holds the filter settings, ``flags`` (MRLS), ``active_bounds``, and
        timing (``t_regressor``, ``n_input``).

    Raises
    ------
    DataError, ExcitationError
    """
    from robot_identification.pipeline import IdentificationResult
    t0 = time.perf_counter()
    if isinstance(chunks, (str, Path)):
        chunks = iter_chunks(chunks)
    chunks = iter(chunks)
    try:
        first = next(chunks)
    except StopIteration:
        raise DataError("no data chunk given") from None
    if bank is None:
        if first.t.shape[0] < 2:
            raise DataError("the first chunk needs at least 2 samples to infer the rate")
        fs = round(1.0 / float(np.median(np.diff(first.t))), 6)
        kw = {"window": 0.044, "N": 1, "alpha": 3.0, "beta": 3.0}
        kw.update(pa or {})
        bank = make_bank("pa", fs, **kw)

    def all_chunks():
        yield first
        yield from chunks
    if estimator not in ("ols", "wls", "mrls", "bounded"):
        raise DataError(f"unknown estimator '{estimator}' (ols, wls, mrls, bounded)")
    base = base or base_parameters(model)
    p = len(base)
    if velocity_threshold is None:
        velocity_threshold = model.config.identification.velocity_threshold
    lo = hi = None
    if bounds is not None:
        lo, hi = (np.asarray(b, dtype=float) for b in bounds)
        if lo.shape != (p,) or hi.shape != (p,):
            raise DataError(f"bounds must hold {p} base-parameter values each")
    elif estimator == "bounded":
        raise DataError("estimator 'bounded' needs bounds=(lower, upper)")
    est_mrls = None
    if estimator == "mrls":
        if theta0 is None:
            theta0 = base.base_values(model.nominal_parameters())
        theta0 = np.asarray(theta0, dtype=float)
        if lo is not None:
            theta0 = np.clip(theta0, lo, hi)
        est_mrls = MRLS(p, theta0=theta0, lower=lo, upper=hi, names=base.names,
                        **(mrls_options or {}))
    neq, info = accumulate(model, all_chunks(), bank, base=base, decimate=decimate,
                           velocity_threshold=velocity_threshold, block=block, mrls=est_mrls,
                           log=log)
    if neq.count.sum() <= p:
        raise DataError(f"only {int(neq.count.sum())} usable equations for {p} base parameters")
    extra = {}
    if estimator == "mrls":
        r = est_mrls.result()
        est = _estimate_from(neq, r.values, r.K_inv, "mrls", flags=r.flags)
        extra = {"flags": [int(f) for f in r.flags],
                 "active_bounds": [bool(c) for c in r.clipped] if lo is not None else []}
    else:
        check_excitation(neq.gram, base.names)
        if estimator == "bounded":
            x, active = bounded_ls(neq, lo, hi, base.names)
            est = _estimate_from(neq, x, np.linalg.pinv(neq.gram), "bounded")
            extra = {"active_bounds": [bool(a) for a in active]}
        else:
            est = ols(neq) if estimator == "ols" else wls(neq)
    true = true_base_values(model, base, first.true_parameters)
    labels = row_labels(model)
    bank_settings = {"filter": type(bank).__name__, "window": bank.window, "delay": bank.delay}
    for k in ("N", "alpha", "beta", "order", "length"):
        if hasattr(bank, k):
            bank_settings[k] = getattr(bank, k)
    return IdentificationResult(
        robot=model.config.name, names=list(base.names), expressions=base.expressions(),
        estimate=est, base=base, true_values=true, row_labels=labels,
        n_samples=info["n_samples"], n_used_rows=int(neq.count.sum()),
        elapsed=time.perf_counter() - t0,
        settings={"estimator": estimator, "decimate": decimate,
                  "velocity_threshold": velocity_threshold, **bank_settings, **extra,
                  "n_input": info["n_input"], "t_regressor": info["t_regressor"]},
        units=[model.layout.units[i] for i in base.independent])


def prediction_rms(model, chunks, values, bank, *, base=None, decimate=1, velocity_threshold=0.0):
    """RMS torque-prediction error per row group of base parameters ``values`` on (held-out)
    data, filtered by the same FIR bank, streamed.

    Returns
    -------
    ndarray (rows,)
        sqrt(mean((tau* - Y_B* values)^2)) per joint (rigid) or link/motor row (elastic).
    """
    neq, _ = accumulate(model, chunks, bank, base=base, decimate=decimate,
                        velocity_threshold=velocity_threshold)
    return np.sqrt(neq.residual_sums(np.asarray(values, dtype=float)) / np.maximum(neq.count, 1))


def pa_product_regressor(model, q, bank, n_star=2):
    """PA-filtered rigid regressor P{Y(q, dq, ddq)} built with the product rule (eq. 22-27).

    Y is split as Y(q, dq, ddq) = Y_g(q) + sum_j A_j(q) ddq_j + Y_v(q, dq) with
    Y_g = Y(q, 0, 0) (gravity, offsets), A_j = Y(q, 0, e_j) - Y_g (inertia and rotor
    columns) and Y_v the velocity terms (Coriolis/centripetal, friction). Then
    P{Y_g} is filtered directly (exact), P{A_j(q) ddq_j} by :meth:`apply_product`
    (exact when A_j(q(t)) is a polynomial of degree <= ``n_star`` over the window; no
    numerical differentiation) and P{Y_v} by composition (eq. 21) at the PA estimates.
    Costs n + 3 regressor evaluations per sample (whole array in memory: for moderate
    recordings; the streaming pipeline uses the composition rule throughout).

    Parameters
    ----------
    model : RobotModel
        Rigid model.
    q : ndarray (M, n)
        Measured positions, uniformly sampled at ``bank.fs``.
    bank : PolynomialApproximation
    n_star : int
        N* of eq. (22).

    Returns
    -------
    Y : ndarray (M - L, n, P)
        Filtered regressor, pairs with ``bank.apply(tau, 0)``.
    dq_hat : ndarray (M - L, n)
        PA velocity (for the velocity-threshold mask).

    Raises
    ------
    DataError
        Elastic model or too few samples.
    """
    if model.config.elastic:
        raise DataError("pa_product_regressor supports rigid models only")
    q = np.asarray(q, dtype=float)
    zeros = np.zeros_like(q)
    Yg = regressor(model, q, zeros, zeros)
    out = bank.apply(Yg, 0)
    for j in range(model.n):
        e = zeros.copy()
        e[:, j] = 1.0
        A = regressor(model, q, zeros, e) - Yg
        out += bank.apply_product(A, np.repeat(np.repeat(q[:, j, None, None], A.shape[1], 1),
                                               A.shape[2], 2), k=2, n_star=n_star)
    qh, dqh = bank.apply(q, 0), bank.apply(q, 1)
    zh = np.zeros_like(qh)
    out += regressor(model, qh, dqh, zh) - regressor(model, qh, zh, zh)
    return out, dqh


__all__ = ["iter_dataset_chunks", "iter_npz_chunks", "iter_npy_dir_chunks", "iter_bag_chunks",
           "iter_chunks", "NpyDirWriter", "FIRStates", "make_bank", "accumulate",
           "identify_streaming", "prediction_rms", "pa_product_regressor"]
