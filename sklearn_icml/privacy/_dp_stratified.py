"""DPStratifiedSampler: differentially private stratified sampling with the optimal design.

Chen, Pasupathy & Awan, "Optimal Survey Design for Private Mean Estimation", ICML 2025.
Each stratum ``h`` is sampled without replacement (``n_h`` of ``N_h``) and releases its
sample sum plus noise; sampling amplifies privacy, so the noise of a stratum sampled at rate
``r_h`` is calibrated to the nominal budget ``eps_h = log(1 + (exp(eps) - 1) / r_h)`` and
every individual ends with the same final guarantee ``eps``. The design minimises the
variance of the private stratified mean over integer sample sizes with ``sum n_h = n``
(see ``_allocation``).
"""

import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.preprocessing import OrdinalEncoder
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions
from sklearn.utils.validation import check_is_fitted, column_or_1d

from ..utils import check_random_state
from ..utils._deprecation import REMOVED_IN, keyword_only_after
from ..utils._param_validation import POSITIVE_INT, POSITIVE_REAL
from ..utils._params import store_params
from ..utils._random import MAX_SEED
from ..utils.validation import validate_input
from ._allocation import (
    _Design,
    check_sizes,
    check_stds,
    check_total,
    equal_allocation,
    rounded_allocation,
    solve,
)
from ._amplification import nominal_budgets
from ._mechanisms import (
    NOISE_BACKEND,
    _discrete_laplace_draw,
    opendp_release,
    resolve_noise_backend,
    warn_numpy_fallback,
)
from ._validation import MECHANISM, range_bounds, range_width


