"""Demo: the F-16 clip aligner on rotating-dot videos, read at 16, 4 and 1 FPS."""

from . import register_demo


@register_demo(
    "F16VideoClassifier",
    what="F-16 aligner + small transformer trained at 16 FPS on 300 one-second videos "
    "(radius task); accuracy when read at 16, 4 and 1 FPS; Bayes limits of the direction task",
    budget_s=30,
)
def demo():
    import numpy as np
    import torch

    from sklearn_icml.datasets import make_rotating_dot_videos
    from sklearn_icml.datasets._video import direction_bayes_accuracy
    from sklearn_icml.video import MultiFrameProjector, make_frame_projector

    from ..video import F16VideoClassifier

    X, y = make_rotating_dot_videos(300, duration_s=1, task="radius", random_state=0)
    Xt, yt = make_rotating_dot_videos(200, duration_s=1, task="radius", random_state=1)
    clf = F16VideoClassifier(hidden_dim=16, n_layers=1, max_epochs=12, random_state=0)
    clf.fit(X, y)
    figures = {f"radius acc. read at {r} FPS": clf.score(Xt, yt, inference_fps=r)
               for r in (16, 4, 1)}
    figures["tokens per second of video"] = clf.n_tokens_per_clip_
    figures["parameters"] = clf.n_params_
    # the split-init identity: the untrained aligner is the time average of P
    with torch.random.fork_rng(), torch.no_grad():
        torch.manual_seed(0)
        P = make_frame_projector(16, 8)
        z = torch.randn(1, 16, 4, 16)
        err = (MultiFrameProjector.from_frame_projector(P)(z)[0, 0] - P(z[0]).mean(0)).abs()
    figures["split-init identity max error"] = float(err.max())
    for fps in (1, 4, 16):
        figures[f"direction Bayes limit at {fps} FPS"] = round(direction_bayes_accuracy(fps), 3)
    assert np.isfinite(list(figures.values())).all()
    return figures
