"""CAPASimilarity: the estimator wrapper around capa_matrix."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.naive_bayes import GaussianNB
from sklearn.svm import SVC
from sklearn.tree import DecisionTreeClassifier

from sklearn_icml.metrics import CAPASimilarity, capa_matrix

X, Y = load_iris(return_X_y=True)
ESTIMATORS = [("lr", LogisticRegression(max_iter=500)), ("nb", GaussianNB())]


def test_similarity_equals_capa_matrix_of_out_of_fold_probabilities():
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    sim = CAPASimilarity(estimators=ESTIMATORS, cv=cv).fit(X, Y)
    probas = [cross_val_predict(est, X, Y, cv=cv, method="predict_proba") for _, est in ESTIMATORS]
    np.testing.assert_allclose(sim.similarity_, capa_matrix(Y, probas), atol=1e-12)
    assert sim.names_ == ["lr", "nb"]
    assert sim.similarity_.shape == (2, 2)
    np.testing.assert_allclose(
        sim.accuracy_, [np.mean(p.argmax(1) == Y) for p in probas], atol=1e-12
    )


def test_string_labels_and_prefit_and_held_out_similarity():
    labels = np.array(["setosa", "versicolor", "virginica"])[Y]
    fitted = [(n, e.fit(X, labels)) for n, e in ESTIMATORS]
    sim = CAPASimilarity(estimators=fitted, cv="prefit").fit(X, labels)
    direct = capa_matrix(Y, [e.predict_proba(X) for _, e in fitted])
    np.testing.assert_allclose(sim.similarity_, direct, atol=1e-12)
    np.testing.assert_allclose(sim.similarity(X, labels), direct, atol=1e-12)
    with pytest.raises(ValueError, match="not seen in fit"):
        sim.similarity(X[:2], ["setosa", "rose"])


def test_discrete_mode_and_pickle_and_grid_search_params():
    sim = CAPASimilarity(estimators=ESTIMATORS, discrete=True, cv=3).fit(X, Y)
    assert np.allclose(np.diag(sim.similarity_), 1.0)
    restored = pickle.loads(pickle.dumps(sim))
    np.testing.assert_array_equal(restored.similarity_, sim.similarity_)
    cloned = clone(sim)
    assert cloned.discrete is True and not hasattr(cloned, "similarity_")
    assert sim.set_params(discrete=False).discrete is False


def test_bad_estimators_raise():
    with pytest.raises(TypeError, match="predict_proba"):
        CAPASimilarity(estimators=[("svc", SVC())]).fit(X, Y)
    with pytest.raises(ValueError, match="unique"):
        CAPASimilarity(estimators=[("a", GaussianNB()), ("a", DecisionTreeClassifier())]).fit(X, Y)
    with pytest.raises(TypeError, match="tuples"):
        CAPASimilarity(estimators=[GaussianNB()]).fit(X, Y)
    with pytest.raises(ValueError, match="at least one"):
        CAPASimilarity(estimators=[]).fit(X, Y)
    with pytest.raises(ValueError, match="only 1 class"):
        CAPASimilarity(estimators=ESTIMATORS, cv=2).fit(X[:10], np.zeros(10))


def test_prefit_requires_fitted_estimators():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        CAPASimilarity(estimators=[("nb", GaussianNB())], cv="prefit").fit(X, Y)


def test_estimators_by_position_warns_and_gives_the_same_result():
    expected = CAPASimilarity(estimators=ESTIMATORS, cv=2).fit(X, Y).similarity_
    with pytest.warns(FutureWarning, match="keyword arguments"):
        got = CAPASimilarity(ESTIMATORS, cv=2).fit(X, Y).similarity_
    np.testing.assert_array_equal(got, expected)


# --------------------------------------------------------------------------- raw frames


def _frame(n=120, seed=0):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(seed)
    city = rng.choice(["Paris", "Lyon", "Nice"], size=n)
    age = rng.normal(40, 10, size=n)
    y = np.where((city == "Paris") ^ (age > 40), "churn", "stay")
    flip = rng.random(n) < 0.2  # label noise: no model is sure of every row
    y[flip] = np.where(y[flip] == "churn", "stay", "churn")
    return pd.DataFrame({"city": city, "age": age}), y


def _pipelines():
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    def encode():
        return make_column_transformer(
            (OneHotEncoder(handle_unknown="ignore"), ["city"]), (StandardScaler(), ["age"])
        )

    return [
        ("lr", make_pipeline(encode(), LogisticRegression())),
        ("tree", make_pipeline(encode(), DecisionTreeClassifier(max_depth=3, random_state=0))),
    ]


def test_a_raw_frame_goes_to_the_estimators_untouched():
    X, y = _frame()
    sim = CAPASimilarity(estimators=_pipelines(), cv=3).fit(X, y)
    assert sim.similarity_.shape == (2, 2) and np.all(np.isfinite(sim.similarity_))
    assert sim.accuracy_[1] > 0.7  # the tree finds the interaction of city and age
    assert sim.n_features_in_ == 2
    assert list(sim.feature_names_in_) == ["city", "age"]
    np.testing.assert_allclose(sim.similarity(X, y), sim.similarity(X, y))
    # one pipeline of OneHotEncoder and LogisticRegression on a text column alone
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    text_only = [("ohe", make_pipeline(OneHotEncoder(), LogisticRegression()))]
    assert CAPASimilarity(estimators=text_only, cv=2).fit(X[["city"]], y).accuracy_.shape == (1,)


def test_prefit_takes_a_raw_frame():
    X, y = _frame()
    fitted = [(name, est.fit(X, y)) for name, est in _pipelines()]
    sim = CAPASimilarity(estimators=fitted, cv="prefit").fit(X, y)
    direct = capa_matrix(
        (y == "stay").astype(int), [est.predict_proba(X) for _, est in fitted]
    )
    assert np.all(np.isfinite(direct))
    np.testing.assert_allclose(sim.similarity_, direct, atol=1e-12)
    np.testing.assert_allclose(sim.similarity(X, y), direct, atol=1e-12)


def test_an_estimator_that_cannot_take_the_frame_is_named():
    X, y = _frame()
    with pytest.raises(ValueError, match="column 'city'.*estimator 'lr'.*as it is"):
        CAPASimilarity(estimators=[("lr", LogisticRegression())], cv=2).fit(X, y)
    with pytest.raises(ValueError, match="same number|inconsistent"):
        CAPASimilarity(estimators=_pipelines(), cv=2).fit(X, y[:-1])


def test_refit_false_skips_the_fits_on_all_rows():
    calls = []

    class CountingNB(GaussianNB):
        def fit(self, X, y, sample_weight=None):
            calls.append(len(X))
            return super().fit(X, y, sample_weight=sample_weight)

    CAPASimilarity(estimators=[("nb", CountingNB())], cv=3).fit(X, Y)
    assert calls.count(len(X)) == 1  # the default refits on all rows, as GridSearchCV
    calls.clear()
    sim = CAPASimilarity(estimators=[("nb", CountingNB())], cv=3, refit=False).fit(X, Y)
    assert len(calls) == 3 and len(X) not in calls  # the three folds only
    assert not hasattr(sim, "estimators_")
    expected = CAPASimilarity(estimators=[("nb", GaussianNB())], cv=3).fit(X, Y)
    np.testing.assert_array_equal(sim.similarity_, expected.similarity_)
    assert not hasattr(sim, "similarity")
    with pytest.raises(AttributeError, match="no attribute 'similarity'") as info:
        sim.similarity(X, Y)
    assert "refit=True" in str(info.value.__cause__)


def test_verbose_prints_a_line_per_estimator_with_its_accuracy(capsys):
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB

    X, y = make_classification(120, random_state=0)
    estimators = [("lr", LogisticRegression()), ("nb", GaussianNB())]
    CAPASimilarity(estimators=estimators, cv=3).fit(X, y)
    assert capsys.readouterr().out == ""
    sim = CAPASimilarity(estimators=estimators, cv=3, verbose=1).fit(X, y)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and "\x1b" not in "".join(lines)
    assert lines[0].startswith("[CAPASimilarity] lr (1/2) out of fold: accuracy ")
    assert f"accuracy {sim.accuracy_[1]:.6g}, " in lines[1]
    assert lines[2].startswith("[CAPASimilarity] lr: refitted on all rows, ")
    assert all(line.endswith(" s") for line in lines)
