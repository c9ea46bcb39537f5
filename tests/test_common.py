"""scikit-learn's own estimator checks on every public estimator of sklearn-icml."""

import subprocess
import sys

import pytest
from sklearn.base import clone
from sklearn.utils import estimator_checks, get_tags
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_icml.utils.discovery import all_estimators

from ._estimator_params import EXPECTED_FAILED_CHECKS, TEST_PARAMS


def _instances():
    for name, cls in all_estimators(include_neural=True):
        yield cls(**TEST_PARAMS.get(name, {}))


def _expected_failed_checks(estimator):
    return EXPECTED_FAILED_CHECKS.get(type(estimator).__name__, {})


@parametrize_with_checks(list(_instances()), expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def test_registry_names_exist():
    from .test_public_api import CLASSES

    estimators = {name for name, _ in all_estimators(include_neural=True)}
    public = {cls.__name__ for _, cls in CLASSES}  # TEST_PARAMS also builds non-estimators
    stale = (set(TEST_PARAMS) - public) | (set(EXPECTED_FAILED_CHECKS) - estimators)
    assert not stale, f"registry entries for estimators that do not exist: {sorted(stale)}"


def test_import_does_not_pull_heavy_dependencies():
    code = (
        "import sys, sklearn_icml, sklearn_icml.utils, sklearn_icml.datasets;"
        "from sklearn_icml.utils.discovery import all_estimators; all_estimators();"
        "heavy = [m for m in ('torch', 'skorch', 'gymnasium') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"import sklearn_icml imported {out.stdout.strip()}"


# scikit-learn runs none of its checks on an estimator whose input tags say "not a 2-D
# table" (prompts, videos, strings, point clouds, LoRA collections); the checks that need
# no data run here for every such estimator
DATA_FREE_CHECKS = [
    "check_no_attributes_set_in_init",
    "check_parameters_default_constructible",
    "check_get_params_invariance",
    "check_set_params",
    "check_estimator_repr",
    "check_do_not_raise_errors_in_init_or_set_params",
    "check_estimator_tags_renamed",
    "check_valid_tag_types",
    "check_mixin_order",
]
NON_TABULAR = [est for est in _instances() if not get_tags(est).input_tags.two_d_array]


def test_non_tabular_estimators_are_found():
    names = {type(est).__name__ for est in NON_TABULAR}
    assert {"F16VideoClassifier", "GDICLPredictor", "SerLiCCodec", "MASGPTRouter"} <= names


@pytest.mark.parametrize("check_name", DATA_FREE_CHECKS)
@pytest.mark.parametrize("estimator", NON_TABULAR, ids=lambda est: type(est).__name__)
def test_data_free_checks_of_non_tabular_estimators(estimator, check_name):
    getattr(estimator_checks, check_name)(type(estimator).__name__, clone(estimator))
