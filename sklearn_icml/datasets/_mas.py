"""Arithmetic word problems of three families: the CPU test bed of MAS-GPT."""


import numpy as np
from sklearn.utils._param_validation import validate_params

from ..utils import check_random_state
from ..utils._deprecation import keyword_only_after
from ..utils._param_validation import POSITIVE_INT

FAMILIES = ("add", "mixed", "solve")


@keyword_only_after(1)
@validate_params(
    {
        "n_per_family": [POSITIVE_INT],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_arithmetic_queries(n_per_family=100, *, random_state=None):
    """Queries of the families ``add``, ``mixed`` and ``solve``, with their answers.

    - ``add``: "Add {a} and {b}." with a, b in [10, 99]; answer a + b.
    - ``mixed``: "Compute {a} times {b} minus {c}." with a, b in [10, 99], c in [1, 999];
      answer a * b - c.
    - ``solve``: "Find the integer x such that {a}*x + {b} = {c}." with a in [2, 19],
      x in [-50, 50], b in [-99, 99], c = a * x + b; answer x.

    Parameters
    ----------
    n_per_family : int, default=100
        Queries per family.
    random_state : int, RandomState instance or None, default=None
        Seed of the draws.

    Returns
    -------
    queries : list of str
        ``3 * n_per_family`` queries, family by family in the order above.
    answers : ndarray of shape (3 * n_per_family,), dtype int64
        The integer answers.
    families : ndarray of shape (3 * n_per_family,), dtype object
        The family of each query.

    Notes
    -----
    MAS-GPT (R. Ye et al., ICML 2025, arXiv:2503.03686) evaluates on benchmarks such as
    MATH and GSM8K with real LLMs. These three families are this library's stand-in:
    with :class:`~sklearn_icml.mas.ArithmeticMockLLM` each family has a different best
    MAS.

    Examples
    --------
    >>> from sklearn_icml.datasets import make_arithmetic_queries
    >>> queries, answers, families = make_arithmetic_queries(1, random_state=0)
    >>> len(queries), list(families)
    (3, ['add', 'mixed', 'solve'])
    >>> queries[0].startswith("Add ")
    True
    """
    n = int(n_per_family)
    rng = check_random_state(random_state)
    queries, answers, families = [], [], []
    for _ in range(n):
        a, b = rng.randint(10, 100, size=2)
        queries.append(f"Add {a} and {b}.")
        answers.append(a + b)
    for _ in range(n):
        a, b = rng.randint(10, 100, size=2)
        c = rng.randint(1, 1000)
        queries.append(f"Compute {a} times {b} minus {c}.")
        answers.append(a * b - c)
    for _ in range(n):
        a, x, b = rng.randint(2, 20), rng.randint(-50, 51), rng.randint(-99, 100)
        queries.append(f"Find the integer x such that {a}*x + {b} = {a * x + b}.")
        answers.append(x)
    for family in FAMILIES:
        families.extend([family] * n)
    return queries, np.asarray(answers, dtype=np.int64), np.asarray(families, dtype=object)
