"""Simulated arms with rigid or elastic joints (pinocchio ABA, RK4, encoders, PD control).

- :func:`make_simulator` -- a stepping simulator on the ``builtin`` or ``mujoco`` engine (same
  interface: ``reset``, ``step(u)``, ``state``, ``measure()``, ``t``, ``dt``)
- :class:`Simulator` -- one control period per ``step(u)``; ``measure()`` reads quantised encoders
- :class:`MujocoSimulator`, :func:`build_mujoco` -- the robot as a MuJoCo model (MjSpec; rotor
  bodies and tendon springs for elastic joints) and its stepping simulator;
  :func:`mujoco_drive_parameters` reads an elastic MjModel's drive parameters back
- :class:`ArmDynamics` -- equations of motion (Zollo et al. 2014 complete model, Spong reduced
  model, rigid arm with armature) and friction (:class:`FrictionModel`, :func:`zollo_stribeck`)
- :class:`ElasticPDController`, :class:`RigidPDController`, :func:`make_controller` -- PD with
  gravity compensation (De Luca, Siciliano & Zollo 2005); :func:`tolerated_command_delay` --
  the command delay [periods] their linearised closed loop tolerates;
  :func:`delay_tolerant_gains` -- gains scaled down until it tolerates a given delay;
  :func:`closed_loop_gains` -- the gains of a loop at a rate (elastic: designed from the model
  and the control period where the config's do not damp it); :class:`TrackingForecast` -- the
  linearised loop's velocities along a reference, before the motion
- :func:`simulate` -- closed-loop run along an excitation trajectory -> Dataset
- :func:`add_measurement_noise` -- Gaussian noise at an SNR [dB] (:func:`noise_sigma`: the
  signal is each channel's std about its mean)
- :func:`sensor_readings` -- an elastic run as its encoders, current and joint torque sensors
  read it (docs/elastic.md)

Monte-Carlo studies of the estimators on simulated runs are
:func:`robot_identification.identification.monte_carlo`.
"""
from robot_identification.simulation._control import (  # noqa: F401
    ElasticPDController, GainChoice, LoopGains, RigidPDController, TrackingForecast,
    closed_loop_gains, damped_elastic_gains, delay_tolerant_gains, elastic_default_gains,
    make_controller, sampled_feedforward, tolerated_command_delay, velocity_message)
from robot_identification.simulation._friction import FrictionModel, zollo_stribeck  # noqa: F401
from robot_identification.simulation._run import (  # noqa: F401
    add_measurement_noise, sensor_readings, simulate)
from robot_identification.simulation._simulator import (  # noqa: F401
    ArmDynamics, Simulator, State, noise_sigma)
from robot_identification.simulation._mujoco import (  # noqa: F401
    ENGINES, MujocoArm, MujocoSimulator, build_mujoco, describe_mujoco, make_simulator,
    mjcf_text, mujoco_drive_parameters)
