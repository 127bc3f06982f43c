"""rosbag2 input/output (MCAP storage) with ``rosbags``; no ROS installation needed.

Topic conventions (ros2_control style, see docs/ros.md):

- ``/joint_states`` (sensor_msgs/JointState): link side; position q [rad], velocity dq [rad/s],
  effort: applied joint torque [N*m] (rigid arms).
- ``/motor_states`` (sensor_msgs/JointState): motor side of elastic joints, link-referred
  (theta = motor angle / gear reduction) [rad], velocity [rad/s], effort: motor torque u [N*m].
- ``/effort_controller/commands`` (std_msgs/Float64MultiArray): commanded torques [N*m].

Time is taken from the header stamps (simulation time in lockstep runs).
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path, PurePath

import numpy as np

from robot_identification.data._dataset import Dataset
from robot_identification.errors import DataError

JOINT_TOPIC = "/joint_states"
MOTOR_TOPIC = "/motor_states"
COMMAND_TOPIC = "/effort_controller/commands"
JOINT_STATE = "sensor_msgs/msg/JointState"
FLOAT64_ARRAY = "std_msgs/msg/Float64MultiArray"
METADATA_VERSION = 8      # readable by ``ros2 bag`` on Humble and later (9 is not)
_CUSTOM_KEY = "robot_identification"


def typestore():
    """The rosbags type store of the ROS 2 messages the bags hold (Humble definitions)."""
    from rosbags.typesys import Stores, get_typestore
    return get_typestore(Stores.ROS2_HUMBLE)


# ---------------------------------------------------------------------------------- reading
def decode(store, raw, msgtype, path, topic, t_ns):
    """Deserialize one CDR message.

    Raises
    ------
    DataError
        The bytes are not a ``msgtype`` message (a damaged file: rosbags writes no chunk CRCs).
    """
    try:
        return store.deserialize_cdr(bytes(raw), msgtype)
    except Exception as exc:  # noqa: BLE001 - any decoding failure is damaged data
        raise DataError(f"bag '{path}' is damaged: the message on '{topic}' logged at "
                        f"{t_ns * 1e-9:.9f} s is not a valid {msgtype} ({str(exc)[:80]})") \
            from None


class _NoTopic(Exception):
    pass


def _iter_bag(path: Path, topics):
    """(topic, msgtype, raw CDR bytes, log time [ns]) of a bag, checked against its metadata.

    A bag closed cleanly (with metadata.yaml) must hold every message its metadata declares:
    a read failure or fewer messages on a requested topic (a truncated or damaged file) raise
    :class:`DataError` naming the file, the counts and, for MCAP, the damaged record (chunk
    CRCs are checked by the ``mcap`` reader). A recording cut short by a crash (no
    metadata.yaml, or a bare MCAP file without footer) is read record by record up to its last
    complete chunk; SQLite3 storage without metadata.yaml (rosbags cannot open it) is read
    with ``sqlite3`` (:func:`_iter_sqlite`).

    Raises
    ------
    DataError
        Not a bag, damaged storage, fewer messages than declared, or unreadable metadata.
    """
    from rosbags.rosbag2 import Reader
    files = sorted(path.glob("*.mcap")) if path.is_dir() else [path]
    for f in files + (sorted(path.glob("*.db3")) if path.is_dir() else []):
        _check_regular(f)                       # a FIFO would block the reader for ever
    if path.is_file() and path.stat().st_size == 0:
        raise DataError(f"'{path}' is empty (0 bytes): the recording never wrote a message")
    sqlite = sorted(path.glob("*.db3")) if path.is_dir() else []
    if sqlite and not files and not (path / "metadata.yaml").exists():
        yield from _iter_sqlite(sqlite, topics)        # a killed SQLite3 recorder
        return
    if path.is_dir() and not (path / "metadata.yaml").exists() and not files:
        inside = sorted(p.name for p in path.iterdir() if p.suffix.lower() in (".csv", ".npz"))
        hint = (f"; it holds {inside[:3]}{' ...' if len(inside) > 3 else ''}: give the files "
                f"themselves to --data" if inside else "")
        raise DataError(f"'{path}' is not a rosbag2 directory (no metadata.yaml, no .mcap)"
                        f"{hint}")
    declared = _declared_counts(path)
    if declared is not None:
        _check_storage(path, declared)
    counts = dict.fromkeys(topics, 0)
    try:
        with Reader(path) as reader:
            conns = [c for c in reader.connections if c.topic in topics]
            if not conns:              # (an empty list would make rosbags yield every topic)
                raise _NoTopic(sorted({c.topic for c in reader.connections}))
            for conn, t_ns, raw in reader.messages(connections=conns):
                counts[conn.topic] += 1
                yield conn.topic, conn.msgtype, raw, t_ns
    except _NoTopic as exc:
        raise DataError(f"bag '{path}' has none of the topics {sorted(topics)}; its topics: "
                        f"{exc.args[0]}") from None
    except Exception as exc:  # noqa: BLE001 - any failure of the storage library: damaged bag
        if declared is not None or any(counts.values()) or not files or path.suffix == ".db3":
            raise DataError(f"cannot read bag '{path}': {_diagnose(files, exc)}") from None
        yield from _iter_truncated_mcap(files, topics)        # crashed recording
        return
    for topic, n in counts.items():
        d = (declared or {}).get(topic)
        if d is not None and n != d:
            raise DataError(_count_mismatch(path, topic, d, n))


def _count_mismatch(path, topic, declared, held) -> str:
    """The message for a topic whose stored messages differ from metadata.yaml's count."""
    if held < declared:
        return (f"bag '{path}': metadata.yaml declares {declared} messages on '{topic}' but "
                f"the storage holds {held} ({100 * held / declared:.0f} %): the file is "
                f"truncated or damaged")
    return (f"bag '{path}': the storage holds {held} messages on '{topic}' but metadata.yaml "
            f"declares {declared}: the metadata does not describe this storage (edited, or "
            f"another recording's); fix or remove metadata.yaml")


