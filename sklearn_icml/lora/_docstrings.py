"""Docstring pieces shared by the Flat-LoRA estimators, filled in by :func:`fill_doc`.

A class docstring names a piece as ``%(name)s`` on a line of its own; :func:`fill_doc`
substitutes it (see :func:`sklearn_icml.utils._docstrings.fill_doc`).
"""

from ..utils._docstrings import fill_doc as _fill_doc

#: rho, schedule and restore, the parameters of the perturbation every Flat-LoRA class has.
PERTURBATION_PARAMS = """\
rho : float, default=0.05
    Perturbation strength (finite, >= 0). ``0`` is plain LoRA: nothing is drawn or
    touched.
schedule : {"cosine", "constant"} or callable, default="cosine"
    The ramp ``c(t)`` of the noise scale: ``0.5 * (1 - cos(pi t / total_steps))``,
    ``1``, or ``schedule(t, total_steps)`` returning a float in ``[0, 1]``.
restore : {"regenerate", "copy"}, default="regenerate"
    How the noise is removed after each step: ``"regenerate"`` subtracts the noise
    regenerated from its seed (the paper's memory trick; exact up to one float rounding
    per step, so meant for float32/float64 base weights); ``"copy"`` keeps a copy of
    the touched weights and puts it back exactly."""

PIECES = {
    "perturbation_params": PERTURBATION_PARAMS
    + """
interval : int, default=1
    Perturb one optimiser step in every ``interval``.""",
    "flat_lora_params": """\
Parameters
----------
module : None, torch.nn.Module or callable, default=None
    The model to fine-tune. A module instance (typically pre-trained) is deep-copied at
    ``fit`` and its output size must match the task; a callable is called as
    ``module(n_features=..., n_outputs=...)``; ``None`` builds a ReLU MLP with
    ``hidden_layer_sizes`` (randomly initialised from ``random_state``, then frozen).
hidden_layer_sizes : tuple of int, default=(64,)
    Hidden layers of the default MLP.
lora_rank : int, default=8
    LoRA rank ``r``.
lora_alpha : float, default=16
    LoRA alpha (scaling ``alpha / r``).
target_modules : tuple of str or str, default=("Linear",)
    Layers to adapt, by class name (``"Linear"``) or module name (peft's suffix rule).
lora_backend : {"own", "peft"}, default="own"
    The library's minimal LoRA layer, or peft's ``get_peft_model`` (needs peft).
"""
    + PERTURBATION_PARAMS
    + """
max_epochs : int, default=30
batch_size : int, default=64
lr : float, default=1e-2
    AdamW learning rate.
weight_decay : float, default=0.0
    AdamW weight decay.
random_state : int, RandomState instance or None, default=None
    Seeds the base module, the LoRA initialisation, the shuffling and the noise.
device : str, default="cpu"
n_jobs : int or None, default=1
    torch intra-op threads during fit and prediction.
verbose : int, default=0
    0 is silent; 1 prints skorch's per-epoch table.
**kwargs
    Parameters routed to the skorch net as skorch routes them (``module__*``,
    ``optimizer__*``, ``criterion__*``, ``iterator_train__*``, ``iterator_valid__*``,
    ``callbacks__*``); they win over the estimator's own settings.""",
    "flat_lora_attributes": """\
Attributes
----------
n_features_in_ : int
feature_names_in_ : ndarray of shape (n_features_in_,)
    Only when ``X`` has string column names.
net_ : skorch.NeuralNet
    The fitted net; ``module_`` and ``history_`` come from it.
module_ : torch.nn.Module
    The fine-tuned module with its LoRA layers (``net_.module_``).
history_ : skorch.History
    skorch's record of the fit, one entry per epoch.
n_epochs_run_ : int
    Epochs run.
flat_lora_ : FlatLoRAPerturbation
    The perturbation of the fit (``layers_``, ``total_steps_``, ``n_perturb_calls_``).""",
    "flat_lora_notes": """\
Notes
-----
The perturbation follows [1]_: filter-wise Gaussian noise on the frozen weights at
every optimiser step, removed after the step, with a cosine ramp of its scale. The base
model and the LoRA initialisation are drawn under the seed of ``random_state``; the
optimiser is AdamW, the usual optimiser of LoRA fine-tuning. Predictions run the module in
float64 in one pass, so that they do not depend on which rows are predicted together.

References
----------
.. [1] T. Li, Z. He, Y. Li, Y. Wang, L. Shang, X. Huang, "Flat-LoRA: Low-Rank Adaptation
   over a Flat Loss Landscape", ICML 2025, arXiv:2409.14396.""",
}


def fill_doc(obj):
    """Substitute the Flat-LoRA ``%(name)s`` pieces into ``obj.__doc__``; return ``obj``."""
    return _fill_doc(obj, PIECES)
