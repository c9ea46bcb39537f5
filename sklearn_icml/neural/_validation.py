"""Parameter constraints shared by the neural methods (scikit-learn's ``Interval``s)."""

import numbers

import numpy as np
from sklearn.utils._param_validation import Interval

#: A count of at least one (features, context tokens, prompts, heads).
POSITIVE_INT = Interval(numbers.Integral, 1, None, closed="left")
#: A finite number >= 0 (a variance; 0 is noise-free).
NON_NEGATIVE = Interval(numbers.Real, 0, np.inf, closed="left")
#: A finite number > 0.
POSITIVE = Interval(numbers.Real, 0, np.inf, closed="neither")
#: A finite real number (a step size may be negative).
FINITE = Interval(numbers.Real, -np.inf, np.inf, closed="neither")
