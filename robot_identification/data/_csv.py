"""CSV import of recorded joint data: column mapping, malformed rows, idle trimming,
irregular time stamps, motor current -> joint torque.

A CSV file holds one sample per row and no (or one) header line. A *column mapping*
says where time, positions, velocities and the torque source (torques, or motor
currents times drive gains) are. The mapping comes from keyword arguments, a named
preset (:data:`CSV_PRESETS`, e.g. ``ur`` for the Universal Robots logs of Mamedov &
Mikhel 2020) or a robot config's ``csv:`` section (:func:`csv_options`).

Processing order (each step is recorded in ``Dataset.metadata``):

1. parse: rows with the wrong number of fields, non-numeric or non-finite fields in a mapped
   column (unmapped columns may hold anything), or a time not strictly above the previous
   good row are dropped and reported
   (``metadata['malformed_rows']``, one ``(line, reason)`` per row, plus a
   :class:`UserWarning`); more than ``max_malformed`` (fraction) raises :class:`DataError`;
2. torque: ``tau_k = gain_k * i_k`` (drive gain [N*m/A], link side);
3. idle trimming: leading and trailing samples where no joint moves faster than
   ``idle_velocity`` are cut, keeping ``idle_margin`` seconds of rest on each side (the
   zero-phase filters need them); a run without any motion (static poses) is kept whole;
4. resampling: when the time steps vary by more than 5 % of the median step, all signals
   are linearly interpolated onto a uniform grid with the median step.
"""
from __future__ import annotations

import csv
import itertools
import math
import operator
import os
import warnings
from array import array
from pathlib import Path

import numpy as np

from robot_identification._files import check_input_file
from robot_identification.data._dataset import Dataset, uniform_grid
from robot_identification.errors import ConfigError, DataError
from robot_identification.model import csv_zero_based_hint
from robot_identification.outputs import atomic_output

#: Column layouts (1-based column numbers; a list gives one column per joint, an int the
#: first of ``n_joints`` consecutive columns).
CSV_PRESETS = {
    # Universal Robots RTDE logs as published by Mamedov & Mikhel (2020),
    # shamilmamedov/dynamic_calibration/dataset_ur10e: 31 columns.
    "ur": {"time": 1, "position": 2, "velocity": 8, "current": 14, "n_joints": 6,
           "n_columns": 31},
}

_KEYS = ("preset", "time", "position", "velocity", "torque", "current", "drive_gains",
         "n_joints", "n_columns", "delimiter", "trim_idle", "idle_velocity", "idle_margin",
         "resample", "max_malformed", "joint_names", "motor_position", "motor_velocity",
         "joint_torque")
#: Columns of an elastic arm's signals (docs/elastic.md): motor positions and velocities,
#: link-referred (motor angle / gear ratio) [rad, rad/s]; joint torque sensors [N*m].
_ELASTIC = ("motor_position", "motor_velocity", "joint_torque")


