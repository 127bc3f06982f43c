"""CPU per control period of pd_controller's loop on an elastic arm with ``feedforward: true``:
the feed-forward from the table made ahead along the look-ahead (``FeedforwardTable``) against
the on-line computation every period (``feedforward_table`` off, the former path) and the
regulator alone (``feedforward`` off), in the same process, paired rounds.

The loop is ``ControlLoop`` without DDS (as test/test_control_loop_elastic_feedforward.py):
each period the excitation publisher's reference (its look-ahead: the current point, points
every 0.2 s to 1 s ahead, the stop; stamped ``--lag`` periods before the state), then the
link and motor states (stamps on an epoch clock, 0-0.3 periods of jitter), then the command:
CPU time (``time.process_time``) of those three calls per period (the references and states
made before). The hardware-robot study's
4 s Fourier excitation; the robot config's gains (zollo_planar: the test's [2000, 30], [70,
7]). Also the command's distance from the core loop's on the analytic excitation
(``sampled_feedforward``) per mode: median and largest [N*m], and the feed-forward's part.

    PYTHONPATH=$PWD OPENBLAS_NUM_THREADS=1 python benchmarks/elastic_feedforward_cpu.py \\
        --robot zollo_planar puma560_elastic --rates 250 1000 --rounds 5
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "test")]


def make(model, rate, mode):
    import test_control_loop_elastic_feedforward as t
    t.RATE = rate
    loop = t.make_loop(model, mode != "off",
                       t.make_loop.__defaults__[1] if model.config.name == "zollo_planar"
                       else None)
    loop.feedforward_table = mode == "table"
    return loop


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robot", nargs="+", default=["zollo_planar", "puma560_elastic"])
    ap.add_argument("--rates", type=float, nargs="+", default=[250.0, 1000.0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=2.0, help="run time per mode and round")
    ap.add_argument("--lag", type=float, default=1.0,
                    help="[periods] the reference's stamp before the state's")
    args = ap.parse_args()
    import test_control_loop_elastic_feedforward as t
    from robot_identification.excitation import trajectory_from_config
    from robot_identification.model import load_robot
    modes = ("off", "online", "table")
    for name in args.robot:
        model = load_robot(name)
        traj = trajectory_from_config(model, t.EXCITATION)
        for rate in args.rates:
            cpu = {m: [] for m in modes}
            for r in range(args.rounds):
                order = modes[r % 3:] + modes[:r % 3]
                run = t.publisher_run(traj, rate, args.seconds, args.lag, seed=r)
                for mode in order:
                    loop = make(model, rate, mode)
                    c = time.process_time()
                    t.feed([loop], run)
                    cpu[mode].append((time.process_time() - c) / len(run))
            ratio = [a / b for a, b in zip(cpu["table"], cpu["online"])]
            ratio_off = [a / b for a, b in zip(cpu["table"], cpu["off"])]
            line = ", ".join(f"{m} {1e6 * np.median(cpu[m]):.0f} us" for m in modes)
            print(f"{name} {rate:g} Hz, lag {args.lag:g}: CPU per period (median of "
                  f"{args.rounds} rounds) {line}; table / online {np.median(ratio):.3f} "
                  f"(rounds {min(ratio):.3f}-{max(ratio):.3f}), table / off "
                  f"{np.median(ratio_off):.3f}", flush=True)
            # accuracy against the core loop's command on the analytic excitation
            loops = {m: make(model, rate, m) for m in modes}
            times, states = t.run_with_publisher(list(loops.values()), traj, rate, 2.0,
                                                 args.lag)
            law = loops["online"].law
            part, err = [], {m: [] for m in ("online", "table")}
            for k, (tt, meas) in enumerate(zip(times, states)):
                core = t.core_command(law, traj, tt, meas)
                part.append(np.max(np.abs(core - loops["off"].sent[k])))
                for m in err:
                    err[m].append(np.max(np.abs(loops[m].sent[k] - core)))
            print("  |command - core| [N*m]: " + ", ".join(
                f"{m} median {np.median(e):.3g} max {np.max(e):.3g}" for m, e in err.items())
                + f"; feed-forward's part median {np.median(part):.3g}", flush=True)


if __name__ == "__main__":
    main()
