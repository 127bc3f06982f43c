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
    trusts : dict
        By estimator name, per base parameter ``{"trust": level, "why": ...}``
        (:func:`robot_identification.diagnostics.parameter_trust`); :attr:`trust` is the
        primary estimate's (empty when not computed).
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
    trusts: dict = field(default_factory=dict)

    @property
    def trust(self) -> list:
        """Trust per base parameter of the primary estimate (see :attr:`trusts`)."""
        return self.trusts.get(self.settings.get("estimator", self.estimate.method), [])

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

    #: A base parameter whose true value contributes less than this fraction of the measured
    #: torque's RMS (|true_k| ||W_k|| / ||y||) is negligible: left out of
    #: ``normalised_mean_error_significant`` (a product of inertia of 6e-9 kg m^2 in a CAD
    #: URDF estimated at 1e-5 is a relative error of 1600 on a term no torque shows).
    NEGLIGIBLE_CONTRIBUTION = 1e-3

    def truth_errors(self, estimator=None):
        """Scale-aware errors against the true parameters (simulated data), beside the NME.

        With ``W_k`` the k-th base column of the observation matrix and ``y`` the measured
        torques (from the normal equations: ||W_k||^2 = sum_j G_j[k, k], ||y||^2 = sum_j c_j):

        - ``torque_weighted_error``: sum_k |est_k - true_k| ||W_k|| / ||y||, each parameter's
          error as the RMS torque it causes, relative to the torque's RMS (dimensionless);
        - ``median_error_std``: median over k of |est_k - true_k| / std_k (in standard
          deviations; finite std only);
        - ``normalised_mean_error_significant``: the NME over the base parameters whose true
          value contributes at least :data:`NEGLIGIBLE_CONTRIBUTION` of the torque's RMS, and
          ``significant``: how many.

        Returns
        -------
        dict or None (no true values or no normal equations)
        """
        scales = self._truth_scales()
        if scales is None:
            return None
        norm, ynorm = scales
        est = self.estimate if estimator is None else self.estimates[estimator]
        known = ~np.isnan(self.true_values)
        if not known.any():
            return None
        tru, val = self.true_values[known], est.values[known]
        err = np.abs(val - tru)
        out = {"torque_weighted_error": float(np.sum(err * norm[known]) / ynorm)}
        std = np.asarray(est.std, dtype=float)[known]
        ok = np.isfinite(std) & (std > 0)
        if ok.any():
            out["median_error_std"] = float(np.median(err[ok] / std[ok]))
        big = np.abs(tru) * norm[known] / ynorm >= self.NEGLIGIBLE_CONTRIBUTION
        out["significant"] = int(big.sum())
        if big.any():
            out["normalised_mean_error_significant"] = float(np.mean(err[big]
                                                                     / np.abs(tru[big])))
        return out

    def _truth_scales(self):
        """(||W_k|| (p,), ||y||) from the normal equations, or None (no true values, no
        equations, or equations of other columns: elastic)."""
        neq = getattr(self, "normal_equations", None)
        if self.true_values is None or neq is None:
            return None
        norm = np.sqrt(np.maximum(np.einsum("jkk->k", np.asarray(neq.G)), 0.0))
        if norm.shape != self.true_values.shape:
            return None
        return norm, float(np.sqrt(max(float(np.sum(neq.c)), 1e-300)))

    def negligible_parameters(self):
        """Simulated data: per base parameter, whether its true value's torque contribution
        |true_k| ||W_k|| / ||y|| is below :data:`NEGLIGIBLE_CONTRIBUTION` (bool (p,); an
        unknown (NaN) true value counts as not negligible), or None where
        :meth:`truth_errors` has no scales (no true values or equations; elastic)."""
        scales = self._truth_scales()
        if scales is None:
            return None
        norm, ynorm = scales
        tru = np.nan_to_num(np.asarray(self.true_values, dtype=float), nan=np.inf)
        return np.abs(tru) * norm / ynorm < self.NEGLIGIBLE_CONTRIBUTION

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
