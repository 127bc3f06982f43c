"""IdentificationResult: what the engine returns."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from robot_identification.diagnostics import collect_diagnostics
from robot_identification.report import (
    plot_result, result_dataframe, result_html, result_repr, save_result)


@dataclass(repr=False)
class IdentificationResult:
    """Outcome of :func:`robot_identification.identification.identify`.

    Attributes
    ----------
    robot : str
    names, expressions : list of str
        Base parameter names and their expressions in standard parameters.
    estimate : Estimate
        The primary estimate (``settings['estimator']``).
    base : BaseParameters
    true_values : ndarray (p,) or None
        Base parameters of the dataset's true standard parameters, when known; NaN for a
        base parameter involving a standard parameter the dataset gives no true value for
        (diagnostic ``truth_incomplete``).
    row_labels : list of str
        Label of each regressor row group (``joint1`` or ``joint1 link``/``joint1 motor``).
    n_samples, n_used_rows : int
    elapsed : float
        Wall time [s].
    settings : dict
    units : list of str
        Unit of each base parameter.
    normal_equations : RecordingEquations or None
        The summed per-group normal equations (further estimators can start from them).
    diagnostics : list of Diagnostic
        What makes this result doubtful (see :mod:`robot_identification.diagnostics`).
    estimates : dict
        Every estimate computed, by estimator name (the primary one included), each an
        :class:`~robot_identification.estimation.Estimate` with covariance.
    """

    robot: str
    names: list
    expressions: list
    estimate: object
    base: object
    true_values: np.ndarray | None
    row_labels: list
    n_samples: int
    n_used_rows: int
    elapsed: float
    settings: dict = field(default_factory=dict)
    units: list = field(default_factory=list)
    normal_equations: object = None
    diagnostics: list = field(default_factory=list)
    estimates: dict = field(default_factory=dict)

    def normalised_mean_error(self, exclude=(), estimator=None):
        """mean_i |est_i - true_i| / |true_i| (absolute error where true_i = 0).

        The error measure of Zollo et al. (2014), Sec. 6 (reverse-engineered in the
        notes: reproduces their 0.103). ``exclude`` lists drive keys (e.g. ``("coulomb",)``)
        whose base parameters are left out; ``estimator`` picks an estimate of
        :attr:`estimates` (default the primary one). Base parameters with an unknown (NaN)
        true value are left out; None when no true value is known.
        """
        if self.true_values is None:
            return None
        est = self.estimate if estimator is None else self.estimates[estimator]
        keep = [i for i, nm in enumerate(self.names) if nm.rsplit(".", 1)[-1] not in exclude
                and not np.isnan(self.true_values[i])]
        if not keep:
            return None
        values, tru = est.values[keep], self.true_values[keep]
        err = np.abs(values - tru)
        nz = np.abs(tru) > 1e-12
        err[nz] /= np.abs(tru[nz])
        return float(err.mean())

    def with_primary(self, estimator, model):
        """This result with ``estimator`` (one of :attr:`estimates`) as the primary estimate:
        ``estimate``, ``settings['estimator']`` (and its MRLS ``flags`` / ``active_bounds``)
        and the diagnostics that depend on the primary estimate (standard deviations, signs,
        residuals, truth) are those of ``estimator``; the other diagnostics (estimators,
        prior, data, friction state) are kept. One engine call gives every estimator's result
        this way (the identifier node writes one file per estimator).

        Raises
        ------
        KeyError
            ``estimator`` was not computed.
        """
        if estimator == self.settings.get("estimator", self.estimate.method):
            return self
        est = self.estimates[estimator]
        recs = getattr(self.normal_equations, "recordings", ()) or ()
        own = set(collect_diagnostics(model, self, recs))
        settings = {k: v for k, v in self.settings.items()
                    if k not in ("flags", "active_bounds")}
        settings["estimator"] = estimator
        settings.update({k: v for k, v in est.details.items()
                         if k in ("flags", "active_bounds")})
        view = replace(self, estimate=est, settings=settings, diagnostics=[])
        view.diagnostics = collect_diagnostics(model, view, recs) + [
            d for d in self.diagnostics if d not in own]
        return view

    # notebook API (robot_identification.report._notebook)
    def to_dataframe(self):
        """pandas DataFrame, one row per base parameter: expression, unit, estimate, std,
        relative_std [%], true, trust. Raises ImportError without pandas."""
        return result_dataframe(self)

    def plot(self):
        """matplotlib figures: relative std per base parameter (trust colours) and, for
        simulated data, the relative error with +-2 std bars."""
        return plot_result(self)

    def save(self, path, model=None):
        """Write results.yaml to ``path`` (the file other tools read); returns the path."""
        return save_result(self, path, model)

    def _repr_html_(self):
        return result_html(self)

    def __repr__(self):
        """One line: robot, base parameters, estimator, samples, worst diagnostics (the
        dataclass dump ran to thousands of characters in a notebook's plain view)."""
        return result_repr(self)
