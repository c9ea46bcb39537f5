"""PartitionRDPAccountant: a running RDP account over partitioned DP-SGD mechanisms."""

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import validate_params

from ..utils._deprecation import keyword_only_after, renamed
from ..utils._param_validation import POSITIVE_INT, POSITIVE_REAL
from ..utils._params import store_params
from ._partition_rdp import (
    BIS_RUN,
    ORDERS,
    SPLIT_ROUNDS,
    bis_rdp,
    check_orders,
    poisson_rdp,
    rdp_to_epsilon,
)
from ._rdp_kernels import _sq, split_rdp


class PartitionRDPAccountant(BaseEstimator):
    """Running RDP account over mechanisms with data or model partitioning.

    In the spirit of opacus' ``IAccountant``: compose mechanisms as training runs, read
    epsilon at the end. RDP adds under composition, order by order.

    ``__init__`` only stores ``orders``. As ``partial_fit`` does for an estimator, the
    first ``compose_*`` call (or the first read) validates them and starts the account in
    ``orders_``, ``rdp_`` and ``history_``; every ``compose_*`` call adds to it and returns
    ``self``. :meth:`reset` (or ``set_params``) starts an empty account, and
    :func:`~sklearn.base.clone` gives a fresh accountant with the same orders.

    Parameters
    ----------
    orders : array-like of float, default=None
        RDP orders >= 2; defaults to :func:`default_orders` (2..201 and 50 log-spaced
        orders up to 10,000).

    Attributes
    ----------
    orders_ : ndarray of shape (n_orders,)
        The orders in use (set by the first ``compose_*`` call).
    rdp_ : ndarray of shape (n_orders,)
        Total RDP composed so far.
    history_ : list of tuple
        ``(mechanism, parameters)`` for each ``compose_*`` call, in order.

    See Also
    --------
    bis_rdp, model_split_rdp, find_noise_multiplier

    Notes
    -----
    With opacus, keep your sampler with ``make_private(..., poisson_sampling=False)`` and
    ignore opacus' own epsilon (its accountant assumes Poisson sampling); report
    :meth:`get_epsilon` of this accountant instead.

    Partial model splitting (a split part in ``d`` groups plus a shared part that every
    client updates, each clipped and noised separately) composes per round:
    ``compose_model_split(sigma_split, d, q, R)`` plus
    ``compose_poisson_gaussian(sigma_shared, q, R)`` (or ``compose_gaussian(sigma_shared, R)``
    with full participation). If the chosen part is revealed, or every client updates every
    part, there is no amplification: use the Gaussian / Poisson methods alone.

    Model splitting at a real order between two integers uses the chord of the convex
    function ``(alpha - 1) RDP(alpha)`` through the neighbouring integers (an upper bound);
    orders above 1024 use the unamplified Gaussian bound.

    References
    ----------
    .. [1] A. Dong, W.-N. Chen, A. Ozgur, "Leveraging Randomness in Model and Data
       Partitioning for Privacy Amplification", ICML 2025, arXiv:2503.03043.
    .. [2] I. Mironov, "Renyi Differential Privacy", CSF 2017.

    Examples
    --------
    >>> from sklearn_icml.privacy import PartitionRDPAccountant
    >>> acc = PartitionRDPAccountant()
    >>> acc = acc.compose_balanced_iterations(1.0, num_steps=100, num_selected=10)
    >>> round(acc.get_epsilon(1e-5), 4)
    7.4442
    >>> acc = acc.compose_gaussian(20.0)  # e.g. a noisy release of a statistic
    >>> round(acc.get_epsilon(1e-5), 4)
    7.4492
    """

    _parameter_constraints = {"orders": ORDERS}

    @keyword_only_after(1)
    def __init__(self, *, orders=None):
        store_params(self, locals())

    def _account(self):
        """Start the account at first use; return the orders in use."""
        if not hasattr(self, "rdp_"):
            self._validate_params()
            self.orders_ = check_orders(self.orders)
            self.rdp_ = np.zeros_like(self.orders_)
            self.history_ = []
        return self.orders_

    def _add(self, name, params, rdp):
        self.rdp_ = self.rdp_ + rdp
        self.history_.append((name, params))
        return self

    def reset(self):
        """Forget everything composed so far.

        Returns
        -------
        self : PartitionRDPAccountant
        """
        for attr in ("orders_", "rdp_", "history_"):
            self.__dict__.pop(attr, None)
        return self

    def set_params(self, **params):
        """Set the parameters (see scikit-learn's ``set_params``) and start an empty account.

        Returns
        -------
        self : PartitionRDPAccountant
        """
        super().set_params(**params)
        return self.reset()

    @keyword_only_after(4)
    @validate_params(BIS_RUN, prefer_skip_nested_validation=True)
    def compose_balanced_iterations(
        self, noise_multiplier, num_steps, num_selected, *, num_epochs=1, method="efficient"
    ):
        """Add DP-SGD with balanced iteration subsampling (see :func:`bis_rdp`).

        Each of ``num_epochs`` passes has ``num_steps`` noisy steps, and every sample takes
        part in exactly ``num_selected`` of them (:class:`BalancedIterationSampler`).

        ``method="exact"`` needs ``num_selected`` 1 (real orders are bounded by the chord of
        the neighbouring integer orders) or a tiny ``num_steps`` with integer orders.

        Returns
        -------
        self : PartitionRDPAccountant
        """
        orders = self._account()
        params = dict(
            noise_multiplier=noise_multiplier,
            num_steps=num_steps,
            num_selected=num_selected,
            num_epochs=num_epochs,
            method=method,
        )
        if method == "exact" and num_selected == 1:
            # one of T steps is one of T parts: model splitting, exact at real orders too
            rdp = num_epochs * split_rdp(float(noise_multiplier), int(num_steps), 1.0, orders)
        else:
            rdp = bis_rdp(noise_multiplier, num_steps, num_selected, orders=orders,
                          num_epochs=num_epochs, method=method)
        return self._add("bis", params, rdp)

    compose_bis = renamed(compose_balanced_iterations, "compose_bis")

    @keyword_only_after(3)
    @validate_params(
        {**SPLIT_ROUNDS, "num_parts": [POSITIVE_INT]}, prefer_skip_nested_validation=True
    )
    def compose_model_split(self, noise_multiplier, num_parts, *, sample_rate=1.0, num_rounds=1):
        """Add rounds of model splitting (see :func:`model_split_rdp`).

        Returns
        -------
        self : PartitionRDPAccountant
        """
        orders = self._account()
        sigma, d, q = float(noise_multiplier), int(num_parts), float(sample_rate)
        params = dict(noise_multiplier=sigma, num_parts=d, sample_rate=q, num_rounds=num_rounds)
        return self._add("model_split", params, num_rounds * split_rdp(sigma, d, q, orders))

    def compose_poisson_gaussian(self, noise_multiplier, sample_rate, num_steps):
        """Add Poisson-subsampled Gaussian steps (via ``dp_accounting``, see
        :func:`poisson_rdp`).

        Returns
        -------
        self : PartitionRDPAccountant
        """
        rdp = poisson_rdp(noise_multiplier, sample_rate, num_steps, orders=self._account())
        params = dict(
            noise_multiplier=noise_multiplier, sample_rate=sample_rate, num_steps=num_steps
        )
        return self._add("poisson_gaussian", params, rdp)

    @keyword_only_after(2)
    @validate_params(
        {"noise_multiplier": [POSITIVE_REAL], "count": [POSITIVE_INT]},
        prefer_skip_nested_validation=True,
    )
    def compose_gaussian(self, noise_multiplier, *, count=1):
        """Add ``count`` Gaussian mechanisms of sensitivity 1 (RDP ``alpha/(2 sigma^2)``).

        Returns
        -------
        self : PartitionRDPAccountant
        """
        orders = self._account()
        sigma = float(noise_multiplier)
        params = dict(noise_multiplier=sigma, count=count)
        return self._add("gaussian", params, count * orders / (2.0 * _sq(sigma)))

    def get_rdp(self):
        """Total RDP so far, one value per order (a copy)."""
        self._account()
        return self.rdp_.copy()

    def get_privacy_spent(self, delta):
        """``(epsilon, best_order)`` at ``delta`` (see :func:`rdp_to_epsilon`)."""
        orders = self._account()
        return rdp_to_epsilon(self.rdp_, orders, delta)

    def get_epsilon(self, delta):
        """Epsilon at ``delta`` of everything composed so far."""
        return self.get_privacy_spent(delta)[0]
