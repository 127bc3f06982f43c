"""Robot configuration: the runtime objects of one robot YAML (frozen dataclasses) and the
names and units the configuration uses.

The YAML names the URDF, gravity, the dynamic model (rigid or elastic joints),
the friction model, and per joint the drive data (gear ratio, nominal rotor
inertia, stiffness, friction), limits and the frame in which the body's standard
parameters are expressed. The file is validated by the pydantic models of
:mod:`._config_file` (:func:`~._config_file.load_robot_config`), which build these objects;
the schema is documented in ``config/README.md`` and ``config/robot_config.schema.json``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from robot_identification.choices import (  # noqa: F401
    ESTIMATORS, PREPROCESSING, PREPROCESSING_ALIASES)

#: Friction models of the identification regressor (per joint, same for all joints).
#: ``viscous``: f_v * v; ``coulomb_viscous``: f_c * sign(v) + f_v * v;
#: ``static``: Szabó & Gincsainé (2021) eq. 7-9, stiction * (2/pi) atan(Kv v) +
#: stribeck * (2/pi) atan(delta v) + f_v * v.
FRICTION_MODELS = ("none", "viscous", "coulomb_viscous", "static")
#: Largest Butterworth order (``identification.filter_order``): the zero-phase filter of
#: order 1000 returned NaN, named as "q: non-finite value at sample 0"; 4-8 are usual.
MAX_FILTER_ORDER = 50
#: Largest ``simulation.excitation`` harmonics / B-spline segments and trajectory length [s]
#: (1e8 harmonics or 1e8 periods ended in "out of memory").
MAX_HARMONICS, MAX_EXCITATION_S = 1000, 3600.0

#: Signals a rosbag2 recording can hold (the ``bag:`` section: signal -> '/topic/field',
#: docs/elastic.md; robot_identification.data.bag_signals).
BAG_SIGNALS = ("position", "velocity", "torque", "motor_position", "motor_velocity",
               "joint_torque")

#: Drive parameter names per joint, in regressor column order.
DRIVE_PARAMETERS = ("rotor_inertia", "stiffness", "damping", "viscous", "coulomb",
                    "coulomb_load", "stiction", "stribeck", "offset")

#: Drive parameters that are physically >= 0 (``stiffness`` must be > 0); stiction, stribeck
#: and offset may have either sign.
NON_NEGATIVE_DRIVE_PARAMETERS = ("rotor_inertia", "damping", "viscous", "coulomb",
                                 "coulomb_load")

#: Drive keys of earlier versions -> their field-term names (an old key is a ConfigError
#: naming the new one).
RENAMED_DRIVE_PARAMETERS = {"K": "stiffness", "D": "damping", "fv": "viscous",
                            "fc": "coulomb", "fs": "stiction", "fsc": "stribeck",
                            "fo": "offset"}


def current_parameter_name(name: str) -> str:
    """A standard parameter name with an old drive key replaced by its field term.

    ``'joint1.fv'`` -> ``'joint1.viscous'`` (:data:`RENAMED_DRIVE_PARAMETERS`); any other
    name (``'link1.m'``, ``'joint1.viscous'``) is returned unchanged. Datasets and bags
    written before the renaming carry the old names in their true parameters.
    """
    head, sep, key = str(name).rpartition(".")
    if sep and key in RENAMED_DRIVE_PARAMETERS:
        return f"{head}.{RENAMED_DRIVE_PARAMETERS[key]}"
    return str(name)


def current_parameter_names(values: dict | None) -> dict | None:
    """``{name: value}`` with old drive keys renamed (:func:`current_parameter_name`).

    When a mapping holds both the old and the new name of a parameter, the new one is
    kept; the old one is dropped when it holds the same value, else kept under its old
    name (so it is reported as a parameter the model does not know, never silently
    merged). ``None`` stays ``None``.
    """
    if values is None:
        return None
    out = {k: v for k, v in values.items() if current_parameter_name(k) == k}
    for k, v in values.items():
        new = current_parameter_name(k)
        if new == k:
            continue
        if new not in out:
            out[new] = v
        elif out[new] != v:
            out[k] = v
    return out


DRIVE_PARAMETER_UNITS = {
    "rotor_inertia": "kg*m^2", "stiffness": "N*m/rad", "damping": "N*m*s/rad",
    "viscous": "N*m*s/rad", "coulomb": "N*m", "coulomb_load": "1", "stiction": "N*m",
    "stribeck": "N*m", "offset": "N*m",
}

#: Units of the drive parameters of a prismatic joint (force, metres; rotor_inertia is the
#: drive's link-referred mass).
PRISMATIC_DRIVE_PARAMETER_UNITS = {
    "rotor_inertia": "kg", "stiffness": "N/m", "damping": "N*s/m",
    "viscous": "N*s/m", "coulomb": "N", "coulomb_load": "1", "stiction": "N", "stribeck": "N",
    "offset": "N",
}

DRIVE_PARAMETER_DESCRIPTIONS = {
    "rotor_inertia": "rotor inertia about its spin axis (motor side)",
    "stiffness": "joint stiffness", "damping": "joint damping", "viscous": "viscous friction",
    "coulomb": "Coulomb friction",
    "coulomb_load": "load-dependent Coulomb friction per N*m of the URDF's joint torque",
    "stiction": "stiction (Szabó static model)",
    "stribeck": "Coulomb minus stiction (Szabó static model)", "offset": "torque offset",
}


@dataclass(frozen=True)
class JointLimits:
    """Joint limits, SI units (rad, rad/s, rad/s^2, N*m); ``None`` when not given."""

    position: tuple[float, float] | None = None
    velocity: float | None = None
    acceleration: float | None = None
    effort: float | None = None


@dataclass(frozen=True)
class JointConfig:
    """Per-joint drive and transmission data.

    Attributes
    ----------
    name : str
        URDF joint name.
    gear_ratio : float
        Reduction k_m: motor angle = k_m * theta, theta the link-referred motor
        position (Zollo et al. 2014, notation of Sec. 2). The rotor inertia column
        is scaled by k_m^2 (link-referred rotor inertia = rotor_inertia * k_m^2).
    body_frame : str or None
        URDF frame in which the standard parameters of the body moved by this joint
        are expressed (e.g. a DH frame); ``None``: the joint frame (pinocchio's).
    limits : JointLimits
    drive : dict
        Nominal ("true" for simulation) drive parameters by name, see
        :data:`DRIVE_PARAMETERS`.
    simulation_friction : dict or None
        Friction law used only by the simulator (e.g. Zollo's Stribeck eq. 43).
    rotor : bool
        The joint has a motor rotor whose inertia is identified (``drive.rotor_inertia``
        given or absent); ``rotor_inertia: null`` says there is none: no rotor column.
    friction_model : str or None
        This joint's friction model (:data:`FRICTION_MODELS`), overriding the robot's
        ``friction.model``; ``None``: the robot's.
    """

    name: str
    gear_ratio: float = 1.0
    body_frame: str | None = None
    limits: JointLimits = field(default_factory=JointLimits)
    drive: Mapping[str, float] = field(default_factory=dict)
    simulation_friction: Mapping[str, Any] | None = None
    rotor: bool = True
    friction_model: str | None = None


@dataclass(frozen=True, kw_only=True)
class FrictionConfig:
    """Friction model of the identification regressor.

    ``stiction_sharpness`` (K_v, s/rad) and ``stribeck_sharpness`` (delta, s/rad)
    are the fixed shape constants of Szabó & Gincsainé (2021), eq. 7-8.
    ``load_dependent`` adds to Coulomb friction a term proportional to the magnitude of the
    joint torque the URDF's rigid-body model predicts, f_c + f_l |tau_0| (drive parameter
    ``coulomb_load``, rigid arms; Hamon, Gautier & Garrec, ICRA 2011: the dry friction of a
    gear grows with the load it transmits).
    ``stiction`` adds to ``coulomb_viscous`` the smooth column (2/pi) atan(K_v v) of Szabó &
    Gincsainé (2021, eq. 7-8; drive parameter ``stiction``, K_v = ``stiction_sharpness``):
    friction f_v v + f_c sign(v) + f_s (2/pi) atan(K_v v), stateless, continuous through
    v = 0 where sign(v) is not (docs/friction.md).
    """

    model: str = "coulomb_viscous"
    offset: bool = False
    load_dependent: bool = False
    stiction: bool = False
    stiction_sharpness: float = 100.0
    stribeck_sharpness: float = 10.0


@dataclass(frozen=True)
class IdentificationSettings:
    """Pre-processing and estimation settings of the identification engine.

    ``preprocessing`` picks the strategy (see
    :mod:`robot_identification.identification`): ``butterworth`` uses ``filter_order``,
    ``cutoff_hz``, ``differentiation`` (central | savgol) and ``savgol_*``; ``savgol`` (FIR
    Savitzky-Golay bank) uses ``savgol_window`` and ``savgol_order``; ``polynomial``
    (Lomakin-Deutscher PA bank) uses ``pa_*``. ``estimator`` is the primary estimate
    (``base_parameters`` of results.yaml), ``extra_estimators`` are computed too.
    ``prior``: ``nominal`` (the robot config's parameters), ``none``, or a YAML file of
    standard parameters; used by ``mrls`` (initial guess), ``bounded`` (box around it) and
    ``physical`` (regularisation).
    """

    filter_order: int = 5               # Butterworth order (zero-phase)
    cutoff_hz: float | str | None = "auto"   # Butterworth cut-off [Hz]; None: no filtering;
    #                                   'auto': from the data's spectra (resolve_settings)
    differentiation: str = "central"    # central | savgol
    savgol_window: float = 0.05         # Savitzky-Golay window [s]
    savgol_order: int = 3
    velocity_threshold: float = 0.0     # reject samples with |velocity| below [rad/s]
    drop_reversals: bool = True         # Coulomb friction + filter: drop friction rows where
    #                                   the filtered Coulomb step of a reversal or stop has
    #                                   not settled (identification.reversal_window)
    reversal_window: float | str = "auto"  # with drop_reversals: friction rows within this
    #                                   time [s] of a velocity reversal or stop are dropped;
    #                                   'auto': the Butterworth filter's settling time
    #                                   (reversal_window(); FIR banks keep their window);
    #                                   0: only the stop rows (|v| < stop_velocity)
    stop_velocity: float | tuple | str = "auto"  # |filtered v| below it [rad/s] is a stop
    #                                   (dropped like a reversal); 'auto': 2 % of the velocity
    #                                   RMS (resolve_settings); 0: reversals only
    friction_deadband: float | str = "auto"  # |v| below: Coulomb term ramps linearly to 0
    #                                   [rad/s]; 'auto': 3 x the measured velocity noise
    friction_presliding: float | tuple | str | None = "auto"  # Dahl pre-sliding
    #                                   displacement of the predicted Coulomb state [rad];
    #                                   None: the ramp; 'auto': chosen on the identification
    #                                   data (validation.select_presliding)
    position_jitter: tuple | None = None  # position steps at rest [rad] (resolved with
    #                                   friction_presliding; validation.position_jitter)
    estimator: str = "auto"             # one of ESTIMATORS, or auto: wls or physical by
    #                                   their held-out score on the identification data
    #                                   (identification.resolve_estimator)
    decimate: int = 1                   # keep every k-th sample after filtering
    preprocessing: str = "butterworth"  # one of PREPROCESSING
    pa_window: float = 0.044            # polynomial approximation window T [s]
    pa_degree: int = 1                  # projection degree N
    pa_alpha: float = 3.0               # Jacobi weight exponents
    pa_beta: float = 3.0
    pa_delay: float | None = None       # t_d [s]; None: zero of P_{N+1} (Lomakin-Deutscher)
    extra_estimators: tuple = ()        # further estimators computed alongside
    prior: str = "nominal"              # nominal | none | path of a YAML file
    prior_weight: float | str = "auto"  # physical: weight of the log-det prior; 'auto':
    #                                   cross-validated on the identification data where
    #                                   physical is the primary estimate, else 1
    huber_threshold: float = 1.345      # IRLS: Huber c, in noise standard deviations
    irls_iterations: int = 30           # IRLS: maximum passes over the data

    @property
    def estimators(self) -> tuple:
        """Primary estimator first, then the extra ones (no duplicates)."""
        out = [self.estimator]
        out += [e for e in self.extra_estimators if e not in out]
        return tuple(out)


@dataclass(frozen=True)
class SimulationSettings:
    """Simulator and controller settings (see :mod:`robot_identification.simulation`)."""

    rate_hz: float = 1000.0
    substeps: int = 0                    # RK4 sub-steps per control period; 0: automatic
    encoder_counts: int = 1_250_000      # counts/rev; 0: no quantisation
    kp: tuple[float, ...] | None = None  # PD gains per joint [N*m/rad]
    kd: tuple[float, ...] | None = None  # [N*m*s/rad]
    excitation: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RobotConfig:
    """A robot configuration (immutable). Build with :func:`load_robot_config`."""

    name: str
    urdf_path: Path | None
    gravity: tuple[float, float, float]
    model: str
    coupling: str
    damping: bool
    friction: FrictionConfig
    joints: tuple[JointConfig, ...]
    identification: IdentificationSettings
    simulation: SimulationSettings
    source: Path | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: xacro arguments (name -> value, as ``xacro FILE name:=value``) of a ``.xacro`` URDF
    xacro_args: Mapping[str, str] = field(default_factory=dict)

    @property
    def elastic(self) -> bool:
        return self.model == "elastic"

    @property
    def joint_names(self) -> tuple[str, ...]:
        return tuple(j.name for j in self.joints)


def csv_zero_based_hint(mapping) -> str:
    """``"<key>: ... count from 1 ..."`` when a column of the mapping (``time``, ``position``,
    ``velocity``, ``torque``, ``current``) is 0: numbers counted from 0, with the same mapping
    counted from 1; else ``""``."""
    keys = ("time", "position", "velocity", "torque", "current", "motor_position",
            "motor_velocity", "joint_torque")
    ints = {k: mapping[k] for k in keys if isinstance(mapping.get(k), (int, list, tuple))
            and not isinstance(mapping.get(k), bool)}
    flat = {k: [v] if isinstance(v, int) else list(v) for k, v in ints.items()}
    if not all(isinstance(c, int) and not isinstance(c, bool) for v in flat.values()
               for c in v):
        return ""
    zero = next((k for k, v in flat.items() if 0 in v), None)
    if zero is None or any(c < 0 for v in flat.values() for c in v):
        return ""
    shifted = ", ".join(f"{k}: {v + 1}" if isinstance(v, int) else f"{k}: {[c + 1 for c in v]}"
                        for k, v in ints.items())
    return (f"{zero}: column 0 does not exist: columns count from 1 (the first column is 1); "
            f"counted from 1 this mapping is {shifted}")
