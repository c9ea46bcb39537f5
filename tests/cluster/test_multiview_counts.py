"""Tests of the multi-view count generator and of the clustering accuracy helper."""

import numpy as np
import pytest
from sklearn.metrics import mutual_info_score

from sklearn_icml.cluster._metrics import clustering_accuracy
from sklearn_icml.datasets import make_multiview_counts


def test_shapes_row_sums_and_labels():
    Xs, y = make_multiview_counts(
        15, n_clusters=4, views=[(12, 0.2), (6, 0.9)], n_tokens=7, random_state=0
    )
    assert [X.shape for X in Xs] == [(60, 12), (60, 6)]
    assert all(X.dtype == np.int64 and X.min() >= 0 for X in Xs)
    assert all(np.all(X.sum(axis=1) == 7) for X in Xs)
    np.testing.assert_array_equal(y, np.repeat(np.arange(4), 15))


def test_deterministic_and_seed_dependent():
    a, _ = make_multiview_counts(10, n_clusters=3, random_state=1)
    b, _ = make_multiview_counts(10, n_clusters=3, random_state=np.random.default_rng(1))
    c, _ = make_multiview_counts(10, n_clusters=3, random_state=2)
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
    assert not all(np.array_equal(u, v) for u, v in zip(a, c))
    d, _ = make_multiview_counts(10, n_clusters=3, random_state=np.random.RandomState(0))
    assert len(d) == 4


def _token_information(X, y):
    table = np.zeros((y.max() + 1, X.shape[1]))
    np.add.at(table, y, X)
    return mutual_info_score(None, None, contingency=table)


def test_sigma_controls_how_informative_a_view_is():
    Xs, y = make_multiview_counts(
        300, n_clusters=3, views=[(30, 0.2), (30, 0.7), (30, 1.0)], n_tokens=20, random_state=0
    )
    info = [_token_information(X, y) for X in Xs]
    assert info[0] > info[1] > info[2]
    assert info[2] < 0.01  # sigma = 1: every cluster draws from the same base


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"n_clusters": 1}, ValueError, r"'n_clusters' parameter .* range \[2, inf\)"),
        ({"n_samples_per_cluster": 0}, ValueError, r"'n_samples_per_cluster' .* \[1, inf\)"),
        ({"views": []}, ValueError, "non-empty sequence"),
        ({"views": [(10, 1.5)]}, ValueError, r"views\[0\] sigma must be in \[0, 1\]"),
        ({"views": [(10,)]}, ValueError, r"views\[0\] must be a pair"),
        ({"views": [(1, 0.5)]}, ValueError, r"views\[0\] n_features must be >= 2"),
        ({"views": [(2.5, 0.5)]}, TypeError, r"views\[0\] n_features must be an int"),
        ({"n_tokens": 2.5}, TypeError, "'n_tokens' parameter .* must be an int"),
        ({"random_state": "x"}, TypeError, "'random_state' parameter"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        make_multiview_counts(**kwargs)


def test_clustering_accuracy():
    assert clustering_accuracy([0, 0, 1, 1], [1, 1, 0, 0]) == 1.0
    assert clustering_accuracy([0, 0, 1, 1, 2, 2], [0, 0, 0, 0, 1, 1]) == pytest.approx(4 / 6)
    with pytest.raises(ValueError, match="equal length"):
        clustering_accuracy([0, 1], [0, 1, 1])


def test_n_clusters_by_position_warns_and_gives_the_same_data():
    expected, y_expected = make_multiview_counts(10, n_clusters=3, random_state=1)
    with pytest.warns(FutureWarning, match="keyword arguments"):
        got, y_got = make_multiview_counts(10, 3, random_state=1)
    np.testing.assert_array_equal(y_got, y_expected)
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
