"""CAPA (chance adjusted probabilistic agreement) between multiple-choice models.

Goel et al., "Great Models Think Alike and this Undermines AI Oversight", ICML 2025.
Every model output is flattened into one float array holding all items' option vectors back
to back, with ``offsets`` marking where each item starts; ragged option counts then cost
nothing extra and every reduction is one ``np.add.reduceat``.
"""

import numbers
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.utils._param_validation import validate_params

from ..utils.validation import check_finite, check_int_vector, check_not_complex

# below this, 1 - c_exp is at the level of rounding error and kappa is meaningless
_UNDEFINED_MARGIN = 1e-12
_ROW_SUM_ATOL = 1e-6


@dataclass(frozen=True)
class _Outputs:
    """One model's outputs on N items, flattened.

    ``values`` holds probabilities (or logits) of all options of all items; ``choices``
    holds hard predictions when the model only gave those (then ``values`` is None).
    """

    values: np.ndarray | None
    choices: np.ndarray | None
    n_options: np.ndarray
    offsets: np.ndarray


def _offsets(n_options):
    offsets = np.zeros(n_options.shape[0] + 1, dtype=np.int64)
    np.cumsum(n_options, out=offsets[1:])
    return offsets


def _is_hard_labels(proba):
    if isinstance(proba, np.ndarray) and proba.dtype != object:
        return proba.ndim == 1
    if isinstance(proba, Sequence) and not isinstance(proba, str | bytes):
        return len(proba) > 0 and all(np.ndim(item) == 0 for item in proba)
    return np.ndim(proba) == 1 and not hasattr(proba, "__len__")


def _as_outputs(proba, name, n_options=None):
    """Validate one model's outputs and flatten them, without copying the caller's data."""
    if isinstance(proba, str | bytes) or proba is None:
        raise TypeError(
            f"{name} must be an (N, k) array or a sequence of N 1-D arrays. "
            f"Got {type(proba).__name__} instead."
        )
    if hasattr(proba, "to_numpy"):  # pandas
        proba = proba.to_numpy()
    if isinstance(proba, np.ndarray):
        check_not_complex(proba, name)  # the cast to float64 would drop the imaginary part

    if _is_hard_labels(proba):
        if n_options is None:
            raise ValueError(
                f"{name} holds hard labels (a 1-D array of option indices); pass "
                "n_options (an int, or one int per item) so the number of options per "
                "item is known."
            )
        choices = check_int_vector(proba, name)
        k = np.asarray(n_options)
        k = np.full(choices.shape[0], k) if k.ndim == 0 else k
        k = check_int_vector(k, "n_options", length=choices.shape[0])
        _check_option_counts(k, "n_options")
        check_int_vector(choices, name, low=0, high=k)
        return _Outputs(values=None, choices=choices, n_options=k, offsets=_offsets(k))

    if isinstance(proba, np.ndarray) and proba.dtype != object:
        if proba.ndim != 2:
            raise ValueError(
                f"{name} must be 2-D (N items, k options) or a sequence of 1-D arrays; "
                f"got an array of shape {proba.shape} instead."
            )
        values = np.asarray(proba, dtype=np.float64).ravel()
        k = np.full(proba.shape[0], proba.shape[1], dtype=np.int64)
    else:
        # A ragged sequence: lengths and one concatenation, so numpy never builds an object
        # array and a million small items cost one pass in C.
        values, k = _concatenate_ragged(proba, name)
    if k.shape[0] == 0:
        raise ValueError(f"{name} is empty; at least one item is required.")
    _check_option_counts(k, f"{name} option count")
    check_finite(values, name)
    return _Outputs(values=values, choices=None, n_options=k, offsets=_offsets(k))


def _concatenate_ragged(proba, name):
    try:
        k = np.fromiter(map(len, proba), dtype=np.int64)
    except TypeError:
        bad = next(i for i, item in enumerate(proba) if np.ndim(item) != 1)
        raise ValueError(
            f"{name}[{bad}] must be a 1-D vector of option scores; got "
            f"{np.asarray(proba[bad])!r} instead."
        ) from None
    if k.shape[0] == 0:
        return np.empty(0, dtype=np.float64), k
    try:
        values = np.concatenate(proba)
    except ValueError:
        values = None
    if values is None or values.ndim != 1 or values.shape[0] != k.sum():
        bad = next(i for i, item in enumerate(proba) if np.ndim(item) != 1)
        raise ValueError(
            f"{name}[{bad}] must be a 1-D vector of option scores; got shape "
            f"{np.shape(proba[bad])} instead."
        )
    if values.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold numbers; got dtype {values.dtype} instead.")
    return values.astype(np.float64, copy=False), k


