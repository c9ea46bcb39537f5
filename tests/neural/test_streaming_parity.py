"""StreamingParityRNNClassifier, its torch module and its length-bucket loader."""

import pickle
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
skorch = pytest.importorskip("skorch")

from sklearn.base import clone  # noqa: E402
from sklearn.exceptions import ConvergenceWarning, NotFittedError  # noqa: E402

from sklearn_icml.datasets import make_streaming_parity  # noqa: E402
from sklearn_icml.neural import (  # noqa: E402
    ParityRNNModule,
    StreamingParityRNNClassifier,
    extract_automaton,
    merger_fraction,
)
from sklearn_icml.neural._streaming_parity import LengthBucketLoader  # noqa: E402

FAST = {"hidden_size": 8, "max_epochs": 3, "random_state": 0}


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Tiny networks: one thread (2 threads on a busy 2-core machine are far slower)."""
    from sklearn_icml.utils._skorch import torch_threads

    with torch_threads(1):
        yield


@pytest.fixture(scope="module")
def small_data():
    return make_streaming_parity(max_length=5)


@pytest.fixture(scope="module")
def fitted(small_data):
    X, y = small_data
    return StreamingParityRNNClassifier(**FAST).fit(X, y)


# ---------------------------------------------------------------- the torch module


def _hand_built_parity_module():
    """An exact ReLU parity RNN with h_0 = ones.

    Units u_qa (q the parity before the symbol, a the symbol) and z, which is 1 only in
    h_0. The parity after the symbol is e_0 = u00 + u11 - z (even), e_1 = u01 + u10 - 2z
    (odd); u'_qa = relu(e_q + x_a - 1) and z' = relu(-1) = 0. h_0 = ones reads as even.
    """
    module = ParityRNNModule(hidden_size=5, n_outputs=2)
    even = [1.0, 0.0, 0.0, 1.0, -1.0]
    odd = [0.0, 1.0, 1.0, 0.0, -2.0]
    w_hh = torch.tensor([even, even, odd, odd, [0.0] * 5])
    w_ih = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    with torch.no_grad():
        module.rnn.weight_hh_l0.copy_(w_hh)
        module.rnn.weight_ih_l0.copy_(w_ih)
        module.rnn.bias_ih_l0.fill_(-1.0)
        module.rnn.bias_hh_l0.zero_()
        module.fc.weight.copy_(torch.tensor([even, odd]))
        module.fc.bias.zero_()
    return module


def test_hand_built_parity_rnn_generalises_and_gives_a_two_state_automaton():
    module = _hand_built_parity_module()
    X, y = make_streaming_parity(10000, 9990, n_per_length=2, random_state=0)
    with torch.no_grad():
        out = module.double()(torch.as_tensor(X))
    assert np.array_equal(out.argmax(dim=1).numpy(), y)
    train_X, _ = make_streaming_parity(6)
    auto = extract_automaton(module.float(), train_X)
    assert auto.n_states == 5 and auto.is_complete()  # h_0 and the four u_qa
    minimal = auto.minimize()
    assert minimal.n_states == 2 and minimal.is_complete()
    assert np.array_equal(minimal.predict(X), y)


def test_initialisation_follows_the_paper():
    torch.manual_seed(0)
    module = ParityRNNModule(hidden_size=400, init_gain=0.1)
    assert torch.equal(module.h0, torch.ones(400))
    w = module.rnn.weight_hh_l0
    expected_std = 0.1 * np.sqrt(2.0 / (400 + 400))
    assert float(w.detach().std()) == pytest.approx(expected_std, rel=0.05)
    for bias in (module.rnn.bias_ih_l0, module.rnn.bias_hh_l0, module.fc.bias):
        assert torch.count_nonzero(bias) == 0


def test_packed_mixed_lengths_equal_one_length_at_a_time():
    torch.manual_seed(1)
    module = ParityRNNModule(hidden_size=6, init_gain=1.0).double()
    X, _ = make_streaming_parity(6, 1, n_per_length=3, random_state=2)
    X = X[np.random.default_rng(0).permutation(X.shape[0])]
    together = module(torch.as_tensor(X))
    for i, row in enumerate(X):
        alone = module(torch.as_tensor(row[row >= 0][None, :]))
        assert torch.allclose(together[i], alone[0], atol=1e-12)
    # a row of padding only is the empty sequence: the read-out of h_0
    empty = module(torch.full((1, 4), -1))
    assert torch.allclose(empty[0], module.fc(module.h0))


@pytest.mark.parametrize("nonlinearity", ["relu", "tanh"])
def test_gradcheck(nonlinearity):
    torch.manual_seed(0)
    module = ParityRNNModule(hidden_size=4, init_gain=1.0, nonlinearity=nonlinearity).double()
    X = torch.tensor([[0, 1, 1, 0], [1, 1, -1, -1], [1, 0, 1, -1]])
    names = [n for n, _ in module.named_parameters()]
    params = tuple(p.detach().clone().requires_grad_(True) for p in module.parameters())

    def f(*values):
        return torch.func.functional_call(module, dict(zip(names, values)), (X,))

    assert torch.autograd.gradcheck(f, params, eps=1e-6, atol=1e-6)


def test_two_biases_act_as_one_bias_with_twice_the_learning_rate():
    torch.manual_seed(3)
    lr = 0.1
    module = ParityRNNModule(hidden_size=5, init_gain=1.0)
    with torch.no_grad():  # non-zero biases, so the check is not trivial
        module.rnn.bias_ih_l0.normal_()
        module.rnn.bias_hh_l0.normal_()
    X = torch.tensor([[0, 1, 1], [1, 0, 1], [1, 1, 1]])
    target = torch.eye(2)[[0, 0, 1]]
    w_ih = module.rnn.weight_ih_l0.detach().clone().requires_grad_(True)
    w_hh = module.rnn.weight_hh_l0.detach().clone().requires_grad_(True)
    bias = (module.rnn.bias_ih_l0 + module.rnn.bias_hh_l0).detach().clone().requires_grad_(True)
    w_fc = module.fc.weight.detach().clone().requires_grad_(True)
    b_fc = module.fc.bias.detach().clone().requires_grad_(True)

    def single_bias_forward():
        h = module.h0.expand(3, -1)
        for t in range(X.shape[1]):
            x = torch.nn.functional.one_hot(X[:, t], 2).float()
            h = torch.relu(x @ w_ih.T + h @ w_hh.T + bias)
        return h @ w_fc.T + b_fc

    loss_fn = torch.nn.MSELoss()
    assert torch.allclose(single_bias_forward(), module(X), atol=1e-6)
    loss_fn(single_bias_forward(), target).backward()
    with torch.no_grad():
        for p in (w_ih, w_hh, w_fc, b_fc):
            p -= lr * p.grad
        bias -= 2 * lr * bias.grad
    optimizer = torch.optim.SGD(module.parameters(), lr=lr)
    loss_fn(module(X), target).backward()
    optimizer.step()
    merged = module.rnn.bias_ih_l0 + module.rnn.bias_hh_l0
    assert torch.allclose(merged, bias, atol=1e-6)
    assert torch.allclose(single_bias_forward(), module(X), atol=1e-6)


def test_bad_h0_for_the_module():
    with pytest.raises(ValueError, match="h0 must be"):
        ParityRNNModule(h0="random")


# ---------------------------------------------------------------- the loader


def test_length_bucket_loader_batches_one_length_in_ascending_order():
    X, y = make_streaming_parity()
    torch.manual_seed(0)
    loader = LengthBucketLoader(skorch.dataset.Dataset(X, y), batch_size=128)
    batches = list(loader)
    assert len(batches) == len(loader) == 21  # lengths 1-7: 1 batch, 8: 2, 9: 4, 10: 8
    lengths = [bx.shape[1] for bx, _ in batches]
    assert lengths == sorted(lengths)
    assert all(bool((bx >= 0).all()) for bx, _ in batches)  # no padding inside a batch
    rows = sorted(tuple(r.tolist()) for bx, _ in batches for r in bx)
    assert rows == sorted(tuple(r[r >= 0].tolist()) for r in X)
    for bx, by in batches:  # targets travel with their sequences
        assert torch.equal(by, bx.sum(dim=1) % 2)
    again = [bx for bx, _ in loader]  # a new epoch reshuffles
    assert any(not torch.equal(a, b) for a, (b, _) in zip(again, batches))


def test_length_bucket_loader_random_order_visits_all_lengths():
    X, y = make_streaming_parity(6)
    torch.manual_seed(0)
    loader = LengthBucketLoader(skorch.dataset.Dataset(X, y), batch_size=8, order="random")
    lengths = [bx.shape[1] for bx, _ in loader]
    assert sorted(set(lengths)) == list(range(1, 7))
    assert lengths != sorted(lengths)


# ---------------------------------------------------------------- the estimator


def test_fit_predict_shapes_and_attributes(fitted, small_data):
    X, y = small_data
    assert fitted.n_features_in_ == 5 and list(fitted.classes_) == [0, 1]
    assert fitted.n_epochs_run_ == 3 and len(fitted.history_) == 3
    assert isinstance(fitted.module_, ParityRNNModule)
    assert fitted.converged_ is False
    proba = fitted.predict_proba(X)
    assert proba.shape == (X.shape[0], 2)
    assert np.allclose(proba.sum(axis=1), 1.0) and np.all(proba >= 0)
    assert np.array_equal(fitted.predict(X), fitted.classes_[proba.argmax(axis=1)])
    assert fitted.hidden_states(X).shape == (X.shape[0], 8)


def test_predicts_sequences_longer_than_training(fitted):
    X_long, _ = make_streaming_parity(300, 200, n_per_length=1, random_state=0)
    assert fitted.predict(X_long).shape == (X_long.shape[0],)


def test_ragged_list_equals_padded_array(fitted):
    seqs = [[1, 0, 1], [0], [1, 1, 0, 0, 1, 1, 1]]
    padded = np.full((3, 7), -1)
    for i, s in enumerate(seqs):
        padded[i, : len(s)] = s
    assert np.allclose(fitted.predict_proba(seqs), fitted.predict_proba(padded))


def test_string_labels_and_pandas_input(small_data):
    pd = pytest.importorskip("pandas")
    X, y = small_data
    frame = pd.DataFrame(X, columns=[f"t{i}" for i in range(X.shape[1])])
    labels = np.array(["even", "odd"])[y]
    clf = StreamingParityRNNClassifier(**FAST).fit(frame, labels)
    assert list(clf.feature_names_in_) == list(frame.columns)
    assert set(clf.predict(frame)) <= {"even", "odd"}


def test_same_random_state_same_history_and_predictions(small_data):
    X, y = small_data
    a = StreamingParityRNNClassifier(**FAST).fit(X, y)
    b = StreamingParityRNNClassifier(**FAST).fit(X, y)
    c = StreamingParityRNNClassifier(**{**FAST, "random_state": 1}).fit(X, y)
    assert a.history_[:, "train_loss"] == b.history_[:, "train_loss"]
    assert np.array_equal(a.predict_proba(X), b.predict_proba(X))
    assert a.history_[:, "train_loss"] != c.history_[:, "train_loss"]


def test_fit_leaves_global_torch_state_alone(small_data):
    X, y = small_data
    torch.manual_seed(123)
    state = torch.get_rng_state()
    threads = torch.get_num_threads()
    StreamingParityRNNClassifier(**FAST).fit(X, y)
    assert torch.equal(torch.get_rng_state(), state)
    assert torch.get_num_threads() == threads


def test_pickle_and_clone(fitted, small_data):
    X, _ = small_data
    restored = pickle.loads(pickle.dumps(fitted))
    assert np.array_equal(restored.predict_proba(X), fitted.predict_proba(X))
    fresh = clone(fitted)
    assert fresh.get_params() == fitted.get_params() and not hasattr(fresh, "net_")


def test_verbose_prints_the_skorch_table_and_default_is_quiet(small_data, capsys):
    X, y = small_data
    StreamingParityRNNClassifier(**FAST).fit(X, y)
    assert capsys.readouterr().out == ""
    StreamingParityRNNClassifier(**FAST, verbose=1).fit(X, y)
    out = capsys.readouterr().out
    assert "train_loss" in out and "epoch" in out


def test_conv_threshold_stops_early_or_warns(small_data):
    X, y = small_data
    clf = StreamingParityRNNClassifier(**{**FAST, "max_epochs": 50}, conv_threshold=0.3)
    clf.fit(X, y)
    losses = clf.history_[:, "train_loss"]
    assert clf.converged_ and clf.n_epochs_run_ < 50
    assert losses[-1] < 0.3 and all(v >= 0.3 for v in losses[:-1])
    with pytest.warns(ConvergenceWarning, match="conv_threshold"):
        StreamingParityRNNClassifier(**FAST, conv_threshold=1e-9).fit(X, y)


def test_cross_entropy_probabilities_are_the_softmax(small_data):
    X, y = small_data
    clf = StreamingParityRNNClassifier(**FAST, loss="ce").fit(X, y)
    with torch.no_grad():
        logits = clf.module_.double()(torch.as_tensor(X)).numpy()
    clf.module_.float()
    expected = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    assert np.allclose(clf.predict_proba(X), expected)


def test_overflowing_outputs_are_never_a_class(small_data):
    X, y = small_data
    clf = StreamingParityRNNClassifier(**FAST).fit(X, y)
    with torch.no_grad():
        clf.module_.rnn.weight_hh_l0.copy_(3.0 * torch.eye(8))
    X_long, y_long = make_streaming_parity(2000, 2000, n_per_length=3, random_state=0)
    with pytest.raises(ValueError, match="not finite"):
        clf.predict(X_long)
    with pytest.warns(RuntimeWarning, match="non-finite"):
        proba = clf.predict_proba(X_long)
    assert np.all(np.isnan(proba))
    with pytest.warns(RuntimeWarning, match="NaN"):
        assert np.isnan(clf.score(X_long, y_long))


def test_training_divergence_raises(small_data):
    X, y = small_data
    with pytest.raises(ValueError, match="diverged"):
        StreamingParityRNNClassifier(
            hidden_size=8, max_epochs=5, init_gain=5.0, learning_rate=50.0, random_state=0
        ).fit(X, y)


def test_extract_automaton_from_a_fitted_classifier(fitted):
    auto = extract_automaton(fitted)
    assert auto.prefixes.shape == (63, 5)  # the empty sequence and 62 sequences
    assert auto.hidden.shape == (63, 8)
    assert np.allclose(auto.hidden[1:], fitted.hidden_states(auto.prefixes[1:]))
    assert auto.outputs[auto.initial_state] is None or auto.n_states < 63
    same = extract_automaton(fitted, fitted_X := make_streaming_parity(5, 5)[0])
    assert same.prefixes.shape[0] == 63 and fitted_X.shape[0] == 32


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "X, match",
    [
        ([[0, 2, 1]], "outside 0..1"),
        ([[0, -3, 1]], "Negative values"),
        ([[0, -1, 1]], "padding -1 before a symbol"),
        ([[-1, -1, -1], [0, 1, -1]], "empty sequence"),
        ([[0.5, 1.0, 0.0]], "integer symbols"),
        ([[0, np.nan, 1]], "NaN"),
    ],
)
def test_bad_sequences_raise(X, match):
    y = [0] * len(X) + [1]
    X = list(X) + [[1, 0, 0]]
    with pytest.raises(ValueError, match=match):
        StreamingParityRNNClassifier(**FAST).fit(np.array(X, dtype=float), y)


def test_bad_sequences_at_predict_time(fitted):
    with pytest.raises(ValueError, match="outside 0..1"):
        fitted.predict([[0, 1, 5]])
    with pytest.raises(ValueError, match="empty sequence"):
        fitted.predict([[-1, -1]])


def test_bad_targets_raise(small_data):
    X, y = small_data
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        StreamingParityRNNClassifier(**FAST).fit(X, y[:-1])
    with pytest.raises(ValueError, match="only 1 class"):
        StreamingParityRNNClassifier(**FAST).fit(X, np.zeros_like(y))
    with pytest.raises(ValueError, match="Unknown label type"):
        StreamingParityRNNClassifier(**FAST).fit(X, y + 0.5)


@pytest.mark.parametrize(
    "param, value",
    [
        ("hidden_size", 0),
        ("learning_rate", 0.0),
        ("learning_rate", -0.1),
        ("batch_size", 0),
        ("nonlinearity", "sigmoid"),
        ("loss", "hinge"),
        ("h0", "random"),
        ("n_symbols", 1),
        ("max_epochs", 0),
        ("length_order", "descending"),
    ],
)
def test_bad_parameters_raise(small_data, param, value):
    X, y = small_data
    with pytest.raises(ValueError, match=f"'{param}' parameter"):
        StreamingParityRNNClassifier(**{**FAST, param: value}).fit(X, y)


def test_unavailable_cuda_raises(small_data):
    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    X, y = small_data
    with pytest.raises(ValueError, match="CUDA"):
        StreamingParityRNNClassifier(**FAST, device="cuda").fit(X, y)
    with pytest.raises(ValueError, match="torch device"):
        StreamingParityRNNClassifier(**FAST, device="gpu9").fit(X, y)


@pytest.mark.parametrize("method", ["predict", "predict_proba", "hidden_states", "score"])
def test_not_fitted(small_data, method):
    X, y = small_data
    clf = StreamingParityRNNClassifier()
    args = (X, y) if method == "score" else (X,)
    with pytest.raises(NotFittedError):
        getattr(clf, method)(*args)
    with pytest.raises(NotFittedError):
        extract_automaton(clf)


def test_merger_statistics_of_an_untrained_net_are_finite(fitted):
    auto = extract_automaton(fitted, merge_frac=0.1)
    parity = np.count_nonzero(auto.prefixes == 1, axis=1) % 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stats = merger_fraction(auto.hidden, parity, eps=auto.eps)
    assert 0.0 <= stats["same_fraction"] <= 1.0


# ---------------------------------------------------------------- common-check leftovers


@pytest.mark.parametrize("n_classes", [2, 3])
def test_classifiers_train_assertions_other_than_the_column_count(n_classes):
    """What sklearn's check_classifiers_train asserts, minus rejecting other widths.

    The check is an expected failure only because predict accepts sequences of another
    length; everything it checks before and after that is checked here on its data.
    """
    from sklearn.datasets import make_blobs
    from sklearn.metrics import accuracy_score
    from sklearn.preprocessing import StandardScaler
    from sklearn.utils import shuffle

    from .._estimator_params import TEST_PARAMS

    X, y = make_blobs(n_samples=300, random_state=0)
    X, y = shuffle(X, y, random_state=7)
    X = StandardScaler().fit_transform(X)
    X = np.round(X - X.min()).astype(np.int32)  # the checks' categorical encoding
    if n_classes == 2:
        X, y = X[y != 2], y[y != 2]
    clf = StreamingParityRNNClassifier(**TEST_PARAMS["StreamingParityRNNClassifier"])
    with pytest.raises(ValueError):
        clf.fit(X, y[:-1])
    clf.fit(X, y)
    y_pred = clf.predict(X)
    assert y_pred.shape == y.shape
    assert accuracy_score(y, y_pred) > 0.83
    proba = clf.predict_proba(X)
    assert proba.shape == (X.shape[0], n_classes)
    assert np.array_equal(np.argmax(proba, axis=1), y_pred)
    assert np.allclose(proba.sum(axis=1), 1.0)


# ---------------------------------------------------------------- the paper's phenomenon


@pytest.mark.slow
def test_plateau_then_transition_to_an_any_length_two_state_solution():
    """Train on lengths 1-10 (32 units, learning rate 0.1: the transition in ~110 epochs, not
    ~500)."""
    X, y = make_streaming_parity()
    clf = StreamingParityRNNClassifier(
        hidden_size=32, learning_rate=0.1, max_epochs=200, conv_threshold=1e-3, random_state=1
    ).fit(X, y)
    losses = np.array(clf.history_[:, "train_loss"])
    assert clf.converged_ and 50 < clf.n_epochs_run_ < 200
    assert np.all(np.abs(losses[10:50] - 0.25) < 0.01)  # the plateau at MSE 0.25
    for length, n in ((1000, 20), (10000, 5)):
        X_long, y_long = make_streaming_parity(length, length, n_per_length=n, random_state=3)
        assert clf.score(X_long, y_long) == 1.0
    auto = extract_automaton(clf, merge_frac=0.01)
    assert auto.is_complete()
    assert auto.n_states < 0.05 * auto.prefixes.shape[0]
    stats = merger_fraction(auto.hidden, np.count_nonzero(auto.prefixes == 1, axis=1) % 2,
                            eps=auto.eps)
    assert stats["n_different_merged"] == 0 and stats["same_fraction"] > 0.05
    minimal = auto.minimize()
    assert minimal.n_states == 2 and minimal.is_complete()
    X_long, y_long = make_streaming_parity(5000, 5000, n_per_length=5, random_state=4)
    assert np.array_equal(minimal.predict(X_long), y_long)


def test_routed_keyword_arguments_reach_the_net(small_data):
    X, y = small_data
    clf = StreamingParityRNNClassifier(**FAST, optimizer__momentum=0.5)
    assert clf.get_params()["optimizer__momentum"] == 0.5
    assert clone(clf).get_params()["optimizer__momentum"] == 0.5
    clf.fit(X, y)
    assert clf.net_.optimizer_.param_groups[0]["momentum"] == 0.5
    # __init__ only stores; fit refuses a keyword that is neither a parameter nor routed
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['momentum'\]"):
        StreamingParityRNNClassifier(**FAST, momentum=0.5).fit(X, y)


def test_n_jobs_bounds_torch_threads_during_fit_only(small_data):
    X, y = small_data
    seen = []

    class Probe(skorch.callbacks.Callback):
        def on_epoch_end(self, net, **kwargs):
            seen.append(torch.get_num_threads())

    before = torch.get_num_threads()
    StreamingParityRNNClassifier(**FAST, n_jobs=2, callbacks=[("probe", Probe())]).fit(X, y)
    assert seen == [2, 2, 2] and torch.get_num_threads() == before


def test_lr_is_renamed_learning_rate():
    X, y = make_streaming_parity(max_length=4)
    reference = StreamingParityRNNClassifier(**FAST, learning_rate=0.3).fit(X, y)
    with pytest.warns(FutureWarning, match="`lr` was renamed `learning_rate`"):
        renamed = StreamingParityRNNClassifier(**FAST, lr=0.3).fit(X, y)
    np.testing.assert_array_equal(renamed.predict_proba(X), reference.predict_proba(X))
    with pytest.raises(ValueError, match="pass only learning_rate"):
        StreamingParityRNNClassifier(**FAST, lr=0.3, learning_rate=0.2).fit(X, y)
