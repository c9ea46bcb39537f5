"""DWMCausalLM: continued training of a pretrained causal LM (a LoRA of it) weighted by a DWM."""

from sklearn.utils._param_validation import HasMethods

from ..utils import optional_import
from ..utils._causal_lm import lora_copy
from ..utils._deprecation import DEPRECATED
from ..utils._param_validation import POSITIVE_INT, POSITIVE_REAL
from ..utils._params import store_params
from ._char_lm import DWMCharLM

torch = optional_import("torch", "neural")
nn = torch.nn


class CausalLMLearner(nn.Module):
    """A LoRA of a copy of a Hugging Face causal LM, with the GRU learner's interface.

    ``forward(X)`` takes a ``(B, L)`` LongTensor of tokens and returns the logits of the
    tokens ``X[:, 1:]`` given their prefixes, shape ``(B, L - 1, vocab_size)``, as
    :class:`CharGRUModule` does, so that the bi-level schedule of :class:`DWMCharLM` trains
    it unchanged: only the LoRA factors are trainable (the hypergradient and the optimiser see
    only them), the pretrained weights are frozen. ``embedding(X)`` is the model's own token
    embedding, which the weighting model reads.

    The model given is copied: the caller's model is never changed. Attention runs in
    PyTorch's plain implementation, which has the second derivatives the exact
    hypergradient needs.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A causal LM (``model(input_ids=...).logits``), e.g. ``load_smollm2()[0]``.
    lora_rank : int, default=8
    lora_alpha : float, default=16
    lora_target_modules : tuple of str, default=("q_proj", "v_proj")
        Names of the linear layers that get a LoRA (peft's ``target_modules``).

    Examples
    --------
    >>> import torch
    >>> from sklearn_icml.datasets import make_tiny_causal_lm
    >>> from sklearn_icml.weighting import CausalLMLearner
    >>> model, _ = make_tiny_causal_lm()
    >>> learner = CausalLMLearner(model, lora_rank=2)
    >>> learner(torch.zeros(2, 6, dtype=torch.long)).shape
    torch.Size([2, 5, 259])
    >>> sum(p.numel() for p in learner.parameters() if p.requires_grad)
    512
    """

    def __init__(self, model, lora_rank=8, lora_alpha=16,
                 lora_target_modules=("q_proj", "v_proj")):
        super().__init__()
        self.lm = lora_copy(model, rank=lora_rank, alpha=lora_alpha,
                            target_modules=lora_target_modules, attn_implementation="eager")

    def embedding(self, X):
        """The pretrained token embeddings of ``X``, shape ``(B, L, hidden_size)``."""
        return self.lm.get_input_embeddings()(X.long())

    def forward(self, X):
        return self.lm(input_ids=X.long(), use_cache=False).logits[:, :-1]


