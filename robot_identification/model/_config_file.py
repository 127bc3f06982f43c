"""The robot configuration file: typed pydantic v2 models of the YAML, its JSON Schema, and
one-line errors.

:class:`RobotConfigFile` and its sections describe the file as written (keys, types, units,
ranges, choices); :func:`parse_robot_config` validates a parsed YAML mapping with them and
builds the runtime objects of :mod:`._config` (:class:`RobotConfig` and its frozen
dataclasses, which the engine copies with ``dataclasses.replace``). The first problem is
raised as a :class:`~robot_identification.errors.ConfigError` of one line naming the file, the
key path (``robot.yaml.joints[1].drive.viscous``), the problem and a "did you mean" for a
misspelt key or choice; further problems are counted on the same line.
:func:`config_json_schema` is the JSON Schema editors read (``config/robot_config.schema.json``,
``robot-identification config-schema``; config/README.md).

No ``from __future__ import annotations`` here: pydantic reads the annotations, which hold
calls (``_number(...)``).
"""
import os
import typing
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Mapping, Optional, Union

from pydantic import (
    BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator)
from pydantic_core import PydanticCustomError

from robot_identification._yaml import read_yaml_file
from robot_identification.choices import (
    AUTO_ESTIMATOR, ESTIMATOR_CHOICES, PREPROCESSING, PREPROCESSING_ALIASES)
from robot_identification.errors import ConfigError, did_you_mean
from robot_identification.model._config import (
    BAG_SIGNALS, DRIVE_PARAMETER_DESCRIPTIONS, DRIVE_PARAMETER_UNITS,
    FRICTION_MODELS, MAX_EXCITATION_S, MAX_FILTER_ORDER, MAX_HARMONICS,
    PRISMATIC_DRIVE_PARAMETER_UNITS, RENAMED_DRIVE_PARAMETERS,
    FrictionConfig, IdentificationSettings, JointConfig, JointLimits, RobotConfig,
    SimulationSettings, csv_zero_based_hint)

#: Columns of the ``csv:`` section (1-based; a first column or one per joint).
CSV_COLUMNS = ("position", "velocity", "torque", "current", "motor_position",
               "motor_velocity", "joint_torque")


# ------------------------------------------------------------------------------ field types
@dataclass(frozen=True)
class _Say:
    """How an error names a field's expected value and unit (Annotated metadata that pydantic
    keeps and ignores)."""

    expected: str = ""
    unit: str = ""
    count: Optional[int] = None       # a list of this many numbers


def _number(unit="", *, expected="a number", **limits):
    """A finite float (an integer is fine, a boolean or a string is not) within ``limits``
    (pydantic ``gt``, ``ge``, ``le``), in ``unit``."""
    return Annotated[float, Field(allow_inf_nan=False, **limits), _Say(expected, unit)]


def _integer(**limits):
    return Annotated[int, Field(**limits), _Say("an integer")]


def _vector(unit="", length=None, **limits):
    """A list of finite numbers; ``length``: a fixed count, or ``"joints"``: one per
    configured joint (checked by :func:`_joint_counts`)."""
    item = Annotated[float, Field(allow_inf_nan=False, **limits)]
    count = dict(min_length=length, max_length=length) if isinstance(length, int) else {}
    expected = "a list of numbers" + (", one per joint" if length == "joints" else "")
    return Annotated[list[item], Field(**count),
                     _Say(expected, unit, length if isinstance(length, int) else None)]


def _auto(unit, *, null=False, **limits):
    """``auto`` or a number (``null`` too when ``null``)."""
    number = Annotated[float, Field(allow_inf_nan=False, **limits)]
    expected = "a number or 'auto'" + (" or null" if null else "")
    kind = Union[Literal["auto"], number, None] if null else Union[Literal["auto"], number]
    return Annotated[kind, _Say(expected, unit)]


def _described(text, unit=""):
    return f"{text} [{unit}]" if unit else text


def _fail(message, field=None):
    """A validation error whose text is ``message`` (at the model, or at its key ``field``)."""
    return PydanticCustomError("config", "{message}", {"message": message, "field": field})


def _per_joint(value, info, what="numbers"):
    """``value`` (a list) has one entry per configured joint (the validation context's
    ``n_joints``)."""
    n = (info.context or {}).get("n_joints")
    if isinstance(value, list) and n is not None and len(value) != n:
        raise _fail(f"expected {n} {what}, got {len(value)}" if what == "numbers" else
                    f"expected {n} {what}, got {value!r}")
    return value


