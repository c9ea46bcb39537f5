"""The input checks run before scikit-learn's, and the deprecated names of the old wrappers."""

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression

from sklearn_icml.utils.validation import (
    ComplexInputError,
    check_input_array,
    validate_input,
)


def test_strings_in_a_frame_are_named_before_scikit_learn_sees_them(monkeypatch):
    import sklearn.utils.validation as skv

    called = []
    monkeypatch.setattr(skv, "validate_data", lambda *a, **k: called.append(1))
    X = pd.DataFrame({"age": [1.0, 2.0], "city": ["Paris", "Rome"]})
    with pytest.raises(ValueError, match=r"X holds non-numeric values \(first at column 'city'\)"):
        validate_input(LinearRegression(), X, np.zeros(2))
    assert called == []  # the dtype check came first


def test_complex_input_is_a_type_error_naming_the_argument():
    with pytest.raises(ComplexInputError, match="y holds complex numbers"):
        validate_input(LinearRegression(), np.ones((3, 2)), np.ones(3) + 1j)
    with pytest.raises(TypeError, match="X_control holds complex numbers"):
        check_input_array(np.ones((2, 2)) * 1j, input_name="X_control")


def test_string_labels_pass_unless_y_must_be_numeric():
    X, y = np.ones((3, 2)), np.array(["a", "b", "a"])
    _, y_out = validate_input(LinearRegression(), X, y)
    assert list(y_out) == ["a", "b", "a"]
    with pytest.raises(ValueError, match="y holds non-numeric values"):
        validate_input(LinearRegression(), X, y, y_numeric=True)


def test_object_arrays_of_numbers_become_float64_and_are_not_modified():
    X = np.array([[1, 2.5], [3, None]], dtype=object)
    before = X.copy()
    out = check_input_array(X, ensure_all_finite=False)
    assert out.dtype == np.float64 and np.isnan(out[1, 1])
    assert (X == before).all() and X[1, 1] is None
    frame = pd.DataFrame({"c": pd.Categorical([1.0, 2.0, 1.0])})
    assert validate_input(LinearRegression(), frame).dtype == np.float64


def test_dtype_none_accepts_strings():
    out = check_input_array([["a", "b"]], dtype=None)
    assert out.dtype.kind == "U"


def test_old_names_warn_and_still_work():
    from sklearn_icml.utils import validation

    with pytest.warns(FutureWarning, match="`check_array` was renamed `check_input_array`"):
        out = validation.check_array([[1.0, 2.0]])
    assert out.shape == (1, 2)
    with pytest.warns(FutureWarning, match="`validate_data` was renamed `validate_input`"):
        validation.validate_data(LinearRegression(), np.ones((2, 2)))


def test_pandas_string_dtypes_are_read_as_strings():
    y = pd.Series(["a", "b", "a"], dtype="string")
    _, y_out = validate_input(LinearRegression(), np.ones((3, 2)), y)
    assert list(y_out) == ["a", "b", "a"]
    X = pd.DataFrame({"c": pd.Series(["x", "y"], dtype="string")})
    with pytest.raises(ValueError, match="first at column 'c'"):
        validate_input(LinearRegression(), X)



@pytest.mark.parametrize("container", ["csr_matrix", "csr_array", "dok_array"])
def test_the_string_scan_leaves_sparse_input_to_scikit_learn(container):
    # The scan must not read a sparse container entry by entry: scipy's sparse arrays
    # (dok_array on scipy 1.12) refuse 1-D slices, which surfaced as NotImplementedError from the
    # error path of an estimator that refused sparse input.
    import scipy.sparse as sp

    from sklearn_icml.utils.validation import _string_error

    X = getattr(sp, container)(np.eye(3))
    assert _string_error("X", X) is None
    with pytest.raises(TypeError, match="Sparse data was passed"):
        check_input_array(X)
