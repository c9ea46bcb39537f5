"""Fast constructor arguments and known check failures for the common estimator test.

One block per method, in the order of ARCHITECTURE.md's method map. An estimator missing here is
built with its defaults. EXPECTED_FAILED_CHECKS lists, per estimator, the scikit-learn checks
it cannot pass by nature, each with a one-line reason; never list a check because it fails.
"""

from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB


def _tiny_causal_lm():
    """A random-weight Llama of a few thousand parameters (None without the llm extra)."""
    try:
        from sklearn_icml.datasets import make_tiny_causal_lm

        return make_tiny_causal_lm(hidden_size=8, n_layers=1, n_heads=2)[0]
    except ImportError:
        return None


TEST_PARAMS = {
    # Stump-forest GAM
    "StumpForestGAMRegressor": {"n_stumps": 10, "max_iter": 3, "min_samples_leaf": 5},
    "StumpForestGAMClassifier": {"n_stumps": 10, "max_iter": 3, "min_samples_leaf": 5},
    # PTIB multi-modal clustering
    "PTIBClustering": {"n_init": 2, "max_sweeps": 10, "max_iter": 2},
    # CAPA model similarity
    "CAPASimilarity": {
        "estimators": [("lr", LogisticRegression(max_iter=200)), ("nb", GaussianNB())],
        "cv": 2,
    },
    # DP stratified sampling
    # random float X makes every row its own stratum (N_h = 1): only a census is feasible
    "DPStratifiedSampler": {"total_sample_size": 1.0, "allocation": "proportional"},
    # Privacy amplification by random partitioning
    # 10 DP-SGD steps with little noise: fast, and enough to fit the checks' toy data
    "DPSGDClassifier": {
        "noise_multiplier": 0.01, "steps_per_epoch": 10, "num_selected": 5, "learning_rate": 1.0,
    },
    # Multi-agent best-arm identification
    # runners and environments (not estimators: test_public_api builds them with these)
    "BAICl": {"n_clusters": 2, "eta": 0.2},
    "BAIClPlusPlus": {"n_clusters": 2, "eta": 0.2, "eta1": 0.2},
    "ClusteredBanditEnv": {"means": [[0.9, 0.1], [0.1, 0.9]], "assignment": [0, 1, 1]},
    # Bandits with interference
    "InterferenceGridEnv": {"grid_side": 4, "n_arms": 3, "horizon": 10},
    "SwitchbackEXP3IX": {"n_arms": 3, "horizon": 10},
    "ClusterRandomizedEXP3IX": {"n_arms": 3, "horizon": 10},
    "RandomRewardGridEnv": {"grid_side": 4, "n_arms": 2, "horizon": 10},
    # Streaming parity RNN
    # tiny net, 10 epochs; a large alphabet so the checks' rounded data are valid symbols
    "StreamingParityRNNClassifier": {
        "n_symbols": 64, "hidden_size": 8, "max_epochs": 10, "learning_rate": 0.5, "loss": "ce",
        "init_gain": 1.0, "random_state": 0,
    },
    # Data weighting model
    # tiny nets, 2 stages of 3 DWM updates and 40 learner steps
    "DWMClassifier": {
        "hidden_layer_sizes": (8,), "max_iter": 40, "n_stages": 2, "dwm_steps_per_stage": 3,
        "batch_size": 16, "learning_rate": 0.3, "random_state": 0,
    },
    "DWMRegressor": {
        "hidden_layer_sizes": (), "max_iter": 40, "n_stages": 2, "dwm_steps_per_stage": 3,
        "batch_size": 16, "learning_rate": 0.1, "random_state": 0,
    },
    # a large vocabulary so the checks' rounded data are valid tokens
    "DWMCharLM": {
        "vocab_size": 64, "embedding_dim": 4, "hidden_size": 8, "max_iter": 6, "n_stages": 2,
        "dwm_steps_per_stage": 2, "batch_size": 8, "random_state": 0,
    },
    # a LoRA of a tiny random Llama (259 tokens: the checks' data are valid token ids)
    "DWMCausalLM": {
        "model": _tiny_causal_lm(), "lora_rank": 2, "max_iter": 4, "n_stages": 2,
        "dwm_steps_per_stage": 1, "batch_size": 8, "val_batch_size": 8, "random_state": 0,
    },
    # In-context regression with multi-head attention
    # 4 Adam steps on batches of 8 prompts; the closed-form ICL predictors' defaults are fast.
    # All four take 3-D prompts (input tag two_d_array=False): the common test runs only the
    # data-free checks; tests/neural/test_icl_api.py re-runs the API checks on prompts
    "MultiHeadSoftmaxICLRegressor": {
        "max_iter": 4, "batch_size": 8, "steps_per_epoch": 2, "random_state": 0,
    },
    # EVO extreme-value constrained RL: none
    # Offline preference losses
    # none: TabularPreferencePolicy and PreferenceLMTrainer learn from pairs, not from X
    # (input tag two_d_array=False), so the common test runs only the data-free checks;
    # tests/alignment test fit, clone and the errors on pairs
    # Flat-LoRA
    # a width-16 MLP, LoRA rank 4, 15 epochs: fast, and enough for the checks' toy data
    "FlatLoRAClassifier": {
        "hidden_layer_sizes": (16,), "lora_rank": 4, "max_epochs": 15, "learning_rate": 0.03,
        "random_state": 0,
    },
    "FlatLoRARegressor": {
        "hidden_layer_sizes": (16,), "lora_rank": 4, "max_epochs": 15, "learning_rate": 0.03,
        "random_state": 0,
    },
    # SerLiC reflectance compression
    # ScanOrderSerializer: the defaults are fast. SerLiCCodec and AdaptiveContextCodec are
    # codecs (sklearn_icml.base.BaseCodec) whose input is a list of point clouds (input tag
    # two_d_array=False): the common test runs their data-free checks only
    # CellFlux flow matching
    # a tiny MLP, 2 epochs, a 3-point time grid; label 0 of the checks' y marks the controls
    "CellFlux": {
        "control_label": 0, "hidden_layer_sizes": (8,), "embedding_dim": 4, "max_epochs": 2,
        "n_sampling_steps": 2, "cfg_scale": 0.0, "cond_drop_prob": 0.0, "learning_rate": 1e-3,
        "random_state": 0,
    },
    # LwI continual learning
    # single-task path (an ordinary MLP classifier): small net, 10 epochs at a larger
    # learning rate
    "LwIClassifier": {
        "hidden_layer_sizes": (16, 16), "max_epochs": 10, "learning_rate": 0.05, "batch_size": 16,
        "random_state": 0,
    },
    # F-16 high-frame-rate video
    # a tiny aligner and transformer, 2 epochs. Both take 4-D videos / frame features, so
    # their input tags say "not 2-D" and sklearn runs only its data-free checks here;
    # tests/video/test_classifier.py runs the other API checks that need no 2-D data
    "F16VideoClassifier": {
        "hidden_dim": 8, "n_layers": 1, "n_heads": 2, "max_epochs": 2, "random_state": 0,
    },
    "F16ClipCompressor": {"hidden_dim": 4, "random_state": 0},
    # MAS-GPT
    # none: ConsistentPairBuilder, MASGPTRouter and MASGPTSolver take lists of str (tag
    # two_d_array=False), so the common test runs only check_estimator_cloneable on them;
    # tests/mas/test_router.py runs the API checks that apply to string input
}

