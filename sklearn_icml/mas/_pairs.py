"""ConsistentPairBuilder: query-MAS training pairs, chosen per group of similar queries."""


import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator
from sklearn.cluster import KMeans
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.utils._param_validation import HasMethods, StrOptions

from ..utils import draw_seed
from ..utils._deprecation import keyword_only_after
from ..utils._parallel import resolve_n_jobs
from ..utils._param_validation import N_JOBS, POSITIVE_INT
from ..utils._params import store_params
from ._program import MASProgram, default_answer_checker
from ._sandbox import extract_code
from ._validation import StringInputMixin, check_pool

_TOL = 1e-12

REFINE_PROMPT = """You adapt a multi-agent system (MAS), written as Python code, to one query.
Keep the template: class MAS with __init__(self, model_list) setting self.llm = LLM(model_list)
and forward(self, taskInfo) returning the final answer string; agents call
self.llm.call_llm(prompt). First write a short rationale that links the query's features to
the design, then the complete code in one ```python block.

Query: {query}

Current MAS ({name}):
```python
{code}
```
"""


def _is_correct(result, gold, checker):
    """A run counts only if it finished on its own (no timeout, no error) and is right."""
    if result.timed_out or result.error is not None or result.answer is None:
        return False
    return bool(checker(result.answer, gold))


