"""fuse_models against the fusion routine of the LwI authors' release, on trained models.

``_reference_fusion`` below restates, in a few lines of torch, what the authors' routine
computes (their weight-based OT fusion, run with their default settings: exact OT with
uniform marginals, cosine ground metric with ``log`` normalisation, ``past_correction`` and
``correction`` on, ``proper_marginals`` off). It walks the backbone's state entries in order
(``num_batches_tracked`` skipped):

- a weight (linear or convolution): its input dimension is aligned with the previous
  weight's transport matrix (per kernel position for a convolution; per spatial block for a
  linear layer that reads a flattened convolution), the cost between its output rows and
  the new model's is ``log1p(clamp(1 - cos, min=0))``, negated for the last ``n_diverse``
  entries, ``T = ot.emd(1/n, 1/n, M)`` is corrected to ``T @ diag(1 / (1/n + eps))`` (the
  authors' ``eps = 1e-7``), and the fused weight is ``(1 - s) T^T W~_A + s W_B``;
- a 1-D entry (bias, batch-norm weight, bias and running statistics): ``(1 - s) T^T v_A +
  s v_B`` with the ``T`` and step ``s`` of the weight before it.

The authors count dissimilar layers in state entries; ``fuse_models`` counts layers, so the
comparison passes ``n_diverse`` = the number of entries of the last ``n_diverse_layers``
layers.
"""

import copy

import numpy as np
import pytest

from sklearn_icml.continual import LwIClassifier, fuse_models
from sklearn_icml.datasets import load_split_digits

torch = pytest.importorskip("torch")
ot = pytest.importorskip("ot")

AUTHORS_EPS = 1e-7


def _reference_fusion(old, new, *, n_diverse, step_sim, step_diff, eps):
    """The authors' layer walk on two ordered dicts of backbone tensors (float32)."""
    names = [k for k in old if "num_batches_tracked" not in k]
    n_entries = len(names)
    T = step = None
    fused, plans = {}, []
    for i, key in enumerate(names):
        a, b = old[key].detach().float(), new[key].detach().float()
        if a.dim() == 1:
            fused[key] = (1 - step) * (T.T @ a) + step * b
            continue
        out = a.shape[0]
        if T is None:
            aligned = a.reshape(out, -1)
        elif a.dim() > 2 or a.shape[1] == T.shape[0]:
            per_input = a.reshape(out, a.shape[1], -1)  # (out, in, kernel positions)
            aligned = torch.einsum("oik,ij->ojk", per_input, T).reshape(out, -1)
        else:  # linear layer reading a flattened (C, H, W) map
            blocks = a.reshape(out, T.shape[0], -1)
            aligned = torch.einsum("oik,ij->ojk", blocks, T).reshape(out, -1)
        b_rows = b.reshape(out, -1)
        cos = (aligned @ b_rows.T) / torch.outer(aligned.norm(dim=1), b_rows.norm(dim=1))
        M = torch.log1p((1 - cos).clamp(min=0)).double().numpy()
        if i >= n_entries - n_diverse:
            M, step = -M, step_diff
        else:
            step = step_sim
        uniform = np.full(out, 1.0 / out)
        plan = torch.from_numpy(ot.emd(uniform, uniform, M)).float()
        T = plan @ torch.diag(1.0 / (torch.full((out,), 1.0 / out) + eps))
        plans.append(plan.argmax(0).numpy())
        fused[key] = ((1 - step) * (T.T @ aligned) + step * b_rows).reshape(a.shape)
    return fused, plans


def _entries(layer_order, k):
    """Number of state entries of the last ``k`` layers of ``layer_order``."""
    return sum(len(group) for group in layer_order[len(layer_order) - k:])


def _backbone(state, layer_order):
    keys = [key for group in layer_order for key in group]
    return {key: state[key] for key in keys}


