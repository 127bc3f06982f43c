"""Rollout validation: replay a recording through identified models in MuJoCo.

One-step torque prediction (:func:`~robot_identification.validation.validate`) checks the
model's equations on measured states; a *rollout* checks what a simulator built from the
model does over time, as ``mujoco.sysid`` and Isaac Sim's system identification compare
trajectories. The recording is cut into windows of a few seconds; each window starts the
MuJoCo model (:class:`~robot_identification.simulation.MujocoSimulator` with the model's
standard parameters) in the measured state and

- **open loop**: replays the recorded torques (linearly interpolated between samples, held
  over each 1 ms control step), or
- **closed loop** (when the recording's metadata holds the reference trajectory, the PD
  gains and the controller, as ``simulate`` and the demo write): runs the recording's PD
  controller against the reference (elastic runs of ``simulate``, metadata ``feedforward``:
  with the reference's feedforward over the run's control period,
  ``ElasticPDController.feedforward``),

and the simulated link positions and velocities are compared with the measured ones at the
recording's sample times. Errors per joint: RMS over all windows' samples [rad, rad/s], and
the largest position error. Velocities come from the recording (``dq``) or, without them,
central differences of the positions.
"""
from __future__ import annotations

import numpy as np

from robot_identification.errors import DataError
from robot_identification.excitation import trajectory_from_dict
from robot_identification.simulation import make_controller, make_simulator

#: Default window length [s]: closed loop (the controller keeps the model near the
#: recording) and open loop (errors of an open-loop arm grow exponentially: ur10e, simulated
#: on MuJoCo, replayed through its own true model from the measured states: mean RMS
#: position error 4e-4 rad over 0.5 s windows, 1.4e-3 over 1 s, 0.11 over 2 s).
WINDOW = {"closed loop": 2.0, "open loop": 0.5}
#: Internal control rate of a rollout [Hz] (torques interpolated onto this grid).
ROLLOUT_RATE = 1000.0


def closed_loop_available(dataset) -> bool:
    """The recording's metadata has a reference trajectory, PD gains and a PD controller."""
    meta = dataset.metadata or {}
    return bool(meta.get("trajectory") and len(meta.get("kp") or []) and
                len(meta.get("kd") or []) and "PD" in str(meta.get("controller", "")))


def _velocities(dataset, key="dq", pos="q"):
    v = getattr(dataset, key)
    if v is not None:
        return np.asarray(v, float)
    return np.gradient(np.asarray(getattr(dataset, pos), float), dataset.t, axis=0)