def csv_options(model) -> dict:
    """Keyword arguments of :func:`read_csv` from a robot config's ``csv:`` section.

    The section may name a ``preset`` and override any of its keys; ``drive_gains``
    (N*m/A, one per joint) convert currents to torques. Joint names default to the
    robot's joints.

    Parameters
    ----------
    model : RobotModel or RobotConfig

    Returns
    -------
    dict
        Empty when the config has no ``csv:`` section (then only ``joint_names``).

    Raises
    ------
    ConfigError
        Unknown keys or wrong types in the ``csv:`` section.
    """
    config = getattr(model, "config", model)
    section = dict(config.extra.get("csv") or {})
    where = f"{config.source or config.name}.csv"
    unknown = sorted(set(section) - set(_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(_KEYS)}")
    gains = section.get("drive_gains")
    if gains is not None:
        if (not isinstance(gains, (list, tuple)) or len(gains) != len(config.joints)
                or any(isinstance(g, bool) or not isinstance(g, (int, float)) for g in gains)):
            raise ConfigError(f"{where}.drive_gains: expected {len(config.joints)} numbers "
                              f"[N*m/A], got {gains!r}")
    section.setdefault("joint_names", list(config.joint_names))
    return section


def _columns(spec, n, key, n_fields):
    """0-based column indices of a mapping entry (1-based int start or list)."""
    if spec is None:
        return None
    if isinstance(spec, bool):
        raise ConfigError(f"CSV column mapping '{key}': expected a column number or a list, "
                          f"got {spec!r}")
    if isinstance(spec, int):
        cols = list(range(spec - 1, spec - 1 + n))
    elif isinstance(spec, (list, tuple)) and all(isinstance(c, int) and not isinstance(c, bool)
                                                 for c in spec):
        if len(spec) != n:
            raise ConfigError(f"CSV column mapping '{key}': {len(spec)} columns for {n} joints")
        cols = [c - 1 for c in spec]
    else:
        raise ConfigError(f"CSV column mapping '{key}': expected a 1-based column number or a "
                          f"list of them, got {spec!r}")
    if min(cols) < 0 or max(cols) >= n_fields:
        raise ConfigError(f"CSV column mapping '{key}': columns {[c + 1 for c in cols]} outside "
                          f"1..{n_fields}")
    return cols


#: Largest CSV file read [bytes] (``RI_CSV_MAX_BYTES`` in the environment; default 8 GiB, an
#: hour at 1 kHz of 31 columns is about 1.3 GiB): larger files are refused before reading.
MAX_BYTES = int(os.environ.get("RI_CSV_MAX_BYTES", 8 * 2**30))
#: Longest line [characters]: a longer one (a file without line breaks) is refused when met.
MAX_LINE = 1 << 20


def _encoding(path, head):
    """Text encoding of a CSV file from its first bytes: UTF-8 (a byte-order mark is dropped)
    or UTF-16 (with its BOM, or without one when every other byte of the start is 0: ASCII
    text, as Windows tools and PowerShell's ``Out-File`` write it).

    Raises
    ------
    DataError
        Compressed (gzip) or binary (NUL bytes, e.g. a file of zeros) content.
    """
    if head[:2] == b"\x1f\x8b":
        raise DataError(f"CSV '{path}' is gzip-compressed; decompress it first (gunzip)")
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "utf-16"
    if len(head) >= 8:
        odd, even = head[1::2], head[0::2]
        if odd.count(0) > 0.9 * len(odd) and even.count(0) < 0.5 * len(even):
            return "utf-16-le"                 # UTF-16 without byte-order mark (ASCII
        if even.count(0) > 0.9 * len(even) and odd.count(0) < 0.5 * len(odd):
            return "utf-16-be"                 # text: every other byte is 0)
    if 0 in head:
        raise DataError(f"CSV '{path}' is not text: byte {head.index(0)} is NUL (a binary "
                        f"file, or a recording that was never written: zeros)")
    return "utf-8-sig"


def _lines(f, path, where):
    """Data lines of an open text file for :mod:`csv` (blank and ``#`` comment lines left
    out); ``where[0]`` is the number of the line last read. Bounded: a line longer than
    :data:`MAX_LINE` or holding NUL is refused when it is met."""
    lineno = 0
    while True:
        try:
            line = f.readline(MAX_LINE)
        except UnicodeDecodeError as exc:
            raise DataError(f"CSV '{path}' is not UTF-8 text (line {lineno + 1} holds byte "
                            f"0x{exc.object[exc.start]:02x}); save it as UTF-8") from None
        if not line:
            return
        lineno += 1
        where[0] = lineno
        if len(line) >= MAX_LINE and line[-1] not in "\r\n":
            raise DataError(f"CSV '{path}': line {lineno} is longer than {MAX_LINE} "
                            f"characters: not a CSV file of samples (no line breaks?)")
        if "\0" in line:
            raise DataError(f"CSV '{path}': line {lineno} holds a NUL character: not text (a "
                            f"damaged or binary file)")
        s = line.strip()
        if s and not s.startswith("#"):
            yield line


def _delimiter_hint(line, delimiter):
    """Why a line does not split into numbers, when the cause is visible (else '')."""
    for sep, name in ((";", "';'"), ("\t", "tabs"), ("|", "'|'")):
        if sep != delimiter and sep in line:
            return f" (the lines hold {name} but the delimiter is {delimiter!r}: set the " \
                   f"csv: section's delimiter)"
    if delimiter not in line and " " in line.strip():
        return f" (the lines hold spaces but no {delimiter!r}: set the csv: section's " \
               f"delimiter)"
    if delimiter != "," and any(c.isdigit() and n == "," for c, n in zip(line, line[1:])):
        return " (decimal commas? numbers need a decimal point)"
    return ""


def _number(field, decimal):
    return float(field.strip().strip('"').strip("'").translate(decimal))


def _parse(path, delimiter, n_columns, needed, roles=None):
    """Numeric rows of a CSV file and the list of malformed (line, reason).

    The file is read lazily with the :mod:`csv` module (quoted fields may hold the delimiter,
    e.g. a quoted comma in a text column); only the ``needed`` columns (0-based) are converted
    and kept (8 bytes per value), and they must be numbers and finite; the other columns may
    hold anything (text, empty fields of a trailing delimiter, NaN). With a delimiter other
    than ``,`` a comma is a decimal comma (``0,25;1,5``). The first line that is not numbers
    is a header. ``roles`` names the columns in messages (``{column: "time"}``).

    Returns
    -------
    rows : ndarray (N, n_columns) or list
        Unconverted columns NaN; ``[]`` without rows.
    lines : list of int
    bad : list of (int, str)
    n_columns : int
    sample : dict
        ``header`` (list of str or None) and ``rows`` (up to 20 raw data rows) for
        :func:`_mapping_hint`.

    Raises
    ------
    DataError
        Not a regular file, too large, compressed, binary, not UTF-8/UTF-16 text, a line
        too long.
    """
    plain = _parse_plain(path, delimiter, n_columns, needed)
    if plain is not None:
        return plain
    info = {}
    blocks = list(_parse_blocks(path, delimiter, n_columns, needed, roles, info))
    rows = []
    lines = [ln for _, b in blocks for ln in b.tolist()]
    if lines:
        data = np.full((len(lines), info["n_columns"]), np.nan)
        data[:, list(needed)] = np.concatenate([v for v, _ in blocks])
        rows = data
    return rows, lines, info["bad"], info["n_columns"], info["sample"]


#: Largest file [bytes] that :func:`_parse_plain` reads whole.
PLAIN_BYTES = 32 << 20


def _parse_plain(path, delimiter, n_columns, needed):
    """:func:`_parse`'s result for a file of plain numbers, by numpy's compiled reader
    (``np.loadtxt``: the same correctly rounded values as ``float``, at ~0.7 x the CPU of
    the row loop on the real UR10e logs; issue #29), or None where the file is anything
    else - then :func:`_parse_blocks` reads it and says what is wrong. Plain: comma-separated
    UTF-8 of at most :data:`PLAIN_BYTES`, lines split at ``\\n``, no header, comment,
    blank line, quote, carriage return or NUL, the same number of fields on every line
    (``n_columns`` where given), the ``needed`` columns finite numbers on every line (the
    others are not read, as :func:`_parse_blocks` does not read them)."""
    try:
        if delimiter != "," or not 0 < os.path.getsize(path) <= PLAIN_BYTES:
            return None
        with open(path, "rb") as raw:
            data = raw.read()
        if _encoding(path, data[:4096]) != "utf-8-sig":
            return None
        text = data.decode("utf-8-sig")
        if any(c in text for c in ("\0", "\r", '"', "'", "#")):
            return None
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        if (not lines or max(map(len, lines)) >= MAX_LINE - 1
                or not all(map(str.strip, lines))):
            return None
        commas = set(map(str.count, lines, itertools.repeat(",")))
        width = commas.pop() + 1 if len(commas) == 1 else None
        cols = sorted(set(needed))
        if (width is None or (n_columns is not None and width != n_columns)
                or not cols or cols[-1] >= width):
            return None
        values = np.loadtxt(lines, delimiter=",", comments=None, dtype=float, ndmin=2,
                            usecols=cols)
    except (OSError, ValueError, DataError):
        return None
    if values.shape != (len(lines), len(cols)):
        return None
    rows = np.full((len(lines), width), np.nan)
    rows[:, cols] = values
    if not np.all(np.isfinite(values)):
        return None
    sample = {"header": None, "rows": list(csv.reader(lines[:20], delimiter=",",
                                                      skipinitialspace=True))}
    return rows, list(range(1, len(lines) + 1)), [], width, sample


def _parse_blocks(path, delimiter, n_columns, needed, roles, info, block=None):
    """The numeric rows of :func:`_parse` as they are read: yields ``(values (m,
    len(needed)), lines (m,))`` every ``block`` good rows (None: once, at the end);
    ``info`` gets ``bad``, ``n_columns`` and ``sample`` (complete at the end).

    Raises
    ------
    DataError
        As :func:`_parse`.
    """
    check_input_file(path, "CSV", DataError, MAX_BYTES)
    roles = roles or {}
    decimal = str.maketrans(",", ".") if delimiter != "," else {}
    values, lines, bad = array("d"), array("q"), []
    sample = {"header": None, "rows": []}
    info.update(bad=bad, sample=sample, n_columns=n_columns)
    try:
        with open(path, "rb") as raw:
            encoding = _encoding(path, raw.read(4096))
        f = open(path, encoding=encoding, newline="")
    except OSError as exc:
        raise DataError(f"cannot read CSV '{path}': {exc.strerror or exc}") from None
    where = [0]
    first_line = None
    k = len(needed)
    # the needed fields of a row in one call (a tuple; issue #29: the per-row cost)
    pick = (operator.itemgetter(*needed) if k > 1 else
            lambda fields: tuple(fields[c] for c in needed))

    def flush():
        if block is None:          # once, at the end: no copy
            return (np.frombuffer(values, dtype=float).reshape(-1, k),
                    np.frombuffer(lines, dtype=np.int64))
        out = (np.frombuffer(values, dtype=float).reshape(-1, k).copy(),
               np.frombuffer(lines, dtype=np.int64).copy())
        del values[:]
        del lines[:]
        return out
    with f:
        reader = csv.reader(_lines(f, path, where), delimiter=delimiter,
                            skipinitialspace=True)
        while True:
            try:
                fields = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                bad.append((where[0], f"not CSV ({exc})"))
                continue
            lineno = where[0]
            if first_line is None:
                first_line = lineno
            if len(sample["rows"]) < 20 and lineno != first_line:
                sample["rows"].append(fields)
            if n_columns is not None and len(fields) != n_columns:
                bad.append((lineno, f"{len(fields)} fields, expected {n_columns}"))
                continue
            try:
                try:     # plain numbers (most rows): float() gives what _number would
                    vals = list(map(float, pick(fields)))
                except ValueError:
                    vals = [_number(fields[c], decimal) for c in needed]
            except (ValueError, IndexError):
                if lineno == first_line:
                    sample["header"] = fields               # header line
                    continue
                bad.append((lineno, _why_not_numbers(fields, needed, roles, decimal)
                            + _delimiter_hint(delimiter.join(fields), delimiter)))
                continue
            if lineno == first_line:
                sample["rows"].append(fields)
            if n_columns is None:
                n_columns = len(fields)
                info["n_columns"] = n_columns
            if not all(map(math.isfinite, vals)):
                bad.append((lineno, "NaN/inf field"))
                continue
            values.extend(vals)
            lines.append(lineno)
            if block is not None and len(lines) >= block:
                yield flush()
    if lines:
        yield flush()


def _why_not_numbers(fields, needed, roles, decimal):
    """The first mapped column of a row that is missing or no number, named."""
    for c in needed:
        role = f" ({roles[c]})" if c in roles else ""
        if c >= len(fields):
            return f"{len(fields)} field(s), the column mapping needs {max(needed) + 1}"
        try:
            _number(fields[c], decimal)
        except ValueError:
            return f"column {c + 1}{role} holds {fields[c][:40]!r}, not a number"
    return "non-numeric field"


def _mapping_hint(sample, needed, opts, delimiter):
    """A suggestion when the mapped columns hold text but the columns one to the right hold
    numbers in every sampled row: column numbers counted from 0 (they count from 1)."""
    rows = sample["rows"]
    decimal = str.maketrans(",", ".") if delimiter != "," else {}

    def numeric(cols):
        try:
            return bool(rows) and all(
                math.isfinite(_number(r[c], decimal)) for r in rows for c in cols)
        except (ValueError, IndexError):
            return False

    if not rows or numeric(needed) or not numeric([c + 1 for c in needed]):
        return ""
    shifted = []
    for key in ("time", "position", "velocity", "torque", "current") + _ELASTIC:
        v = opts.get(key)
        if v is not None:
            shifted.append(f"{key}: {v + 1}" if isinstance(v, int)
                           else f"{key}: {[c + 1 for c in v]}")
    header = sample["header"]
    named = ""
    if header and len(header) > max(needed) + 1:
        named = f" (the header names column {needed[0] + 2} {header[needed[0] + 1]!r})"
    return (f"; the columns one to the right hold numbers{named}: column numbers counted "
            f"from 0? They count from 1 (the first column is 1): {', '.join(shifted)}")


def _needed_columns(opts, n):
    """0-based columns the mapping reads (range-checked later against the file), each with
    its role (``{column: "position of joint 2"}``).

    Raises
    ------
    ConfigError
        A column mapped twice (e.g. torque columns overlapping the positions: a torque
        starting column that forgot the joint count), which would read one signal as two.
    """
    big = 1 << 30
    owner = {c: "time" for c in _columns(opts["time"], 1, "time", big)}
    torque_key = "torque" if opts.get("torque") is not None else "current"
    for key in ("position", "velocity", torque_key) + _ELASTIC:
        for k, c in enumerate(_columns(opts.get(key), n, key, big) or ()):
            role = f"{key} of joint {k + 1}" if key != "time" else key
            if c in owner:
                raise ConfigError(f"CSV column mapping: column {c + 1} is both {owner[c]} "
                                  f"and {role} (with {n} joints, '{key}' starting at column "
                                  f"{c + 1 - k} overlaps '{owner[c].split(' of ')[0]}'); "
                                  f"check the csv: section's columns and n_joints")
            owner[c] = role
    return owner


def _plan(path, model, preset, explicit, defaults):
    """The column mapping of a CSV file: ``(opts, n, names, roles, needed)`` from the robot
    config's ``csv:`` section, a preset, explicit keys (None: unset) and defaults.

    Raises
    ------
    ConfigError, DataError
        As :func:`read_csv`.
    """
    check_input_file(path, "CSV file", DataError, MAX_BYTES)
    opts = {}
    if model is not None:
        opts = csv_options(model)
        preset = preset or opts.pop("preset", None)
    else:
        opts = {}
    if preset is not None:
        if preset not in CSV_PRESETS:
            raise ConfigError(f"unknown CSV preset '{preset}'; known: {sorted(CSV_PRESETS)}")
        base = dict(CSV_PRESETS[preset])
        base.update({k: v for k, v in opts.items() if k != "preset"})
        opts = base
    for k, v in explicit.items():
        if v is not None:
            opts[k] = v
    for k, default in defaults.items():
        opts.setdefault(k, default)
    # (imported here: robot_identification.model loads pinocchio, which reading a CSV without
    # a model does not need)
    hint = csv_zero_based_hint(opts)
    if hint:
        raise ConfigError(f"CSV '{path}': {hint}")
    # an elastic arm without link encoders maps motor positions instead (then joint torques;
    # without them the dataset is refused by name: docs/elastic.md, sensor set c)
    if opts.get("time") is None or (opts.get("position") is None
                                    and opts.get("motor_position") is None):
        raise ConfigError(f"CSV '{path}': the column mapping needs 'time' and 'position' "
                          f"(or, for an elastic arm without link encoders, 'motor_position' "
                          f"and 'joint_torque'; give them, a preset, or a robot config with "
                          f"a csv: section)")
    names = opts.get("joint_names")
    n = opts.get("n_joints") or (len(names) if names else None)
    if n is None:
        pos = opts.get("position") or opts.get("motor_position")
        n = len(pos) if isinstance(pos, (list, tuple)) else None
    if n is None:
        raise ConfigError(f"CSV '{path}': give n_joints or joint_names")
    names = tuple(names) if names else tuple(f"joint{k + 1}" for k in range(n))
    if len(names) != n:
        raise ConfigError(f"CSV '{path}': {len(names)} joint names (of the robot config or "
                          f"joint_names) for a column mapping of {n} joints (n_joints or a "
                          f"preset's, e.g. 'ur' maps 6): make them agree")

    try:
        roles = _needed_columns(opts, n)
    except ConfigError as exc:
        raise ConfigError(f"CSV '{path}': {exc}") from None
    needed = sorted(roles)
    if opts.get("n_columns") is not None:             # a declared layout: check it first
        _columns([c + 1 for c in needed], len(needed), "column mapping", opts["n_columns"])
    return opts, n, names, roles, needed


def _check_rows(path, bad, n_good, opts, sample, needed, t_abs_max):
    """What :func:`read_csv` checks once every row is read (``bad`` sorted here): more than
    ``max_malformed`` of the rows malformed (DataError with the likely cause), the warning
    naming the dropped rows, fewer than 2 good rows (DataError)."""
    bad.sort()
    total = n_good + len(bad)
    if len(bad) > opts["max_malformed"] * total:
        repeats = sum(why.endswith(" repeats") for _, why in bad)
        back = [ln for ln, why in bad if " not after " in why]
        hint = ("; the time stamps repeat: absolute times (Unix epoch) written with too few "
                "digits? write more digits, or the time since the start"
                if repeats > len(bad) / 2 and t_abs_max > 1e5 else
                "; the time decreases from row to row: rows in reverse order? sort them"
                if len(back) >= 0.9 * (total - 1) else
                f"; the time goes back at line {back[0]}: a second recording appended, or a "
                f"clock reset? split the file there" if len(back) > len(bad) / 2 else
                _mapping_hint(sample, needed, opts, opts["delimiter"]))
        raise DataError(f"CSV '{path}': {len(bad)} of {total} rows are malformed (more than "
                        f"{100 * opts['max_malformed']:.3g} %); first: line {bad[0][0]}: "
                        f"{bad[0][1]}{hint}")
    if bad:
        shown = "; ".join(f"line {ln}: {why}" for ln, why in bad[:5])
        warnings.warn(f"CSV '{path}': dropped {len(bad)} malformed row(s): {shown}"
                      + (" ..." if len(bad) > 5 else ""), UserWarning, stacklevel=3)
    if n_good < 2:
        raise DataError(f"CSV '{path}' holds {n_good} usable data row(s); at least 2 are "
                        f"needed")


def _drive_gains(path, opts, n):
    """The mapping's ``drive_gains`` (n,) [N*m/A] that turn the current columns into
    torques.

    Raises
    ------
    ConfigError
        Missing, or not one per joint.
    """
    gains = opts.get("drive_gains")
    if gains is None or len(gains) != n:
        raise ConfigError(f"CSV '{path}': currents need {n} drive_gains [N*m/A], "
                          f"got {gains!r}")
    return np.asarray(gains, dtype=float)


def _no_torque(path):
    """The ConfigError of a column mapping with neither torques nor currents."""
    return ConfigError(f"CSV '{path}': the column mapping needs 'torque' or 'current' "
                       f"(or 'joint_torque' for an elastic arm with joint torque sensors)")


def _no_rows(path, bad, sample, needed, opts):
    """The DataError of a CSV file without a numeric data row."""
    return DataError(f"CSV '{path}' holds no numeric data rows"
                     + (f" ({len(bad)} malformed; first: line {bad[0][0]}: {bad[0][1]})"
                        if bad else "") + _mapping_hint(sample, needed, opts,
                                                        opts["delimiter"]))


def read_csv(path, *, preset=None, time=None, position=None, velocity=None, torque=None,
             current=None, drive_gains=None, n_joints=None, n_columns=None, delimiter=",",
             joint_names=None, trim_idle=True, idle_velocity=0.01, idle_margin=0.5,
             resample=True, max_malformed=0.05, model=None, motor_position=None,
             motor_velocity=None, joint_torque=None) -> Dataset:
    """Read a CSV recording into a :class:`Dataset`.

    Parameters
    ----------
    path : path
        CSV file, one sample per row; an optional header line is skipped.
    preset : str, optional
        Name in :data:`CSV_PRESETS` (``'ur'``); explicit keys override it.
    time : int
        1-based column of the time [s].
    position, velocity, torque, current : int or list of int, optional
        First column (``n_joints`` consecutive ones) or one column per joint, 1-based:
        joint positions [rad] (required), velocities [rad/s], joint torques [N*m] or
        motor currents [A] (one of ``torque`` / ``current`` is required).
    drive_gains : sequence of float (n,), optional
        Torque per current [N*m/A], link side; required with ``current``.
    motor_position, motor_velocity, joint_torque : int or list of int, optional
        Elastic arms (docs/elastic.md): motor positions and velocities, link-referred
        (motor angle / gear ratio) [rad, rad/s], and joint torque sensors [N*m]; then
        ``torque`` / ``current`` are the motor torques (link-referred), ``position`` the
        link positions. Without link encoders ``position`` may be left out when
        ``motor_position`` and ``joint_torque`` are given; without motor currents
        ``torque`` / ``current`` when ``joint_torque`` is.
    n_joints : int, optional
        Default: ``len(joint_names)``.
    n_columns : int, optional
        Expected fields per row; default: the first data row's count.
    joint_names : sequence of str, optional
        Default ``joint1..jointn``.
    trim_idle : bool
        Cut the idle segments at both ends (see module docstring).
    idle_velocity : float
        Motion threshold [rad/s] for trimming (on the measured velocities, or on
        position differences when no velocity columns are mapped).
    idle_margin : float
        Rest kept before the first and after the last motion [s].
    resample : bool
        Interpolate irregular time stamps onto a uniform grid (median step).
    max_malformed : float
        Largest tolerated fraction of malformed rows.
    model : RobotModel, optional
        Supplies defaults from its config's ``csv:`` section (:func:`csv_options`).

    Returns
    -------
    Dataset
        ``t, q, tau`` and ``dq`` (when mapped; elastic: ``theta``, ``dtheta``,
        ``tau_joint``, and q or tau None when not mapped); ``metadata`` has ``source``,
        ``malformed_rows``, ``trimmed`` (s cut at start/end), ``resampled``,
        ``moving`` (False for static runs), ``drive_gains``.

    Raises
    ------
    DataError
        Missing/unreadable file, no data rows, too many malformed rows, fewer than 2
        samples left.
    ConfigError
        Inconsistent column mapping (unknown preset, columns out of range, currents
        without drive gains).
    """
    path = Path(path)
    opts, n, names, roles, needed = _plan(
        path, model, preset, dict(time=time, position=position, velocity=velocity,
                                  torque=torque, current=current, drive_gains=drive_gains,
                                  n_joints=n_joints, n_columns=n_columns,
                                  joint_names=joint_names, motor_position=motor_position,
                                  motor_velocity=motor_velocity, joint_torque=joint_torque),
        dict(delimiter=delimiter, trim_idle=trim_idle, idle_velocity=idle_velocity,
             idle_margin=idle_margin, resample=resample, max_malformed=max_malformed))
    rows, lines, bad, n_fields, sample = _parse(path, opts["delimiter"], opts.get("n_columns"),
                                                needed, roles)
    if not len(rows):
        raise _no_rows(path, bad, sample, needed, opts)
    data = np.array(rows)
    lines = np.array(lines)
    tcol = _columns(opts["time"], 1, "time", n_fields)[0]
    # non-increasing time: drop rows not above the running maximum
    t = data[:, tcol]
    keep = np.ones(len(t), dtype=bool)
    last = -np.inf
    for i, ti in enumerate(t):
        if ti <= last:
            keep[i] = False
            bad.append((int(lines[i]), f"time {ti:.6g} s not after {last:.6g} s"
                        if ti < last else f"time {ti:.12g} s repeats"))
        else:
            last = ti
    data, lines = data[keep], lines[keep]
    _check_rows(path, bad, len(data), opts, sample, needed,
                float(np.nanmax(np.abs(t))) if len(t) else 0.0)
    t = data[:, tcol]
    elastic = {}
    for key, field in zip(_ELASTIC, ("theta", "dtheta", "tau_joint")):
        cols = _columns(opts.get(key), n, key, n_fields)
        elastic[field] = data[:, cols] if cols is not None else None
    pcols = _columns(opts.get("position"), n, "position", n_fields)
    q = data[:, pcols] if pcols is not None else None
    vcols = _columns(opts.get("velocity"), n, "velocity", n_fields)
    dq = data[:, vcols] if vcols is not None else None
    gains = None
    tau = None
    if opts.get("torque") is not None:
        tau = data[:, _columns(opts["torque"], n, "torque", n_fields)]
    elif opts.get("current") is not None:
        gains = _drive_gains(path, opts, n)
        tau = data[:, _columns(opts["current"], n, "current", n_fields)] * gains
    elif elastic["tau_joint"] is None:
        raise _no_torque(path)

    # idle trimming
    pos, vel = (q, dq) if q is not None else (elastic["theta"], elastic["dtheta"])
    speed = np.abs(vel) if vel is not None else np.abs(np.gradient(pos, t, axis=0))
    moving = np.flatnonzero(speed.max(axis=1) > opts["idle_velocity"])
    trimmed = (0.0, 0.0)
    is_moving = moving.size > 0
    if opts["trim_idle"] and is_moving:
        lo = np.searchsorted(t, t[moving[0]] - opts["idle_margin"])
        hi = np.searchsorted(t, t[moving[-1]] + opts["idle_margin"], side="right")
        trimmed = (float(t[lo] - t[0]), float(t[-1] - t[hi - 1]))
        sl = slice(lo, hi)
        t = t[sl]
        q, tau, dq = (None if x is None else x[sl] for x in (q, tau, dq))
        elastic = {k: None if x is None else x[sl] for k, x in elastic.items()}
    if len(t) < 2:
        raise DataError(f"CSV '{path}': fewer than 2 samples after trimming")

    dt = np.diff(t)
    step = float(np.median(dt))
    irregular = bool(np.max(np.abs(dt - step)) > 0.05 * step)
    resampled = None
    if opts["resample"] and irregular:
        tu = uniform_grid(t, step, f"CSV {str(path)!r}")   # bounded before allocating

        def interp(x):
            return None if x is None else np.column_stack(
                [np.interp(tu, t, x[:, j]) for j in range(x.shape[1])])
        q, tau, dq = interp(q), interp(tau), interp(dq)
        elastic = {k: interp(x) for k, x in elastic.items()}
        resampled = {"step_s": step, "min_step_s": float(dt.min()),
                     "max_step_s": float(dt.max())}
        t = tu
    meta = {"source": str(path), "file": str(path), "format": "csv",
            "malformed_rows": [list(b) for b in bad],
            "trimmed_s": list(trimmed), "resampled": resampled, "moving": is_moving,
            "drive_gains": None if gains is None else gains.tolist()}
    return Dataset(t=t - t[0], q=q, tau=tau, dq=dq, joint_names=names, metadata=meta,
                   **elastic)


#: CSV mapping keys and the Dataset arrays they hold.
_WRITTEN = (("position", "q"), ("velocity", "dq"), ("torque", "tau"), ("current", "tau"),
            ("motor_position", "theta"), ("motor_velocity", "dtheta"),
            ("joint_torque", "tau_joint"))


def write_csv(dataset, path, model=None, inputs=(), **layout):
    """Write a dataset as a CSV file in a column layout (the robot config's ``csv:``
    section, a preset, or keyword arguments as :func:`read_csv` takes them), so that
    :func:`read_csv` with the same layout reads it back. A header line names the columns;
    columns the layout does not map stay empty; currents are written as tau / drive gain.

    Parameters
    ----------
    dataset : Dataset
    path : path
        The new file (written atomically; never one of ``inputs``).
    model : RobotModel, optional
        Its ``csv:`` section (:func:`csv_options`); keyword arguments override it.

    Raises
    ------
    ConfigError
        A layout without time, a column mapped twice or beyond ``n_columns``, currents
        without drive gains.
    DataError
        A mapped signal the dataset does not hold (e.g. velocities of a run simulated
        without ``--derivatives``, joint torques without ``--joint-torque``).
    """
    opts = csv_options(model) if model is not None else {}
    preset = layout.pop("preset", None) or opts.pop("preset", None)
    if preset is not None:
        if preset not in CSV_PRESETS:
            raise ConfigError(f"unknown CSV preset '{preset}'; known: {sorted(CSV_PRESETS)}")
        opts = {**CSV_PRESETS[preset], **opts}
    opts.update({k: v for k, v in layout.items() if v is not None})
    if opts.get("time") is None:
        raise ConfigError(f"CSV '{path}': the layout needs a 'time' column")
    n = len(dataset.joint_names)
    delimiter = opts.get("delimiter") or ","
    if opts.get("torque") is not None:
        opts.pop("current", None)
    needed = _needed_columns(opts, n)
    width = int(opts.get("n_columns") or max(needed) + 1)
    table = np.full((dataset.n_samples, width), np.nan)
    header = [""] * width
    cols = _columns(opts["time"], 1, "time", width)
    table[:, cols[0]], header[cols[0]] = dataset.t, "time"
    for key, attr in _WRITTEN:
        spec = opts.get(key)
        if spec is None:
            continue
        values = getattr(dataset, attr)
        if values is None:
            raise DataError(f"CSV '{path}': the layout maps '{key}' but the dataset holds no "
                            f"{attr} (simulate it: --derivatives for velocities, "
                            f"--joint-torque for joint torques; or leave '{key}' out of the "
                            f"csv: section)")
        if key == "current":
            gains = opts.get("drive_gains")
            if gains is None or len(gains) != n:
                raise ConfigError(f"CSV '{path}': currents need {n} drive_gains [N*m/A]")
            values = values / np.asarray(gains, dtype=float)
        for k, c in enumerate(_columns(spec, n, key, width)):
            table[:, c] = values[:, k]
            header[c] = f"{key}_{dataset.joint_names[k]}"
    text = [delimiter.join(h.replace(delimiter, "_") for h in header)]
    for row in table:
        text.append(delimiter.join("" if np.isnan(v) else repr(float(v)) for v in row))
    with atomic_output(Path(path), inputs, dataset=True) as tmp:
        Path(tmp).write_text("\n".join(text) + "\n", encoding="utf-8")
    return Path(path)


#: Keyword arguments of :func:`read_csv` that map columns (None: unset) and the others with
#: their defaults.
_MAPPING = ("time", "position", "velocity", "torque", "current", "drive_gains", "n_joints",
            "n_columns", "joint_names", "motor_position", "motor_velocity", "joint_torque")
_DEFAULTS = {"delimiter": ",", "trim_idle": True, "idle_velocity": 0.01, "idle_margin": 0.5,
             "resample": True, "max_malformed": 0.05}


def iter_csv_chunks(path, chunk: int = 200_000, *, model=None, preset=None, **kwargs):
    """Read a CSV recording chunk by chunk (memory bounded by the chunk, plus the idle
    samples at the ends while the reader cannot yet tell whether they are trimmed).

    The same column mapping, parsing, validation and one-line errors as :func:`read_csv`
    (``kwargs``: its keywords): malformed rows and time stamps not after the previous good
    row are dropped and counted; the fraction check (``max_malformed``) and the warning
    that names the dropped rows come at the end of the file (the last chunk is not yielded
    before them); idle trimming keeps ``idle_margin`` seconds before the first and after
    the last motion. What the stream does not do: resample irregular time stamps (the
    engine refuses a chunk whose steps differ by more than 5 % from the first chunk's;
    :func:`read_csv` loads such files whole), and a run without any motion is read whole
    (:func:`read_csv`: kept untrimmed) once the end shows it.

    Parameters
    ----------
    path : path
    chunk : int
        Samples per yielded :class:`Dataset`.
    model : RobotModel, optional
        Its config's ``csv:`` section (:func:`csv_options`).

    Yields
    ------
    Dataset
        ``t`` from 0 at the first kept sample; ``metadata``: ``source``, ``file``,
        ``format`` ``csv``, ``streamed`` True, ``trimmed_s``, ``malformed_rows`` (so far;
        complete in the last chunk), ``moving``, ``drive_gains``.

    Raises
    ------
    ConfigError
        Inconsistent column mapping (at the call, before reading).
    DataError
        As :func:`read_csv`; those found at the end of the file when it is reached.
    """
    unknown = sorted(set(kwargs) - set(_MAPPING) - set(_DEFAULTS))
    if unknown:
        raise TypeError(f"iter_csv_chunks: unknown keyword(s) {unknown}")
    if int(chunk) < 1:
        raise DataError(f"chunk must be at least 1 sample, got {chunk}")
    path = Path(path)
    plan = _plan(path, model, preset, {k: kwargs.get(k) for k in _MAPPING},
                 {k: kwargs.get(k, v) for k, v in _DEFAULTS.items()})

    def whole():
        return read_csv(path, model=model, preset=preset, **kwargs)
    return _stream_csv(path, int(chunk), *plan, whole)


def _stream_csv(path, chunk, opts, n, names, roles, needed, whole):
    """The generator of :func:`iter_csv_chunks`."""
    index = {c: i for i, c in enumerate(needed)}
    info = {}
    margin, trim = float(opts["idle_margin"]), bool(opts["trim_idle"])
    st = {"last": -np.inf, "good": 0, "t_first": None, "t_end": None, "started": not trim,
          "t_move": None, "t0": None, "kept": 0, "t_kept": None, "trim0": 0.0,
          "t_abs": 0.0}
    cols = {}
    ctx = None              # the last two rows seen: the last one awaits its motion flag
    lead = None             # rows before the first motion (the last idle_margin seconds)
    tail = None             # rows after the last motion beyond idle_margin (held)
    out, n_out = [], [0]
    gains = None

    def setup():
        nonlocal gains
        n_fields = info["n_columns"]
        for key in ("position", "velocity") + _ELASTIC:
            got = _columns(opts.get(key), n, key, n_fields)
            cols[key] = None if got is None else [index[c] for c in got]
        cols["time"] = index[_columns(opts["time"], 1, "time", n_fields)[0]]
        if opts.get("torque") is not None:
            cols["tau"] = [index[c] for c in _columns(opts["torque"], n, "torque", n_fields)]
        elif opts.get("current") is not None:
            gains = _drive_gains(path, opts, n)
            cols["tau"] = [index[c] for c in _columns(opts["current"], n, "current",
                                                      n_fields)]
        elif cols["joint_torque"] is None:
            raise _no_torque(path)
        else:
            cols["tau"] = None
        use_q = cols["position"] is not None
        cols["x"] = cols["position"] if use_q else cols["motor_position"]
        cols["v"] = cols["velocity"] if use_q else cols["motor_velocity"]

    def moving(rows):
        """Motion flags of rows[1:-1] of ``rows`` (np.gradient on neighbours, as read_csv
        on the whole file), or of every row with measured velocities."""
        if cols["v"] is not None:
            return np.abs(rows[:, cols["v"]]).max(axis=1) > opts["idle_velocity"]
        g = np.gradient(rows[:, cols["x"]], rows[:, cols["time"]], axis=0)
        return np.abs(g).max(axis=1) > opts["idle_velocity"]

    def dataset(rows, final=False):
        t = rows[:, cols["time"]]
        if st["t0"] is None:
            st["t0"] = float(t[0])

        def take(key):
            c = cols.get(key)
            return None if c is None else rows[:, c]
        tau = take("tau")
        if tau is not None and gains is not None:
            tau = tau * gains
        meta = {"source": str(path), "file": str(path), "format": "csv", "streamed": True,
                "malformed_rows": [list(b) for b in info["bad"]] if final else [],
                "trimmed_s": [st["trim0"], st["t_end"] if final else 0.0],
                "resampled": None, "moving": True,
                "drive_gains": None if gains is None else gains.tolist()}
        return Dataset(t=t - st["t0"], q=take("position"), tau=tau, dq=take("velocity"),
                       theta=take("motor_position"), dtheta=take("motor_velocity"),
                       tau_joint=take("joint_torque"), joint_names=names, metadata=meta)

    def emit(rows):
        if rows is not None and len(rows):
            out.append(rows)
            n_out[0] += len(rows)
            st["kept"] += len(rows)
            st["t_kept"] = float(rows[-1, cols["time"]])

    def ready(final=False):
        """Datasets of ``chunk`` rows from ``out`` (the rest too when ``final``)."""
        if not out or (n_out[0] < chunk and not final):
            return []
        rows = np.concatenate(out) if len(out) > 1 else out[0]
        out.clear()
        done = []
        k = 0
        while len(rows) - k >= chunk:
            done.append(rows[k:k + chunk])
            k += chunk
        rest = rows[k:]
        if final:
            n_out[0] = 0
            if len(rest):
                done.append(rest)
        else:
            n_out[0] = len(rest)
            if len(rest):
                out.append(rest)
        return done

    def decided(rows, flags):
        """Rows whose motion flags are known, in order: trimming."""
        nonlocal lead, tail
        if not len(rows):
            return
        t = rows[:, cols["time"]]
        if not st["started"]:
            lead = rows if lead is None else np.concatenate([lead, rows])
            hit = np.flatnonzero(flags)
            if not hit.size:      # still idle: rows more than idle_margin back never count
                lt = lead[:, cols["time"]]
                lead = lead[np.searchsorted(lt, lt[-1] - margin):]
                return
            t_m = float(t[hit[0]])
            lt = lead[:, cols["time"]]
            lo = np.searchsorted(lt, t_m - margin)
            st["started"] = True
            st["trim0"] = float(lt[lo] - st["t_first"])
            k = len(lead) - len(rows) + hit[0]
            rows, flags, t = lead[lo:], np.concatenate(
                [np.zeros(k - lo, dtype=bool), flags[hit[0]:]]), lt[lo:]
            lead = None
        if not trim:
            emit(rows)
            return
        rows = rows if tail is None else np.concatenate([tail, rows])
        flags = flags if tail is None else np.concatenate(
            [np.zeros(len(tail), dtype=bool), flags])
        t = rows[:, cols["time"]]
        tail = None
        hit = np.flatnonzero(flags)
        if hit.size:
            st["t_move"] = float(t[hit[-1]])
        cut = np.searchsorted(t, st["t_move"] + margin, side="right")
        emit(rows[:cut])
        if cut < len(rows):
            tail = rows[cut:]

    def push(rows):
        nonlocal ctx
        if cols["v"] is not None:         # measured velocities: flags at once
            decided(rows, moving(rows))
            return
        ext = rows if ctx is None else np.concatenate([ctx, rows])
        if len(ext) < 2:
            ctx = ext
            return
        flags = moving(ext)
        start = 0 if ctx is None else len(ctx) - 1
        decided(ext[start:-1], flags[start:-1])
        ctx = ext[-2:]

    for vals, lines in _parse_blocks(path, opts["delimiter"], opts.get("n_columns"), needed,
                                     roles, info, block=min(chunk, 1 << 16)):
        if not cols:
            setup()
        t = vals[:, cols["time"]]
        prev = np.maximum.accumulate(np.concatenate([[st["last"]], t]))[:-1]
        keep = t > prev
        for i in np.flatnonzero(~keep):
            ti, last = float(t[i]), float(prev[i])
            info["bad"].append((int(lines[i]), f"time {ti:.6g} s not after {last:.6g} s"
                                if ti < last else f"time {ti:.12g} s repeats"))
        st["last"] = max(st["last"], float(t.max()))
        st["t_abs"] = max(st["t_abs"], float(np.abs(t).max()))
        vals = vals[keep]
        if not len(vals):
            continue
        if st["t_first"] is None:
            st["t_first"] = float(vals[0, cols["time"]])
        st["good"] += len(vals)
        push(vals)
        for rows in ready():
            yield dataset(rows)
    # the end of the file: what read_csv checks on the whole file
    bad = info.get("bad", [])
    bad.sort()
    sample = info.get("sample", {"header": None, "rows": []})
    if not st["good"]:
        raise _no_rows(path, bad, sample, needed, opts)
    _check_rows(path, bad, st["good"], opts, sample, needed, st["t_abs"])
    if ctx is not None and cols["v"] is None:       # the last row's flag: one-sided
        decided(ctx[-1:], moving(ctx)[-1:])
    if not st["started"]:          # no motion anywhere: read_csv keeps the run whole
        ds = whole()
        for s in range(0, ds.t.shape[0], chunk):
            yield ds.slice(slice(s, min(s + chunk, ds.t.shape[0])))
        return
    if st["kept"] < 2:
        raise DataError(f"CSV '{path}': fewer than 2 samples after trimming")
    st["t_end"] = float(st["last"] - st["t_kept"]) if trim else 0.0
    final = ready(final=True)
    for i, rows in enumerate(final):
        yield dataset(rows, final=i == len(final) - 1)
