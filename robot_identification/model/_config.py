"""Robot configuration: one YAML per robot, loaded into frozen dataclasses.

The YAML names the URDF, gravity, the dynamic model (rigid or elastic joints),
the friction model, and per joint the drive data (gear ratio, nominal rotor
inertia, stiffness, friction), limits and the frame in which the body's standard
parameters are expressed. Unknown keys, missing keys and wrong types raise
:class:`~robot_identification.errors.ConfigError` naming the file and key.
The schema is documented in ``config/README.md``.
"""
from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from robot_identification._yaml import read_yaml_file
from robot_identification.choices import (  # noqa: F401
    ESTIMATORS, PREPROCESSING, PREPROCESSING_ALIASES)
from robot_identification.errors import ConfigError, did_you_mean

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


class _Reader:
    """Strict reader of one YAML mapping: every key must be consumed or is reported."""

    def __init__(self, data: Any, where: str):
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
        self.data = dict(data)
        self.where = where
        self.used: set[str] = set()

    def _get(self, key, default, required):
        self.used.add(key)
        if key not in self.data or self.data[key] is None:
            if required:
                raise ConfigError(f"{self.where}: missing required key '{key}'")
            return default, False
        return self.data[key], True

    def number(self, key, default=None, *, required=False, minimum=None, positive=False,
               unit="", maximum=None):
        value, present = self._get(key, default, required)
        if not present:
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{self.where}.{key}: expected a number{_u(unit)}, "
                              f"got {value!r} ({type(value).__name__})")
        value = float(value)
        if not math.isfinite(value):
            raise ConfigError(f"{self.where}.{key}: must be finite, got {value}")
        if positive and value <= 0:
            raise ConfigError(f"{self.where}.{key}: must be > 0{_u(unit)}, got {value}")
        if minimum is not None and value < minimum:
            raise ConfigError(f"{self.where}.{key}: must be >= {minimum}{_u(unit)}, got {value}")
        if maximum is not None and value > maximum:
            raise ConfigError(f"{self.where}.{key}: must be <= {maximum:g}{_u(unit)}, got "
                              f"{value:g}")
        return value

    def integer(self, key, default=None, *, required=False, minimum=None, maximum=None):
        value, present = self._get(key, default, required)
        if not present:
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{self.where}.{key}: expected an integer, got {value!r}")
        if minimum is not None and value < minimum:
            raise ConfigError(f"{self.where}.{key}: must be >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise ConfigError(f"{self.where}.{key}: must be <= {maximum}, got {value}")
        return value

    def string(self, key, default=None, *, required=False, choices=None):
        value, present = self._get(key, default, required)
        if not present:
            return value
        if not isinstance(value, str):
            raise ConfigError(f"{self.where}.{key}: expected a string, got {value!r}")
        if choices is not None and value not in choices:
            raise ConfigError(f"{self.where}.{key}: must be one of {list(choices)}, got "
                              f"'{value}'{did_you_mean(value, choices)}")
        return value

    def boolean(self, key, default=False):
        value, present = self._get(key, default, False)
        if present and not isinstance(value, bool):
            raise ConfigError(f"{self.where}.{key}: expected true or false, got {value!r}")
        return value

    def vector(self, key, length=None, default=None, *, required=False, unit="",
               minimum=None, positive=False):
        value, present = self._get(key, default, required)
        if not present:
            return None if value is None else tuple(float(v) for v in value)
        if not isinstance(value, (list, tuple)) or any(
                isinstance(v, bool) or not isinstance(v, (int, float)) for v in value):
            raise ConfigError(f"{self.where}.{key}: expected a list of numbers{_u(unit)}, "
                              f"got {value!r}")
        if length is not None and len(value) != length:
            raise ConfigError(f"{self.where}.{key}: expected {length} numbers, got {len(value)}")
        if not all(math.isfinite(float(v)) for v in value):
            raise ConfigError(f"{self.where}.{key}: all entries must be finite, got {value!r}")
        if positive and not all(v > 0 for v in value):
            raise ConfigError(f"{self.where}.{key}: all entries must be > 0{_u(unit)}, got "
                              f"{value!r}")
        if minimum is not None and not all(v >= minimum for v in value):
            raise ConfigError(f"{self.where}.{key}: all entries must be >= {minimum:g}"
                              f"{_u(unit)}, got {value!r}")
        return tuple(float(v) for v in value)

    def mapping(self, key, *, required=False) -> "_Reader":
        value, _ = self._get(key, {}, required)
        return _Reader(value, f"{self.where}.{key}")

    def raw(self, key, default=None):
        value, _ = self._get(key, default, False)
        return value

    def finish(self):
        unknown = sorted(set(self.data) - self.used, key=str)
        if unknown:
            hint = "".join(did_you_mean(k, sorted(self.used)) for k in unknown[:3])
            raise ConfigError(f"{self.where}: unknown key(s) {unknown}{hint}; "
                              f"allowed: {sorted(self.used)}")


def _auto_number(reader, key, *, null=False, **kw):
    """``auto`` (also when the key is absent), ``null`` (None; only when ``null``) or a
    number checked by :meth:`_Reader.number`."""
    if key not in reader.data:
        reader.used.add(key)
        return "auto"
    value = reader.data[key]
    if value == "auto":
        reader.used.add(key)
        return "auto"
    if value is None:
        reader.used.add(key)
        if null:
            return None
        raise ConfigError(f"{reader.where}.{key}: expected a number or 'auto', got null")
    if isinstance(value, str):
        raise ConfigError(f"{reader.where}.{key}: expected a number or 'auto', got {value!r}")
    return reader.number(key, **kw)


def _u(unit):
    return f" [{unit}]" if unit else ""


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
    """

    model: str = "coulomb_viscous"
    offset: bool = False
    load_dependent: bool = False
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
    estimator: str = "wls"              # one of ESTIMATORS
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


def _strategy(name, where):
    """A pre-processing strategy's name; a former name (``pa``) is accepted with a
    DeprecationWarning."""
    if name in PREPROCESSING_ALIASES:
        warnings.warn(f"{where}.identification.preprocessing: '{name}' is the former name of "
                      f"'{PREPROCESSING_ALIASES[name]}'", DeprecationWarning, stacklevel=2)
        return PREPROCESSING_ALIASES[name]
    return name


def _load_joint(item, where) -> JointConfig:
    r = _Reader(item, where)
    name = r.string("name", required=True)
    gear = r.number("gear_ratio", 1.0, positive=True)
    body_frame = r.string("body_frame")
    lim = r.mapping("limits")
    pos = lim.vector("position", 2, unit="rad")
    if pos is not None and pos[0] >= pos[1]:
        raise ConfigError(f"{where}.limits.position: lower {pos[0]} must be below upper {pos[1]}")
    limits = JointLimits(
        position=pos,
        velocity=lim.number("velocity", positive=True, unit="rad/s"),
        acceleration=lim.number("acceleration", positive=True, unit="rad/s^2"),
        effort=lim.number("effort", positive=True, unit="N*m"),
    )
    lim.finish()
    drv = r.mapping("drive")
    rotor = not ("rotor_inertia" in drv.data and drv.data["rotor_inertia"] is None)
    for old in drv.data:
        if old in RENAMED_DRIVE_PARAMETERS:
            raise ConfigError(f"{where}.drive.{old}: drive key '{old}' was renamed to "
                              f"'{RENAMED_DRIVE_PARAMETERS[old]}'")
    drive = {}
    for key in DRIVE_PARAMETERS:
        value = drv.number(key, unit=DRIVE_PARAMETER_UNITS[key],
                           minimum=0.0 if key in NON_NEGATIVE_DRIVE_PARAMETERS else None,
                           positive=key == "stiffness")
        if value is not None:
            drive[key] = value
    drv.finish()
    friction_model = r.string("friction_model", None, choices=FRICTION_MODELS)
    sim_friction = r.raw("simulation_friction")
    if sim_friction is not None:
        sf = _Reader(sim_friction, f"{where}.simulation_friction")
        law = sf.string("model", required=True, choices=("zollo_stribeck", "regressor"))
        coeffs = {"model": law}
        if law == "zollo_stribeck":
            for k in ("f1", "f2", "f3", "f4", "f5", "f6"):
                coeffs[k] = sf.number(k, required=True)
            coeffs["variant"] = sf.string("variant", "velocity",
                                          choices=("velocity", "paper_position"))
        sf.finish()
        sim_friction = coeffs
    r.finish()
    return JointConfig(name=name, gear_ratio=gear, body_frame=body_frame, limits=limits,
                       drive=drive, simulation_friction=sim_friction, rotor=rotor,
                       friction_model=friction_model)


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


def _columns_spec(r, key, n):
    """A CSV column mapping entry: a 1-based first column (int) or one column per joint."""
    value, present = r._get(key, None, False)
    if not present:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    if (isinstance(value, list) and len(value) == n and all(
            isinstance(c, int) and not isinstance(c, bool) and c >= 1 for c in value)):
        return list(value)
    raise ConfigError(f"{r.where}.{key}: expected a 1-based column number or a list of {n} "
                      f"of them, got {value!r}")


def _csv_section(data, where, n) -> dict:
    """The ``csv:`` section, every key type-checked at load (the reader's keyword
    arguments, see :func:`robot_identification.data.read_csv`)."""
    r = _Reader(data, f"{where}.csv")
    hint = csv_zero_based_hint(r.data)
    if hint:
        raise ConfigError(f"{where}.csv.{hint}")
    out = {"preset": r.string("preset"), "delimiter": r.string("delimiter"),
           "time": _columns_spec(r, "time", 1) if not isinstance(r.data.get("time"), list)
           else None}
    if isinstance(r.data.get("time"), list):
        raise ConfigError(f"{where}.csv.time: expected one 1-based column number, got "
                          f"{r.data['time']!r}")
    for key in ("position", "velocity", "torque", "current", "motor_position",
                "motor_velocity", "joint_torque"):
        out[key] = _columns_spec(r, key, n)
    out["drive_gains"] = r.vector("drive_gains", n, unit="N*m/A")
    out["n_joints"] = r.integer("n_joints", minimum=1)
    out["n_columns"] = r.integer("n_columns", minimum=1)
    for key in ("trim_idle", "resample"):
        if key in r.data:
            out[key] = r.boolean(key)
        r.used.add(key)
    out["idle_velocity"] = r.number("idle_velocity", minimum=0.0, unit="rad/s")
    out["idle_margin"] = r.number("idle_margin", minimum=0.0, unit="s")
    out["max_malformed"] = r.number("max_malformed", minimum=0.0)
    names = r.raw("joint_names")
    if names is not None and (not isinstance(names, list) or len(names) != n
                              or not all(isinstance(x, str) for x in names)):
        raise ConfigError(f"{where}.csv.joint_names: expected {n} joint names, got {names!r}")
    out["joint_names"] = names
    r.finish()
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in out.items()
            if v is not None}


def _bag_section(data, where) -> dict:
    """``bag:``: where a rosbag2 recording holds each signal, ``{signal: '/topic/field'}``
    (a JointState field or a DynamicJointState state interface; null: not recorded)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}.bag: expected a mapping of signals {list(BAG_SIGNALS)} to "
                          f"'/topic/field', got {data!r}")
    out = {}
    for key, value in data.items():
        if key not in BAG_SIGNALS:
            raise ConfigError(f"{where}.bag: unknown signal '{key}'; the signals are "
                              f"{list(BAG_SIGNALS)}")
        if value is not None and (not isinstance(value, str) or not value.startswith("/")
                                  or value.count("/") < 2):
            raise ConfigError(f"{where}.bag.{key}: expected '/topic/field' (e.g. "
                              f"'/motor_states/position') or null, got {value!r}")
        out[key] = value
    return out


