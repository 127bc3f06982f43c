"""Normal equations of recordings with what the engine reports about them."""
from __future__ import annotations

import numpy as np

from robot_identification.estimation import NormalEquations


class RecordingEquations(NormalEquations):
    """:class:`~robot_identification.estimation.NormalEquations` of one or more recordings
    (the sums) and the engine's account of them (built by
    :func:`~robot_identification.identification.recording_normal_equations` and the
    on-line identifier; :func:`~robot_identification.identification.solve` wraps plain
    sums in one).

    Attributes
    ----------
    n_samples, n_input : int
        Regressor samples and raw input samples behind the sums.
    t_regressor : float
        Time spent in the regressor [s].
    reversal_counts : ndarray (2,)
        Used friction rows within the reversal window of a velocity reversal or stop, and
        all used friction rows (the ``coulomb_filter_smear`` diagnostic).
    drives_off : int
        Samples excluded as drives off / braked (every effort exactly 0 while the arm
        moves, with the filter's settling window; the ``drives_off_rows`` diagnostic).
    recordings : list of dict
        Per-recording summaries for the diagnostics
        (:func:`robot_identification.diagnostics.recording_summary`), concatenated.
    true_parameters : dict or None
        Known standard parameters of the data (simulation), kept from the first recording
        when equations are summed.
    preprocessing : dict or None
        The pre-processing strategy and its resolved settings (for results.yaml), kept from
        the first recording.
    spring : SpringSums or None
        The spring equations tau_J = K (theta - q) of an elastic arm with joint torque
        sensors and link encoders (docs/elastic.md); any object with ``+``.
    base : BaseParameters or None
        The columns of these equations where the result's base parameters differ (joint
        stiffness identified outside them and appended); None: the result's.

    All of them add up with ``+=``, so the equations of many recordings are a sum.
    """

    def __init__(self, n_parameters: int, n_groups: int, structure=None):
        super().__init__(n_parameters, n_groups, structure)
        self.n_samples = 0
        self.n_input = 0
        self.t_regressor = 0.0
        self.recordings = []
        self.reversal_counts = np.zeros(2, dtype=np.int64)
        self.drives_off = 0
        self.true_parameters = None
        self.preprocessing = None
        self.spring = None
        self.base = None

    @classmethod
    def of(cls, neq):
        """``neq`` itself when it is RecordingEquations, else its sums with an empty
        account (a plain :class:`NormalEquations`, e.g. of the Monte-Carlo study)."""
        if isinstance(neq, cls):
            return neq
        out = cls(neq.p, neq.groups)
        out += neq
        return out

    def __iadd__(self, other):
        super().__iadd__(other)
        if not isinstance(other, RecordingEquations):
            return self
        self.n_samples += other.n_samples
        self.n_input += other.n_input
        self.t_regressor += other.t_regressor
        self.recordings = list(self.recordings) + list(other.recordings)
        self.reversal_counts += other.reversal_counts
        self.drives_off += other.drives_off
        if not self.true_parameters:
            self.true_parameters = other.true_parameters
        if self.preprocessing is None:
            self.preprocessing = other.preprocessing
        if other.spring is not None:
            self.spring = other.spring if self.spring is None else self.spring + other.spring
        if self.base is None:
            self.base = other.base
        return self
