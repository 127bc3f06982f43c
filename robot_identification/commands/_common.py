"""Argument helpers shared by the CLI sub-commands."""
from __future__ import annotations

import numpy as np


def add_robot_arguments(parser, required=True):
    """``--robot NAME`` or ``--config YAML [--urdf URDF|XACRO]``."""
    g = parser.add_argument_group("robot")
    g.add_argument("--robot", help="shipped robot name (see `robot-identification robots`)")
    g.add_argument("--config", help="robot config YAML (instead of --robot)")
    g.add_argument("--urdf", help="URDF or xacro file overriding the one the config names")


def robot_from_args(args):
    """RobotModel from ``--robot`` / ``--config`` / ``--urdf``.

    Raises
    ------
    ConfigError
        Neither or both of ``--robot`` and ``--config``.
    """
    from robot_identification.errors import ConfigError  # start-up: commands/__init__.py
    from robot_identification.model import load_robot  # start-up: commands/__init__.py
    if not args.robot and not args.config:
        raise ConfigError("give --robot NAME or --config FILE")
    if args.robot and args.config:
        raise ConfigError(f"give --robot NAME or --config FILE, not both (--config "
                          f"'{args.config}' would silently replace --robot {args.robot})")
    return load_robot(args.robot, config=args.config, urdf=args.urdf)


#: Arguments that name files or directories a command reads.
INPUT_ARGUMENTS = ("config", "urdf", "data", "results", "trajectory", "unloaded", "loaded")


def check_empty_arguments(args):
    """Refuse a file or robot argument that is an empty string (``--data "$RUN"`` with
    ``RUN`` unset): '' is the working directory as a path, and the message blamed something
    else (the output lying inside the input directory '.', the URDF being a directory).

    Raises
    ------
    ConfigError
        The first empty argument.
    """
    from robot_identification.errors import ConfigError  # start-up: commands/__init__.py
    for key in INPUT_ARGUMENTS + ("output", "prior", "robot"):
        value = getattr(args, key, None)
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(v, str) and not v.strip():
                what = f"blank ({v!r})" if v else "an empty string"
                raise ConfigError(f"--{key} is {what}: a path or name was expected (an unset "
                                  f"shell variable?)")


def input_paths(args, model=None) -> list:
    """Every input file/directory named on the command line (and the model's config and
    URDF, and a prior file of ``--prior`` or the config's ``identification.prior``), for
    :func:`robot_identification.outputs.check_output`."""
    out = []
    for key in INPUT_ARGUMENTS:
        v = getattr(args, key, None)
        if v is None:
            continue
        out.extend(v if isinstance(v, (list, tuple)) else [v])
    priors = [getattr(args, "prior", None)]      # --prior FILE (not 'nominal' / 'none')
    if model is not None:
        out += [model.config.source, model.config.urdf_path]
        priors.append(getattr(model.config.identification, "prior", None))
    out += [p for p in priors if isinstance(p, str) and p not in ("nominal", "none")]
    return out


def check_output_argument(args, model=None, key="output", dataset=False):
    """Refuse ``--output`` (or ``key``) naming an input, before any long computation.

    Raises
    ------
    ConfigError
        See :func:`robot_identification.outputs.check_output`.
    """
    from robot_identification.outputs import check_output  # start-up: commands/__init__.py
    value = getattr(args, key.replace("-", "_"), None)
    if value is not None:
        check_output(value, input_paths(args, model), f"--{key}", dataset)
        refuse_existing(value, f"--{key}", args)


def refuse_existing(path, what, args, folder_marker=None):
    """Refuse an output that exists (a results file from an earlier run, ``results.yaml``
    when ``--output`` was forgotten) unless ``--force`` was given; ``folder_marker``: for an
    output directory, the file whose presence means a former output (``report.html``).

    Raises
    ------
    ConfigError
        The output exists and ``args.force`` is not set.
    """
    import os  # start-up: commands/__init__.py

    from robot_identification.errors import ConfigError  # start-up: commands/__init__.py
    from pathlib import Path  # start-up: commands/__init__.py
    target = Path(path) / folder_marker if folder_marker else Path(path)
    if getattr(args, "force", False) or not os.path.lexists(target):
        return
    try:
        special = not Path(target).is_file()       # /dev/null, a FIFO: no data to lose
    except OSError:
        special = False
    if special and not folder_marker:
        return
    raise ConfigError(f"{what} '{path}' exists (from an earlier run?): give --force to "
                      f"replace it, or another name")


def add_effort_lag_argument(parser):
    """``--effort-lag PERIODS``: what the identifier node's ``effort_lag_periods`` does."""
    parser.add_argument(
        "--effort-lag", type=float, default=0.0, metavar="PERIODS",
        help="rosbag2 only: recorded efforts lag the states by this many sample periods "
             "(0.5 for bags of simulated_robot, as the demo's identifier node uses; default "
             "0, the identifier node's default)")


