"""Progress of a long fit or run: one clock, plain lines in logs, a tqdm bar on a terminal.

Every estimator or runner with a ``verbose`` parameter reports through :class:`Progress`,
so that its output reads the same everywhere: ``verbose=0`` prints nothing; a larger value
prints progress to ``sys.stdout``, each line as ``[Name] what: key value, ..., 1.23 s``
with the seconds elapsed since the fit started (one clock for the whole fit, whatever
stages it runs), and the validation score where the method has one.

When the output is a terminal, tqdm is importable and the number of steps is known, the
steps show as one tqdm bar (which keeps its own elapsed time) and the other lines are
written above it with ``tqdm.write``. Otherwise (a log file, a pipe, a notebook cell's
captured output, no tqdm) every line is plain text: no ANSI codes, no carriage returns.
tqdm is optional: without it the output is the plain lines.
"""

import sys
import time
from numbers import Real

__all__ = ["Progress", "is_terminal"]

_clock = time.perf_counter  # looked up at each call, so that a test can replace it


def is_terminal(stream):
    """Whether ``stream`` is an interactive terminal (False when it cannot say).

    Examples
    --------
    >>> import io
    >>> from sklearn_icml.utils._progress import is_terminal
    >>> is_terminal(io.StringIO())
    False
    """
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty is not None and isatty())
    except (ValueError, OSError):  # a closed or detached stream
        return False


def _tqdm_class():
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


def _format_value(value):
    if isinstance(value, bool) or not isinstance(value, Real):
        return str(value)
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{float(value):.6g}"


def format_values(values):
    """``key value`` pairs joined by commas, underscores in keys read as spaces.

    Examples
    --------
    >>> from sklearn_icml.utils._progress import format_values
    >>> format_values({"objective": 0.123456789, "validation_loss": 2.0})
    'objective 0.123457, validation loss 2'
    """
    return ", ".join(
        f"{key.replace('_', ' ')} {_format_value(value)}" for key, value in values.items()
    )


class Progress:
    """The progress lines of one fit, timed by one clock.

    Parameters
    ----------
    name : str
        Who reports: the class name, written in brackets at the start of each line.
    verbose : int, default=0
        The estimator's ``verbose``: 0 prints nothing; a line of ``level`` ``L`` is printed
        when ``verbose >= L``.
    total : int or None, default=None
        Number of :meth:`step` calls the fit will make at most (epochs, iterations). When
        known, the output a terminal and tqdm importable, the steps show as a bar.
    stream : file-like or None, default=None
        Where to write; None is ``sys.stdout`` as it is when the first line is written.

    Attributes
    ----------
    start : float
        ``time.perf_counter()`` when the fit started (when the object was made).

    Examples
    --------
    >>> import io, re
    >>> from sklearn_icml.utils._progress import Progress
    >>> out = io.StringIO()
    >>> with Progress("Model", verbose=1, total=2, stream=out) as progress:
    ...     progress.step("epoch 1/2", loss=0.5)
    ...     progress.log("done", validation_score=0.75)
    >>> print(re.sub(r"[0-9.]+ s$", "t s", out.getvalue(), flags=re.M), end="")
    [Model] epoch 1/2: loss 0.5, t s
    [Model] done: validation score 0.75, t s
    """

    def __init__(self, name, verbose=0, *, total=None, stream=None):
        self.name = name
        self.verbose = int(verbose or 0)
        self.total = total
        self.stream = stream
        self.start = _clock()
        self._bar = None
        self._bar_checked = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def elapsed(self):
        """Seconds since the fit started."""
        return _clock() - self.start

    def enabled(self, level=1):
        """Whether lines of ``level`` are printed (``verbose >= level > 0``)."""
        return self.verbose >= level > 0

    def _out(self):
        return sys.stdout if self.stream is None else self.stream

    def _get_bar(self):
        if not self._bar_checked:
            self._bar_checked = True
            tqdm = _tqdm_class()
            stream = self._out()
            if self.total and tqdm is not None and is_terminal(stream):
                self._bar = tqdm(total=self.total, desc=self.name, file=stream, leave=True)
        return self._bar

    def _line(self, message, values):
        text = format_values(values)
        body = f"{message}: {text}" if message and text else (message or text)
        return f"[{self.name}] {body}, {self.elapsed:.2f} s"

    def log(self, message, *, level=1, **values):
        """Print one line: ``[name] message: key value, ..., seconds`` (when enabled).

        ``values`` (an objective, a loss, a validation score ...) are written as
        ``key value`` with underscores in keys read as spaces.
        """
        if not self.enabled(level):
            return
        line = self._line(message, values)
        bar = self._bar
        if bar is not None:
            bar.write(line, file=self._out())
        else:
            print(line, file=self._out(), flush=True)

    def step(self, message, *, level=1, **values):
        """One of the ``total`` steps: the bar advances on a terminal, else a line is printed."""
        if not self.enabled(level):
            return
        bar = self._get_bar()
        if bar is None:
            self.log(message, level=level, **values)
            return
        postfix = format_values(values)
        bar.set_postfix_str(f"{message}: {postfix}" if postfix else message, refresh=False)
        bar.update(1)

    def close(self):
        """Close the bar, if there is one (lines need no closing)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
