"""rosbag2 input/output (MCAP storage) with ``rosbags``; no ROS installation needed.

Topic conventions (ros2_control style, see docs/ros.md):

- ``/joint_states`` (sensor_msgs/JointState): link side; position q [rad], velocity dq [rad/s],
  effort: applied joint torque [N*m] (rigid arms).
- ``/motor_states`` (sensor_msgs/JointState): motor side of elastic joints, link-referred
  (theta = motor angle / gear reduction) [rad], velocity [rad/s], effort: motor torque u [N*m].
- ``/effort_controller/commands`` (std_msgs/Float64MultiArray): commanded torques [N*m].

Elastic arms (docs/elastic.md): ``/joint_states`` effort, when filled, is what joint torque
sensors read (tau_J, the torque the elastic joint transmits to the link), its position may be
left empty by an arm without link encoders, and ``/motor_states`` effort may be empty when no
motor current is recorded. Every signal can be read from another topic and field
(:func:`bag_signals`), also from ros2_control's ``/dynamic_joint_states``
(control_msgs/DynamicJointState: a field is then a state interface name, e.g.
``motor_position``).

Time is taken from the header stamps (simulation time in lockstep runs).
"""
from __future__ import annotations

import itertools
import json
import os
import shutil
import stat
import tempfile
import time
import warnings
import zlib
from collections import Counter
from pathlib import Path, PurePath

import numpy as np

from robot_identification._files import check_memory
from robot_identification._yaml import read_yaml_file
from robot_identification.data._dataset import Dataset
from robot_identification.errors import DataError

JOINT_TOPIC = "/joint_states"
MOTOR_TOPIC = "/motor_states"
COMMAND_TOPIC = "/effort_controller/commands"
JOINT_STATE = "sensor_msgs/msg/JointState"
DYNAMIC_JOINT_STATE = "control_msgs/msg/DynamicJointState"
#: Signals of a recording (``read_bag(signals=...)``, the robot config's ``bag:`` section):
#: link positions and velocities, the torque (rigid: joint torque; elastic: the motor torque,
#: link-referred), motor positions and velocities (link-referred), joint torque sensors.
SIGNALS = ("position", "velocity", "torque", "motor_position", "motor_velocity",
           "joint_torque")              # = model BAG_SIGNALS (the config's bag: section)
_DATASET = {"position": "q", "velocity": "dq", "torque": "tau", "motor_position": "theta",
            "motor_velocity": "dtheta", "joint_torque": "tau_joint"}
_CONTROL_MSGS = {
    "control_msgs/msg/InterfaceValue": "string[] interface_names\nfloat64[] values\n",
    DYNAMIC_JOINT_STATE: "std_msgs/Header header\nstring[] joint_names\n"
                         "control_msgs/InterfaceValue[] interface_values\n"}
FLOAT64_ARRAY = "std_msgs/msg/Float64MultiArray"
METADATA_VERSION = 8      # readable by ``ros2 bag`` on Humble and later (9 is not)
_CUSTOM_KEY = "robot_identification"


def typestore():
    """The rosbags type store of the ROS 2 messages the bags hold (Humble definitions)."""
    from rosbags.typesys import (  # rosbags: 45 ms, bags only
        Stores, get_types_from_msg, get_typestore)
    store = get_typestore(Stores.ROS2_HUMBLE)
    types = {}
    for name, text in _CONTROL_MSGS.items():      # ros2_control's state messages
        types.update(get_types_from_msg(text, name))
    store.register(types)
    return store


