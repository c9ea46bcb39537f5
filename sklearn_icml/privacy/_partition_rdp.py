"""RDP of DP-SGD with balanced iteration subsampling, model splitting and dropout.

The public accountants of Dong, Chen & Ozgur (ICML 2025): each function checks its
arguments and returns the RDP of a whole run at an array of orders (the formulas are in
``_rdp_kernels``); :func:`rdp_to_epsilon` converts RDP to an ``(epsilon, delta)``
guarantee, and :func:`poisson_rdp` gives the Poisson-subsampling baseline through
``dp_accounting``.
"""

import logging

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import StrOptions, validate_params

from ..utils import optional_import
from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import (
    OPEN_UNIT_INTERVAL,
    POSITIVE_INT,
    POSITIVE_REAL,
    UNIT_INTERVAL_WITHOUT_ZERO,
)
from ..utils.validation import check_not_complex
from ._rdp_kernels import (
    bis_add,
    bis_remove_efficient,
    bis_remove_exact,
    finite_rdp,
    split_rdp,
)

ORDERS = ["array-like", None]
#: How an RDP curve is computed: the efficient bounds or the exact formulas.
RDP_METHOD = [StrOptions({"efficient", "exact"})]
#: The parameters of a DP-SGD run with balanced iteration subsampling.
BIS_RUN = {
    "noise_multiplier": [POSITIVE_REAL],
    "num_steps": [POSITIVE_INT],
    "num_selected": [POSITIVE_INT],
    "num_epochs": [POSITIVE_INT],
    "method": RDP_METHOD,
}
#: The parameters of rounds of model splitting.
SPLIT_ROUNDS = {
    "noise_multiplier": [POSITIVE_REAL],
    "sample_rate": [UNIT_INTERVAL_WITHOUT_ZERO],
    "num_rounds": [POSITIVE_INT],
}


@validate_params({"method": RDP_METHOD}, prefer_skip_nested_validation=True)
def default_orders(method="efficient"):
    """The default grid of RDP orders.

    Parameters
    ----------
    method : {"efficient", "exact"}, default="efficient"
        ``"efficient"``: the integers 2..201 and 50 log-spaced orders from 202 to 10,000
        (250 orders). ``"exact"``: the integers 2..256.

    Returns
    -------
    orders : ndarray of shape (n_orders,)
        The orders, increasing.

    Examples
    --------
    >>> from sklearn_icml.privacy import default_orders
    >>> default_orders().shape, default_orders("exact")[[0, -1]]
    ((250,), array([  2., 256.]))
    """
    if method == "efficient":
        return np.concatenate(
            [np.arange(2, 202, dtype=float), np.exp(np.linspace(np.log(202), np.log(1e4), 50))]
        )
    return np.arange(2, 257, dtype=float)


def check_steps(num_steps, num_selected):
    """``num_selected <= num_steps``: a sample takes part in at most every step."""
    if num_selected > num_steps:
        raise ValueError(
            f"num_selected must be <= num_steps={num_steps} (a sample takes part in at most "
            f"every step). Got {num_selected!r} instead."
        )


def _orders_array(orders):
    """``orders`` as a float array, or a TypeError naming what it holds."""
    if sp.issparse(orders):
        raise TypeError(
            "orders must be a 1-D list or array of numbers, not a scipy.sparse matrix; pass "
            f"orders.toarray().ravel(). Got {type(orders).__name__} instead."
        )
    if isinstance(orders, str | bytes):
        raise TypeError(f"orders must be a 1-D list of numbers. Got {orders!r} instead.")
    check_not_complex(orders, "orders")
    try:
        return np.atleast_1d(np.asarray(orders, dtype=float))
    except (TypeError, ValueError):
        raise TypeError(
            "orders must be a 1-D list of real numbers (Renyi orders alpha >= 2). Got "
            f"{orders!r} instead."
        ) from None