def add_derivatives_argument(parser):
    """``--numerical-derivatives``: ignore recorded velocities/accelerations (identify,
    validate and report read data alike; the velocity check's message suggests it)."""
    parser.add_argument("--numerical-derivatives", action="store_true",
                        help="ignore measured velocities/accelerations; differentiate "
                             "positions")


def _checked(ds, model, path, measured_velocities, min_samples=20):
    """``ds`` restricted to the model's joints and validated (the checks of
    :func:`load_data`); the message starts with the file."""
    from dataclasses import replace  # start-up: commands/__init__.py

    from robot_identification.errors import DataError  # start-up: commands/__init__.py
    try:
        ds = ds.select_joints(model.joint_names).validate(min_samples=min_samples,
                                                           elastic=model.config.elastic)
        if measured_velocities:
            ds.check_velocities()
        else:
            ds = replace(ds, dq=None, ddq=None, dtheta=None, ddtheta=None)
        silent = [j for j, col in zip(ds.joint_names, ds.tau.T) if not np.any(col)] \
            if ds.tau is not None else []
        if silent:
            raise DataError(f"the torque of joint(s) {silent} is 0 in every sample: torques "
                            f"not recorded (check the csv: torque/current columns, the bag's "
                            f"effort field)")
    except DataError as exc:
        if str(path) in str(exc):
            raise
        raise type(exc)(f"'{path}': {exc}") from None
    return ds


#: CSV files smaller than this [bytes] are read whole (a few ten thousand rows, tens of MB
#: in memory at most; streaming one whose time stamps turn out irregular would parse it
#: twice).
CSV_STREAM_BYTES = 8 << 20


def streams(path, effort_lag=0.0) -> bool:
    """Whether ``path`` is read chunk by chunk: a dataset ``.npz``, a dataset directory of
    ``.npy`` files (``meta.json``), a CSV file of at least :data:`CSV_STREAM_BYTES` or a
    rosbag2 recording (without an effort lag: the streamed bag reader shifts efforts by
    less than one period only)."""
    import os  # start-up: commands/__init__.py
    from pathlib import Path  # start-up: commands/__init__.py
    p = Path(path)
    if _is_bag(p) and not (p.is_dir() and (p / "meta.json").is_file()):
        return not effort_lag
    if p.suffix.lower() == ".csv":
        try:
            return p.is_file() and os.stat(p).st_size >= CSV_STREAM_BYTES
        except OSError:
            return False
    return p.suffix.lower() == ".npz" or (p.is_dir() and (p / "meta.json").is_file())


def open_recordings(paths, model, effort_lag=0.0, measured_velocities=True):
    """The recordings of ``paths`` for the engine, each recording once
    (:func:`check_distinct_recordings`): streamed files (:func:`streams`) as
    :class:`~robot_identification.identification.Recording` read chunk by chunk (memory
    bounded by the chunk), their first chunks (the engine's summarised head) checked at once
    as :func:`load_data` checks a whole dataset, so that a bad file is named before any work
    (every chunk's values are checked again when the engine reads it); loaded whole: files
    whose first chunks are not uniformly sampled (jittery stamps or a time jump: resampled
    and diagnosed whole), rosbag2 recordings with an effort lag or whose first chunk the
    streamed reader refuses (stamps out of order, topics stamped apart: the whole reader
    sorts and interpolates). A CSV's malformed-row count is checked when the engine reaches
    its end.

    Returns
    -------
    recordings : list of Recording
    whole : dict
        Path (str) -> why it was loaded whole (``"irregular time stamps"``, ``"CSV under 8
        MiB"``, ``"rosbag2 with --effort-lag"``, ``"rosbag2: ..."``).

    Raises
    ------
    ConfigError, DataError
        As :func:`load_data`.
    """
    from dataclasses import replace  # start-up: commands/__init__.py

    from robot_identification.errors import DataError  # start-up: commands/__init__.py
    from robot_identification.identification import (  # start-up: commands/__init__.py
        SUMMARY_SAMPLES, Recording, concat_chunks, irregular)
    check_distinct_recordings(paths)
    out, whole = [], {}
    for p in paths:
        rec = None
        if streams(p, effort_lag):
            if effort_lag:
                _load_options(p, effort_lag)         # the same refusal as load_data
            try:
                rec = Recording.from_path(p, model, whole_if_irregular=False)
                head = rec.peek(SUMMARY_SAMPLES)
            except DataError as exc:
                if not _is_bag(p):
                    raise
                rec, why = None, f"rosbag2: {str(exc)[:120]}"
            if rec is not None and not head:
                raise DataError(f"'{p}' holds no samples")
            unpaired = 0 if rec is None else (head[-1].metadata or {}).get("unpaired") or 0
            if rec is None:
                pass
            elif unpaired > 0.01 * sum(c.t.shape[0] for c in head):
                rec, why = None, (f"rosbag2: {unpaired} messages of its first chunk without a "
                                  f"partner of the same stamp (topics stamped apart: "
                                  f"interpolated whole)")
            elif irregular(concat_chunks(head).t):
                rec, why = None, "irregular time stamps"
            else:
                first = concat_chunks(head)
                warn_unmodelled_joints(first, model, p)
                _checked(first, model, p, measured_velocities)
        else:
            why = ("rosbag2 with --effort-lag" if _is_bag(p) else
                   f"CSV under {CSV_STREAM_BYTES >> 20} MiB" if str(p).lower().endswith(".csv")
                   else "format")
        if rec is None:
            rec = Recording.from_dataset(load_data(p, model, effort_lag, measured_velocities),
                                         model)
            whole[str(p)] = why
        elif not measured_velocities:
            rec = rec.map(lambda c: replace(c, dq=None, ddq=None, dtheta=None, ddtheta=None))
        out.append(rec)
    return out, whole


