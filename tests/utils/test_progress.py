"""Progress lines: elapsed time, plain text off a terminal, a tqdm bar on one, silence at 0."""

import io
import itertools
import re

import pytest

from sklearn_icml.utils import _progress
from sklearn_icml.utils._progress import Progress, format_values, is_terminal

LINE = re.compile(r"^\[(?P<name>[^\]]+)\] (?P<body>.*), (?P<seconds>\d+\.\d\d) s$")


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self):
        return True


@pytest.fixture
def clock(monkeypatch):
    """perf_counter that advances one second per call."""
    ticks = itertools.count()
    monkeypatch.setattr(_progress, "_clock", lambda: float(next(ticks)))


def test_plain_lines_with_elapsed_time_when_stdout_is_not_a_terminal(capsys, clock):
    progress = Progress("Model", verbose=1, total=3)
    for epoch in range(1, 4):
        progress.step(f"epoch {epoch}/3", loss=1.0 / epoch, validation_score=0.5)
    progress.log("done")
    progress.close()
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out
    lines = out.splitlines()
    assert len(lines) == 4
    matches = [LINE.match(line) for line in lines]
    assert all(matches), lines
    assert matches[0]["body"] == "epoch 1/3: loss 1, validation score 0.5"
    assert matches[3]["body"] == "done"
    seconds = [float(m["seconds"]) for m in matches]
    assert seconds == sorted(seconds) and seconds[0] > 0  # one clock, started at creation


def test_verbose_zero_prints_nothing(capsys):
    progress = Progress("Model", verbose=0, total=2, stream=Terminal())
    progress.step("epoch 1/2", loss=0.5)
    progress.log("done")
    progress.close()
    assert capsys.readouterr().out == "" and progress.stream.getvalue() == ""
    assert not progress.enabled()


def test_level_two_lines_need_verbose_two():
    out = io.StringIO()
    progress = Progress("Model", verbose=1, stream=out)
    progress.log("detail", level=2)
    progress.log("summary")
    assert "detail" not in out.getvalue() and "summary" in out.getvalue()


def test_a_tqdm_bar_only_on_a_terminal_with_known_total():
    pytest.importorskip("tqdm")
    term = Terminal()
    with Progress("Model", verbose=1, total=3, stream=term) as progress:
        for epoch in range(1, 4):
            progress.step(f"epoch {epoch}/3", loss=0.25)
        progress.log("best epoch 2")
    text = term.getvalue()
    assert "\r" in text and "3/3" in text and "Model" in text  # tqdm's bar
    assert "[Model] best epoch 2" in text  # other lines written above the bar
    assert "[Model] epoch 1/3" not in text  # steps are the bar, not lines
    # no known total: plain lines, even on a terminal
    term = Terminal()
    Progress("Model", verbose=1, stream=term).step("iteration 1", loss=0.25)
    assert "\r" not in term.getvalue() and LINE.match(term.getvalue().strip())


def test_without_tqdm_a_terminal_gets_plain_lines(monkeypatch):
    monkeypatch.setattr(_progress, "_tqdm_class", lambda: None)
    term = Terminal()
    with Progress("Model", verbose=1, total=2, stream=term) as progress:
        progress.step("epoch 1/2", loss=0.5)
    assert "\r" not in term.getvalue() and "\x1b" not in term.getvalue()
    assert LINE.match(term.getvalue().strip())


def test_is_terminal_and_format_values():
    assert is_terminal(Terminal()) and not is_terminal(io.StringIO())
    closed = io.StringIO()
    closed.close()
    assert not is_terminal(closed) and not is_terminal(object())
    assert format_values({"n_stumps": 12, "loss": 0.1234567, "case": None}) == (
        "n stumps 12, loss 0.123457, case None"
    )
