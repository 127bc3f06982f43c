"""The :class:`Diagnostic` record and its severities."""
from __future__ import annotations

from dataclasses import asdict, dataclass


SEVERITIES = ("info", "warning", "error")


@dataclass(frozen=True)
class Diagnostic:
    """One finding about a result or its data.

    Attributes
    ----------
    code : str
        Stable machine-readable identifier, snake_case (e.g. ``negative_stiffness``).
    severity : {'info', 'warning', 'error'}
        ``error``: the result should not be used as is; ``warning``: part of it is doubtful;
        ``info``: worth knowing.
    message : str
        One line for people, with the numbers (e.g. ``joint6.stiffness = -519 N·m/rad < 0``).
    subject : str
        What it is about (a parameter, joint, body or file name); ``""`` for the whole result.
    """

    code: str
    severity: str
    message: str
    subject: str = ""

    def __post_init__(self):
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, not {self.severity!r}")

    def to_dict(self) -> dict:
        """Plain dict (YAML/JSON-ready): ``code, severity, message, subject``."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Diagnostic":
        """Inverse of :meth:`to_dict`; missing ``subject`` is ``""``."""
        return cls(str(d["code"]), str(d["severity"]), str(d["message"]),
                   str(d.get("subject", "")))

    def __str__(self) -> str:
        where = f" [{self.subject}]" if self.subject else ""
        return f"{self.severity}: {self.code}{where}: {self.message}"


def worst(diagnostics) -> str | None:
    """The highest severity in ``diagnostics`` (``None`` when empty)."""
    ranks = [SEVERITIES.index(d.severity) for d in diagnostics]
    return SEVERITIES[max(ranks)] if ranks else None
