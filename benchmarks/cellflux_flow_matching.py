"""CellFlux (Zhang et al., ICML 2025): experiments E1-E3 of the method with the peers side by side.

Run: python benchmarks/cellflux_flow_matching.py [--quick] [--only E1,E2,E3] [--full-epochs]

Without options it runs E1-E3 at the scaled-down sizes (E1 10 epochs, E2 6 epochs with
noise_level=0) and rewrites ``benchmarks/results/cellflux_flow_matching.md``.
``--full-epochs`` uses the epochs of the reference calibration prototypes instead: E1 50 epochs;
E2 12 epochs for the noise_level=0 run, plus the defaults run (noise_level 1.0, noise_prob 0.5,
skewed time, CFG off) at 40 epochs. ``--only`` runs a subset. A run with either option
APPENDS a labelled section to the results file (the earlier tables are kept) instead of
rewriting it; ``--quick`` still writes the git-ignored ``.quick.md``.

E1  1-D batch effects: two batches (offsets -2, +2), perturbation "A" shifts by 1.5.
    CellFlux with noise_level 0 and 0.5 (standardised units, noise_prob 0.5), the
    intermediate raw-units setting, and the noise-to-data ablation; transport 4000 fresh
    controls of batch +2 and compare mean / std / fraction > 1 with the exact-field targets.
E2  8-D Gaussians: perturbation k shifts coordinate k by 3 and scales it by 0.5; mean
    error, std of coordinate k and of the others, Frechet distance ratio.
E3  digits "virtual screen": three batches with intensity offsets 0/+2/+4, perturbations
    shift-right, shift-down, dilation; MoA (perturbation) and batch accuracy of logistic
    classifiers on generated images, and a Frechet distance on raw pixels.
Peers in the same run, on the same data: the noise-to-data flow (``source="noise"``), the
per-batch mean shift, and the linear Gaussian OT map per perturbation (closed form with
scipy; POT's ``LinearTransport`` computes the same map). torchcfm and Meta's flow_matching
are not used (the issue forbids torchcfm); the minibatch-OT coupling variant is not run.
"""

import argparse
import datetime
import sys

import numpy as np
import torch
from _harness import (
    RESULTS,
    Report,
    machine_info,
    median_time,
    package_version,
    parse_args,
    timed_fit,
)
from scipy import linalg
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_icml.datasets import (
    make_batch_shift_1d,
    make_digits_screen,
    make_gaussian_perturbations,
)
from sklearn_icml.generative import CellFlux
from sklearn_icml.generative._flow import frechet_distance

torch.set_num_threads(1)


# ---------------------------------------------------------------- simple peers


def mean_shift(X_query, X_ctrl, X_treat):
    """x + (mean treated - mean control), statistics of the query's own batch."""
    return X_query + (X_treat.mean(axis=0) - X_ctrl.mean(axis=0))


def linear_gaussian_ot(X_query, X_ctrl, X_treat, reg=1e-6):
    """Monge map between the Gaussians fitted to controls and treated (pooled over batches)."""
    mc, mt = X_ctrl.mean(axis=0), X_treat.mean(axis=0)
    sc = np.atleast_2d(np.cov(X_ctrl, rowvar=False)) + reg * np.eye(X_ctrl.shape[1])
    st = np.atleast_2d(np.cov(X_treat, rowvar=False)) + reg * np.eye(X_ctrl.shape[1])
    sc_half = np.real(linalg.sqrtm(sc))
    sc_inv_half = np.linalg.inv(sc_half)
    A = sc_inv_half @ np.real(linalg.sqrtm(sc_half @ st @ sc_half)) @ sc_inv_half
    return mt + (X_query - mc) @ A.T


# ---------------------------------------------------------------- E1


