"""Dataset: one recorded (or simulated) run, independent of its file format."""
from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from robot_identification._files import check_input_file, check_memory
from robot_identification.errors import DataError
from robot_identification.model import current_parameter_names
from robot_identification.outputs import atomic_output

_ARRAYS = ("q", "dq", "ddq", "theta", "dtheta", "ddtheta", "tau", "tau_joint")
#: Largest median time step [s] of a recording (below 2 Hz the time column is not in seconds:
#: milliseconds, microseconds or sample numbers).
MAX_TIME_STEP = 0.5
#: Largest magnitude of a recorded position, velocity, acceleration or torque. No joint
#: quantity in SI units, nor in milli- or micro-units (mN*m, encoder counts), comes near it;
#: a value beyond it is a corrupt sample (uninitialised memory, a mis-parsed field) whose
#: squares overflow the normal equations (1e300 ended in a conic-solver panic).
MAX_ABS_VALUE = 1e15


@dataclass
class Dataset:
    """Motion data of one run.

    Attributes
    ----------
    t : ndarray (N,)
        Sample times [s], strictly increasing.
    q : ndarray (N, n) or None
        Link-side joint positions [rad | m]; None only for an elastic arm without link
        encoders that has joint torque sensors (``tau_joint``, docs/elastic.md).
    tau : ndarray (N, n) or None
        Rigid arms: joint torques. Elastic arms: motor torques u, link-referred [N*m];
        None only for an elastic arm with joint torque sensors and no motor torque or
        current recorded.
    joint_names : tuple of str
    theta : ndarray (N, n) or None
        Link-referred motor positions (elastic arms) [rad].
    dq, ddq, dtheta, ddtheta : ndarray (N, n) or None
        Measured derivatives; when absent they are computed numerically.
    tau_joint : ndarray (N, n) or None
        Elastic arms with joint torque sensors: the torque each elastic joint transmits to
        its link, tau_J = K (theta - q) + D (dtheta - dq) [N*m] (docs/elastic.md).
    true_parameters : dict or None
        Standard parameter name -> value, for simulated data with known parameters. Old
        drive keys (``joint1.fv``, datasets written before the drive parameters were
        named by field terms) are renamed on construction (``joint1.viscous``,
        :func:`~robot_identification.model.current_parameter_names`).
    metadata : dict
        Free-form provenance (robot, seed, SNR, source file, ...).
    """

    t: np.ndarray
    q: np.ndarray | None = None
    tau: np.ndarray | None = None
    joint_names: tuple = ()
    theta: np.ndarray | None = None
    dq: np.ndarray | None = None
    ddq: np.ndarray | None = None
    dtheta: np.ndarray | None = None
    ddtheta: np.ndarray | None = None
    tau_joint: np.ndarray | None = None
    true_parameters: dict | None = None
    metadata: dict = field(default_factory=dict)

    def __post_init__(self):
        self.joint_names = tuple(self.joint_names)
        if self.true_parameters:
            self.true_parameters = current_parameter_names(self.true_parameters)
        self.t = np.asarray(self.t, dtype=float)
        for name in _ARRAYS:
            v = getattr(self, name)
            if v is not None:
                setattr(self, name, np.asarray(v, dtype=float))

    @property
    def n_samples(self) -> int:
        return int(self.t.shape[0])

    @property
    def sample_rate(self) -> float:
        """Median sampling rate [Hz]."""
        return float(1.0 / np.median(np.diff(self.t)))

    def validate(self, min_samples: int = 10, elastic: bool | None = None):
        """Check shapes, finiteness and time stamps.

        Raises
        ------
        DataError
            Mismatched lengths or joint counts, a joint name given twice, NaN/inf values,
            values beyond :data:`MAX_ABS_VALUE` in magnitude (corrupt samples),
            non-increasing time, a median time step above :data:`MAX_TIME_STEP` (time not
            in seconds), fewer than ``min_samples`` samples, or signals that identify no
            model (:func:`check_signals`: e.g. missing motor positions for an elastic
            arm). The message starts with the file (``metadata['file']``) when the
            dataset was read from one.
        """
        try:
            return self._validate(min_samples, elastic)
        except DataError as exc:
            where = self.metadata.get("file") if isinstance(self.metadata, dict) else None
            if where and str(where) not in str(exc):
                raise DataError(f"'{where}': {exc}") from None
            raise

    def _validate(self, min_samples, elastic):
        N = self.t.shape[0] if self.t.ndim == 1 else -1
        if self.t.ndim != 1:
            raise DataError(f"time vector t must be 1-D, got shape {self.t.shape}")
        dup = sorted({n for n in self.joint_names if self.joint_names.count(n) > 1})
        if dup:
            raise DataError(f"joint name(s) {dup} appear twice in {list(self.joint_names)}")
        if N < min_samples:
            raise DataError(f"dataset has {N} samples; at least {min_samples} are needed")
        n = len(self.joint_names)
        for name in _ARRAYS:
            v = getattr(self, name)
            if v is None:
                continue
            if v.ndim != 2 or v.shape[1] != n:
                hint = " (transposed?)" if v.shape == (n, N) else ""
                raise DataError(f"'{name}' has shape {v.shape}; expected ({N}, {n}) for "
                                f"joints {list(self.joint_names)}{hint}")
            if v.shape[0] != N:
                raise DataError(f"'{name}' has {v.shape[0]} samples but t has {N} "
                                f"(mismatched lengths)")
            bad = ~np.isfinite(v)
            if bad.any():
                i, j = np.argwhere(bad)[0]
                raise DataError(f"'{name}' contains {int(bad.sum())} NaN/inf value(s), first "
                                f"at sample {i} (t = {self.t[i]:.6g} s), joint "
                                f"'{self.joint_names[j]}'")
            huge = np.abs(v) > MAX_ABS_VALUE
            if huge.any():
                i, j = np.argwhere(huge)[0]
                raise DataError(f"'{name}' holds {int(huge.sum())} value(s) beyond "
                                f"{MAX_ABS_VALUE:.0e} in magnitude, first {v[i, j]:.6g} at "
                                f"sample {i} (t = {self.t[i]:.6g} s), joint "
                                f"'{self.joint_names[j]}': a corrupt sample or a wrong unit")
        if not np.all(np.isfinite(self.t)):
            raise DataError("time vector t contains NaN/inf")
        dt = np.diff(self.t)
        if np.any(dt <= 0):
            i = int(np.flatnonzero(dt <= 0)[0])
            raise DataError(f"time is not strictly increasing at sample {i + 1} "
                            f"(t = {self.t[i]:.6g} -> {self.t[i + 1]:.6g} s)")
        step = float(np.median(dt)) if dt.size else 0.0
        if step > MAX_TIME_STEP:
            raise DataError(f"median time step {step:.6g} s ({1 / step:.3g} Hz): time stamps "
                            f"in milliseconds, microseconds or sample numbers instead of "
                            f"seconds? (robot recordings are sampled at > "
                            f"{1 / MAX_TIME_STEP:.3g} Hz)")
        check_signals(self, elastic)
        return self

    def check_velocities(self, window=0.1, moving=0.05):
        """Check measured velocities ``dq`` against the positions: over windows of ``window``
        seconds, the integral of ``dq`` must follow the change of ``q`` (least-squares factor
        in (0.5, 2), correlation above 0.5) for every joint whose position spans more than
        ``moving`` [rad | m]. Windowed increments average the position noise out. A joint
        whose position stands still must not move by its measured velocity either (the
        integral, linear drift removed, within 10 ``moving``).

        Raises
        ------
        DataError
            A moving joint whose measured velocity is 0 throughout (a driver that fills the
            field with zeros) or does not match its positions (deg/s, another column or
            joint); the message suggests ``--numerical-derivatives``. A still position
            with a moving velocity (a constant or stuck position column).
        """
        if self.dq is None or self.n_samples < 20:
            return self
        t, q, dq = self.t, self.q, self.dq
        step = float(np.median(np.diff(t)))
        m = max(int(round(window / step)), 2) if step > 0 else 2
        if self.n_samples < 4 * m:
            return self
        integral = np.vstack([np.zeros((1, dq.shape[1])), np.cumsum(
            0.5 * (dq[1:] + dq[:-1]) * np.diff(t)[:, None], axis=0)])
        idx = np.arange(0, self.n_samples, m)
        a, b = np.diff(q[idx], axis=0), np.diff(integral[idx], axis=0)
        where = self.metadata.get("file") if isinstance(self.metadata, dict) else None
        prefix = f"'{where}': " if where else ""
        for j, name in enumerate(self.joint_names):
            if np.ptp(q[:, j]) <= moving:
                # a still position but a moving velocity: detrended (a velocity offset
                # integrates to a drift, not a motion)
                s = t - t[0]
                drift = integral[:, j] - np.polyval(np.polyfit(s, integral[:, j], 1), s)
                if np.ptp(drift) > 10 * moving:
                    raise DataError(f"{prefix}the position of joint '{name}' stands still "
                                    f"(it spans {np.ptp(q[:, j]):.3g}) while its measured "
                                    f"velocity moves it over {np.ptp(drift):.3g}: a constant "
                                    f"or stuck position column (the csv: mapping, an encoder "
                                    f"or driver fault)?")
                continue
            sa, sb, sab = a[:, j] @ a[:, j], b[:, j] @ b[:, j], a[:, j] @ b[:, j]
            if not sb > 0:
                raise DataError(f"{prefix}the measured velocity of joint '{name}' is 0 in "
                                f"every sample while its position moves over "
                                f"{np.ptp(q[:, j]):.3g}: the velocity field is not filled; "
                                f"use --numerical-derivatives (identify, validate, "
                                f"report; or leave the velocity column out of the csv: "
                                f"mapping)")
            factor, corr = sab / sb, sab / np.sqrt(sa * sb)
            if not (corr > 0.5 and 0.5 < factor < 2.0):
                raise DataError(f"{prefix}the measured velocities of joint '{name}' do not "
                                f"match its positions: the position changes are {factor:.3g}x "
                                f"their integral (correlation {corr:.2f}); degrees/s, another "
                                f"column or another joint's? use "
                                f"--numerical-derivatives (or fix the velocity column)")
        return self

    def select_joints(self, names):
        """Dataset restricted/reordered to ``names``.

        Raises
        ------
        DataError
            A joint missing from the dataset.
        """
        names = tuple(names)
        missing = [n for n in names if n not in self.joint_names]
        if missing:
            where = self.metadata.get("file") if isinstance(self.metadata, dict) else None
            raise DataError(f"{f'{where!r}: ' if where else ''}dataset has no joint(s) "
                            f"{missing}; it has {list(self.joint_names)}")
        if names == self.joint_names:
            return self
        idx = [self.joint_names.index(n) for n in names]
        kw = {k: (None if getattr(self, k) is None else getattr(self, k)[:, idx])
              for k in _ARRAYS}
        return replace(self, joint_names=names, **kw)

    def slice(self, sl):
        """Samples ``sl`` (slice or index array) of the dataset."""
        kw = {k: (None if getattr(self, k) is None else getattr(self, k)[sl]) for k in _ARRAYS}
        return replace(self, t=self.t[sl], **kw)

    # ------------------------------------------------------------------ NPZ
    def save_npz(self, path, inputs=()):
        """Write the dataset to a ``.npz`` file atomically (format documented in
        docs/simulation.md).

        Raises
        ------
        ConfigError
            ``path`` is one of ``inputs``, a recording, or lies in a rosbag2 directory.
        """
        arrays = {k: getattr(self, k) for k in _ARRAYS if getattr(self, k) is not None}
        meta = {"joint_names": list(self.joint_names), "metadata": self.metadata,
                "true_parameters": self.true_parameters, "format": "robot_identification/1"}
        path = Path(path)
        with atomic_output(path, inputs, dataset=True) as tmp:
            np.savez_compressed(tmp, t=self.t, meta=np.array(json.dumps(meta, default=str)),
                                **arrays)
        return path

    @classmethod
    def load_npz(cls, path):
        """Read a dataset written by :meth:`save_npz`.

        Raises
        ------
        DataError
            Missing file, not a regular file, not a robot_identification NPZ, or arrays
            larger than half the available memory (before anything is read:
            :func:`check_npz_members`).
        """

        path = Path(path)
        check_input_file(path, "dataset file", DataError)
        try:
            with zipfile.ZipFile(path) as zf:        # bound the allocation before making it
                check_npz_members(zf, path)
                for info in zf.infolist():
                    if info.filename.endswith(".npy"):
                        with zf.open(info) as fp:
                            read_npy_header(fp, info.file_size, f"'{path}' member "
                                            f"{info.filename}", info.filename != "meta.npy")
            z = np.load(path, allow_pickle=False)
            missing = [k for k in ("t", "meta") if k not in z.files]
            if "q" not in z.files and "theta" not in z.files:    # positions of some kind
                missing.append("q")
            if "tau" not in z.files and "tau_joint" not in z.files:
                missing.append("tau")
            if missing:
                raise DataError(f"'{path}' is not a robot_identification dataset: no array(s) "
                                f"{missing} (it has {sorted(z.files)[:8]})")
            meta = json.loads(str(z["meta"]))
            kw = {k: z[k] for k in _ARRAYS if k in z.files}
            t = z["t"]
        except DataError:
            raise
        except Exception as exc:  # noqa: BLE001 - zipfile, zlib, numpy: any damaged file
            why = f"no array {exc}" if isinstance(exc, KeyError) else \
                f"{type(exc).__name__}: {str(exc)[:160]}"
            raise DataError(f"'{path}' is not a robot_identification dataset: {why}") from None
        meta = check_meta(meta, path)
        for name, a in dict(kw, t=t).items():
            check_float_dtype(a.dtype, f"'{path}' array '{name}'")
        return cls(t=t, joint_names=meta["joint_names"],
                   true_parameters=meta.get("true_parameters"),
                   metadata=dict(meta.get("metadata") or {}, file=str(path)), **kw)