class _Declared(dict):
    """Topic -> message count of a bag's metadata.yaml, with the storage it declares:
    ``files`` (relative_file_paths), ``storage`` (storage_identifier), ``total``
    (message_count) and ``meta`` (the metadata.yaml path)."""

    files: list
    storage: str
    total: object
    meta: Path


def _declared_counts(path: Path):
    """Topic -> message count declared by a bag's metadata.yaml (None without one), a
    :class:`_Declared`.

    Raises
    ------
    DataError
        metadata.yaml is not YAML or not rosbag2 metadata; a malformed entry.
    """
    from robot_identification._yaml import read_yaml_file
    meta = path / "metadata.yaml" if path.is_dir() else None
    if meta is None or not os.path.lexists(meta):
        return None
    doc = read_yaml_file(meta, "bag metadata", DataError)
    info = doc.get("rosbag2_bagfile_information") if isinstance(doc, dict) else None
    if not isinstance(info, dict):
        raise DataError(f"'{meta}' is not rosbag2 metadata (no 'rosbag2_bagfile_information')")
    counts = _Declared()
    for e in info.get("topics_with_message_count") or []:
        try:
            name, n = str(e["topic_metadata"]["name"]), int(e["message_count"])
        except (KeyError, TypeError, ValueError):
            raise DataError(f"'{meta}': malformed topics_with_message_count entry "
                            f"{str(e)[:80]}") from None
        if n < 0 or name in counts:
            raise DataError(f"'{meta}': topics_with_message_count "
                            + (f"lists '{name}' twice" if name in counts else
                               f"gives {n} messages on '{name}'"))
        counts[name] = n
    files = info.get("relative_file_paths")
    if not isinstance(files, list) or not all(isinstance(f, str) and f for f in files):
        raise DataError(f"'{meta}': relative_file_paths must list the storage files, got "
                        f"{str(files)[:80]}")
    counts.files, counts.meta = files, meta
    counts.storage = str(info.get("storage_identifier") or "")
    counts.total = info.get("message_count")
    return counts


#: Storage plugins and the suffix of their files.
_STORAGE_SUFFIX = {"mcap": ".mcap", "sqlite3": ".db3"}


def _check_storage(path: Path, declared: _Declared):
    """The storage files of a bag directory against its metadata.yaml, before any message
    is read: each file listed (by its name, as rosbags reads it) exists in the directory,
    is a regular file of the declared storage plugin, no storage file lies there unlisted,
    the total message count is the sum over the topics, and (MCAP) the files' own
    statistics count the messages metadata.yaml declares per topic, both ways.

    Raises
    ------
    DataError
        Naming the bag, the file or topic and the numbers.
    """
    meta = declared.meta
    listed = []
    for rel in declared.files:
        f = path / PurePath(rel).name           # as rosbags reads it (older rosbag2 wrote
        if not os.path.lexists(f):              # 'bag/bag_0.db3')
            held = sorted(p.name for p in path.iterdir() if p.name != "metadata.yaml")
            raise DataError(f"bag '{path}': metadata.yaml lists the storage file '{rel}', "
                            f"which the directory lacks (it holds {held[:4]})")
        _check_regular(f)
        listed.append(f.resolve())
    suffix = _STORAGE_SUFFIX.get(declared.storage)
    for f in declared.files:
        if suffix and not f.endswith(suffix) and not f.endswith(suffix + ".zstd"):
            raise DataError(f"bag '{path}': metadata.yaml declares '{declared.storage}' storage "
                            f"but lists '{f}'")
    unlisted = [p.name for s in _STORAGE_SUFFIX.values() for p in sorted(path.glob(f"*{s}"))
                if p.resolve() not in listed]
    if unlisted:
        raise DataError(f"bag '{path}' holds storage file(s) {unlisted[:4]} that metadata.yaml "
                        f"does not list: their messages would be left out (a file copied in, "
                        f"or metadata of another recording)")
    total = declared.total
    if total is not None and (isinstance(total, bool) or not isinstance(total, int)
                              or total != sum(declared.values())):
        raise DataError(f"'{meta}': message_count {str(total)[:40]} is not the sum "
                        f"{sum(declared.values())} of topics_with_message_count")
    if declared.storage == "mcap":
        stored = _mcap_statistics(listed)
        for topic in sorted(set(stored or {}) | set(declared)):
            if stored is not None and stored.get(topic, 0) != declared.get(topic, 0):
                if topic not in declared:
                    raise DataError(f"bag '{path}': the storage holds {stored[topic]} messages "
                                    f"on '{topic}', a topic metadata.yaml does not declare: "
                                    f"the metadata does not describe this storage")
                raise DataError(_count_mismatch(path, topic, declared[topic],
                                                stored.get(topic, 0)))


