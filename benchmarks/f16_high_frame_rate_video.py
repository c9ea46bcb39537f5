"""F-16 high-frame-rate video (Li et al., ICML 2025): experiments E1-E3 and peers.

Run: python benchmarks/f16_high_frame_rate_video.py [--quick] [--skip-long | --long-only]
     [--long-n N]

``--long-only`` runs only the long variant (in a second process, next to a ``--skip-long``
run) and writes ``results/f16_high_frame_rate_video.long.md``; ``--long-n`` sets its number
of training videos (default 8,000).

E1  frame-rate sweep on the direction task (2 s videos, 2,000 train / 1,000 test): the
    multi-frame classifier trained at 1, 4 and 16 FPS, against the Bayes limits.
E2  aligner ablation on 1-s videos at 16 FPS: multiframe against meanpool.
E3  low-FPS decoding without retraining: (a) the E1 16-FPS model read at 8, 4, 2, 1 FPS;
    (b) the radius task trained at 16 FPS and read at lower rates; encoder time.
Long variant: 8,000 training videos for E1 at 16 FPS and E2 multiframe (same test sets).
Peers in the same run (on the E1 data): aligner="single" at 1 FPS, aligner="meanpool" at
16 FPS, a 2-layer Conv3d network, and frame-to-frame angular-moment features with
LogisticRegression; tokens per second of video and fit time against mean pooling.
A figure of accuracy against FPS with the Bayes limits is written next to the results.
"""

import sys

import numpy as np
import torch
from _harness import RESULTS, Report, Target, median_time, parse_args, timed_fit
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_icml.datasets import make_rotating_dot_videos
from sklearn_icml.datasets._video import direction_bayes_accuracy
from sklearn_icml.video import F16VideoClassifier
from sklearn_icml.video._frames import encode_videos

SEED = 0


# peers
class Conv3dNet(torch.nn.Module):
    """Two Conv3d layers (3 x 3 x 3, spatial stride 2), global average pool, linear head."""

    def __init__(self, n_classes=2, width=8):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Conv3d(1, width, 3, stride=(1, 2, 2), padding=1), torch.nn.ReLU(),
            torch.nn.Conv3d(width, 2 * width, 3, stride=(1, 2, 2), padding=1), torch.nn.ReLU(),
        )
        self.head = torch.nn.Linear(2 * width, n_classes)

    def forward(self, x):
        return self.head(self.body(x[:, None]).mean(dim=(2, 3, 4)))


def conv3d_fit_predict(X, y, X_test, *, epochs, seed=SEED):
    torch.manual_seed(seed)
    net = Conv3dNet()
    opt = torch.optim.AdamW(net.parameters(), lr=2e-3)
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)

    def train():
        for _ in range(epochs):
            for idx in torch.randperm(len(Xt)).split(64):
                opt.zero_grad()
                torch.nn.functional.cross_entropy(net(Xt[idx]), yt[idx]).backward()
                opt.step()

    fit_s, _ = median_time(train, repeat=1, warmup=0)
    with torch.no_grad():
        pred = torch.cat([net(b).argmax(1) for b in torch.from_numpy(X_test).split(256)])
        train_pred = torch.cat([net(b).argmax(1) for b in Xt.split(256)])
    return pred.numpy(), float((train_pred == yt).float().mean()), fit_s


def angular_moment_features(X):
    """Frame differences seen through a rotation-sensitive filter.

    ``a_t = sum_pixels X_t * exp(i * phi)`` (the complex angular moment around the centre);
    ``z_t = a_{t+1} * conj(a_t)`` turns by the phase increment; features are the mean of
    ``Re z``, ``Im z``, ``Im z / |z|`` and of the moment of the frame difference.
    """
    size = X.shape[-1]
    c = (size - 1) / 2
    rows, cols = np.mgrid[0:size, 0:size]
    phase = np.exp(1j * np.arctan2(rows - c, cols - c))
    a = np.einsum("nthw,hw->nt", X.astype(np.float64), phase)
    d = np.einsum("nthw,hw->nt", np.diff(X, axis=1).astype(np.float64), phase)
    z = a[:, 1:] * np.conj(a[:, :-1])
    unit = z / (np.abs(z) + 1e-9)
    return np.column_stack([
        z.real.mean(1), z.imag.mean(1), unit.imag.mean(1), unit.real.mean(1),
        np.abs(d).mean(1), (d * np.conj(a[:, :-1])).imag.mean(1),
    ])