def _excitation_section(data, where, n) -> dict:
    """``simulation.excitation``: keys, types and choices checked at load (the trajectory
    itself is built by :func:`robot_identification.excitation.trajectory_from_config`)."""
    r = _Reader(data, f"{where}.simulation.excitation")
    out = {}
    if "file" in r.data:
        out["file"] = r.string("file", required=True)
        r.finish()
        return out
    kind = r.string("type", "bspline", choices=("bspline", "fourier"))
    if "type" in r.data:
        out["type"] = kind
    out["seed"] = r.integer("seed", minimum=0)
    scaling = r.string("scaling", "common", choices=("common", "joint"))
    if "scaling" in r.data:
        out["scaling"] = scaling
    out["margin"] = r.number("margin", positive=True)
    if out["margin"] is not None and out["margin"] > 1:
        raise ConfigError(f"{r.where}.margin: the share of the limits used, in (0, 1], got "
                          f"{out['margin']}")
    for key in ("start", "amplitude"):
        value = r.data.get(key)
        if isinstance(value, list):
            out[key] = r.vector(key, n, unit="rad")
        elif value is not None:
            out[key] = r.number(key, unit="rad")
        else:
            r.used.add(key)
    if kind == "bspline":
        out["duration"] = r.number("duration", positive=True, unit="s",
                                   maximum=MAX_EXCITATION_S)
        out["segments"] = r.integer("segments", minimum=2, maximum=MAX_HARMONICS)
    else:
        out["base_frequency"] = r.number("base_frequency", positive=True, unit="Hz")
        out["harmonics"] = r.integer("harmonics", minimum=1, maximum=MAX_HARMONICS)
        out["periods"] = r.integer("periods", minimum=1)
        f0 = out["base_frequency"] or 0.1           # trajectory_from_config's default
        if out["periods"] is not None and out["periods"] / f0 > MAX_EXCITATION_S:
            raise ConfigError(f"{r.where}.periods: {out['periods']} periods of "
                              f"{1 / f0:g} s last {out['periods'] / f0:.3g} s, above "
                              f"{MAX_EXCITATION_S:g} s (1 h)")
    r.finish()
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in out.items()
            if v is not None}


