"""Demo: switchback vs cluster-randomised EXP3-HT-IX in the paper's experiment (reduced size)."""

from . import register_demo


@register_demo(
    "ClusterRandomizedEXP3IX",
    what="95th-percentile regret over 40 seeds vs SwitchbackEXP3IX, 2 arms, random unit "
    "rewards, T=20, N=T^2 and T^3, RRP cells of 6",
    budget_s=30,
)
def demo():
    import numpy as np

    from sklearn_icml.bandits import (
        ClusterRandomizedEXP3IX,
        RandomRewardGridEnv,
        SwitchbackEXP3IX,
        run_seeds,
    )

    T = 20
    figures = {}
    for label, L in [("N=T^2", T), ("N=T^3", 89)]:
        env = RandomRewardGridEnv(grid_side=L, n_arms=2, horizon=T)
        for name, policy in [
            ("switchback", SwitchbackEXP3IX(n_arms=2, horizon=T)),
            ("cluster", ClusterRandomizedEXP3IX(n_arms=2, horizon=T, exposure_radius=1,
                                                cell_size=6)),
        ]:
            regrets = np.array([run.regret_ for run in run_seeds(policy, env, range(40))])
            figures[f"{name} {label} mean / q95"] = (
                f"{regrets.mean():.2f} / {np.quantile(regrets, 0.95):.2f}"
            )
    return figures
