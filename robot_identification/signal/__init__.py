"""Signal processing of measured motion data.

- :func:`lowpass_filtfilt` -- zero-phase Butterworth low-pass
- :func:`central_difference` -- numerical derivative
- :func:`savgol_derivative` -- Savitzky-Golay smoothing differentiator
- :func:`velocity_mask` -- velocity-threshold sample rejection
"""
from robot_identification.signal._filters import (  # noqa: F401
    central_difference, lowpass_filtfilt, savgol_derivative, velocity_mask)
from robot_identification.signal._polynomial import (  # noqa: F401,E402
    PolynomialApproximation, SavitzkyGolay, jacobi_orthonormal)
