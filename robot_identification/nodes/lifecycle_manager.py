"""lifecycle_manager: brings managed (lifecycle) nodes to ``active`` and keeps saying where
they stand, as nav2's lifecycle manager does for its nodes.

For each of ``node_names`` it asks the node's state (``/<node>/get_state``) and requests the
next transition toward ``active`` (``configure`` from ``unconfigured``, ``activate`` from
``inactive``; ``/<node>/change_state``), then asks again, until the node is active; then every
``check_period`` s it asks once more. A request not answered within ``response_timeout`` s
(steady clock) is dropped and the state asked again, so that a lost answer never leaves a node
half-way: with Fast DDS a service answer sent before the server has matched the client's
answer reader is dropped (ros2/rmw_fastrtps#842, "failed to send response (timeout): client
will not receive response"), which happens when many nodes start at once on a loaded machine.
A transition that succeeded without its answer shows in the state asked next. (launch_ros's
``LifecycleNode`` + ``ChangeState`` events wait for that answer without a bound, from a thread
of the launch process; a launch shut down meanwhile destroyed their client under that thread:
a segmentation fault of the process hosting the launch, seen in a pytest run.)

A node found ``unconfigured`` again later (its process restarted) is brought up again; a node
that was active and is found ``inactive`` was deactivated on purpose (``ros2 lifecycle set``)
and is left so. ``/diagnostics`` entry ``lifecycle_manager: lifecycle`` every
``diagnostics_period`` s (its heartbeat): OK when every node is active, WARN while one is
being brought up, inactive, not answering or gone, ERROR when a node refused a transition
``max_refusals`` times or is finalized; each node's state, unanswered requests and refusals
as values.
"""
from __future__ import annotations

import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from lifecycle_msgs.msg import State, Transition
from lifecycle_msgs.srv import ChangeState, GetState
from rclpy.clock import Clock as RosClock
from rclpy.clock import ClockType
from rclpy.node import Node

from robot_identification.nodes._common import declare, diagnostic_status, main_for

#: next transition toward active, by primary state
NEXT = {State.PRIMARY_STATE_UNCONFIGURED: (Transition.TRANSITION_CONFIGURE, "configure"),
        State.PRIMARY_STATE_INACTIVE: (Transition.TRANSITION_ACTIVATE, "activate")}


class _Managed:
    """Bookkeeping of one managed node."""

    def __init__(self, node, name):
        self.name = name
        self.get = node.create_client(GetState, f"/{name}/get_state")
        self.change = node.create_client(ChangeState, f"/{name}/change_state")
        self.state = "unknown"          # label of the state last answered
        self.pending = None             # (client, future, steady time sent)
        self.asked = -1e9               # steady time of the last get_state answer
        self.was_active = False
        self.unanswered, self.refusals, self.failed = 0, 0, ""


class LifecycleManager(Node):
    def __init__(self, **kwargs):
        super().__init__("lifecycle_manager", **kwargs)
        names = declare(self, "node_names", ["pd_controller", "excitation_publisher",
                                             "recorder"],
                        "managed nodes to bring to active (absolute names without the "
                        "leading /)", read_only=True)
        self.timeout = declare(self, "response_timeout", 5.0, "[s] a request not answered "
                               "this long is dropped and the state asked again", low=0.01,
                               high=1e4, read_only=True)
        self.check_period = declare(self, "check_period", 1.0, "[s] the state of an active "
                                    "node is asked this often", low=0.01, high=1e4,
                                    read_only=True)
        self.max_refusals = declare(self, "max_refusals", 3, "a transition refused this "
                                    "often is an ERROR (no more requests)", low=1, high=1000,
                                    read_only=True)
        self.nodes = [_Managed(self, n.strip("/")) for n in names]
        self.heartbeat = 0
        self.pub_diag = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        steady = RosClock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(0.05, self.tick, clock=steady)
        self.create_timer(declare(self, "diagnostics_period", 1.0, "[s] status (heartbeat) "
                                  "period on /diagnostics", low=0.01, high=60.0),
                          self.publish_status, clock=steady)
        self.get_logger().info(f"bringing up {', '.join(m.name for m in self.nodes)}")

    def tick(self):
        now = time.monotonic()
        for m in self.nodes:
            if m.pending is not None:
                client, future, sent = m.pending
                if not future.done() and now - sent > self.timeout:
                    client.remove_pending_request(future)
                    m.pending, m.unanswered = None, m.unanswered + 1
                    self.get_logger().warning(
                        f"{m.name}: no answer within {self.timeout:g} s (asking its state "
                        f"again)", throttle_duration_sec=5.0)
                continue
            if m.failed:
                continue
            settled = m.state in ("active", "inactive") and m.was_active
            if settled and now - m.asked < self.check_period:
                continue
            if m.get.service_is_ready():
                self.send(m, m.get, GetState.Request(), self.on_state)
            elif m.state not in ("unknown", "not found"):
                self.get_logger().warning(f"{m.name}: its lifecycle services are gone")
                m.state = "not found"

    def send(self, m, client, request, done):
        future = client.call_async(request)
        m.pending = (client, future, time.monotonic())
        future.add_done_callback(lambda f: self.answered(m, f, done))

    def answered(self, m, future, done):
        if m.pending is None or m.pending[1] is not future:
            return                      # dropped after the timeout: its state was asked again
        m.pending = None
        if not future.cancelled() and future.exception() is None:
            done(m, future.result())

    def on_state(self, m, answer):
        m.asked = time.monotonic()
        label = answer.current_state.label or str(answer.current_state.id)
        if label != m.state:
            self.get_logger().info(f"{m.name}: {label}")
        m.state = label
        sid = answer.current_state.id
        if sid == State.PRIMARY_STATE_ACTIVE:
            m.was_active, m.refusals = True, 0
        elif sid == State.PRIMARY_STATE_FINALIZED:
            m.failed = "finalized"
        elif sid == State.PRIMARY_STATE_UNCONFIGURED or (sid == State.PRIMARY_STATE_INACTIVE
                                                         and not m.was_active):
            m.was_active = False        # a restarted process: bring it up again
            tid, what = NEXT[sid]
            self.send(m, m.change, ChangeState.Request(transition=Transition(id=tid)),
                      lambda mm, a: self.on_change(mm, a, what))

    def on_change(self, m, answer, what):
        if answer.success:
            return                      # the state is asked again at the next tick
        m.refusals += 1
        self.get_logger().warning(f"{m.name}: {what} refused ({m.refusals})")
        if m.refusals >= self.max_refusals:
            m.failed = f"{what} refused {m.refusals} times"
            self.get_logger().error(f"{m.name}: {m.failed}")

    def publish_status(self):
        self.heartbeat += 1
        failed = [f"{m.name} {m.failed}" for m in self.nodes if m.failed]
        waiting = [f"{m.name} {m.state}" for m in self.nodes
                   if not m.failed and m.state != "active"]
        if failed:
            level, message = DiagnosticStatus.ERROR, "; ".join(failed + waiting)
        elif waiting:
            level, message = DiagnosticStatus.WARN, "not active: " + ", ".join(waiting)
        else:
            level, message = DiagnosticStatus.OK, "all active"
        values = {"heartbeat": self.heartbeat}
        for m in self.nodes:
            values[m.name] = m.state
            values[f"{m.name}.unanswered"] = m.unanswered
            values[f"{m.name}.refusals"] = m.refusals
        self.pub_diag.publish(diagnostic_status(self, "lifecycle", level, message, values))


def main(args=None):
    main_for(LifecycleManager, args)


if __name__ == "__main__":
    main()