def check_orders(orders, *, integer=False, default="efficient"):
    """RDP orders as a 1-D float array, all finite and >= 2 (integers if ``integer``)."""
    if orders is None:
        return default_orders(default)
    arr = _orders_array(orders)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(
            f"orders must be a non-empty 1-D list of numbers. Got {orders!r} instead."
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"orders must be finite. Got {orders!r} instead.")
    if np.any(arr < 2):
        raise ValueError(
            "orders must all be >= 2 (the partitioning bounds hold for alpha >= 2). Got "
            f"min {arr.min()!r} instead."
        )
    if integer and np.any(arr != np.round(arr)):
        bad = arr[arr != np.round(arr)][0]
        raise ValueError(
            "orders must be integers with method='exact' (the exact formula sums over "
            f"integer moments); use method='efficient' for real orders. Got {bad!r} instead."
        )
    return arr


@keyword_only_after(3)
@validate_params(
    {**BIS_RUN, "orders": ORDERS, "direction": [StrOptions({"both", "remove", "add"})]},
    prefer_skip_nested_validation=True,
)
def bis_rdp(
    noise_multiplier,
    num_steps,
    num_selected,
    *,
    orders=None,
    num_epochs=1,
    method="efficient",
    direction="both",
):
    """RDP of DP-SGD with balanced iteration subsampling (each sample in k of T steps).

    Every sample independently takes part in a uniformly random set of exactly
    ``num_selected`` of the ``num_steps`` iterations of one pass (an epoch); each iteration
    adds Gaussian noise of std ``noise_multiplier`` times the clipping norm. The RDP of one
    pass is the larger of the remove and the add direction; passes (which re-draw the
    allocation) compose by addition.

    Parameters
    ----------
    noise_multiplier : float
        Noise std divided by the clipping norm (sigma), > 0.
    num_steps : int
        Iterations per pass, ``T >= 1``.
    num_selected : int
        Iterations each sample takes part in per pass, ``1 <= k <= T``.
    orders : array-like of float, default=None
        RDP orders, all >= 2. Defaults to :func:`default_orders` of ``method``.
    num_epochs : int, default=1
        Number of passes, each with a fresh allocation.
    method : {"efficient", "exact"}, default="efficient"
        ``"efficient"``: the paper's hypergeometric remove bound (``k + 1`` terms per order,
        real orders). ``"exact"``: the exact remove divergence at integer orders (closed form
        for ``k = 1``; enumeration for ``k > 1``, tiny ``T`` only).
    direction : {"both", "remove", "add"}, default="both"
        Which neighbouring relation to bound; ``"both"`` takes the maximum per order.

    Returns
    -------
    rdp : ndarray of shape (n_orders,)
        RDP of the whole run at each order.

    See Also
    --------
    bis_epsilon : the (epsilon, delta) guarantee directly.
    PartitionRDPAccountant : compose with other mechanisms.

    Notes
    -----
    The add direction always uses the paper's closed-form bound (as restated by the
    peer package ``random-allocation``); with ``method="exact"`` the remove direction is
    exact. For ``T = 2, k = 1`` the add bound lies slightly below the exact add
    divergence; in every case checked the exact remove divergence is larger still, so the
    reported maximum remains an upper bound there.

    References
    ----------
    .. [1] A. Dong, W.-N. Chen, A. Ozgur, "Leveraging Randomness in Model and Data
       Partitioning for Privacy Amplification", ICML 2025, arXiv:2503.03043.

    Examples
    --------
    >>> from sklearn_icml.privacy import bis_rdp
    >>> rdp = bis_rdp(1.0, num_steps=100, num_selected=10, orders=[2, 8, 32])
    >>> rdp.round(4)
    array([  1.5018,  15.0526, 129.5178])
    """
    sigma, T, k = float(noise_multiplier), int(num_steps), int(num_selected)
    check_steps(T, k)
    orders = check_orders(orders, integer=method == "exact", default=method)
    rdp = np.full(orders.shape, -np.inf)
    if direction in ("both", "remove"):
        if method == "exact":
            remove = bis_remove_exact(sigma, T, k, orders)
        else:
            remove = bis_remove_efficient(sigma, T, k, orders)
        rdp = np.maximum(rdp, remove)
    if direction in ("both", "add"):
        rdp = np.maximum(rdp, bis_add(sigma, T, k, orders))
    return finite_rdp(num_epochs * rdp)


