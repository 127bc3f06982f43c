"""Recording sources: each recording is read as an iterator of :class:`Dataset` chunks.

A :class:`Recording` can be read more than once (robust estimators make several passes):
an in-memory dataset is one chunk (or slices of it), files are read chunk by chunk in
bounded memory -- ``.npz`` archives, dataset directories of ``.npy`` files
(:class:`NpyDirWriter`), rosbag2 directories / ``.mcap`` (message by message), CSV files
(:func:`~robot_identification.data.iter_csv_chunks`, the robot config's column mapping).
"""
from __future__ import annotations

import itertools
import json
import os
import zipfile
import zlib
from dataclasses import replace
from pathlib import Path

import numpy as np

from robot_identification._files import check_input_file
from robot_identification.data import (
    MAX_META_BYTES, Dataset, check_float_dtype, check_meta, check_npz_members,
    iter_bag_chunks as read_bag_chunks, iter_csv_chunks, load_dataset, read_npy_header,
    uniform_grid)
from robot_identification.errors import DataError
from robot_identification.identification._sensors import (
    link_positions_from_joint_torque, nominal_compliance)

#: Default samples per chunk read from files.
READ_CHUNK = 200_000


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
        Not a .npy header, non-float dtype, or a size mismatch. A Fortran-ordered
        (column-major) array is read whole, not row by row.
    """
    shape, fortran, dtype = read_npy_header(fp, size, name)
    check_float_dtype(dtype, name)
    row = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    if fortran and len(shape) > 1:
        # column-major (np.save of a transposed or Fortran array): a row's values lie one
        # column length apart, so the member is read whole (its size was checked above)
        total = int(np.prod(shape)) * dtype.itemsize
        buf = fp.read(total)
        if len(buf) != total:
            raise DataError(f"{name}: ends after {len(buf)} of {total} bytes (truncated)")
        whole = np.frombuffer(buf, dtype=dtype).reshape(tuple(shape)[::-1]).T
        done = [0]

        def read_whole(n):
            s = done[0]
            done[0] = s + n
            return np.ascontiguousarray(whole[s:s + n], dtype=float)
        return shape, read_whole

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
            where = (meta.get("metadata") or {}).get("file")
            n = len(meta.get("joint_names") or ())
            hint = " (transposed?)" if tuple(shape) == (n, N) else ""
            raise DataError(f"{f'{where!r}: ' if where else ''}array '{name}' has {shape[0]} "
                            f"samples, 't' has {N}{hint}")
    for s in range(0, N, chunk):
        n = min(chunk, N - s)
        arrays = {k: rd(n) for k, (_, rd) in readers.items()}
        yield Dataset(t=arrays.pop("t"), joint_names=list(meta["joint_names"]),
                      true_parameters=meta.get("true_parameters") or {},
                      metadata=meta.get("metadata") or {}, **arrays)


def _meta_from(raw, source):
    try:
        meta = json.loads(str(raw))
    except ValueError as exc:
        raise DataError(f"'{source}': metadata is not JSON ({exc})") from None
    meta = check_meta(meta, source)
    meta["metadata"] = dict(meta.get("metadata") or {}, file=str(source))
    return meta


def iter_npz_chunks(path, chunk: int = READ_CHUNK, arrays=("q", "tau", "theta", "tau_joint",
                                                           "dq", "ddq", "dtheta", "ddtheta")):
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
        derivatives are read when the file holds them (the ``butterworth`` strategy filters
        them instead of differentiating positions, as for a dataset loaded whole).

    Yields
    ------
    Dataset

    Raises
    ------
    DataError
        Missing file or members, inconsistent lengths.
    """
    path = Path(path)
    check_input_file(path, "dataset file", DataError)
    try:
        zf = zipfile.ZipFile(path)
    except Exception as exc:  # noqa: BLE001 - BadZipFile, NotImplementedError, OSError, ...
        raise DataError(f"'{path}' is not a readable .npz archive ({type(exc).__name__}: "
                        f"{str(exc)[:80]})") from None
    with zf:
        check_npz_members(zf, path, stream=True)
        names = {Path(n).stem for n in zf.namelist()}
        for need in ("t", "meta"):
            if need not in names:
                raise DataError(f"'{path}' lacks the array '{need}'")
        for need, other in (("q", "theta"), ("tau", "tau_joint")):
            if need not in names and other not in names:
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
    if not os.path.lexists(path / "meta.json"):
        raise DataError(f"'{path}' is not a dataset directory (no meta.json)")
    check_input_file(path / "meta.json", "dataset metadata", DataError, MAX_META_BYTES)
    meta = _meta_from((path / "meta.json").read_bytes().decode("utf-8", "replace"),
                      path / "meta.json")
    handles = {}
    for k in ("t", "q", "tau", "theta"):
        f = path / f"{k}.npy"
        if os.path.lexists(f):
            try:
                check_input_file(f, "dataset array", DataError)
            except DataError:
                for fp in handles.values():
                    fp.close()
                raise
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
        Directory (created; an existing non-empty one is refused with a DataError: it
        would overwrite a recording's arrays).
    n_samples : int
        Total samples (written into the .npy headers up front).
    joint_names : list of str
    elastic : bool
        Also write ``theta``.
    true_parameters, metadata : dict, optional
    """

    def __init__(self, path, n_samples, joint_names, elastic=False, true_parameters=None,
                 metadata=None):
        self.path = Path(path)
        if self.path.exists() and (not self.path.is_dir() or any(self.path.iterdir())):
            raise DataError(f"dataset directory '{self.path}' exists already; recorded data "
                            f"is never overwritten: choose another name")
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


def iter_bag_chunks(path, chunk: int = READ_CHUNK, **kwargs):
    """A rosbag2 recording read message by message in chunks
    (:func:`robot_identification.data.iter_bag_chunks`, bounded memory)."""
    return read_bag_chunks(path, chunk, **kwargs)


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
    suffix = path.suffix.lower()
    if not path.is_dir():                # a FIFO, /dev/zero, a link loop: named
        check_input_file(path, "dataset file", DataError)
    is_bag = path.is_dir() and not (path / "meta.json").is_file() or \
        suffix in (".mcap", ".db3")
    if effort_lag and not is_bag:
        raise DataError(f"an effort lag applies to rosbag2 recordings only, not '{path}'")
    if suffix == ".npz":
        return iter_npz_chunks(path, chunk)
    if path.is_dir() and (path / "meta.json").is_file():
        return iter_npy_dir_chunks(path, chunk)
    if path.is_dir() or suffix in (".mcap", ".db3"):
        return iter_bag_chunks(path, chunk, effort_lag=effort_lag)
    if not path.exists():
        raise DataError(f"input '{path}' does not exist")
    raise DataError(f"cannot stream '{path}': expected .npz, a dataset directory or a rosbag2")


def resample_uniform(ds: Dataset) -> Dataset:
    """The dataset on a uniform time grid (linear interpolation) when its steps vary by more
    than 5 % of the median step; unchanged otherwise. Zero-phase filters and FIR banks
    assume uniform sampling.

    Raises
    ------
    DataError
        A clock jump that would make the grid more than 4x the samples
        (:func:`~robot_identification.data._dataset.uniform_grid`)."""
    t = ds.t
    dt = np.diff(t)
    fs = 1.0 / np.median(dt)
    if np.max(np.abs(dt - 1 / fs)) <= 0.05 / fs:
        return ds
    where = ds.metadata.get("file") if isinstance(ds.metadata, dict) else None
    tu = uniform_grid(t, 1.0 / fs, f"'{where}'" if where else None)
    tu = tu[tu < t[-1]]
    kw = {}
    for k in ("q", "dq", "ddq", "theta", "dtheta", "ddtheta", "tau", "tau_joint"):
        v = getattr(ds, k)
        if v is not None:
            kw[k] = np.column_stack([np.interp(tu, t, v[:, j]) for j in range(v.shape[1])])
    return replace(ds, t=tu, **kw)


_SAMPLED = ("q", "dq", "ddq", "theta", "dtheta", "ddtheta", "tau", "tau_joint")


def concat_chunks(chunks):
    """One :class:`Dataset` of consecutive chunks (the first's names, truth and metadata)."""
    if len(chunks) == 1:
        return chunks[0]
    first = chunks[0]
    kw = {}
    for k in _SAMPLED:
        if getattr(first, k) is not None:
            kw[k] = np.concatenate([getattr(c, k) for c in chunks], axis=0)
    return Dataset(t=np.concatenate([c.t for c in chunks]), joint_names=first.joint_names,
                   true_parameters=first.true_parameters, metadata=first.metadata, **kw)


def irregular(t) -> bool:
    """Whether the time steps of ``t`` vary by more than 5 % of their median (the rule of
    :func:`resample_uniform`)."""
    dt = np.diff(np.asarray(t, dtype=float))
    if dt.size == 0:
        return False
    step = float(np.median(dt))
    return bool(np.max(np.abs(dt - step)) > 0.05 * step)


#: Heads (peeked first chunks) of file recordings read by this process after unpickling (a
#: Dask worker): the info, equations and selection tasks of one recording read its head
#: once. Oldest dropped above :data:`HEAD_CACHE_SAMPLES` samples in all.
_HEADS: dict = {}
HEAD_CACHE_SAMPLES = 1_000_000


def _file_key(path, chunk):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (str(Path(path).resolve()), st.st_mtime_ns, st.st_size, int(chunk))


def model_key(model):
    """A picklable key of a robot model (its config's name, source and standard parameter
    names): a summary cached on a :class:`Recording` for one model is reused on a Dask
    worker holding a copy of that model."""
    return (str(model.config.name), str(model.config.source), tuple(model.parameter_names))


class Recording:
    """One recording as a re-readable source of consecutive :class:`Dataset` chunks.

    Build with :meth:`from_dataset`, :meth:`from_path` or :meth:`from_chunks`.

    Attributes
    ----------
    name : str
        Label (file name or ``dataset``).
    dataset : Dataset or None
        The whole recording as recorded (before resampling) when it is in memory; it is
        summarised whole for the diagnostics.
    """

    def __init__(self, open_chunks, name="recording", single_use=False, dataset=None):
        self._open = open_chunks
        self.name = str(name)
        self.single_use = single_use
        self._used = False
        self.dataset = dataset      # the whole recording when it is in memory
        self._head = None
        #: (path, mtime, size, chunk) of a file source: the key of its head in a Dask
        #: worker's :data:`_HEADS`
        self.cache_key = None
        #: the recording as read, before :meth:`map` (e.g. link positions reconstructed
        #: from joint torques, docs/elastic.md)
        self.raw = self
        #: (model, recording_summary) once summarised: identify() summarises every
        #: recording to resolve 'auto' settings, the map step reuses it for the diagnostics
        self.summary_cache = None

    def __getstate__(self):
        """Pickled for a Dask worker: without the peeked head (the worker reads its own
        chunks: no recording data is shipped for files) and with the summary keyed by the
        model's :func:`model_key` instead of the model object."""
        state = dict(self.__dict__)
        if not self.single_use:
            state["_head"] = None
        state["_unpickled"] = True
        cached = state.get("summary_cache")
        if cached is not None and not isinstance(cached[0], tuple):
            state["summary_cache"] = (model_key(cached[0]), cached[1])
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        key = state.get("cache_key")
        if key is not None and self._head is None:
            self._head = _HEADS.get(key)

    def chunks(self):
        """A new iterator over the chunks.

        Raises
        ------
        DataError
            A single-use source (an iterator) read twice.
        """
        if self.single_use and self._used:
            raise DataError(f"recording '{self.name}' is an iterator of chunks and was already "
                            f"read; give a dataset or a file for estimators that need several "
                            f"passes (irls)")
        self._used = True
        return iter(self._open())

    def peek(self, n_samples):
        """The first chunks, at least ``n_samples`` samples in all (fewer when the recording
        is shorter). Peeking does not use up a single-use recording: :meth:`chunks` still
        yields everything."""
        if self._head is None:
            it = self.chunks()
            head, n = [], 0
            for ds in it:
                head.append(ds)
                n += ds.t.shape[0]
                if n >= n_samples:
                    break
            self._head = head
            if self.cache_key is not None and getattr(self, "_unpickled", False):
                _HEADS[self.cache_key] = head            # a worker's next task reuses it
                while len(_HEADS) > 1 and sum(c.t.shape[0] for h in _HEADS.values()
                                              for c in h) > HEAD_CACHE_SAMPLES:
                    _HEADS.pop(next(iter(_HEADS)))
            if self.single_use:
                self._used = False
                self._open = lambda: itertools.chain(head, it)
        return self._head

    def map(self, fn):
        """The recording with every chunk (and the in-memory dataset) replaced by
        ``fn(chunk)``; :attr:`raw` stays the recording as read."""
        rec = Recording(lambda: (fn(c) for c in self.chunks()), self.name, self.single_use,
                        None if self.dataset is None else fn(self.dataset))
        rec.raw = self.raw
        return rec

    @classmethod
    def from_dataset(cls, dataset: Dataset, model=None, chunk: int | None = None):
        """An in-memory dataset: validated, resampled onto a uniform grid when irregular
        (:func:`resample_uniform`), read as one chunk (or ``chunk``-sample slices).

        Raises
        ------
        DataError
            Invalid dataset (see :meth:`Dataset.validate`), missing joints.
        """
        if model is not None:
            dataset = dataset.select_joints(model.joint_names)
        raw = dataset.validate(min_samples=20, elastic=None if model is None
                               else model.config.elastic)
        dataset = resample_uniform(raw)
        name = dataset.metadata.get("source", "dataset") if dataset.metadata else "dataset"
        if chunk is None:
            return cls(lambda: [dataset], name, dataset=raw)
        if int(chunk) < 1:
            raise DataError(f"chunk must be at least 1 sample, got {chunk}")
        return cls(lambda: iter_dataset_chunks(dataset, int(chunk)), name, dataset=raw)

    @classmethod
    def from_path(cls, path, model=None, chunk: int = READ_CHUNK, whole_if_irregular=True,
                  **kwargs):
        """A file: ``.npz``, dataset directory, rosbag2 and CSV (``kwargs``: the keywords
        of :func:`~robot_identification.data.read_csv`) are streamed chunk by chunk; a CSV
        whose first chunk is irregularly sampled is loaded whole with :func:`load_dataset`
        (resampled onto a uniform grid; not with ``whole_if_irregular=False``).

        Raises
        ------
        DataError
            Missing file or unknown format.
        """
        path = Path(path)
        suffix = path.suffix.lower()          # a directory run.csv: named by the CSV reader
        if suffix != ".csv" and (suffix == ".npz" or path.is_dir() or suffix in (".mcap",
                                                                                ".db3")):
            if not os.path.lexists(path):     # a symbolic-link loop: named by the reader
                raise DataError(f"input '{path}' does not exist")
            if suffix != ".npz" and not (path / "meta.json").is_file():
                if model is not None and model.config.extra.get("bag"):
                    kwargs.setdefault("signals", model.config.extra["bag"])
                rec = cls(lambda: iter_bag_chunks(path, chunk, **kwargs), path)
            else:
                rec = cls(lambda: iter_chunks(path, chunk), path)
        elif suffix == ".csv" and path.is_file():
            check_input_file(path, "CSV file", DataError)
            csv_chunks = iter_csv_chunks          # raises ConfigError on a bad mapping now
            csv_chunks(path, chunk, model=model, **kwargs)
            rec = cls(lambda: csv_chunks(path, chunk, model=model, **kwargs), path)
            head = rec.peek(1)
            if whole_if_irregular and head and irregular(head[0].t):    # resampled whole
                return cls.from_dataset(load_dataset(path, model=model, **kwargs), model)
        else:
            return cls.from_dataset(load_dataset(path, model=model, **kwargs), model)
        rec.cache_key = _file_key(path, chunk)
        return rec

    @classmethod
    def from_chunks(cls, chunks, name="chunks"):
        """An iterable of consecutive chunks (read once when it is an iterator)."""
        if isinstance(chunks, (list, tuple)):
            return cls(lambda: chunks, name)
        return cls(lambda: chunks, name, single_use=True)


def as_recording(item, model=None):
    """:class:`Recording` of a Recording, Dataset, path or iterable of chunks.

    An elastic arm's recording without link positions (joint torque sensors instead) gets
    q = theta - tau_J / K with the config's nominal stiffness K, and one without motor
    torques a zero ``tau`` whose rows are not used
    (:func:`~robot_identification.identification._sensors.link_positions_from_joint_torque`;
    docs/elastic.md, sensor set b)."""
    if isinstance(item, Recording):
        rec = item
    elif isinstance(item, Dataset):
        rec = Recording.from_dataset(item, model)
    elif isinstance(item, (str, Path)):
        rec = Recording.from_path(item, model)
    else:
        rec = Recording.from_chunks(item)
    if model is not None and model.config.elastic:
        head = rec.dataset if rec.dataset is not None else next(iter(rec.peek(20_000)), None)
        if head is not None and (head.q is None or head.tau is None):
            c = nominal_compliance(model) if head.q is None else None
            rec = rec.map(lambda ds: link_positions_from_joint_torque(ds, c))
    return rec
