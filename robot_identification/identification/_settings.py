"""Typed settings of the engine.

The robot YAML's ``identification`` section (:class:`IdentificationSettings`, which may hold
``auto``) is resolved on the recordings into :class:`ResolvedSettings` (numbers only where
the pre-processing and the sample selection need them; :func:`resolve_settings`); each
pre-processing strategy reads its own typed part (:func:`strategy_settings`):
:class:`ButterworthSettings`, :class:`SavgolSettings` or :class:`PolynomialSettings`.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from robot_identification.errors import ConfigError
from robot_identification.model import IdentificationSettings

#: Settings that may be ``auto`` in the robot YAML and are numbers once resolved (the
#: pre-sliding state ``friction_presliding: auto`` is resolved after the estimate, by
#: :func:`~robot_identification.identification.resolve_presliding`).
AUTO_FIELDS = ("cutoff_hz", "friction_deadband", "stop_velocity")


@dataclass(frozen=True)
class ResolvedSettings(IdentificationSettings):
    """Identification settings whose automatic values (:data:`AUTO_FIELDS`) are resolved:
    ``cutoff_hz`` [Hz] a number or None (no filter), ``friction_deadband`` and
    ``stop_velocity`` [rad/s] numbers or one per joint.

    Raises
    ------
    ConfigError
        A field of :data:`AUTO_FIELDS` is still ``auto`` (e.g. ``replace(resolved,
        cutoff_hz='auto')``).
    """

    def __post_init__(self):
        left = [f for f in AUTO_FIELDS if isinstance(getattr(self, f), str)]
        if left:
            raise ConfigError(f"resolved identification settings hold 'auto' for {left}")

    @classmethod
    def of(cls, settings) -> "ResolvedSettings":
        """``settings`` (IdentificationSettings without ``auto`` in :data:`AUTO_FIELDS`) as
        ResolvedSettings."""
        if isinstance(settings, cls):
            return settings
        return cls(**{f.name: getattr(settings, f.name) for f in fields(IdentificationSettings)})


@dataclass(frozen=True)
class ButterworthSettings:
    """``butterworth``: zero-phase Butterworth of order ``filter_order`` at ``cutoff_hz``
    [Hz] (None: no filter), then ``differentiation`` (``central`` or ``savgol`` with
    ``savgol_window`` [s] and ``savgol_order``); every ``decimate``-th sample kept."""

    filter_order: int
    cutoff_hz: float | None
    differentiation: str
    savgol_window: float
    savgol_order: int
    decimate: int = 1


@dataclass(frozen=True)
class SavgolSettings:
    """``savgol``: causal Savitzky-Golay FIR bank, ``window`` [s], polynomial ``order``."""

    window: float
    order: int
    decimate: int = 1


@dataclass(frozen=True)
class PolynomialSettings:
    """``polynomial``: Lomakin & Deutscher's polynomial-approximation FIR bank (eq. 28-37):
    ``window`` T [s], projection ``degree`` N, Jacobi exponents ``alpha``, ``beta``,
    ``delay`` t_d [s] (None: the zero of P_{N+1})."""

    window: float
    degree: int
    alpha: float
    beta: float
    delay: float | None = None
    decimate: int = 1


def strategy_settings(settings):
    """The typed settings of ``settings.preprocessing``.

    Returns
    -------
    ButterworthSettings, SavgolSettings or PolynomialSettings

    Raises
    ------
    ConfigError
        ``butterworth`` with an unresolved ``cutoff_hz: auto`` (resolve first:
        :func:`resolve_settings`), or an unknown strategy.
    """
    name = settings.preprocessing
    dec = int(settings.decimate)
    if name == "butterworth":
        if isinstance(settings.cutoff_hz, str):
            raise ConfigError("cutoff_hz 'auto' is resolved on the recordings first "
                              "(resolve_settings)")
        return ButterworthSettings(settings.filter_order, settings.cutoff_hz,
                                   settings.differentiation, settings.savgol_window,
                                   settings.savgol_order, dec)
    if name == "savgol":
        return SavgolSettings(settings.savgol_window, settings.savgol_order, dec)
    if name == "polynomial":
        return PolynomialSettings(settings.pa_window, settings.pa_degree, settings.pa_alpha,
                                  settings.pa_beta, settings.pa_delay, dec)
    raise ConfigError(f"unknown pre-processing '{name}'")
