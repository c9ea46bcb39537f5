"""Parameter constraints that many classes share, under names that say what they accept.

This module is the one home of shared constraints: a class lists them in its
``_parameter_constraints`` (``"n_bins": [POSITIVE_INT]``, ``"alpha": [POSITIVE_REAL, None]``).
A constraint that only one method uses stays in that method's file, inline or under a name no
other module gives a different meaning (``tests/test_vocabulary.py`` checks this).

The names read as the set they accept: ``INT`` / ``REAL`` is the type, ``POSITIVE`` means > 0,
``NON_NEGATIVE`` >= 0; ``FINITE_`` excludes infinity (the others accept it where the bound is
open-ended); the unit intervals are named by which ends they include. NaN is never accepted.
"""

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval

__all__ = [
    "ANY_REAL",
    "CLOSED_UNIT_INTERVAL",
    "FINITE_NON_NEGATIVE_REAL",
    "FINITE_POSITIVE_REAL",
    "FINITE_REAL",
    "INT_AT_LEAST_TWO",
    "N_JOBS",
    "NON_NEGATIVE_INT",
    "NON_NEGATIVE_REAL",
    "OPEN_UNIT_INTERVAL",
    "POSITIVE_INT",
    "POSITIVE_REAL",
    "UNIT_INTERVAL_WITHOUT_ONE",
    "UNIT_INTERVAL_WITHOUT_ZERO",
]

#: An integer >= 1 (a count, a size, a number of steps).
POSITIVE_INT = Interval(Integral, 1, None, closed="left")
#: An integer >= 0.
NON_NEGATIVE_INT = Interval(Integral, 0, None, closed="left")
#: An integer >= 2 (a number of classes, arms or clusters).
INT_AT_LEAST_TWO = Interval(Integral, 2, None, closed="left")
#: ``n_jobs`` (see :func:`~sklearn_icml.utils._parallel.resolve_n_jobs`): an integer other
#: than 0 (-1 all cores, -2 all but one, ...) or None.
N_JOBS = [POSITIVE_INT, Interval(Integral, None, -1, closed="right"), None]

#: A real > 0. scikit-learn's open upper bound refuses infinity (as does
#: FINITE_POSITIVE_REAL, which says so in its name); pass ``np.inf`` as the bound, closed,
#: where a parameter must accept infinity (EVOAgent's ``cost_limit``).
POSITIVE_REAL = Interval(Real, 0, None, closed="neither")
#: A real >= 0; infinity is refused (see POSITIVE_REAL).
NON_NEGATIVE_REAL = Interval(Real, 0, None, closed="left")
#: A finite real > 0.
FINITE_POSITIVE_REAL = Interval(Real, 0, np.inf, closed="neither")
#: A finite real >= 0.
FINITE_NON_NEGATIVE_REAL = Interval(Real, 0, np.inf, closed="left")
#: Any finite real.
FINITE_REAL = Interval(Real, -np.inf, np.inf, closed="neither")
#: Any real, infinities included (NaN is refused).
ANY_REAL = Interval(Real, None, None, closed="neither")

#: A real in [0, 1] (a probability, a fraction).
CLOSED_UNIT_INTERVAL = Interval(Real, 0, 1, closed="both")
#: A real in (0, 1).
OPEN_UNIT_INTERVAL = Interval(Real, 0, 1, closed="neither")
#: A real in [0, 1).
UNIT_INTERVAL_WITHOUT_ONE = Interval(Real, 0, 1, closed="left")
#: A real in (0, 1].
UNIT_INTERVAL_WITHOUT_ZERO = Interval(Real, 0, 1, closed="right")
