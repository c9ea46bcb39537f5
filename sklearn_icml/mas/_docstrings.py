"""Docstring pieces shared by the MAS-GPT classes, filled in by :func:`fill_doc`.

A docstring names a piece as ``%(name)s``; :func:`fill_doc` cleans the docstring's
indentation and substitutes the pieces, so that the citation of the paper and the
parameters that :class:`MASGPTSolver` passes on to :class:`ConsistentPairBuilder` and
:class:`MASExecutor` are written once.
"""

from ..utils._docstrings import fill_doc as _fill_doc

PIECES = {
    # the reference, without its label and the remark that says what it is cited for
    "mas_gpt_paper": """\
R. Ye et al., "MAS-GPT: Training LLMs to Build LLM-based Multi-Agent Systems",
   ICML 2025, arXiv:2503.03686""",
    # ------------------------------------------------------------- parameters
    "agent_llm": """\
llm : callable, default=None
    The agent LLM, ``llm(prompt, temperature) -> str``; required before the first run.""",
    "timeout": """\
timeout : float, default=60.0
    Seconds one MAS program may run (the reference uses 600).""",
    "sandbox": """\
sandbox : {"process", "unsafe-inprocess"}, default="process"
    Where the (generated) code runs: ``"process"``, a confined child process, for
    generated or untrusted code; ``"unsafe-inprocess"``, this process with its full
    rights and a best-effort timeout, for trusted programs only (it warns on every run).
    See :class:`MASExecutor`. The old spelling ``"inprocess"`` raises an error.""",
    "allow_weak_isolation": """\
allow_weak_isolation : bool, default=False
    Run in process mode even where the child cannot be fully confined (no seccomp filter
    on this platform or kernel, or a layer missing when checked), with the protections
    that are in force; every such run warns. False refuses to run there.""",
    "pool": """\
pool : list of MASProgram, default=None
    The candidate designs; None means :func:`default_mas_pool`.""",
    "n_groups": """\
n_groups : int, default=8
    Clusters of queries when ``fit`` is not given ``groups``.""",
    "repeats": """\
repeats : int, default=1
    Runs per (query, MAS) pair in the evaluation of the pool, averaged.""",
    "refine_llm": """\
refine_llm : callable, default=None
    ``refine_llm(prompt, temperature) -> str`` that adapts each pair's MAS to its query
    (intra-consistency).""",
    "answer_checker": """\
answer_checker : callable, default=None
    ``answer_checker(pred, gold) -> bool``; None means :func:`default_answer_checker`.""",
    # ------------------------------------------------------------- fit
    "fit_parameters": """\
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
self : object""",
}


def fill_doc(obj):
    """Substitute the shared ``%(name)s`` pieces into ``obj.__doc__``; return ``obj``.

    For a class, the docstrings of the methods it defines are filled too.
    """
    return _fill_doc(obj, PIECES)
