"""The flow-matching pieces of CellFlux against the paper's formulas."""

import numpy as np
import pytest
from scipy.stats import norm

torch = pytest.importorskip("torch")

from sklearn_icml.generative._flow import (  # noqa: E402
    conditional_path,
    draw_same_batch_controls,
    edm_time_grid,
    ema_decay,
    ema_update,
    frechet_distance,
    guided_velocity,
    integrate,
    skewed_time,
    uniform_time_grid,
)
from sklearn_icml.utils._skorch import torch_threads  # noqa: E402


def test_conditional_path_formula():
    gen = torch.Generator().manual_seed(0)
    x0, x1 = torch.randn(5, 3, generator=gen), torch.randn(5, 3, generator=gen)
    t = torch.tensor([0.0, 0.1, 0.5, 0.9, 1.0])
    xt, ut = conditional_path(x0, x1, t)
    for i in range(5):
        assert torch.allclose(xt[i], (1 - t[i]) * x0[i] + t[i] * x1[i], atol=1e-7)
    assert torch.equal(ut, x1 - x0)
    assert torch.equal(xt[0], x0[0]) and torch.allclose(xt[-1], x1[-1])
    # broadcasting over image axes
    t2 = torch.tensor([0.3, 0.7])
    xi, _ = conditional_path(torch.zeros(2, 1, 2, 2), torch.ones(2, 1, 2, 2), t2)
    assert torch.allclose(xi[:, 0, 0, 0], torch.tensor([0.3, 0.7]))


@pytest.mark.parametrize("method", ["heun", "euler", "midpoint"])
@pytest.mark.parametrize("grid", ["edm", "uniform"])
def test_oracle_constant_velocity_reaches_x1(method, grid):
    gen = torch.Generator().manual_seed(1)
    x0, x1 = torch.randn(50, 4, generator=gen), torch.randn(50, 4, generator=gen)
    times = edm_time_grid(50) if grid == "edm" else uniform_time_grid(20)
    start, _ = conditional_path(x0, x1, torch.full((50,), float(times[0])))
    out = integrate(lambda x, t: x1 - x0, start, times, method)
    assert torch.allclose(out, x1, atol=1e-5)


def test_same_batch_coupling_frequencies():
    rng = np.random.default_rng(0)
    codes = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2, 0])  # batch code of each control row
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes)
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    n_draws = 10_000
    for b in range(3):
        rows = draw_same_batch_controls(rng, np.full(n_draws, b), order, starts, counts)
        assert np.all(codes[rows] == b)
        members = np.flatnonzero(codes == b)
        freq = np.array([np.mean(rows == r) for r in members])
        p = 1 / members.size
        sd = np.sqrt(p * (1 - p) / n_draws)
        assert np.all(np.abs(freq - p) <= 3 * sd), (b, freq)


def test_cfg_formula_and_call_count():
    calls = []
    a, b = torch.full((3, 2), 2.0), torch.full((3, 2), -1.0)

    def stub(x, t, cond):
        calls.append(cond is None)
        return b if cond is None else a

    x, t, cond = torch.zeros(3, 2), torch.zeros(3), torch.ones(3, 4)
    for w in (0.2, 1.5):
        calls.clear()
        g = guided_velocity(stub, x, t, cond, w)
        assert torch.allclose(g, (1 + w) * a - w * b)
        assert sorted(calls) == [False, True]
    calls.clear()
    g = guided_velocity(stub, x, t, cond, 0.0)
    assert torch.equal(g, a) and calls == [False]


def test_edm_grid():
    grid = edm_time_grid(50)
    assert grid.shape == (51,)
    assert grid[0] == pytest.approx(1 / 81, abs=1e-7)
    assert grid[0] == pytest.approx(0.0123457, abs=1e-7)
    assert grid[-1] == 1.0
    assert np.all(np.diff(grid) > 0)
    assert edm_time_grid(1).tolist() == pytest.approx([1 / 81, 1.0])


def test_skewed_sampler_statistics():
    t = skewed_time(1_000_000, torch.Generator().manual_seed(0)).numpy()
    assert np.median(t) == pytest.approx(0.768, abs=0.003)
    assert np.mean(t > 0.5) == pytest.approx(0.841, abs=0.003)
    assert t.min() >= 1e-4 and t.max() <= 1.0


def test_closed_form_gaussian_oracle():
    # source N(0, 1), target N(3, 0.5^2): the exact marginal-preserving velocity
    def field(x, t):
        return 3 + (t * 0.25 - (1 - t)) / ((1 - t) ** 2 + 0.25 * t**2) * (x - 3 * t)

    q = (np.arange(20_000) + 0.5) / 20_000
    x0 = torch.as_tensor(norm.ppf(q), dtype=torch.float64)
    with torch_threads(1):
        out = integrate(field, x0, uniform_time_grid(200), "heun").numpy()
    assert out.mean() == pytest.approx(3.0, abs=1e-3)
    assert out.std() == pytest.approx(0.5, abs=1e-3)


def test_integrate_trajectory_and_bad_method():
    x = torch.zeros(2, 1)
    grid = uniform_time_grid(4)
    out, traj = integrate(lambda x, t: torch.ones_like(x), x, grid, return_trajectory=True)
    assert traj.shape == (5, 2, 1)
    assert torch.equal(traj[0], x) and torch.equal(traj[-1], out)
    with pytest.raises(ValueError, match="method"):
        integrate(lambda x, t: x, x, grid, "rk4")


def test_ema_update_formula():
    assert ema_decay(1) == pytest.approx(2 / 11)
    assert ema_decay(10_000) == 0.999
    old, new = torch.tensor([1.0, -2.0]), torch.tensor([3.0, 5.0])
    d = ema_decay(1)
    expected = d * old + (1 - d) * new
    ema_update([old], [new], d)
    assert torch.allclose(old, expected)


def test_frechet_distance_closed_form():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50_000, 3))
    Y = rng.normal(size=(50_000, 3))
    Y[:, 0] = 0.5 * Y[:, 0] + 3
    # 9 + (1 - 0.5)^2 = 9.25
    assert frechet_distance(X, Y) == pytest.approx(9.25, abs=0.1)
    assert frechet_distance(X, X) == pytest.approx(0.0, abs=1e-6)
