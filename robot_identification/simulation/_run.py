"""Closed-loop simulation runs: reference -> controller -> simulator -> Dataset."""
from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np

from robot_identification.data import Dataset
from robot_identification.errors import DataError, ExcitationError
from robot_identification.excitation import (
    load_trajectory, trajectory_from_config, trajectory_label)
from robot_identification.progress import bar
from robot_identification.simulation._control import (TrackingForecast, closed_loop_gains,
                                                      make_controller, sampled_feedforward)
from robot_identification.simulation._friction import _FRICTION_KEYS
from robot_identification.simulation._mujoco import make_simulator, mujoco_module
from robot_identification.simulation._simulator import noise_sigma

_NOISY = ("q", "theta", "dq", "ddq", "dtheta", "ddtheta")

#: Largest number of samples a simulation holds in memory (1 h at 1 kHz; 6 joints with all
#: derivatives: about 1.4 GB).
MAX_SAMPLES = 3_600_000
#: Fewest samples of a simulation by default (a time step); the CLI asks for what
#: identification needs of a recording (20).
MIN_SAMPLES = 2


def add_measurement_noise(dataset, snr_db, seed=0):
    """Copy of ``dataset`` with zero-mean Gaussian noise at a signal-to-noise ratio.

    sigma = std(channel) * 10^(-snr_db / 20) for each joint of each of q, theta and,
    when present, dq, ddq, dtheta, ddtheta; std over the whole run, about the run's mean
    (:func:`noise_sigma`) (Zollo et al. 2014, Sec. 6.1: noise on joint and motor positions,
    velocities and accelerations; the dB reading of SN, notes A.7.1). The torques u are left
    noise-free, as in the paper.

    Parameters
    ----------
    dataset : Dataset
    snr_db : float
        [dB].
    seed : int

    Returns
    -------
    Dataset
    """
    rng = np.random.default_rng(seed)
    kw = {}
    for key in _NOISY:
        x = getattr(dataset, key)
        if x is None:
            continue
        sigma = noise_sigma(np.std(x, axis=0), snr_db)
        kw[key] = x + sigma * rng.standard_normal(x.shape)
    meta = dict(dataset.metadata)
    meta["snr_db"] = float(snr_db)
    meta["noise_seed"] = int(seed)
    return replace(dataset, metadata=meta, **kw)


def sensor_readings(dataset, model, seed=0, link_bits=20, motor_bits=14,
                    current_noise=0.005, torque_sensor_noise=0.0005):
    """An exact elastic-arm run as its sensors read it (docs/elastic.md, sensor sets).

    - link encoders: absolute, ``link_bits`` per revolution (q rounded to 2 pi / 2^bits);
    - motor encoders: ``motor_bits`` per revolution of the motor shaft, so the link-referred
      theta is rounded to 2 pi / (2^bits k_m);
    - motor torque (current x drive gain): Gaussian noise of ``current_noise`` x the
      joint's peak |u| in the run;
    - joint torque sensors (``tau_joint``, when recorded): Gaussian noise of
      ``torque_sensor_noise`` x the joint's effort limit (the sensor's range; 1 x the peak
      |tau_J| when the config gives no effort limit).

    Parameters
    ----------
    dataset : Dataset
        An elastic run simulated without quantisation (``simulate(quantise=False)``).
    model : RobotModel
    seed : int

    Returns
    -------
    Dataset

    Raises
    ------
    DataError
        A rigid arm's dataset (no motor positions).
    """
    if dataset.theta is None:
        raise DataError("sensor_readings models an elastic arm's sensors: the dataset has no "
                        "motor positions")
    rng = np.random.default_rng(seed)
    link = 2 * np.pi / 2 ** int(link_bits)
    motor = 2 * np.pi / (2 ** int(motor_bits) * np.asarray(model.gear_ratios, float))
    kw = {"theta": np.round(dataset.theta / motor) * motor}
    if dataset.q is not None:
        kw["q"] = np.round(dataset.q / link) * link
    if dataset.tau is not None:
        kw["tau"] = dataset.tau + current_noise * np.abs(dataset.tau).max(axis=0) \
            * rng.standard_normal(dataset.tau.shape)
    if dataset.tau_joint is not None:
        tj = dataset.tau_joint
        scale = np.array([j.limits.effort or 0.0 for j in model.config.joints], float)
        scale = np.where(scale > 0, scale, np.abs(tj).max(axis=0))
        kw["tau_joint"] = tj + torque_sensor_noise * scale * rng.standard_normal(tj.shape)
    meta = dict(dataset.metadata, sensors={
        "link_bits": int(link_bits), "motor_bits": int(motor_bits),
        "current_noise": float(current_noise),
        "torque_sensor_noise": float(torque_sensor_noise), "seed": int(seed)})
    return replace(dataset, metadata=meta, **kw)