class DWMCausalLM(DWMCharLM):
    """Continued training of a pretrained causal LM on sequences weighted by a DWM.

    The paper's setting with a real language model: a LoRA of ``model`` (for example
    SmolLM2-135M from :func:`sklearn_icml.datasets.load_smollm2`) trains on a pool of token
    sequences while a :class:`WeightingMLP` gives each sequence of a batch a weight; the
    weighting model is trained by bi-level optimisation at the start of each stage so that
    one weighted step lowers the LM's loss on validation sequences of the target domain.
    The schedule, the weights and every fitted attribute are those of :class:`DWMCharLM`;
    the learner is :class:`CausalLMLearner` (only its LoRA factors train) and the weighting
    model reads the mean of the LM's own token embeddings, the sequence's current loss and
    optional ``sample_features``.

    ``X`` holds one sequence of token ids of the model's tokenizer per row, all of the same
    length (windows of tokenized text). ``model`` is copied, never changed.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The pretrained causal LM.
    lora_rank : int, default=8
        Rank of the LoRA factors.
    lora_alpha : float, default=16
        LoRA scaling numerator (the update is ``alpha / rank * B A``).
    lora_target_modules : tuple of str, default=("q_proj", "v_proj")
        The linear layers that get a LoRA.
    learning_rate : float, default=1e-3
        Learning rate of the learner's optimiser.
    optimizer : {"sgd", "adam", "adamw"}, default="adamw"
        The learner's optimiser.
    max_iter : int, default=60
        Learner updates in total, split evenly over the stages.
    batch_size : int, default=8
        Sequences per learner batch and per DWM training batch (>= 2).
    n_stages : int, default=3
        Stages of the schedule (skorch epochs).
    dwm_steps_per_stage : int, default=5
        DWM updates at the start of each stage; 0 (with no ``warm_start_dwm``) gives plain
        uniform training.
    dwm_learning_rate : float, default=1e-3
        Adam learning rate of the weighting model.
    dwm_hidden : int, default=32
        Hidden width of the :class:`WeightingMLP`.
    temperature : float, default=1.0
        Softmax temperature of the weights.
    lookahead_learning_rate : float or None, default=None
        Step size of the one-step look-ahead; None uses ``learning_rate``.
    hypergradient : {"exact", "first_order"}, default="first_order"
        How the hypergradient is computed (:func:`one_step_hypergradient`); the same value,
        and first-order needs no second derivatives through the LM.
    use_batch_context : bool, default=True
        Give the DWM the batch mean of its inputs.
    online : bool, default=False
        Commit each DWM update's look-ahead step to the learner.
    loss_feature : {"auto", "raw", "log1p"}, default="auto"
        How the learner's current loss enters the DWM (``"auto"`` is ``"raw"``).
    validation_fraction : float, default=0.1
        Share of ``X`` held out as validation data when ``X_val`` is not given.
    val_batch_size : int, default=16
        Validation sequences per DWM update.
    warm_start_dwm : WeightingMLP, fitted DWM estimator or None, default=None
        Start from this weighting model (copied): the paper's transfer of a weighting model
        learned with one model to the training of another. Its input width must match (the
        same embedding width).
    callbacks : list of (str, skorch.callbacks.Callback), default=None
        Extra skorch callbacks of the learner's net.
    n_jobs : int or None, default=1
        Number of CPU workers: torch intra-op threads during ``fit`` and scoring (``None``
        means 1 unless in a :func:`joblib.parallel_config` context; -1 every core).
    random_state : int, RandomState instance or None, default=None
        Seeds the validation split, the LoRA initialisation, the DWM and the batch order.
    device : str or torch.device, default="cpu"
        Where the learner and the DWM train.
    verbose : int, default=0
        0 is silent; 1 prints skorch's per-stage table.
    **kwargs
        Parameters routed to the learner's skorch net (``optimizer__*``, ...).

    Attributes
    ----------
    vocab_size_ : int
        The model's vocabulary size.
    module_ : CausalLMLearner
        The trained learner (the copied model with its trained LoRA).
    weighting_model_ : WeightingMLP
        The trained data weighting model.
    stage_weight_sums_ : ndarray of shape (n_stages, n_samples)
        Total weight each row of ``X`` received in each stage.
    stage_sample_counts_ : ndarray of shape (n_stages, n_samples)
        How many times each row was drawn in each stage.
    stage_weight_stats_ : list of dict
        Per-stage statistics, as :class:`DWMCharLM` has them.
    history_ : skorch.History
        One record per stage.
    n_iter_ : int
        Learner updates done by its optimiser.

    See Also
    --------
    DWMCharLM : the same schedule on a GRU small enough to train from scratch.
    sklearn_icml.datasets.load_smollm2 : a pretrained model to train.

    References
    ----------
    .. [1] Y. Yu, K. Han, H. Zhou, Y. Tang, K. Huang, Y. Wang, D. Tao, "LLM Data Selection
       and Utilization via Dynamic Bi-level Optimization", ICML 2025, arXiv:2507.16178.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_icml.datasets import make_tiny_causal_lm
    >>> from sklearn_icml.weighting import DWMCausalLM
    >>> model, tokenizer = make_tiny_causal_lm()
    >>> X = np.random.default_rng(0).integers(0, 259, size=(24, 12))
    >>> lm = DWMCausalLM(model=model, lora_rank=2, max_iter=4, n_stages=2,
    ...                  dwm_steps_per_stage=1, batch_size=4, random_state=0).fit(X)
    >>> lm.stage_weight_sums_.shape, bool(lm.score(X) < 0)
    ((2, 24), True)
    """

    _parameter_constraints = {
        "model": [HasMethods(["get_input_embeddings", "forward"]), None],
        "lora_rank": [POSITIVE_INT],
        "lora_alpha": [POSITIVE_REAL],
        "lora_target_modules": [tuple, list],
        **{key: value for key, value in DWMCharLM._parameter_constraints.items()
           if key not in ("vocab_size", "embedding_dim", "hidden_size", "lr", "dwm_lr",
                          "lookahead_lr")},
    }

    def __init__(
        self,
        *,
        model=None,
        lora_rank=8,
        lora_alpha=16,
        lora_target_modules=("q_proj", "v_proj"),
        learning_rate=1e-3,
        optimizer="adamw",
        max_iter=60,
        batch_size=8,
        n_stages=3,
        dwm_steps_per_stage=5,
        dwm_learning_rate=1e-3,
        dwm_hidden=32,
        temperature=1.0,
        lookahead_learning_rate=None,
        hypergradient="first_order",
        use_batch_context=True,
        online=False,
        loss_feature="auto",
        validation_fraction=0.1,
        val_batch_size=16,
        warm_start_dwm=None,
        callbacks=None,
        n_jobs=1,
        random_state=None,
        device="cpu",
        verbose=0,
        **kwargs,
    ):
        store_params(self, locals())

    # DWMCharLM's deprecated parameter names never existed here: always unset
    lr = dwm_lr = lookahead_lr = DEPRECATED

    def _vocabulary_size(self, X):
        if self.model is None:
            raise ValueError(
                "DWMCausalLM needs model=, a Hugging Face causal LM such as "
                "sklearn_icml.datasets.load_smollm2()[0]. Got None instead."
            )
        vocab_size = self.model.config.vocab_size
        if X.size and int(X.max()) >= vocab_size:
            raise ValueError(
                f"X holds token id {int(X.max())}, outside the model's vocabulary of "
                f"{vocab_size}: tokenize X with the model's own tokenizer."
            )
        return int(vocab_size)

    def _embedding_width(self):
        return int(self.model.get_input_embeddings().embedding_dim)

    def _learner_module_kwargs(self):
        return {
            "module": CausalLMLearner,
            "module__model": self.model,
            "module__lora_rank": self.lora_rank,
            "module__lora_alpha": self.lora_alpha,
            "module__lora_target_modules": tuple(self.lora_target_modules),
        }