@keyword_only_after(2)
@validate_params(
    {**SPLIT_ROUNDS, "num_parts": [POSITIVE_INT], "orders": ORDERS},
    prefer_skip_nested_validation=True,
)
def model_split_rdp(noise_multiplier, num_parts, *, orders=None, sample_rate=1.0, num_rounds=1):
    """RDP of training where each sample (client) updates one random part of the model.

    The parameters are split into ``num_parts`` disjoint groups fixed for the run. Each
    round, every participating client (Poisson sampled with ``sample_rate``) picks one part
    uniformly at random, clips its update on that part to the clipping norm and the server
    adds Gaussian noise to every coordinate. The secret choice of part amplifies privacy.

    Parameters
    ----------
    noise_multiplier : float
        Noise std divided by the clipping norm (sigma), > 0.
    num_parts : int
        Number of disjoint parts ``d >= 1``; ``d = 1`` is plain (sub)sampled Gaussian.
    orders : array-like of int, default=None
        Integer RDP orders >= 2; defaults to 2..256.
    sample_rate : float, default=1.0
        Poisson client-sampling rate in (0, 1].
    num_rounds : int, default=1
        Rounds composed.

    Returns
    -------
    rdp : ndarray of shape (n_orders,)
        RDP of the ``num_rounds`` rounds at each order.

    See Also
    --------
    dropout_rdp : dropout with rate 0.5, the case ``num_parts=2``.

    Notes
    -----
    The remove direction is computed exactly, as in Dong, Chen & Ozgur (2025). With full
    participation the add direction bound of :func:`bis_rdp` (``T = d``, ``k = 1``) is also
    applied and the maximum reported; with ``sample_rate < 1`` the remove direction is
    reported, as in the paper and as ``dp_accounting`` does for ``num_parts = 1`` (where it
    dominates).

    The clipping must come AFTER masking: the update restricted to its part must have norm
    at most the clipping norm.

    References
    ----------
    .. [1] A. Dong, W.-N. Chen, A. Ozgur, "Leveraging Randomness in Model and Data
       Partitioning for Privacy Amplification", ICML 2025, arXiv:2503.03043.

    Examples
    --------
    >>> from sklearn_icml.privacy import model_split_rdp, rdp_to_epsilon
    >>> import numpy as np
    >>> orders = np.arange(2, 257)
    >>> [round(rdp_to_epsilon(model_split_rdp(5.0, d, orders=orders, num_rounds=100), orders,
    ...                       1e-5)[0], 2) for d in (1, 3, 8)]
    [10.8, 5.63, 3.22]
    """
    orders = check_orders(orders, integer=True, default="exact")
    rdp = split_rdp(float(noise_multiplier), int(num_parts), float(sample_rate), orders)
    return finite_rdp(num_rounds * rdp)