def _mcap_statistics(files):
    """Topic -> message count of MCAP files from their summary statistics, or None when a
    file has none (the messages are then counted as they are read)."""
    from mcap.reader import make_reader
    out = {}
    for file in files:
        try:
            with open(file, "rb") as f:
                summary = make_reader(f).get_summary()
        except Exception:  # noqa: BLE001 - a damaged file: the reader names the damage
            return None
        if summary is None or summary.statistics is None:
            return None
        for cid, n in summary.statistics.channel_message_counts.items():
            ch = summary.channels.get(cid)
            if ch is None:
                return None
            out[ch.topic] = out.get(ch.topic, 0) + int(n)
    return out


def _check_regular(f: Path):
    """A storage file must be a regular file: a FIFO blocked the reader for ever.

    Raises
    ------
    DataError
        A directory, FIFO, device, socket or a symbolic-link loop.
    """
    import stat
    try:
        mode = os.stat(f).st_mode
    except OSError as exc:
        raise DataError(f"bag storage file '{f}' cannot be read: {exc.strerror}") from None
    if not stat.S_ISREG(mode):
        kind = ("a directory" if stat.S_ISDIR(mode) else "a named pipe (FIFO)"
                if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode)
                or stat.S_ISBLK(mode) else "not a regular file")
        raise DataError(f"bag storage file '{f}' is {kind}, not a regular file")


def _diagnose(files, exc) -> str:
    """Where an MCAP file is damaged (scan with chunk CRCs checked), else the library's message.
    """
    import zlib

    from mcap.exceptions import RecordLengthLimitExceeded
    from mcap.records import Chunk
    from mcap.stream_reader import StreamReader, breakup_chunk
    for file in files:
        size = file.stat().st_size
        with open(file, "rb") as f:
            pos = 0
            try:
                reader = StreamReader(f, emit_chunks=True, validate_crcs=True,
                                      record_size_limit=size)
                for rec in reader.records:
                    if isinstance(rec, Chunk):
                        if (rec.compression == "" and rec.uncompressed_crc
                                and zlib.crc32(rec.data) != rec.uncompressed_crc):
                            return (f"'{file.name}' is damaged: CRC mismatch in the chunk at "
                                    f"bytes {pos}-{f.tell()} of {size}")
                        breakup_chunk(rec, validate_crc=True)
                    pos = f.tell()
            except RecordLengthLimitExceeded:
                return (f"'{file.name}' is truncated: the record at byte {pos} runs past the "
                        f"end of the file ({size} bytes)")
            except Exception as e:  # noqa: BLE001 - any parse failure names the position
                if f.tell() >= size:
                    return f"'{file.name}' is truncated: it ends inside a record ({size} bytes)"
                return (f"'{file.name}' is damaged at bytes {pos}-{f.tell()} of {size} "
                        f"({type(e).__name__}: {str(e)[:80]})")
    return f"{type(exc).__name__}: {str(exc)[:120]}"


def _iter_truncated_mcap(files, topics):
    """Messages of MCAP files without footer, up to the last complete (CRC-checked) chunk.

    Raises
    ------
    DataError
        A CRC mismatch or a damaged record before the end of the file.
    """
    from mcap.exceptions import RecordLengthLimitExceeded
    from mcap.records import Channel, Message, Schema
    from mcap.stream_reader import CRCValidationError, StreamReader
    for file in files:
        schemas, channels = {}, {}
        size = file.stat().st_size
        with open(file, "rb") as f:
            try:
                for r in StreamReader(f, validate_crcs=True, record_size_limit=size).records:
                    if isinstance(r, Schema):
                        schemas[r.id] = r.name
                    elif isinstance(r, Channel):
                        channels[r.id] = (r.topic, schemas.get(r.schema_id, ""))
                    elif isinstance(r, Message) and r.channel_id in channels:
                        topic, msgtype = channels[r.channel_id]
                        if topic in topics:
                            yield topic, msgtype, r.data, r.log_time
            except CRCValidationError as e:
                raise DataError(f"recording '{file}' is damaged: CRC mismatch in a "
                                f"{type(e.record).__name__} record before byte {f.tell()} of "
                                f"{size}") from None
            except Exception as e:  # noqa: BLE001 - truncated after the last complete record
                if f.tell() < size and not isinstance(e, RecordLengthLimitExceeded):
                    raise DataError(f"recording '{file}' is damaged near byte {f.tell()} of "
                                    f"{size} ({type(e).__name__})") from None