class _Section(BaseModel):
    """A mapping of the file: unknown keys are refused (with a "did you mean"), a ``null``
    value is the key's default (except :attr:`_nullable` keys, where null means something),
    an empty section (``identification:`` with every line commented out) is all defaults."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    _nullable: ClassVar[frozenset] = frozenset()

    @classmethod
    def _allowed(cls, data) -> list:
        """The keys this mapping may hold (some sections: depending on another key)."""
        return list(cls.model_fields)

    @classmethod
    def _check(cls, data):
        """Checks of the raw mapping before its keys (e.g. renamed keys)."""

    @classmethod
    def _unknown(cls, unknown, allowed) -> str:
        hint = "".join(did_you_mean(k, allowed) for k in unknown[:3])
        return f"unknown key(s) {unknown}{hint}; allowed: {sorted(allowed)}"

    @model_validator(mode="before")
    @classmethod
    def _keys(cls, data):
        if data is None:
            return {}
        if not isinstance(data, Mapping):
            return data                     # pydantic: "expected a mapping"
        cls._check(data)
        given = {k: v for k, v in data.items() if v is not None or k in cls._nullable}
        allowed = cls._allowed(given)
        unknown = sorted((k for k in data if k not in allowed and not (
            data[k] is None and k in cls.model_fields)), key=str)
        if unknown:                         # a misspelt key is refused even when null
            raise _fail(cls._unknown(unknown, allowed))
        return given

    def given(self) -> dict:
        """The keys the file gave, with their values (lists as lists)."""
        return {k: getattr(self, k) for k in type(self).model_fields if k in self.model_fields_set}


def _drive(key, limits):
    unit = DRIVE_PARAMETER_UNITS[key]
    text = (f"{DRIVE_PARAMETER_DESCRIPTIONS[key]} [{unit}; prismatic joints "
            f"{PRISMATIC_DRIVE_PARAMETER_UNITS[key]}]")
    return Optional[_number(unit, **limits)], text


# Field types (named here: pyflakes reads the strings inside an annotation as names)
_VECTOR_RAD_PAIR = _vector("rad", 2)
_NUMBER_RAD_PER_S_POSITIVE = _number("rad/s", gt=0)
_NUMBER_RAD_S2_POSITIVE = _number("rad/s^2", gt=0)
_NUMBER_NM_POSITIVE = _number("N*m", gt=0)
_DRIVE_ROTOR_INERTIA = _drive("rotor_inertia", {"ge": 0})[0]
_DRIVE_STIFFNESS = _drive("stiffness", {"gt": 0})[0]
_DRIVE_DAMPING = _drive("damping", {"ge": 0})[0]
_DRIVE_VISCOUS = _drive("viscous", {"ge": 0})[0]
_DRIVE_COULOMB = _drive("coulomb", {"ge": 0})[0]
_DRIVE_COULOMB_LOAD = _drive("coulomb_load", {"ge": 0})[0]
_DRIVE_STICTION = _drive("stiction", {})[0]
_DRIVE_STRIBECK = _drive("stribeck", {})[0]
_DRIVE_OFFSET = _drive("offset", {})[0]
_NUMBER_S_PER_RAD_POSITIVE = _number("s/rad", gt=0)
_AUTO_HZ_OR_NULL_POSITIVE = _auto("Hz", null=True, gt=0)
_NUMBER_S_POSITIVE = _number("s", gt=0)
_NUMBER_RAD_PER_S_NONNEG = _number("rad/s", ge=0)
_AUTO_RAD_PER_S_NONNEG = _auto("rad/s", ge=0)
_AUTO_RAD_OR_NULL_POSITIVE = _auto("rad", null=True, gt=0)
_NUMBER_S_NONNEG = _number("s", ge=0)
_AUTO_PLAIN_POSITIVE = _auto("", gt=0)
_AUTO_S_NONNEG = _auto("s", ge=0)
_NUMBER_RAD = _number("rad")
_VECTOR_RAD_PER_JOINT = _vector("rad", "joints")
_NUMBER_S_POSITIVE_MAX_1H = _number("s", gt=0, le=MAX_EXCITATION_S)
_NUMBER_HZ_POSITIVE = _number("Hz", gt=0)
_VECTOR_NM_PER_RAD_POSITIVE_PER_JOINT = _vector("N*m/rad", "joints", gt=0)
_VECTOR_NM_S_PER_RAD_NONNEG_PER_JOINT = _vector("N*m*s/rad", "joints", ge=0)
_VECTOR_NM_PER_A_PER_JOINT = _vector("N*m/A", "joints")
_VECTOR_M_S2_TRIPLE = _vector("m/s^2", 3)


# ------------------------------------------------------------------------------ sections
class LimitsSection(_Section):
    """Joint limits (``limits:`` of a joint); prismatic joints in m, m/s, m/s^2, N."""

    position: Optional[_VECTOR_RAD_PAIR] = Field(
        None, description="[lower, upper] [rad], lower < upper")
    velocity: Optional[_NUMBER_RAD_PER_S_POSITIVE] = Field(None, description="[rad/s] > 0")
    acceleration: Optional[_NUMBER_RAD_S2_POSITIVE] = Field(None, description="[rad/s^2] > 0")
    effort: Optional[_NUMBER_NM_POSITIVE] = Field(None, description="[N*m] > 0")

    @model_validator(mode="after")
    def _ordered(self):
        if self.position is not None and self.position[0] >= self.position[1]:
            raise _fail(f"lower {self.position[0]} must be below upper {self.position[1]}",
                        "position")
        return self


class DriveSection(_Section):
    """Nominal drive parameters of a joint (``drive:``; 0 when absent; the simulator's
    truth). Old short keys (``K``, ``fv``, ...) are refused naming the new key."""

    _nullable: ClassVar[frozenset] = frozenset({"rotor_inertia"})
    rotor_inertia: _DRIVE_ROTOR_INERTIA = Field(
        None, description=_drive("rotor_inertia", {})[1] + "; motor side (link-referred = "
        "rotor_inertia * gear_ratio^2); null: the joint has no motor rotor (no rotor column)")
    stiffness: _DRIVE_STIFFNESS = Field(
        None, description=_drive("stiffness", {})[1] + ", > 0 (elastic joints)")
    damping: _DRIVE_DAMPING = Field(None, description=_drive("damping", {})[1])
    viscous: _DRIVE_VISCOUS = Field(None, description=_drive("viscous", {})[1])
    coulomb: _DRIVE_COULOMB = Field(None, description=_drive("coulomb", {})[1])
    coulomb_load: _DRIVE_COULOMB_LOAD = Field(
        None, description=_drive("coulomb_load", {})[1] + " (friction.load_dependent)")
    stiction: _DRIVE_STICTION = Field(None, description=_drive("stiction", {})[1])
    stribeck: _DRIVE_STRIBECK = Field(None, description=_drive("stribeck", {})[1])
    offset: _DRIVE_OFFSET = Field(None, description=_drive("offset", {})[1])

    @classmethod
    def _check(cls, data):
        for old in data:
            if old in RENAMED_DRIVE_PARAMETERS:
                raise _fail(f"drive key '{old}' was renamed to "
                            f"'{RENAMED_DRIVE_PARAMETERS[old]}'", old)


class SimulationFrictionSection(_Section):
    """A friction law for the simulator only (``simulation_friction:`` of a joint)."""

    model: Literal["zollo_stribeck", "regressor"] = Field(
        description="zollo_stribeck: Zollo et al. (2014) eq. 43 with f1..f6; regressor: the "
        "identification model's friction")
    f1: Optional[_number()] = None
    f2: Optional[_number()] = None
    f3: Optional[_number()] = None
    f4: Optional[_number()] = None
    f5: Optional[_number()] = None
    f6: Optional[_number()] = None
    variant: Literal["velocity", "paper_position"] = "velocity"

    @classmethod
    def _allowed(cls, data):
        return ["model"] if data.get("model") == "regressor" else list(cls.model_fields)

    @model_validator(mode="after")
    def _coefficients(self):
        if self.model == "zollo_stribeck":
            missing = [k for k in ("f1", "f2", "f3", "f4", "f5", "f6")
                       if getattr(self, k) is None]
            if missing:
                raise _fail(f"missing required key '{missing[0]}'")
        return self


class JointSection(_Section):
    """One configured joint: drive and transmission data, limits, parameter frame."""

    name: str = Field(description="URDF joint name")
    gear_ratio: _number(gt=0) = Field(
        1.0, description="k_m: motor angle = k_m * theta (elastic, coupling: complete: the data "
        "depend on it; docs/elastic.md#gear-ratio)")
    body_frame: Optional[str] = Field(
        None, description="URDF frame of the body's standard parameters (default: the joint "
        "frame)")
    limits: LimitsSection = Field(default_factory=LimitsSection)
    drive: DriveSection = Field(default_factory=DriveSection)
    friction_model: Optional[Literal[FRICTION_MODELS]] = Field(
        None, description="this joint's friction model (overrides friction.model)")
    simulation_friction: Optional[SimulationFrictionSection] = None


class FrictionSection(_Section):
    """The friction model of the identification regressor (``friction:``)."""

    model: Literal[FRICTION_MODELS] = Field(
        "coulomb_viscous", description="none | viscous | coulomb_viscous | static (Szabó & "
        "Gincsainé 2021, eq. 7-9)")
    offset: bool = Field(False, description="a constant torque offset per joint")
    load_dependent: bool = Field(
        False, description="rigid arms: Coulomb friction f_c + f_l |tau_0| (drive key "
        "coulomb_load; docs/friction.md)")
    stiction: bool = Field(
        False, description="coulomb_viscous: + stiction (2/pi) atan(K_v v) (drive key "
        "stiction; docs/friction.md)")
    stiction_sharpness: _NUMBER_S_PER_RAD_POSITIVE = Field(
        100.0, description="K_v [s/rad]: the static model and friction.stiction")
    stribeck_sharpness: _NUMBER_S_PER_RAD_POSITIVE = Field(
        10.0, description="delta [s/rad], static model only")


class IdentificationSection(_Section):
    """Defaults of ``robot-identification identify`` (``identification:``)."""

    _nullable: ClassVar[frozenset] = frozenset({"cutoff_hz", "friction_deadband",
                                                "stop_velocity", "friction_presliding",
                                                "prior_weight"})
    filter_order: _integer(ge=1, le=MAX_FILTER_ORDER) = Field(
        5, description="zero-phase Butterworth order")
    cutoff_hz: _AUTO_HZ_OR_NULL_POSITIVE = Field(
        "auto", description="Butterworth cut-off [Hz]; null: no filtering; auto: from the "
        "data's spectra (docs/diagnostics.md)")
    differentiation: Literal["central", "savgol"] = "central"
    savgol_window: _NUMBER_S_POSITIVE = Field(0.05, description="[s]")
    savgol_order: _integer(ge=2) = 3
    velocity_threshold: _NUMBER_RAD_PER_S_NONNEG = Field(
        0.0, description="friction rows below it are not used [rad/s]")
    friction_deadband: _AUTO_RAD_PER_S_NONNEG = Field(
        "auto", description="|v| below it: the Coulomb term ramps to 0 [rad/s]; auto: 3 x the "
        "velocity noise after the filter; 0: plain sign(v)")
    stop_velocity: _AUTO_RAD_PER_S_NONNEG = Field(
        "auto", description="|filtered v| below it is a stop [rad/s]; auto: 2 % of each "
        "joint's velocity RMS; 0: reversals only")
    friction_presliding: _AUTO_RAD_OR_NULL_POSITIVE = Field(
        "auto", description="the prediction's Coulomb state: Dahl pre-sliding displacement "
        "[rad]; null: the ramp; auto: chosen on the identification data")
    drop_reversals: bool = Field(
        True, description="drop friction rows near velocity reversals and stops")
    reversal_window: _AUTO_S_NONNEG = Field(
        "auto", description="with drop_reversals: friction rows within this time of a "
        "velocity reversal or stop are dropped [s]; auto: the low-pass filter's settling time "
        "(0.6 / cutoff); 0: only the stop rows")
    estimator: Union[Literal[ESTIMATOR_CHOICES], list[Literal[ESTIMATOR_CHOICES]]] = Field(
        "auto", description="an estimator or a list of them: the first is the primary "
        "estimate, all land in results.yaml; auto (first only): wls or physical, whichever "
        "predicts held-out identification data better (physical on a tie)")
    decimate: _integer(ge=1) = Field(1, description="keep every k-th sample after filtering")
    preprocessing: Literal[PREPROCESSING + tuple(PREPROCESSING_ALIASES)] = Field(
        "butterworth", description="butterworth | savgol | polynomial (pa: its former name)")
    pa_window: _NUMBER_S_POSITIVE = Field(
        0.044, description="polynomial approximation window T [s]")
    pa_degree: _integer(ge=0) = Field(1, description="projection degree N")
    pa_alpha: _number(gt=0) = Field(3.0, description="Jacobi weight exponent")
    pa_beta: _number(gt=0) = Field(3.0, description="Jacobi weight exponent")
    pa_delay: Optional[_NUMBER_S_NONNEG] = Field(
        None, description="t_d [s]; absent: the zero of P_{N+1} (Lomakin-Deutscher)")
    prior: str = Field(
        "nominal", description="nominal (this config's parameters) | none | a YAML file of "
        "standard_parameters (mrls, bounded, physical)")
    prior_weight: _AUTO_PLAIN_POSITIVE = Field(
        "auto", description="physical: weight of the log-det prior; auto: cross-validated on "
        "the identification data where physical is the primary estimate, else 1")
    huber_threshold: _number(gt=0) = Field(
        1.345, description="irls: Huber c in noise standard deviations")
    irls_iterations: _integer(ge=1) = Field(30, description="irls: at most this many passes")

    @field_validator("estimator", mode="before")
    @classmethod
    def _estimators(cls, value):
        names = [value] if isinstance(value, str) else value
        if not isinstance(names, list) or not names or not all(isinstance(v, str)
                                                               for v in names):
            raise _fail(f"expected a name or a list of names from "
                        f"{list(ESTIMATOR_CHOICES)}, got {value!r}")
        bad = [v for v in names if v not in ESTIMATOR_CHOICES]
        if bad:
            raise _fail(f"unknown estimator(s) {bad}{did_you_mean(bad[0], ESTIMATOR_CHOICES)}"
                        f"; choose from {list(ESTIMATOR_CHOICES)}")
        if AUTO_ESTIMATOR in names[1:]:
            raise _fail(f"'{AUTO_ESTIMATOR}' chooses the primary estimate: it can only be the "
                        f"first of the list, got {names}")
        return value


class ExcitationSection(_Section):
    """The excitation trajectory of ``simulate`` and ``demo`` (``simulation.excitation:``):
    a trajectory ``file``, or a random B-spline / Fourier trajectory built by
    :func:`robot_identification.excitation.trajectory_from_config`."""

    file: Optional[str] = Field(None, description="a trajectory file (excite --output); "
                                "no other key then")
    type: Literal["bspline", "fourier"] = "bspline"
    seed: Optional[_integer(ge=0)] = None
    scaling: Literal["common", "joint"] = Field(
        "common", description="common: one factor for all joints into the limits; joint: "
        "each joint into its own")
    margin: Optional[_number(gt=0, le=1)] = Field(
        None, description="the share of the limits used, in (0, 1]")
    start: Optional[Annotated[Union[_NUMBER_RAD, _VECTOR_RAD_PER_JOINT], _Say(
        "a number or a list of numbers, one per joint", "rad")]] = Field(
        None, description="start position [rad]: one for all joints or one per joint")
    amplitude: Optional[Annotated[Union[_NUMBER_RAD, _VECTOR_RAD_PER_JOINT], _Say(
        "a number or a list of numbers, one per joint", "rad")]] = Field(
        None, description="excursion before the scaling into the limits [rad]")
    duration: Optional[_NUMBER_S_POSITIVE_MAX_1H] = Field(
        None, description="bspline: [s]")
    segments: Optional[_integer(ge=2, le=MAX_HARMONICS)] = Field(None, description="bspline")
    base_frequency: Optional[_NUMBER_HZ_POSITIVE] = Field(None, description="fourier: [Hz]")
    harmonics: Optional[_integer(ge=1, le=MAX_HARMONICS)] = Field(None, description="fourier")
    periods: Optional[_integer(ge=1)] = Field(None, description="fourier")

    @classmethod
    def _allowed(cls, data):
        if "file" in data:
            return ["file"]
        own = (("base_frequency", "harmonics", "periods") if data.get("type") == "fourier"
               else ("duration", "segments"))
        return ["type", "seed", "scaling", "margin", "start", "amplitude", *own]

    @field_validator("start", "amplitude")
    @classmethod
    def _joints(cls, value, info):
        return _per_joint(value, info)

    @model_validator(mode="after")
    def _length(self):
        f0 = self.base_frequency or 0.1           # trajectory_from_config's default
        if self.periods is not None and self.periods / f0 > MAX_EXCITATION_S:
            raise _fail(f"{self.periods} periods of {1 / f0:g} s last "
                        f"{self.periods / f0:.3g} s, above {MAX_EXCITATION_S:g} s (1 h)",
                        "periods")
        return self


class SimulationSection(_Section):
    """Simulator and controller settings (``simulation:``)."""

    rate_hz: _NUMBER_HZ_POSITIVE = Field(1000.0, description="control and sampling rate [Hz]")
    substeps: _integer(ge=0) = Field(0, description="RK4 sub-steps per period; 0: automatic")
    encoder_counts: _integer(ge=0) = Field(
        1_250_000, description="encoder counts per revolution; 0: no quantisation")
    kp: Optional[_VECTOR_NM_PER_RAD_POSITIVE_PER_JOINT] = Field(
        None, description="PD gains per joint [N*m/rad]")
    kd: Optional[_VECTOR_NM_S_PER_RAD_NONNEG_PER_JOINT] = Field(
        None, description="PD gains per joint [N*m*s/rad]")
    excitation: ExcitationSection = Field(default_factory=ExcitationSection)

    @field_validator("kp", "kd")
    @classmethod
    def _joints(cls, value, info):
        return _per_joint(value, info)


_COLUMN = Annotated[int, Field(ge=1)]


class CsvSection(_Section):
    """How ``.csv`` recordings of this robot are read (``csv:``; columns count from 1;
    robot_identification.data.read_csv)."""

    preset: Optional[str] = Field(None, description="a named layout (CSV_PRESETS: ur)")
    delimiter: Optional[str] = None
    time: Optional[Annotated[_COLUMN, _Say("one 1-based column number")]] = Field(
        None, description="time column [s]")
    position: Optional[Annotated[Union[_COLUMN, list[_COLUMN]], _Say(
        "a 1-based column number or a list of {n} of them")]] = Field(
        None, description="first column of the joint positions [rad or m], or one per joint")
    velocity: Optional[Annotated[Union[_COLUMN, list[_COLUMN]], _Say(
        "a 1-based column number or a list of {n} of them")]] = Field(
        None, description="joint velocities [rad/s]")
    torque: Optional[Annotated[Union[_COLUMN, list[_COLUMN]], _Say(
        "a 1-based column number or a list of {n} of them")]] = Field(
        None, description="joint (or motor) torques [N*m]")
    current: Optional[Annotated[Union[_COLUMN, list[_COLUMN]], _Say(
        "a 1-based column number or a list of {n} of them")]] = Field(
        None, description="motor currents [A], with drive_gains")
    motor_position: Optional[Annotated[Union[_COLUMN, list[_COLUMN]], _Say(
        "a 1-based column number or a list of {n} of them")]] = Field(
        None, description="elastic arms: link-referred motor positions [rad]")
    motor_velocity: Optional[Annotated[Union[_COLUMN, list[_COLUMN]], _Say(
        "a 1-based column number or a list of {n} of them")]] = Field(
        None, description="elastic arms: link-referred motor velocities [rad/s]")
    joint_torque: Optional[Annotated[Union[_COLUMN, list[_COLUMN]], _Say(
        "a 1-based column number or a list of {n} of them")]] = Field(
        None, description="elastic arms: joint torque sensors [N*m]")
    drive_gains: Optional[_VECTOR_NM_PER_A_PER_JOINT] = Field(
        None, description="torque = gain * current, per joint [N*m/A]")
    n_joints: Optional[_integer(ge=1)] = None
    n_columns: Optional[_integer(ge=1)] = Field(None, description="expected fields per row")
    trim_idle: Optional[bool] = Field(None, description="cut idle segments at both ends")
    idle_velocity: Optional[_NUMBER_RAD_PER_S_NONNEG] = Field(None, description="[rad/s]")
    idle_margin: Optional[_NUMBER_S_NONNEG] = Field(None, description="rest kept [s]")
    resample: Optional[bool] = Field(None, description="irregular time stamps -> uniform grid")
    max_malformed: Optional[_number(ge=0)] = Field(
        None, description="largest tolerated fraction of malformed rows")
    joint_names: Optional[Annotated[list[str], _Say("{n} joint names")]] = None

    @classmethod
    def _check(cls, data):
        hint = csv_zero_based_hint(data)
        if hint:
            key, _, message = hint.partition(": ")
            raise _fail(message, key)

    @field_validator(*CSV_COLUMNS, "drive_gains")
    @classmethod
    def _joints(cls, value, info):
        return _per_joint(value, info)

    @field_validator("joint_names")
    @classmethod
    def _names(cls, value, info):
        return _per_joint(value, info, "joint names")


class BagSection(_Section):
    """Where a rosbag2 recording holds each signal (``bag:``): ``/topic/field``, a JointState
    field or a DynamicJointState interface; null: not recorded (docs/elastic.md)."""

    _nullable: ClassVar[frozenset] = frozenset(BAG_SIGNALS)
    position: Optional[Annotated[str, Field(pattern="^/.*/"), _Say(
        "'/topic/field' (e.g. '/motor_states/position') or null")]] = None
    velocity: Optional[Annotated[str, Field(pattern="^/.*/"), _Say(
        "'/topic/field' (e.g. '/motor_states/position') or null")]] = None
    torque: Optional[Annotated[str, Field(pattern="^/.*/"), _Say(
        "'/topic/field' (e.g. '/motor_states/position') or null")]] = None
    motor_position: Optional[Annotated[str, Field(pattern="^/.*/"), _Say(
        "'/topic/field' (e.g. '/motor_states/position') or null")]] = None
    motor_velocity: Optional[Annotated[str, Field(pattern="^/.*/"), _Say(
        "'/topic/field' (e.g. '/motor_states/position') or null")]] = None
    joint_torque: Optional[Annotated[str, Field(pattern="^/.*/"), _Say(
        "'/topic/field' (e.g. '/motor_states/position') or null")]] = None

    @classmethod
    def _unknown(cls, unknown, allowed):
        return (f"unknown signal '{unknown[0]}'{did_you_mean(unknown[0], BAG_SIGNALS)}; "
                f"the signals are {list(BAG_SIGNALS)}")


_XACRO_VALUE = Annotated[Union[str, int, float, bool], _Say("a string, number or boolean")]


class RobotConfigFile(_Section):
    """A robot configuration file (``config/robots/<name>.yaml``; config/README.md). Units
    SI: rad, rad/s, N*m, kg*m^2 (prismatic joints m, m/s, N, kg)."""

    model_config = ConfigDict(title="robot_identification robot config")
    name: str = Field(description="robot name")
    description: Optional[str] = Field(None, description="free text")
    urdf: Optional[str] = Field(
        None, description="URDF or xacro, relative to this file")
    xacro_args: Optional[Annotated[dict[Annotated[str, Field(min_length=1)], _XACRO_VALUE],
                                   _Say("a mapping of xacro argument names to values (e.g. "
                                        "{prefix: 'arm_', use_gripper: false})")]] = Field(
        None, description=".xacro only: its arguments, as `xacro FILE name:=value`")
    gravity: _VECTOR_M_S2_TRIPLE = Field(
        [0.0, 0.0, -9.81], description="gravity in the base frame [m/s^2]")
    model: Literal["rigid", "elastic"] = Field(
        "rigid", description="rigid | elastic (Zollo et al. 2014)")
    coupling: Literal["complete", "reduced"] = Field(
        "complete", description="elastic only: complete (rotor-link coupling) | reduced "
        "(Spong)")
    damping: bool = Field(False, description="elastic only: joint damping D")
    friction: FrictionSection = Field(default_factory=FrictionSection)
    joints: Annotated[list[JointSection], Field(min_length=1),
                      _Say("a non-empty list of joints")] = Field(
        description="the identified joints, in the order of every vector (others are locked)")
    identification: IdentificationSection = Field(default_factory=IdentificationSection)
    simulation: SimulationSection = Field(default_factory=SimulationSection)
    csv: Optional[CsvSection] = None
    bag: Optional[Annotated[BagSection, _Say(f"a mapping of signals {list(BAG_SIGNALS)} to "
                                             f"'/topic/field'")]] = None
    excitation_file: Optional[str] = Field(
        None, description="a trajectory file, relative to this file")


# ------------------------------------------------------------------------------ errors
#: Error types of a value outside its range (preferred over the type errors of a union's
#: other members: ``cutoff_hz: -1`` says "must be > 0", not "expected 'auto'").
_RANGE = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<",
          "less_than_equal": "<="}
_EXPECTED = {"float_type": "a number", "float_parsing": "a number", "int_type": "an integer",
             "int_parsing": "an integer", "int_from_float": "an integer",
             "bool_type": "true or false", "string_type": "a string", "list_type": "a list",
             "dict_type": "a mapping", "model_type": "a mapping", "model_attributes_type":
             "a mapping"}


def _unwrap(ann):
    """(annotation without Optional and Annotated, the innermost :class:`_Say` or None)."""
    say = None
    while True:
        origin = typing.get_origin(ann)
        if origin is Annotated:
            say = next((m for m in ann.__metadata__ if isinstance(m, _Say)), say)
            ann = typing.get_args(ann)[0]
        elif origin is Union and len([a for a in typing.get_args(ann)
                                      if a is not type(None)]) == 1:
            ann = next(a for a in typing.get_args(ann) if a is not type(None))
        else:
            return ann, say


@dataclass
class _Where:
    """Where an error is: the key path, the field's annotation and hint, the raw value."""

    path: str = ""
    ann: Any = None
    say: Optional[_Say] = None
    raw: Any = None
    item: bool = False          # an entry of a list of numbers: named by its list


