"""What the recorder and the identifier's live source share: subscriptions that drop nothing,
a bag writer that never blocks the subscription callback, and counts of what did not arrive."""
from __future__ import annotations

import collections
import math
import queue
import threading

from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

from robot_identification.errors import DataError

#: header.frame_id of a stopped real-time run's rest point (the excitation publisher's
#: ``rest_reference``, stamped a period after the run): not one of the run's references
REST_FRAME = "rest"
#: the recorder's subscriptions: reliable, keep all (nothing dropped on the recorder's side)
RECORD_QOS = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)


class TopicCount:
    """Counts of one recorded topic.

    Parameters
    ----------
    rate_hz : float, optional
        Expected sample rate [Hz] of a state topic: its header stamps are checked for missing
        samples; ``None``: no stamp check (commands, references).
    """

    def __init__(self, rate_hz=None):
        self.rate = rate_hz
        self.recorded = 0
        self.lost = 0                 # gaps in the publishers' sequence numbers
        self.out_of_order = 0         # sequence number not after its publisher's last one
        self.sequenced = True         # the middleware reports sequence numbers
        self._last_seq = {}           # publisher gid -> last sequence number
        self.first_stamp = self.last_stamp = None   # [s] header stamps (state topics)
        self.missing = 0              # samples absent from the stamps at rate_hz
        self.longest_gap = 0.0        # [s] longest step between consecutive stamps
        self.repeated_stamps = 0      # stamps not after the previous one
        self.first_arrival = self.last_arrival = None   # [s] recorder's clock
        self.missing_before = self.missing_after = 0    # samples of the run not received
        #                                                 before the first / after the last

    def add(self, sequence=None, publisher=None, stamp=None, arrival=None):
        """Count one recorded message: its publisher's DDS publication ``sequence`` number
        (``None``: not reported), the ``publisher`` (any hashable id), the header ``stamp``
        [s] and the ``arrival`` time [s] (the recorder's clock)."""
        self.recorded += 1
        if arrival is not None:
            self.first_arrival = arrival if self.first_arrival is None else self.first_arrival
            self.last_arrival = arrival
        if sequence is None:
            self.sequenced = False
        else:
            last = self._last_seq.get(publisher)
            if last is not None and sequence > last + 1:
                self.lost += sequence - last - 1
            elif last is not None and sequence <= last:
                self.out_of_order += 1
            self._last_seq[publisher] = sequence if last is None else max(last, sequence)
        if stamp is None or self.rate is None:
            return
        last = self.last_stamp
        self.first_stamp = stamp if self.first_stamp is None else self.first_stamp
        self.last_stamp = stamp if last is None else max(stamp, last)
        if last is None:
            return
        if stamp <= last:
            self.repeated_stamps += 1
        elif stamp - last > 1.5 / self.rate:
            self.missing += round((stamp - last) * self.rate) - 1
            self.longest_gap = max(self.longest_gap, stamp - last)

    def cover(self, lower=None, upper=None):
        """Count as missing the samples of the run [``lower``, ``upper``] [s] (its first and
        last reference) before the first and after the last recorded stamp: a recording that
        did not receive the run's first or last periods (its subscription matched the
        publisher late - DDS discovery - or they were lost before the first message it got)
        looks complete to the stamp and sequence checks, which start at the first recorded
        message. Call once, when the recording ends."""
        if self.rate is None or self.first_stamp is None:
            return
        tol = 0.5 / self.rate
        lower, upper = (None if b is None or not math.isfinite(b) else b for b in (lower, upper))
        if lower is not None and self.first_stamp - lower > tol:
            self.missing_before = round((self.first_stamp - lower) * self.rate)
            self.longest_gap = max(self.longest_gap, self.first_stamp - lower)
        if upper is not None and upper - self.last_stamp > tol:
            self.missing_after = round((upper - self.last_stamp) * self.rate)
            self.longest_gap = max(self.longest_gap, upper - self.last_stamp)
        self.missing += self.missing_before + self.missing_after

    def summary(self) -> dict:
        """The counts as plain values (bag metadata): ``recorded``, ``lost`` (``None`` without
        sequence numbers), ``out_of_order``; state topics also ``expected_rate_hz``,
        ``stamp_span_s``, ``expected`` (samples at the rate over the stamp span), ``missing``,
        ``repeated_stamps``, ``arrival_span_s`` (recorder's clock) and ``arrival_rate_hz``."""
        out = {"recorded": self.recorded, "lost": self.lost if self.sequenced else None,
               "out_of_order": self.out_of_order}
        if self.rate is not None and self.first_stamp is not None:
            span = self.last_stamp - self.first_stamp
            wall = self.last_arrival - self.first_arrival if self.first_arrival is not None \
                else None
            out.update(expected_rate_hz=self.rate, stamp_span_s=round(span, 9),
                       expected=int(round(span * self.rate)) + 1 + self.missing_before
                       + self.missing_after, missing=self.missing,
                       missing_before_first=self.missing_before,
                       missing_after_last=self.missing_after,
                       repeated_stamps=self.repeated_stamps,
                       longest_gap_s=round(self.longest_gap, 9),
                       arrival_span_s=None if wall is None else round(wall, 6),
                       arrival_rate_hz=(round((self.recorded - 1) / wall, 3)
                                        if wall else None))
        return out

    def text(self) -> str:
        """One line: recorded, lost and, for a state topic, missing samples and rates."""
        s = self.summary()
        lost = "lost ?" if s["lost"] is None else f"lost {s['lost']}"
        line = f"{s['recorded']} recorded, {lost}"
        if "expected" in s:
            line += (f", stamps {s['stamp_span_s']:.3f} s: {s['missing']} of {s['expected']} "
                     f"samples at {s['expected_rate_hz']:g} Hz missing")
            if self.missing_before or self.missing_after:
                line += (f" ({self.missing_before} of the run before the first recorded, "
                         f"{self.missing_after} after the last: never received)")
            if s["arrival_rate_hz"]:
                line += (f", arrived at {s['arrival_rate_hz']:.0f} Hz over "
                         f"{s['arrival_span_s']:.2f} s")
        return line