def _iter_sqlite(files, topics):
    """Messages of rosbag2 SQLite3 storage files read without metadata.yaml (the recorder
    was killed before it wrote one; rosbags needs it), in log-time order per file:
    SQLite commits whole transactions, so the file holds every message flushed before the
    kill. The files are opened read-only and immutable (no journal, lock or ``-shm`` file is
    created next to them); a write-ahead log left beside a file is read from a temporary
    copy.

    Raises
    ------
    DataError
        A file that is not a rosbag2 SQLite3 database, or is damaged.
    """
    import shutil
    import sqlite3
    import tempfile
    for file in files:
        with tempfile.TemporaryDirectory() as tmp:
            src = file
            if Path(f"{file}-wal").is_file():      # committed pages still in the WAL
                src = Path(tmp) / file.name
                shutil.copyfile(file, src)
                shutil.copyfile(f"{file}-wal", f"{src}-wal")
            uri = f"file:{src}?{'mode=ro' if src != file else 'immutable=1'}"
            try:
                con = sqlite3.connect(uri, uri=True)
                try:
                    conns = dict(((i, (n, ty)) for i, n, ty in con.execute(
                        "SELECT id, name, type FROM topics")))
                    wanted = [i for i, (n, _) in conns.items() if n in topics]
                    if not wanted:
                        raise _NoTopic(sorted(n for n, _ in conns.values()))
                    rows = con.execute(
                        f"SELECT topic_id, timestamp, data FROM messages WHERE topic_id IN "
                        f"({','.join('?' * len(wanted))}) ORDER BY timestamp", wanted)
                    for tid, t_ns, raw in rows:
                        topic, msgtype = conns[tid]
                        yield topic, msgtype, bytes(raw), int(t_ns)
                finally:
                    con.close()
            except _NoTopic as exc:
                raise DataError(f"bag '{file}' has none of the topics {sorted(topics)}; its "
                                f"topics: {exc.args[0]}") from None
            except sqlite3.Error as exc:
                raise DataError(f"cannot read '{file}' as a rosbag2 SQLite3 recording: "
                                f"{exc}") from None


def _name_index(msg_names, names, path=None):
    """Index of ``names`` in a message's joint names (slice when identical).

    Raises
    ------
    DataError
        A joint missing from the message (names changed within the bag, or motor names that
        differ from the link names).
    """
    if msg_names == names:
        return slice(None)
    missing = [j for j in names if j not in msg_names]
    if missing:
        raise DataError(f"{f'bag {str(path)!r}: ' if path else ''}JointState message lacks "
                        f"joint(s) {missing}: it names {msg_names}, the recording started "
                        f"with {names}")
    return [msg_names.index(j) for j in names]


def _main_publisher(msgs):
    """Messages of the topic's main publisher: a robot with a gripper (or two drivers)
    publishes several JointState messages on one topic, each naming its own joints. The
    most frequent set of joint names is the main one; messages naming none of its joints
    are another publisher's and are left out.

    Returns
    -------
    kept : list, skipped : int
    """
    from collections import Counter
    if not msgs:
        return msgs, 0
    sets = [frozenset(m.name) for m in msgs]
    main = Counter(sets).most_common(1)[0][0]
    kept = [m for m, st in zip(msgs, sets) if not st.isdisjoint(main)]
    return kept, len(msgs) - len(kept)


def _lacking(msgs, field) -> str:
    """Which messages lack ``field`` (fewer values than names), when only some do: a driver
    that fills the efforts once its controller runs."""
    bad = [k for k, m in enumerate(msgs) if len(getattr(m, field)) != len(m.name)]
    if not bad or len(bad) == len(msgs):
        return ""

    def stamp(m):
        return m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec
    t0 = min(stamp(m) for m in msgs)
    return (f": {len(bad)} of {len(msgs)} messages lack them, the first at "
            f"t = {stamp(msgs[bad[0]]) - t0:.6g} s and the last at "
            f"t = {stamp(msgs[bad[-1]]) - t0:.6g} s (from the first message); cut those out "
            f"of the bag (ros2 bag convert, a start/end time) or record them")