def _true_parameters(model, friction):
    """{standard parameter name: value} the simulated arm has: the config's nominal values,
    with the friction parameters of joints simulated without friction (law ``none``) 0."""
    true = dict(zip(model.parameter_names, map(float, model.nominal_parameters())))
    for j, law in zip(model.joint_names, friction.laws):
        if law["model"] == "none":
            for key in _FRICTION_KEYS + ("coulomb_load",):
                if f"{j}.{key}" in true:
                    true[f"{j}.{key}"] = 0.0
    return true


def _controller(model, kp, kd, rate_hz, q0):
    """The PD controller of a run at ``rate_hz`` (:func:`closed_loop_gains`): elastic arms
    whose configured gains do not damp the loop at that rate (e.g. zollo_planar's at both
    250 Hz and 1 kHz) get the model's design there, gains unstable even so the largest
    stable bandwidth scale, with a warning naming both."""
    choice = closed_loop_gains(model, kp, kd, rate_hz, q=q0)
    if choice.note:
        warnings.warn(f"simulate: {choice.describe(model.config.name)}", UserWarning,
                      stacklevel=3)
    return make_controller(model, choice.kp, choice.kd)


def forecast_warning(model, law, rate_hz, q_ref, dq_ref, feedforward=None):
    """'' or the line :class:`TrackingForecast` says about the closed loop of ``law`` at
    ``rate_hz`` along ``q_ref``, ``dq_ref`` (m, n) (one sample a period, from rest at the
    first; elastic: with ``feedforward``): a joint forecast beyond its velocity limit."""
    fc = TrackingForecast(model, law, rate_hz, q_ref[0])
    return fc.message(fc.ratio(q_ref, dq_ref, feedforward=feedforward), "this excitation")