def bag_signals(elastic, joint_topic=JOINT_TOPIC, motor_topic=MOTOR_TOPIC, signals=None):
    """Where each signal of a recording is read from: ``{signal: (topic, field)}``.

    Defaults: link positions and velocities from ``joint_topic`` (position, velocity);
    rigid arms: the torque from its effort; elastic arms: motor positions, velocities and
    the motor torque from ``motor_topic`` (position, velocity, effort) and the joint torque
    sensors from ``joint_topic`` effort. ``signals`` overrides entries: ``{signal:
    'topic/field'}`` (a JointState field, or a state interface name of a
    control_msgs/DynamicJointState topic, e.g. ``/dynamic_joint_states/motor_position``);
    ``None`` or ``''`` drops a signal (e.g. ``position: null`` for an arm whose
    ``/joint_states`` position comes from its motor encoders: map it to motor_position).

    Raises
    ------
    DataError
        An unknown signal or a value that is not ``topic/field``.
    """
    if elastic:
        plan = {"position": (joint_topic, "position"), "velocity": (joint_topic, "velocity"),
                "torque": (motor_topic, "effort"), "motor_position": (motor_topic, "position"),
                "motor_velocity": (motor_topic, "velocity"),
                "joint_torque": (joint_topic, "effort")}
    else:
        plan = {"position": (joint_topic, "position"), "velocity": (joint_topic, "velocity"),
                "torque": (joint_topic, "effort")}
    for key, value in (signals or {}).items():
        if key not in SIGNALS:
            raise DataError(f"unknown bag signal '{key}'; the signals are {list(SIGNALS)}")
        if value in (None, ""):
            plan.pop(key, None)
            continue
        topic, _, field = str(value).rpartition("/")
        if not topic.startswith("/") or not field:
            raise DataError(f"bag signal '{key}': expected '/topic/field' (e.g. "
                            f"'/motor_states/position'), got {value!r}")
        if elastic or key in ("position", "velocity", "torque"):
            plan[key] = (topic, field)
    return plan


def _names(m):
    """Joint names of a JointState or DynamicJointState message."""
    return list(m.name) if hasattr(m, "name") else list(m.joint_names)


def _field(m, field):
    """Values of ``field`` in message order (a JointState field, or a DynamicJointState
    state interface), or None when the message does not fill it for every joint."""
    if hasattr(m, "name"):
        v = np.asarray(getattr(m, field, ()), dtype=float)
        return v if v.size == len(m.name) else None
    out = []
    for iv in m.interface_values:
        names = list(iv.interface_names)
        if field not in names:
            return None
        out.append(iv.values[names.index(field)])
    return np.asarray(out, dtype=float) if len(out) == len(m.joint_names) else None


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
    from rosbags.rosbag2 import Reader  # rosbags: 45 ms, bags only
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
    from mcap.reader import make_reader  # mcap: damaged files only
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

    from mcap.exceptions import RecordLengthLimitExceeded  # mcap: damaged files only
    from mcap.records import Chunk  # mcap: damaged files only
    from mcap.stream_reader import StreamReader, breakup_chunk  # mcap: damaged files only
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
    from mcap.exceptions import RecordLengthLimitExceeded  # mcap: damaged files only
    from mcap.records import Channel, Message, Schema  # mcap: damaged files only
    from mcap.stream_reader import CRCValidationError, StreamReader  # mcap: damaged files only
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
    import sqlite3  # start-up: only .db3 bags read it (identify on CSV files: ~4 ms less)
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
    if not msgs:
        return msgs, 0
    sets = [frozenset(_names(m)) for m in msgs]
    main = Counter(sets).most_common(1)[0][0]
    kept = [m for m, st in zip(msgs, sets) if not st.isdisjoint(main)]
    return kept, len(msgs) - len(kept)


def _lacking(msgs, field) -> str:
    """Which messages lack ``field`` (fewer values than names), when only some do: a driver
    that fills the efforts once its controller runs."""
    bad = [k for k, m in enumerate(msgs) if _field(m, field) is None]
    if not bad or len(bad) == len(msgs):
        return ""

    def stamp(m):
        return m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec
    t0 = min(stamp(m) for m in msgs)
    return (f": {len(bad)} of {len(msgs)} messages lack them, the first at "
            f"t = {stamp(msgs[bad[0]]) - t0:.6g} s and the last at "
            f"t = {stamp(msgs[bad[-1]]) - t0:.6g} s (from the first message); cut those out "
            f"of the bag (ros2 bag convert, a start/end time) or record them")


def _stamp_ns(m) -> int:
    """A message's header stamp in integer nanoseconds (exact)."""
    return int(m.header.stamp.sec) * 1_000_000_000 + int(m.header.stamp.nanosec)


def _joint_arrays(msgs, names, path=None, fields=("position", "velocity", "effort"),
                  origin_ns=0):
    """Stamps (N,) [s after ``origin_ns``, integer nanoseconds of the same clock] and the
    ``fields`` (N, n) of JointState (or DynamicJointState) messages in ``names`` order; a
    field some message lacks is None. The stamps are differences of integer nanoseconds:
    seconds since 1970 as one float64 are quantised to 2.4e-7 s (a 1 kHz run's periods
    then 0.9997-1.0002 ms apart: noise on the differentiated accelerations)."""
    t = np.array([(_stamp_ns(m) - origin_ns) * 1e-9 for m in msgs])
    out = {}
    for field in fields:
        rows = []
        for m in msgs:
            v = _field(m, field)
            if v is None:
                break
            idx = _name_index(_names(m), names, path)
            rows.append(v[idx])
        out[field] = np.array(rows) if len(rows) == len(msgs) else None
    return t, out


