"""The names renamed in 0.3 still work for one release, warn FutureWarning naming the new
name, and give the same result as the new name."""

import numpy as np
import pytest

pytest.importorskip("torch")
import torch  # noqa: E402

from sklearn_icml.datasets import make_markov_languages  # noqa: E402
from sklearn_icml.weighting import (  # noqa: E402
    DWMCharLM,
    DWMClassifier,
    DWMRegressor,
    one_step_hypergradient,
)

FAST = {"max_iter": 12, "n_stages": 2, "dwm_steps_per_stage": 2, "batch_size": 16,
        "random_state": 0}


def _data(n=80, d=4):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    return X, X[:, 0] + 0.1 * rng.normal(size=n)


@pytest.mark.parametrize("Estimator", [DWMClassifier, DWMRegressor])
@pytest.mark.parametrize(
    "old, new, value",
    [
        ("hidden_sizes", "hidden_layer_sizes", (5,)),
        ("lr", "learning_rate", 0.05),
        ("dwm_lr", "dwm_learning_rate", 0.01),
        ("lookahead_lr", "lookahead_learning_rate", 0.02),
    ],
)
def test_tabular_dwm_old_parameter_names(Estimator, old, new, value):
    X, y = _data()
    if Estimator is DWMClassifier:
        y = (y > 0).astype(int)
    expected = Estimator(**FAST, **{new: value}).fit(X, y)
    with pytest.warns(FutureWarning, match=f"`{old}` was renamed `{new}`"):
        got = Estimator(**FAST, **{old: value}).fit(X, y)
    np.testing.assert_array_equal(got.predict(X), expected.predict(X))
    np.testing.assert_array_equal(got.stage_weight_sums_, expected.stage_weight_sums_)


def test_tabular_dwm_old_and_new_name_together_raise():
    X, y = _data()
    with pytest.raises(ValueError, match="pass only learning_rate"):
        DWMRegressor(**FAST, lr=0.05, learning_rate=0.2).fit(X, y)


@pytest.mark.parametrize(
    "old, new, value",
    [("lr", "learning_rate", 0.02), ("dwm_lr", "dwm_learning_rate", 0.01),
     ("lookahead_lr", "lookahead_learning_rate", 0.03)],
)
def test_char_lm_old_parameter_names(old, new, value):
    data = make_markov_languages(60, seq_len=6, n_val=10, n_test=10, random_state=0)
    params = {**FAST, "embedding_dim": 4, "hidden_size": 8}
    expected = DWMCharLM(**params, **{new: value}).fit(data.X, X_val=data.X_val)
    with pytest.warns(FutureWarning, match=f"`{old}` was renamed `{new}`"):
        got = DWMCharLM(**params, **{old: value}).fit(data.X, X_val=data.X_val)
    assert got.score(data.X_test) == expected.score(data.X_test)


def test_one_step_hypergradient_old_lr_keyword():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)

    def loss_fn(out, y):
        return (out.squeeze(-1) - y) ** 2

    X, y, Xv, yv = torch.randn(4, 3), torch.randn(4), torch.randn(5, 3), torch.randn(5)
    expected = one_step_hypergradient(model, loss_fn, (X, y), (Xv, yv), torch.ones(4),
                                      learning_rate=0.1)
    with pytest.warns(FutureWarning, match="`lr` was renamed `learning_rate`"):
        got = one_step_hypergradient(model, loss_fn, (X, y), (Xv, yv), torch.ones(4), lr=0.1)
    assert torch.equal(got, expected)
    with pytest.raises(ValueError, match="pass only learning_rate"):
        one_step_hypergradient(model, loss_fn, (X, y), (Xv, yv), torch.ones(4), 0.1, lr=0.1)
    with pytest.raises(TypeError, match="needs learning_rate"):
        one_step_hypergradient(model, loss_fn, (X, y), (Xv, yv), torch.ones(4))


def test_compute_weights_batch_size_by_position_warns():
    from sklearn_icml.weighting import WeightingMLP, compute_weights

    u = np.random.default_rng(0).normal(size=(10, 3))
    torch.manual_seed(0)
    model = WeightingMLP(3)
    torch.nn.init.normal_(model.out.weight)
    expected = compute_weights(model, u, batch_size=4)
    with pytest.warns(FutureWarning, match="batch_size"):
        got = compute_weights(model, u, 4)
    np.testing.assert_array_equal(got, expected)

    X, y = _data()
    reg = DWMRegressor(**FAST).fit(X, y)
    expected = reg.compute_weights(X[:20], y[:20], None, batch_size=5)
    with pytest.warns(FutureWarning, match="batch_size"):
        got = reg.compute_weights(X[:20], y[:20], None, 5)
    np.testing.assert_array_equal(got, expected)

    data = make_markov_languages(60, seq_len=6, n_val=10, n_test=10, random_state=0)
    lm = DWMCharLM(**FAST, embedding_dim=4, hidden_size=8).fit(data.X, X_val=data.X_val)
    expected = lm.compute_weights(data.X[:20], None, batch_size=5)
    with pytest.warns(FutureWarning, match="batch_size"):
        got = lm.compute_weights(data.X[:20], None, 5)
    np.testing.assert_array_equal(got, expected)