def _estimator_list(value, where) -> tuple:
    """``estimator``: one name or a non-empty list of names from :data:`ESTIMATORS`."""
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or not all(isinstance(v, str) for v in names):
        raise ConfigError(f"{where}.estimator: expected a name or a list of names from "
                          f"{list(ESTIMATORS)}, got {value!r}")
    bad = [v for v in names if v not in ESTIMATORS]
    if bad:
        raise ConfigError(f"{where}.estimator: unknown estimator(s) {bad}"
                          f"{did_you_mean(bad[0], ESTIMATORS)}; choose from {list(ESTIMATORS)}")
    return tuple(dict.fromkeys(names))


def parse_robot_config(data: Any, source: Path | None = None,
                       urdf_path: Path | str | None = None) -> RobotConfig:
    """Validate a robot configuration mapping (already parsed YAML).

    Parameters
    ----------
    data : mapping
        The YAML content.
    source : Path, optional
        File the mapping came from; relative URDF paths resolve against its folder.
    urdf_path : path, optional
        Overrides the ``urdf`` key; a relative path is relative to the working directory
        (the config's ``urdf`` key is relative to the config's folder).

    Raises
    ------
    ConfigError
        On unknown or missing keys, wrong types, or invalid values; the message
        names the file and key.
    """
    where = str(source) if source else "robot config"
    r = _Reader(data, where)
    name = r.string("name", required=True)
    urdf = r.string("urdf")
    path = None
    if urdf_path is not None:             # given by the user: relative to the working directory
        path = _resolved(urdf_path)
    elif urdf is not None:                # in the config: relative to the config's folder
        path = Path(urdf)
        if not path.is_absolute() and source is not None:
            path = _resolved(Path(source).parent / path)
    xacro_args = _xacro_args(r.raw("xacro_args", {}), f"{where}.xacro_args")
    if xacro_args and urdf_path is None and path is not None and path.suffix != ".xacro":
        raise ConfigError(f"{where}.xacro_args: the URDF '{urdf}' is not a .xacro file; "
                          f"xacro arguments apply to a .xacro only")
    gravity = r.vector("gravity", 3, (0.0, 0.0, -9.81), unit="m/s^2")
    model = r.string("model", "rigid", choices=("rigid", "elastic"))
    coupling = r.string("coupling", "complete", choices=("complete", "reduced"))
    damping = r.boolean("damping", False)
    fr = r.mapping("friction")
    friction = FrictionConfig(
        model=fr.string("model", "coulomb_viscous", choices=FRICTION_MODELS),
        offset=fr.boolean("offset", False),
        load_dependent=fr.boolean("load_dependent", False),
        stiction_sharpness=fr.number("stiction_sharpness", 100.0, positive=True, unit="s/rad"),
        stribeck_sharpness=fr.number("stribeck_sharpness", 10.0, positive=True, unit="s/rad"),
    )
    fr.finish()
    joints_raw = r.raw("joints")
    if not isinstance(joints_raw, list) or not joints_raw:
        raise ConfigError(f"{where}.joints: expected a non-empty list of joints, "
                          f"got {joints_raw!r}")
    joints = tuple(_load_joint(j, f"{where}.joints[{i}]") for i, j in enumerate(joints_raw))
    names = [j.name for j in joints]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"{where}.joints: duplicate joint name(s) {dup}")
    idr = r.mapping("identification")
    estimators = _estimator_list(idr.raw("estimator", "wls"), f"{where}.identification")
    ident = IdentificationSettings(
        filter_order=idr.integer("filter_order", 5, minimum=1, maximum=MAX_FILTER_ORDER),
        cutoff_hz=_auto_number(idr, "cutoff_hz", positive=True, unit="Hz", null=True),
        differentiation=idr.string("differentiation", "central", choices=("central", "savgol")),
        savgol_window=idr.number("savgol_window", 0.05, positive=True, unit="s"),
        savgol_order=idr.integer("savgol_order", 3, minimum=2),
        velocity_threshold=idr.number("velocity_threshold", 0.0, minimum=0.0, unit="rad/s"),
        friction_deadband=_auto_number(idr, "friction_deadband", minimum=0.0, unit="rad/s"),
        stop_velocity=_auto_number(idr, "stop_velocity", minimum=0.0, unit="rad/s"),
        friction_presliding=_auto_number(idr, "friction_presliding", positive=True,
                                         unit="rad", null=True),
        drop_reversals=idr.boolean("drop_reversals", True),
        estimator=estimators[0],
        extra_estimators=estimators[1:],
        decimate=idr.integer("decimate", 1, minimum=1),
        preprocessing=_strategy(idr.string("preprocessing", "butterworth", choices=PREPROCESSING
                                           + tuple(PREPROCESSING_ALIASES)), where),
        pa_window=idr.number("pa_window", 0.044, positive=True, unit="s"),
        pa_degree=idr.integer("pa_degree", 1, minimum=0),
        pa_alpha=idr.number("pa_alpha", 3.0, positive=True),
        pa_beta=idr.number("pa_beta", 3.0, positive=True),
        pa_delay=idr.number("pa_delay", None, minimum=0.0, unit="s"),
        prior=idr.string("prior", "nominal"),
        prior_weight=_auto_number(idr, "prior_weight", positive=True),
        huber_threshold=idr.number("huber_threshold", 1.345, positive=True),
        irls_iterations=idr.integer("irls_iterations", 30, minimum=1),
    )
    idr.finish()
    sr = r.mapping("simulation")
    n = len(joints)
    sim = SimulationSettings(
        rate_hz=sr.number("rate_hz", 1000.0, positive=True, unit="Hz"),
        substeps=sr.integer("substeps", 0, minimum=0),
        encoder_counts=sr.integer("encoder_counts", 1_250_000, minimum=0),
        kp=sr.vector("kp", n, unit="N*m/rad", positive=True),
        kd=sr.vector("kd", n, unit="N*m*s/rad", minimum=0.0),
        excitation=_excitation_section(sr.raw("excitation", {}), where, n),
    )
    sr.finish()
    extra = {}
    if "csv" in r.data:
        extra["csv"] = _csv_section(r.raw("csv"), where, n)
    if "description" in r.data:
        extra["description"] = r.string("description")
    if "bag" in r.data:
        extra["bag"] = _bag_section(r.raw("bag"), where)
    if "excitation_file" in r.data:
        ef = Path(r.string("excitation_file"))
        if not ef.is_absolute() and source is not None:
            ef = _resolved(Path(source).parent / ef)
        extra["excitation_file"] = str(ef)
    r.finish()
    if model == "elastic" and friction.load_dependent:
        raise ConfigError(f"{where}.friction.load_dependent: load-dependent Coulomb friction "
                          f"is modelled for rigid arms only (model: rigid)")
    if model == "elastic":
        no_rotor = [j.name for j in joints if not j.rotor]
        if no_rotor:
            raise ConfigError(f"{where}.joints: elastic joints need a motor rotor; "
                              f"rotor_inertia is null for {no_rotor}")
    return RobotConfig(name=name, urdf_path=path, gravity=gravity, model=model,
                       coupling=coupling, damping=damping, friction=friction, joints=joints,
                       identification=ident, simulation=sim, source=source, extra=extra,
                       xacro_args=xacro_args)


