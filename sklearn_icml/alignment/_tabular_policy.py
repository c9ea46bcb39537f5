"""A softmax (tabular or log-linear) policy fitted by an offline preference loss."""

import warnings

import numpy as np
from scipy.optimize import minimize
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.special import logsumexp, rel_entr
from sklearn.base import BaseEstimator, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import _check_sample_weight, check_is_fitted
from threadpoolctl import threadpool_limits

from ..base import NonTabularInputMixin
from ..utils import check_random_state
from ..utils._deprecation import DEPRECATED, DEPRECATED_PARAM, renamed_param
from ..utils._param_validation import NON_NEGATIVE_REAL, POSITIVE_INT, POSITIVE_REAL
from ..utils._params import store_params
from ..utils._progress import Progress
from ..utils.validation import check_finite, check_input_array
from ._base import (
    _PreferenceLossMixin,
    check_policy,
    check_soft_labels,
    check_support,
)
from ._loss_math import UNBOUNDED_LOSSES, np_loss_and_grad
from ._tabular_kernels import LOSS_CODES, gd_tabular

# full-batch tabular gradient descent runs in the numba kernel (False: the numpy reference)
_USE_KERNEL = True


def _check_pairs(pairs, labels, name="pairs"):
    """Validate ``pairs`` (n, 3) or (n, 4); return int64 (n, 3) indices and labels."""
    arr = check_input_array(pairs, dtype="numeric", ensure_all_finite=True, input_name=name)
    if arr.shape[1] not in (3, 4):
        raise ValueError(
            f"{name} must have 3 columns (context, first, second) or 4 (plus a soft label). "
            f"Got {arr.shape[1]} columns instead."
        )
    idx = arr[:, :3]
    if idx.dtype.kind == "f" and not np.all(idx == np.round(idx)):
        raise ValueError(
            f"{name} columns 0-2 must hold integer indices. Got non-integer values such as "
            f"{idx[idx != np.round(idx)][0]!r} instead."
        )
    if np.any(idx < 0):
        raise ValueError(
            f"{name} indices must be >= 0. Got {idx.min().item()!r} instead."
        )
    idx = idx.astype(np.int64)
    if arr.shape[1] == 4:
        if labels is not None:
            raise ValueError(
                f"give the soft labels either as the 4th column of {name} or as labels, not "
                "both. Got both instead."
            )
        labels = arr[:, 3]
    labels = check_soft_labels(labels, idx.shape[0])
    same = idx[:, 1] == idx[:, 2]
    if np.any(same & (labels != 0.5)):
        i = int(np.flatnonzero(same & (labels != 0.5))[0])
        raise ValueError(
            f"{name} row {i} compares response {idx[i, 1]} with itself; such a pair is only "
            f"allowed as an explicit tie (label 0.5). Got label {labels[i]!r} instead."
        )
    return idx, labels


def _check_range(idx, n_contexts, n_responses, name="pairs"):
    if np.any(idx[:, 0] >= n_contexts):
        raise ValueError(
            f"{name} has context index {idx[:, 0].max()} but there are {n_contexts} contexts "
            f"(indices 0..{n_contexts - 1}). Got an out-of-range context instead."
        )
    if np.any(idx[:, 1:] >= n_responses):
        raise ValueError(
            f"{name} has response index {idx[:, 1:].max()} but there are {n_responses} "
            f"responses (indices 0..{n_responses - 1}). Got an out-of-range response "
            "instead."
        )


def _log_policy(policy, name, n_contexts, n_responses, used):
    """``log`` of a validated policy that is positive wherever ``used`` (C, K) is True."""
    checked = check_policy(policy, name, n_contexts=n_contexts, n_responses=n_responses)
    check_support(checked, name, used)
    with np.errstate(divide="ignore"):
        return np.log(checked)