class DPStratifiedSampler(BaseEstimator):
    """Differentially private stratified sampling with the variance-optimal design.

    Every stratum ``h`` of a population with public sizes ``N_h`` is sampled without
    replacement (``n_h`` units) and releases its sample sum plus noise calibrated to the
    *nominal* budget ``eps_h = log(1 + (exp(epsilon) - 1) N_h / n_h)``: the sampling
    amplifies it back to ``epsilon`` for every individual (parallel composition across the
    disjoint strata). The sample sizes minimise the variance of the resulting unbiased
    estimate of the population mean (:func:`optimal_allocation`) unless another
    ``allocation`` is asked for.

    Parameters
    ----------
    epsilon : float, default=1.0
        Final privacy budget of one release, the same for every individual.
    mechanism : {"laplace", "dlap", "tulap"}, default="laplace"
        Noise added to each stratum's sample sum: Laplace (real data), discrete Laplace
        (integer data and range) or untruncated Tulap (0/1 data, ``data_range`` of width 1).
    total_sample_size : int or float, default=100
        Total sample size ``n``; a float in (0, 1] is a fraction of the population
        (rounded half up), ``1.0`` being a census.
    data_range : (float, float), default=(0.0, 1.0)
        Values are clipped into ``[lower, upper]`` before summing (with a warning giving
        the count); the width ``upper - lower`` is the sensitivity of a stratum sum.
    allocation : {"optimal", "neyman", "proportional", "equal"}, default="optimal"
        How ``n`` is split between strata. ``"optimal"`` and ``"neyman"`` use
        ``stratum_stds`` (a worst-case value when it is None, see below).
    min_per_stratum : int, default=1
        Least sample size of a stratum (2 if within-stratum variances are wanted too).
    stratum_stds : array-like of shape (n_strata,), dict or None, default=None
        Public (prior or pilot) standard deviations of the strata, in the order of
        ``classes_`` or as ``{label: std}``. They are never estimated from the private data.
        None, with ``allocation="optimal"`` or ``"neyman"``, gives every stratum the
        largest std a value in ``data_range`` can have, ``(upper - lower) / 2`` (half the
        units at each end): a worst-case prior that needs no data. With equal stds
        ``"neyman"`` is ``"proportional"`` and ``"optimal"`` still trades the sampling
        variance against the noise; pass real priors for a better design.
    random_state : int, RandomState instance or None, default=None
        Drives the samples, and the noise when it is drawn with numpy. The generator is
        created in ``fit``/``allocate`` and then advances, so two releases never reuse a
        noise draw; refit to replay.
    noise_backend : {"auto", "opendp", "numpy"}, default="auto"
        Sampler of the noise. ``"opendp"``: OpenDP's measurements, hardened against
        floating point attacks (needs the ``privacy`` extra); OpenDP draws from the
        operating system's CSPRNG, so ``random_state`` then drives the samples only and
        the noise never replays. ``"numpy"``: numpy's samplers driven by ``random_state``,
        reproducible, for research and simulation. ``"auto"``: numpy if ``random_state``
        is not None (a seed asks for a replayable release), otherwise OpenDP if installed,
        otherwise numpy with a warning at every release.

    Attributes
    ----------
    classes_ : ndarray of shape (n_strata,) or (n_strata, n_features_in_)
        Stratum labels (rows of label combinations for several label columns).
    n_strata_ : int
        Number of strata ``H``.
    stratum_sizes_ : ndarray of int64 of shape (n_strata,)
        ``N_h``.
    stratum_stds_ : ndarray of shape (n_strata,) or None
        ``S_h`` used for the design: the given ones, the worst-case ``(upper - lower) / 2``
        for optimal/neyman without them, None for proportional/equal without them.
    weights_ : ndarray of shape (n_strata,)
        ``W_h = N_h / N``.
    total_sample_size_ : int
        ``n`` after resolving a fraction.
    sample_sizes_ : ndarray of int64 of shape (n_strata,)
        ``n_h``.
    sampling_rates_ : ndarray of shape (n_strata,)
        ``n_h / N_h``.
    nominal_epsilons_ : ndarray of shape (n_strata,)
        Budgets ``eps_h`` the noise of each stratum is calibrated to.
    noise_scales_ : ndarray of shape (n_strata,)
        Laplace scale ``Delta / eps_h`` on the sum, or the discrete Laplace ``beta``
        (``exp(-eps_h / Delta)``; Tulap: ``exp(-eps_h)``).
    expected_variance_ : float or None
        Design variance of the estimate (None without ``stratum_stds``).
    variance_components_ : ndarray of shape (n_strata, 2) or None
        Per stratum, the sampling and the noise parts of ``expected_variance_``.
    noise_backend_ : {"opendp", "numpy"}
        The sampler the releases draw their noise with (``noise_backend`` resolved).
    last_sample_indices_ : ndarray of int64
        Row indices drawn by the last ``sample`` or ``estimate_mean`` call.
    n_features_in_ : int
        Number of label columns seen in ``fit``.
    feature_names_in_ : ndarray of str
        Column names, when ``fit`` got a DataFrame with string column names.

    See Also
    --------
    optimal_allocation : the design alone.
    design_variance : the variance of any design.

    Notes
    -----
    Each call of :meth:`estimate_mean` is one ``epsilon``-DP release; ``k`` releases on
    the same population cost ``k * epsilon`` (sequential composition). The sample must
    stay secret: amplification relies on nobody knowing who was drawn, so a production
    release leaves ``random_state`` None. The noise is drawn by OpenDP
    (``noise_backend="opendp"``, the default without a seed when OpenDP is installed),
    whose samplers resist the floating point attack on numpy's (Mironov 2012): each
    stratum's sum goes through OpenDP's Laplace measurement at scale ``noise_scales_``
    (``Delta / eps_h``; its privacy map must give back ``nominal_epsilons_``), discrete
    Laplace on integers, and Tulap as that discrete Laplace release plus a uniform from the
    operating system's CSPRNG. The sample itself is drawn with numpy's generator either way.

    References
    ----------
    .. [1] Y.-W. Chen, R. Pasupathy, J. A. Awan, "Optimal Survey Design for Private Mean
       Estimation", ICML 2025, arXiv:2501.18121.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.privacy import DPStratifiedSampler
    >>> groups = np.repeat(["a", "b", "c"], [20000, 20000, 1000])
    >>> sampler = DPStratifiedSampler(epsilon=1.0, total_sample_size=300,
    ...                               stratum_stds=[0.02, 0.5, 0.5], random_state=0)
    >>> sampler.fit(groups).sample_sizes_
    array([ 28, 259,  13])
    >>> print(f"{sampler.expected_variance_:.4e}")
    2.5398e-04
    >>> y = np.random.default_rng(0).uniform(size=groups.shape[0])
    >>> est = sampler.estimate_mean(groups, y)
    >>> bool(abs(est - y.mean()) < 0.1)
    True
    """

    _parameter_constraints = {
        "epsilon": [POSITIVE_REAL],
        "mechanism": MECHANISM,
        "total_sample_size": [POSITIVE_INT, Interval(RealNotInt, 0, 1, closed="right")],
        "data_range": [tuple, list],
        "allocation": [StrOptions({"optimal", "neyman", "proportional", "equal"})],
        "min_per_stratum": [POSITIVE_INT],
        "stratum_stds": ["array-like", dict, None],
        "random_state": ["random_state"],
        "noise_backend": NOISE_BACKEND,
    }

    def __init__(
        self,
        *,
        epsilon=1.0,
        mechanism="laplace",
        total_sample_size=100,
        data_range=(0.0, 1.0),
        allocation="optimal",
        min_per_stratum=1,
        stratum_stds=None,
        random_state=None,
        noise_backend="auto",
    ):
        store_params(self, locals())

    # ------------------------------------------------------------------ design

    @keyword_only_after(2)
    def allocate(self, stratum_sizes, *, stratum_stds=None):
        """Design the survey from the stratum sizes alone (no labels).

        Parameters
        ----------
        stratum_sizes : array-like of int of shape (n_strata,)
            Public sizes ``N_h``; the strata are labelled ``0 .. n_strata - 1``.
        stratum_stds : array-like of shape (n_strata,), default=None
            Overrides the ``stratum_stds`` parameter.

        Returns
        -------
        self : DPStratifiedSampler
            With the design attributes set; ``sample`` then takes integer labels.
        """
        self._validate_params()
        sizes = check_sizes(stratum_sizes)
        self.classes_ = np.arange(sizes.shape[0])
        self._label_encoder = None
        stds = self.stratum_stds if stratum_stds is None else stratum_stds
        self._allocate(sizes, stds)
        for attr in ("n_features_in_", "feature_names_in_"):
            if hasattr(self, attr):
                delattr(self, attr)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Read the strata from the population's labels and design the survey.

        Parameters
        ----------
        X : array-like of shape (N,) or (N, n_label_columns)
            Public stratum label of every unit of the population (the sampling frame).
            With several columns, each distinct row (say region x age band) is a stratum.
        y : None
            Ignored. The design never looks at the private values; pass ``stratum_stds``.

        Returns
        -------
        self : DPStratifiedSampler
            The fitted sampler.
        """
        labels = self._validate_labels(X, reset=True)
        encoder = OrdinalEncoder(
            dtype=np.int64, handle_unknown="use_encoded_value", unknown_value=-1
        )
        try:
            codes = encoder.fit_transform(labels)
        except TypeError as exc:
            if "uniformly strings or numbers" not in str(exc):
                raise
            kinds = sorted({type(v).__name__ for v in np.asarray(labels, dtype=object).ravel()})
            raise TypeError(
                "X (the stratum labels) mixes types in one column, so the strata cannot be "
                "sorted: the argument must be all strings or all numbers in each column "
                f"(e.g. X.astype(str)). Got labels of types {kinds!r} instead."
            ) from None
        categories = encoder.categories_
        class_codes, counts = np.unique(codes, axis=0, return_counts=True)
        self._label_encoder = encoder
        self._class_codes = class_codes
        if labels.shape[1] == 1:
            self.classes_ = categories[0][class_codes[:, 0]]
        else:
            cols = [categories[j][class_codes[:, j]] for j in range(labels.shape[1])]
            same = len({c.dtype for c in cols}) == 1
            self.classes_ = np.column_stack(cols) if same else np.array(
                [tuple(row) for row in zip(*cols)], dtype=object
            ).reshape(len(class_codes), -1)
        self._allocate(counts.astype(np.int64), self.stratum_stds)
        return self

    def _stds_in_class_order(self, stds):
        if not isinstance(stds, dict):
            return check_stds(stds, self.classes_.shape[0])
        keys = (
            self.classes_.tolist()
            if self.classes_.ndim == 1
            else [tuple(row) for row in self.classes_.tolist()]
        )
        missing = [k for k in keys if k not in stds]
        if missing:
            raise ValueError(
                "stratum_stds must give one std per stratum label. Got no entry for the "
                f"strata {missing[:5]!r} instead."
            )
        return check_stds([stds[k] for k in keys], len(keys))

    def _allocate(self, sizes, stds):
        mechanism, eps, n_min = self.mechanism, float(self.epsilon), self.min_per_stratum
        lo, hi = range_bounds(self.data_range)
        width = range_width((lo, hi), mechanism)
        total = self.total_sample_size
        if isinstance(total, numbers.Real) and not isinstance(total, numbers.Integral):
            total = int(np.floor(total * sizes.sum() + 0.5))
            if total < 1:
                raise ValueError(
                    f"total_sample_size must be a fraction of the population of {sizes.sum()} "
                    f"that rounds to at least 1 unit. Got {self.total_sample_size!r} instead."
                )
        n = check_total(total, sizes, n_min)
        if stds is None:
            std_arr = None
            if self.allocation in ("optimal", "neyman"):
                # worst case over all data in [lo, hi]: no private value is looked at
                std_arr = np.full(sizes.shape[0], (hi - lo) / 2.0)
        else:
            std_arr = self._stds_in_class_order(stds)

        design = None if std_arr is None else _Design(sizes, std_arr, eps, mechanism, width)
        if self.allocation == "optimal":
            x = solve(design, n, n_min)
        elif self.allocation == "neyman":
            x = rounded_allocation(n, sizes * std_arr, sizes, n_min)
        elif self.allocation == "proportional":
            x = rounded_allocation(n, sizes.astype(np.float64), sizes, n_min)
        else:
            x = equal_allocation(n, sizes, n_min)

        self._range = (lo, hi)
        self._width = width
        self.n_strata_ = int(sizes.shape[0])
        self.stratum_sizes_ = sizes
        self.stratum_stds_ = std_arr
        self.weights_ = sizes / sizes.sum()
        self.total_sample_size_ = n
        self.sample_sizes_ = x
        self.sampling_rates_ = x / sizes
        self.nominal_epsilons_ = nominal_budgets(
            eps, x.astype(np.float64), sizes.astype(np.float64)
        )
        if mechanism == "laplace":
            self.noise_scales_ = width / self.nominal_epsilons_
        else:
            self.noise_scales_ = np.exp(-self.nominal_epsilons_ / width)
        if design is None:
            self.expected_variance_ = None
            self.variance_components_ = None
        else:
            sampling, noise = design.components(x)
            self.variance_components_ = np.column_stack([sampling, noise])
            self.expected_variance_ = float(sampling.sum() + noise.sum())
        # ImportError now (not at the first release) if OpenDP is asked for and missing
        self.noise_backend_ = resolve_noise_backend(self.noise_backend, self.random_state)
        # one generator per fit, seeded from random_state, then advanced by every draw
        seed = check_random_state(self.random_state).randint(MAX_SEED, size=4)
        self._generator = np.random.default_rng(seed)

    def expected_variance(self):
        """Design variance of :meth:`estimate_mean` (requires ``stratum_stds``).

        Returns
        -------
        variance : float
        """
        check_is_fitted(self, "sample_sizes_")
        if self.expected_variance_ is None:
            raise ValueError(
                "the variance needs stratum_stds. Got a sampler designed with "
                "stratum_stds=None instead."
            )
        return self.expected_variance_

    # ------------------------------------------------------------------ labels

    def _validate_labels(self, X, *, reset):
        if hasattr(X, "to_frame") and getattr(X, "ndim", 2) == 1:  # pandas Series
            X = X.to_frame()
        elif not hasattr(X, "iloc") and not hasattr(X, "tocsr") and np.ndim(X) == 1:
            X = np.asarray(X).reshape(-1, 1)
        return validate_input(
            self, X, reset=reset, dtype=None, ensure_all_finite=True, ensure_min_samples=1
        )

    def _labels_then_values(self, X, y):
        """``(stratum index of X, y)``, accepting the pre-0.3 order ``(y, X)`` with a warning."""
        try:
            return self._stratum_index(X), y
        except (TypeError, ValueError) as error:
            try:
                index = self._stratum_index(y)
            except (TypeError, ValueError):
                raise error from None
        warnings.warn(
            "DPStratifiedSampler.estimate_mean takes the stratum labels first since 0.3: "
            "call estimate_mean(X, y); the order estimate_mean(y, X) will be an error in "
            f"{REMOVED_IN}.",
            FutureWarning,
            stacklevel=4,
        )
        return index, X

    def _stratum_index(self, X):
        """Index of each unit's stratum in ``classes_``; checks the sizes against fit."""
        check_is_fitted(self, "sample_sizes_")
        if self._label_encoder is None:  # designed by allocate(): labels 0..H-1
            labels = column_or_1d(X)
            if labels.dtype.kind not in "iuf":
                raise ValueError(
                    "the sampler was designed with allocate(), so X must hold the integer "
                    f"stratum indices 0..{self.n_strata_ - 1}. Got dtype {labels.dtype} "
                    "instead."
                )
            index = np.full(labels.shape[0], -1, dtype=np.int64)
            ok = (labels == np.round(labels)) & (labels >= 0) & (labels < self.n_strata_)
            index[ok] = labels[ok].astype(np.int64)
        else:
            labels = self._validate_labels(X, reset=False)
            codes = self._label_encoder.transform(labels)
            unseen = np.any(codes < 0, axis=1)
            index = np.full(labels.shape[0], -1, dtype=np.int64)
            if labels.shape[1] == 1:
                index[~unseen] = codes[~unseen, 0]
            else:
                lookup = {tuple(r): i for i, r in enumerate(self._class_codes.tolist())}
                for i in np.flatnonzero(~unseen):
                    index[i] = lookup.get(tuple(codes[i].tolist()), -1)
        if np.any(index < 0):
            bad = int(np.flatnonzero(index < 0)[0])
            raise ValueError(
                "every unit of X must belong to one of the strata seen in fit. Got a "
                f"label not seen in fit at row {bad} instead."
            )
        counts = np.bincount(index, minlength=self.n_strata_)
        if not np.array_equal(counts, self.stratum_sizes_):
            bad = int(np.flatnonzero(counts != self.stratum_sizes_)[0])
            raise ValueError(
                "X must be the population frame given to fit (the privacy calibration "
                f"depends on N_h): stratum {self.classes_[bad]!r} has N_h = "
                f"{self.stratum_sizes_[bad]}. Got {counts[bad]} units in it instead."
            )
        return index

    # ------------------------------------------------------------------ sampling

    def _draw(self, index):
        """SRSWOR of ``sample_sizes_[h]`` units in every stratum; sorted row indices."""
        order = np.argsort(index, kind="stable")
        starts = np.concatenate([[0], np.cumsum(self.stratum_sizes_)[:-1]])
        gen = self._generator
        picked = [
            order[start + gen.choice(size, n_h, replace=False)]
            for start, size, n_h in zip(starts, self.stratum_sizes_, self.sample_sizes_)
        ]
        indices = np.sort(np.concatenate(picked))
        self.last_sample_indices_ = indices
        return indices

    def sample(self, X):
        """Draw the stratified simple random sample without replacement.

        Parameters
        ----------
        X : array-like of shape (N,) or (N, n_label_columns)
            The population's stratum labels, as given to ``fit``.

        Returns
        -------
        indices : ndarray of int64 of shape (total_sample_size_,)
            Sorted row indices of the sampled units; exactly ``sample_sizes_[h]`` per
            stratum. Keep them secret: the amplification assumes nobody knows who was drawn.
        """
        return self._draw(self._stratum_index(X))

    @keyword_only_after(3)
    def estimate_mean(self, X, y, *, return_details=False):
        """One ``epsilon``-DP release of the population mean.

        Draws a sample, clips its values into ``data_range`` (warning with the count),
        adds noise calibrated to ``nominal_epsilons_`` to every stratum's sample sum, and
        combines the noisy stratum means with the weights ``W_h``.

        Until 0.3 the arguments were ``estimate_mean(y, X)``. That order still works, with
        a FutureWarning, when it can be told apart: when the first argument is not the
        population's stratum labels but the second is. When both could be labels (e.g.
        0/1 values on strata labelled 0 and 1), the arguments are read as ``(X, y)``.

        Parameters
        ----------
        X : array-like of shape (N,) or (N, n_label_columns)
            The population's stratum labels, as given to ``fit``.
        y : array-like of shape (N,)
            Values of the whole population (only the sampled ones are read). Integers for
            ``mechanism="dlap"``, 0/1 for ``"tulap"``.
        return_details : bool, default=False
            Also return the per-stratum pieces (for simulation; they are not private).

        Returns
        -------
        estimate : float
            Unbiased for the mean of the clipped population values.
        details : dict
            Only if ``return_details``: ``estimate``, ``stratum_means`` (noisy),
            ``noise`` (on the sums), ``sample_indices`` and ``n_clipped``.
        """
        index, y = self._labels_then_values(X, y)
        y = column_or_1d(y, warn=True)
        if y.dtype.kind not in "biuf":
            raise TypeError(f"y must be numeric. Got dtype {y.dtype} instead.")
        y = y.astype(np.float64)
        if y.shape[0] != index.shape[0]:
            raise ValueError(
                f"y and X must describe the same population of {index.shape[0]} units. Got "
                f"{y.shape[0]} values in y instead."
            )
        if not np.all(np.isfinite(y)):
            raise ValueError("y must be finite. Got NaN or infinity instead.")
        if self.mechanism in ("dlap", "tulap") and not np.all(y == np.round(y)):
            raise ValueError(
                f"mechanism={self.mechanism!r} needs integer data (use mechanism='laplace' "
                "for real-valued data). Got non-integer values in y instead."
            )
        rows = self._draw(index)
        lo, hi = self._range
        values = y[rows]
        n_clipped = int(np.count_nonzero((values < lo) | (values > hi)))
        if n_clipped:
            warnings.warn(
                f"{n_clipped} sampled values of y fell outside data_range={self._range!r} "
                "and were clipped into it (needed for the privacy guarantee).",
                UserWarning,
                stacklevel=2,
            )
        values = np.clip(values, lo, hi)
        sums = np.bincount(index[rows], weights=values, minlength=self.n_strata_)
        if self.noise_backend_ == "opendp":
            # the sums themselves go through OpenDP: adding its noise to them here would
            # bring the floating point attack back
            released = opendp_release(
                sums, self.nominal_epsilons_, self._width, self.mechanism
            ).astype(np.float64)
            noise = released - sums  # for the details only
        else:
            warn_numpy_fallback(
                self.noise_backend, self.random_state, self.noise_backend_, stacklevel=3
            )
            noise = self._noise()
            released = sums + noise
        means = released / self.sample_sizes_
        estimate = float(np.dot(self.weights_, means))
        if not return_details:
            return estimate
        return {
            "estimate": estimate,
            "stratum_means": means,
            "noise": noise,
            "sample_indices": rows,
            "n_clipped": n_clipped,
        }

    def _noise(self):
        """One numpy noise draw per stratum, on the sum scale, at the nominal budgets."""
        shape = (self.n_strata_,)
        if self.mechanism == "laplace":
            return self._generator.laplace(0.0, self.noise_scales_, size=shape)
        z = _discrete_laplace_draw(self.noise_scales_, shape, self._generator)
        z = z.astype(np.float64)
        if self.mechanism == "tulap":
            z += self._generator.uniform(-0.5, 0.5, size=shape)
        return z

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = False
        return tags