def _lwi_pair(**params):
    """A: a LwIClassifier after task 0; B: the same network after training task 1."""
    X_tr, _, y_tr, _, t_tr, _ = load_split_digits(n_tasks=5)
    clf = LwIClassifier(fusion=False, random_state=0, **params)
    clf.partial_fit(X_tr[t_tr == 0], y_tr[t_tr == 0])
    A = copy.deepcopy(clf.model_.state_dict())
    clf.partial_fit(X_tr[t_tr == 1], y_tr[t_tr == 1])
    B = copy.deepcopy(clf.model_.state_dict())
    A.update({k: v for k, v in B.items() if k.startswith("heads.1.")})  # A's untrained head
    return A, B, clf.model_.layer_order()


def _bn_conv_pair():
    """Two conv layers with batch norm and a linear layer, A on digits 0-4, B then on 5-9."""
    X_tr, _, y_tr, _, _, _ = load_split_digits(n_tasks=5)
    torch.manual_seed(0)
    backbone = torch.nn.Sequential(
        torch.nn.Unflatten(1, (1, 8, 8)),
        torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(64, 32), torch.nn.ReLU(),
    )

    def train(rows, head):
        net = torch.nn.Sequential(backbone, head)
        opt = torch.optim.Adam(net.parameters(), lr=1e-2)
        X = torch.as_tensor(X_tr[rows], dtype=torch.float32)
        y = torch.as_tensor(y_tr[rows] % 5)
        net.train()
        for _ in range(5):
            for idx in torch.randperm(len(y)).split(64):
                opt.zero_grad()
                torch.nn.functional.cross_entropy(net(X[idx]), y[idx]).backward()
                opt.step()

    train(y_tr < 5, torch.nn.Linear(32, 5))
    A = copy.deepcopy(backbone.state_dict())
    train(y_tr >= 5, torch.nn.Linear(32, 5))
    B = copy.deepcopy(backbone.state_dict())
    order = [
        ("1.weight", "1.bias", "2.weight", "2.bias", "2.running_mean", "2.running_var"),
        ("5.weight", "5.bias", "6.weight", "6.bias", "6.running_mean", "6.running_var"),
        ("10.weight", "10.bias"),
    ]
    return A, B, order


@pytest.fixture(scope="module")
def pairs():
    return {
        "mlp 64-256-256": _lwi_pair(),
        "lwi conv (8, 16) + 32": _lwi_pair(conv_channels=(8, 16), hidden_layer_sizes=(32,),
                                            learning_rate=0.01, max_epochs=10),
        "conv + batch norm": _bn_conv_pair(),
    }


def _max_difference(fused, reference):
    return max(float((torch.as_tensor(fused[k]).float() - reference[k]).abs().max())
               for k in reference)


@pytest.mark.parametrize("name", ["mlp 64-256-256", "lwi conv (8, 16) + 32", "conv + batch norm"])
@pytest.mark.parametrize("n_diverse_layers", [0, 1, 2])
def test_same_fused_weights_as_the_authors_routine(pairs, name, n_diverse_layers):
    A, B, order = pairs[name]
    fused, perms = fuse_models(A, B, layer_order=order, n_diverse_layers=n_diverse_layers,
                               step_sim=0.7, step_diff=0.93, solver="emd")
    ref, plans = _reference_fusion(
        _backbone(A, order), _backbone(B, order), n_diverse=_entries(order, n_diverse_layers),
        step_sim=0.7, step_diff=0.93, eps=0.0,
    )
    assert _max_difference(fused, ref) <= 1e-6
    for perm, plan in zip(perms, plans, strict=True):
        np.testing.assert_array_equal(perm, plan)
    # the default solver (scipy's assignment) finds the same optimum
    fused_lsa, _ = fuse_models(A, B, layer_order=order, n_diverse_layers=n_diverse_layers)
    assert _max_difference(fused_lsa, ref) <= 1e-6
    # dissimilar matching really moved units (the comparison is not between identities)
    if n_diverse_layers:
        assert not np.array_equal(perms[-1], np.arange(len(perms[-1])))