def _check_option_counts(k, name):
    if np.any(k < 2):
        bad = int(np.flatnonzero(k < 2)[0])
        raise ValueError(
            f"{name} is {k[bad]} at item {bad}; every item needs at least 2 options."
        )


def _segment_softmax(values, offsets):
    starts = offsets[:-1]
    sizes = np.diff(offsets)
    shifted = values - np.repeat(np.maximum.reduceat(values, starts), sizes)
    expd = np.exp(shifted)
    return expd / np.repeat(np.add.reduceat(expd, starts), sizes)


def _check_probabilities(values, offsets, name):
    if np.any(values < 0):
        raise ValueError(
            f"{name} has negative probabilities; pass from_logits=True for raw scores."
        )
    sums = np.add.reduceat(values, offsets[:-1])
    bad = np.flatnonzero(np.abs(sums - 1.0) > _ROW_SUM_ATOL)
    if bad.size:
        raise ValueError(
            f"{name}[{bad[0]}] sums to {sums[bad[0]]!r}, not 1 (tolerance {_ROW_SUM_ATOL}); "
            "probabilities are never renormalised silently. Pass from_logits=True for raw "
            "scores."
        )


def _segment_argmax(values, offsets):
    """Index of each item's largest value within the item; ties go to the lowest index."""
    sizes = np.diff(offsets)
    item_max = np.repeat(np.maximum.reduceat(values, offsets[:-1]), sizes)
    position = np.arange(values.shape[0], dtype=np.int64)
    position = np.where(values == item_max, position, values.shape[0])
    return np.minimum.reduceat(position, offsets[:-1]) - offsets[:-1]


def _prepare(y_true, probas, names, *, discrete, from_logits, n_options):
    """Validate all inputs; return (y, n_options, offsets, list of flat vectors or choices).

    In the discrete mode each model is reduced to its chosen option per item; otherwise to
    its flat probability vector.
    """
    outputs = [_as_outputs(p, name, n_options) for p, name in zip(probas, names)]
    n_items = outputs[0].n_options.shape[0]
    for out, name in zip(outputs, names):
        if out.n_options.shape[0] != n_items:
            raise ValueError(
                f"{names[0]} and {name} cover different numbers of items: "
                f"{n_items} and {out.n_options.shape[0]}."
            )
    k = outputs[0].n_options
    for out, name in zip(outputs[1:], names[1:]):
        if not np.array_equal(out.n_options, k):
            bad = int(np.flatnonzero(out.n_options != k)[0])
            raise ValueError(
                f"item {bad} has {k[bad]} options in {names[0]} but {out.n_options[bad]} "
                f"in {name}; both models must score the same options of each item."
            )
    y = check_int_vector(y_true, "y_true")
    if y.shape[0] != n_items:
        raise ValueError(
            f"y_true has {y.shape[0]} items but the model outputs have {n_items}; "
            "they must describe the same items."
        )
    if y.shape[0] == 0:
        raise ValueError("y_true is empty; at least one item is required.")
    check_int_vector(y, "y_true", low=0, high=k)

    offsets = outputs[0].offsets
    reduced = []
    for out, name in zip(outputs, names):
        if out.choices is not None:
            if not discrete:
                raise ValueError(
                    f"{name} holds hard labels, which only the discrete mode can use; "
                    "pass discrete=True or give probability vectors."
                )
            reduced.append(out.choices)
            continue
        values = out.values
        if from_logits:
            values = _segment_softmax(values, offsets)
        else:
            _check_probabilities(values, offsets, name)
        reduced.append(_segment_argmax(values, offsets) if discrete else values)
    return y, k, offsets, reduced


def _prepare_pair(y_true, proba_a, proba_b, *, discrete, from_logits, n_options):
    """:func:`_prepare` for the two models of :func:`capa_score` and :func:`error_consistency`."""
    return _prepare(
        y_true,
        [proba_a, proba_b],
        ["proba_a", "proba_b"],
        discrete=discrete,
        from_logits=from_logits,
        n_options=n_options,
    )


def _kappa(c_obs, c_exp):
    if 1.0 - c_exp < _UNDEFINED_MARGIN:
        warnings.warn(
            f"chance agreement c_exp = {c_exp!r} is 1 (to within {_UNDEFINED_MARGIN}): "
            "kappa is undefined and returned as nan.",
            RuntimeWarning,
            stacklevel=3,
        )
        return np.nan
    return (c_obs - c_exp) / (1.0 - c_exp)


def _chance_agreement(pbar_a, pbar_b, mean_inv_wrong):
    # grouped so that swapping a and b gives the same bits
    return pbar_a * pbar_b + mean_inv_wrong * ((1.0 - pbar_a) * (1.0 - pbar_b))


