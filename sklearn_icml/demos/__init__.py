"""The tour that ``make demo`` runs: one short demo per implemented method.

Each method adds a module ``sklearn_icml/demos/<method>.py`` (the method's slug with
underscores) that decorates one function with :func:`register_demo`. The function takes
no argument, fits the method on generated or bundled data in under 30 s on 2 cores, and
returns a dict of key figures (name -> number or short string). Modules are discovered
automatically, so a new method never edits a shared list.
"""

import dataclasses
import importlib
import pkgutil
import time

_REGISTRY = {}


@dataclasses.dataclass(frozen=True)
class Demo:
    """One entry of the tour."""

    name: str
    what: str
    budget_s: float
    func: object

    def timed_call(self, *, return_cpu_time=False):
        """Call the demo, timed: ``(figures, seconds)`` or ``(figures, seconds, cpu_seconds)``.

        ``cpu_seconds`` is the CPU time of this process (all its threads): on an idle machine
        it bounds the wall time from above, and unlike wall time it does not grow when other
        programs load the machine, so the tests hold demos to their budget with it.
        """
        start, start_cpu = time.perf_counter(), time.process_time()
        figures = self.func()
        seconds = time.perf_counter() - start
        cpu_seconds = time.process_time() - start_cpu
        if not isinstance(figures, dict) or not figures:
            raise TypeError(f"demo {self.name!r} must return a non-empty dict of figures")
        return (figures, seconds, cpu_seconds) if return_cpu_time else (figures, seconds)


def register_demo(name, *, what, budget_s=30.0):
    """Decorator adding ``func`` to the tour under ``name``.

    Parameters
    ----------
    name : str
        The method's public name as shown in the table (e.g. ``"CAPASimilarity"``).
    what : str
        One line saying what the demo fits and on which data.
    budget_s : float, default=30.0
        Seconds the demo may take on 2 cores; the tests hold it to that.
    """

    def decorator(func):
        if name in _REGISTRY:
            raise ValueError(f"a demo named {name!r} is registered twice")
        _REGISTRY[name] = Demo(name=name, what=what, budget_s=float(budget_s), func=func)
        return func

    return decorator


def all_demos():
    """Import every demo module of this package and return the demos sorted by name."""
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")
    return [_REGISTRY[name] for name in sorted(_REGISTRY)]


def format_figures(figures):
    """Render a figures dict as ``key=value`` pairs with 4 significant digits."""
    parts = []
    for key, value in figures.items():
        if isinstance(value, float):
            value = f"{value:.4g}"
        parts.append(f"{key}={value}")
    return ", ".join(parts)
