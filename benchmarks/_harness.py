"""Shared pieces of the benchmarks: machine facts, median timing, targets, results files.

A benchmark script parses the common command line (:func:`parse_args`, ``--quick``),
times fits with :func:`median_time` / :func:`timed_fit` (medians of repeats, compared as
ratios measured in the same run), checks measured values against :class:`Target` bands,
builds a :class:`Report`, adds sections (tables of target vs measured, peers side by side)
and calls :meth:`Report.write`, which prints it and writes ``benchmarks/results/<name>.md``.
No script keeps its own copy of these.
"""

import argparse
import dataclasses
import datetime
import importlib.metadata
import os
import platform
import statistics
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def parse_args(description, argv=None):
    """The common command line: ``--quick`` for a smoke run with smaller sizes."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--quick", action="store_true", help="small sizes, for a smoke run (not for results)"
    )
    return parser.parse_args(argv)


def package_version(name):
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def machine_info(packages=("numpy", "scipy", "scikit-learn", "numba")):
    """One line of facts about this machine and the package versions that matter."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    versions = ", ".join(f"{p} {package_version(p)}" for p in packages)
    try:
        load = "load average " + " / ".join(f"{v:.1f}" for v in os.getloadavg())
    except OSError:
        load = "load average unknown"
    return (
        f"{os.cpu_count()} cores ({cpu}), {load}, Python {platform.python_version()}, "
        f"{versions}; run {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}"
    )


def median_time(func, *, repeat=3, warmup=1):
    """Median wall time of ``func()`` in seconds over ``repeat`` runs, after ``warmup``.

    Returns ``(seconds, last_result)``.
    """
    result = None
    for _ in range(warmup):
        result = func()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def timed_fit(estimator, X, y=None, *, repeat=3, warmup=0, **fit_params):
    """Median wall time of fitting a fresh clone of ``estimator`` on ``(X, y)``.

    Every repeat fits its own ``sklearn.base.clone`` so no run reuses another's state.
    Returns ``(seconds, fitted_estimator)`` (the last fit).
    """
    from sklearn.base import clone

    def fit_once():
        model = clone(estimator)
        return model.fit(X, **fit_params) if y is None else model.fit(X, y, **fit_params)

    return median_time(fit_once, repeat=repeat, warmup=warmup)


@dataclasses.dataclass(frozen=True)
class Target:
    """A target band for a measured value: ``lo <= value <= hi`` (either side open).

    >>> Target(0.9).check(0.95), Target(hi=0.1).check(0.2), str(Target(0.2, 0.4))
    ('met', 'MISSED', '[0.2, 0.4]')
    """

    lo: float | None = None
    hi: float | None = None

    def met(self, value):
        value = float(value)
        if value != value:
            return False
        return (self.lo is None or value >= self.lo) and (self.hi is None or value <= self.hi)

    def check(self, value):
        """``'met'`` or ``'MISSED'``, for the results table."""
        return "met" if self.met(value) else "MISSED"

    def __str__(self):
        if self.lo is not None and self.hi is not None:
            return f"[{fmt(self.lo)}, {fmt(self.hi)}]"
        if self.lo is not None:
            return f">= {fmt(self.lo)}"
        return f"<= {fmt(self.hi)}"


def fmt(value, digits=4):
    """Format numbers for tables: floats with ``digits`` significant digits."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        if value != value:
            return "nan"
        return f"{value:.{digits}g}"
    return str(value)


def _cell(text):
    # a "|" inside a cell (|beta_A|^2, say) would end the cell and break the whole table
    return str(text).replace("|", "\\|")


def table(headers, rows):
    """A markdown table."""
    lines = ["| " + " | ".join(_cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_cell(fmt(c)) for c in row) + " |" for row in rows]
    return "\n".join(lines)


class Report:
    """Collects sections and writes ``benchmarks/results/<name>.md``."""

    def __init__(self, name, title, *, quick=False, packages=("numpy", "scikit-learn")):
        self.name = name
        self.title = title
        self.quick = quick
        self.sections = [f"# {title}", "", f"Machine: {machine_info(packages)}", ""]
        if quick:
            self.sections += ["**--quick run: reduced sizes, not the reported results.**", ""]

    def add(self, heading, text):
        self.sections += [f"## {heading}", "", text, ""]
        print(f"\n## {heading}\n{text}", flush=True)

    def add_table(self, heading, headers, rows, note=None):
        text = table(headers, rows)
        if note:
            text += f"\n\n{note}"
        self.add(heading, text)

    def write(self):
        """Write the markdown file (a --quick run writes ``<name>.quick.md``)."""
        RESULTS.mkdir(exist_ok=True)
        suffix = ".quick.md" if self.quick else ".md"
        path = RESULTS / f"{self.name}{suffix}"
        path.write_text("\n".join(self.sections))
        print(f"\nwrote {path}")
        return path