def _joint_arrays(msgs, names, path=None):
    """Stamps (N,) and position/velocity/effort (N, n) of JointState messages (``names`` order)."""
    t = np.array([m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for m in msgs])
    out = {}
    for field in ("position", "velocity", "effort"):
        rows = []
        for m in msgs:
            v = np.asarray(getattr(m, field), dtype=float)
            if v.size != len(m.name):
                break
            idx = _name_index(list(m.name), names, path)
            rows.append(v[idx])
        out[field] = np.array(rows) if len(rows) == len(msgs) else None
    return t, out


def read_bag(path, *, joint_topic: str = JOINT_TOPIC, motor_topic: str = MOTOR_TOPIC,
             elastic: bool | None = None, effort_lag: float = 0.0) -> Dataset:
    """Read a recorded run from a rosbag2 directory or an ``.mcap`` file.

    Parameters
    ----------
    path : str or Path
        rosbag2 directory (MCAP or SQLite storage) or a bare ``.mcap`` file. A recording cut
        short by a crash (no metadata.yaml / no MCAP footer) is read up to its last flush.
    joint_topic, motor_topic : str
        sensor_msgs/JointState topics of the link and (elastic arms) motor side.
    elastic : bool, optional
        Take the torque from the motor-side effort (elastic) or the link-side effort (rigid).
        Default: elastic when the bag has motor states.
    effort_lag : float
        Delay of the recorded efforts in sample periods. A state message that carries the
        torque held over the preceding control period (zero-order hold, as the simulated robot
        publishes it) lags by 0.5: the torque at t_k is then the mean of the efforts at t_k and
        t_k+1 (linear interpolation at t_k + lag periods).

    Returns
    -------
    Dataset
        ``t`` (N,) [s] from the link-side header stamps, shifted to start at 0 (the original
        start time is in ``metadata['t0']``), ``q, dq`` (N, n), ``tau`` (N, n) and for elastic
        arms ``theta, dtheta`` (N, n) interpolated onto the link stamps when they differ.
        Out-of-order messages are sorted, duplicate stamps dropped (counted in metadata:
        ``duplicates_dropped`` with other values, ``repeats_dropped`` unchanged re-publications
        such as a lockstep simulator's keep-alive).

    Raises
    ------
    DataError
        Unreadable bag, missing topic, inconsistent joint names or missing efforts.
    """
    path = Path(path)
    if not path.exists():
        raise DataError(f"bag '{path}' does not exist")
    _check_bag_memory(path, {joint_topic, motor_topic})
    store = typestore()
    msgs = {joint_topic: [], motor_topic: []}
    for topic, msgtype, raw, t_ns in _iter_bag(path, set(msgs)):
        if msgtype != JOINT_STATE:
            raise DataError(f"topic '{topic}' in '{path}' has type {msgtype}; "
                            f"expected {JOINT_STATE}")
        msgs[topic].append(decode(store, raw, msgtype, path, topic, t_ns))
    if not msgs[joint_topic]:
        raise DataError(f"bag '{path}' has no messages on '{joint_topic}'"
                        + (" yet (no metadata.yaml: its recorder is still recording or was "
                           "killed before its first flush)" if _unclosed(path) else ""))
    other = 0
    for topic in (joint_topic, motor_topic):
        msgs[topic], n = _main_publisher(msgs[topic])
        other += n
    if other:
        import warnings
        warnings.warn(f"bag '{path}': left out {other} JointState message(s) of another "
                      f"publisher on the same topic (they name none of the main publisher's "
                      f"joints, e.g. a gripper)", UserWarning, stacklevel=2)
    names = list(msgs[joint_topic][0].name)
    t, link = _joint_arrays(msgs[joint_topic], names, path)
    if link["position"] is None:
        raise DataError(f"'{joint_topic}' messages in '{path}' have fewer positions than names")
    order, keep, dropped = _order(t)
    if dropped > len(t) // 2:
        raise DataError(f"{dropped} of {len(t)} '{joint_topic}' messages in '{path}' repeat an "
                        f"earlier header stamp: the driver does not stamp its messages")
    # a message re-published unchanged (same stamp, same values: a lockstep simulator's
    # keep-alive) is a harmless repeat; a repeated stamp with other values is a stamping fault
    fields = [link[f][order] for f in ("position", "velocity", "effort") if link[f] is not None]
    repeats = sum(all(np.array_equal(a[i], a[i - 1]) for a in fields)
                  for i in np.flatnonzero(~keep))
    t = t[order][keep]
    q = link["position"][order][keep]
    dq = None if link["velocity"] is None else link["velocity"][order][keep]
    elastic = bool(msgs[motor_topic]) if elastic is None else elastic
    theta = dtheta = None
    if elastic:
        if not msgs[motor_topic]:
            raise DataError(f"bag '{path}' has no messages on '{motor_topic}' (elastic arm)")
        tm, motor = _joint_arrays(msgs[motor_topic], names, path)
        if motor["position"] is None or motor["effort"] is None:
            raise DataError(f"'{motor_topic}' messages in '{path}' lack positions or efforts")
        o, k, _ = _order(tm)
        tm = tm[o][k]
        arrays = {f: None if motor[f] is None else motor[f][o][k] for f in motor}
        if len(tm) != len(t) or np.any(tm != t):
            inside = (t >= tm[0]) & (t <= tm[-1])
            if inside.sum() < 2:
                raise DataError(f"'{motor_topic}' and '{joint_topic}' in '{path}' do not "
                                f"overlap in time (stamps {tm[0]:.6g}-{tm[-1]:.6g} s vs "
                                f"{t[0]:.6g}-{t[-1]:.6g} s)")
            t, q = t[inside], q[inside]
            dq = None if dq is None else dq[inside]
            arrays = {f: None if v is None else np.column_stack(
                [np.interp(t, tm, v[:, j]) for j in range(v.shape[1])]) for f, v in arrays.items()}
        theta, dtheta, tau = arrays["position"], arrays["velocity"], arrays["effort"]
    else:
        if link["effort"] is None:
            raise DataError(f"'{joint_topic}' messages in '{path}' carry no efforts (torques)"
                            + _lacking(msgs[joint_topic], "effort"))
        tau = link["effort"][order][keep]
    if len(t) < 2:
        raise DataError(f"bag '{path}' holds {len(t)} usable sample(s) on '{joint_topic}'")
    if effort_lag:
        ts = t + effort_lag * np.median(np.diff(t))
        tau = np.column_stack([np.interp(ts, t, tau[:, j]) for j in range(tau.shape[1])])
    meta = {"source": str(path), "effort_lag": effort_lag, "t0": float(t[0]),
            "other_publisher_messages": other,
            "duplicates_dropped": int(dropped - repeats),
            "repeats_dropped": int(repeats),
            "out_of_order": int(np.sum(np.diff(order) < 0)), "unclosed": _unclosed(path)}
    custom = _custom_data(path)
    meta.update(custom.get("metadata", {}))
    meta["file"] = str(path)
    return Dataset(t=t - t[0], q=q, dq=dq, tau=tau, theta=theta, dtheta=dtheta, joint_names=names,
                   true_parameters=custom.get("true_parameters"), metadata=meta)