def excitation_status(status) -> dict:
    """An excitation publisher's ``/diagnostics`` entry (diagnostic_msgs/DiagnosticStatus,
    name ``<node>: excitation``) as plain values: ``name``, ``level``, ``message`` and its
    key/values (``state``, ``reason``, ``start_stamp_s``, ``played_s``, ``planned_s``,
    ``clock``; numbers as floats, an empty start as ``None``)."""
    level = status.level
    out = {"name": status.name, "message": status.message,
           "level": level[0] if isinstance(level, (bytes, bytearray)) else int(level)}
    for kv in status.values:
        value = kv.value
        if kv.key in ("start_stamp_s", "played_s", "planned_s"):
            try:
                value = float(value) if value != "" else None
            except ValueError:
                value = None
        out[kv.key] = value
    return out


def excitation_coverage(status, first_stamp, last_stamp, rate_hz):
    """Whether a recording holds the whole excitation run that ``status``
    (:func:`excitation_status`) describes.

    Parameters
    ----------
    status : dict
        The excitation publisher's latest status when the recording stopped.
    first_stamp, last_stamp : float or None
        [s] header stamps of the first and last recorded joint state.
    rate_hz : float
        State rate [Hz]: half a period is the tolerance on the stamps.

    Returns
    -------
    dict or None
        ``None`` when no run overlaps the recording (idle, a run that ended before it began,
        no states recorded); else ``status`` plus ``complete`` (bool) and ``why`` (one line
        when incomplete): the run was ``stopped`` before its end (its reason), or - runs on
        the robot's clock (``clock: robot``: lockstep, ``reference_clock: states``) - the
        recorded stamps start after the run's first reference or end before its planned end.
    """
    start, played, planned = (status.get(k) for k in ("start_stamp_s", "played_s",
                                                       "planned_s"))
    if status.get("state") in (None, "", "idle") or start is None or first_stamp is None:
        return None
    robot_clock = status.get("clock") == "robot"
    tol = 0.5 / rate_hz
    ended = status.get("state") != "running"        # else it may still run (played grows)
    end = start + (played or 0.0) if ended else start + (planned or 0.0)
    if robot_clock and (start > last_stamp + tol or end < first_stamp - tol):
        return None                     # a run after, or one that ended before, the recording
    out = dict(status, complete=True, why="")
    if status.get("state") == "stopped":
        out.update(complete=False, why=f"the excitation was stopped after "
                   f"{played or 0.0:.3f} of {planned or 0.0:.3f} s "
                   f"({status.get('reason') or status.get('message')})")
    elif robot_clock and first_stamp > start + tol:
        out.update(complete=False, why=f"the recording starts {first_stamp - start:.3f} s "
                   f"after the excitation's first reference")
    elif robot_clock and planned is not None and last_stamp < start + planned - tol:
        out.update(complete=False, why=f"the recording ends {start + planned - last_stamp:.3f}"
                   f" s before the end of the excitation ({last_stamp - start:.3f} of "
                   f"{planned:.3f} s recorded): stopped while it ran")
    return out


