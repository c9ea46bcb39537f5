"""Demo: an RNN trained on binary sequences of length <= 10 computes parity at length 10,000."""

from . import register_demo

# A faster configuration than the paper's main run (100 units, learning rate 0.02, lengths
# 1-10, ~500 epochs to the transition): 32 units, learning rate 0.1 and lengths 1-9 (1022
# sequences) reach the
# same zero-loss, any-length solution in ~135 short epochs, which fits the tour's budget.
DEMO_PARAMS = {"hidden_size": 32, "learning_rate": 0.1, "max_epochs": 250, "conv_threshold": 1e-3}


@register_demo(
    "StreamingParityRNNClassifier",
    what="ReLU RNN (32 units) on all 1022 binary sequences of length 1-9; accuracy at "
    "lengths 1,000 and 10,000; the automaton read off its hidden states",
    budget_s=30,
)
def demo():
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from sklearn_icml.datasets import make_streaming_parity
    from sklearn_icml.neural import StreamingParityRNNClassifier, extract_automaton

    X, y = make_streaming_parity(max_length=9)
    clf = StreamingParityRNNClassifier(**DEMO_PARAMS, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
    figures = {"epochs": clf.n_epochs_run_, "final train loss": clf.history_[-1, "train_loss"]}
    for length, n in ((1000, 50), (10000, 10)):
        X_long, y_long = make_streaming_parity(length, length, n_per_length=n, random_state=1)
        figures[f"accuracy at length {length}"] = clf.score(X_long, y_long)
    automaton = extract_automaton(clf, merge_frac=0.01)
    figures["extracted states"] = automaton.n_states
    figures["minimal states"] = automaton.minimize().n_states
    return figures