#: Largest metadata member of a dataset (npz ``meta.npy``, npy directory ``meta.json``)
#: [bytes]: joint names, provenance and true parameters take kilobytes.
MAX_META_BYTES = 16 * 2**20
#: Most members of a dataset ``.npz`` (it holds at most 8: t, 7 arrays and meta).
MAX_NPZ_MEMBERS = 64


def check_npz_members(zf, path, stream=False):
    """Bound a dataset ``.npz`` before anything is decompressed: at most
    :data:`MAX_NPZ_MEMBERS` members, a ``meta.npy`` of at most :data:`MAX_META_BYTES` and,
    unless it is streamed (``stream``), arrays that fit in half the available memory (the
    sizes the archive declares: a zip bomb of a few kB declaring gigabytes is refused
    before it is inflated).

    Raises
    ------
    DataError
        Naming ``path`` and the sizes.
    """
    infos = zf.infolist()
    if len(infos) > MAX_NPZ_MEMBERS:
        raise DataError(f"'{path}' holds {len(infos)} members; a dataset has at most "
                        f"{MAX_NPZ_MEMBERS} (t, q, tau, ... and meta)")
    meta = next((i for i in infos if i.filename == "meta.npy"), None)
    if meta is not None and meta.file_size > MAX_META_BYTES:
        raise DataError(f"'{path}' member meta.npy declares {meta.file_size} bytes, above the "
                        f"{MAX_META_BYTES // 2**20} MiB of any dataset's metadata")
    if not stream:
        check_memory(sum(i.file_size for i in infos), f"dataset '{path}'", DataError,
                     ": stream it with identify-stream (Recording.from_path)")