class QueuedBagWriter:
    """A :class:`~robot_identification.data._bag.BagWriter` fed through an unbounded queue by a
    writer thread: :meth:`write` only enqueues, so a slow or stalled disk never blocks the
    subscription callback. The pending chunk is flushed every ``flush_period`` s also while no
    message comes. A write error (e.g. disk full) is kept in :attr:`error` (the messages after
    it are counted in :attr:`unwritten`) and reported by :meth:`close`.

    Parameters
    ----------
    writer : BagWriter
    on_error : callable, optional
        Called once with the error text (from the writer thread).
    """

    _END = object()

    def __init__(self, writer, on_error=None):
        self.writer = writer
        self.path = writer.path
        self.error = None
        self.unwritten = 0
        self._on_error = on_error
        self._queue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="bag writer", daemon=True)
        self._thread.start()

    @property
    def counts(self) -> dict:
        return self.writer.counts

    def write(self, topic: str, data: bytes, t_ns: int):
        """Enqueue one serialized message with log time ``t_ns`` [ns] (never blocks)."""
        self._queue.put((topic, data, t_ns))

    def _handle(self, item):
        """The entries to write for one queued item (here: the item itself)."""
        return [item]

    def _write(self, entry):
        self.writer.write(*entry)

    _in_hand = 0        # messages the writer thread took from the queue and has not written

    def backlog(self) -> int:
        """Messages waiting for the writer thread."""
        return self._queue.qsize() + self._in_hand

    def _run(self):
        while True:
            try:
                item = self._queue.get(timeout=self.writer.flush_period)
            except queue.Empty:
                item = None
            if item is self._END:
                return
            if self.error is not None:
                self.unwritten += item is not None
                continue
            try:
                if item is None:
                    self.writer.flush()
                else:
                    entries = self._handle(item)
                    self._in_hand = len(entries)
                    for entry in entries:
                        self._write(entry)
                        self._in_hand -= 1
            except Exception as exc:  # noqa: BLE001 - any storage failure: reported, not raised
                self.error = f"cannot write bag '{self.path}': {exc}"
                self.unwritten += item is not None
                if self._on_error is not None:
                    self._on_error(self.error)

    def close(self, before_close=None):
        """Write the queued messages, then (after ``before_close()``, e.g. setting the
        metadata from counts the writer thread kept) the MCAP summary and metadata.yaml.

        Raises
        ------
        DataError
            A write failed (the bag holds the messages before the failure).
        """
        self._queue.put(self._END)
        self._thread.join()
        if before_close is not None:
            before_close()
        if self.error is None:
            try:
                self.writer.close()
            except Exception as exc:  # noqa: BLE001
                self.error = f"cannot close bag '{self.path}': {exc}"
        if self.error is not None:
            raise DataError(f"{self.error} ({self.unwritten} message(s) not written)")