def _xacro_args(value, where) -> dict:
    """``xacro_args``: a mapping of argument names to scalars, returned as strings (what
    xacro receives from ``name:=value``; booleans as ``true``/``false``).

    Raises
    ------
    ConfigError
        Not a mapping, a name that is not a string, or a value that is not a scalar.
    """
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a mapping of xacro argument names to values "
                          f"(e.g. {{prefix: 'arm_', use_gripper: false}}), got {value!r}")
    out = {}
    for key, v in value.items():
        if not isinstance(key, str) or not key:
            raise ConfigError(f"{where}: argument name {key!r} is not a string")
        if isinstance(v, bool):
            v = "true" if v else "false"
        elif isinstance(v, (int, float, str)):
            v = str(v)
        else:
            raise ConfigError(f"{where}.{key}: expected a string, number or boolean, got "
                              f"{v!r}")
        out[key] = v
    return out


def _resolved(path) -> Path:
    """``path`` made absolute with symbolic links resolved; a symbolic-link loop stays as it
    is (``Path.resolve`` raised RuntimeError) for the reader to name."""
    return Path(os.path.realpath(path))


def load_robot_config(path: str | Path, urdf_path: str | Path | None = None) -> RobotConfig:
    """Load and validate a robot configuration YAML file.

    Raises
    ------
    ConfigError
        File missing, not YAML, or failing validation (see :func:`parse_robot_config`).
    """
    path = Path(path)
    data = read_yaml_file(path, "robot config", ConfigError)
    return parse_robot_config(data, source=_resolved(path), urdf_path=urdf_path)