#: What each signal of a recording measures (docs/elastic.md, sensor sets).
_SIGNAL_MEANING = {"q": "link positions (link encoders)",
                   "theta": "motor positions (motor encoders)",
                   "tau": "motor torques (motor currents x drive gains)",
                   "tau_joint": "joint torques (joint torque sensors)"}


def check_signals(dataset, elastic=None):
    """Refuse a dataset whose signals identify no model (docs/elastic.md, sensor sets).

    Rigid arms need positions ``q`` and torques ``tau``. Elastic arms need motor positions
    ``theta``, the joint deflection (link positions ``q`` or joint torques ``tau_joint``)
    and a torque (``tau`` or ``tau_joint``): (a) q, theta, tau; (b) theta, tau_joint
    [, tau] [, q]. ``elastic=None`` (unknown) accepts either.

    Raises
    ------
    DataError
        Naming the missing signal; for (c), motor positions and motor torques only, why
        inverse-dynamics least squares cannot identify an elastic arm from them; joint
        torques that equal the motor torques sample for sample (one signal twice).
    """
    d = dataset
    if elastic is None:
        elastic = d.theta is not None
        if not elastic and (d.q is None or d.tau is None) and d.tau_joint is not None:
            elastic = True
    if not elastic:
        missing = [f"'{k}' ({_SIGNAL_MEANING[k].split(' (')[0]})" for k in ("q", "tau")
                   if getattr(d, k) is None]
        if missing:
            raise DataError(f"the dataset has no {' and no '.join(missing)}")
        return d
    if d.theta is None:
        raise DataError("the robot has elastic joints but the dataset has no motor "
                        "positions (theta / motor_states)")
    if d.q is None and d.tau_joint is None:
        raise DataError(
            "the robot has elastic joints and the data hold motor positions and "
            + ("motor torques" if d.tau is not None else "no torque") + " only: the "
            "joint deflection is not measured (link positions from link encoders, or "
            "joint torques from joint torque sensors), so inverse-dynamics least squares "
            "cannot identify the link dynamics nor the joint stiffness; record link "
            "positions or joint torques, or identify a rigid model on the motor positions "
            "(docs/elastic.md, sensor set c)")
    if d.tau is None and d.tau_joint is None:
        raise DataError("the robot has elastic joints and the data hold no torque: record "
                        "motor torques (currents) or joint torques (joint torque sensors)")
    if d.tau is not None and d.tau_joint is not None and np.array_equal(d.tau, d.tau_joint) \
            and np.any(d.tau):
        raise DataError("the joint torques equal the motor torques in every sample: one "
                        "signal recorded twice (a driver that copies its effort to both "
                        "topics?), not joint torque sensors; leave joint_torque out of the "
                        "csv: mapping or the bag: section (joint_torque: null)")
    return d


