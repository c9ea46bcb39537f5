"""Demo: EVO's extreme cost quantile (GPDTailQuantile) and a short EVO run."""

from . import register_demo


@register_demo(
    "EVOAgent",
    what="GPD 0.999-quantile of Lomax(4) costs; 3 PPO-Lag iterations of EVO on RiskyShortcutEnv",
    budget_s=25,
)
def demo():
    import numpy as np
    from scipy import stats

    from sklearn_icml.safe_rl import EVOAgent, GPDTailQuantile, RiskyShortcutEnv

    C = stats.lomax.rvs(4, size=20000, random_state=np.random.default_rng(0))
    est = GPDTailQuantile(threshold_quantile=0.9, tail_quantile=0.99).fit(C)
    agent = EVOAgent(cost_limit=10.0, base="ppo_lag", max_iter=3, steps_per_iter=400,
                     actor_hidden_layer_sizes=(16,), critic_hidden_layer_sizes=(16,),
                     critic_max_epochs=1,
                     random_state=0).run(RiskyShortcutEnv())
    h = agent.history_
    return {
        "q_hat 0.999 (true 4.623)": float(est.predict()),
        "empirical 0.999": float(np.quantile(C, 0.999)),
        "xi_hat": float(est.shape_),
        "P(shortcut) iteration 1": float(h[0]["mean_action"]),
        "P(shortcut) last iteration": float(h[-1]["mean_action"]),
        "EVO q_hat (last)": float(h[-1]["q_hat"]),
    }
