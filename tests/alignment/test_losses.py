"""The preference losses, the margin, and their numpy twins."""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sklearn_icml.alignment import (  # noqa: E402
    PREFERENCE_LOSSES,
    exponential_loss,
    hinge_loss,
    logistic_loss,
    preference_margin,
    savage_loss,
    squared_loss,
    truncated_quadratic_loss,
)
from sklearn_icml.alignment._loss_math import LOSS_PARAMETER, np_loss_and_grad  # noqa: E402

ALL = sorted(PREFERENCE_LOSSES)


def _loss(name):
    """The loss ``name`` as ``fn(h, scale, p=None)``: its scale (beta, tau or delta) by name."""
    loss, scale_name = PREFERENCE_LOSSES[name], LOSS_PARAMETER[name]
    return lambda h, scale, **kwargs: loss(h, **{scale_name: scale}, **kwargs)


def _h(seed=0, n=7):
    g = torch.Generator().manual_seed(seed)
    return (4 * torch.rand(n, generator=g, dtype=torch.float64) - 2).requires_grad_(True)


@pytest.mark.parametrize("beta", [0.1, 1.0, 3.0])
def test_logistic_at_zero_is_log2(beta):
    assert logistic_loss(torch.zeros(3), beta=beta).tolist() == pytest.approx([math.log(2)] * 3)


@pytest.mark.parametrize("tau", [0.1, 0.5, 2.0])
def test_squared_is_zero_at_target_margin(tau):
    h = torch.tensor([1 / (2 * tau)], dtype=torch.float64)
    assert squared_loss(h, tau=tau).item() == 0.0
    assert squared_loss(h + 1.0, tau=tau).item() == pytest.approx(1.0)


def test_hinge_is_zero_beyond_delta_and_linear_below():
    h = torch.tensor([0.5, 2.0, 2.5, 10.0])
    assert hinge_loss(h, delta=2.0).tolist() == pytest.approx([1.5, 0.0, 0.0, 0.0])


def test_gpo_losses_hand_values():
    h = torch.tensor([0.0, 1.0], dtype=torch.float64)
    assert exponential_loss(h, beta=2.0).tolist() == pytest.approx([1.0, math.exp(-2.0)])
    assert truncated_quadratic_loss(h, beta=0.5).tolist() == pytest.approx([1.0, 0.25])
    s = 1 / (1 + math.exp(2.0))
    assert savage_loss(h, beta=2.0).tolist() == pytest.approx([0.25, s * s])
    # logistic is softplus(-beta h), computed stably for large margins
    big = logistic_loss(torch.tensor([-1000.0, 1000.0], dtype=torch.float64), beta=1.0)
    assert big.tolist() == pytest.approx([1000.0, 0.0])


@pytest.mark.parametrize("name", ALL)
def test_gradcheck_float64(name):
    fn = _loss(name)
    h = _h()
    p = torch.tensor([0.0, 0.2, 0.5, 0.7, 1.0, 0.9, 0.3], dtype=torch.float64)
    scale = 1.0 if name == "hinge" else 0.7
    # keep hinge margins away from its kink at h = delta
    if name == "hinge":
        h = torch.tensor([-1.5, -0.3, 0.4, 0.8, 1.6, 2.5, -2.0], dtype=torch.float64)
        h.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda t: fn(t, scale), (h,))
    assert torch.autograd.gradcheck(lambda t: fn(t, scale, p=p), (h,))


@pytest.mark.parametrize("name", ALL)
def test_swapping_pair_with_flipped_label_leaves_loss_unchanged(name):
    fn = _loss(name)
    h = _h(1).detach()
    p = torch.linspace(0, 1, h.shape[0], dtype=torch.float64)
    assert torch.allclose(fn(h, 0.7, p=p), fn(-h, 0.7, p=1 - p), atol=1e-12)


@pytest.mark.parametrize("name", ALL)
def test_soft_label_one_is_the_hard_loss(name):
    fn = _loss(name)
    h = _h(2).detach()
    assert torch.allclose(fn(h, 0.7, p=torch.ones_like(h)), fn(h, 0.7), atol=1e-12)


@pytest.mark.parametrize("name", ALL)
def test_numpy_twin_matches_autograd(name):
    fn = _loss(name)
    h = _h(3)
    p = torch.linspace(0, 1, h.shape[0], dtype=torch.float64)
    value = fn(h, 0.7, p=p)
    (grad,) = torch.autograd.grad(value.sum(), h)
    v_np, g_np = np_loss_and_grad(name, h.detach().numpy(), 0.7, p.numpy())
    np.testing.assert_allclose(v_np, value.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g_np, grad.numpy(), rtol=1e-10, atol=1e-12)