@pytest.mark.parametrize("name", ["mlp 64-256-256", "conv + batch norm"])
def test_authors_marginal_eps_only_shrinks_the_old_share(pairs, name):
    """With the authors' 1e-7 in the marginal correction the old model's share shrinks by
    ``1 / (1 + n eps)`` per side of a weight; the difference stays within that bound."""
    A, B, order = pairs[name]
    fused, _ = fuse_models(A, B, layer_order=order, n_diverse_layers=1)
    ref, _ = _reference_fusion(_backbone(A, order), _backbone(B, order),
                               n_diverse=_entries(order, 1), step_sim=0.7, step_diff=0.93,
                               eps=AUTHORS_EPS)
    n_prev = 0
    for i, group in enumerate(order):
        n_out = A[group[0]].shape[0]
        step = 0.93 if i == len(order) - 1 else 0.7
        for key in group:
            n_sides = n_out + (n_prev if key == group[0] else 0)
            bound = (1 - step) * n_sides * AUTHORS_EPS * float(A[key].abs().max()) + 1e-7
            diff = float((torch.as_tensor(fused[key]).float() - ref[key]).abs().max())
            assert diff <= bound, (key, diff, bound)
        n_prev = n_out


def test_classifier_fusion_is_the_authors_fusion_of_old_and_trained_model():
    """Inside LwIClassifier: the fused backbone after task 1 is the authors' fusion of the
    model after task 0 (A) and the network trained on task 1 before fusion (the teacher)."""
    X_tr, _, y_tr, _, t_tr, _ = load_split_digits(n_tasks=5)
    clf = LwIClassifier(
        hidden_layer_sizes=(64, 32), max_epochs=10, learning_rate=0.01, random_state=0
    )
    clf.partial_fit(X_tr[t_tr == 0], y_tr[t_tr == 0])
    A = copy.deepcopy(clf.model_.state_dict())
    clf.partial_fit(X_tr[t_tr == 1], y_tr[t_tr == 1])
    order = clf.model_.layer_order()
    B = clf.teacher_.state_dict()
    ref, _ = _reference_fusion(_backbone(A, order), _backbone(B, order),
                               n_diverse=_entries(order, 1), step_sim=0.7, step_diff=0.93,
                               eps=0.0)
    assert _max_difference(clf.model_.state_dict(), ref) <= 1e-6
    # heads: the old one from A, the new one from the trained network
    fused = clf.model_.state_dict()
    torch.testing.assert_close(fused["heads.0.weight"], A["heads.0.weight"], rtol=0, atol=0)
    torch.testing.assert_close(fused["heads.1.weight"], B["heads.1.weight"], rtol=0, atol=0)


def test_linear_after_conv_is_aligned_per_spatial_block():
    """A conv model and a copy with its channels permuted fuse into the copy: the linear
    layer after the flatten must have its input blocks moved with the channels."""
    rng = np.random.default_rng(0)
    A = {"c.weight": rng.normal(size=(4, 1, 3, 3)), "c.bias": rng.normal(size=4),
         "f.weight": rng.normal(size=(5, 4 * 9)), "f.bias": rng.normal(size=5)}
    pi = np.array([2, 0, 3, 1])
    B = {"c.weight": A["c.weight"][pi], "c.bias": A["c.bias"][pi],
         "f.weight": A["f.weight"].reshape(5, 4, 9)[:, pi].reshape(5, 36),
         "f.bias": A["f.bias"]}
    fused, perms = fuse_models(A, B, layer_order=["c.weight", "f.weight"], n_diverse_layers=0,
                               step_sim=0.5)
    np.testing.assert_array_equal(perms[0], pi)
    for key in B:
        np.testing.assert_allclose(fused[key], B[key], atol=1e-12)


def test_inputs_that_do_not_chain_raise():
    A = {"a.weight": np.ones((4, 3)), "b.weight": np.ones((2, 7))}
    with pytest.raises(ValueError, match="'b.weight' must take the previous layer's 4"):
        fuse_models(A, A, layer_order=["a.weight", "b.weight"])
