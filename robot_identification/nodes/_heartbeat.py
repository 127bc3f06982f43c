"""ROS-free heartbeat bookkeeping: which peers of a node went silent.

Every node of the graph publishes its status on ``/diagnostics`` at a steady period (its
heartbeat); the robot's heartbeat is its joint states. A :class:`HeartbeatMonitor` records
when each watched peer was last heard of and names those silent for longer than the timeout.
A peer never heard of is not missed (it may not be part of this graph), one heard of and
then silent has disappeared: the excitation publisher and the recorder stop their run then
and say so with an ERROR on ``/diagnostics`` (docs/ros.md, "Heartbeats").

Silence is timed by arrival at the watcher, and for beats that carry a stamp (a status's
header stamp, the publisher's clock) also by that stamp against the watcher's reception
frontier, the newest stamp it has heard of from the other nodes: a watcher whose reception
is behind (starved, its DDS delivery late) has heard of nothing much newer than the peer's
latest beat, so it does not blame a live peer - up to ``bound`` s of arrival silence. The
frontier comes from the subscription that carries the beats (``/diagnostics``), not from
faster topics (the joint states): a backlog on that subscription delays the peer's beats and
the frontier alike.
"""
from __future__ import annotations

import math


class HeartbeatMonitor:
    """Last-heard times of named peers on one clock, and their beats' stamps.

    A peer is silent at ``now`` when it was last heard of more than ``timeout`` s before
    and either (a) its beats carry no stamp, (b) the newest stamp heard of (:meth:`heard`,
    any source) is more than ``timeout`` s past its latest beat's stamp (the graph went on
    without it), (c) it was last heard of more than ``bound`` s before (nothing newer heard:
    the watcher's reception stalled, or the peer was the only other source), or (d)
    ``arrival_only`` is set (a verdict of a stuck executor's watchdog thread, which takes no
    messages). So it is never called silent earlier than by arrival alone, and at most
    ``bound`` s of arrival silence later.

    Parameters
    ----------
    timeout : float
        [s] silence after which a peer that was heard of counts as lost (0: never).
    bound : float, optional
        [s] arrival silence after which a peer is lost whatever the stamps say (default
        ``2 * timeout``; at least ``timeout``).
    """

    def __init__(self, timeout, bound=None):
        self.timeout = float(timeout)
        self.bound = max(self.timeout, 2.0 * self.timeout if bound is None else float(bound))
        self.last = {}              # peer -> time [s] last heard of
        self.stamps = {}            # peer -> stamp [s, its publisher's clock] of its latest beat
        self.frontier = -math.inf   # [s] newest stamp heard of (any source but the watcher)
        self.reported = set()       # peers already reported lost (until heard again)
        self.arrival_only = False   # judge by arrival alone (d)

    def heard(self, stamp):
        """A message stamped ``stamp`` [s] (None or <= 0: unstamped) was received."""
        if stamp is not None and stamp > 0:
            self.frontier = max(self.frontier, stamp)

    def beat(self, peer, now, stamp=None):
        """``peer`` was heard of at ``now`` [s], by a beat stamped ``stamp`` [s] (None or
        <= 0: unstamped; its previous stamp is kept)."""
        self.last[peer] = now
        self.reported.discard(peer)
        if stamp is not None and stamp > 0:
            self.stamps[peer] = stamp
            self.heard(stamp)

    def forget(self, peer):
        self.last.pop(peer, None)
        self.stamps.pop(peer, None)
        self.reported.discard(peer)

    def lag(self, peer):
        """[s] how far the newest stamp heard of is past ``peer``'s latest beat's stamp
        (None: unstamped)."""
        return self.frontier - self.stamps[peer] if peer in self.stamps else None

    def excused(self, peer, now) -> bool:
        """Whether ``peer``, silent by arrival, is not lost yet: its latest stamp is within
        ``timeout`` of the newest stamp heard of (the watcher may be behind, not the peer)
        and it was heard of within ``bound`` s of ``now``."""
        lag = self.lag(peer)
        return (not self.arrival_only and lag is not None and lag <= self.timeout
                and now - self.last[peer] <= self.bound)

    def silent(self, now, peers=None):
        """[(peer, seconds silent by arrival)] of the peers (default: all heard of) silent at
        ``now`` [s] (the class docstring), oldest first."""
        if self.timeout <= 0:
            return []
        names = self.last if peers is None else [p for p in peers if p in self.last]
        out = [(p, now - self.last[p]) for p in names
               if now - self.last[p] > self.timeout and not self.excused(p, now)]
        return sorted(out, key=lambda x: -x[1])

    def pending(self, now):
        """Peers silent by arrival but :meth:`excused`, not reported yet."""
        return [p for p, t in self.last.items() if now - t > self.timeout
                and p not in self.reported and self.excused(p, now)]

    def newly_lost(self, now, peers=None):
        """Like :meth:`silent`, each lost peer reported once (until it is heard again)."""
        out = [(p, age) for p, age in self.silent(now, peers) if p not in self.reported]
        self.reported.update(p for p, _ in out)
        return out