def _is_bag(path):
    from pathlib import Path  # start-up: commands/__init__.py
    p = Path(path)
    return p.is_dir() or p.suffix.lower() in (".mcap", ".db3")


def _load_options(path, effort_lag):
    from pathlib import Path  # start-up: commands/__init__.py

    from robot_identification.errors import ConfigError  # start-up: commands/__init__.py
    if not 0 < effort_lag < 10:
        raise ConfigError(f"--effort-lag must be in (0, 10) periods, got {effort_lag}")
    p = Path(path)
    if not (p.is_dir() or p.suffix.lower() in (".mcap", ".db3")):
        raise ConfigError(f"--effort-lag applies to rosbag2 recordings only, not '{path}'")


def load_data(path, model, effort_lag=0.0, measured_velocities=True):
    """Dataset of ``path`` (:func:`robot_identification.data.load_dataset`); a non-zero
    ``effort_lag`` [periods] shifts a bag's efforts. The dataset is restricted to the model's
    joints and validated at once, so that every problem names the file. With
    ``measured_velocities=False`` (identify ``--numerical-derivatives``) recorded velocities
    and accelerations are dropped unchecked.

    Raises
    ------
    ConfigError
        An effort lag outside (0, 10) periods, or for a file that is not a rosbag2.
    DataError
        Unreadable or invalid data (:meth:`Dataset.validate`), joints of the model missing,
        measured velocities that do not match the positions (:meth:`Dataset.check_velocities`)
        or a joint whose torque is 0 in every sample (torques not recorded); the message
        starts with the file.
    """
    ds = _load(path, model, effort_lag)
    warn_unmodelled_joints(ds, model, path)
    return _checked(ds, model, path, measured_velocities)


#: A joint of the data that is not in the robot config and moves more than this [rad | m]
#: is named (:func:`warn_unmodelled_joints`).
UNMODELLED_MOTION = 0.05


def warn_unmodelled_joints(dataset, model, path):
    """Warn (``UserWarning``, one line naming the file) when the data move joints the robot
    config does not list by more than :data:`UNMODELLED_MOTION`: the model holds them still
    (URDF joints not in the config are locked at 0), so their motion is missing from every
    prediction - data of another robot, or joints left out of the config. A gripper's
    fingers are harmless; the message says so."""
    import warnings  # start-up: commands/__init__.py
    extra = [k for k, name in enumerate(dataset.joint_names) if name not in model.joint_names]
    if not extra or dataset.q is None or len(dataset.q) < 2:
        return
    q = np.asarray(dataset.q, dtype=float)[:, extra]
    span = np.nanmax(q, axis=0) - np.nanmin(q, axis=0)
    moving = [(dataset.joint_names[k], float(s)) for k, s in zip(extra, span)
              if np.isfinite(s) and s > UNMODELLED_MOTION]
    if moving:
        named = ", ".join(f"{n} ({s:.3g})" for n, s in moving[:6])
        warnings.warn(f"'{path}': {len(moving)} joint(s) move in the data but are not in the "
                      f"robot config, which holds them still: {named} [rad | m]; data of "
                      f"another robot, or joints missing from the config's joints: list? (a "
                      f"gripper's fingers are harmless)", UserWarning, stacklevel=2)


def load_datasets(paths, model, effort_lag=0.0, measured_velocities=True):
    """:func:`load_data` of each of ``paths``, each recording once
    (:func:`check_distinct_recordings`).

    Raises
    ------
    ConfigError
        A recording given twice (see :func:`check_distinct_recordings`).
    """
    check_distinct_recordings(paths)
    return [load_data(p, model, effort_lag, measured_velocities) for p in paths]