def _aggregate(idx, labels, weight):
    """Merge identical (context, first, second, label) rows, summing their weights."""
    keep = weight > 0
    idx, labels, weight = idx[keep], labels[keep], weight[keep]
    order = np.lexsort((labels, idx[:, 2], idx[:, 1], idx[:, 0]))
    idx, labels, weight = idx[order], labels[order], weight[order]
    new = np.ones(idx.shape[0], dtype=bool)
    new[1:] = np.any(idx[1:] != idx[:-1], axis=1) | (labels[1:] != labels[:-1])
    starts = np.flatnonzero(new)
    w = np.add.reduceat(weight, starts)
    return idx[starts], labels[starts], w / w.sum()


def _unbounded_contexts(ctx, a, b, p, w, n_contexts, n_responses):
    """Contexts where a loss with unattained infimum has no finite minimiser.

    A comparison ``a -> b`` (``a`` preferred with positive weight) pushes ``s(a) - s(b)``
    up; a finite minimiser of the logistic loss exists iff every such edge lies on a
    directed cycle of the comparison graph (Zermelo/Ford's condition for Bradley-Terry
    maximum likelihood), i.e. both ends are in one strongly connected component.
    """
    out = []
    diff = a != b
    for c in range(n_contexts):
        rows = (ctx == c) & diff
        if not rows.any():
            continue
        fw = rows & (w * p > 0)
        bw = rows & (w * (1 - p) > 0)
        src = np.concatenate([a[fw], b[bw]])
        dst = np.concatenate([b[fw], a[bw]])
        graph = coo_matrix(
            (np.ones(src.shape[0]), (src, dst)), shape=(n_responses, n_responses)
        )
        _, comp = connected_components(graph, directed=True, connection="strong")
        if np.any(comp[src] != comp[dst]):
            out.append(c)
    return out


