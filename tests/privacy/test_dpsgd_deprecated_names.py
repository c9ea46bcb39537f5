"""DPSGDClassifier's ``lr`` (renamed ``learning_rate`` in 0.3) warns and gives the same fit."""

import numpy as np
import pytest

pytest.importorskip("torch")

from sklearn.datasets import make_classification  # noqa: E402

from sklearn_icml.privacy import DPSGDClassifier  # noqa: E402


def test_dpsgd_lr_is_learning_rate():
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    params = {"noise_multiplier": 1.0, "steps_per_epoch": 10, "num_selected": 2,
              "random_state": 0}
    expected = DPSGDClassifier(**params, learning_rate=0.2).fit(X, y)
    with pytest.warns(FutureWarning, match="`lr` was renamed `learning_rate`"):
        got = DPSGDClassifier(**params, lr=0.2).fit(X, y)
    np.testing.assert_array_equal(got.decision_function(X), expected.decision_function(X))