def run_e1(report, quick, full_epochs=False):
    n = 1000 if quick else 4000
    epochs = 3 if quick else (50 if full_epochs else 10)
    X, y, b = make_batch_shift_1d(n, random_state=0)
    query = np.random.default_rng(1).normal(2.0, 0.5, (4000, 1))
    base = dict(cfg_scale=0.0, cond_drop_prob=0.0, time_sampler="uniform", hidden_layer_sizes=(64, 64),
                max_epochs=epochs, random_state=0)
    runs = [
        ("CellFlux noise_level=0", dict(noise_level=0.0), (3.49, 0.10), (0.50, 0.06),
         (">= 0.97", lambda f: f >= 0.97)),
        ("CellFlux noise_level=0.5 (std units, noise_prob 0.5)", dict(noise_level=0.5),
         (3.39, 0.10), (0.90, 0.08), ("0.95 +- 0.02", lambda f: abs(f - 0.95) <= 0.02)),
        ("CellFlux noise_level=0.5, standardize=False (raw units)",
         dict(noise_level=0.5, standardize=False), (3.48, 0.10), (0.59, 0.08),
         ("0.999 (exact field)", lambda f: f >= 0.97)),
        ("noise-to-data flow (source='noise')", dict(noise_level=0.0, source="noise"),
         None, None, ("0.50 +- 0.05", lambda f: abs(f - 0.5) <= 0.05)),
    ]
    CellFlux(**{**base, "max_epochs": 1}).fit(X[::20], y[::20], batch=b[::20])  # warm-up
    rows, times = [], {}
    for name, params, mean_t, std_t, frac_t in runs:
        fit_s, model = timed_fit(CellFlux(**base, **params), X, y, batch=b, repeat=1)
        repeat = 3 if not times else 1  # median of 3 for the first model, 1 call for the others
        sample_s, out = median_time(lambda m=model: m.predict(query, perturbation="A"), repeat=repeat,
                                    warmup=0)
        times[name] = (fit_s, sample_s)
        m, s, f = float(out.mean()), float(out.std()), float(np.mean(out > 1))
        rows.append([
            name,
            f"{mean_t[0]} +- {mean_t[1]}" if mean_t else "-", m,
            "ok" if mean_t and abs(m - mean_t[0]) <= mean_t[1] else ("-" if not mean_t else "MISS"),
            f"{std_t[0]} +- {std_t[1]}" if std_t else "-", s,
            "ok" if std_t and abs(s - std_t[0]) <= std_t[1] else ("-" if not std_t else "MISS"),
            frac_t[0], f, "ok" if frac_t[1](f) else "MISS",
        ])
    ctrl, treat = X[(y == "control") & (b == 2.0)], X[(y == "A") & (b == 2.0)]
    ms = mean_shift(query, ctrl, treat)
    ot = linear_gaussian_ot(query, X[y == "control"], X[y == "A"])
    for name, out in [("peer: per-batch mean shift", ms),
                      ("peer: linear Gaussian OT (pooled batches)", ot)]:
        rows.append([name, "-", float(out.mean()), "-", "-", float(out.std()), "-", "-",
                     float(np.mean(out > 1)), "-"])
    report.add_table(
        "E1: batch effects in 1-D (transport 4000 controls of batch +2)",
        ["method", "target mean", "mean", "", "target std", "std", "", "target frac > 1",
         "frac > 1", ""],
        rows,
        note=(f"{n} controls and {n} treated per batch; MLP (64, 64) with FiLM, batch 32, AdamW "
              f"lr 1e-4, EMA, uniform time, Heun on the 51-point EDM grid, **{epochs} epochs** "
              f"({epochs * 2 * n // 32} steps; the reference calibration used 50 epochs"
              f"{'' if epochs == 50 else ', scaled down for the shared machine'}). Targets: the calibrated exact-field values; the "
              "raw-units row's targets are the exact field's 3.48 / 0.59 / 0.999 (the paper gives "
              "no tolerance; +-0.10 / +-0.08 / >= 0.97 used here)."),
    )
    return times


# ---------------------------------------------------------------- E2


