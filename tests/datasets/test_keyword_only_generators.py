"""Generators whose size parameters became keyword-only: positional calls warn, same result."""

import numpy as np
import pytest

from sklearn_icml.datasets import make_multiple_choice_predictions


def test_make_multiple_choice_predictions_options_are_keyword_only():
    with pytest.warns(FutureWarning, match="n_options, accuracies"):
        old = make_multiple_choice_predictions(50, 3, [0.8, 0.5], random_state=0)
    new = make_multiple_choice_predictions(50, n_options=3, accuracies=[0.8, 0.5],
                                           random_state=0)
    for a, b in zip(old, new):
        np.testing.assert_array_equal(a, b)
