"""Signal processing of measured motion data.

- :func:`lowpass_filtfilt` -- zero-phase Butterworth low-pass (:func:`butter_sos`: its
  sections, designed once per order, cut-off and rate)
- :func:`central_difference` -- numerical derivative
- :func:`savgol_derivative` -- Savitzky-Golay smoothing differentiator
- :func:`velocity_mask` -- velocity-threshold sample rejection
- :func:`near_reversal` -- samples near a velocity sign change
- :class:`PolynomialApproximation`, :class:`SavitzkyGolay` -- causal FIR differentiator banks
- :func:`noise_std`, :func:`noise_floor` (NaN where the signal is smoother than white
  noise: unknown), :func:`robust_std`, :func:`excitation_band`, :func:`signal_band` --
  noise levels and spectra of recorded signals (the automatic settings and the diagnostics);
  :func:`velocity_noise_from_positions` -- whether a measured velocity's noise is that of
  the positions differentiated
"""
from robot_identification.signal._filters import (  # noqa: F401
    butter_sos, central_difference, lowpass_filtfilt, near_reversal, savgol_derivative,
    velocity_mask)
from robot_identification.signal._polynomial import (  # noqa: F401,E402
    PolynomialApproximation, SavitzkyGolay, jacobi_orthonormal)
from robot_identification.signal._spectra import (  # noqa: F401,E402
    DIFFERENTIATED_NOISE_CORRELATION, SIGNAL_NOISE_RATIO, WHITE_NOISE_RATIO, excitation_band,
    noise_floor, noise_std, robust_std, signal_band, velocity_noise_from_positions)
