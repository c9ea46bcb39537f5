"""The data weighting model: an MLP that turns per-sample features into batch weights."""


import numpy as np
import torch
from sklearn.utils._param_validation import (
    validate_parameter_constraints,
    validate_params,
)
from torch import nn

from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import POSITIVE_INT, POSITIVE_REAL


class WeightingMLP(nn.Module):
    """Small MLP giving each sample of a batch a positive weight; the weights average 1.

    Each sample ``i`` of a batch of ``B`` samples is described by a feature vector ``u_i``
    (for tabular data: standardised ``x_i``, the encoded target, the learner's current loss
    on the sample, optional user features such as a source id). With
    ``use_batch_context=True`` the batch mean ``c`` of the ``u_i`` is appended to every row,
    a permutation-invariant summary through which samples of a batch interact. A score
    ``s_i = MLP([u_i, c])`` (one ReLU hidden layer) becomes the weight

        w = B * softmax(s / temperature),

    so weights are positive and sum to ``B`` (the learning rate of the weighted mean loss
    is unchanged). The output layer starts at zero: an untrained model gives every sample
    weight 1.

    Parameters
    ----------
    n_features : int
        Length of ``u_i``.
    hidden_size : int, default=32
        Width of the hidden layer.
    use_batch_context : bool, default=True
        Append the batch mean of ``u`` to each row.
    temperature : float, default=1.0
        Softmax temperature ``T > 0``; larger values flatten the weights.

    Attributes
    ----------
    hidden : torch.nn.Linear
    out : torch.nn.Linear
        Zero-initialised output layer.

    See Also
    --------
    compute_weights : weights of many samples, batch by batch, as a NumPy array.
    DWMClassifier, DWMRegressor : estimators that train this model by bi-level optimisation.

    References
    ----------
    .. [1] Y. Yu, K. Han, H. Zhou, Y. Tang, K. Huang, Y. Wang, D. Tao, "LLM Data Selection
       and Utilization via Dynamic Bi-level Optimization", ICML 2025, arXiv:2507.16178.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.weighting import WeightingMLP
    >>> dwm = WeightingMLP(3)
    >>> dwm(torch.randn(5, 3))
    tensor([1., 1., 1., 1., 1.], grad_fn=<MulBackward0>)
    """

    _parameter_constraints = {
        "n_features": [POSITIVE_INT],
        "hidden_size": [POSITIVE_INT],
        "use_batch_context": ["boolean"],
        "temperature": [POSITIVE_REAL],
    }

    def __init__(self, n_features, hidden_size=32, use_batch_context=True, temperature=1.0):
        super().__init__()
        # a torch module, not an estimator: its arguments are checked when it is built
        validate_parameter_constraints(
            self._parameter_constraints,
            {
                "n_features": n_features,
                "hidden_size": hidden_size,
                "use_batch_context": use_batch_context,
                "temperature": temperature,
            },
            caller_name=type(self).__name__,
        )
        self.n_features = int(n_features)
        self.use_batch_context = bool(use_batch_context)
        self.temperature = float(temperature)
        n_in = self.n_features * (2 if self.use_batch_context else 1)
        self.hidden = nn.Linear(n_in, int(hidden_size))
        self.out = nn.Linear(int(hidden_size), 1)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def _inputs(self, u):
        if u.dim() != 2 or u.shape[1] != self.n_features:
            raise ValueError(
                f"u must have shape (batch, {self.n_features}). Got shape {tuple(u.shape)} "
                "instead."
            )
        if u.shape[0] == 0:
            raise ValueError(
                "u must hold at least one sample. Got an empty batch (shape "
                f"{tuple(u.shape)}) instead."
            )
        if self.use_batch_context:
            context = u.mean(dim=0, keepdim=True).expand(u.shape[0], -1)
            u = torch.cat([u, context], dim=1)
        return u

    def scores(self, u):
        """Raw scores ``s_i`` of a batch (before the softmax).

        Parameters
        ----------
        u : Tensor of shape (B, n_features)

        Returns
        -------
        s : Tensor of shape (B,)
        """
        return self.out(torch.relu(self.hidden(self._inputs(u)))).squeeze(-1)

    def forward(self, u):
        """Weights ``B * softmax(s / T)`` of one batch: positive, summing to ``B``.

        Parameters
        ----------
        u : Tensor of shape (B, n_features)

        Returns
        -------
        w : Tensor of shape (B,)
        """
        s = self.scores(u)
        return s.shape[0] * torch.softmax(s / self.temperature, dim=0)