def check_distinct_recordings(paths, option="--data"):
    """Refuse a recording given twice: its samples would count twice and every standard
    deviation shrink by 1/sqrt(2) - the same file or directory (also through a symlink or
    hard link), a byte-identical copy of it, or a file inside a bag directory given too.

    Raises
    ------
    ConfigError
        Naming both paths.
    """
    from robot_identification.errors import ConfigError  # start-up: commands/__init__.py
    seen = []
    for p in paths:
        for q in seen:
            if same_recording(p, q):
                how = ("twice" if str(p) == str(q) else
                       f"twice (as '{q}')" if _same_path(p, q) else
                       f"and '{q}', the same recording (a copy with the same bytes, or a "
                       f"file of that bag)")
                raise ConfigError(f"{option} names '{p}' {how}: its samples would count "
                                  f"twice (every standard deviation shrinks by 1/sqrt(2)); "
                                  f"give each recording once")
        seen.append(p)


def _same_path(a, b) -> bool:
    import os  # start-up: commands/__init__.py
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def same_recording(a, b, copies=True) -> bool:
    """Whether paths ``a`` and ``b`` name the same recording: the same file or directory
    (also through a symlink or hard link), one inside the other (a bag directory and its
    storage file) or, with ``copies``, two regular files, or two directories of the same
    files, with the same bytes (:func:`filecmp.cmp`; sizes are compared first)."""
    import filecmp  # start-up: commands/__init__.py
    import os  # start-up: commands/__init__.py
    from pathlib import Path  # start-up: commands/__init__.py
    if _same_path(a, b):
        return True
    try:
        ra, rb = Path(a).resolve(), Path(b).resolve()
    except (OSError, RuntimeError):
        return False
    if ra in rb.parents or rb in ra.parents:
        return True
    if not copies:
        return False
    try:
        if os.path.isfile(ra) and os.path.isfile(rb):
            return filecmp.cmp(ra, rb, shallow=False)
        if os.path.isdir(ra) and os.path.isdir(rb):
            fa = sorted(f.relative_to(ra) for f in ra.rglob("*") if f.is_file())
            fb = sorted(f.relative_to(rb) for f in rb.rglob("*") if f.is_file())
            return bool(fa) and fa == fb and all(
                (ra / f).stat().st_size == (rb / f).stat().st_size for f in fa) and all(
                filecmp.cmp(ra / f, rb / f, shallow=False) for f in fa)
    except OSError:
        return False
    return False


def _load(path, model, effort_lag):
    from robot_identification.data import load_dataset  # start-up: commands/__init__.py
    if not effort_lag:
        return load_dataset(path, model=model)
    _load_options(path, effort_lag)
    return load_dataset(path, model=model, effort_lag=effort_lag)


def print_result(result, args, table):
    """What ``identify`` prints: the errors and warnings among ``result.diagnostics`` first
    (one line each), then ``table`` (unless ``--quiet``), then the info notes with
    ``--verbose`` (else one line counting them: they are in the results file too).

    Parameters
    ----------
    result : object with ``diagnostics`` (list of Diagnostic)
    args : argparse.Namespace
        ``quiet`` and ``verbose`` flags.
    table : str
        The parameter table.
    """
    diagnostics = list(getattr(result, "diagnostics", []) or [])
    serious = [d for d in diagnostics if d.severity in ("error", "warning")]
    notes = [d for d in diagnostics if d not in serious]
    for d in sorted(serious, key=lambda d: d.severity != "error"):
        print(d)
    if not getattr(args, "quiet", False):
        print(table)
    if getattr(args, "verbose", False):
        for d in notes:
            print(d)
    elif notes:
        print(f"{len(notes)} note(s) (info) in the results file; --verbose prints them")


def write_unless_errors(result, args, write):
    """Write the results file with ``write()`` (returns its path) unless a diagnostic of
    severity error says the result is wrong: then nothing is written (``--force``: written,
    and the file says ``status: error``) and :class:`DiagnosticError` names the first error
    in one line (the CLI's exit code 3). Call after :func:`print_result`.

    Raises
    ------
    DiagnosticError
    """
    from pathlib import Path  # start-up: commands/__init__.py

    from robot_identification.errors import DiagnosticError, error_diagnostics  # start-up
    errors = error_diagnostics(getattr(result, "diagnostics", []) or [])
    out = write() if not errors or getattr(args, "force", False) else None
    if out is not None:
        print(f"wrote {Path(out).resolve()}")
    if errors:
        first = errors[0]
        more = (f" (and {len(errors) - 1} more error diagnostic(s) above)"
                if len(errors) > 1 else "")
        fate = (f"{args.output} written with status: error (--force)" if out is not None
                else f"nothing written (--force writes {args.output} with status: error)")
        where = f" [{first.subject}]" if first.subject else ""
        raise DiagnosticError(f"{first.code}{where}: {first.message}{more}; {fate}")
    return out