_N_OPTIONS = [numbers.Integral, "array-like", None]
#: The labels and the outputs of the two models compared.
_PAIR = {"y_true": ["array-like"], "proba_a": ["array-like"], "proba_b": ["array-like"]}
#: How the models' outputs are read.
_OUTPUT_FORMAT = {"discrete": ["boolean"], "from_logits": ["boolean"], "n_options": _N_OPTIONS}


@validate_params(
    {**_PAIR, **_OUTPUT_FORMAT, "return_components": ["boolean"]},
    prefer_skip_nested_validation=True,
)
def capa_score(
    y_true,
    proba_a,
    proba_b,
    *,
    discrete=False,
    from_logits=False,
    n_options=None,
    return_components=False,
):
    """Chance adjusted probabilistic agreement (CAPA, kappa_p) between two models.

    Parameters
    ----------
    y_true : array-like of shape (n_items,)
        Index of the correct option of each item.
    proba_a, proba_b : array-like of shape (n_items, k) or sequence of n_items 1-D arrays
        Each model's probability vector over the options of each item; a sequence allows
        items with different numbers of options. With ``discrete=True`` a 1-D integer array
        of chosen option indices is accepted too (then ``n_options`` is required).
    discrete : bool, default=False
        Use hard choices (argmax, ties to the lowest index): observed agreement is the
        fraction of items where both pick the same option.
    from_logits : bool, default=False
        Inputs are raw scores; a softmax over each item's options is taken first.
    n_options : int or array-like of shape (n_items,), default=None
        Number of options per item; needed only for hard-label inputs.
    return_components : bool, default=False
        Also return the parts of the formula.

    Returns
    -------
    kappa : float
        CAPA in (-inf, 1]; nan (with a RuntimeWarning) when chance agreement is 1.
    components : dict
        Only if ``return_components``: ``c_obs``, ``c_exp``, ``pbar_a``, ``pbar_b`` and
        ``mean_inv_wrong``.

    See Also
    --------
    capa_matrix : CAPA between every pair of M models at once.
    error_consistency : the correctness-only kappa of Geirhos et al. (2020).

    Notes
    -----
    ``kappa_p = (c_obs - c_exp) / (1 - c_exp)`` with the observed agreement ``c_obs`` (the
    mean inner product of the two probability vectors) and the chance agreement ``c_exp``
    of two independent models of the same accuracies, whose probability off the correct
    option is spread evenly over the wrong ones [1]_. Where [1]_ leaves cases open, this
    implementation returns nan with a RuntimeWarning when ``c_exp`` is 1 (kappa is 0/0),
    breaks argmax ties of the discrete mode towards the lowest option index, and refuses
    probability vectors that do not sum to 1 (within 1e-6) instead of renormalising them.

    References
    ----------
    .. [1] S. Goel et al., "Great Models Think Alike and this Undermines AI Oversight",
       ICML 2025, arXiv:2502.04313.
    .. [2] R. Geirhos, K. Meding and F. A. Wichmann, "Beyond accuracy: quantifying
       trial-by-trial behaviour of CNNs and humans by measuring error consistency",
       NeurIPS 2020.

    Examples
    --------
    >>> from sklearn_icml.metrics import capa_score
    >>> y = [0, 1, 2, 1]
    >>> a = [[.7, .2, .1], [.1, .8, .1], [.3, .3, .4], [.5, .5]]
    >>> b = [[.6, .3, .1], [.2, .2, .6], [.1, .1, .8], [.9, .1]]
    >>> round(capa_score(y, a, b), 7)
    0.006237
    >>> round(capa_score(y, a, b, discrete=True), 7)
    0.5428571
    """
    y, k, offsets, (a, b) = _prepare_pair(
        y_true, proba_a, proba_b, discrete=discrete, from_logits=from_logits,
        n_options=n_options,
    )
    if discrete:
        c_obs = np.mean(a == b)
        pbar_a, pbar_b = np.mean(a == y), np.mean(b == y)
    else:
        starts = offsets[:-1]
        c_obs = np.mean(np.add.reduceat(a * b, starts))
        pbar_a, pbar_b = np.mean(a[starts + y]), np.mean(b[starts + y])
    mean_inv_wrong = np.mean(1.0 / (k - 1.0))
    c_exp = _chance_agreement(pbar_a, pbar_b, mean_inv_wrong)
    kappa = float(_kappa(c_obs, c_exp))
    if not return_components:
        return kappa
    components = {
        "c_obs": float(c_obs),
        "c_exp": float(c_exp),
        "pbar_a": float(pbar_a),
        "pbar_b": float(pbar_b),
        "mean_inv_wrong": float(mean_inv_wrong),
    }
    return kappa, components


