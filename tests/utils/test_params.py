import numpy as np
import pytest
from sklearn.base import clone

from sklearn_icml.utils._params import ParamsMixin


class _Codec(ParamsMixin):
    _parameter_constraints = {"level": [int], "table": ["array-like", None]}

    def __init__(self, *, level=3, table=None):
        self.level = level
        self.table = table


def test_params_round_trip_and_clone():
    codec = _Codec(level=5, table=np.arange(3))
    assert sorted(codec.get_params()) == ["level", "table"]
    other = clone(codec)
    assert other is not codec and other.level == 5
    np.testing.assert_array_equal(other.table, np.arange(3))
    assert codec.set_params(level=7) is codec and codec.level == 7


def test_repr_shows_only_changed_parameters():
    assert repr(_Codec()) == "_Codec()"
    assert repr(_Codec(level=9)) == "_Codec(level=9)"
    # an array parameter is shown and does not make repr raise
    assert "table=array([0, 1])" in repr(_Codec(table=np.arange(2)))
    # a value equal to the default but of another type is a change (1.0 is not 1)
    assert repr(_Codec(level=3.0)) == "_Codec(level=3.0)"


def test_unknown_parameter_and_bad_value_raise():
    with pytest.raises(ValueError, match="Invalid parameter 'levl'.*Got 'levl' instead"):
        _Codec().set_params(levl=1)
    with pytest.raises(ValueError, match="'level' parameter of _Codec"):
        _Codec(level="high")._validate_params()
