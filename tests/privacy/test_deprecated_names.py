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


@pytest.mark.parametrize(
    "func, args, kwargs",
    [
        ("design_variance", ([28, 259, 13], [20000, 20000, 1000], [0.02, 0.5, 0.5], 1.0),
         {"mechanism": "dlap", "data_range": 1}),
        ("optimal_allocation", (300, [20000, 20000, 1000], [0.02, 0.5, 0.5], 1.0),
         {"mechanism": "tulap"}),
        ("neyman_allocation", (300, [20000, 20000, 1000], [0.02, 0.5, 0.5]),
         {"min_per_stratum": 2}),
        ("proportional_allocation", (300, [20000, 20000, 1000]), {"min_per_stratum": 2}),
        ("mechanism_log_density", (np.arange(-3, 4), 0, 1.0),
         {"mechanism": "dlap", "sensitivity": 2}),
        ("mechanism_variance", (1.0,), {"mechanism": "tulap", "data_range": 1}),
        ("bis_rdp", (1.0, 100, 10), {"orders": [2.0, 8.0], "num_epochs": 2}),
        ("bis_epsilon", (1.0, 100, 10, 1e-5), {"num_epochs": 2}),
        ("model_split_rdp", (2.0, 3), {"orders": [2, 3], "sample_rate": 0.5}),
        ("dropout_rdp", (2.0,), {"orders": [2, 3], "sample_rate": 0.5}),
        ("find_noise_multiplier", (8.0, 1e-5),
         {"scheme": "model_split", "num_parts": 4}),
    ],
)
def test_options_by_position_warn_and_give_the_same_result(func, args, kwargs):
    import sklearn_icml.privacy as privacy

    f = getattr(privacy, func)
    expected = f(*args, **kwargs)
    positional = {k: v for k, v in kwargs.items() if k != "num_parts"}
    rest = {k: v for k, v in kwargs.items() if k == "num_parts"}
    with pytest.warns(FutureWarning, match="keyword arguments"):
        got = f(*args, *positional.values(), **rest)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(expected))


def test_accountant_and_allocate_options_by_position_warn():
    expected = (PartitionRDPAccountant().compose_balanced_iterations(1.0, 100, 10, num_epochs=2)
                .compose_model_split(2.0, 3, sample_rate=0.5).compose_gaussian(4.0, count=2))
    with pytest.warns(FutureWarning, match="keyword arguments"):
        acc = PartitionRDPAccountant().compose_balanced_iterations(1.0, 100, 10, 2)
    with pytest.warns(FutureWarning, match="keyword arguments"):
        acc = acc.compose_model_split(2.0, 3, 0.5)
    with pytest.warns(FutureWarning, match="keyword arguments"):
        acc = acc.compose_gaussian(4.0, 2)
    np.testing.assert_array_equal(acc.get_rdp(), expected.get_rdp())
    sampler = DPStratifiedSampler(total_sample_size=30)
    expected = sampler.allocate([100, 200], stratum_stds=[0.1, 0.4]).sample_sizes_.copy()
    with pytest.warns(FutureWarning, match="stratum_stds"):
        got = DPStratifiedSampler(total_sample_size=30).allocate([100, 200], [0.1, 0.4])
    np.testing.assert_array_equal(got.sample_sizes_, expected)