#: Memory a decoded JointState message takes while :func:`read_bag` holds the whole bag
#: [bytes] (measured: 4.3 kB for 2 joints), and per byte of storage when the message count
#: is unknown (measured: 33 bytes per byte of an uncompressed MCAP).
BYTES_PER_MESSAGE = 4096
BYTES_PER_STORAGE_BYTE = 32


def _check_bag_memory(path: Path, topics):
    """Refuse, before reading, a bag whose messages :func:`read_bag` cannot hold in memory
    (they are decoded whole; :func:`iter_bag_chunks` streams them): the message count of
    ``topics`` from metadata.yaml or the MCAP statistics, else the storage size.

    Raises
    ------
    DataError
        The estimate exceeds half the available memory; the message suggests streaming.
    """
    from robot_identification._files import check_memory
    declared = None
    try:
        declared = _declared_counts(path)
    except DataError:
        pass                                # named when the bag is read
    files = sorted(path.glob("*.mcap")) if path.is_dir() else [path]
    if declared is None and files and path.suffix != ".db3":
        declared = _mcap_statistics([f for f in files if f.is_file()])
    if declared is not None:
        need = BYTES_PER_MESSAGE * sum(n for t, n in declared.items() if t in topics)
    else:
        storage = files + (sorted(path.glob("*.db3")) if path.is_dir() else [])
        need = BYTES_PER_STORAGE_BYTE * sum(f.stat().st_size for f in storage if f.is_file())
    check_memory(need, f"bag '{path}' read whole", DataError,
                 ": stream it with identify-stream (bounded memory)")


def _unclosed(path) -> bool:
    """A rosbag2 directory without metadata.yaml: its recorder was killed, or still runs."""
    path = Path(path)
    return path.is_dir() and not (path / "metadata.yaml").exists()


def _order(t):
    order = np.argsort(t, kind="stable")
    ts = t[order]
    keep = np.ones(len(ts), dtype=bool)
    keep[1:] = np.diff(ts) > 0
    return order, keep, int((~keep).sum())