def test_loss_parameter_names_match_signatures():
    import inspect

    for name, fn in PREFERENCE_LOSSES.items():
        assert list(inspect.signature(fn).parameters)[1] == LOSS_PARAMETER[name]


def test_margin_normalised_and_unnormalised():
    lw, ll = torch.tensor([-1.0, -2.0]), torch.tensor([-3.0, -1.0])
    rw, rl = torch.tensor([-2.0, -2.0]), torch.tensor([-2.5, -0.5])
    assert preference_margin(lw, ll).tolist() == [2.0, -1.0]
    assert preference_margin(lw, ll, ref_logp_w=rw, ref_logp_l=rl).tolist() == [1.5, 0.5]


def test_margin_invariant_to_per_context_constant_in_logits():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 5, generator=g, dtype=torch.float64)
    shift = torch.tensor([[10.0], [-4.0], [0.3]], dtype=torch.float64)
    ctx, w, l = torch.tensor([0, 1, 2, 2]), torch.tensor([1, 0, 4, 3]), torch.tensor([2, 3, 0, 1])
    ref = torch.log_softmax(torch.randn(3, 5, generator=g, dtype=torch.float64), 1)
    margins = []
    for z in (logits, logits + shift):
        lp = torch.log_softmax(z, dim=1)
        margins.append(preference_margin(
            lp[ctx, w], lp[ctx, l], ref_logp_w=ref[ctx, w], ref_logp_l=ref[ctx, l]))
        # raw (unnormalised) logits give the same margin as the log-probabilities
        raw = preference_margin(
            logits[ctx, w], logits[ctx, l], ref_logp_w=ref[ctx, w], ref_logp_l=ref[ctx, l])
        assert torch.allclose(margins[-1], raw, atol=1e-12)
    assert torch.allclose(margins[0], margins[1], atol=1e-12)


def test_margin_reference_is_detached():
    lw = torch.tensor([-1.0], requires_grad=True)
    rw = torch.tensor([-2.0], requires_grad=True)
    h = preference_margin(lw, torch.tensor([-1.5]), ref_logp_w=rw, ref_logp_l=torch.tensor([-1.0]))
    h.sum().backward()
    assert rw.grad is None and lw.grad.item() == 1.0


# bad input


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_nonpositive_scale_raises(name, bad):
    with pytest.raises(ValueError, match=LOSS_PARAMETER[name]):
        _loss(name)(torch.zeros(2), bad)


def test_scale_must_be_a_number():
    with pytest.raises(TypeError, match="beta"):
        logistic_loss(torch.zeros(2), beta="0.1")


@pytest.mark.parametrize("p", [-0.1, 1.5, float("nan")])
def test_soft_label_outside_unit_interval_raises(p):
    with pytest.raises(ValueError, match="p"):
        logistic_loss(torch.zeros(2), beta=1.0, p=torch.tensor([0.5, p]))


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_log_probs_raise(bad):
    with pytest.raises(ValueError, match="logp_l"):
        preference_margin(torch.tensor([-1.0]), torch.tensor([bad]))
    with pytest.raises(ValueError, match="ref_logp_w"):
        preference_margin(torch.tensor([-1.0]), torch.tensor([-1.0]),
                          ref_logp_w=torch.tensor([bad]), ref_logp_l=torch.tensor([0.0]))
    with pytest.raises(ValueError, match="h contains"):
        squared_loss(torch.tensor([bad]))


def test_margin_needs_both_reference_log_probs():
    with pytest.raises(ValueError, match="both"):
        preference_margin(torch.tensor([-1.0]), torch.tensor([-1.0]),
                          ref_logp_w=torch.tensor([-1.0]))


# peer: trl


@pytest.mark.slow
@pytest.mark.parametrize("beta", [0.1, 0.5, 2.0])
def test_agrees_with_trl_dpo_loss_types(beta):
    trl = pytest.importorskip("trl")
    from ._trl_reference import trl_dpo_loss

    if int(trl.__version__.split(".")[0]) < 1:
        pytest.skip("the stand-in trainer follows trl 1.x's DPOTrainer._compute_loss")
    g = torch.Generator().manual_seed(int(beta * 10))
    lw, ll, rw, rl = (-10 * torch.rand(64, generator=g, dtype=torch.float64) for _ in range(4))
    h = preference_margin(lw, ll, ref_logp_w=rw, ref_logp_l=rl)
    ours = {
        "sigmoid": logistic_loss(h, beta=beta).mean(),
        "ipo": squared_loss(h, tau=beta).mean(),  # trl's beta is IPO's tau
        "hinge": beta * hinge_loss(h, delta=1.0 / beta).mean(),  # relu(1 - beta h)
    }
    for loss_type, value in ours.items():
        theirs = trl_dpo_loss(loss_type, beta, lw, ll, rw, rl)
        assert abs(theirs.item() - value.item()) <= 1e-6, loss_type