def check_meta(meta, source):
    """The metadata mapping of a dataset file (npz ``meta``, npy directory ``meta.json``),
    checked: ``joint_names`` a non-empty list of distinct strings, ``metadata`` and
    ``true_parameters`` mappings, true parameter values numbers.

    Raises
    ------
    DataError
        Naming ``source`` and the first problem.
    """
    names = meta.get("joint_names") if isinstance(meta, dict) else None
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise DataError(f"'{source}': metadata lacks 'joint_names' (a list of joint names)")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise DataError(f"'{source}': metadata names joint(s) {dup} twice in {names}")
    if not isinstance(meta.get("metadata") or {}, dict) or not isinstance(
            meta.get("true_parameters") or {}, dict):
        raise DataError(f"'{source}': metadata 'metadata' and 'true_parameters' must be "
                        f"mappings")
    for k, v in (meta.get("true_parameters") or {}).items():
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise DataError(f"'{source}': true parameter '{k}' must be a number, got {v!r}")
    return meta


def check_float_dtype(dtype, name):
    """Refuse integer and boolean arrays: samples are floating-point SI values.

    Raises
    ------
    DataError
        ``dtype`` is not a floating-point type (integers look like raw encoder counts or
        milli-units).
    """
    if np.dtype(dtype).kind != "f":
        raise DataError(f"{name} has dtype {np.dtype(dtype)}; expected floating-point values "
                        f"in SI units (rad, N*m, s): integers look like raw encoder counts or "
                        f"milli-units")


