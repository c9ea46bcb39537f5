"""DWMCharLM and its GRU module."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sklearn.exceptions import NotFittedError  # noqa: E402

from sklearn_icml.datasets import make_markov_languages  # noqa: E402
from sklearn_icml.weighting import CharGRUModule, DWMCharLM, one_step_hypergradient  # noqa: E402
from sklearn_icml.weighting._bilevel import sequence_nll  # noqa: E402

FAST = {"embedding_dim": 8, "hidden_size": 16, "max_iter": 20, "n_stages": 2,
        "dwm_steps_per_stage": 3, "batch_size": 16, "random_state": 0}


@pytest.fixture(autouse=True)
def _one_torch_thread():
    from sklearn_icml.utils._skorch import torch_threads

    with torch_threads(1):
        yield


@pytest.fixture(scope="module")
def data():
    return make_markov_languages(160, seq_len=10, n_val=40, n_test=40, random_state=0)


def test_gru_module_matches_torch_gru():
    torch.manual_seed(0)
    module = CharGRUModule(7, 5, 6).double()
    gru = torch.nn.GRU(5, 6, batch_first=True).double()
    with torch.no_grad():
        gru.weight_ih_l0.copy_(module.ih.weight)
        gru.bias_ih_l0.copy_(module.ih.bias)
        gru.weight_hh_l0.copy_(module.hh.weight)
        gru.bias_hh_l0.copy_(module.hh.bias)
    X = torch.randint(7, (3, 9))
    expected, _ = gru(module.embedding(X[:, :-1]))
    torch.testing.assert_close(module.hidden_states(X), expected)
    # the written-out cell (used under vmap and off the CPU) is the same recurrence
    torch.testing.assert_close(module._hidden_states_explicit(X), expected)


@pytest.mark.parametrize("mode", ["exact", "first_order"])
def test_lm_hypergradient_matches_finite_differences(mode):
    torch.manual_seed(1)
    module = CharGRUModule(6, 4, 5).double()
    X = torch.randint(6, (4, 7))
    Xv = torch.randint(6, (5, 7))
    w = torch.rand(4, dtype=torch.float64) + 0.5
    hyper = one_step_hypergradient(module, sequence_nll, (X, X), (Xv, Xv), w, 0.5, mode=mode)
    params = list(module.parameters())

    def val_after(wv):
        grads = torch.autograd.grad((wv * sequence_nll(module(X), X)).mean(), params)
        backup = [p.detach().clone() for p in params]
        with torch.no_grad():
            for p, g in zip(params, grads):
                p -= 0.5 * g
            out = sequence_nll(module(Xv), Xv).mean().item()
            for p, b in zip(params, backup):
                p.copy_(b)
        return out

    eps = 1e-6
    fd = []
    for i in range(4):
        e = torch.zeros(4, dtype=torch.float64)
        e[i] = eps
        fd.append((val_after(w + e) - val_after(w - e)) / (2 * eps))
    torch.testing.assert_close(hyper, torch.tensor(fd, dtype=torch.float64), rtol=1e-5,
                               atol=1e-10)


def test_fit_score_and_weights(data):
    lm = DWMCharLM(**FAST).fit(data.X, X_val=data.X_val)
    assert lm.vocab_size_ == 20 or lm.vocab_size_ == int(data.X.max()) + 1
    scores = lm.score_samples(data.X_test)
    assert scores.shape == (40,) and np.all(scores < 0)
    assert lm.score(data.X_test) == pytest.approx(scores.mean())
    w = lm.compute_weights(data.X[:16])
    assert np.all(w > 0) and w.mean() == pytest.approx(1.0)
    assert lm.n_iter_ == 20
    assert lm.history_[:, "valid_loss"][-1] == pytest.approx(-lm.score(data.X_val), rel=1e-5)


def test_first_order_mode_runs_with_the_gru(data):
    a = DWMCharLM(**FAST).fit(data.X, X_val=data.X_val)
    b = DWMCharLM(**FAST, hypergradient="first_order").fit(data.X, X_val=data.X_val)
    np.testing.assert_allclose(a.stage_weight_stats_[0]["dwm_val_losses"],
                               b.stage_weight_stats_[0]["dwm_val_losses"], rtol=1e-4)


def test_sample_features_and_stage_shares(data):
    onehot = np.eye(2)[data.language]
    lm = DWMCharLM(**FAST).fit(data.X, X_val=data.X_val, sample_features=onehot)
    share = lm.stage_weight_stats_[-1]["weight_share"]
    assert share.shape == (2,) and share.sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="sample_features must have 2 column"):
        lm.compute_weights(data.X[:5])


def test_bad_input(data):
    lm = DWMCharLM(**FAST)
    with pytest.raises(NotFittedError):
        lm.score(data.X_test)
    with pytest.raises(ValueError, match="non-integer"):
        lm.fit(data.X + 0.5)
    with pytest.raises(ValueError, match="Negative values"):
        lm.fit(data.X - 1)
    with pytest.raises(ValueError, match="outside 0..4"):
        DWMCharLM(**FAST, vocab_size=5).fit(data.X)
    with pytest.raises(ValueError, match="1 feature"):
        lm.fit(data.X[:, :1])
    with pytest.raises(ValueError, match="temperature"):
        DWMCharLM(**FAST, temperature=0).fit(data.X)
    lm.fit(data.X, X_val=data.X_val)
    with pytest.raises(ValueError, match="outside 0..19"):
        lm.score(np.full((2, 10), 25))
    with pytest.raises(ValueError, match="features"):
        lm.score(data.X_test[:, :5])
    with pytest.raises(ValueError, match="features"):
        DWMCharLM(**FAST).fit(data.X, X_val=data.X_val[:, :5])