def run_e2(report, quick, full_epochs=False):
    """E2; ``full_epochs`` adds the defaults run (noise_level 1.0) at the calibration's 40."""
    n = 600 if quick else 3000
    epochs = 2 if quick else (12 if full_epochs else 6)
    X, y = make_gaussian_perturbations(n, random_state=0)
    Xc = X[y == "control"]
    query = np.random.default_rng(2).normal(size=(n, 8))
    fit_s, model = timed_fit(
        CellFlux(noise_level=0.0, cfg_scale=0.0, cond_drop_prob=0.0, max_epochs=epochs,
                 random_state=0), X, y, repeat=1)
    print(f"E2 noise_level=0: {epochs} epochs fitted in {fit_s:.0f} s", flush=True)
    methods = {f"CellFlux (noise_level=0, {epochs} ep.)":
               lambda k: model.predict(query, perturbation=f"P{k}")}
    extra_note = ""
    if full_epochs:
        epochs_def = 4 if quick else 40
        fit_def_s, model_def = timed_fit(
            CellFlux(cfg_scale=0.0, cond_drop_prob=0.0, max_epochs=epochs_def, random_state=0),
            X, y, repeat=1)
        print(f"E2 defaults: {epochs_def} epochs fitted in {fit_def_s:.0f} s", flush=True)
        methods[f"CellFlux defaults (noise_level=1.0, {epochs_def} ep.)"] = (
            lambda k: model_def.predict(query, perturbation=f"P{k}"))
        extra_note = (f" Defaults run: noise_level 1.0, noise_prob 0.5, skewed time, CFG off "
                      f"(cfg_scale 0, cond_drop_prob 0), **{epochs_def} epochs** "
                      f"({model_def.n_updates_} steps; the reference prototype used 40), fit "
                      f"{fit_def_s:.0f} s.")
    methods |= {"peer: mean shift": lambda k: mean_shift(query, Xc, X[y == f"P{k}"]),
               "peer: linear Gaussian OT": lambda k: linear_gaussian_ot(query, Xc, X[y == f"P{k}"]),
               "identity (controls)": lambda k: query}
    rows = []
    sample_s, _ = median_time(lambda: model.predict(query, perturbation="P0"), repeat=3, warmup=0)
    for name, fn in methods.items():
        for k in range(3):
            out = fn(k)
            real = X[y == f"P{k}"]
            target_mean = np.zeros(8)
            target_mean[k] = 3.0
            err = float(np.linalg.norm(out.mean(axis=0) - target_mean))
            std = out.std(axis=0)
            others = np.delete(std, k)
            fd = frechet_distance(out, real)
            fd_ctrl = frechet_distance(query, real)
            rows.append([
                name, f"P{k}", "<= 0.15", err, "ok" if err <= 0.15 else "MISS",
                "<= 0.70 (old 0.5 +- 0.07)", float(std[k]), "ok" if std[k] <= 0.70 else "MISS",
                "[0.95, 1.30] (old 1.0 +- 0.07)", f"{others.min():.3f}-{others.max():.3f}",
                "ok" if others.min() >= 0.95 and others.max() <= 1.30 else "MISS",
                "<= 0.1", fd / fd_ctrl, "ok" if fd <= 0.1 * fd_ctrl else "MISS",
            ])
    report.add_table(
        "E2: 8-D Gaussian transport, CFG off",
        ["method", "pert.", "target mean err", "mean err", "", "target std_k", "std_k", "",
         "target other stds", "other stds", "", "target FD ratio", "FD / FD(controls)", ""],
        rows,
        note=(f"{n} rows per class; MLP (256, 256, 256) FiLM, batch 32, AdamW lr 1e-4, EMA, "
              f"skewed time, noise_level=0 (as calibrated), Heun/EDM 51 points, "
              f"**{epochs} epochs** ({model.n_updates_} steps; the reference prototype used 12). "
              f"FD(controls, treated) is about 9.25 in closed form. CellFlux fit {fit_s:.0f} s, "
              f"sampling {n} rows {sample_s:.2f} s (median of 3).{extra_note}"),
    )
    return fit_s, sample_s


# ---------------------------------------------------------------- E3


