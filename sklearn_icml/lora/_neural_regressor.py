"""The ``predict`` of the neural regressors (FlatLoRARegressor, DWMRegressor).

The counterpart of :class:`sklearn_icml.base.NeuralClassifierMixin` for regression, kept
here until it joins it in ``sklearn_icml/base.py``. Imports nothing from torch.
"""

from sklearn.base import RegressorMixin


class NeuralRegressorMixin(RegressorMixin):
    """``predict`` from the outputs of a neural regressor.

    The subclass writes ``_predict_outputs(X) -> ndarray of shape (n_samples, n_outputs)``
    (validating ``X`` and checking that it is fitted) and sets ``_y_1d`` (True when ``y``
    was 1-D in ``fit``; a class attribute where only 1-D targets are accepted).
    """

    def predict(self, X):
        """Predicted target of each row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,) or (n_samples, n_targets)
            1-D when ``y`` was 1-D in ``fit``.
        """
        outputs = self._predict_outputs(X)  # first: it raises NotFittedError when not fitted
        return outputs[:, 0] if self._y_1d else outputs

    def _predict_outputs(self, X):
        raise NotImplementedError