@validate_params({"weights": ["array-like"]}, prefer_skip_nested_validation=True)
def effective_sample_size(weights):
    """Kish's effective sample size ``(sum w)^2 / sum w^2`` of a batch of weights.

    Parameters
    ----------
    weights : array-like of shape (n_samples,)
        Non-negative weights.

    Returns
    -------
    ess : float
        Between 1 and ``n_samples`` (0 when every weight is 0).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.weighting import effective_sample_size
    >>> effective_sample_size(np.ones(8)), effective_sample_size([8.0, 0, 0, 0])
    (8.0, 1.0)
    """
    w = np.asarray(weights, dtype=np.float64)
    total = w.sum()
    square = np.square(w).sum()
    if square == 0:
        return 0.0
    return float(total * total / square)


@keyword_only_after(2)
@validate_params(
    {
        "weighting_model": [WeightingMLP],
        "features": ["array-like"],
        "batch_size": [POSITIVE_INT, None],
    },
    prefer_skip_nested_validation=True,
)
def compute_weights(weighting_model, features, *, batch_size=None):
    """Weights of a weighting model for many samples, computed batch by batch.

    The rows of ``features`` are cut, in order, into consecutive batches of ``batch_size``
    (the last one may be smaller); each batch gets its own weights, which average 1 over
    the batch. With ``use_batch_context=True`` a sample's weight depends on its batch, so
    use the batch size the model was trained with.

    Parameters
    ----------
    weighting_model : WeightingMLP
        A (trained) weighting model; it is not modified.
    features : array-like or Tensor of shape (n_samples, n_features)
        The inputs ``u`` of the model, one row per sample.
    batch_size : int or None, default=None
        Rows per batch; None puts all rows in one batch.

    Returns
    -------
    weights : ndarray of shape (n_samples,), float64
        Positive weights, mean 1 within each batch.

    Raises
    ------
    ValueError
        If ``features`` has the wrong width or holds NaN/inf, or ``batch_size < 1``.
    TypeError
        If ``weighting_model`` is not a :class:`WeightingMLP`.

    See Also
    --------
    WeightingMLP : the model.
    DWMClassifier.compute_weights : builds the features from ``X, y`` and the learner.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.weighting import WeightingMLP, compute_weights
    >>> w = compute_weights(WeightingMLP(2), np.zeros((5, 2)), batch_size=2)
    >>> w.round(6).tolist()
    [1.0, 1.0, 1.0, 1.0, 1.0]
    """
    param = next(weighting_model.parameters())
    u = torch.as_tensor(np.asarray(features) if not torch.is_tensor(features) else features)
    u = u.to(device=param.device, dtype=param.dtype)
    if u.dim() != 2 or u.shape[1] != weighting_model.n_features:
        raise ValueError(
            f"features must have shape (n_samples, {weighting_model.n_features}). Got shape "
            f"{tuple(u.shape)} instead."
        )
    if not bool(torch.isfinite(u).all()):
        raise ValueError(
            "features contains NaN or infinity; every value must be finite. Got "
            f"{int((~torch.isfinite(u)).sum())} non-finite value(s) instead."
        )
    n = u.shape[0]
    if batch_size is None:
        batch_size = max(n, 1)
    parts = []
    with torch.no_grad():
        for start in range(0, n, int(batch_size)):
            parts.append(weighting_model(u[start : start + batch_size]).double().cpu().numpy())
    if not parts:
        return np.empty(0)
    return np.concatenate(parts)
