"""Demo: PTIBClustering on four generated count views, one of them pure noise."""

from . import register_demo


@register_demo(
    "PTIBClustering",
    what="PTIB-style multi-view IB clustering of 500 samples, 4 count views (1 pure noise)",
    budget_s=20,
)
def demo():
    from sklearn.metrics import normalized_mutual_info_score

    from sklearn_icml.cluster import PTIBClustering
    from sklearn_icml.cluster._metrics import clustering_accuracy
    from sklearn_icml.datasets import make_multiview_counts

    Xs, y = make_multiview_counts(random_state=0)
    # count views: the relevant variable of the information bottleneck is the word
    model = PTIBClustering(n_clusters=5, relevance="features", random_state=0).fit(Xs)
    single = [
        clustering_accuracy(
            y, PTIBClustering(n_clusters=5, relevance="features", random_state=0)
            .fit([X]).labels_
        )
        for X in Xs
    ]
    weights = "/".join(f"{w:.2f}" for w in model.view_weights_)
    return {
        "ACC": clustering_accuracy(y, model.labels_),
        "NMI": float(normalized_mutual_info_score(y, model.labels_)),
        "best single-view ACC": max(single),
        "weights": weights,
        "noise-view weight": float(model.view_weights_[-1]),
    }