def _custom_data(path: Path) -> dict:
    from robot_identification._yaml import read_yaml_file
    meta = path / "metadata.yaml" if path.is_dir() else None
    if meta is None or not meta.exists():
        return {}
    doc = read_yaml_file(meta, "bag metadata", DataError)
    info = doc.get("rosbag2_bagfile_information") if isinstance(doc, dict) else None
    custom = info.get("custom_data") if isinstance(info, dict) else None
    raw = custom.get(_CUSTOM_KEY) if isinstance(custom, dict) else None
    try:
        out = json.loads(raw) if raw else {}
    except (TypeError, ValueError):
        raise DataError(f"'{meta}': custom_data.{_CUSTOM_KEY} is not JSON") from None
    if not isinstance(out, dict) or not isinstance(out.get("metadata", {}), dict) \
            or not isinstance(out.get("true_parameters") or {}, dict):
        raise DataError(f"'{meta}': custom_data.{_CUSTOM_KEY} must map 'metadata' and "
                        f"'true_parameters' to mappings")
    for k, v in (out.get("true_parameters") or {}).items():
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise DataError(f"'{meta}': true parameter '{k}' must be a number, got {v!r}")
    return out


# ---------------------------------------------------------------------------------- writing
class BagWriter:
    """Incrementally flushed rosbag2 (MCAP) writer for raw CDR messages.

    Messages go to an MCAP chunk that is closed and flushed to disk every ``flush_period``
    seconds (wall time), so a crash loses at most that much data; metadata.yaml is written by
    :meth:`close` (version 8: ``ros2 bag info`` on Humble and later reads it).

    Parameters
    ----------
    path : str or Path
        New bag directory. Never overwritten.
    topics : dict
        Topic name -> message type (e.g. ``sensor_msgs/msg/JointState``).
    flush_period : float
        Seconds between flushes.

    Raises
    ------
    DataError
        The directory exists already, or an unknown message type.
    """

    def __init__(self, path, topics: dict, flush_period: float = 1.0, custom_data=None):
        from rosbags.rosbag2 import StoragePlugin, Writer
        self.path = Path(path)
        if self.path.exists():
            raise DataError(f"bag '{self.path}' exists already; recorded data is never "
                            f"overwritten: choose another name")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        store = typestore()
        self._writer = Writer(self.path, version=METADATA_VERSION,
                              storage_plugin=StoragePlugin.MCAP)
        self._custom = dict(custom_data or {})
        if custom_data:
            self._writer.set_custom_data(_CUSTOM_KEY, json.dumps(custom_data))
        self._writer.open()
        try:
            self._conns = {tp: self._writer.add_connection(tp, mt, typestore=store)
                           for tp, mt in topics.items()}
        except Exception as exc:  # unknown type
            self._writer.close()
            raise DataError(f"cannot record topics {topics}: {exc}") from None
        self.flush_period = flush_period
        self._last_flush = time.monotonic()
        self.counts = {tp: 0 for tp in topics}

    def write(self, topic: str, data: bytes, t_ns: int):
        """Append one serialized (CDR) message with log time ``t_ns`` [ns]."""
        self._writer.write(self._conns[topic], int(t_ns), data)
        self.counts[topic] += 1
        if time.monotonic() - self._last_flush >= self.flush_period:
            self.flush()

    def flush(self):
        """Close the pending MCAP chunk and flush it to disk."""
        storage = self._writer.storage
        if storage is not None and storage.chunk.bio.tell():
            storage.close_chunk()
            storage.bio.flush()
        self._last_flush = time.monotonic()

    def set_metadata(self, metadata: dict):
        """Add entries to the bag's ``Dataset.metadata`` (metadata.yaml ``custom_data``,
        JSON-serialisable values), written by :meth:`close`; readers return them in
        ``Dataset.metadata``."""
        self._custom["metadata"] = {**self._custom.get("metadata", {}), **metadata}
        self._writer.set_custom_data(_CUSTOM_KEY, json.dumps(self._custom))

    def close(self):
        """Write the MCAP summary and metadata.yaml."""
        if self._writer.storage is not None:
            self._writer.close()