def _locate(loc, data) -> _Where:
    w = _Where(ann=RobotConfigFile, raw=data)
    for part in loc:
        bare, _ = _unwrap(w.ann)
        if isinstance(bare, type) and issubclass(bare, BaseModel):
            field = bare.model_fields.get(part) if isinstance(part, str) else None
            if field is None:
                break
            w.path += f".{part}"
            w.raw = w.raw.get(part) if isinstance(w.raw, Mapping) else None
            w.ann = field.annotation
            w.say = _unwrap(field.annotation)[1] or next(
                (m for m in field.metadata if isinstance(m, _Say)), None)
            continue
        origin = typing.get_origin(bare)
        if origin is list and isinstance(part, int):
            inner, say = _unwrap(typing.get_args(bare)[0])
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                w.path += f"[{part}]"
                w.raw = w.raw[part] if isinstance(w.raw, list) and part < len(w.raw) else None
                w.ann, w.say = inner, say
                continue
            w.item = True
            break
        if origin is dict and part != "[key]":
            w.path += f".{part}"
            w.raw = w.raw.get(part) if isinstance(w.raw, Mapping) else None
            w.ann = typing.get_args(bare)[1]
            w.say = _unwrap(w.ann)[1]
            continue
        break                              # a union member's tag: the field names it
    return w


