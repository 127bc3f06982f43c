"""Simulation: a starved controller's command held open loop after a brake (docs/ros.md, "The
runaways under load: cause and fix"), without ROS.

puma560 at 250 Hz (:class:`~robot_identification.nodes._hardware.HardwareArm`: the last
command applied until its deadline, then brakes), the hardware-robot study's excitation as the
reference, the PD + gravity law with gains scaled by ``s``, the command answering the state of
one period before. The controller is starved for ``gap`` s at 7 points of the run while the
reference runs on (its command's deadline passes: the brakes hold the arm), computes one
command, and is starved again for 0.12 s: that command is applied alone, open loop, until its
deadline. ``old``: the 0.1 s deadline and the plain law; ``new``: the deadline shortened to the
time the command takes to bring a joint to its velocity limit (one period less) and the law's
velocity clipped to 0.9 x the limit (``nodes/_control_loop.py``). Prints, per gain scale, the
largest |dq| / velocity limit over 14 cases (2 gaps x 7 points) and how many exceed 1.

``--feedforward``: the ``new`` controller without and with the feed-forward of the nominal
inverse dynamics of the reference (``ControlLoop.with_feedforward``, docs/ros.md "Feed-forward"):
the same 14 starved cases per gain scale, and, without starving, the RMS tracking error
[rad] over the joints and the smallest ratio of the arm's to the reference's velocity range
over the joints, with the command applied ``--delay`` periods after the state it answers, at
the gain scale the controller's delay margin picks for that delay, 1.5 x that, and
``--scales``.

Usage: ``PYTHONPATH=$PWD OPENBLAS_NUM_THREADS=1 python benchmarks/open_loop_hold_sim.py
[--feedforward] [--delay 1]``
"""
from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

RATE, DELAY, DEADLINE, SECOND_GAP = 250.0, 1, 0.1, 0.12


def feedforward(model, law):
    """The pd_controller's feed-forward (``ControlLoop.with_feedforward``) outside a node."""
    from robot_identification.nodes._control_loop import ControlLoop, rotor_inertia
    loop = ControlLoop()
    loop.model, loop.law, loop.lockstep = model, law, False
    loop._pin_data, loop.rotor = model.pin_model.createData(), rotor_inertia(model)
    loop._friction, loop.feedforward_commands = None, 0
    loop.v_max = np.array([j.limits.velocity for j in model.config.joints])
    return loop.with_feedforward


def run(model, traj, s, t1, gap, new, ff=False, delay=DELAY, track=None):
    """Largest |dq| / limit of one case (module docstring); ``track``: a list that gets
    (q - q_ref, dq, dq_ref) of every period."""
    from robot_identification.nodes._control_loop import (limit_velocity, mass_matrix,
                                                          time_to_limit)
    from robot_identification.nodes._hardware import HardwareArm, make_physics
    from robot_identification.simulation import make_controller
    dt = 1.0 / RATE
    base = make_controller(model)
    law = make_controller(model, base.kp * s * s, base.kd * s)
    v_max = np.array([j.limits.velocity for j in model.config.joints])
    arm = HardwareArm(make_physics(model, RATE), traj.evaluate(0.0)[0][0])
    arm.start(0.0)
    data = model.pin_model.createData()
    add_ff = feedforward(model, law) if ff else None
    pending, state, worst = {}, arm.measure(0.0), 0.0
    second = t1 + gap + dt

    def awake(t):
        return not (t1 <= t < t1 + gap or second <= t < second + SECOND_GAP)
    for k in range(int(4.0 / dt)):
        t = k * dt
        if awake(t):
            q_ref, dq_ref, ddq_ref = (x[0] for x in traj.evaluate(t))
            q, dq = state["q"], state["dq"]
            if track is not None:
                track.append((q - q_ref, dq, dq_ref))
            ref_velocity = dq_ref
            if new:
                dq_ref = limit_velocity(law.kp, law.kd, law.position_error(q_ref, q), dq_ref,
                                        0.9 * v_max)
            u = law(q_ref, dq_ref, {"q": q, "dq": dq})
            if add_ff is not None:
                u = add_ff(u, q_ref, ref_velocity, ddq_ref, dq)
            held = DEADLINE
            if new:
                a = np.linalg.solve(mass_matrix(model, q, data), u - law.gravity(q))
                held = min(held, max(float(np.min(time_to_limit(dq, a, v_max))) - dt, 0.0))
            pending[k + delay] = (u, t + held)
        if k in pending:
            u, deadline = pending.pop(k)
            arm.command(u, t, deadline=deadline)
        state = arm.advance(t + dt)[-1]
        worst = max(worst, float(np.max(np.abs(state["dq"]) / v_max)))
    return worst


def main(argv=None):
    import argparse

    import hardware_robot_study as study
    from robot_identification.excitation import trajectory_from_config
    from robot_identification.model import load_robot
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--feedforward", action="store_true")
    p.add_argument("--delay", type=int, default=DELAY, help="[periods] command delay")
    p.add_argument("--scales", type=float, nargs="*", default=[],
                   help="--feedforward: gain scales besides the delay margin's")
    args = p.parse_args(argv)
    model = load_robot("puma560")
    traj = trajectory_from_config(model, study.EXCITATION)
    cases = list(itertools.product((0.15, 0.3), (0.6, 1.0, 1.4, 1.8, 2.3, 2.7, 3.1)))
    if args.feedforward:
        from robot_identification.nodes._control_loop import effective_inertia, margin_scale
        from robot_identification.simulation import make_controller
        base = make_controller(model)
        viscous = np.array([j.drive.get("viscous", 0.0) for j in model.config.joints])
        # the gain scale the controller's delay margin (factor 2) picks for the loop delay
        # (the command applied args.delay periods after its state, held one period), and
        # 1.5 x that (a longer delay than the margin has measured yet)
        margin = margin_scale(base.kp, base.kd, effective_inertia(model), viscous,
                              (args.delay + 1) / RATE, 2.0)
        for s in sorted({round(min(1.0, margin * f), 3) for f in (1.0, 1.5)}
                        | set(args.scales)):
            for ff in (False, True):
                track = []
                calm = run(model, traj, s, np.inf, 0.0, True, ff, args.delay, track)
                e, dq, dq_ref = (np.array(x) for x in zip(*track))
                ratio = np.min(np.ptp(dq, axis=0) / np.ptp(dq_ref, axis=0))
                w = [run(model, traj, s, t1, gap, True, ff, args.delay) for gap, t1 in cases]
                print(f"gain scale {s} (margin {margin:.3f}), delay {args.delay} periods, "
                      f"feed-forward "
                      f"{'on' if ff else 'off'}: tracking RMS {np.sqrt(np.mean(e ** 2)):.4f} "
                      f"rad, velocity range ratio {ratio:.3f}, largest |dq|/limit "
                      f"{calm:.3f}; starved: largest |dq|/limit {max(w):.3f}, above 1 in "
                      f"{sum(x > 1 for x in w)} of {len(w)}", flush=True)
        return
    for s in (1.0, 0.8, 0.5, 0.318, 0.15):
        for new in (False, True):
            w = [run(model, traj, s, t1, gap, new) for gap, t1 in cases]
            print(f"gain scale {s}, {'new' if new else 'old'}: largest |dq|/limit "
                  f"{max(w):.3f}, above 1 in {sum(x > 1 for x in w)} of {len(w)}", flush=True)


if __name__ == "__main__":
    main()
