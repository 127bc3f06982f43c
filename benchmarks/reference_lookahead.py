"""The reference's look-ahead (docs/ros.md, "The reference's look-ahead"): zollo_planar at
1 kHz, simulated robot, pd_controller and excitation_publisher wired by hand as in
test/test_ros_overload.py (``starved_publisher``: every callback driven by this script, the
references through a CDR round trip), the publisher starved ``--starved`` s of robot time from
``--t0`` s. One line per (t0, starved, lookahead): the controller's fault (or none), the peak
link speed [rad/s] (velocity limit 3.0, trip 4.5), the commands on the look-ahead and held,
the publisher's pauses and lag; and the CPU time [us] per reference of the publisher's tick
(build, CDR round trip, the controller's parse), against lookahead 0 in the same process.

    PYTHONPATH=$PWD python benchmarks/reference_lookahead.py --t0 1 2 --starved 0.124 0.6 1 2.5

No wall-clock time in the results but the CPU per reference (process time, same process).
"""
import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "test")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t0", type=float, nargs="+", default=[1.0, 2.0])
    ap.add_argument("--starved", type=float, nargs="+", default=[0.124, 0.6, 1.0, 2.5])
    ap.add_argument("--lookahead", type=float, nargs="+", default=[1.0, 0.0])
    ap.add_argument("--domain", type=int, default=197)
    args = ap.parse_args()
    import rclpy
    from robot_identification.nodes.excitation_publisher import ExcitationPublisher
    from test_ros_overload import starved_publisher
    tick, cost = ExcitationPublisher.tick, {}

    def timed(self, t):
        c = time.process_time()
        tick(self, t)
        cost.setdefault(self.lookahead, []).append(time.process_time() - c)
    ExcitationPublisher.tick = timed
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=args.domain)
    try:
        for t0 in args.t0:
            for starved in args.starved:
                for la in args.lookahead:
                    out = starved_publisher(ctx, t0, starved, int((t0 + starved + 1.2) * 1000),
                                            lookahead=la)
                    c, e = out["ctrl"], out["exc"]
                    print(f"t0 {t0:g} s, starved {starved:g} s, lookahead {la:g} s: fault "
                          f"{'none' if c.fault is None else c.fault[:60]}, peak "
                          f"{out['peak']:.2f} rad/s, lookahead_commands {c.lookahead_commands}"
                          f", stale_reference_commands {c.stale_reference_commands}, pauses "
                          f"{e.reference_pauses}, lag {e.reference_lag:.3f} s, points "
                          f"{len(out['refs'][len(out['refs']) // 2].points)}", flush=True)
    finally:
        rclpy.shutdown(context=ctx)
    for la, xs in cost.items():
        xs = sorted(xs)
        print(f"lookahead {la:g} s: CPU per reference {1e6 * xs[len(xs) // 2]:.0f} us (median "
              f"of {len(xs)}; publisher tick + CDR round trip + controller parse)")


if __name__ == "__main__":
    main()
