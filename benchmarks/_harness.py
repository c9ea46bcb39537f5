"""Shared pieces of the benchmarks: machine facts, median timing, ratio tables, results files.

A benchmark script builds a :class:`Report`, adds sections (tables of target vs measured,
peers side by side) and calls :meth:`Report.write`, which prints it and writes
``benchmarks/results/<name>.md``.
"""

import argparse
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
    return (
        f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, {versions}; "
        f"run {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}"
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


def fmt(value, digits=4):
    """Format numbers for tables: floats with ``digits`` significant digits."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        if value != value:
            return "nan"
        return f"{value:.{digits}g}"
    return str(value)


def table(headers, rows):
    """A markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(fmt(c) for c in row) + " |" for row in rows]
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
