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
