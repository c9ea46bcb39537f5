"""Demo: EVO's extreme cost quantile (GPDTailQuantile) and a short EVO run (spec E1, E2)."""

from . import register_demo


@register_demo(
    "EVOAgent",
    what="GPD 0.999-quantile of Lomax(4) costs; 3 PPO-Lag epochs of EVO on RiskyShortcutEnv",
    budget_s=25,
)
def demo():
    import numpy as np
    from scipy import stats

    from sklearn_icml.safe_rl import EVOAgent, GPDTailQuantile, RiskyShortcutEnv

    C = stats.lomax.rvs(4, size=20000, random_state=np.random.default_rng(0))
    est = GPDTailQuantile(threshold_quantile=0.9, tail_quantile=0.99).fit(C)
    agent = EVOAgent(env=RiskyShortcutEnv(), cost_limit=10.0, base="ppo_lag",
                     steps_per_epoch=400, actor_hidden=(16,), critic_hidden=(16,),
                     critic_update_iters=1, random_state=0).learn(1200)
    h = agent.history_
    return {
        "q_hat 0.999 (true 4.623)": float(est.predict()),
        "empirical 0.999": float(np.quantile(C, 0.999)),
        "xi_hat": float(est.shape_),
        "P(shortcut) epoch 1": float(h[0]["mean_action"]),
        "P(shortcut) last epoch": float(h[-1]["mean_action"]),
        "EVO q_hat (last)": float(h[-1]["q_hat"]),
    }