def iter_bag_chunks(path, chunk: int = 200_000, *, joint_topic=None, motor_topic=None,
                    elastic=None, effort_lag: float = 0.0):
    """Read a rosbag2 recording (directory or ``.mcap``) message by message in chunks.

    Same topic conventions, time base (link header stamps, shifted to start at 0) and
    ``effort_lag`` meaning as :func:`robot_identification.data.read_bag`, but memory is
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
    path = Path(path)
    if not path.exists():
        raise DataError(f"bag '{path}' does not exist")
    if not 0 <= effort_lag < 1:
        raise DataError(f"effort_lag must lie in [0, 1) sample periods, got {effort_lag}")
    jt = joint_topic or JOINT_TOPIC
    mt = motor_topic or MOTOR_TOPIC
    store = typestore()
    custom = _custom_data(path)
    true = custom.get("true_parameters") or {}
    meta0 = dict(custom.get("metadata", {}), unclosed=_unclosed(path))
    meta0.update(source=str(path), file=str(path), effort_lag=effort_lag)
    state = {"names": None, "t0": None, "last": -np.inf, "unpaired": 0, "elastic": elastic,
             "carry": None}
    pend = {jt: {}, mt: {}}
    rows = []

    def convert(m, topic):
        names = list(m.name)
        if state["names"] is None:
            state["names"] = names
        if topic == jt and set(names).isdisjoint(state["names"]):
            return "other", None                 # another publisher (a gripper) on the topic
        idx = _name_index(names, state["names"], path)
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
        meta["duplicates_dropped"] = state.get("repeats", 0)     # so far
        if final:
            meta["unpaired"] = state["unpaired"]
            meta["other_publisher_messages"] = state.get("other", 0)
        return Dataset(t=t - state["t0"], q=q, tau=tau, theta=theta,
                       joint_names=state["names"], true_parameters=true, metadata=meta)

    def add(ts, pos, eff, mpos):
        if ts <= state["last"]:
            if ts == state["last"]:                # a repeated stamp: dropped and counted
                state["repeats"] = state.get("repeats", 0) + 1
                return
            raise DataError(f"bag '{path}': stamps out of order at t = {ts:.9f} s; read it with "
                            f"read_bag (which sorts) instead of streaming")
        state["last"] = ts
        if state["t0"] is None:
            state["t0"] = ts
        rows.append((ts, pos, eff, mpos))

    import itertools
    stream = _iter_bag(path, {jt, mt})
    head = list(itertools.islice(stream, 200))  # peek: are there motor states?
    if state["elastic"] is None:
        state["elastic"] = any(topic == mt for topic, *_ in head)
    first = [decode(store, raw, mtype, path, topic, t_ns) for topic, mtype, raw, t_ns in head
             if topic == jt and mtype == JOINT_STATE]
    if first:                                    # the main publisher's joints (module doc)
        state["names"] = list(_main_publisher(first)[0][0].name)
    for topic, msgtype, raw, t_ns in itertools.chain(head, stream):
        if msgtype != JOINT_STATE:
            raise DataError(f"topic '{topic}' in '{path}' has type {msgtype}; expected "
                            f"{JOINT_STATE}")
        if not state["elastic"] and topic != jt:
            continue
        m = decode(store, raw, msgtype, path, topic, t_ns)
        ts = m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec
        pos, eff = convert(m, topic)
        if isinstance(pos, str):
            state["other"] = state.get("other", 0) + 1
            continue
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
                        + (f" paired with '{mt}' (streaming pairs messages of equal header "
                           f"stamps; read a bag whose topics are stamped apart whole, with "
                           f"identify)" if state["elastic"] else ""))
    state["unpaired"] += sum(len(v) for v in pend.values())
    out = emit(final=True)
    if out is not None:
        yield out


def write_bag(dataset: Dataset, path, *, joint_topic: str = JOINT_TOPIC,
              motor_topic: str = MOTOR_TOPIC) -> Path:
    """Write a dataset as a rosbag2 directory (MCAP storage, metadata version 8).

    Link states go to ``joint_topic`` (effort = ``tau`` for rigid arms); for elastic arms
    (``dataset.theta`` given) motor states go to ``motor_topic`` with effort = ``tau``.
    True parameters and metadata are stored in the bag's ``custom_data``.

    Raises
    ------
    DataError
        Invalid dataset or the bag directory exists already.
    """
    dataset.validate(min_samples=1)
    store = typestore()
    T = store.types
    JointState, Header, Time = (T[JOINT_STATE], T["std_msgs/msg/Header"],
                                T["builtin_interfaces/msg/Time"])
    elastic = dataset.theta is not None
    topics = {joint_topic: JOINT_STATE}
    if elastic:
        topics[motor_topic] = JOINT_STATE
    custom = {"true_parameters": dataset.true_parameters,
              "metadata": json.loads(json.dumps(dataset.metadata, default=str))}
    writer = BagWriter(path, topics, flush_period=np.inf, custom_data=custom)
    names = list(dataset.joint_names)
    empty = np.zeros(0)

    def msg(k, pos, vel, eff):
        ns = int(round(dataset.t[k] * 1e9))
        header = Header(stamp=Time(sec=ns // 10**9, nanosec=ns % 10**9), frame_id="")
        arr = np.ascontiguousarray
        return ns, JointState(header=header, name=names, position=arr(pos[k]),
                              velocity=empty if vel is None else arr(vel[k]),
                              effort=empty if eff is None else arr(eff[k]))

    try:
        for k in range(dataset.n_samples):
            ns, m = msg(k, dataset.q, dataset.dq, None if elastic else dataset.tau)
            writer.write(joint_topic, store.serialize_cdr(m, JOINT_STATE), ns)
            if elastic:
                ns, m = msg(k, dataset.theta, dataset.dtheta, dataset.tau)
                writer.write(motor_topic, store.serialize_cdr(m, JOINT_STATE), ns)
    finally:
        writer.close()
    return Path(path)