# main
def _own_args(argv):
    """Split this script's own flags from the harness's (``--quick``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    skip_long = "--skip-long" in argv
    long_only = "--long-only" in argv
    long_n = None
    if "--long-n" in argv:
        i = argv.index("--long-n")
        long_n = int(argv[i + 1])
        del argv[i : i + 2]
    rest = [a for a in argv if a not in ("--skip-long", "--long-only")]
    return skip_long, long_only, long_n, rest


def main(argv=None):
    skip_long, long_only, long_n, rest = _own_args(argv)
    args = parse_args(__doc__, rest)
    quick = args.quick
    n_train, n_test, n_long = (300, 200, 600) if quick else (2000, 1000, 8000)
    n_long = long_n or n_long
    epochs = 4 if quick else 30
    torch.set_num_threads(1)
    report = Report(
        "f16_high_frame_rate_video" + (".long" if long_only else ""),
        "F-16: high-frame-rate video with per-clip multi-frame compression (ICML 2025)",
        quick=quick, packages=("numpy", "scikit-learn", "torch", "skorch"),
    )
    report.add(
        "Setup",
        f"Direction task of `make_rotating_dot_videos` (16x16 frames, native 16 FPS, "
        f"freq U(1, 6) rev/s), {n_train} training and {n_test} test videos, seed {SEED}; "
        f"classifier defaults (hidden 32, patch 4, pool 2, 2 layers, 4 heads, split init, "
        f"AdamW lr 2e-3 cosine, {epochs} epochs, batch 64), one torch thread, on a shared "
        "2-core machine (other jobs running, so absolute times are inflated; compare "
        "ratios). Neural fit times are single runs (a fit takes minutes); predict and "
        "encoder times are medians of 3. Prototype values are those of the reference prototype.",
    )

    def model(**kw):
        return F16VideoClassifier(max_epochs=epochs, random_state=SEED, **kw)

    Xt, yt = make_rotating_dot_videos(n_test, duration_s=2, random_state=SEED + 1)
    X1t, y1t = make_rotating_dot_videos(n_test, duration_s=1, random_state=SEED + 1)
    if long_only:
        run_long(report, model, n_long, Xt, yt, X1t, y1t)
        return
    X, y = make_rotating_dot_videos(n_train, duration_s=2, random_state=SEED)

    # E1
    e1 = {}
    for fps in (16, 4, 1):
        clf = model(fps=fps)
        fit_s, clf = timed_fit(clf, X, y, repeat=1)
        e1[fps] = {"clf": clf, "test": clf.score(Xt, yt), "train": clf.score(X, y),
                   "fit_s": fit_s}
        print(f"E1 fps={fps}: {e1[fps]['test']:.3f} ({fit_s:.0f} s)", flush=True)
    targets = {16: ">= 0.68 and >= 4 FPS + 0.15", 4: "0.45 - 0.64", 1: "0.45 - 0.55"}
    proto = {16: "0.754 (train 0.997, 57 s)", 4: "0.503 (train 0.873, 49 s)",
             1: "0.503 (train 0.684, 57 s)"}
    ok = {
        16: Target(0.68).met(e1[16]["test"]) and e1[16]["test"] >= e1[4]["test"] + 0.15,
        4: Target(0.45, 0.64).met(e1[4]["test"]),
        1: Target(0.45, 0.55).met(e1[1]["test"]),
    }
    rows = []
    for fps in (16, 4, 1):
        bayes = direction_bayes_accuracy(fps)
        rows.append([
            f"{fps} FPS", targets[fps], round(e1[fps]["test"], 3), "met" if ok[fps] else "MISSED",
            round(bayes, 3), Target(None, bayes + 0.04).check(e1[fps]["test"]),
            round(e1[fps]["train"], 3), round(e1[fps]["fit_s"], 1), proto[fps],
        ])
    report.add_table(
        "E1: frame-rate sweep (direction task, 2 s videos)",
        ["train/test fps", "target (test acc.)", "measured", "in target", "Bayes limit",
         "<= Bayes + 0.04", "train acc.", "fit s", "prototype"],
        rows,
    )
    report.write()

    # E3a: the 16-FPS model read at lower rates
    rows = []
    e3a = {}
    for rate in (16, 8, 4, 2, 1):
        acc = e1[16]["clf"].score(Xt, yt, inference_fps=rate)
        e3a[rate] = acc
        bayes = direction_bayes_accuracy(rate)
        target = "(E1)" if rate == 16 else f"0.45 - {bayes + 0.04:.2f}"
        verdict = "" if rate == 16 else Target(0.45, bayes + 0.04).check(acc)
        proto_a = {8: 0.512, 4: 0.486, 2: 0.521, 1: 0.487}.get(rate, 0.754)
        rows.append([f"{rate} FPS", target, round(acc, 3), verdict, round(bayes, 3), proto_a])
    report.add_table(
        "E3a: low-FPS decoding of the 16-FPS direction model (no retraining)",
        ["inference fps", "target", "measured", "in target", "Bayes limit", "prototype"],
        rows,
    )

    # E3b: radius task
    Xr, yr = make_rotating_dot_videos(n_train, duration_s=2, task="radius", random_state=SEED)
    Xrt, yrt = make_rotating_dot_videos(n_test, duration_s=2, task="radius",
                                        random_state=SEED + 1)
    rclf = model()
    rfit, rclf = timed_fit(rclf, Xr, yr, repeat=1)
    rtargets = {16: ">= 0.98", 8: ">= 0.95", 4: ">= 0.75", 2: "(none)", 1: ">= 0.45"}
    rlow = {16: 0.98, 8: 0.95, 4: 0.75, 2: None, 1: 0.45}
    rproto = {16: 0.996, 8: 0.980, 4: 0.860, 2: 0.714, 1: 0.551}
    rows = []
    for rate in (16, 8, 4, 2, 1):
        acc = rclf.score(Xrt, yrt, inference_fps=rate)
        enc_s, _ = median_time(
            lambda r=rate: encode_videos(Xrt, patch_size=4, native_fps=16, fps=r,
                                         frames_per_clip=16),
            repeat=3,
        )
        rows.append([
            f"{rate} FPS", rtargets[rate], round(acc, 3),
            Target(rlow[rate]).check(acc) if rlow[rate] is not None else "", rproto[rate],
            round(enc_s, 4), 16 // rate,
        ])
    report.add_table(
        "E3b: radius task (label in every frame), trained at 16 FPS, read at lower rates",
        ["inference fps", "target", "measured", "in target", "prototype",
         "encode s (test set, incl. repetition)", "x fewer frames encoded"],
        rows,
        note=f"Radius model: train accuracy {rclf.score(Xr, yr):.3f}, fit {rfit:.0f} s. "
        "The encode column times sampling + patch encoding + repetition of the 1,000 test "
        "videos; the stand-in encoder is nearly free, so only the frame count matters.",
    )
    report.write()

    # E2: aligner ablation on 1-s videos
    X1, y1 = make_rotating_dot_videos(n_train, duration_s=1, random_state=SEED)
    e2 = {}
    for aligner in ("multiframe", "meanpool"):
        clf = model(aligner=aligner)
        fit_s, clf = timed_fit(clf, X1, y1, repeat=1)
        e2[aligner] = (clf.score(X1t, y1t), clf.score(X1, y1), fit_s)
        print(f"E2 {aligner}: {e2[aligner][0]:.3f}", flush=True)
    mf, mp = e2["multiframe"][0], e2["meanpool"][0]
    report.add_table(
        "E2: aligner ablation (1-s videos, 16 FPS)",
        ["aligner", "target (test acc.)", "measured", "in target", "train acc.", "fit s",
         "prototype"],
        [
            ["multiframe", ">= 0.63 and >= meanpool + 0.10", round(mf, 3),
             "met" if mf >= 0.63 and mf >= mp + 0.10 else "MISSED", round(e2["multiframe"][1], 3),
             round(e2["multiframe"][2], 1), "0.709 (train 0.998, 38 s)"],
            ["meanpool", "0.45 - 0.55 (Bayes 0.5)", round(mp, 3), Target(0.45, 0.55).check(mp),
             round(e2["meanpool"][1], 3), round(e2["meanpool"][2], 1),
             "0.481 (train 0.504, 45 s)"],
        ],
    )
    report.write()

    # peers on the E1 data
    peers = []
    single = model(fps=1, aligner="single")
    s_fit, single = timed_fit(single, X, y, repeat=1)
    peers.append(["F16VideoClassifier aligner='single' @ 1 FPS", single.score(Xt, yt),
                  single.score(X, y), s_fit, single.n_tokens_per_clip_, single.n_params_])
    meanpool = model(aligner="meanpool")
    m_fit, meanpool = timed_fit(meanpool, X, y, repeat=1)
    peers.append(["F16VideoClassifier aligner='meanpool' @ 16 FPS", meanpool.score(Xt, yt),
                  meanpool.score(X, y), m_fit, meanpool.n_tokens_per_clip_,
                  meanpool.n_params_])
    mf_clf = e1[16]["clf"]
    peers.insert(0, ["F16VideoClassifier aligner='multiframe' @ 16 FPS (E1)", e1[16]["test"],
                     e1[16]["train"], e1[16]["fit_s"], mf_clf.n_tokens_per_clip_,
                     mf_clf.n_params_])
    pred, c_train, c_fit = conv3d_fit_predict(X, y, Xt, epochs=max(epochs // 2, 2))
    peers.append(["Conv3d, 2 layers (torch, AdamW) @ 16 FPS", float(np.mean(pred == yt)),
                  c_train, c_fit, "-", sum(p.numel() for p in Conv3dNet().parameters())])
    def fit_lr():
        feats = angular_moment_features(X)
        return feats, make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(
            feats, y
        )

    lr_fit, (feats, lr) = median_time(fit_lr, repeat=1, warmup=0)
    peers.append(["angular moment of frame differences + LogisticRegression @ 16 FPS",
                  lr.score(angular_moment_features(Xt), yt), lr.score(feats, y), lr_fit, "-",
                  6 + 1])
    feats4 = angular_moment_features(X[:, ::4])
    lr4 = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(feats4, y)
    peers.append(["same features + LogisticRegression @ 4 FPS",
                  lr4.score(angular_moment_features(Xt[:, ::4]), yt), lr4.score(feats4, y),
                  float("nan"), "-", 7])
    base = m_fit
    rows = [[name, round(float(acc), 3), round(float(tr), 3), round(float(fit), 1),
             round(float(fit) / base, 2) if fit == fit else "", tok, n]
            for name, acc, tr, fit, tok, n in peers]
    pred_mf, _ = median_time(lambda: mf_clf.predict(Xt), repeat=3)
    pred_mp, _ = median_time(lambda: meanpool.predict(Xt), repeat=3)
    report.add_table(
        "Peers on the E1 data (direction task, 2 s videos)",
        ["method", "test acc.", "train acc.", "fit s", "fit time / meanpool", "tokens per s",
         "parameters"],
        rows,
        note=(
            "Tokens per second of video reach the sequence model after pooling. Without the "
            "aligner, 16 FPS of per-frame pooled tokens would be "
            f"{16 * mf_clf.n_tokens_per_clip_} tokens per second (16x more); the multi-frame "
            "aligner keeps the 1-FPS budget. Predict time on the test set: multiframe "
            f"{pred_mf:.2f} s, meanpool {pred_mp:.2f} s (ratio {pred_mf / pred_mp:.2f}). "
            "Conv3d trains for half the epochs of the transformer models."
        ),
    )
    report.write()

    # figure
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5.5, 3.6))
        rates = np.array([1, 2, 4, 8, 16])
        ax.step(rates, [direction_bayes_accuracy(r) for r in rates], where="post", color="k",
                lw=1, label="Bayes limit")
        ax.plot([16, 4, 1], [e1[r]["test"] for r in (16, 4, 1)], "o-", label="trained at fps")
        ax.plot(list(e3a), list(e3a.values()), "s--", label="16-FPS model, lower inference fps")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("frames per second")
        ax.set_ylabel("test accuracy")
        ax.set_ylim(0.4, 1.02)
        ax.legend(fontsize=8)
        ax.set_title("Rotation direction: accuracy against frame rate")
        fig.tight_layout()
        png = RESULTS / f"f16_high_frame_rate_video{'.quick' if quick else ''}.png"
        fig.savefig(png, dpi=120)
        print(f"figure: {png}")
    except ImportError:
        pass

    # long variant
    if skip_long:
        report.add("Long variant", "Not run in this process (--skip-long).")
        report.write()
    else:
        run_long(report, model, n_long, Xt, yt, X1t, y1t)


def run_long(report, model, n_long, Xt, yt, X1t, y1t):
    """The long variant: E1 at 16 FPS (and E3a on it), then E2 multiframe, more videos."""
    XL, yL = make_rotating_dot_videos(n_long, duration_s=2, random_state=SEED + 10)
    long_clf = model()
    l_fit, long_clf = timed_fit(long_clf, XL, yL, repeat=1)
    l16 = long_clf.score(Xt, yt)
    print(f"long E1 16 FPS: {l16:.3f} ({l_fit:.0f} s)", flush=True)
    rows = [
        ["E1 16 FPS", ">= 0.93", round(l16, 3), Target(0.93).check(l16),
         round(long_clf.score(XL, yL), 3), round(l_fit, 1), "0.957 (train 1.000, 447 s)"],
    ]
    for r in (8, 4, 2, 1):
        a = long_clf.score(Xt, yt, inference_fps=r)
        limit = direction_bayes_accuracy(r) + 0.04
        rows.append([f"E3a 16-FPS model read at {r} FPS", f"0.45 - {limit:.2f}", round(a, 3),
                     Target(0.45, limit).check(a), "", "", {8: 0.548, 4: 0.476, 2: 0.498, 1: 0.501}[r]])
    del XL, yL
    headers = ["experiment", "target", "measured", "in target", "train acc.", "fit s",
               "prototype"]
    heading = f"Long variant: {n_long} training videos (same test sets)"
    note = (
        "The 4-FPS model of the long variant (target 0.52 - 0.64, prototype 0.554) is not "
        "trained here, to keep the run within its time budget; its Bayes limit is the same "
        "0.6 as with 2,000 videos."
    )
    report.add_table(heading + ", E1 part", headers, rows, note=note)
    report.write()
    XL1, yL1 = make_rotating_dot_videos(n_long, duration_s=1, random_state=SEED + 10)
    long_e2 = model()
    l2_fit, long_e2 = timed_fit(long_e2, XL1, yL1, repeat=1)
    l2 = long_e2.score(X1t, y1t)
    print(f"long E2 multiframe: {l2:.3f} ({l2_fit:.0f} s)", flush=True)
    report.add_table(
        heading + ", E2 part",
        headers,
        [["E2 multiframe (1-s videos)", ">= 0.92", round(l2, 3), Target(0.92).check(l2),
          round(long_e2.score(XL1, yL1), 3), round(l2_fit, 1), "0.949 (train 1.000, 121 s)"]],
    )
    report.write()


if __name__ == "__main__":
    main()