class ConsistentPairBuilder(StringInputMixin, BaseEstimator):
    """Build consistent (query, MAS) training pairs, MAS-GPT's data pipeline.

    ``fit`` runs every MAS of the pool on every training query (``repeats`` times) and
    scores it 1 when correct; groups similar queries (TF-IDF + k-means unless ``groups``
    is given); picks per group the MAS with the best group-average score (ties: fewer mean
    LLM calls, then pool order) and pairs every query of the group that this MAS solved
    with it (inter-consistency). With ``refine_llm``, each pair's MAS is rewritten for its
    query with a rationale, re-run, and kept only if still correct (intra-consistency).

    Parameters
    ----------
    pool : list of MASProgram, default=None
        The candidate designs; None means :func:`default_mas_pool`.
    executor : MASExecutor
        Runs the programs (its ``llm`` is the fixed agent LLM of the evaluation).
    n_groups : int, default=8
        Clusters of queries when ``fit`` is not given ``groups``.
    grouping : {"tfidf-kmeans"}, default="tfidf-kmeans"
        How queries are grouped when ``groups`` is not given.
    repeats : int, default=1
        Runs per (query, MAS) pair in the evaluation of the pool, averaged.
    refine_llm : callable, default=None
        ``refine_llm(prompt, temperature) -> str`` that adapts each pair's MAS to its query
        (intra-consistency).
    answer_checker : callable, default=None
        ``answer_checker(pred, gold) -> bool``; None means :func:`default_answer_checker`.
    random_state : int, RandomState instance or None, default=None
        Seed of the k-means grouping.
    n_jobs : int, default=None
        Number of CPU workers: threads that run the (query, MAS) evaluations side by side
        (``None`` means 1 unless in a :func:`joblib.parallel_config` context). An LLM
        client that batches concurrent calls (:class:`TransformersLLM`) then generates
        the agents' calls of several runs together; results do not depend on it when the
        LLM's replies do not depend on call order.

    Attributes
    ----------
    pool_ : list of MASProgram
        The validated pool.
    score_matrix_ : ndarray of shape (n_queries, n_mas)
        Mean correctness of each MAS on each query.
    calls_matrix_ : ndarray of shape (n_queries, n_mas)
        Mean LLM calls of each MAS on each query.
    mean_calls_ : ndarray of shape (n_mas,)
        Mean LLM calls of each MAS over all its runs (the tie-break).
    group_labels_ : ndarray of shape (n_queries,)
        Group of each query.
    group_best_mas_ : dict
        Group label -> index in ``pool_`` of the group's MAS.
    query_best_mas_ : ndarray of shape (n_queries,)
        Per-query label (the cheapest MAS among those with the query's best score; -1 when no
        MAS solved it): the ablation without inter-consistency.
    pairs_ : list of (str, int, str)
        ``(query, mas_index, rationale)`` of the kept pairs.
    pair_programs_ : list of MASProgram
        The program of each pair (refined when ``refine_llm`` rewrote it successfully).
    n_refined_ : int
        Pairs whose refined program was kept.

    See Also
    --------
    MASGPTRouter : learns query -> MAS from these pairs.

    Notes
    -----
    MAS-GPT [1]_ builds its pairs with LLM agents and an LLM that refines each pair's
    MAS; this class runs the same selection with any agent LLM (``executor.llm``). Two
    choices are this library's: queries are grouped by TF-IDF + k-means unless ``groups``
    is given, and equal group accuracies go to fewer mean LLM calls, then to pool order.

    References
    ----------
    .. [1] R. Ye et al., "MAS-GPT: Training LLMs to Build LLM-based Multi-Agent Systems",
       ICML 2025, arXiv:2503.03686: inter- and intra-consistent query-MAS pairs.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_arithmetic_queries
    >>> import warnings
    >>> from sklearn_icml.mas import (ArithmeticMockLLM, ConsistentPairBuilder, MASExecutor,
    ...                               UnsafeSandboxWarning, default_mas_pool)
    >>> warnings.simplefilter("ignore", UnsafeSandboxWarning)  # the built-in pool is trusted
    >>> queries, answers, families = make_arithmetic_queries(20, random_state=0)
    >>> executor = MASExecutor(llm=ArithmeticMockLLM(random_state=0), sandbox="unsafe-inprocess")
    >>> builder = ConsistentPairBuilder(pool=default_mas_pool(debate=False), executor=executor)
    >>> builder = builder.fit(queries, answers, groups=families)
    >>> {g: builder.pool_[m].name for g, m in builder.group_best_mas_.items()}
    {'add': 'cot', 'mixed': 'self_consistency', 'solve': 'self_refine'}
    """

    _parameter_constraints = {
        "pool": [list, tuple, None],
        "executor": [HasMethods(["run"]), None],
        "n_groups": [POSITIVE_INT],
        "grouping": [StrOptions({"tfidf-kmeans"})],
        "repeats": [POSITIVE_INT],
        "refine_llm": [callable, None],
        "answer_checker": [callable, None],
        "random_state": ["random_state"],
        "n_jobs": N_JOBS,
    }

    def __init__(self, *, pool=None, executor=None, n_groups=8, grouping="tfidf-kmeans",
                 repeats=1, refine_llm=None, answer_checker=None, random_state=None,
                 n_jobs=None):
        store_params(self, locals())

    @keyword_only_after(3)
    def fit(self, queries, answers, *, groups=None):
        """Evaluate the pool, group the queries and select the pairs.

        Parameters
        ----------
        queries : list of str
            Training queries: every MAS of the pool runs on each.
        answers : list
            Their gold answers, which ``answer_checker`` compares with the MAS answers.
        groups : array-like of shape (n_queries,), default=None
            Known groups of the queries (e.g. domains); None clusters them into ``n_groups``.

        Returns
        -------
        self : object
        """
        queries, answers = self._check_fit_input(
            queries, answers, "executor",
            "is None; ConsistentPairBuilder needs a MASExecutor to run the pool.",
        )
        n = len(queries)
        if groups is None and self.n_groups > n:
            raise ValueError(
                f"n_groups must be <= the number of queries ({n}). Got {self.n_groups} instead."
            )
        if groups is not None:
            groups = np.asarray(groups)
            if groups.shape != (n,):
                raise ValueError(
                    f"groups must have shape ({n},) like queries. Got {groups.shape} instead."
                )
        self.pool_ = check_pool(self.pool)
        checker = self.answer_checker or default_answer_checker
        self.score_matrix_, self.calls_matrix_ = self._evaluate(queries, answers, checker)
        self.mean_calls_ = self.calls_matrix_.mean(axis=0)
        self.group_labels_ = groups.copy() if groups is not None else self._cluster(queries)
        self.group_best_mas_ = {}
        for label in np.unique(self.group_labels_):
            mask = self.group_labels_ == label
            key = label.item() if hasattr(label, "item") else label
            self.group_best_mas_[key] = self._best(self.score_matrix_[mask].mean(axis=0))
        self.query_best_mas_ = np.array(
            [self._best(row) if row.max() > 0 else -1 for row in self.score_matrix_],
            dtype=np.int64,
        )
        self._select_pairs(queries, answers, checker)
        return self

    def _evaluate(self, queries, answers, checker):
        n, k = len(queries), len(self.pool_)
        jobs = [(i, j) for i in range(n) for j in range(k) for _ in range(self.repeats)]

        def run(i, j):
            result = self.executor.execute(self.pool_[j], queries[i])
            return _is_correct(result, answers[i], checker), result.n_calls

        n_jobs = resolve_n_jobs(self.n_jobs)
        if n_jobs == 1:
            outcomes = [run(i, j) for i, j in jobs]
        else:
            outcomes = Parallel(n_jobs=n_jobs, prefer="threads")(
                delayed(run)(i, j) for i, j in jobs
            )
        scores = np.zeros((n, k))
        calls = np.zeros((n, k))
        for (i, j), (correct, n_calls) in zip(jobs, outcomes):
            scores[i, j] += correct
            calls[i, j] += n_calls
        return scores / self.repeats, calls / self.repeats

    def _cluster(self, queries):
        features = TfidfVectorizer().fit_transform(queries)
        kmeans = KMeans(n_clusters=self.n_groups, n_init=10,
                        random_state=draw_seed(self.random_state))
        return kmeans.fit_predict(features)

    def _best(self, mean_scores):
        """Index of the best score; ties go to fewer mean calls, then to pool order."""
        best = mean_scores.max()
        tied = np.flatnonzero(mean_scores >= best - _TOL)
        return int(tied[np.argmin(self.mean_calls_[tied])])  # argmin keeps the first

    def _select_pairs(self, queries, answers, checker):
        self.pairs_, self.pair_programs_, self.n_refined_ = [], [], 0
        for i, query in enumerate(queries):
            group = self.group_labels_[i]
            key = group.item() if hasattr(group, "item") else group
            m = self.group_best_mas_[key]
            if self.score_matrix_[i, m] <= 0:
                continue
            members = self.group_labels_ == group
            program = self.pool_[m]
            rationale = (
                f"Queries like this one (group {key!r}, {int(members.sum())} queries) are "
                f"solved best by {program.name!r}: group accuracy "
                f"{self.score_matrix_[members, m].mean():.3f} at {self.mean_calls_[m]:.2f} "
                "LLM calls per query."
            )
            if self.refine_llm is not None:
                refined = self._refine(query, answers[i], program, checker)
                if refined is not None:
                    program, rationale = refined, refined.rationale
                    self.n_refined_ += 1
            self.pairs_.append((query, m, rationale))
            self.pair_programs_.append(program)

    def _refine(self, query, gold, program, checker):
        """The refined program if it validates and still solves the query, else None."""
        prompt = REFINE_PROMPT.format(query=query, name=program.name, code=program.code)
        reply = self.refine_llm(prompt, 0.0)
        code = extract_code(reply)
        if code is None:
            return None
        rationale = reply[: reply.rfind("```", 0, reply.rfind("```"))].strip()
        refined = MASProgram(f"{program.name}+refined", code, rationale)
        try:
            refined.validate()
        except ValueError:
            return None
        result = self.executor.execute(refined, query)
        return refined if _is_correct(result, gold, checker) else None
