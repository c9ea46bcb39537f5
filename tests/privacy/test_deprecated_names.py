"""The privacy names renamed in 0.3 still work for one release, warn FutureWarning naming
the new name, and give the same result as the new name."""

import numpy as np
import pytest

from sklearn_icml.privacy import (
    BalancedIterationSampler,
    DPStratifiedSampler,
    PartitionRDPAccountant,
    PoissonIterationSampler,
)


def test_compose_bis_is_compose_balanced_iterations():
    expected = PartitionRDPAccountant().compose_balanced_iterations(1.0, 100, 10).get_rdp()
    with pytest.warns(FutureWarning, match="`compose_bis` was renamed "
                                           "`compose_balanced_iterations`"):
        got = PartitionRDPAccountant().compose_bis(1.0, 100, 10).get_rdp()
    np.testing.assert_array_equal(got, expected)


def test_accountant_orders_by_position_warns():
    with pytest.warns(FutureWarning, match="orders"):
        acc = PartitionRDPAccountant([2, 4])
    np.testing.assert_array_equal(
        acc.compose_gaussian(1.0).get_rdp(),
        PartitionRDPAccountant(orders=[2, 4]).compose_gaussian(1.0).get_rdp(),
    )


@pytest.mark.parametrize(
    "Sampler, args, names",
    [
        (BalancedIterationSampler, (30, 6, 2), ("n_samples", "num_steps", "num_selected")),
        (PoissonIterationSampler, (30, 6, 0.3), ("n_samples", "num_steps", "sample_rate")),
    ],
)
def test_samplers_positional_arguments_warn(Sampler, args, names):
    expected = Sampler(**dict(zip(names, args)), random_state=5).sample()
    with pytest.warns(FutureWarning, match="keyword arguments"):
        sampler = Sampler(*args, random_state=5)
    for a, b in zip(sampler.sample(), expected):
        np.testing.assert_array_equal(a, b)


def _fitted_sampler():
    groups = np.repeat(["a", "b", "c"], [200, 300, 100])
    y = np.random.default_rng(0).uniform(size=groups.shape[0])
    params = {"total_sample_size": 60, "stratum_stds": [0.3, 0.3, 0.3], "random_state": 0}
    return groups, y, (lambda: DPStratifiedSampler(**params).fit(groups))


def test_estimate_mean_old_argument_order_warns_and_matches():
    groups, y, make = _fitted_sampler()
    expected = make().estimate_mean(groups, y, return_details=True)
    with pytest.warns(FutureWarning, match=r"estimate_mean\(X, y\)"):
        got = make().estimate_mean(y, groups, return_details=True)
    assert got["estimate"] == expected["estimate"]
    np.testing.assert_array_equal(got["sample_indices"], expected["sample_indices"])


def test_estimate_mean_return_details_by_position_warns():
    groups, y, make = _fitted_sampler()
    expected = make().estimate_mean(groups, y, return_details=True)
    with pytest.warns(FutureWarning, match="return_details"):
        got = make().estimate_mean(groups, y, True)
    assert got["estimate"] == expected["estimate"]
