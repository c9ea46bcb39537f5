"""Every demo of the `make demo` tour runs, returns figures, and keeps to its time budget."""

import pytest

from sklearn_icml.__main__ import main
from sklearn_icml.demos import all_demos

DEMOS = all_demos()


@pytest.mark.slow
@pytest.mark.parametrize("demo", DEMOS, ids=[d.name for d in DEMOS])
def test_demo_runs_within_budget(demo):
    figures, seconds = demo.run()
    assert figures and all(isinstance(k, str) for k in figures)
    assert seconds <= demo.budget_s, f"{demo.name} took {seconds:.1f}s > {demo.budget_s}s"


def test_cli_only_runs_the_named_demo(capsys):
    assert main(["demo", "--only", "CAPASimilarity"]) == 0
    out = capsys.readouterr().out
    assert "CAPASimilarity" in out and "key figures" in out


def test_cli_rejects_unknown_demo():
    with pytest.raises(SystemExit, match="unknown demo"):
        main(["demo", "--only", "NoSuchMethod"])