class StampWindow:
    """Which recorded messages belong to a run: those stamped within [lower, upper] (the
    excitation's first and last reference, on the states' clock), whatever their arrival
    time - a starved recorder's backlog from before the run, or states after its end, are
    left out.

    Messages are offered in arrival order as ``(stamp, is_state, item)``: ``stamp`` [s] the
    header stamp (``None`` for a message without one, e.g. an unlabelled effort command:
    kept while the window is open, i.e. after the first kept state and before the first
    state past ``upper``). Until ``lower`` is known the messages wait; inside the window
    they are released once a state stamped ``holdback`` s later has arrived, so that an
    ``upper`` bound that becomes known later (the run's end status arrives after the states
    of its last period) still applies to them.

    The run's own reference messages (offered with ``reference=True``) bound the window
    where its status did not (:meth:`finish`): the recorder never heard the excitation
    publisher's status (DDS discovery of its ``/diagnostics`` writer late, or the status lost
    in a starved recorder), but the references carry the run's stamps - its first and last
    reference (:attr:`first_reference`, :attr:`last_reference`).

    Parameters
    ----------
    tolerance : float
        [s] half a sample period: a stamp within it of a bound is inside.
    holdback : float
        [s] of state stamps a kept message waits before it is released.
    """

    def __init__(self, tolerance, holdback=0.0):
        self.tolerance, self.holdback = float(tolerance), float(holdback)
        self.lower = self.upper = None
        self.pending = []           # (stamp, is_state, item) before lower is known
        self.held = collections.deque()     # kept, not yet released
        self.newest = -math.inf     # [s] newest state stamp seen
        self.opened = self.closed = False
        self.dropped_before = self.dropped_after = 0   # state messages left out
        self.first_reference = self.last_reference = None   # [s] stamps of the references
        self.oldest = math.inf      # [s] oldest state stamp seen
        self.bounded_by = ""        # what set the bounds: 'run' | 'references' | 'start'

    def offer(self, stamp, is_state, item, reference=False):
        """The items to write now (a list); ``reference``: a reference message of the run
        (its stamp counts towards :attr:`first_reference` / :attr:`last_reference`)."""
        if is_state and stamp is not None:
            self.newest = max(self.newest, stamp)
            self.oldest = min(self.oldest, stamp)
        if reference and stamp is not None:
            self.first_reference = stamp if self.first_reference is None else min(
                self.first_reference, stamp)
            self.last_reference = stamp if self.last_reference is None else max(
                self.last_reference, stamp)
        if self.lower is None:
            self.pending.append((stamp, is_state, item))
            return []
        if self._keep(stamp, is_state):
            self.held.append((stamp, item))
        return self._release()

    def _keep(self, stamp, is_state):
        if stamp is None:
            return self.opened and not self.closed
        if stamp < self.lower - self.tolerance:
            self.dropped_before += is_state
            return False
        if self.upper is not None and stamp > self.upper + self.tolerance:
            self.closed |= is_state
            self.dropped_after += is_state
            return False
        self.opened |= is_state
        return True

    def _release(self, everything=False):
        out = []
        everything |= self.upper is not None       # bounded both ways: nothing to wait for
        while self.held and (everything or self.held[0][0] is None
                             or self.held[0][0] <= self.newest - self.holdback):
            out.append(self.held.popleft()[1])
        return out

    def open(self, lower, by="run"):
        """Set the lower bound [s] (``by``: what gives it, :attr:`bounded_by`); returns the
        waiting items to write now."""
        self.lower = float(lower)
        self.bounded_by = self.bounded_by or by
        waiting, self.pending = self.pending, []
        for stamp, is_state, item in waiting:
            if self._keep(stamp, is_state):
                self.held.append((stamp, item))
        return self._release()

    def close(self, upper):
        """Set the upper bound [s]: held messages past it are left out, and so are later
        ones; returns the items to write now."""
        self.upper = float(upper)
        held, self.held = list(self.held), collections.deque()
        for stamp, item in held:
            if stamp is None:
                if not self.closed:
                    self.held.append((stamp, item))
            elif stamp > self.upper + self.tolerance:
                self.closed = True
                self.dropped_after += 1
            else:
                self.held.append((stamp, item))
        return self._release()

    def references_bound(self) -> bool:
        """Whether the references seen can bound the window: some were offered and their
        stamps lie within those of the states (the run on the states' clock: a reference
        clock that is not the robot's - ``reference_clock: node`` on another clock - would
        cut the states anywhere)."""
        tol = self.tolerance
        return (self.first_reference is not None and self.oldest - tol <= self.first_reference
                and self.last_reference <= self.newest + tol)

    def finish(self, lower=-math.inf):
        """The recording ends: returns every item still to write. A window no run's status
        opened is bounded by the references' first and last stamps where they can bound it
        (:meth:`references_bound`), else opened at ``lower``; a window the status opened but
        did not close (the end status never reached the recorder) is closed at the last
        reference (what is still held: :attr:`holdback` s of stamps)."""
        out = []
        if self.lower is None and self.references_bound():
            self.upper = float(self.last_reference)     # (before open releases anything)
            out += self.open(self.first_reference, "references")
        elif self.lower is None:
            out += self.open(lower, "start")
        elif self.upper is None and self.references_bound() and \
                self.last_reference >= self.lower - self.tolerance:
            out += self.close(self.last_reference)
        return out + self._release(everything=True)