def _keep_braked(lagged, tau):
    """``lagged`` (M, n) efforts interpolated between published ones ``tau`` (N >= M, n):
    row k mixes rows k and k + 1 of ``tau``; where either is all exactly 0.0 (a braked or
    drives-off period: hardware_robot publishes zero effort while its brakes hold the arm)
    row k is set to 0.0 too, so that the identification's drives-off check
    (``identification._engine.DrivesOff``) still finds it - a braked period one sample
    long would otherwise vanish into two half efforts while the arm's stop stays in the
    data (docs/ros.md, "Braked periods in the bag")."""
    zero = (np.asarray(tau) == 0.0).all(axis=1)
    m = lagged.shape[0]
    off = zero[:m] | zero[1:m + 1] if tau.shape[0] > m else zero[:m] | np.append(
        zero[1:m], False)
    if off.any():
        lagged = lagged.copy()
        lagged[off] = 0.0
    return lagged


def read_bag(path, *, joint_topic: str = JOINT_TOPIC, motor_topic: str = MOTOR_TOPIC,
             elastic: bool | None = None, effort_lag: float = 0.0, signals=None) -> Dataset:
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
        Delay of the recorded (motor) efforts in sample periods. A state message that
        carries the torque held over the preceding control period (zero-order hold, as the
        simulated robot publishes it) lags by 0.5: the torque at t_k is then the mean of the
        efforts at t_k and t_k+1 (linear interpolation at t_k + lag periods). Joint torque
        sensors read a state and are not shifted.
    signals : dict, optional
        ``{signal: '/topic/field'}`` overriding where a signal is read
        (:func:`bag_signals`; DynamicJointState topics of ros2_control included).

    Returns
    -------
    Dataset
        ``t`` (N,) [s] from the header stamps of the link positions' topic (of the motor
        positions' for an arm without link encoders), shifted to start at 0 (the original
        start time is in ``metadata['t0']``), ``q, dq`` (N, n), ``tau`` (N, n) and for
        elastic arms ``theta, dtheta`` (N, n) and ``tau_joint`` when recorded; signals of
        other topics are interpolated onto those stamps when they differ. Out-of-order
        messages are sorted, duplicate stamps dropped (counted in metadata:
        ``duplicates_dropped`` with other values, ``repeats_dropped`` unchanged
        re-publications such as a lockstep simulator's keep-alive).

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
    plan = bag_signals(elastic is not False, joint_topic, motor_topic, signals)
    msgs = {topic: [] for topic, _ in plan.values()}
    msgs.setdefault(joint_topic, [])
    for topic, msgtype, raw, t_ns in _iter_bag(path, set(msgs)):
        if msgtype not in (JOINT_STATE, DYNAMIC_JOINT_STATE):
            raise DataError(f"topic '{topic}' in '{path}' has type {msgtype}; "
                            f"expected {JOINT_STATE}")
        msgs[topic].append(decode(store, raw, msgtype, path, topic, t_ns))
    motor = plan.get("motor_position", (None,))[0]
    if elastic is None:
        elastic = bool(motor is not None and msgs.get(motor))
    if not elastic:
        plan = bag_signals(False, joint_topic, motor_topic, signals)
    other = 0
    for topic in msgs:
        msgs[topic], k = _main_publisher(msgs[topic])
        other += k
    if other:
        warnings.warn(f"bag '{path}': left out {other} JointState message(s) of another "
                      f"publisher on the same topic (they name none of the main publisher's "
                      f"joints, e.g. a gripper)", UserWarning, stacklevel=2)
    # the time base: the link positions' topic, else (no link encoders) the motor positions'
    link = plan.get("position", (joint_topic,))[0]
    base = link
    if elastic and motor is not None and msgs.get(motor) and (
            not msgs.get(link) or _field(msgs[link][0], plan.get("position", ("", ""))[1])
            is None):
        base = motor
    if not msgs.get(base):
        raise DataError(f"bag '{path}' has no messages on '{link}'"
                        + (" yet (no metadata.yaml: its recorder is still recording or was "
                           "killed before its first flush)" if _unclosed(path) else ""))
    if elastic and (motor is None or not msgs.get(motor)):
        raise DataError(f"bag '{path}' has no messages on '{motor or motor_topic}' "
                        f"(elastic arm)")
    names = _names(msgs[base][0])
    origin = min(_stamp_ns(m) for m in msgs[base])     # stamps as exact differences from it
    arrays, t, repeats, dropped = {}, None, 0, 0
    for topic in [base] + [tp for tp in msgs if tp != base and msgs[tp]]:
        fields = sorted({f for tp, f in plan.values() if tp == topic})
        if not fields:
            continue
        tt, values = _joint_arrays(msgs[topic], names, path, fields, origin)
        order, keep, drop = _order(tt)
        if topic == base:
            if drop > len(tt) // 2:
                raise DataError(f"{drop} of {len(tt)} '{topic}' messages in '{path}' repeat "
                                f"an earlier header stamp: the driver does not stamp its "
                                f"messages")
            # a message re-published unchanged (same stamp, same values: a lockstep
            # simulator's keep-alive) is a harmless repeat; other values: a stamping fault
            filled = [v[order] for v in values.values() if v is not None]
            repeats = sum(all(np.array_equal(a[i], a[i - 1]) for a in filled)
                          for i in np.flatnonzero(~keep))
            dropped = drop
            t = tt[order][keep]
        tt = tt[order][keep]
        values = {f: None if v is None else v[order][keep] for f, v in values.items()}
        if topic != base and (len(tt) != len(t) or np.any(tt != t)):
            inside = (t >= tt[0]) & (t <= tt[-1])
            if inside.sum() < 2:
                raise DataError(f"'{topic}' and '{base}' in '{path}' do not overlap in time "
                                f"(stamps {tt[0]:.6g}-{tt[-1]:.6g} s vs {t[0]:.6g}-"
                                f"{t[-1]:.6g} s)")
            t = t[inside]
            arrays = {k: v[inside] for k, v in arrays.items()}
            values = {f: None if v is None else np.column_stack(
                [np.interp(t, tt, v[:, j]) for j in range(v.shape[1])])
                for f, v in values.items()}
        for key, (tp, f) in plan.items():
            if tp == topic and values.get(f) is not None:
                arrays[key] = values[f]
    if "position" not in arrays and not (elastic and "joint_torque" in arrays):
        if not msgs.get(link):
            raise DataError(f"bag '{path}' has no messages on '{link}'"
                            + (" (an elastic arm without link encoders needs joint torques: "
                               "docs/elastic.md)" if elastic else ""))
        raise DataError(f"'{link}' messages in '{path}' have fewer positions than names")
    if elastic:
        if "motor_position" not in arrays or ("torque" not in arrays
                                              and "joint_torque" not in arrays):
            raise DataError(f"'{motor}' messages in '{path}' lack positions or efforts "
                            f"(and '{plan.get('joint_torque', (joint_topic,))[0]}' carries no "
                            f"joint torques)")
    else:
        if "torque" not in arrays:
            raise DataError(f"'{joint_topic}' messages in '{path}' carry no efforts (torques)"
                            + _lacking(msgs[plan['torque'][0]], plan["torque"][1]))
    if len(t) < 2:
        raise DataError(f"bag '{path}' holds {len(t)} usable sample(s) on '{base}'")
    if effort_lag and "torque" in arrays:
        ts = t + effort_lag * np.median(np.diff(t))
        tau = arrays["torque"]
        arrays["torque"] = _keep_braked(np.column_stack(
            [np.interp(ts, t, tau[:, j]) for j in range(tau.shape[1])]), tau)
    meta = {"source": str(path), "effort_lag": effort_lag,
            "t0": origin * 1e-9 + float(t[0]),
            "other_publisher_messages": other,
            "duplicates_dropped": int(dropped - repeats),
            "repeats_dropped": int(repeats),
            "out_of_order": int(np.sum(np.diff(_order(_joint_arrays(
                msgs[base], names, path, (), origin)[0])[0]) < 0)), "unclosed": _unclosed(path)}
    if signals:
        meta["signals"] = {k: f"{tp}/{f}" for k, (tp, f) in plan.items()}
    custom = _custom_data(path)
    meta.update(custom.get("metadata", {}))
    meta["file"] = str(path)
    data = {_DATASET[k]: v for k, v in arrays.items()}
    if not elastic:
        data = {k: v for k, v in data.items() if k in ("q", "dq", "tau")}
    return Dataset(t=t - t[0], joint_names=names, true_parameters=custom.get("true_parameters"),
                   metadata=meta, **data)


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
    """The ``custom_data`` this package's recorder wrote into a bag's metadata.yaml
    (``{}`` for a bag without metadata.yaml or without it; public as
    :func:`robot_identification.data.bag_custom_data`).

    Raises
    ------
    DataError
        An unreadable metadata.yaml.
    """
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
        from rosbags.rosbag2 import StoragePlugin, Writer  # rosbags: 45 ms, bags only
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
                    elastic=None, effort_lag: float = 0.0, signals=None):
    """Read a rosbag2 recording (directory or ``.mcap``) message by message in chunks.

    Same topic conventions, signals (:func:`bag_signals`), time base and ``effort_lag``
    meaning as :func:`robot_identification.data.read_bag`, but memory is O(chunk): messages
    are deserialised and converted as they are read. Messages must arrive in stamp order
    (as recorded); duplicate stamps are dropped. When the signals come from several topics
    (elastic arms: link and motor states) their messages are paired by identical stamps
    (messages without a partner are dropped and counted in ``metadata['unpaired']`` of the
    last chunk).

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
        In [0, 1) sample periods: tau_k = (1 - lag) e_k + lag e_{k+1} (the motor torque;
        joint torque sensors are not shifted).
    signals : dict, optional
        ``{signal: '/topic/field'}`` (:func:`bag_signals`).

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
    wide = bag_signals(elastic is not False, jt, mt, signals)
    stream = _iter_bag(path, {tp for tp, _ in wide.values()} | {jt})
    head = list(itertools.islice(stream, 200))  # peek: are there motor states?
    motor = wide.get("motor_position", (None,))[0]
    if elastic is None:
        elastic = motor is not None and any(topic == motor for topic, *_ in head)
    plan = wide if elastic else bag_signals(False, jt, mt, signals)
    fields = {}                                     # topic -> {field: signal}
    for key, (tp, f) in plan.items():
        fields.setdefault(tp, {})[f] = key
    state = {"names": None, "t0": None, "last": -np.inf, "unpaired": 0, "carry": None,
             "repeats": 0, "other": 0, "keys": None}
    first = [decode(store, raw, mtype, path, topic, t_ns) for topic, mtype, raw, t_ns in head
             if topic == jt and mtype == JOINT_STATE]
    if first:                                    # the main publisher's joints (module doc)
        state["names"] = _names(_main_publisher(first)[0][0])
    pend = {tp: {} for tp in fields}
    rows = []

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
        # [s] from the first stamp: exact differences of integer nanoseconds (_joint_arrays)
        t = np.array([(r[0] - state["t0"]) * 1e-9 for r in data])
        arrays = {_DATASET[k]: np.array([r[1][k] for r in data]) for k in state["keys"]}
        if effort_lag and "tau" in arrays:
            tau = arrays["tau"]
            lagged = _keep_braked((1 - effort_lag) * tau[:-1] + effort_lag * tau[1:], tau)
            arrays["tau"] = lagged if not final else np.vstack([lagged, tau[-1:]])
        if effort_lag and not final:
            t = t[:-1]
            arrays = {k: (v if k == "tau" else v[:-1]) for k, v in arrays.items()}
        meta = dict(meta0, t0=state["t0"] * 1e-9)
        meta["duplicates_dropped"] = state["repeats"]     # so far
        meta["unpaired"] = state["unpaired"]              # so far (all in the last chunk)
        if final:
            meta["other_publisher_messages"] = state["other"]
        return Dataset(t=t, joint_names=state["names"], true_parameters=true,
                       metadata=meta, **arrays)

    def add(ts, values):
        if ts <= state["last"]:
            if ts == state["last"]:                # a repeated stamp: dropped and counted
                state["repeats"] += 1
                return
            raise DataError(f"bag '{path}': stamps out of order at t = {ts * 1e-9:.9f} s; read "
                            f"it with read_bag (which sorts) instead of streaming")
        keys = tuple(sorted(values))
        if state["keys"] is None:
            state["keys"] = keys
            _check_signals(keys, elastic, plan, path, jt, mt)
        elif keys != state["keys"]:
            missing = sorted(set(state["keys"]) - set(keys))
            raise DataError(f"bag '{path}': the messages at t = {ts * 1e-9:.9f} s lack "
                            f"{missing} that the first ones carry")
        state["last"] = ts
        if state["t0"] is None:
            state["t0"] = ts
        rows.append((ts, values))

    for topic, msgtype, raw, t_ns in itertools.chain(head, stream):
        if msgtype not in (JOINT_STATE, DYNAMIC_JOINT_STATE):
            raise DataError(f"topic '{topic}' in '{path}' has type {msgtype}; expected "
                            f"{JOINT_STATE}")
        if topic not in fields:
            continue
        m = decode(store, raw, msgtype, path, topic, t_ns)
        names = _names(m)
        if state["names"] is None:
            state["names"] = names
        if set(names).isdisjoint(state["names"]):
            state["other"] += 1                  # another publisher (a gripper) on the topic
            continue
        idx = _name_index(names, state["names"], path)
        ts = _stamp_ns(m)                        # [ns] exact (as keys and differences)
        values = {}
        for f, key in fields[topic].items():
            v = _field(m, f)
            if v is not None:
                values[key] = v[idx]
        if len(fields) == 1:
            add(ts, values)
        else:
            pend[topic][ts] = values
            if all(ts in pend[tp] for tp in pend):
                merged = {}
                for tp in pend:
                    merged.update(pend[tp].pop(ts))
                    for old in [k for k in pend[tp] if k < ts]:   # partner never came
                        pend[tp].pop(old)
                        state["unpaired"] += 1
                add(ts, merged)
        if len(rows) >= chunk:
            out = emit()
            if out is not None:
                yield out
    if state["t0"] is None:
        raise DataError(f"bag '{path}' has no messages on '{jt}'"
                        + (f" paired with '{mt}' (streaming pairs messages of equal header "
                           f"stamps; read a bag whose topics are stamped apart whole, with "
                           f"identify)" if elastic else ""))
    state["unpaired"] += sum(len(v) for v in pend.values())
    out = emit(final=True)
    if out is not None:
        yield out


def _check_signals(keys, elastic, plan, path, jt, mt):
    """The first streamed sample's signals must identify something (as :func:`read_bag`).

    Raises
    ------
    DataError
        A rigid arm without efforts or positions; an elastic arm without motor positions,
        without link positions and joint torques, or without any torque.
    """
    def where(k):
        return "'{}'".format(plan.get(k, (jt if k in ("position", "joint_torque") else mt,))[0])
    if not elastic:
        if "torque" not in keys:
            raise DataError(f"{where('torque')} messages in '{path}' carry no efforts "
                            f"(torques)")
        if "position" not in keys:
            raise DataError(f"{where('position')} messages in '{path}' have fewer positions "
                            f"than names")
        return
    if "motor_position" not in keys or ("torque" not in keys and "joint_torque" not in keys):
        raise DataError(f"{where('motor_position')} messages in '{path}' carry no "
                        f"{'positions' if 'motor_position' not in keys else 'efforts'} "
                        f"(motor torque) and {where('joint_torque')} no joint torques")
    if "position" not in keys and "joint_torque" not in keys:
        raise DataError(f"{where('position')} messages in '{path}' carry neither link "
                        f"positions nor joint torques: the deflection of the elastic joints "
                        f"is not measured (docs/elastic.md, sensor set c)")


def write_bag(dataset: Dataset, path, *, joint_topic: str = JOINT_TOPIC,
              motor_topic: str = MOTOR_TOPIC) -> Path:
    """Write a dataset as a rosbag2 directory (MCAP storage, metadata version 8).

    Link states go to ``joint_topic`` (effort = ``tau`` for rigid arms); for elastic arms
    (``dataset.theta`` given) motor states go to ``motor_topic`` with effort = ``tau``, the
    joint torque sensors (``tau_joint``) to ``joint_topic`` effort; a signal the dataset
    lacks (link positions, motor torques) is an empty array (docs/elastic.md).
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
        return ns, JointState(header=header, name=names,
                              position=empty if pos is None else arr(pos[k]),
                              velocity=empty if vel is None else arr(vel[k]),
                              effort=empty if eff is None else arr(eff[k]))

    try:
        for k in range(dataset.n_samples):
            ns, m = msg(k, dataset.q, dataset.dq,
                        dataset.tau_joint if elastic else dataset.tau)
            writer.write(joint_topic, store.serialize_cdr(m, JOINT_STATE), ns)
            if elastic:
                ns, m = msg(k, dataset.theta, dataset.dtheta, dataset.tau)
                writer.write(motor_topic, store.serialize_cdr(m, JOINT_STATE), ns)
    finally:
        writer.close()
    return Path(path)
