"""Neural methods: the streaming parity RNN and multi-head softmax attention for ICL.

The trained networks need torch and skorch (the ``neural`` extra); they are imported on
first access (they are listed in ``_TORCH_NAMES``), so ``from sklearn_icml.neural import
GDICLPredictor`` and the other numpy-only names (the closed-form ICL predictors, the prompt
samplers, the closed forms, the automaton extraction, the effective theory) work without
torch.
"""

from ..utils._lazy import lazy_module

# Names that need torch: public name -> private module, imported on first access.
_LAZY = {}

__all__ = []

# The streaming parity RNN (van Rossem & Saxe, ICML 2025) and its automaton analysis
from ._automaton import Automaton  # noqa: E402
from ._automaton_extraction import extract_automaton, merger_fraction  # noqa: E402
from ._parity_theory import effective_theory_ode  # noqa: E402

_LAZY.update(
    dict.fromkeys(["ParityRNNModule", "StreamingParityRNNClassifier"], "._streaming_parity")
)
__all__ += [
    "Automaton",
    "ParityRNNModule",
    "StreamingParityRNNClassifier",
    "effective_theory_ode",
    "extract_automaton",
    "merger_fraction",
]

# In-context regression with multi-head softmax attention (He et al., ICML 2025)
from ._icl_closed_forms import (  # noqa: E402
    approx_icl_loss,
    bayes_ridge_predict,
    bayes_risk_asymptotic,
    debiased_gd_optimum,
    fit_gd_eta,
    gd_predict,
    gd_risk_finite,
    optimal_mu,
    single_head_optimum,
    softmax_kernel_predict,
)
from ._icl_patterns import (  # noqa: E402
    attention_pattern_metrics,
    multitask_pattern_metrics,
    plot_attention_patterns,
)
from ._icl_predictors import (  # noqa: E402
    BayesRidgeICLPredictor,
    GDICLPredictor,
    SoftmaxKernelICLPredictor,
)
from ._icl_tasks import (  # noqa: E402
    LinearICLTaskSampler,
    MultiTaskLinearICLTaskSampler,
    check_prompts,
)

_LAZY.update(
    dict.fromkeys(
        ["MultiHeadAttentionICLModule", "MultiHeadSoftmaxICLRegressor"], "._icl_attention"
    )
)
__all__ += [
    "BayesRidgeICLPredictor",
    "GDICLPredictor",
    "LinearICLTaskSampler",
    "MultiHeadAttentionICLModule",
    "MultiHeadSoftmaxICLRegressor",
    "MultiTaskLinearICLTaskSampler",
    "SoftmaxKernelICLPredictor",
    "approx_icl_loss",
    "attention_pattern_metrics",
    "bayes_ridge_predict",
    "bayes_risk_asymptotic",
    "check_prompts",
    "debiased_gd_optimum",
    "fit_gd_eta",
    "gd_predict",
    "gd_risk_finite",
    "multitask_pattern_metrics",
    "optimal_mu",
    "plot_attention_patterns",
    "single_head_optimum",
    "softmax_kernel_predict",
]

_TORCH_NAMES = set(_LAZY)

# torch-based names are imported on first access only; ``__all__`` is answered by
# __getattr__ (see utils._lazy.lazy_module), without the names whose dependencies are not
# installed, so that `from sklearn_icml.neural import *` works without torch
__getattr__, __dir__ = lazy_module(
    __name__, __all__, _LAZY, dict.fromkeys(set(_LAZY.values()), ("torch", "skorch"))
)
del __all__
