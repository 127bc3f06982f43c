import difflib

"""Exception hierarchy of robot_identification, and :func:`did_you_mean` for messages.

Every error the core raises on bad input is an :class:`IdentificationError`
subclass whose message names the offending input, what was expected and, where
possible, the likely fix. The CLI maps these to a one-line error and a non-zero
exit code; the ROS nodes return them as ``success=False, message=...``.
"""


class IdentificationError(Exception):
    """Base class of all errors raised by robot_identification on bad input.

    The message is always one line: line breaks that a quoted value or a library message
    brings in are shown escaped (``\\n``).
    """

    def __str__(self):
        return super().__str__().replace("\r", "\\r").replace("\n", "\\n")


class ConfigError(IdentificationError, ValueError):
    """A robot YAML configuration is malformed (unknown key, wrong type, bad value)."""


class ModelError(IdentificationError, ValueError):
    """A URDF/xacro cannot be turned into the configured robot model."""


class DataError(IdentificationError, ValueError):
    """A dataset is unusable (NaN, mismatched lengths, too few samples, bad units)."""


class ExcitationError(DataError):
    """The data do not excite some base parameters (rank-deficient observation matrix)."""


class DiagnosticError(IdentificationError):
    """The identification finished, but a diagnostic of severity ``error`` says its result
    is wrong (positions in degrees, a reversed joint, swapped columns, ...): the CLI exits
    with :data:`EXIT_DIAGNOSTIC_ERROR` and writes no results file unless ``--force``."""


#: Exit code of the CLI when a result carries an error-severity diagnostic.
EXIT_DIAGNOSTIC_ERROR = 3


def error_diagnostics(diagnostics) -> list:
    """The diagnostics of severity ``error``, in their order."""
    return [d for d in diagnostics if getattr(d, "severity", None) == "error"]


def did_you_mean(word, choices) -> str:
    """``" (did you mean 'x'?)"`` when ``word`` is close to one of ``choices`` (a typo of a
    robot name, config key, estimator), else ``""``; for error messages.

    Close: :func:`difflib.get_close_matches` at ratio 0.6, or a case-insensitive match."""
    choices = [str(c) for c in choices]
    word = str(word)
    folded = [c for c in choices if c.lower() == word.lower() and c != word]
    close = folded or difflib.get_close_matches(word, choices, n=2, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(f"'{c}'" for c in close) + "?)"