EXPECTED_FAILED_CHECKS = {
    # Stump-forest GAM
    "StumpForestGAMRegressor": {
        "check_sample_weight_equivalence_on_dense_data": "min_samples_leaf counts and the "
        "quantile bins use unweighted rows by design, so a weight is not a repeated row",
    },
    "StumpForestGAMClassifier": {
        "check_sample_weight_equivalence_on_dense_data": "min_samples_leaf counts and the "
        "quantile bins use unweighted rows by design, so a weight is not a repeated row",
    },
    # PTIB multi-modal clustering
    "PTIBClustering": {
        "check_non_transformer_estimators_n_iter": "max_iter bounds the view re-weighting "
        "rounds; the check's single 2-D X is one view, which has none, so n_iter_ is 0",
    },
    # CAPA model similarity: none
    # DP stratified sampling
    "DPStratifiedSampler": {
        "check_fit1d": "fit takes the population's 1-D vector of stratum labels by design",
    },
    # Privacy amplification by random partitioning: none
    # Multi-agent best-arm identification: none
    # Bandits with interference: none
    # Streaming parity RNN
    # columns are time steps: predicting sequences longer than the training ones is the
    # point of the method, so predict accepts any number of columns
    "StreamingParityRNNClassifier": {
        "check_n_features_in_after_fitting": "sequences of any length are accepted at "
        "predict time (columns are time steps)",
        "check_classifiers_train": "it requires predict to reject another number of "
        "columns; its other assertions are re-run in tests/neural/test_streaming_parity.py",
    },
    # Data weighting model
    "DWMCausalLM": {
        "check_estimators_overwrite_params": "the check compares joblib hashes, and a torch "
        "model (the model parameter) hashes differently from its own deep copy; "
        "tests/weighting/test_causal_lm.py checks that fit leaves the model's weights unchanged",
    },
    # In-context regression with multi-head attention
    # none: the four ICL estimators take 3-D prompts (see TEST_PARAMS)
    # EVO extreme-value constrained RL
    "GPDTailQuantile": {
        "check_fit1d": "fit takes a 1-D vector of costs by design (one cost per episode)",
    },
    # Offline preference losses
    # none: TabularPreferencePolicy and PreferenceLMTrainer learn from pairs, not from X
    # (input tag two_d_array=False), so the common test runs only the data-free checks;
    # tests/alignment test fit, clone and the errors on pairs
    # Flat-LoRA: none
    # SerLiC reflectance compression
    "ScanOrderSerializer": dict.fromkeys(
        [
            "check_estimators_overwrite_params", "check_estimators_fit_returns_self",
            "check_readonly_memmap_input", "check_fit_idempotent", "check_fit_check_is_fitted",
            "check_n_features_in",
        ],
        "X holds point coordinates, at least 3 columns (x, y, z); the check fits 2 columns",
    ),
    # CellFlux flow matching
    # fit(X, y) needs control rows (y == control_label) and predict needs the target
    # perturbation when fit saw several; the checks' own y and calls cannot supply them.
    # tests/generative/test_cellflux.py checks row order, subsets, determinism, NaN/inf and
    # pandas input on control/treated data instead
    "CellFlux": {
        **dict.fromkeys(
            ["check_fit2d_1sample", "check_fit2d_1feature"],
            "the checks' y has no row equal to control_label (0): fit raises, by design",
        ),
        **dict.fromkeys(
            [
                "check_estimators_dtypes", "check_dtype_object",
                "check_f_contiguous_array_estimator", "check_dict_unchanged",
                "check_methods_sample_order_invariance", "check_methods_subset_invariance",
            ],
            "predict(X) without a perturbation is ambiguous when y holds several treated "
            "labels; predict transports noised controls, so rows depend on the seeded noise",
        ),
    },
    # LwI continual learning
    "LwIClassifier": {
        "check_fit_score_takes_y": "partial_fit learns a new task whose classes must be "
        "disjoint from the fitted ones; the check re-feeds the same classes",
    },
    # F-16 high-frame-rate video: none
    # MAS-GPT
    # none (see TEST_PARAMS)
}