class TabularPreferencePolicy(NonTabularInputMixin, _PreferenceLossMixin, BaseEstimator):
    """Softmax policy over ``K`` responses per context, fitted by an offline preference loss.

    The tabular setting of Agarwal, Dann & Marinov (ICML 2025): contexts ``x`` and
    responses ``y`` are indices; the policy is ``pi(y|x) = softmax(z[x])`` with one logit
    per (context, response) (``policy="tabular"``) or ``z[x, y] = phi(x, y) . theta``
    (``policy="log_linear"``). Each labelled pair contributes the loss of its margin

        h = [log pi(w|x) - log nu(w|x)] - [log pi(l|x) - log nu(l|x)]

    with the normaliser ``nu`` chosen by ``normalizer``: the reference policy (DPO, IPO),
    the data-sampling policy, or none (SLiC-style). The objective is the weighted mean
    loss over pairs, plus optionally ``kl_coef`` times the mean over the pairs' responses
    of ``(log pi(y|x) - log pi_ref(y|x))**2 / 2`` (a stand-in for the paper's KL
    regulariser). Logits start at 0. ``solver="lbfgs"`` minimises it exactly (scipy's
    L-BFGS-B); ``solver="gd"`` runs (mini-batch) gradient descent, whose trajectory shows
    how the logistic loss keeps growing its margins on deterministic labels.

    It learns from pairs of responses, not from a feature matrix: ``fit(pairs, labels)``
    takes integer rows ``(context, first, second)``, so its input tags say "not a 2-D
    table of features" and scikit-learn's data checks do not apply.

    Parameters
    ----------
    loss : {"logistic", "squared", "hinge", "exponential", "truncated_quadratic", \
            "savage"}, default="logistic"
        Loss of the margin (see :data:`PREFERENCE_LOSSES`): DPO, IPO, SLiC, or the GPO
        family.
    beta : float, default=0.1
        Scale of the logistic, exponential, truncated quadratic and savage losses.
    tau : float, default=0.1
        IPO's ``tau`` (target margin ``1 / (2 tau)``), for ``loss="squared"``.
    delta : float, default=1.0
        Hinge margin, for ``loss="hinge"``.
    normalizer : {"reference", "data", "none"}, default="reference"
        Which policy normalises the log-likelihoods: ``reference_policy``, the data
        policy (``data_policy``, or estimated from the pairs when
        ``estimate_data_policy``), or none.
    policy : {"tabular", "log_linear"}, default="tabular"
        Parameterisation; ``"log_linear"`` needs ``features`` in ``fit``.
    solver : {"lbfgs", "gd"}, default="lbfgs"
        ``"lbfgs"``: exact full-batch minimisation (scipy's L-BFGS-B with analytic
        gradients). ``"gd"``: gradient descent with step ``learning_rate`` (full batch in a numba
        kernel; mini-batches of ``batch_size`` pairs when set). The hinge loss is not
        differentiable at its kink: use ``"gd"`` for it.
    kl_coef : float, default=0.0
        Weight of the squared log-ratio regulariser towards ``reference_policy``.
    learning_rate : float, default=0.05
        Step size of ``solver="gd"``.
    lr : float, default="deprecated"
        Deprecated name of ``learning_rate`` (removed in 0.4).
    max_iter : int, default=5000
        Iterations (gradient steps, or L-BFGS iterations).
    batch_size : int or None, default=None
        Pairs per gradient step with ``solver="gd"`` (drawn with probability proportional
        to their weight); None is full batch.
    tol : float, default=1e-8
        Stop when the largest absolute gradient entry is below ``tol`` (full batch).
    estimate_data_policy : bool, default=False
        With ``normalizer="data"`` and no ``data_policy``, estimate it per context from
        the (weighted) frequency of each response in the pairs.
    random_state : int, RandomState instance or None, default=None
        Draws the mini-batches.
    verbose : int, default=0
        Print the objective every ``max_iter // 10`` iterations when > 0.

    Attributes
    ----------
    n_contexts_ : int
    n_responses_ : int
    policy_ : ndarray of shape (n_contexts_, n_responses_)
        Fitted probabilities; rows sum to 1.
    logits_ : ndarray of shape (n_contexts_, n_responses_)
        Fitted logits (defined up to a constant per context; they start at 0, and those
        of responses that never appear in a pair keep that value in the tabular case).
    theta_ : ndarray of shape (n_features,)
        Log-linear weights (``policy="log_linear"`` only).
    log_normalizer_ : ndarray of shape (n_contexts_, n_responses_)
        ``log nu`` used in the margins (0 for ``normalizer="none"``).
    data_policy_ : ndarray of shape (n_contexts_, n_responses_)
        The estimated data policy (``estimate_data_policy`` only).
    loss_curve_ : ndarray of shape (n_iter_,)
        Objective after each iteration (mini-batch objective for mini-batch descent).
    n_iter_ : int
    converged_ : bool
        Whether the gradient tolerance was met (False for unbounded problems).
    margins_ : ndarray of shape (n_pairs,)
        Final margin ``h`` of each training pair (first minus second response).

    See Also
    --------
    closed_form_policy : the closed-form population minimisers.
    population_pairs : pairs whose weighted loss is the population loss.
    PreferenceLMTrainer : the same losses on a small causal language model.

    Notes
    -----
    With ``loss`` in {"logistic", "exponential", "savage"}, ``kl_coef=0`` and pairs whose
    comparisons are not all on directed cycles (e.g. deterministic labels: the winner is
    always the better response), the objective has no finite minimiser: the margins grow
    without bound (about logarithmically in the number of gradient steps) and the policy
    collapses onto the best covered response whatever ``beta``. ``fit`` then emits a
    :class:`~sklearn.exceptions.ConvergenceWarning`, and the result depends on
    ``max_iter``. The squared loss stays finite.

    The objective is the weighted *mean* of the soft-label loss. The population objective
    of [1]_, ``sum_{a,b} m(a) m(b) P(a > b) loss(h(a, b))`` over ordered pairs, is half of
    it, so gradient descent with step ``learning_rate`` here follows that objective's
    trajectory with step ``2 learning_rate``. The squared log-ratio regulariser
    (``kl_coef``) stands in for the paper's KL regulariser: it has the same minimiser at
    ``pi = pi_ref`` and a closed-form gradient.

    References
    ----------
    .. [1] A. Agarwal, C. Dann and T. V. Marinov, "Design Considerations in Offline
       Preference-based RL", ICML 2025, arXiv:2502.06861.

    Examples
    --------
    The logistic loss (DPO) with ``beta = 1`` and the reference normaliser, on
    population pairs under Bradley-Terry preferences.

    >>> from sklearn_icml.alignment import TabularPreferencePolicy, population_pairs
    >>> rewards, ref = [1.0, 0.5, 0.0, -0.5], [0.1, 0.2, 0.3, 0.4]
    >>> pairs, labels, weight = population_pairs(rewards)
    >>> pol = TabularPreferencePolicy(loss="logistic", beta=1.0)
    >>> pol = pol.fit(pairs, labels, sample_weight=weight, reference_policy=ref)
    >>> pol.policy_.round(4)
    array([[0.2376, 0.2882, 0.2622, 0.212 ]])
    >>> pol.expected_reward(rewards).round(4)
    array([0.2756])
    """

    _parameter_constraints = {
        **_PreferenceLossMixin._parameter_constraints,
        "policy": [StrOptions({"tabular", "log_linear"})],
        "solver": [StrOptions({"lbfgs", "gd"})],
        "learning_rate": [POSITIVE_REAL],
        "lr": [POSITIVE_REAL, DEPRECATED_PARAM],
        "max_iter": [POSITIVE_INT],
        "batch_size": [POSITIVE_INT, None],
        "tol": [NON_NEGATIVE_REAL],
        "estimate_data_policy": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        *,
        loss="logistic",
        beta=0.1,
        tau=0.1,
        delta=1.0,
        normalizer="reference",
        policy="tabular",
        solver="lbfgs",
        kl_coef=0.0,
        learning_rate=0.05,
        lr=DEPRECATED,
        max_iter=5000,
        batch_size=None,
        tol=1e-8,
        estimate_data_policy=False,
        random_state=None,
        verbose=0,
    ):
        store_params(self, locals())

    # fitting

    def _shapes(self, idx, reference_policy, data_policy, features):
        """(n_contexts, n_responses) from the given policies/features, else the data."""
        Ks, Cs = {}, {}
        for arr, name in ((reference_policy, "reference_policy"), (data_policy, "data_policy")):
            if arr is not None:
                a = np.asarray(arr)
                if a.ndim in (1, 2):
                    Ks[name] = a.shape[-1]
                if a.ndim == 2 and a.shape[0] > 1:
                    Cs[name] = a.shape[0]
        if features is not None:
            f = np.asarray(features)
            if f.ndim in (2, 3):
                Ks["features"] = f.shape[-2]
                if f.ndim == 3 and f.shape[0] > 1:
                    Cs["features"] = f.shape[0]
        for found, what in ((Ks, "responses"), (Cs, "contexts")):
            if len(set(found.values())) > 1:
                desc = ", ".join(f"{k} has {v}" for k, v in found.items())
                raise ValueError(
                    f"the inputs disagree on the number of {what}: {desc}. Got mismatched "
                    "shapes instead."
                )
        C = next(iter(Cs.values()), None) or int(idx[:, 0].max()) + 1
        K = next(iter(Ks.values()), None) or int(idx[:, 1:].max()) + 1
        return C, K

    def _check_features(self, features, C, K):
        if self.policy == "tabular":
            if features is not None:
                raise ValueError(
                    "features are only used with policy='log_linear'. Got features with "
                    "policy='tabular' instead."
                )
            return None
        if features is None:
            raise ValueError(
                "policy='log_linear' needs features of shape (n_responses, n_features) or "
                "(n_contexts, n_responses, n_features). Got features=None instead."
            )
        phi = np.asarray(features, dtype=np.float64)
        if phi.ndim == 2:
            phi = np.broadcast_to(phi, (C,) + phi.shape)
        if phi.ndim != 3 or phi.shape[:2] not in ((C, K), (1, K)) or phi.shape[2] < 1:
            raise ValueError(
                f"features must have shape ({K}, n_features) or ({C}, {K}, n_features). Got "
                f"shape {np.shape(features)} instead."
            )
        check_finite(phi, "features")
        return np.ascontiguousarray(np.broadcast_to(phi, (C, K, phi.shape[2])))

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(
        self,
        pairs,
        labels=None,
        *,
        sample_weight=None,
        reference_policy=None,
        data_policy=None,
        features=None,
    ):
        """Fit the policy on labelled preference pairs.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 3) or (n_pairs, 4)
            Integer rows ``(context, first, second)``; ``first`` is the preferred response
            unless ``labels`` says otherwise. An optional 4th column holds the soft labels.
            A DataFrame is accepted.
        labels : array-like of shape (n_pairs,), default=None
            Probability in ``[0, 1]`` that ``first`` is preferred (soft labels); None means
            1 for every pair. A pair of a response with itself must have label 0.5 (tie).
        sample_weight : array-like of shape (n_pairs,), default=None
            Non-negative pair weights (e.g. from :func:`population_pairs`).
        reference_policy : array-like of shape (K,) or (n_contexts, K), default=None
            ``pi_ref``; needed for ``normalizer="reference"`` and ``kl_coef > 0``.
        data_policy : array-like of shape (K,) or (n_contexts, K), default=None
            The data-sampling policy ``mu``, for ``normalizer="data"``.
        features : array-like of shape (K, d) or (n_contexts, K, d), default=None
            ``phi(x, y)`` for ``policy="log_linear"``.

        Returns
        -------
        self : object
            The fitted policy.
        """
        self._learning_rate = float(renamed_param(self, "lr", "learning_rate"))
        if self.solver == "lbfgs" and self.batch_size is not None:
            raise ValueError(
                "solver='lbfgs' is a full-batch solver; use solver='gd' for mini-batches. "
                f"Got batch_size={self.batch_size!r} instead."
            )
        idx, p = _check_pairs(pairs, labels)
        weight = _check_sample_weight(
            sample_weight, idx, dtype=np.float64, ensure_non_negative=True
        )
        if not weight.sum() > 0:
            raise ValueError("sample_weight must not be all zero. Got all zeros instead.")
        C, K = self._shapes(idx, reference_policy, data_policy, features)
        _check_range(idx, C, K)
        phi = self._check_features(features, C, K)

        rows, p_u, w = _aggregate(idx, p, weight)
        ctx, a, b = rows[:, 0], rows[:, 1], rows[:, 2]
        used = np.zeros((C, K), dtype=bool)
        used[ctx, a] = True
        used[ctx, b] = True

        log_nu = np.zeros((C, K))
        if self.normalizer == "reference":
            if reference_policy is None:
                raise ValueError(
                    "normalizer='reference' needs reference_policy (pi_ref); use "
                    "normalizer='none' for no normaliser. Got reference_policy=None instead."
                )
            log_nu = _log_policy(reference_policy, "reference_policy", C, K, used)
        elif self.normalizer == "data":
            if data_policy is None and not self.estimate_data_policy:
                raise ValueError(
                    "normalizer='data' needs data_policy (the sampling policy mu) or "
                    "estimate_data_policy=True to estimate it from the pair counts. Got "
                    "neither instead."
                )
            if data_policy is not None:
                log_nu = _log_policy(data_policy, "data_policy", C, K, used)
            else:
                counts = np.zeros((C, K))
                np.add.at(counts, (ctx, a), w)
                np.add.at(counts, (ctx, b), w)
                totals = counts.sum(axis=1, keepdims=True)
                mu = np.divide(counts, totals, out=np.full((C, K), 1.0 / K), where=totals > 0)
                self.data_policy_ = mu
                with np.errstate(divide="ignore"):
                    log_nu = np.log(mu)
        log_ref = None
        if self.kl_coef > 0:
            if reference_policy is None:
                raise ValueError(
                    "kl_coef > 0 regularises towards reference_policy. Got "
                    "reference_policy=None instead."
                )
            log_pi_ref = _log_policy(reference_policy, "reference_policy", C, K, used)
            log_ref = np.where(used, log_pi_ref, 0.0)

        self.n_contexts_, self.n_responses_ = C, K
        self.log_normalizer_ = log_nu
        objective = _Objective(
            loss=self.loss, scale=self._loss_scale(), C=C, K=K, log_nu=log_nu,
            kl_coef=float(self.kl_coef), log_ref=log_ref, phi=phi,
        )
        x0 = np.zeros(C * K if phi is None else phi.shape[2])
        x, curve, n_iter, converged = self._solve(objective, x0, ctx, a, b, p_u, w)

        z = objective.logits(x)
        if not np.all(np.isfinite(z)):
            raise FloatingPointError(
                "the fitted logits are not finite; lower learning_rate or use solver='lbfgs'."
            )
        if phi is not None:
            self.theta_ = x
        self.logits_ = z
        self.policy_ = np.exp(z - logsumexp(z, axis=1, keepdims=True))
        self.loss_curve_ = np.asarray(curve)
        self.n_iter_ = int(n_iter)
        self.converged_ = bool(converged)
        self.margins_ = self._margins(idx)
        self._warn_convergence(ctx, a, b, p_u, w)
        return self

    def _solve(self, objective, x0, ctx, a, b, p, w):
        data = objective.bind(ctx, a, b, p, w)
        progress = Progress(type(self).__name__, self.verbose)
        every = max(1, self.max_iter // 10)
        if self.solver == "lbfgs":
            curve = []

            def callback(intermediate_result):
                curve.append(float(intermediate_result.fun))
                if len(curve) % every == 0:
                    progress.log(f"iter {len(curve)}", objective=curve[-1])

            # tiny problems: BLAS threads only add overhead (a lot on a busy machine)
            with np.errstate(over="ignore"), threadpool_limits(1, user_api="blas"):
                res = minimize(
                    objective.value_and_grad, x0, args=(data,), jac=True, method="L-BFGS-B",
                    callback=callback,
                    options={"maxiter": self.max_iter, "gtol": self.tol, "ftol": 1e-15,
                             "maxfun": 20 * self.max_iter},
                )
            if not np.isfinite(res.fun):
                raise FloatingPointError("the objective became non-finite during L-BFGS.")
            grad_max = float(np.abs(res.jac).max()) if res.jac.size else 0.0
            return res.x, curve, res.nit, grad_max <= max(self.tol, 1e-12) or res.success

        x = x0.copy()
        lr = self._learning_rate
        if self.batch_size is None and objective.phi is None and _USE_KERNEL:
            return self._solve_kernel(objective, data, x, progress)
        curve = np.empty(self.max_iter)
        rng = check_random_state(self.random_state)
        converged = False
        n_iter = 0
        for it in range(self.max_iter):
            if self.batch_size is None:
                batch = data
            else:
                pick = rng.choice(w.shape[0], size=self.batch_size, p=w)
                batch = objective.bind(
                    ctx[pick], a[pick], b[pick], p[pick], np.full(self.batch_size,
                                                                  1.0 / self.batch_size)
                )
            f, g = objective.value_and_grad(x, batch)
            if not (np.isfinite(f) and np.all(np.isfinite(g))):
                raise FloatingPointError(
                    f"the objective or its gradient became non-finite at iteration {it + 1} "
                    f"(learning_rate={lr!r}); lower learning_rate."
                )
            curve[it] = f
            n_iter = it + 1
            if self.batch_size is None and np.abs(g).max() <= self.tol:
                converged = True
                break
            x = x - lr * g
            if (it + 1) % every == 0:
                progress.log(f"iter {it + 1}", objective=f)
        return x, curve[:n_iter], n_iter, converged

    def _solve_kernel(self, objective, data, x, progress):
        ia, ib, off, p, w, kl_w = data
        CK = objective.C * objective.K
        kl = np.zeros(CK) if kl_w is None else kl_w.ravel()
        log_ref = np.zeros(CK) if objective.log_ref is None else objective.log_ref.ravel()
        curve, n_iter, converged, finite = gd_tabular(
            LOSS_CODES[objective.loss], objective.scale, ia, ib, off, p, w,
            objective.kl_coef, kl, np.ascontiguousarray(log_ref, dtype=np.float64),
            objective.C, objective.K, x, self._learning_rate, int(self.max_iter), float(self.tol),
        )
        if not finite:
            raise FloatingPointError(
                f"the objective or its gradient became non-finite at iteration {n_iter + 1} "
                f"(learning_rate={self._learning_rate!r}); lower learning_rate."
            )
        # the kernel runs every iteration at once: its curve is reported when it returns
        every = max(1, n_iter // 10)
        for it in range(every - 1, n_iter, every):
            progress.log(f"iter {it + 1}", objective=curve[it])
        return x, curve, n_iter, converged

    def _warn_convergence(self, ctx, a, b, p, w):
        if (
            self.loss in UNBOUNDED_LOSSES
            and self.kl_coef == 0
            and self.policy == "tabular"
        ):
            bad = _unbounded_contexts(ctx, a, b, p, w, self.n_contexts_, self.n_responses_)
            if bad:
                warnings.warn(
                    f"the {self.loss} loss has no finite minimiser on these pairs (context "
                    f"{bad[0]}: some comparison is never reversed, e.g. deterministic labels): "
                    f"the margins keep growing (largest |h| = "
                    f"{np.abs(self.margins_).max():.3g} after {self.n_iter_} iterations) and "
                    "the policy depends on max_iter. Use loss='squared', soft labels or "
                    "kl_coef > 0 for a finite solution.",
                    ConvergenceWarning,
                    stacklevel=4,
                )
                return
        if not self.converged_ and (self.solver == "lbfgs" or self.batch_size is None):
            warnings.warn(
                f"{type(self).__name__} did not converge in max_iter={self.max_iter} "
                f"iterations (solver={self.solver!r}); raise max_iter or learning_rate.",
                ConvergenceWarning,
                stacklevel=4,
            )

    # using it

    def _margins(self, idx):
        s = self.logits_ - self.log_normalizer_
        with np.errstate(invalid="ignore"):
            return s[idx[:, 0], idx[:, 1]] - s[idx[:, 0], idx[:, 2]]

    def predict_proba(self, contexts=None):
        """Policy rows of the given contexts.

        Parameters
        ----------
        contexts : array-like of int, shape (n,), default=None
            Context indices; None returns every context.

        Returns
        -------
        proba : ndarray of shape (n, n_responses_)
        """
        check_is_fitted(self, "policy_")
        if contexts is None:
            return self.policy_.copy()
        c = np.asarray(contexts)
        if c.ndim != 1 or c.dtype.kind not in "iu":
            raise ValueError(
                f"contexts must be a 1-D array of integer indices. Got {contexts!r} instead."
            )
        if np.any((c < 0) | (c >= self.n_contexts_)):
            raise ValueError(
                f"contexts must lie in 0..{self.n_contexts_ - 1}. Got {c.min()}..{c.max()} "
                "instead."
            )
        return self.policy_[c]

    def expected_reward(self, rewards):
        """Expected reward ``sum_y pi(y|x) r(x, y)`` of each context.

        Parameters
        ----------
        rewards : array-like of shape (n_responses_,) or (n_contexts_, n_responses_)

        Returns
        -------
        value : ndarray of shape (n_contexts_,)
        """
        check_is_fitted(self, "policy_")
        r = np.asarray(rewards, dtype=np.float64)
        if r.shape not in ((self.n_responses_,), (self.n_contexts_, self.n_responses_)):
            raise ValueError(
                f"rewards must have shape ({self.n_responses_},) or ({self.n_contexts_}, "
                f"{self.n_responses_}). Got shape {r.shape} instead."
            )
        check_finite(r, "rewards")
        return (self.policy_ * r).sum(axis=1)

    def kl_to(self, policy):
        """``KL(pi_fitted || policy)`` per context (inf where ``policy`` is 0 and pi is not).

        Parameters
        ----------
        policy : array-like of shape (n_responses_,) or (n_contexts_, n_responses_)
            Probability vector(s), e.g. the reference policy.

        Returns
        -------
        kl : ndarray of shape (n_contexts_,)
        """
        check_is_fitted(self, "policy_")
        q = check_policy(policy, "policy", n_contexts=self.n_contexts_,
                         n_responses=self.n_responses_)
        return rel_entr(self.policy_, q).sum(axis=1)

    def score(self, pairs, labels=None, sample_weight=None):
        """Minus the weighted mean loss of the fitted policy on labelled pairs.

        Parameters
        ----------
        pairs : array-like of shape (n_pairs, 3) or (n_pairs, 4)
        labels : array-like of shape (n_pairs,), default=None
        sample_weight : array-like of shape (n_pairs,), default=None

        Returns
        -------
        score : float
            Higher is better (no regulariser term).
        """
        check_is_fitted(self, "policy_")
        idx, p = _check_pairs(pairs, labels)
        _check_range(idx, self.n_contexts_, self.n_responses_)
        weight = _check_sample_weight(
            sample_weight, idx, dtype=np.float64, ensure_non_negative=True
        )
        h = self._margins(idx)
        if not np.all(np.isfinite(h)):
            raise ValueError(
                "some pairs involve a response with zero normaliser probability (it never "
                "appeared in the training pairs). Got non-finite margins instead."
            )
        values, _ = np_loss_and_grad(self.loss, h, self._loss_scale(), p)
        return -float(np.average(values, weights=weight))


class _Objective:
    """Weighted mean preference loss (+ squared log-ratio regulariser) and its gradient.

    ``value_and_grad(x, data)`` works on the flat parameters: the (C*K) logits in the
    tabular case, ``theta`` in the log-linear case. Margins are computed from logit
    differences, so logits of responses absent from the data get exactly zero gradient.
    """

    def __init__(self, *, loss, scale, C, K, log_nu, kl_coef, log_ref, phi):
        self.loss, self.scale, self.C, self.K = loss, scale, C, K
        self.log_nu = log_nu
        self.kl_coef, self.log_ref, self.phi = kl_coef, log_ref, phi

    def logits(self, x):
        if self.phi is None:
            return x.reshape(self.C, self.K)
        return self.phi @ x

    def bind(self, ctx, a, b, p, w):
        K = self.K
        ia, ib = ctx * K + a, ctx * K + b
        lnu = self.log_nu.ravel()
        with np.errstate(invalid="ignore"):
            off = np.where(ia == ib, 0.0, lnu[ia] - lnu[ib])
        kl_w = None
        if self.kl_coef > 0:
            kl_w = (
                np.bincount(ia, weights=w, minlength=self.C * K)
                + np.bincount(ib, weights=w, minlength=self.C * K)
            ).reshape(self.C, K) / 2.0
        return ia, ib, off, p, w, kl_w

    def value_and_grad(self, x, data):
        ia, ib, off, p, w, kl_w = data
        CK = self.C * self.K
        z = self.logits(x)
        zf = z.ravel()
        h = zf[ia] - zf[ib] - off
        values, dh = np_loss_and_grad(self.loss, h, self.scale, p)
        f = float(w @ values)
        G = w * dh
        gz = np.bincount(ia, weights=G, minlength=CK) - np.bincount(ib, weights=G, minlength=CK)
        gz = gz.reshape(self.C, self.K)
        if kl_w is not None:
            lp = z - logsumexp(z, axis=1, keepdims=True)
            diff = np.where(kl_w > 0, lp - self.log_ref, 0.0)
            f += self.kl_coef * float((kl_w * diff * diff).sum()) / 2.0
            D = self.kl_coef * kl_w * diff
            pi = np.exp(lp)
            gz = gz + D - pi * D.sum(axis=1, keepdims=True)
        if self.phi is None:
            return f, gz.ravel()
        return f, np.einsum("ckd,ck->d", self.phi, gz)
