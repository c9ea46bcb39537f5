"""Demo: DPO vs IPO losses and three normalisers on a 4-response bandit (Agarwal et al., 2025)."""

from . import register_demo


@register_demo(
    "TabularPreferencePolicy",
    what="tabular softmax policy over 4 responses fitted by the logistic (DPO) and squared "
    "(IPO) losses: normaliser choice, sampling policy, deterministic labels",
    budget_s=20,
)
def demo():
    import warnings

    import numpy as np
    from sklearn.exceptions import ConvergenceWarning

    from sklearn_icml.alignment import TabularPreferencePolicy, population_pairs

    rewards = np.array([1.0, 0.5, 0.0, -0.5])
    ref = np.array([0.1, 0.2, 0.3, 0.4])
    mu = np.array([0.4, 0.3, 0.2, 0.1])

    def fit(loss, pref=None, sampling=None, normalizer="reference", nu=ref, **params):
        pairs, labels, weight = population_pairs(
            None if pref is not None else rewards, pref_matrix=pref, sampling=sampling
        )
        key = "data_policy" if normalizer == "data" else "reference_policy"
        kwargs = {key: nu} if normalizer != "none" else {}
        return TabularPreferencePolicy(loss=loss, normalizer=normalizer, **params).fit(
            pairs, labels, sample_weight=weight, **kwargs
        )

    figures = {}
    dpo = fit("logistic", beta=1.0)
    figures["DPO E[r]"] = float(dpo.expected_reward(rewards)[0])
    figures["DPO KL to ref"] = float(dpo.kl_to(ref)[0])
    ipo = fit("squared", tau=1.0)
    figures["IPO E[r]"] = float(ipo.expected_reward(rewards)[0])
    for name, nu in (("data", mu), ("none", None)):
        pol = fit("logistic", sampling=mu, normalizer=name, nu=nu, beta=1.0)
        figures[f"DPO nu={name} E[r]"] = float(pol.expected_reward(rewards)[0])
    deterministic = (np.subtract.outer(rewards, rewards) > 0).astype(float)
    np.fill_diagonal(deterministic, 0.5)
    figures["IPO pi(best), deterministic labels"] = float(
        fit("squared", deterministic, tau=1.0).policy_[0, 0]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for steps in (1_000, 100_000):
            pol = fit("logistic", deterministic, beta=1.0, solver="gd", learning_rate=0.25,
                      max_iter=steps, tol=0.0)
            figures[f"DPO pi(best) after {steps} steps"] = float(pol.policy_[0, 0])
    return figures