def run_e3(report, quick, full_epochs=False):
    epochs = 10 if quick else 60
    X, y, b, _ = make_digits_screen(random_state=0)
    rng = np.random.default_rng(0)
    train = rng.random(len(y)) < 0.6
    test_ctrl = ~train & (y == "control")
    perts = ["P1", "P2", "P3"]
    moa = make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000))
    moa.fit(X[train & (y != "control")], y[train & (y != "control")])
    moa_real = moa.score(X[~train & (y != "control")], y[~train & (y != "control")])
    batch_clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000))
    batch_clf.fit(X[train], b[train])
    params = dict(learning_rate=5e-4, max_epochs=epochs, random_state=0)
    fit_s, cellflux = timed_fit(CellFlux(**params), X[train], y[train], batch=b[train], repeat=1)
    _, low_noise = timed_fit(CellFlux(noise_level=0.2, **params), X[train], y[train],
                             batch=b[train], repeat=1)
    fit_noise_s, noise = timed_fit(CellFlux(source="noise", **params), X[train], y[train],
                                   batch=b[train], repeat=1)
    Xq, bq = X[test_ctrl], b[test_ctrl]

    def per_batch_mean_shift(p):
        out = np.empty_like(Xq)
        for bb in np.unique(bq):
            ctrl = X[train & (y == "control") & (b == bb)]
            treat = X[train & (y == p) & (b == bb)]
            out[bq == bb] = mean_shift(Xq[bq == bb], ctrl, treat)
        return out

    methods = {
        "CellFlux": lambda p: cellflux.predict(Xq, perturbation=p),
        "CellFlux noise_level=0.2": lambda p: low_noise.predict(Xq, perturbation=p),
        "noise-to-data flow": lambda p: noise.predict(Xq, perturbation=p),
        "peer: per-batch mean shift": per_batch_mean_shift,
        "peer: linear Gaussian OT (pooled)": lambda p: linear_gaussian_ot(
            Xq, X[train & (y == "control")], X[train & (y == p)], reg=1e-2),
        "identity (controls)": lambda p: Xq,
    }
    rows, generated = [], {}
    for name, fn in methods.items():
        outs = {p: fn(p) for p in perts}
        generated[name] = outs
        gen_all = np.concatenate([outs[p] for p in perts])
        labels = np.repeat(perts, len(Xq))
        moa_acc = float(np.mean(moa.predict(gen_all) == labels))
        batch_acc = float(np.mean(batch_clf.predict(gen_all) == np.tile(bq, 3)))
        fds = [frechet_distance(outs[p], X[~train & (y == p)]) for p in perts]
        rows.append([name, moa_acc, batch_acc, float(np.mean(fds))])
    ok = {r[0]: r for r in rows}
    cf, nb = ok["CellFlux"], ok["noise-to-data flow"]
    table_rows = [
        ["MoA accuracy on CellFlux images", "about 0.9, accept >= 0.85", cf[1],
         "ok" if cf[1] >= 0.85 else "MISS"],
        ["MoA accuracy on real held-out treated", ">= 0.97 (typical)", moa_real,
         "ok" if moa_real >= 0.97 else "MISS"],
        ["batch accuracy on CellFlux images", ">= 0.9", cf[2], "ok" if cf[2] >= 0.9 else "MISS"],
        ["batch accuracy, CellFlux noise_level=0.2 (ablation)", ">= 0.9",
         ok["CellFlux noise_level=0.2"][2],
         "ok" if ok["CellFlux noise_level=0.2"][2] >= 0.9 else "MISS"],
        ["batch accuracy, noise-to-data baseline", "0.33 +- 0.1", nb[2],
         "ok" if abs(nb[2] - 0.33) <= 0.1 else "MISS"],
        ["Frechet distance (raw pixels), CellFlux < noise-to-data", "lower", cf[3],
         "ok" if cf[3] < nb[3] else "MISS"],
    ]
    report.add_table(
        "E3: digits virtual screen (targets)",
        ["quantity", "target", "measured", ""], table_rows,
        note=(f"load_digits split 60/40; CellFlux defaults (noise_level 1.0, noise_prob 0.5, "
              f"cfg_scale 0.2, cond_drop_prob 0.2, skewed time, MLP (256,256,256), Heun/EDM) "
              f"except lr 5e-4 and **{epochs} epochs** ({cellflux.n_updates_} steps). "
              f"{len(Xq)} held-out controls transported to each perturbation. Fit: CellFlux "
              f"{fit_s:.0f} s, noise-to-data {fit_noise_s:.0f} s."),
    )
    report.add_table(
        "E3: all methods side by side",
        ["method", "MoA acc. (generated)", "batch acc. (generated)",
         "mean Frechet distance to real treated (64 px)"],
        rows,
        note="Frechet distance on raw pixels (no Inception network on CPU), mean over P1-P3.",
    )
    return fit_s


NOTES = """\
- Sizes were scaled down for a 2-core machine shared by ~8 sessions (load average ~16): E1
  runs 10 epochs instead of the calibration's 50, E2 6 epochs instead of 12 (noise_level=0 run)
  or 40 (defaults), E3 60 epochs. Each fit is one seed; no result was tuned towards a target.
- E1 targets are the calibrated exact-field values (noise in standardised units,
  noise_prob 0.5), not the older 3.50 / 0.52 / >= 0.97 ones.
- E2 uses noise_level=0 as the calibration advises; its std bands are the
  calibrated ones (old bands shown in brackets as the stretch goal).
- E3 has no prescribed noise level or learning rate: the paper defaults (noise_level 1.0,
  noise_prob 0.5, cfg_scale 0.2, cond_drop_prob 0.2) with lr 5e-4 (1e-4 is too slow for the
  few hundred steps affordable here). The noise_level=0.2 row is an ablation: at sampling
  the source noise is always added, and in standardised pixel units 1.0 is large next to
  the batch offsets. It was added after a first full run showed the
  default's batch-accuracy miss (0.674 there too); it is shown next to the default, not
  instead of it.
- Fit times are single runs (a fit is too long to repeat here) on a machine whose load
  varied during the run: treat their ratios as rough."""