def read_npy_header(fp, size=None, name="array", numeric=True):
    """Shape, Fortran flag and dtype of the .npy stream ``fp``, checked against its ``size``.

    Parameters
    ----------
    fp : binary file object at the start of a .npy file (or archive member)
    size : int, optional
        Bytes of the whole .npy stream; the data the header declares must fill it exactly
        (checked before anything is allocated).
    name : str
        How the file is named in messages.
    numeric : bool
        Require a numeric dtype (False for the metadata string).

    Returns
    -------
    shape : tuple, fortran_order : bool, dtype : numpy.dtype

    Raises
    ------
    DataError
        Not a .npy header, a non-numeric dtype, more than 2 dimensions, or a header that
        declares more (or fewer) bytes than the file holds.
    """
    try:
        version = np.lib.format.read_magic(fp)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fp)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(fp)
    except Exception as exc:  # noqa: BLE001 - numpy's header parser raises many types
        raise DataError(f"{name}: not a valid .npy header ({type(exc).__name__}: "
                        f"{str(exc)[:80]})") from None
    if dtype.hasobject or (numeric and (dtype.kind not in "fiub" or dtype.fields is not None)):
        raise DataError(f"{name}: dtype {dtype} is not numeric")
    if len(shape) > 2:
        raise DataError(f"{name}: shape {shape}; expected (N,) or (N, n)")
    if size is not None:
        declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
        held = size - fp.tell()
        if declared != held:
            raise DataError(f"{name}: the header declares shape {shape} ({declared} bytes) but "
                            f"the file holds {held} bytes of data (truncated or corrupt)")
    return shape, fortran, dtype


