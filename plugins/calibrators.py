"""Calibrators: choose the seen-class penalty gamma of the calibrated rule (paper eq. 10).

* ``gamma`` (:class:`GammaCalibrator`): the paper's choice, "gamma ... to maximize the harmonic
  mean" on validation. We maximise H *exactly*: H only changes at the breakpoints of the exact
  seen-unseen curve (``zslbench.metrics``), so evaluating it once per interval between
  breakpoints finds the true maximum, where a grid could step over a narrow optimum.
* ``none`` (:class:`NoCalibrator`): gamma = 0, the uncalibrated nearest-prototype rule, for
  ablations.
"""

from __future__ import annotations

import numpy as np

from zslbench.components import Calibrator
from zslbench.hookspecs import hookimpl
from zslbench.metrics import H_TIE_TOLERANCE, harmonic_mean, seen_unseen_curve


class GammaCalibrator(Calibrator):
    """Pick the gamma that maximises H on the validation scores, by exact search.

    No hyperparameters: the search is exhaustive, so there is no grid or range to set.

    The validation H is a step function of gamma, constant on each interval between consecutive
    breakpoints. We take the interval of highest H and return a gamma strictly inside it:

    * an interval between two breakpoints gives its **midpoint** (our choice: the point farthest
      from both breakpoints, hence the most robust to the shift between validation and test);
    * an unbounded end interval gives a finite gamma **just beyond the extreme breakpoint**, by
      half the mean breakpoint spacing (``Curve.gamma`` of ``zslbench.metrics``). The ends have
      H = 0 (A_U = 0 below all breakpoints, A_S = 0 above), so they are chosen only when H is 0
      everywhere.
    * **ties** (H equal within ``H_TIE_TOLERANCE`` percentage points) go to the interval whose
      gamma is smallest in absolute value, then to the smaller gamma: with nothing in the data to
      prefer one, we calibrate as little as possible (gamma = 0 is the uncalibrated rule).

    Fitted attributes: ``gamma_``; ``H_``, ``A_U_``, ``A_S_`` (validation, percent, at
    ``gamma_``); ``n_intervals_`` (points of the exact curve searched).
    """

    name = "gamma"

    def __init__(self) -> None:
        pass

    def fit(self, scores: np.ndarray, labels: np.ndarray, seen_mask: np.ndarray) -> GammaCalibrator:
        """Search every interval of the validation curve; ``ValueError`` if a group is empty."""
        curve = seen_unseen_curve(scores, labels, seen_mask)
        h = np.atleast_1d(harmonic_mean(curve.A_U, curve.A_S))
        tied = np.flatnonzero(h >= h.max() - H_TIE_TOLERANCE)
        # lexsort: last key is primary -> smallest |gamma|, then smallest gamma.
        j = tied[np.lexsort((curve.gamma[tied], np.abs(curve.gamma[tied])))[0]]
        self.gamma_ = float(curve.gamma[j])
        self.H_ = float(h[j])
        self.A_U_ = float(curve.A_U[j])
        self.A_S_ = float(curve.A_S[j])
        self.n_intervals_ = len(curve)
        return self


class NoCalibrator(Calibrator):
    """gamma = 0: the plain nearest-prototype rule (an ablation; the paper always calibrates)."""

    name = "none"

    def __init__(self) -> None:
        pass

    def fit(self, scores: np.ndarray, labels: np.ndarray, seen_mask: np.ndarray) -> NoCalibrator:
        """Ignore the validation data and set ``gamma_ = 0.0``."""
        self.gamma_ = 0.0
        return self


@hookimpl
def zslbench_calibrators() -> list[type[Calibrator]]:
    return [GammaCalibrator, NoCalibrator]
