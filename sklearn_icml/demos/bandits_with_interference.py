"""Demo: switchback vs cluster-randomised EXP3-IX on an interference grid (reduced size)."""

from . import register_demo


@register_demo(
    "ClusterRandomizedEXP3IX",
    what="regret over 6 seeds vs SwitchbackEXP3IX, 20x20 grid, k=3, T=500, kappa=r=1, l=6",
    budget_s=30,
)
def demo():
    import numpy as np

    from sklearn_icml.bandits import (
        ClusterRandomizedEXP3IX,
        InterferenceGridEnv,
        SwitchbackEXP3IX,
        run_seeds,
    )

    T = 500
    env = InterferenceGridEnv(20, 3, T, theta=[0.5, 0.4, 0.3], kappa=1)
    figures = {}
    spread = {}
    for name, policy in [
        ("switchback", SwitchbackEXP3IX(3, T)),
        ("cluster", ClusterRandomizedEXP3IX(3, T, exposure_radius=1, cell_size=6)),
    ]:
        regrets = np.array([run.regret_ for run in run_seeds(policy, env, range(6))])
        figures[f"{name} regret"] = f"{regrets.mean():.1f}+-{regrets.std(ddof=1):.2f}"
        spread[name] = regrets.std(ddof=1)
    figures["std ratio cluster/switchback"] = float(spread["cluster"] / spread["switchback"])
    return figures