def rollout(model, standard, dataset, *, window=None, closed_loop=False, coupling=None,
            keep_signals=False):
    """Roll a model out over the windows of one recording.

    Parameters
    ----------
    model : RobotModel
    standard : array_like (P,)
        Standard parameters of the model to roll out (identified or nominal).
    dataset : Dataset
        Recording: t (N,), q (N, n) [rad], tau (N, n) [N*m] (motor torques for elastic arms,
        then also theta), optionally dq.
    window : float, optional
        Window length [s]; default :data:`WINDOW` of the mode.
    closed_loop : bool
        Replay the recording's PD controller against its reference (needs
        :func:`closed_loop_available`).
    coupling : {None, 'complete', 'reduced'}
    keep_signals : bool
        Also return t, measured and simulated q of every window (for overlays).

    Returns
    -------
    dict
        ``joints``: [{name, q_rms, dq_rms, q_max}] [rad, rad/s]; ``q_rms_mean``,
        ``dq_rms_mean``; ``windows``; ``diverged`` (windows whose simulation diverged,
        counted with the last finite state held); ``mode``; with ``keep_signals``
        ``signals``: list of (t (m,), q_meas (m, n), q_sim (m, n)).

    Raises
    ------
    DataError
        Fewer than 2 samples in every window, no closed-loop metadata when asked for.
    """
    t = np.asarray(dataset.t, float)
    q = np.asarray(dataset.q, float)
    tau = np.asarray(dataset.tau, float)
    dq = _velocities(dataset)
    elastic = model.config.elastic
    if elastic:
        if dataset.theta is None:
            raise DataError("rollout of an elastic arm needs the motor positions (theta)")
        theta = np.asarray(dataset.theta, float)
        dtheta = _velocities(dataset, "dtheta", "theta")
    if closed_loop:
        if not closed_loop_available(dataset):
            raise DataError("closed-loop rollout needs the recording's reference trajectory, "
                            "PD gains and controller in its metadata (simulate and the demo "
                            "write them); use the open-loop rollout")
        meta = dataset.metadata
        traj = trajectory_from_dict(meta["trajectory"])
        ctrl = make_controller(model, np.asarray(meta["kp"], float),
                               np.asarray(meta["kd"], float))
        # elastic runs of simulate: the reference's feedforward over the run's control period
        ff_dt = 1.0 / float(meta.get("rate_hz") or ROLLOUT_RATE)
        feedforward = elastic and bool(meta.get("feedforward"))
    window = float(window or WINDOW["closed loop" if closed_loop else "open loop"])
    sim = make_simulator(model, "mujoco", rate_hz=ROLLOUT_RATE, quantise=False,
                         standard=standard, coupling=coupling)
    n = model.n
    starts = np.arange(t[0], t[-1] - 0.5 * window + 1e-12, window)
    err_q, err_dq, signals = [], [], []
    diverged = 0
    for t0 in starts:
        sel = np.flatnonzero((t >= t0) & (t < t0 + window))
        if len(sel) < 2:
            continue
        i0 = sel[0]
        sim.reset(q[i0], dq[i0], theta0=theta[i0] if elastic else None, t0=t[i0])
        if elastic:
            sim.mj_data.qvel[sim.arm.rotor_dof] = sim.arm.gear * dtheta[i0]
        steps = int(np.ceil((t[sel[-1]] - t[i0]) * ROLLOUT_RATE - 1e-9))
        grid = t[i0] + np.arange(steps + 1) / ROLLOUT_RATE
        q_sim = np.empty((steps + 1, n))
        dq_sim = np.empty((steps + 1, n))
        u_rec = np.column_stack([np.interp(grid, t, tau[:, k]) for k in range(n)])
        state = sim.state
        ok = True
        for s in range(steps + 1):
            q_sim[s], dq_sim[s] = state.q, state.dq
            if s == steps:
                break
            if closed_loop and feedforward:
                at = np.maximum(grid[s] + ff_dt * np.array([-1.0, 0.0, 1.0]), 0.0)
                qd, dqd, ddqd = traj.evaluate(at)
                u = ctrl(qd[1], dqd[1], sim.measure(),
                         ctrl.feedforward_at(list(zip(qd, dqd, ddqd)), ff_dt))
            elif closed_loop:
                qd, dqd, _ = traj.evaluate(np.array([grid[s]]))
                u = ctrl(qd[0], dqd[0], sim.measure())
            else:
                u = u_rec[s]
            if ok:
                try:
                    state = sim.step(u)
                except DataError:
                    ok = False
        diverged += not ok
        qs = np.column_stack([np.interp(t[sel], grid, q_sim[:, k]) for k in range(n)])
        dqs = np.column_stack([np.interp(t[sel], grid, dq_sim[:, k]) for k in range(n)])
        err_q.append(qs - q[sel])
        err_dq.append(dqs - dq[sel])
        if keep_signals:
            signals.append((t[sel], q[sel], qs))
    if not err_q:
        raise DataError(f"the recording ({t[-1] - t[0]:.3g} s) has no window of {window:g} s "
                        f"with 2 samples")
    eq, edq = np.vstack(err_q), np.vstack(err_dq)
    q_rms = np.sqrt(np.mean(eq ** 2, axis=0))
    dq_rms = np.sqrt(np.mean(edq ** 2, axis=0))
    out = {"mode": "closed loop" if closed_loop else "open loop", "window_s": float(window),
           "windows": len(err_q), "diverged": int(diverged),
           "joints": [{"name": j, "q_rms": float(a), "dq_rms": float(b),
                       "q_max": float(c)} for j, a, b, c in
                      zip(model.joint_names, q_rms, dq_rms, np.abs(eq).max(axis=0))],
           "q_rms_mean": float(q_rms.mean()), "dq_rms_mean": float(dq_rms.mean())}
    if keep_signals:
        out["signals"] = signals
    return out


def rollout_validate(model, models, datasets, labels=None, *, window=None,
                     closed_loop="auto", keep_signals=False, log=None):
    """Rollouts of several models (name -> standard parameters) on several recordings.

    ``closed_loop``: ``'auto'`` (closed loop where the recording allows it, else open
    loop), True or False. Returns a list (one per recording) of {file, mode, models: {name:
    :func:`rollout` result}}.
    """
    labels = labels or [f"dataset {i + 1}" for i in range(len(datasets))]
    files = []
    for label, ds in zip(labels, datasets):
        closed = closed_loop_available(ds) if closed_loop == "auto" else bool(closed_loop)
        entry = {"file": str(label), "mode": "closed loop" if closed else "open loop",
                 "models": {}}
        for name, pi in models.items():
            if log:
                log(f"rollout {label}: {name}")
            entry["models"][name] = rollout(model, pi, ds, window=window, closed_loop=closed,
                                            keep_signals=keep_signals)
        files.append(entry)
    return files


def format_rollout(files) -> str:
    """Text table: RMS position [rad] / velocity [rad/s] error per joint and model."""
    lines = []
    for f in files:
        first = next(iter(f["models"].values()))
        names = [j["name"].replace("_joint", "") for j in first["joints"]]
        lines.append(f"{f['file']}: rollout, {f['mode']}, {first['windows']} windows of "
                     f"{first['window_s']:g} s (RMS position error [rad] / velocity error "
                     f"[rad/s])")
        lines.append(f"  {'model':10s} " + " ".join(f"{n[:15]:>17s}" for n in names)
                     + f" {'mean':>17s}")
        for name, r in f["models"].items():
            cells = [f"{j['q_rms']:8.2e}/{j['dq_rms']:8.2e}" for j in r["joints"]]
            note = f"  ({r['diverged']} windows diverged)" if r["diverged"] else ""
            lines.append(f"  {name:10s} " + " ".join(f"{c:>17s}" for c in cells)
                         + f" {r['q_rms_mean']:8.2e}/{r['dq_rms_mean']:8.2e}{note}")
    return "\n".join(lines)


def rollout_to_dict(files) -> list:
    """The rollout results without signals (for validation.yaml ``rollout:``)."""
    return [{"file": f["file"], "mode": f["mode"],
             "models": {k: {kk: vv for kk, vv in v.items() if kk != "signals"}
                        for k, v in f["models"].items()}} for f in files]
