"""Neural methods on torch and skorch (needs the ``neural`` extra)."""

# --- streaming-parity-rnn ---
from ._automaton import Automaton, extract_automaton, merger_fraction
from ._parity_theory import effective_theory_ode
from ._streaming_parity import (
    LengthBucketLoader,
    ParityRNNModule,
    StreamingParityRNNClassifier,
)

__all__ = [
    # --- streaming-parity-rnn ---
    "Automaton",
    "LengthBucketLoader",
    "ParityRNNModule",
    "StreamingParityRNNClassifier",
    "effective_theory_ode",
    "extract_automaton",
    "merger_fraction",
]

# --- icl-multihead-attention ---
from ._icl_attention import (  # noqa: E402
    MultiHeadAttentionICLModule,
    MultiHeadSoftmaxICLRegressor,
    OnlinePromptLoader,
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
    approx_icl_loss,
    attention_pattern_metrics,
    bayes_ridge_predict,
    bayes_risk_asymptotic,
    check_prompts,
    debiased_gd_optimum,
    fit_gd_eta,
    gd_predict,
    gd_risk_finite,
    multitask_pattern_metrics,
    optimal_mu,
    single_head_optimum,
    softmax_kernel_predict,
)

__all__ += [
    "BayesRidgeICLPredictor",
    "GDICLPredictor",
    "LinearICLTaskSampler",
    "MultiHeadAttentionICLModule",
    "MultiHeadSoftmaxICLRegressor",
    "MultiTaskLinearICLTaskSampler",
    "OnlinePromptLoader",
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
    "SoftmaxKernelICLPredictor",
    "single_head_optimum",
    "softmax_kernel_predict",
]
