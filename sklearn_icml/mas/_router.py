"""MASGPTRouter: the one-inference query -> MAS generator (a classifier, or an LLM prompt)."""

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.utils._param_validation import HasMethods, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import NON_NEGATIVE_INT, POSITIVE_REAL
from ..utils._params import store_params
from ._program import MASProgram, fallback_mas
from ._sandbox import ALLOWED_MODULES, HELPER_NAMES, extract_code
from ._validation import StringInputMixin, check_pool, check_queries

GENERATOR_PROMPT = """You design a multi-agent system (MAS) for one query, written as Python code.

Template:
```python
class MAS:
    def __init__(self, model_list):
        self.llm = LLM(model_list)

    def forward(self, taskInfo):
        # agents are prompts sent with self.llm.call_llm(prompt); an agent's reply is pasted
        # into the next agent's prompt; return the final answer string
        ...
```
Helpers available without import: {helpers}. Allowed imports: {modules}.
No other top-level statements; no file, network or process access.
First write a short rationale linking the query's features to the design, then the complete
code in one ```python block.
{examples}
Query: {query}
"""


class MASGPTRouter(StringInputMixin, ClassifierMixin, BaseEstimator):
    """Map a query to a MAS in one inference: MAS-GPT's generator, in a CPU version.

    By default the generator is a text classifier (TF-IDF features, logistic regression)
    fitted on (query, MAS) pairs from :class:`ConsistentPairBuilder`; :meth:`generate`
    returns the pool program of the predicted class. With ``llm_backend`` it is one call of
    a generator LLM (temperature 0) whose prompt holds the MAS template, the helper list,
    the ``n_shots`` nearest training pairs (TF-IDF cosine) as examples and the query; the
    last fenced Python block of the reply is the program, and the fallback MAS replaces a
    reply without one, or one whose code the sandbox's checks refuse.

    Parameters
    ----------
    pool : list of MASProgram, default=None
        Programs the labels refer to (int labels index it, str labels name it); None means
        :func:`default_mas_pool`.
    vectorizer : "tfidf" or transformer, default="tfidf"
        Text features; a transformer with ``fit_transform``/``transform`` is cloned.
    C : float, default=1.0
        Inverse regularisation of the logistic regression.
    llm_backend : callable, default=None
        ``llm_backend(prompt, temperature) -> str``, the generator LLM.
    n_shots : int, default=3
        Training pairs shown to ``llm_backend`` as examples.
    random_state : int, RandomState instance or None, default=None
        Seed of the logistic regression's solver.
    fallback : MASProgram, default=None
        The program that replaces a generator reply without valid code; None means
        :func:`fallback_mas` (questions with a short answer). Code tasks take a design of
        :func:`code_mas_pool`.

    Attributes
    ----------
    classes_ : ndarray
        MAS labels seen in ``fit``.
    vectorizer_ : transformer
        The fitted text features.
    clf_ : LogisticRegression or None
        The fitted classifier (None when ``fit`` saw one class).
    pool_ : list of MASProgram
        The validated pool.
    train_queries_ : list of str
        Training queries (the few-shot examples of ``llm_backend``).

    See Also
    --------
    ConsistentPairBuilder : makes the training pairs.
    MASGPTSolver : pairs, router and executor end to end.

    Notes
    -----
    MAS-GPT [1]_ fine-tunes an LLM on the pairs, which then writes a new MAS per query.
    Without such a model, the default generator here is a classifier that picks one
    program of the pool per query (the MAS the fine-tuned model learns to reproduce);
    ``llm_backend`` plugs in a generator LLM, prompted with nearest training pairs.

    References
    ----------
    .. [1] R. Ye et al., "MAS-GPT: Training LLMs to Build LLM-based Multi-Agent Systems",
       ICML 2025, arXiv:2503.03686: the generator that builds a MAS in one inference.

    Examples
    --------
    >>> from sklearn_icml.mas import MASGPTRouter
    >>> queries = ["Add 1 and 2.", "Add 5 and 7.", "Compute 3 times 4 minus 1.",
    ...            "Compute 6 times 2 minus 9."]
    >>> router = MASGPTRouter().fit(queries, ["cot", "cot", "self_consistency",
    ...                                       "self_consistency"])
    >>> router.predict(["Add 3 and 4.", "Compute 2 times 2 minus 2."]).tolist()
    ['cot', 'self_consistency']
    >>> router.generate("Add 9 and 9.").name
    'cot'
    """

    _parameter_constraints = {
        "pool": [list, tuple, None],
        "vectorizer": [StrOptions({"tfidf"}), HasMethods(["fit_transform", "transform"])],
        "C": [POSITIVE_REAL],
        "llm_backend": [callable, None],
        "n_shots": [NON_NEGATIVE_INT],
        "random_state": ["random_state"],
        "fallback": [MASProgram, None],
    }

    def __init__(self, *, pool=None, vectorizer="tfidf", C=1.0, llm_backend=None, n_shots=3,
                 random_state=None, fallback=None):
        store_params(self, locals())

    @keyword_only_after(3)
    def fit(self, queries, mas_ids, *, programs=None, rationales=None):
        """Learn query -> MAS from training pairs.

        Parameters
        ----------
        queries : list of str
            Training queries.
        mas_ids : array-like of shape (n_queries,)
            The MAS of each query: indices into ``pool`` or pool names.
        programs : list of MASProgram, default=None
            The (refined) program of each pair, shown as examples to ``llm_backend``;
            None uses the pool program of the label.
        rationales : list of str, default=None
            The rationale of each pair, shown with the examples.

        Returns
        -------
        self : object
        """
        self._validate_params()
        queries = check_queries(queries)
        y = np.asarray(mas_ids)
        if y.shape != (len(queries),):
            raise ValueError(
                f"queries and mas_ids must have the same length. Got {len(queries)} queries "
                f"and mas_ids of shape {y.shape} instead."
            )
        self.pool_ = check_pool(self.pool)
        names = [p.name for p in self.pool_]
        for label in np.unique(y):
            label = label.item() if hasattr(label, "item") else label
            ok = (
                label in names if isinstance(label, str)
                else isinstance(label, numbers.Integral) and 0 <= label < len(names)
            )
            if not ok:
                raise ValueError(
                    f"mas_ids must be pool names {names!r} or indices in [0, {len(names)}). "
                    f"Got {label!r} instead."
                )
        for extra, label in ((programs, "programs"), (rationales, "rationales")):
            if extra is not None and len(extra) != len(queries):
                raise ValueError(
                    f"{label} must have one entry per query ({len(queries)}). Got "
                    f"{len(extra)} instead."
                )
        self.vectorizer_ = (
            TfidfVectorizer() if self.vectorizer == "tfidf" else clone(self.vectorizer)
        )
        features = self.vectorizer_.fit_transform(queries)
        self.classes_ = np.unique(y)
        if self.classes_.shape[0] == 1:
            self.clf_ = None
        else:
            self.clf_ = LogisticRegression(C=self.C, max_iter=1000, random_state=self.random_state)
            self.clf_.fit(features, y)
        self.train_queries_ = queries
        self._train_features = features
        self._train_labels = y
        self._train_programs = None if programs is None else list(programs)
        self._train_rationales = None if rationales is None else list(rationales)
        return self

    def predict(self, queries):
        """The MAS label of each query.

        Parameters
        ----------
        queries : list of str
            Queries to route.

        Returns
        -------
        labels : ndarray of shape (n_queries,)
        """
        queries = self._fitted_queries(queries)
        if self.clf_ is None:
            return np.full(len(queries), self.classes_[0], dtype=self.classes_.dtype)
        return self.clf_.predict(self.vectorizer_.transform(queries))

    def predict_proba(self, queries):
        """Probability of each MAS label, columns in the order of ``classes_``.

        Parameters
        ----------
        queries : list of str
            Queries to score against every label.

        Returns
        -------
        proba : ndarray of shape (n_queries, n_classes)
            One row per query, summing to 1 (a column of ones when ``fit`` saw one label).
        """
        queries = self._fitted_queries(queries)
        if self.clf_ is None:
            return np.ones((len(queries), 1))
        return self.clf_.predict_proba(self.vectorizer_.transform(queries))

    def _program_of(self, label):
        if isinstance(label, str):
            return next(p for p in self.pool_ if p.name == label)
        return self.pool_[int(label)]

    def generate(self, query):
        """The MAS program for ``query``, from one inference of the generator.

        Parameters
        ----------
        query : str

        Returns
        -------
        program : MASProgram
        """
        return self._generate_one(query)[0]

    def _generate_many(self, queries):
        """``_generate_one`` for each query; the classifier routes them in one batch."""
        if self.llm_backend is None:
            check_is_fitted(self)
            labels = self.predict(queries)
            return [(self._program_of(label), None, False, None) for label in labels]
        return [self._generate_one(query) for query in queries]

    def _generate_one(self, query):
        """``(program, raw_text, used_fallback, note)`` for one query."""
        check_is_fitted(self)
        (query,) = check_queries([query], "query")
        if self.llm_backend is None:
            return self._program_of(self.predict([query])[0]), None, False, None
        raw = self.llm_backend(self._prompt(query), 0.0)
        if not isinstance(raw, str):
            raw = "" if raw is None else str(raw)
        code = extract_code(raw)
        if code is None:
            return self._fallback(), raw, True, "no fenced code block in the generator's reply"
        fence = raw.rfind("```", 0, raw.rfind("```"))
        program = MASProgram("generated", code, raw[:fence].strip())
        try:
            program.validate()
        except (ValueError, TypeError) as exc:
            return self._fallback(), raw, True, f"generated code refused: {exc}"
        return program, raw, False, None

    def _fallback(self):
        return fallback_mas() if self.fallback is None else self.fallback

    def _prompt(self, query):
        examples = ""
        if self.n_shots and self.train_queries_:
            sims = (self._train_features @ self.vectorizer_.transform([query]).T).toarray()
            order = np.argsort(-sims.ravel(), kind="stable")[: self.n_shots]
            parts = []
            for i in order:
                program = (
                    self._train_programs[i] if self._train_programs is not None
                    else self._program_of(self._train_labels[i])
                )
                rationale = (
                    self._train_rationales[i] if self._train_rationales is not None
                    else program.rationale
                )
                parts.append(
                    f"\nExample query: {self.train_queries_[i]}\nRationale: {rationale}\n"
                    f"```python\n{program.code}```\n"
                )
            examples = "\nExamples:" + "".join(parts)
        return GENERATOR_PROMPT.format(
            helpers=", ".join(HELPER_NAMES), modules=", ".join(sorted(ALLOWED_MODULES)),
            examples=examples, query=query,
        )
