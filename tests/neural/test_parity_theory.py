"""The two-representation effective theory (gradient-flow ODEs) of merger."""

import numpy as np
import pytest

from sklearn_icml.neural import effective_theory_ode


@pytest.mark.parametrize("lengths", [(1, 1), (1, 5), (3, 3), (1, 10)])
@pytest.mark.parametrize("targets", [(1.0, 1.0), (1.0, -1.0)])
def test_loss_is_non_increasing(lengths, targets):
    sol = effective_theory_ode(lengths=lengths, targets=targets, t_max=3000, n_points=301)
    assert np.all(np.diff(sol["loss"]) <= 1e-12)
    assert sol["loss"][-1] < 1e-3 * sol["loss"][0]


def test_equal_lengths_and_targets_converge_to_one_fixed_point():
    sol = effective_theory_ode(h=(0.3, -0.2), lengths=(4, 4), targets=(1.0, 1.0), t_max=20000)
    assert abs(sol["h1"][-1] - sol["h2"][-1]) < 1e-6
    # at the fixed point both read-outs hit the target: b.D + h D2 = D.y
    h1, h2, bD, by1, by2, b2, D2, Dy1, Dy2 = sol["state"][:, -1]
    assert bD + h1 * D2 - Dy1 == pytest.approx(0.0, abs=1e-6)


def test_distance_ratio_falls_with_the_second_length():
    # the paper's effective theory: ~0.61, ~0.018, ~1e-7 for len_2 = 1, 5, 10 (factor 2;
    # < 1e-5 for the last)
    ratios = [effective_theory_ode(lengths=(1, k))["ratio"] for k in range(1, 11)]
    assert np.all(np.diff(ratios) < 0)
    assert 0.61 / 2 < ratios[0] < 0.61 * 2
    assert 0.018 / 2 < ratios[4] < 0.018 * 2
    assert ratios[9] < 1e-5


def test_different_targets_push_apart():
    assert effective_theory_ode(lengths=(1, 1), targets=(1.0, -1.0))["ratio"] > 10


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"h": (0.1,)}, "h must be a pair"),
        ({"h": (0.1, 0.1)}, "two different"),
        ({"lengths": (0, 1)}, "lengths"),
        ({"learning_rate": 0.0}, "learning_rate"),
        ({"t_max": -1.0}, "t_max"),
        ({"targets": (np.nan, 1.0)}, "targets"),
        ({"n_points": 1}, "n_points"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        effective_theory_ode(**kwargs)


def test_lr_is_renamed_learning_rate_and_settings_are_keyword_only():
    reference = effective_theory_ode(learning_rate=0.05, n_points=11)["ratio"]
    with pytest.warns(FutureWarning, match="`lr` was renamed `learning_rate`"):
        assert effective_theory_ode(lr=0.05, n_points=11)["ratio"] == reference
    with pytest.warns(FutureWarning, match="D2_0"):
        by_position = effective_theory_ode((0.1, -0.1), 0.02, n_points=11)["ratio"]
    assert by_position == effective_theory_ode(D2_0=0.02, n_points=11)["ratio"]
