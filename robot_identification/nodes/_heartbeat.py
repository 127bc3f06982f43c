"""ROS-free heartbeat bookkeeping: which peers of a node went silent.

Every node of the graph publishes its status on ``/diagnostics`` at a steady period (its
heartbeat); the robot's heartbeat is its joint states. A :class:`HeartbeatMonitor` records
when each watched peer was last heard of and names those silent for longer than the timeout.
A peer never heard of is not missed (it may not be part of this graph), one heard of and
then silent has disappeared: the excitation publisher and the recorder stop their run then
and say so with an ERROR on ``/diagnostics`` (docs/ros.md, "Heartbeats").
"""
from __future__ import annotations


class HeartbeatMonitor:
    """Last-heard times of named peers on one clock.

    Parameters
    ----------
    timeout : float
        [s] silence after which a peer that was heard of counts as lost (0: never).
    """

    def __init__(self, timeout):
        self.timeout = float(timeout)
        self.last = {}              # peer -> time [s] last heard of
        self.reported = set()       # peers already reported lost (until heard again)

    def beat(self, peer, now):
        """``peer`` was heard of at ``now`` [s]."""
        self.last[peer] = now
        self.reported.discard(peer)

    def forget(self, peer):
        self.last.pop(peer, None)
        self.reported.discard(peer)

    def silent(self, now, peers=None):
        """[(peer, seconds silent)] of the peers (default: all heard of) silent for longer
        than the timeout at ``now`` [s], oldest first."""
        if self.timeout <= 0:
            return []
        names = self.last if peers is None else [p for p in peers if p in self.last]
        out = [(p, now - self.last[p]) for p in names if now - self.last[p] > self.timeout]
        return sorted(out, key=lambda x: -x[1])

    def newly_lost(self, now, peers=None):
        """Like :meth:`silent`, each lost peer reported once (until it is heard again)."""
        out = [(p, age) for p, age in self.silent(now, peers) if p not in self.reported]
        self.reported.update(p for p, _ in out)
        return out