def _shown(value) -> str:
    """A value as the YAML file shows it (``null``, ``true``), else its repr."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def _choices(ann):
    bare, _ = _unwrap(ann)
    return list(typing.get_args(bare)) if typing.get_origin(bare) is Literal else []


def _message(w: _Where, errors, n_joints) -> str:
    """One problem of a key, in the project's words (the same as the hand-written checks'
    before pydantic)."""
    say = w.say or _Say()
    unit = f" [{say.unit}]" if say.unit else ""
    expected = say.expected.replace("{n}", str(n_joints if n_joints is not None else "N"))
    custom = next((e for e in errors if e["type"] == "config"), None)
    if custom is not None:
        return custom["ctx"]["message"]
    first = next((e for e in errors if e["type"] in _RANGE or e["type"] == "finite_number"),
                 errors[0])
    kind, ctx, value = first["type"], first.get("ctx") or {}, first.get("input")
    if w.item:                               # one entry of a list of numbers
        if kind in _RANGE:
            bound = ctx[next(iter(ctx))]
            return f"all entries must be {_RANGE[kind]} {bound:g}{unit}, got {w.raw!r}"
        if kind == "finite_number":
            return f"all entries must be finite, got {w.raw!r}"
        return f"expected {expected or 'a list of numbers'}{unit}, got {_shown(w.raw)}"
    if kind in _RANGE:
        bound = ctx[next(iter(ctx))]
        got = f"{value:g}" if isinstance(value, (int, float)) else _shown(value)
        return f"must be {_RANGE[kind]} {bound:g}{unit}, got {got}"
    if kind == "finite_number":
        return f"must be finite, got {value}"
    if kind in ("too_short", "too_long") and say.count:
        return f"expected {say.count} numbers, got {ctx.get('actual_length')}"
    if len(errors) == 1 and kind == "literal_error":
        choices = _choices(w.ann)
        return (f"must be one of {choices}, got {_shown(value)}"
                f"{did_you_mean(value, choices) if isinstance(value, str) else ''}")
    if kind == "string_pattern_mismatch" or len(errors) > 1 or kind in ("too_short",
                                                                          "too_long"):
        return f"expected {expected or 'another value'}{unit}, got {_shown(value)}"
    what = expected or _EXPECTED.get(kind)
    if what is None:
        return f"{first['msg'][0].lower()}{first['msg'][1:]}, got {_shown(value)}"
    number = what in ("a number", "an integer") and not isinstance(value, (list, dict))
    return (f"expected {what}{unit}, got {_shown(value)}"
            + (f" ({type(value).__name__})" if number and value is not None else ""))


def error_line(exc: ValidationError, data, where, n_joints=None) -> str:
    """The first problem of a validation error as one line: ``<file><key path>: <problem>``,
    and how many more problems the file has, with their key paths."""
    groups = {}
    for e in exc.errors(include_url=False):
        loc = tuple(e["loc"])
        if e["type"] == "missing":
            w = _locate(loc[:-1], data)
            key = f"missing:{w.path}:{loc[-1]}"
            groups.setdefault(key, (w, [dict(e, type="config", ctx={
                "message": f"missing required key '{loc[-1]}'"})]))
            continue
        w = _locate(loc, data)
        field = (e.get("ctx") or {}).get("field") if e["type"] == "config" else None
        if field:
            w.path += f".{field}"
        groups.setdefault(w.path, (w, []))[1].append(e)
    (w, errors), *rest = groups.values()
    line = f"{where}{w.path}: {_message(w, errors, n_joints)}"
    if rest:
        paths = [r[0].path.lstrip(".") or "(top level)" for r in rest]
        line += (f" (and {len(rest)} more problem{'s' if len(rest) > 1 else ''}: "
                 f"{', '.join(paths[:3])}{', ...' if len(paths) > 3 else ''})")
    return line


# ------------------------------------------------------------------------------ loading
def config_json_schema() -> dict:
    """The JSON Schema of a robot configuration file (for editors: config/README.md).

    Per joint vector lengths, ``lower < upper`` and the other checks across keys are the
    loader's, not the schema's."""
    schema = RobotConfigFile.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def validate_config_file(data, where="robot config") -> RobotConfigFile:
    """``data`` (a parsed robot YAML) as a :class:`RobotConfigFile`.

    Raises
    ------
    ConfigError
        One line: ``<where><key path>: <problem>`` (see :func:`error_line`).
    """
    joints = data.get("joints") if isinstance(data, Mapping) else None
    n = len(joints) if isinstance(joints, list) and joints else None
    try:
        return RobotConfigFile.model_validate(data, context={"n_joints": n})
    except ValidationError as exc:
        raise ConfigError(error_line(exc, data, where, n)) from None


def _strategy(name, where):
    """A pre-processing strategy's name; a former name (``pa``) is accepted with a
    DeprecationWarning."""
    if name in PREPROCESSING_ALIASES:
        warnings.warn(f"{where}.identification.preprocessing: '{name}' is the former name of "
                      f"'{PREPROCESSING_ALIASES[name]}'", DeprecationWarning, stacklevel=3)
        return PREPROCESSING_ALIASES[name]
    return name


def _joint(j: JointSection) -> JointConfig:
    lim = j.limits
    sim = j.simulation_friction
    if sim is not None:
        sim = ({"model": sim.model} if sim.model == "regressor" else
               {"model": sim.model, **{k: getattr(sim, k) for k in
                                       ("f1", "f2", "f3", "f4", "f5", "f6")},
                "variant": sim.variant})
    return JointConfig(
        name=j.name, gear_ratio=j.gear_ratio, body_frame=j.body_frame,
        limits=JointLimits(position=None if lim.position is None else tuple(lim.position),
                           velocity=lim.velocity, acceleration=lim.acceleration,
                           effort=lim.effort),
        drive={k: v for k, v in j.drive.given().items() if v is not None},
        simulation_friction=sim,
        rotor=not ("rotor_inertia" in j.drive.model_fields_set
                   and j.drive.rotor_inertia is None),
        friction_model=j.friction_model)


def _identification(s: IdentificationSection, where) -> IdentificationSettings:
    names = tuple(dict.fromkeys([s.estimator] if isinstance(s.estimator, str)
                                else s.estimator))
    return IdentificationSettings(
        filter_order=s.filter_order, cutoff_hz=s.cutoff_hz, differentiation=s.differentiation,
        savgol_window=s.savgol_window, savgol_order=s.savgol_order,
        velocity_threshold=s.velocity_threshold, friction_deadband=s.friction_deadband,
        stop_velocity=s.stop_velocity, friction_presliding=s.friction_presliding,
        drop_reversals=s.drop_reversals, reversal_window=s.reversal_window,
        estimator=names[0], extra_estimators=names[1:],
        decimate=s.decimate, preprocessing=_strategy(s.preprocessing, where),
        pa_window=s.pa_window, pa_degree=s.pa_degree, pa_alpha=s.pa_alpha, pa_beta=s.pa_beta,
        pa_delay=s.pa_delay, prior=s.prior, prior_weight=s.prior_weight,
        huber_threshold=s.huber_threshold,
        irls_iterations=s.irls_iterations)


def _xacro_args(values) -> dict:
    """xacro arguments as xacro receives them from ``name:=value`` (booleans ``true``)."""
    return {k: ("true" if v else "false") if isinstance(v, bool) else str(v)
            for k, v in (values or {}).items()}


def _resolved(path) -> Path:
    """``path`` made absolute with symbolic links resolved; a symbolic-link loop stays as it
    is (``Path.resolve`` raised RuntimeError) for the reader to name."""
    return Path(os.path.realpath(path))


def parse_robot_config(data: Any, source: Optional[Path] = None,
                       urdf_path=None) -> RobotConfig:
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
        On unknown or missing keys, wrong types, or invalid values (the schema of
        :class:`RobotConfigFile`, then the checks across keys); one line naming the file,
        the key path and the problem.
    """
    where = str(source) if source else "robot config"
    doc = validate_config_file(data, where)
    path = None
    if urdf_path is not None:             # given by the user: relative to the working directory
        path = _resolved(urdf_path)
    elif doc.urdf is not None:            # in the config: relative to the config's folder
        path = Path(doc.urdf)
        if not path.is_absolute() and source is not None:
            path = _resolved(Path(source).parent / path)
    xacro_args = _xacro_args(doc.xacro_args)
    if xacro_args and urdf_path is None and path is not None and path.suffix != ".xacro":
        raise ConfigError(f"{where}.xacro_args: the URDF '{doc.urdf}' is not a .xacro file; "
                          f"xacro arguments apply to a .xacro only")
    joints = tuple(_joint(j) for j in doc.joints)
    names = [j.name for j in joints]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"{where}.joints: duplicate joint name(s) {dup}")
    fr = doc.friction
    if doc.model == "elastic" and fr.load_dependent:
        raise ConfigError(f"{where}.friction.load_dependent: load-dependent Coulomb friction "
                          f"is modelled for rigid arms only (model: rigid)")
    if doc.model == "elastic":
        no_rotor = [j.name for j in joints if not j.rotor]
        if no_rotor:
            raise ConfigError(f"{where}.joints: elastic joints need a motor rotor; "
                              f"rotor_inertia is null for {no_rotor}")
    sim = doc.simulation
    extra = {}
    if doc.csv is not None:
        extra["csv"] = {k: v for k, v in doc.csv.given().items() if v is not None}
    if doc.description is not None:
        extra["description"] = doc.description
    if doc.bag is not None:
        extra["bag"] = doc.bag.given()
    if doc.excitation_file is not None:
        ef = Path(doc.excitation_file)
        if not ef.is_absolute() and source is not None:
            ef = _resolved(Path(source).parent / ef)
        extra["excitation_file"] = str(ef)
    return RobotConfig(
        name=doc.name, urdf_path=path, gravity=tuple(doc.gravity), model=doc.model,
        coupling=doc.coupling, damping=doc.damping,
        friction=FrictionConfig(model=fr.model, offset=fr.offset,
                                load_dependent=fr.load_dependent,
                                stiction=fr.stiction,
                                stiction_sharpness=fr.stiction_sharpness,
                                stribeck_sharpness=fr.stribeck_sharpness),
        joints=joints, identification=_identification(doc.identification, where),
        simulation=SimulationSettings(
            rate_hz=sim.rate_hz, substeps=sim.substeps, encoder_counts=sim.encoder_counts,
            kp=None if sim.kp is None else tuple(sim.kp),
            kd=None if sim.kd is None else tuple(sim.kd),
            excitation=sim.excitation.given()),
        source=source, extra=extra, xacro_args=xacro_args)


def load_robot_config(path, urdf_path=None) -> RobotConfig:
    """Load and validate a robot configuration YAML file.

    Raises
    ------
    ConfigError
        File missing, not YAML, or failing validation (see :func:`parse_robot_config`).
    """
    path = Path(path)
    data = read_yaml_file(path, "robot config", ConfigError)
    return parse_robot_config(data, source=_resolved(path), urdf_path=urdf_path)
