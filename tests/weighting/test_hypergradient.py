"""one_step_hypergradient: finite differences, the linear closed form, both modes."""

import pytest

torch = pytest.importorskip("torch")

from sklearn_icml.weighting import one_step_hypergradient  # noqa: E402


def squared_error(out, y):
    return (out.squeeze(-1) - y) ** 2


def cross_entropy(out, y):
    return torch.nn.functional.cross_entropy(out, y, reduction="none")


def _mlp(d_in, d_out, seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(d_in, 6), torch.nn.Tanh(), torch.nn.Linear(6, d_out)
    ).double()


def _val_loss_after_step(model, loss_fn, batch, val_batch, w, lr):
    """Reference: the one-step update written out by hand, then the validation loss."""
    X, y = batch
    params = list(model.parameters())
    loss = (w * loss_fn(model(X), y)).mean()
    grads = torch.autograd.grad(loss, params)
    with torch.no_grad():
        backup = [p.clone() for p in params]
        for p, g in zip(params, grads):
            p -= lr * g
        val = loss_fn(model(val_batch[0]), val_batch[1]).mean().item()
        for p, b in zip(params, backup):
            p.copy_(b)
    return val


@pytest.mark.parametrize("mode", ["exact", "first_order"])
@pytest.mark.parametrize("task", ["regression", "classification"])
def test_hypergradient_matches_central_finite_differences(mode, task):
    gen = torch.Generator().manual_seed(0)
    B, d = 6, 4
    X = torch.randn(B, d, generator=gen, dtype=torch.float64)
    Xv = torch.randn(9, d, generator=gen, dtype=torch.float64)
    if task == "regression":
        model, loss_fn = _mlp(d, 1, 1), squared_error
        y = torch.randn(B, generator=gen, dtype=torch.float64)
        yv = torch.randn(9, generator=gen, dtype=torch.float64)
    else:
        model, loss_fn = _mlp(d, 3, 1), cross_entropy
        y = torch.randint(3, (B,), generator=gen)
        yv = torch.randint(3, (9,), generator=gen)
    w = torch.rand(B, generator=gen, dtype=torch.float64) + 0.5
    lr = 0.3
    hyper = one_step_hypergradient(model, loss_fn, (X, y), (Xv, yv), w, lr, mode=mode)
    eps = 1e-6
    fd = torch.empty(B, dtype=torch.float64)
    for i in range(B):
        wp, wm = w.clone(), w.clone()
        wp[i] += eps
        wm[i] -= eps
        up = _val_loss_after_step(model, loss_fn, (X, y), (Xv, yv), wp, lr)
        down = _val_loss_after_step(model, loss_fn, (X, y), (Xv, yv), wm, lr)
        fd[i] = (up - down) / (2 * eps)
    assert hyper.dtype == torch.float64
    torch.testing.assert_close(hyper, fd, rtol=1e-5, atol=1e-10)


def test_linear_regression_closed_form():
    gen = torch.Generator().manual_seed(3)
    B, d, n_v, lr = 8, 5, 11, 0.07
    X = torch.randn(B, d, generator=gen, dtype=torch.float64)
    y = torch.randn(B, generator=gen, dtype=torch.float64)
    Xv = torch.randn(n_v, d, generator=gen, dtype=torch.float64)
    yv = torch.randn(n_v, generator=gen, dtype=torch.float64)
    w = torch.rand(B, generator=gen, dtype=torch.float64) * 2
    model = torch.nn.Linear(d, 1, bias=False).double()
    theta = model.weight.detach()[0].clone()
    resid = X @ theta - y
    # theta' = theta - lr * (1/B) sum_i w_i 2 (x_i.theta - y_i) x_i
    theta_new = theta - lr * (w * 2 * resid) @ X / B
    grad_val = (2 / n_v) * Xv.T @ (Xv @ theta_new - yv)
    expected = -(lr / B) * (2 * resid[:, None] * X) @ grad_val
    for mode in ("exact", "first_order"):
        got = one_step_hypergradient(model, squared_error, (X, y), (Xv, yv), w, lr, mode=mode)
        torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12)
    # the model was only read
    torch.testing.assert_close(model.weight.detach()[0], theta)
    assert model.weight.grad is None


def test_first_order_equals_exact_for_a_nonlinear_model_too():
    gen = torch.Generator().manual_seed(5)
    X = torch.randn(7, 3, generator=gen, dtype=torch.float64)
    y = torch.randint(3, (7,), generator=gen)
    Xv = torch.randn(5, 3, generator=gen, dtype=torch.float64)
    yv = torch.randint(3, (5,), generator=gen)
    model = _mlp(3, 3, 2)
    w = torch.rand(7, generator=gen, dtype=torch.float64)
    exact, v1 = one_step_hypergradient(
        model, cross_entropy, (X, y), (Xv, yv), w, 0.5, return_val_loss=True
    )
    first, v2 = one_step_hypergradient(
        model, cross_entropy, (X, y), (Xv, yv), w, 0.5, mode="first_order", return_val_loss=True
    )
    torch.testing.assert_close(exact, first, rtol=1e-10, atol=1e-14)
    assert v1 == pytest.approx(v2, rel=1e-12)


def test_duplicating_the_validation_set_leaves_the_hypergradient_unchanged():
    gen = torch.Generator().manual_seed(7)
    X = torch.randn(6, 4, generator=gen, dtype=torch.float64)
    y = torch.randn(6, generator=gen, dtype=torch.float64)
    Xv = torch.randn(10, 4, generator=gen, dtype=torch.float64)
    yv = torch.randn(10, generator=gen, dtype=torch.float64)
    model = _mlp(4, 1, 0)
    w = torch.ones(6, dtype=torch.float64)
    once = one_step_hypergradient(model, squared_error, (X, y), (Xv, yv), w, 0.1)
    twice = one_step_hypergradient(
        model, squared_error, (X, y), (torch.cat([Xv, Xv]), torch.cat([yv, yv])), w, 0.1
    )
    torch.testing.assert_close(once, twice, rtol=1e-12, atol=1e-15)
    assert torch.any(once != 0)


def test_frozen_parameters_are_not_stepped():
    gen = torch.Generator().manual_seed(1)
    model = _mlp(3, 1, 0)
    X = torch.randn(5, 3, generator=gen, dtype=torch.float64)
    y = torch.randn(5, generator=gen, dtype=torch.float64)
    model[0].weight.requires_grad_(False)
    w = torch.ones(5, dtype=torch.float64)
    exact = one_step_hypergradient(model, squared_error, (X, y), (X, y), w, 0.2)
    first = one_step_hypergradient(model, squared_error, (X, y), (X, y), w, 0.2,
                                   mode="first_order")
    torch.testing.assert_close(exact, first)


def test_bad_arguments():
    model = torch.nn.Linear(2, 1)
    X, y = torch.randn(3, 2), torch.randn(3)
    with pytest.raises(ValueError, match="'mode' parameter of one_step_hypergradient"):
        one_step_hypergradient(model, squared_error, (X, y), (X, y), torch.ones(3), 0.1,
                               mode="second_order")
    with pytest.raises(ValueError, match=r"weights must have shape \(3,\)"):
        one_step_hypergradient(model, squared_error, (X, y), (X, y), torch.ones(4), 0.1)
    with pytest.raises(ValueError, match="one loss per sample"):
        one_step_hypergradient(model, lambda o, t: ((o.squeeze(-1) - t) ** 2).mean(),
                               (X, y), (X, y), torch.ones(3), 0.1)