@keyword_only_after(1)
@validate_params({**SPLIT_ROUNDS, "orders": ORDERS}, prefer_skip_nested_validation=True)
def dropout_rdp(noise_multiplier, *, orders=None, sample_rate=1.0, num_rounds=1):
    """RDP of training with dropout rate 0.5 whose mask stays secret (Corollary 3.7).

    With rate 0.5 a mask and its complement are equally likely, so a client's update lives
    on one of two complementary halves: the bound of :func:`model_split_rdp` with
    ``num_parts=2``.

    Parameters
    ----------
    noise_multiplier, orders, sample_rate, num_rounds
        As in :func:`model_split_rdp`: sigma, the integer orders (default 2..256), the
        Poisson client-sampling rate (default 1) and the rounds composed (default 1).

    Returns
    -------
    rdp : ndarray of shape (n_orders,)
        ``model_split_rdp(noise_multiplier, 2, ...)``.

    See Also
    --------
    model_split_rdp : the general disjoint splitting.

    Notes
    -----
    Only the rate 0.5 is analysed by Dong, Chen & Ozgur ("Leveraging Randomness in Model
    and Data Partitioning for Privacy Amplification", ICML 2025, Corollary 3.7): a mask and
    its complement are then equally likely. Other dropout rates have no bound here.

    Examples
    --------
    >>> from sklearn_icml.privacy import dropout_rdp, model_split_rdp
    >>> import numpy as np
    >>> bool(np.allclose(dropout_rdp(2.0, orders=[2, 3]), model_split_rdp(2.0, 2, orders=[2, 3])))
    True
    """
    return model_split_rdp(
        noise_multiplier, 2, orders=orders, sample_rate=sample_rate, num_rounds=num_rounds
    )


@validate_params(
    {"rdp": ["array-like"], "orders": ["array-like"], "delta": [OPEN_UNIT_INTERVAL]},
    prefer_skip_nested_validation=True,
)
def rdp_to_epsilon(rdp, orders, delta):
    """Convert RDP values to an (epsilon, delta) guarantee.

    Uses the conversion of ``dp_accounting`` (and of opacus ``get_privacy_spent``)::

        eps = min_alpha rdp(alpha) + log((alpha-1)/alpha) - (log(delta) + log(alpha))/(alpha-1)

    clipped below at 0 (orders whose RDP already guarantees ``delta`` by the KL bound give 0).

    Parameters
    ----------
    rdp : array-like of shape (n_orders,)
        RDP at each order, >= 0.
    orders : array-like of shape (n_orders,)
        The orders, > 1.
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    epsilon : float
        The smallest epsilon over the orders.
    best_order : float
        The order that attains it.

    Examples
    --------
    >>> from sklearn_icml.privacy import rdp_to_epsilon
    >>> eps, order = rdp_to_epsilon([0.5, 1.0, 2.0], [2, 4, 8], delta=1e-5)
    >>> round(eps, 4), order
    (3.2141, 8.0)
    """
    rdp = np.atleast_1d(np.asarray(rdp, dtype=float))
    orders = np.atleast_1d(np.asarray(orders, dtype=float))
    if rdp.shape != orders.shape or rdp.ndim != 1:
        raise ValueError(
            f"rdp and orders must be 1-D of the same length. Got shapes {rdp.shape} and "
            f"{orders.shape} instead."
        )
    if np.any(np.isnan(rdp)) or np.any(rdp < 0):
        raise ValueError(
            f"rdp must hold non-negative numbers. Got NaN or negative values in {rdp!r} instead."
        )
    if not np.any(np.isfinite(rdp)):
        raise ValueError(f"rdp must be finite at one order at least. Got {rdp!r} instead.")
    if not np.all(np.isfinite(orders)) or np.any(orders <= 1):
        raise ValueError(f"orders must be finite and > 1. Got min {orders.min()!r} instead.")
    with np.errstate(over="ignore", invalid="ignore"):
        eps = rdp + np.log1p(-1.0 / orders) - np.log(delta * orders) / (orders - 1)
        kl_enough = delta**2 + np.expm1(-rdp) > 0  # delta <= sqrt(1 - exp(-KL)) already
    eps = np.where(kl_enough, 0.0, eps)
    eps = np.where(np.isnan(eps), np.inf, eps)
    best = int(np.argmin(eps))
    return float(max(eps[best], 0.0)), float(orders[best])