class WindowedBagWriter(QueuedBagWriter):
    """A :class:`QueuedBagWriter` whose writer thread keeps only the messages of a
    :class:`StampWindow`: the subscription callback enqueues every message (``write(...,
    stamp=, is_state=, info=)``) and the window's bounds (:meth:`bound`) in arrival order;
    the thread applies them and calls ``on_written(topic, data, t_ns, stamp, info)`` for
    each message it writes (the recorder's counts). ``close(lower)``: a recording in which
    no run bounded the window keeps the messages stamped from ``lower`` [s] on."""

    def __init__(self, writer, window, on_written, on_error=None):
        self.window, self.on_written = window, on_written
        super().__init__(writer, on_error)

    def write(self, topic, data, t_ns, stamp=None, is_state=False, info=None, reference=False):
        self._queue.put(("msg", (topic, data, t_ns, stamp, info), stamp,
                         (is_state, reference)))

    def backlog(self) -> int:
        """Messages waiting: queued, or held by the window."""
        return super().backlog() + len(self.window.pending) + len(self.window.held)

    def bound(self, lower=None, upper=None, no_end=False):
        """Open the window at ``lower`` / close it at ``upper`` [s] (header stamps);
        ``no_end``: no upper bound will come (nothing to hold back)."""
        self._queue.put(("bound", lower, upper, no_end))

    def _handle(self, item):
        kind, a, b, c = item
        if kind == "msg":
            return self.window.offer(b, c[0], a, reference=c[1])
        if kind == "end":
            return self.window.finish(a)
        out = []
        if c:
            self.window.holdback = 0.0
        if a is not None and self.window.lower is None:
            out += self.window.open(a, "start" if c else "run")
        if b is not None and self.window.lower is not None and self.window.upper is None:
            out += self.window.close(b)
        return out

    def _write(self, entry):
        topic, data, t_ns, stamp, info = entry
        self.writer.write(topic, data, t_ns)
        self.on_written(topic, data, t_ns, stamp, info)

    def close(self, lower=-math.inf, before_close=None):
        self._queue.put(("end", lower, None, None))
        super().close(before_close)
