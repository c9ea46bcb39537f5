"""Demo: Cl-BAI and BAI-Cl against naive per-agent BAI on 30 agents in 3 clusters."""

from . import register_demo


@register_demo(
    "ClBAI",
    what="Cl-BAI, BAI-Cl and naive SE on 30 agents, 3 clusters, 10 arms (Gaussian, delta=0.05)",
    budget_s=15,
)
def demo():
    from sklearn_icml.bandits import (
        BAICl,
        ClBAI,
        ClusteredBanditEnv,
        NaiveBAI,
        best_arm_accuracy,
        make_clustered_bandit,
    )

    means, assignment = make_clustered_bandit(30, 3, 10, random_state=0)
    eta = ClusteredBanditEnv(means=means, assignment=assignment).eta_
    figures = {}
    pulls = {}
    for name, algo in [
        ("naive", NaiveBAI(delta=0.05)),
        ("Cl-BAI", ClBAI(delta=0.05, eta=eta)),
        ("BAI-Cl", BAICl(n_clusters=3, delta=0.05, eta=eta, random_state=0)),
    ]:
        env = ClusteredBanditEnv(means=means, assignment=assignment, random_state=0)
        algo.run(env)
        pulls[name] = algo.sample_complexity_
        figures[f"{name} pulls"] = f"{algo.sample_complexity_:.3g}"
        figures[f"{name} correct"] = best_arm_accuracy(algo, env)
    figures["Cl-BAI/naive"] = pulls["Cl-BAI"] / pulls["naive"]
    figures["BAI-Cl/naive"] = pulls["BAI-Cl"] / pulls["naive"]
    return figures