def uniform_grid(t, step, source=None, ratio=4.0):
    # ``source``: what the message starts with (``CSV 'run.csv'``, ``'bag_dir'``)
    """Uniform time grid from ``t[0]`` to ``t[-1]`` with ``step`` [s], refused before it is
    allocated when it would hold more than ``ratio`` times the samples of ``t``: a clock
    jump (header stamps of 0 before the clock started, a second recording appended, a pause)
    would otherwise end in "out of memory" after minutes, or in an interpolated stretch
    of invented data.

    Raises
    ------
    DataError
        The grid is too long; the message names the jump, where it lies and ``source``.
    """
    t = np.asarray(t, dtype=float)
    n_grid = np.floor((t[-1] - t[0]) / step + 1e-9) + 1
    if n_grid > ratio * len(t):
        dt = np.diff(t)
        k = int(np.argmax(dt))
        where = f"{source}: " if source else ""
        zero = (" (years: messages stamped 0, or by another clock, before the clock "
                "ran?)" if dt[k] > 1e7 else "")
        raise DataError(f"{where}time jumps by {dt[k]:.6g} s after {t[k] - t[0]:.6g} s "
                        f"(sample {k + 1}; median step {step:.3g} s){zero}: a uniform grid "
                        f"would need {n_grid:.3g} samples for {len(t)}; split the file "
                        f"there or drop the samples before it")
    return t[0] + step * np.arange(int(n_grid))