def simulate(model, duration=None, trajectory=None, seed=0, snr_db=None, *,
             derivatives=False, quantise=True, friction=None, rate_hz=None, substeps=None,
             kp=None, kd=None, controller=None, torque=None, log=None,
             min_samples=MIN_SAMPLES, engine="builtin", engine_options=None,
             joint_torque=False, feedforward=True):
    """Simulate an identification experiment: the arm follows an excitation trajectory.

    At each control period (1 / rate_hz) the encoders are read (quantised positions,
    exact velocities), the PD controller (:func:`make_controller`) computes u from the
    reference q_d(t), dq_d(t), and the simulator integrates one period with u held.
    The arm starts at rest in equilibrium at the trajectory's start point.

    Parameters
    ----------
    model : RobotModel
    duration : float, optional
        [s]; default the trajectory's duration (the trajectory holds its end point
        afterwards).
    trajectory : trajectory or path, optional
        Excitation (see :mod:`robot_identification.excitation`); default
        ``trajectory_from_config(model)``.
    seed : int
        Seed of the measurement noise.
    snr_db : float, optional
        Adds noise to the recorded data with :func:`add_measurement_noise`.
    derivatives : bool
        Record the exact velocities and accelerations (from the equations of motion at
        each sample, with the command applied from that sample on) as measured
        derivatives ``dq, ddq, dtheta, ddtheta``. Positions stay as measured.
    quantise : bool
        Encoder quantisation of the recorded positions.
    friction : {None, 'regressor', 'none'}
        Override the simulation friction laws.
    rate_hz, substeps, kp, kd :
        See :class:`Simulator` and :func:`make_controller`.
    controller : callable, optional
        ``controller(q_d, dq_d, measurement) -> u`` replacing the PD controller.
    torque : {'interval_mean', 'command'}, optional
        What ``tau[i]`` records; default ``command`` when ``derivatives`` are recorded
        (the exact derivatives are consistent with it), else ``interval_mean``.
        ``command``: u_i, the command held over [t_i, t_i + 1/rate). ``interval_mean``:
        the mean motor torque over [t_i - 1/(2 rate), t_i + 1/(2 rate)], i.e.
        (u_{i-1} + u_i) / 2 -- what a torque (current) sensor averaging over one period
        and sampled with the encoders at t_i reads. The held command is effectively
        delayed by half a period with respect to the sampled positions; with central
        differences that lag biases Zollo's planar rotor inertia by ~8 % and the
        friction by ~100 % (docs/simulation.md).
    log : callable, optional
    min_samples : int
        Fewest samples to simulate (default and at least MIN_SAMPLES = 2); ``simulate`` of
        the CLI asks for 20, what identification needs of a recording.
    engine : {'builtin', 'mujoco'}
        Physics engine (:func:`make_simulator`): the built-in pinocchio + RK4 simulator (the
        reference) or MuJoCo (faster; Coulomb friction as a soft constraint, see
        docs/simulation.md).
    engine_options : dict, optional
        Further options of the engine (MuJoCo: ``integrator``, ``coupling``, ``coulomb``,
        ``friction_timeconst``).
    joint_torque : bool
        Elastic arms: also record what joint torque sensors read, ``tau_joint`` (N, n)
        [N*m] = K (theta - q) + D (dtheta - dq) at each sample, computed by the engine
        (MuJoCo: its tendon spring force on the link joints); exact (noise-free).
    feedforward : bool
        Elastic arms with the built-in controller: the reference's inverse dynamics as
        feedforward (:func:`sampled_feedforward`, :meth:`ElasticPDController.feedforward`:
        the spring's deflection and the motor torque the reference needs), so that the
        feedback does not have to produce them (zollo_planar without it: 3.3 x its velocity
        limit at 250 Hz, 1.3 x at 1 kHz on a 4 s excitation; docs/simulation.md).

    Before the motion the run warns when the linearised closed loop
    (:class:`TrackingForecast`) would take a joint beyond its velocity limit, and when the
    gains were changed (:func:`closed_loop_gains`).

    Returns
    -------
    Dataset
        t (N,), q, theta (elastic), tau = u (N, n) [, tau_joint], true_parameters (the
        model's nominal
        standard parameters) and metadata (robot, seed, rate, substeps, friction laws,
        trajectory).

    Raises
    ------
    ExcitationError
        The trajectory has the wrong number of joints or other joint names.
    DataError
        ``joint_torque`` for a rigid arm, negative seed, non-finite SNR, a duration that
        is not finite and positive, below MIN_SAMPLES or above MAX_SAMPLES samples, or the
        simulation diverged.
    ConfigError
        Unknown engine or engine option.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise DataError(f"seed must be a non-negative integer, got {seed!r}")
    if snr_db is not None and not (np.isfinite(snr_db) and snr_db > 0):
        raise DataError(f"SNR must be a finite positive number of dB, got {snr_db!r}")
    if torque is None:
        torque = "command" if derivatives else "interval_mean"
    if torque not in ("interval_mean", "command"):
        raise DataError(f"torque must be 'interval_mean' or 'command', got {torque!r}")
    if joint_torque and not model.config.elastic:
        raise DataError(f"robot '{model.config.name}' is rigid: joint torque sensors "
                        f"(joint_torque) measure the torque of elastic joints")
    if trajectory is None:
        trajectory = trajectory_from_config(model)
    elif not hasattr(trajectory, "evaluate"):
        trajectory = load_trajectory(trajectory)
    if trajectory.n_joints != model.n:
        raise ExcitationError(f"{trajectory_label(trajectory)} has {trajectory.n_joints} "
                              f"joints, robot "
                              f"'{model.config.name}' has {model.n}")
    names = getattr(trajectory, "joint_names", None)
    if names and tuple(names) != tuple(model.joint_names):
        raise ExcitationError(f"{trajectory_label(trajectory)} is for joints {list(names)}, "
                              f"robot "
                              f"'{model.config.name}' has {list(model.joint_names)}")
    duration = float(trajectory.duration if duration is None else duration)
    if not np.isfinite(duration) or duration <= 0:
        raise DataError(f"duration must be a finite number > 0 s, got {duration}")
    sim = make_simulator(model, engine, rate_hz=rate_hz, substeps=substeps, seed=seed,
                         quantise=quantise, friction=friction, **(engine_options or {}))
    if duration * sim.rate_hz > MAX_SAMPLES:     # bound the allocation before making it
        raise DataError(f"duration {duration:.6g} s at {sim.rate_hz:g} Hz is "
                        f"{duration * sim.rate_hz:.3g} samples, above the in-memory limit "
                        f"{MAX_SAMPLES:.2g}: simulate shorter runs (at most "
                        f"{MAX_SAMPLES / sim.rate_hz:.3g} s)")
    ctrl = controller or _controller(model, kp, kd, sim.rate_hz,
                                     trajectory.evaluate(0.0)[0][0])
    N = int(round(duration * sim.rate_hz)) + 1
    if N < max(min_samples, MIN_SAMPLES):
        rate = ("" if rate_hz is not None or model.config.source is None else
                f" (simulation.rate_hz of '{model.config.source}')")
        raise DataError(f"duration {duration:.6g} s at {sim.rate_hz:g} Hz{rate} gives {N} "
                        f"sample(s); at least {max(min_samples, MIN_SAMPLES)} are needed: "
                        f"simulate longer or at a higher sample rate")
    t = np.arange(N) * sim.dt
    q_ref, dq_ref, ddq_ref = trajectory.evaluate(t)
    ff = None
    if controller is None and sim.elastic and feedforward:
        ff = sampled_feedforward(ctrl, q_ref, dq_ref, ddq_ref, sim.dt,
                                 [x[0] for x in trajectory.evaluate(np.array([N * sim.dt]))])
    if controller is None:          # before the motion: will the loop stay within the limits?
        ahead = forecast_warning(model, ctrl, sim.rate_hz, q_ref, dq_ref, ff)
        if ahead:
            warnings.warn(f"simulate: {ahead}", UserWarning, stacklevel=2)
    sim.reset(q_ref[0])
    n = model.n
    rec = {k: np.empty((N, n)) for k in ("q", "tau")}
    if sim.elastic:
        rec["theta"] = np.empty((N, n))
    if joint_torque:
        rec["tau_joint"] = np.empty((N, n))
    if derivatives:
        for k in ("dq", "ddq") + (("dtheta", "ddtheta") if sim.elastic else ()):
            rec[k] = np.empty((N, n))
    pbar = bar(total=round(duration, 3), desc="simulate", unit="s")
    for i in range(N):
        if i % 500 == 0 and i:
            pbar.update(round(500 * sim.dt, 6))
        meas = sim.measure()
        u = (ctrl(q_ref[i], dq_ref[i], meas) if ff is None else
             ctrl(q_ref[i], dq_ref[i], meas, (ff[0][i], ff[1][i], ff[2][i])))
        rec["q"][i] = meas["q"]
        rec["tau"][i] = u
        if sim.elastic:
            rec["theta"][i] = meas["theta"]
        if joint_torque:
            rec["tau_joint"][i] = sim.joint_torque()
        if derivatives:
            s = sim.state
            ddq, ddth = sim.accelerations(u)
            rec["dq"][i], rec["ddq"][i] = s.dq, ddq
            if sim.elastic:
                rec["dtheta"][i], rec["ddtheta"][i] = s.dtheta, ddth
        if i < N - 1:
            sim.step(u)
        if log and i % 5000 == 0 and i:
            log(f"simulated {t[i]:.1f}/{duration:.1f} s")
    pbar.close()
    if sim.engine == "mujoco":
        mujoco = mujoco_module()
        engine_meta = {"mujoco_version": mujoco.__version__,
                       "integrator": sim.integrator,
                       "coulomb": sim.coulomb}
    else:
        engine_meta = {"integrator": sim.integrator}
        if sim.integrator == "imex":
            engine_meta["imex_steps"] = sim.imex_steps
    if torque == "interval_mean":
        rec["tau"][1:] = 0.5 * (rec["tau"][1:] + rec["tau"][:-1])
    meta = {"robot": model.config.name, "torque": torque,
            "source": "robot_identification.simulation",
            "seed": int(seed), "rate_hz": sim.rate_hz, "substeps": sim.substeps,
            "engine": sim.engine,
            "encoder_counts": sim.counts, "friction": sim.friction.describe(),
            "controller": type(ctrl).__name__,
            "kp": np.asarray(getattr(ctrl, "kp", [])).tolist(),
            "kd": np.asarray(getattr(ctrl, "kd", [])).tolist(),
            "feedforward": ff is not None,
            "trajectory": trajectory.to_dict(), "duration": duration, **engine_meta}
    ds = Dataset(t=t, joint_names=model.joint_names,
                 true_parameters=_true_parameters(model, sim.friction), metadata=meta, **rec)
    cut = cut_mid_motion(model, trajectory, duration)
    if cut:
        meta["ends_mid_motion"] = cut
        warnings.warn(f"simulate: {cut}", UserWarning, stacklevel=2)
    if snr_db is not None:
        ds = add_measurement_noise(ds, snr_db, seed)
    return ds


#: A run cut while a joint moves faster than this share of its RMS speed over the whole
#: trajectory ends "mid-motion" (:func:`cut_mid_motion`).
MID_MOTION_SHARE = 0.2


def cut_mid_motion(model, trajectory, duration) -> str:
    """Why a run of ``duration`` [s] ends mid-motion, or ``""``: it stops before the end of
    ``trajectory`` while some joint moves faster than :data:`MID_MOTION_SHARE` of its RMS
    speed over the trajectory. The recording then ends in motion, where the zero-phase
    filter and the differentiation of the identification are biased (issue #26: a tutorial
    run cut this way went unnoticed)."""
    full = float(trajectory.duration)
    if not duration < full - 1e-9:
        return ""
    _, dq_cut, _ = trajectory.evaluate(np.array([duration]))
    _, dq, _ = trajectory.evaluate(np.linspace(0.0, full, 2001))
    rms = np.sqrt(np.mean(dq ** 2, axis=0))
    share = np.abs(dq_cut[0]) / np.maximum(rms, 1e-12)
    j = int(np.argmax(share))
    if share[j] <= MID_MOTION_SHARE:
        return ""
    return (f"duration {duration:g} s ends the {full:g} s excitation trajectory mid-motion "
            f"({model.joint_names[j]} at {abs(dq_cut[0, j]):.3g} rad/s, {100 * share[j]:.0f} % "
            f"of its RMS speed): the run stops while the arm moves, which biases the "
            f"identification near the cut; simulate the whole trajectory (duration "
            f"{full:g} s) or one that ends at rest")