@validate_params({**_PAIR, "n_options": _N_OPTIONS}, prefer_skip_nested_validation=True)
def error_consistency(y_true, proba_a, proba_b, *, n_options=None):
    """Error consistency (Geirhos et al., 2020): kappa on whether each model is right.

    Parameters
    ----------
    y_true : array-like of shape (n_items,)
        Index of the correct option of each item.
    proba_a, proba_b : array-like of shape (n_items, k), sequence of 1-D arrays, or 1-D ints
        Probabilities (reduced to their argmax) or hard choices.
    n_options : int or array-like, default=None
        Needed only for hard-label inputs.

    Returns
    -------
    kappa : float
        nan (with a RuntimeWarning) when both models are always right, or always wrong.

    Examples
    --------
    >>> from sklearn_icml.metrics import error_consistency
    >>> error_consistency([0, 1, 2, 1], [0, 1, 2, 0], [0, 2, 2, 0], n_options=[3, 3, 3, 2])
    0.5
    """
    y, _, _, (a, b) = _prepare_pair(
        y_true, proba_a, proba_b, discrete=True, from_logits=False, n_options=n_options
    )
    right_a, right_b = a == y, b == y
    acc_a, acc_b = right_a.mean(), right_b.mean()
    c_obs = np.mean(right_a == right_b)
    c_exp = acc_a * acc_b + (1.0 - acc_a) * (1.0 - acc_b)
    return float(_kappa(c_obs, c_exp))


@validate_params(
    {"y_true": ["array-like"], "probas": ["array-like"], **_OUTPUT_FORMAT},
    prefer_skip_nested_validation=True,
)
def capa_matrix(y_true, probas, *, discrete=False, from_logits=False, n_options=None):
    """CAPA between every pair of M models.

    All M outputs are flattened into one (M, sum k_i) matrix, so observed agreement for all
    pairs is one matrix product: 100 models x 10,000 items x 4 options takes milliseconds.

    Parameters
    ----------
    y_true : array-like of shape (n_items,)
        Index of the correct option of each item.
    probas : sequence of M model outputs
        Each as accepted by :func:`capa_score`.
    discrete, from_logits, n_options
        As in :func:`capa_score`.

    Returns
    -------
    matrix : ndarray of shape (M, M)
        Symmetric; entry (a, b) equals ``capa_score(y_true, probas[a], probas[b])``. The
        diagonal is self-CAPA, below 1 for soft probabilities.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.metrics import capa_matrix
    >>> y = [0, 1, 1, 0]
    >>> one_hot = np.eye(2)
    >>> p = [one_hot[[0, 1, 0, 0]], one_hot[[1, 1, 0, 0]], np.full((4, 2), 0.5)]
    >>> capa_matrix(y, p)
    array([[1. , 0.5, 0. ],
           [0.5, 1. , 0. ],
           [0. , 0. , 0. ]])
    """
    if isinstance(probas, np.ndarray) and probas.dtype != object and probas.ndim == 3:
        probas = list(probas)
    if not isinstance(probas, Sequence) or len(probas) < 1:
        raise ValueError(
            "probas must be a non-empty sequence of model outputs, one per model. "
            f"Got {probas!r} instead."
        )
    names = [f"probas[{m}]" for m in range(len(probas))]
    y, k, offsets, reduced = _prepare(
        y_true, list(probas), names, discrete=discrete, from_logits=from_logits,
        n_options=n_options,
    )
    n_items = y.shape[0]
    starts = offsets[:-1]
    if discrete:
        # one-hot rows make the discrete agreement the same matrix product
        flat = np.zeros((len(reduced), offsets[-1]))
        for m, choice in enumerate(reduced):
            flat[m, starts + choice] = 1.0
    else:
        flat = np.stack(reduced)
    c_obs = flat @ flat.T / n_items
    pbar = flat[:, starts + y].mean(axis=1)
    mean_inv_wrong = np.mean(1.0 / (k - 1.0))
    c_exp = _chance_agreement(pbar[:, None], pbar[None, :], mean_inv_wrong)
    undefined = 1.0 - c_exp < _UNDEFINED_MARGIN
    if np.any(undefined):
        warnings.warn(
            f"chance agreement is 1 for {int(undefined.sum())} model pair(s); their CAPA is "
            "undefined and returned as nan.",
            RuntimeWarning,
            stacklevel=2,
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        matrix = np.where(undefined, np.nan, (c_obs - c_exp) / (1.0 - c_exp))
    # the matrix product can differ from its transpose in the last bit
    return (matrix + matrix.T) / 2.0
