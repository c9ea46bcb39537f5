"""Every demo of the `make demo` tour runs, returns figures, and keeps to its time budget."""

import pytest

from sklearn_icml.__main__ import main
from sklearn_icml.demos import all_demos

DEMOS = all_demos()


@pytest.mark.slow
@pytest.mark.parametrize("demo", DEMOS, ids=[d.name for d in DEMOS])
def test_demo_runs_within_budget(demo):
    figures, _, cpu_seconds = demo.timed_call(return_cpu_time=True)
    assert figures and all(isinstance(k, str) for k in figures)
    # CPU time: at least the wall time of an idle run, and immune to a loaded machine
    assert cpu_seconds <= demo.budget_s, (
        f"{demo.name} used {cpu_seconds:.1f} s of CPU > budget {demo.budget_s} s"
    )


def test_cli_only_runs_the_named_demo(capsys):
    assert main(["demo", "--only", "CAPASimilarity"]) == 0
    out = capsys.readouterr().out
    assert "CAPASimilarity" in out and "key figures" in out


def test_cli_rejects_unknown_demo():
    with pytest.raises(SystemExit, match="unknown demo"):
        main(["demo", "--only", "NoSuchMethod"])