EXPERIMENTS = ("E1", "E2", "E3")


def parse_cli(argv=None):
    """``_harness.parse_args`` (``--quick``), plus ``--only`` and ``--full-epochs``."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument(
        "--only", default=",".join(EXPERIMENTS),
        help="comma-separated experiments to run, from E1,E2,E3 (default: all)",
    )
    parser.add_argument(
        "--full-epochs", action="store_true",
        help="the calibrated epochs (E1 50; E2 12 with noise_level=0, plus the defaults "
             "run at 40) instead of the scaled-down ones; E3 is unchanged",
    )
    own, rest = parser.parse_known_args(argv)
    args = parse_args(__doc__.splitlines()[0], rest)
    args.only, args.full_epochs = own.only, own.full_epochs
    only = [e.strip().upper() for e in args.only.split(",") if e.strip()]
    bad = [e for e in only if e not in EXPERIMENTS]
    if bad or not only:
        parser.error(f"--only takes a comma-separated subset of {','.join(EXPERIMENTS)}. "
                     f"Got {args.only!r} instead.")
    args.only = [e for e in EXPERIMENTS if e in only]
    return args


def append_report(report, args, argv_text):
    """Append the report's sections to the results file under one labelled heading."""
    path = RESULTS / "cellflux_flow_matching.md"
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    body = report.sections[4:]  # drop the title and machine lines
    body = ["#" + line if line.startswith("## ") else line for line in body]
    head = [
        "",
        f"## Re-run appended {stamp}: `{argv_text}`",
        "",
        f"Machine: {machine_info(('numpy', 'scipy', 'scikit-learn', 'torch'))}",
        "",
        f"Experiments: {', '.join(args.only)}; epochs: "
        + ("the calibrated ones (E1 50; E2 12 for noise_level=0, 40 for the defaults "
           "run)" if args.full_epochs else "the scaled-down ones (E1 10; E2 6)")
        + ". For the experiments it covers, this section supersedes the tables above; "
        "the tables above are kept as they were.",
        "",
    ]
    text = path.read_text() if path.exists() else ""
    path.write_text(text.rstrip("\n") + "\n" + "\n".join(head + body))
    print(f"\nappended to {path}")
    return path


def main(argv=None):
    args = parse_cli(argv)
    argv_text = " ".join(["python benchmarks/cellflux_flow_matching.py",
                          *(sys.argv[1:] if argv is None else argv)])
    partial = args.full_epochs or args.only != list(EXPERIMENTS)
    report = Report("cellflux_flow_matching", "CellFlux flow matching (ICML 2025): benchmarks",
                    quick=args.quick, packages=("numpy", "scipy", "scikit-learn", "torch"))
    if not partial:
        report.add("Peers", "torchcfm: not used (forbidden by the issue: it drags a CUDA torch "
                   f"in). flow_matching (Meta): {package_version('flow_matching')}; POT: "
                   f"{package_version('pot')} (the linear Gaussian OT map is computed in closed "
                   "form with scipy instead). PhenDiff / IMPA (the paper's baselines) need the "
                   "96x96 image datasets and GPUs: not run.")
    # E2 first when it is run alone or at full epochs: the cheaper experiment lands first.
    if "E2" in args.only and partial:
        run_e2(report, args.quick, args.full_epochs)
    if "E1" in args.only:
        e1_times = run_e1(report, args.quick, args.full_epochs)
        fit0 = e1_times["CellFlux noise_level=0"][0]
        report.add_table(
            "E1 times (single fit each; sampling 4000 rows x 50 Heun steps: median of 3 calls "
            "for the first row, one call for the others)",
            ["method", "fit s", "fit / CellFlux(noise 0)", "sample s"],
            [[k, v[0], v[0] / fit0, v[1]] for k, v in e1_times.items()],
        )
    if "E2" in args.only and not partial:
        run_e2(report, args.quick, args.full_epochs)
    if "E3" in args.only:
        run_e3(report, args.quick, args.full_epochs)
    if not partial:
        report.add("Notes", NOTES)
    if partial and not args.quick:
        append_report(report, args, argv_text)
    else:
        report.write()


if __name__ == "__main__":
    main()
