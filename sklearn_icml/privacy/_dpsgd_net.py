"""The torch side of DP-SGD: the default module and a skorch net whose step is DP-SGD.

:class:`DPSGDNet` keeps skorch's training loop and replaces one training step: per-sample
gradients, the secret random part of the model (model splitting), clipping, Gaussian
noise. Its batches come from a partition sampler (one fresh pass per epoch), so empty
batches still take a noise-only step, as the accountants of Dong, Chen & Ozgur (ICML 2025)
assume.
"""

from ..utils import optional_import
from ..utils._skorch import relu_mlp

torch = optional_import("torch", "neural")
skorch = optional_import("skorch", "neural")
nn = torch.nn
F = torch.nn.functional


class MLP(nn.Module):
    """Linear model (no hidden layer) or a ReLU multi-layer perceptron."""

    def __init__(self, n_features, n_outputs, hidden_layer_sizes=()):
        super().__init__()
        self.net = relu_mlp(n_features, n_outputs, hidden_layer_sizes)

    def forward(self, X):
        return self.net(X)


def _loss(logits, y, binary):
    if binary:
        return F.binary_cross_entropy_with_logits(logits.reshape(-1), y.to(logits.dtype))
    return F.cross_entropy(logits, y)


class _OnePass:
    """One pass of a partition sampler over tensors: a fresh allocation per iteration.

    Each batch is ``(X[idx], y[idx])``; an empty ``idx`` gives zero-length tensors, so the
    training loop still takes its (noise-only) step.
    """

    def __init__(self, sampler, X, y):
        self.sampler, self.X, self.y = sampler, X, y

    def __iter__(self):
        for idx in self.sampler.sample():
            idx = torch.from_numpy(idx)
            yield self.X[idx], self.y[idx]

    def __len__(self):
        return self.sampler.num_steps


class DPSGDNet(skorch.NeuralNet):
    """skorch net whose training step is DP-SGD over a partition sampler.

    Per step: per-sample gradients (``torch.func.vmap(grad)``), restricted to each sample's
    random part of the model when ``num_parts > 1``, clipped to ``max_grad_norm``, summed,
    plus Gaussian noise of std ``noise_multiplier * max_grad_norm`` on every coordinate,
    divided by the expected batch size. Empty batches take a noise-only step.
    """

    def __init__(
        self,
        *args,
        dp_sampler,
        noise_multiplier,
        max_grad_norm,
        expected_batch_size,
        num_parts,
        binary,
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        self.dp_sampler = dp_sampler
        self.noise_multiplier = noise_multiplier
        self.max_grad_norm = max_grad_norm
        self.expected_batch_size = expected_batch_size
        self.num_parts = num_parts
        self.binary = binary

    def initialize_module(self):
        super().initialize_module()
        # the disjoint split of the parameters into parts, fixed for the run
        self.parts_ = {
            name: torch.randint(self.num_parts, p.shape, device=p.device)
            for name, p in self.module_.named_parameters()
        }
        return self

    def get_iterator(self, dataset, training=False):
        if not training:
            return super().get_iterator(dataset, training=False)
        if self.dp_sampler is None:
            raise ValueError(
                "This DPSGDNet forgot its batch allocation when its fit ended (a released "
                "model must not carry it): fit the DPSGDClassifier again to train more. Got "
                "dp_sampler=None instead."
            )
        X = torch.as_tensor(dataset.X, device=self.device)
        y = torch.as_tensor(dataset.y, device=self.device)
        return _OnePass(self.dp_sampler, X, y)

    def drop_private_state(self):
        """Forget what training drew that a released model must not carry; return ``self``.

        The amplification by partitioning holds only while the batch allocation stays
        secret: which rows joined which step (the sampler, its random generator and seed)
        and each step's batch size and loss (skorch's per-batch history records). The split
        of the parameters into parts (``parts_``) goes too. None of them is needed to
        predict. The per-epoch records (``train_loss``, ``dur``, ``train_batch_count``)
        stay.
        """
        self.dp_sampler = None
        self.parts_ = None
        for record in self.history_:
            record["batches"] = []
        return self

    def _per_sample_grads(self, Xi, yi):
        module = self.module_
        params = {n: p.detach() for n, p in module.named_parameters()}
        buffers = {n: b.detach() for n, b in module.named_buffers()}
        binary = self.binary

        def loss_one(params, x, y):
            out = torch.func.functional_call(module, (params, buffers), (x.unsqueeze(0),))
            return _loss(out, y.unsqueeze(0), binary)

        grad_fn = torch.func.vmap(
            torch.func.grad(loss_one), in_dims=(None, 0, 0), randomness="different"
        )
        return grad_fn(params, Xi, yi)

    def train_step_single(self, batch, **fit_params):
        self._set_training(True)
        Xi, yi = batch
        Xi = skorch.utils.to_tensor(Xi, device=self.device)
        yi = skorch.utils.to_tensor(yi, device=self.device)
        named = list(self.module_.named_parameters())
        n_batch = Xi.shape[0]
        clip = self.max_grad_norm
        if n_batch:
            grads = self._per_sample_grads(Xi, yi)
            if self.num_parts > 1:
                part = torch.randint(self.num_parts, (n_batch,), device=Xi.device)
                for name, _ in named:
                    shape = (n_batch,) + (1,) * self.parts_[name].dim()
                    grads[name] = grads[name] * (self.parts_[name] == part.view(shape))
            sq = sum(g.reshape(n_batch, -1).pow(2).sum(dim=1) for g in grads.values())
            factor = torch.clamp(clip / (sq.sqrt() + 1e-12), max=1.0)
            with torch.no_grad():
                y_pred = self.module_(Xi)
                loss = _loss(y_pred, yi, self.binary)
        else:
            y_pred = torch.empty((0,), device=Xi.device)
            loss = torch.zeros((), device=Xi.device)
        std = self.noise_multiplier * clip
        for name, p in named:
            if n_batch:
                shape = (n_batch,) + (1,) * p.dim()
                summed = (grads[name] * factor.view(shape)).sum(dim=0)
            else:
                summed = torch.zeros_like(p)
            noise = torch.randn(p.shape, device=p.device, dtype=p.dtype) * std
            p.grad = (summed + noise) / self.expected_batch_size
        return {"loss": loss, "y_pred": y_pred}
