"""A Hugging Face causal LM as a skorch module: next-token log-probabilities and their loss.

With these two modules a LoRA of a pretrained causal language model trains through skorch's
``NeuralNet`` like any other module, so :class:`~sklearn_icml.lora.FlatLoRACallback` drives
Flat-LoRA on it: ``NeuralNet(NextTokenLogProbs(peft_model), criterion=MeanTokenNLL, ...)``,
fitted on an ``(n_sequences, length)`` array of token ids. The log-probabilities come from the
library's shared kernel (:func:`sklearn_icml.utils._causal_lm.completion_log_probs`). torch is
imported when this module is imported.
"""

from ..utils import optional_import
from ..utils._causal_lm import completion_log_probs

torch = optional_import("torch", "neural")
nn = torch.nn


class NextTokenLogProbs(nn.Module):
    """A causal LM's summed next-token log-probability and token count per sequence.

    ``forward(input_ids, attention_mask=None)`` returns an ``(n_sequences, 2)`` tensor:
    column 0 the sum of ``log p(token_t | tokens_<t)`` over the sequence's tokens after the
    first (where the mask is 1), column 1 how many tokens were counted.

    Parameters
    ----------
    lm : torch.nn.Module
        A Hugging Face causal LM (``lm(input_ids=..., attention_mask=...).logits``), for
        instance a peft model; it is kept, not copied.

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.datasets import make_tiny_causal_lm
    >>> from sklearn_icml.lora._causal_lm_net import MeanTokenNLL, NextTokenLogProbs
    >>> lm, _ = make_tiny_causal_lm()
    >>> out = NextTokenLogProbs(lm)(torch.tensor([[70, 71, 72, 73]]))
    >>> out[:, 1].tolist()
    [3.0]
    >>> bool(MeanTokenNLL()(out) > 0)
    True
    """

    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, input_ids, attention_mask=None):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        log_probs, n_tokens = completion_log_probs(
            self.lm, input_ids, attention_mask, [1] * input_ids.shape[0]
        )
        return torch.stack([log_probs, n_tokens.to(log_probs.dtype)], dim=1)


class MeanTokenNLL(nn.Module):
    """Mean negative log-likelihood per token of :class:`NextTokenLogProbs`' output.

    ``forward(y_pred, y_true=None)``: ``-sum(y_pred[:, 0]) / sum(y_pred[:, 1])``; ``y_true``
    is ignored (the targets are the inputs shifted by one), so skorch's criterion interface
    fits.
    """

    def forward(self, y_pred, y_true=None):
        return -y_pred[:, 0].sum() / y_pred[:, 1].sum().clamp_min(1.0)