@keyword_only_after(4)
@validate_params({**BIS_RUN, "delta": [OPEN_UNIT_INTERVAL]}, prefer_skip_nested_validation=True)
def bis_epsilon(
    noise_multiplier, num_steps, num_selected, delta, *, num_epochs=1, method="efficient"
):
    """Epsilon of DP-SGD with balanced iteration subsampling at a given delta.

    Parameters
    ----------
    noise_multiplier, num_steps, num_selected
        Sigma, ``T`` and ``k``, as in :func:`bis_rdp`.
    delta : float
        Target delta in (0, 1).
    num_epochs, method
        As in :func:`bis_rdp` (default 1 pass, ``"efficient"``).

    Returns
    -------
    epsilon : float
        The guarantee, both directions, over the default orders of ``method``.

    See Also
    --------
    bis_rdp, find_noise_multiplier

    References
    ----------
    .. [1] A. Dong, W.-N. Chen, A. Ozgur, "Leveraging Randomness in Model and Data
       Partitioning for Privacy Amplification", ICML 2025, arXiv:2503.03043.

    Examples
    --------
    >>> from sklearn_icml.privacy import bis_epsilon
    >>> round(bis_epsilon(1.0, num_steps=100, num_selected=10, delta=1e-5), 4)
    7.4442
    """
    orders = default_orders(method)
    rdp = bis_rdp(noise_multiplier, num_steps, num_selected, orders=orders,
                  num_epochs=num_epochs, method=method)
    return rdp_to_epsilon(rdp, orders, delta)[0]


@keyword_only_after(3)
@validate_params(
    {
        "noise_multiplier": [POSITIVE_REAL],
        "sample_rate": [UNIT_INTERVAL_WITHOUT_ZERO],
        "num_steps": [POSITIVE_INT],
        "orders": ORDERS,
    },
    prefer_skip_nested_validation=True,
)
def poisson_rdp(noise_multiplier, sample_rate, num_steps, *, orders=None):
    """RDP of the Poisson-subsampled Gaussian mechanism, from ``dp_accounting``.

    The baseline of the paper: each sample takes part in each step independently with
    probability ``sample_rate``. Computed by the ``dp_accounting`` RDP accountant
    (``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(sigma)), T)``).

    Parameters
    ----------
    noise_multiplier : float
        Noise std divided by the clipping norm, > 0.
    sample_rate : float
        Inclusion probability in (0, 1].
    num_steps : int
        Steps composed.
    orders : array-like of float, default=None
        RDP orders >= 2; defaults to :func:`default_orders`.

    Returns
    -------
    rdp : ndarray of shape (n_orders,)
        RDP at each order; ``inf`` at the (large, fractional) orders where
        ``dp_accounting``'s series does not converge, which the conversion then skips.

    Examples
    --------
    >>> from sklearn_icml.privacy import poisson_rdp, rdp_to_epsilon, default_orders
    >>> rdp = poisson_rdp(1.0, 0.1, 100)  # doctest: +SKIP
    >>> round(rdp_to_epsilon(rdp, default_orders(), 1e-5)[0], 2)  # doctest: +SKIP
    7.97
    """
    sigma, q = float(noise_multiplier), float(sample_rate)
    orders = check_orders(orders)
    dpa = optional_import("dp_accounting", "privacy")
    accountant = dpa.rdp.RdpAccountant(orders=[float(a) for a in orders])
    event = dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma))
    absl_logger = logging.getLogger("absl")
    level = absl_logger.level
    absl_logger.setLevel(logging.ERROR)  # dp_accounting logs each order it cannot evaluate
    try:
        accountant.compose(dpa.SelfComposedDpEvent(event, int(num_steps)))
    finally:
        absl_logger.setLevel(level)
    rdp = np.asarray(accountant.rdp, dtype=float)
    if np.any(np.isnan(rdp)) or not np.any(np.isfinite(rdp)):
        raise FloatingPointError(
            "dp_accounting could not evaluate any order. Got "
            f"noise_multiplier={sigma!r} and sample_rate={q!r} instead."
        )
    return rdp
