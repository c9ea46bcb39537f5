"""MASGPTSolver: consistent pairs, a query -> MAS generator and a sandboxed run, end to end."""

import dataclasses

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import StrOptions

from ..utils._deprecation import keyword_only_after
from ..utils._parallel import resolve_n_jobs
from ..utils._param_validation import N_JOBS, POSITIVE_INT, POSITIVE_REAL
from ..utils._params import store_params
from ._executor import MASExecutor
from ._pairs import ConsistentPairBuilder
from ._program import default_answer_checker
from ._router import MASGPTRouter
from ._validation import StringInputMixin, check_answers, check_queries, check_sandbox


class MASGPTSolver(StringInputMixin, BaseEstimator):
    """Answer queries with a query-specific multi-agent system generated in one inference.

    ``fit`` runs the pool of MAS designs on the training queries with the agent LLM,
    builds consistent (query, MAS) pairs (:class:`ConsistentPairBuilder`) and fits the
    generator (:class:`MASGPTRouter`) on them. ``predict`` generates one MAS per query and
    runs it with :class:`MASExecutor` (sandboxed, with a timeout and the fallback MAS),
    counting the agent-LLM calls.

    Parameters
    ----------
    llm : callable, default=None
        The agent LLM, ``llm(prompt, temperature) -> str``; required before the first run.
    pool : list of MASProgram, default=None
        The candidate designs; None means :func:`default_mas_pool`.
    n_groups : int, default=8
        Clusters of queries when ``fit`` is not given ``groups``.
    repeats : int, default=1
        Runs per (query, MAS) pair in the evaluation of the pool, averaged.
    consistency : bool, default=True
        Group-level MAS selection; False is the ablation with per-query labels.
    refine_llm : callable, default=None
        ``refine_llm(prompt, temperature) -> str`` that adapts each pair's MAS to its query
        (intra-consistency).
    generator_llm : callable, default=None
        Generator LLM; None uses the fitted classifier as the generator.
    timeout : float, default=60.0
        Seconds one MAS program may run (the reference uses 600).
    sandbox : {"process", "unsafe-inprocess"}, default="process"
        Where the (generated) code runs: ``"process"``, a confined child process, for
        generated or untrusted code; ``"unsafe-inprocess"``, this process with its full
        rights and a best-effort timeout, for trusted programs only (it warns on every run).
        See :class:`MASExecutor`. The old spelling ``"inprocess"`` raises an error.
    allow_weak_isolation : bool, default=False
        Run in process mode even where the child cannot be fully confined (no seccomp filter
        on this platform or kernel, or a layer missing when checked), with the protections
        that are in force; every such run warns. False refuses to run there.
    answer_checker : callable, default=None
        ``answer_checker(pred, gold) -> bool``; None means :func:`default_answer_checker`.
    random_state : int, RandomState instance or None, default=None
        Seed of the grouping and of the classifier.
    n_jobs : int, default=None
        Number of CPU workers: threads that run MAS programs side by side, the pool's
        evaluation in ``fit`` and the queries of ``predict`` (``None`` means 1 unless in a
        :func:`joblib.parallel_config` context). An LLM client that batches concurrent calls
        (:class:`TransformersLLM`) then generates the calls of several runs together.

    Attributes
    ----------
    executor_ : MASExecutor
        Runs the programs.
    builder_ : ConsistentPairBuilder
        The fitted pair builder.
    router_ : MASGPTRouter
        The fitted generator.
    pool_ : list of MASProgram
        The validated pool.
    train_calls_ : int
        Agent-LLM calls spent in ``fit``.
    last_programs_ : list of MASProgram
        The program generated for each query of the last ``predict``.
    last_calls_ : ndarray of shape (n_queries,)
        Agent-LLM calls of each query in the last ``predict``.
    last_results_ : list of MASResult
        The runs of the last ``predict``.
    last_raw_generations_ : list of str or None
        Raw generator replies of the last ``predict`` (None for the classifier generator).
    last_generation_errors_ : list of str or None
        Why the fallback replaced a generated program, per query.

    See Also
    --------
    MASGPTRouter, ConsistentPairBuilder, MASExecutor

    Notes
    -----
    The pipeline is MAS-GPT's [1]_: consistent pairs, a generator trained on them, and
    one generated MAS executed per query, with the fallback MAS after a timeout. The
    generator is :class:`MASGPTRouter` (see its Notes for how it stands in for the
    paper's fine-tuned LLM).

    References
    ----------
    .. [1] R. Ye et al., "MAS-GPT: Training LLMs to Build LLM-based Multi-Agent Systems",
       ICML 2025, arXiv:2503.03686: the pipeline from query-MAS pairs to answers.

    Examples
    --------
    >>> import warnings
    >>> from sklearn_icml.datasets import make_arithmetic_queries
    >>> from sklearn_icml.mas import (ArithmeticMockLLM, MASGPTSolver, UnsafeSandboxWarning,
    ...                               default_mas_pool)
    >>> warnings.simplefilter("ignore", UnsafeSandboxWarning)  # the built-in pool is trusted
    >>> q_train, a_train, _ = make_arithmetic_queries(30, random_state=0)
    >>> q_test, a_test, _ = make_arithmetic_queries(30, random_state=1)
    >>> solver = MASGPTSolver(llm=ArithmeticMockLLM(random_state=0), n_groups=3,
    ...                       pool=default_mas_pool(debate=False), sandbox="unsafe-inprocess",
    ...                       random_state=0).fit(q_train, a_train)
    >>> answers = solver.predict(["Add 2 and 40.", "Compute 10 times 10 minus 1."])
    >>> answers[0], [p.name for p in solver.last_programs_]
    ('ANSWER: 42', ['cot', 'self_consistency'])
    >>> 0.8 < solver.score(q_test, a_test) <= 1.0
    True
    """

    _parameter_constraints = {
        "llm": [callable, None],
        "pool": [list, tuple, None],
        "n_groups": [POSITIVE_INT],
        "repeats": [POSITIVE_INT],
        "consistency": ["boolean"],
        "refine_llm": [callable, None],
        "generator_llm": [callable, None],
        "timeout": [POSITIVE_REAL],
        "sandbox": [StrOptions({"process", "unsafe-inprocess"})],
        "allow_weak_isolation": ["boolean"],
        "answer_checker": [callable, None],
        "random_state": ["random_state"],
        "n_jobs": N_JOBS,
    }

    def __init__(self, *, llm=None, pool=None, n_groups=8, repeats=1, consistency=True,
                 refine_llm=None, generator_llm=None, timeout=60.0, sandbox="process",
                 allow_weak_isolation=False, answer_checker=None, random_state=None,
                 n_jobs=None):
        store_params(self, locals())

    @keyword_only_after(3)
    def fit(self, queries, answers, *, groups=None):
        """Build the training pairs and fit the generator.

        Parameters
        ----------
        queries : list of str
            Training queries: the pair builder runs every MAS of the pool on each, and the
            router learns from the pairs which design suits which query.
        answers : list
            Their gold answers, which ``answer_checker`` compares with the MAS answers.
        groups : array-like of shape (n_queries,), default=None
            Known groups of the queries (e.g. domains), within which the pair builder keeps
            the pairs consistent; None clusters the queries into ``n_groups``.

        Returns
        -------
        self : object
        """
        check_sandbox(self.sandbox, type(self).__name__)
        queries, answers = self._check_fit_input(
            queries, answers, "llm",
            "must be a callable (prompt, temperature) -> str, the agent LLM.",
        )
        self.executor_ = MASExecutor(llm=self.llm, timeout=self.timeout, sandbox=self.sandbox,
                                     allow_weak_isolation=self.allow_weak_isolation)
        self.builder_ = ConsistentPairBuilder(
            pool=self.pool, executor=self.executor_, n_groups=self.n_groups,
            repeats=self.repeats, refine_llm=self.refine_llm,
            answer_checker=self.answer_checker, random_state=self.random_state,
            n_jobs=self.n_jobs,
        ).fit(queries, answers, groups=groups)
        self.pool_ = self.builder_.pool_
        self.train_calls_ = int(round(self.builder_.calls_matrix_.sum() * self.repeats))
        if self.consistency:
            pairs = self.builder_.pairs_
            train_q = [q for q, _, _ in pairs]
            labels = [m for _, m, _ in pairs]
            programs = list(self.builder_.pair_programs_)
            rationales = [r for _, _, r in pairs]
        else:
            keep = np.flatnonzero(self.builder_.query_best_mas_ >= 0)
            train_q = [queries[i] for i in keep]
            labels = [int(self.builder_.query_best_mas_[i]) for i in keep]
            programs = [self.pool_[m] for m in labels]
            rationales = [self.pool_[m].rationale for m in labels]
        if not train_q:
            raise ValueError(
                "no MAS of the pool solved any training query, so there is no pair to learn "
                "from; check the agent LLM, the answers and answer_checker."
            )
        self.router_ = MASGPTRouter(
            pool=self.pool_, llm_backend=self.generator_llm, random_state=self.random_state
        ).fit(train_q, labels, programs=programs, rationales=rationales)
        return self

    def predict(self, queries):
        """Generate a MAS for each query and run it.

        Parameters
        ----------
        queries : list of str
            Queries to answer, one generated MAS each.

        Returns
        -------
        answers : list of (str or None)
            The final answer of each query's MAS (None when its run failed).
        """
        queries = self._fitted_queries(queries)
        programs, results, raws, notes = [], [], [], []
        generated = self.router_._generate_many(queries)
        jobs = [(program, query) for query, (program, _, _, _) in zip(queries, generated)]
        n_jobs = resolve_n_jobs(self.n_jobs)
        if n_jobs == 1:
            runs = [self.executor_.execute(program, query) for program, query in jobs]
        else:
            runs = Parallel(n_jobs=n_jobs, prefer="threads")(
                delayed(self.executor_.execute)(program, query) for program, query in jobs
            )
        for result, (program, raw, used_fallback, note) in zip(runs, generated):
            if used_fallback and not result.used_fallback:
                result = dataclasses.replace(result, used_fallback=True)
            programs.append(program)
            results.append(result)
            raws.append(raw)
            notes.append(note)
        self.last_programs_ = programs
        self.last_results_ = results
        self.last_raw_generations_ = raws
        self.last_generation_errors_ = notes
        self.last_calls_ = np.array([r.n_calls for r in results], dtype=np.int64)
        return [r.answer for r in results]

    def score(self, queries, answers):
        """Accuracy of :meth:`predict` on ``queries`` by ``answer_checker``.

        Parameters
        ----------
        queries : list of str
        answers : list
            Gold answers.

        Returns
        -------
        accuracy : float
        """
        queries = check_queries(queries)
        answers = check_answers(answers, len(queries))
        checker = self.answer_checker or default_answer_checker
        predictions = self.predict(queries)
        return float(np.mean([bool(checker(p, a)) for p, a in zip(predictions, answers)]))
