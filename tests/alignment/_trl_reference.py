"""trl's DPO loss types on precomputed sequence log-probabilities (peer cross-check).

trl 1.x computes the DPO loss family inline in ``DPOTrainer._compute_loss``. The tests and
the benchmark run that very method on a stand-in trainer whose model returns the given
log-probabilities, so our losses are compared with trl's own code, not a re-typing of it.
Used only by the tests and the benchmark; needs ``trl`` (not a dependency).
"""

import collections
import types

import torch


def trl_dpo_loss(loss_type, beta, lw, ll, rw, rl):
    """Run trl's own DPOTrainer._compute_loss on precomputed sequence log-probs.

    trl 1.x computes the DPO loss family inline in ``_compute_loss``; a stand-in trainer
    and a stand-in model that returns the given log-probs (one completion token per
    sequence, so trl's IPO per-token average is the sequence value) exercise that code.
    """
    from trl.trainer.dpo_trainer import DPOTrainer

    n, T = lw.shape[0], 3
    per_token = torch.stack([torch.cat([lw, ll]), torch.zeros(2 * n, dtype=lw.dtype)], 1)
    outputs = types.SimpleNamespace(
        log_probs=per_token,
        entropy=torch.zeros(2 * n, T - 1),
        mean_logits=torch.zeros(2 * n, T - 1),
        is_top1=torch.zeros(2 * n, T - 1, dtype=torch.bool),
    )

    class Model:
        training = True

        def __call__(self, **kwargs):
            return outputs

    accelerator = types.SimpleNamespace(
        device="cpu", gather_for_metrics=lambda x: x, gather=lambda x: x
    )
    trainer = types.SimpleNamespace(
        model=Model(), accelerator=accelerator, aux_loss_enabled=False, ld_alpha=None,
        precompute_ref_logps=True, f_divergence_type="reverse_kl", loss_types=[loss_type],
        loss_weights=[1.0], beta=beta, use_weighting=False, label_smoothing=0.0,
        _metrics=collections.defaultdict(lambda: collections.defaultdict(list)),
        _total_train_tokens=0, _tp_size=1,
    )
    completion_mask = torch.zeros(2 * n, T, dtype=torch.long)
    completion_mask[:, 1] = 1
    inputs = {
        "input_ids": torch.zeros(2 * n, T, dtype=torch.long),
        "attention_mask": torch.ones(2 * n, T, dtype=torch.long),
        "completion_mask": completion_mask,
        "ref_chosen_logps": rw,
        "ref_rejected_logps": rl,
    }
    return DPOTrainer._compute_loss(trainer, trainer.model, inputs, False)
