"""Data weighting model (DWM; Yu et al., ICML 2025): experiments E1-E3 and peers.

Run: python benchmarks/data_weighting_model.py [--quick] [--only E1,E2,E3]
     python benchmarks/data_weighting_model.py --e3-append --e3-steps 3000 --e3-dwm-steps 100
         --e3-methods uniform,dwm,dwm_online   (E3 alone at another schedule, appended)

E1  mixed-source linear regression: sources A (target), B (noisy), C (opposite signal),
    D (no signal), validation/test from A; test MSE against uniform training and the
    weight share of each source in the last stage.
E2  digits with 40 % symmetric label noise, 100 clean validation rows: test accuracy
    against uniform training and the ROC-AUC of the last stage's weights for separating
    clean from corrupted rows.
E3  tiny GRU language model on a pool of two Markov languages (30 % A, 70 % B),
    validation from A: validation NLL per token and the share of A per stage.
Peers in the same run, on the same data and learner: uniform training (the same skorch
learner with no DWM update), Learning-to-Reweight (Ren et al. 2018: per-batch weights
max(0, -dL_val/dw) at w = 0) and Meta-Weight-Net (Shu et al. 2019: an MLP 1-100-1 with a
sigmoid on the loss value, updated online every step), both written below in a plain torch
loop on top of ``one_step_hypergradient``, plus uniform training in that same loop (the
reference of their time per step). Times per training step are medians over the seeds.
"""

import argparse
import statistics
import sys
import time

import numpy as np
import torch
from _harness import RESULTS, Report, fmt, machine_info, package_version, parse_args
from joblib import Parallel, delayed
from sklearn.datasets import load_digits
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split

from sklearn_icml.datasets import make_markov_languages, make_mixed_source_regression
from sklearn_icml.datasets._weighting import corrupt_labels
from sklearn_icml.weighting import (
    CharGRUModule,
    DWMCharLM,
    DWMClassifier,
    DWMRegressor,
    one_step_hypergradient,
)
from sklearn_icml.weighting._bilevel import cross_entropy, sequence_nll, squared_error

torch.set_num_threads(1)
N_JOBS = 2  # the seeds run in 2 worker processes (the machine is shared)


# ---------------------------------------------------------------- peers (plain torch loop)


def peer_train(kind, module, loss_fn, X, y, X_val, y_val, *, lr, steps, batch_size, seed,
               loss_feature="raw", last_fraction=0.2, optimizer="sgd",
               clock=time.perf_counter, mode="exact"):
    """Train ``module`` with uniform, L2RW or MWN weights; return (s/step, weight sums, counts).

    Weight sums and counts cover the last ``last_fraction`` of the steps (the analogue of the
    DWM's last stage). The learner's optimiser is SGD or Adam with ``lr``; the meta step
    (the hypergradient) is always the SGD look-ahead with ``lr``, as in the DWM, computed
    as ``mode`` says (:func:`one_step_hypergradient`).
    """
    gen = torch.Generator().manual_seed(seed)
    n = X.shape[0]
    opt_class = torch.optim.Adam if optimizer == "adam" else torch.optim.SGD
    opt = opt_class(module.parameters(), lr=lr)
    if kind == "mwn":
        torch.manual_seed(seed)
        vnet = torch.nn.Sequential(torch.nn.Linear(1, 100), torch.nn.ReLU(),
                                   torch.nn.Linear(100, 1), torch.nn.Sigmoid())
        vopt = torch.optim.Adam(vnet.parameters(), lr=1e-3, weight_decay=1e-4)

        def mwn_weights(losses):
            feat = torch.log1p(losses) if loss_feature == "log1p" else losses
            v = vnet(feat.unsqueeze(1)).squeeze(1)
            return v.shape[0] * v / v.sum()

    sums, counts = np.zeros(n), np.zeros(n)
    first_logged = int(steps * (1 - last_fraction))
    buffer = torch.empty(0, dtype=torch.long)
    start = clock()
    for t in range(steps):
        while buffer.shape[0] < batch_size:
            buffer = torch.cat([buffer, torch.randperm(n, generator=gen)])
        idx, buffer = buffer[:batch_size], buffer[batch_size:]
        xb, yb = X[idx], y[idx]
        b = idx.shape[0]
        if kind == "uniform":
            w = torch.ones(b)
        elif kind == "l2rw":
            g = one_step_hypergradient(module, loss_fn, (xb, yb), (X_val, y_val),
                                       torch.zeros(b), lr, mode=mode)
            w = torch.clamp(-g, min=0)
            total = w.sum()
            w = w * b / total if total > 0 else w
        else:  # mwn
            with torch.no_grad():
                losses = loss_fn(module(xb), yb)
            w = mwn_weights(losses)
            g = one_step_hypergradient(module, loss_fn, (xb, yb), (X_val, y_val),
                                       w.detach(), lr, mode=mode)
            vopt.zero_grad()
            w.backward(g)
            vopt.step()
            with torch.no_grad():
                w = mwn_weights(losses)
        opt.zero_grad()
        loss = (w.detach() * loss_fn(module(xb), yb)).mean()
        loss.backward()
        opt.step()
        if t >= first_logged:
            np.add.at(sums, idx.numpy(), w.detach().double().numpy())
            np.add.at(counts, idx.numpy(), 1)
    return (clock() - start) / steps, sums, counts


def warm_up():
    """One torch thread; import what the first optimizer imports (seconds), before timing."""
    torch.set_num_threads(1)
    torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)


def fit_timed(estimator, *args, **kwargs):
    start = time.perf_counter()
    estimator.fit(*args, **kwargs)
    return estimator, (time.perf_counter() - start) / estimator.n_iter_


def group_shares(sums, groups, n_groups):
    total = sums.sum()
    return np.array([sums[groups == g].sum() / total for g in range(n_groups)])


def median(values):
    values = [v for v in values if v == v]
    return statistics.median(values) if values else float("nan")


# ---------------------------------------------------------------- E1


def run_e1(seed, cfg, with_raw):
    warm_up()
    rows, peers = [], {k: [] for k in ("uniform", "dwm", "dwm_raw", "uniform_loop", "l2rw",
                                       "mwn")}
    data = make_mixed_source_regression(n_per_source=cfg["n_per_source"], random_state=seed)
    common = {"hidden_layer_sizes": (), "learning_rate": 0.05, "max_iter": cfg["steps"],
              "n_stages": cfg["stages"], "batch_size": 64, "random_state": seed}
    fit_args = (data.X, data.y, data.X_val, data.y_val)
    fit_kw = {"sample_features": data.source_onehot}
    results = {}
    est, t = fit_timed(DWMRegressor(**common, dwm_steps_per_stage=0), *fit_args, **fit_kw)
    results["uniform"] = (est, t)
    est, t = fit_timed(DWMRegressor(**common, dwm_steps_per_stage=cfg["dwm_steps"]),
                       *fit_args, **fit_kw)
    results["dwm"] = (est, t)
    if with_raw:
        est, t = fit_timed(DWMRegressor(**common, dwm_steps_per_stage=cfg["dwm_steps"],
                                        loss_feature="raw"), *fit_args, **fit_kw)
        results["dwm_raw"] = (est, t)
    mse = {k: float(np.mean((e.predict(data.X_test) - data.y_test) ** 2))
           for k, (e, _) in results.items()}
    for k, (e, t) in results.items():
        share = e.stage_weight_stats_[-1]["weight_share"]
        peers[k].append({"mse": mse[k], "ratio": mse[k] / mse["uniform"], "A": share[0],
                         "C": share[2], "t": t})
    # peers in a plain torch loop, same standardisation as the estimators
    mean, scale = data.X.mean(0), data.X.std(0)
    Xt = torch.as_tensor((data.X - mean) / scale, dtype=torch.float32)
    yt = torch.as_tensor(data.y, dtype=torch.float32)
    Xv = torch.as_tensor((data.X_val - mean) / scale, dtype=torch.float32)
    yv = torch.as_tensor(data.y_val, dtype=torch.float32)
    Xte = torch.as_tensor((data.X_test - mean) / scale, dtype=torch.float32)
    for kind in ("uniform", "l2rw", "mwn"):
        torch.manual_seed(seed)
        module = torch.nn.Linear(data.X.shape[1], 1)
        t, sums, _ = peer_train(kind, module, squared_error, Xt, yt, Xv, yv, lr=0.05,
                                steps=cfg["steps"], batch_size=64, seed=seed,
                                loss_feature="log1p")
        with torch.no_grad():
            m = float(((module(Xte).squeeze(1) - torch.as_tensor(data.y_test)) ** 2).mean())
        share = group_shares(sums, data.source, 4)
        key = "uniform_loop" if kind == "uniform" else kind
        peers[key].append({"mse": m, "ratio": m / mse["uniform"], "A": share[0],
                           "C": share[2], "t": t})
    dwm = results["dwm"][0].stage_weight_stats_[-1]["weight_share"]
    ratio = mse["dwm"] / mse["uniform"]
    rows.append([seed, float(data.coef @ data.coef), mse["uniform"], mse["dwm"],
                 "<= 0.05", ratio, ">= 0.45", dwm[0], "<= 0.10", dwm[2], dwm[1], dwm[3],
                 ratio <= 0.05 and dwm[0] >= 0.45 and dwm[2] <= 0.10])
    print(f"E1 seed {seed}: ratio {ratio:.4f} shares {np.round(dwm, 3)}", flush=True)
    return "E1", rows, peers


# ---------------------------------------------------------------- E2


def digits_split(seed):
    X, y = load_digits(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, stratify=y,
                                              random_state=seed)
    rng = np.random.default_rng(seed)
    val = np.concatenate([rng.choice(np.flatnonzero(y_tr == c), 10, replace=False)
                          for c in range(10)])
    pool = np.setdiff1d(np.arange(len(y_tr)), val)
    y_noisy, corrupted = corrupt_labels(y_tr[pool], 0.4, random_state=seed)
    return X_tr[pool], y_noisy, corrupted, X_tr[val], y_tr[val], X_te, y_te


def run_e2(seed, cfg):
    warm_up()
    rows, peers = [], {k: [] for k in ("uniform", "dwm", "uniform_loop", "l2rw", "mwn")}
    X, y, corrupted, X_val, y_val, X_te, y_te = digits_split(seed)
    clean = ~corrupted
    common = {"hidden_layer_sizes": (64,), "learning_rate": 0.1, "max_iter": cfg["steps"],
              "n_stages": cfg["stages"], "batch_size": 64, "random_state": seed}
    res = {}
    for key, steps in (("uniform", 0), ("dwm", cfg["dwm_steps"])):
        est, t = fit_timed(DWMClassifier(**common, dwm_steps_per_stage=steps),
                           X, y, X_val, y_val)
        w = est._final_stage_weights()
        seen = np.isfinite(w)
        auc = roc_auc_score(clean[seen], w[seen]) if key == "dwm" else float("nan")
        corrupt_share = est.stage_weight_sums_[-1][corrupted].sum() / \
            est.stage_weight_sums_[-1].sum()
        res[key] = {"acc": est.score(X_te, y_te), "auc": auc, "corrupt": corrupt_share,
                    "t": t, "ess": est.stage_weight_stats_[-1]["ess_mean"]}
    mean, scale = X.mean(0), X.std(0)
    scale = np.where(scale > 0, scale, 1.0)

    def tens(a, dtype=torch.float32, m=mean, s=scale):
        return torch.as_tensor((a - m) / s, dtype=dtype)

    Xt, Xv, Xte = tens(X), tens(X_val), tens(X_te)
    yt, yv = torch.as_tensor(y), torch.as_tensor(y_val)
    for kind in ("uniform", "l2rw", "mwn"):
        torch.manual_seed(seed)
        module = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(),
                                     torch.nn.Linear(64, 10))
        t, sums, counts = peer_train(kind, module, cross_entropy, Xt, yt, Xv, yv, lr=0.1,
                                     steps=cfg["steps"], batch_size=64, seed=seed)
        with torch.no_grad():
            acc = float((module(Xte).argmax(1).numpy() == y_te).mean())
        seen = counts > 0
        w = sums[seen] / counts[seen]
        auc = roc_auc_score(clean[seen], w) if kind != "uniform" else float("nan")
        key = "uniform_loop" if kind == "uniform" else kind
        res[key] = {"acc": acc, "auc": auc, "t": t,
                    "corrupt": sums[corrupted].sum() / sums.sum()}
    for k in peers:
        peers[k].append({**res[k], "gain": res[k]["acc"] - res["uniform"]["acc"]})
    gain = res["dwm"]["acc"] - res["uniform"]["acc"]
    rows.append([seed, corrupted.mean(), res["uniform"]["acc"], res["dwm"]["acc"],
                 ">= +0.08", gain, ">= 0.80", res["dwm"]["auc"], res["dwm"]["corrupt"],
                 res["dwm"]["ess"], gain >= 0.08 and res["dwm"]["auc"] >= 0.80])
    print(f"E2 seed {seed}: gain {gain:+.3f} auc {res['dwm']['auc']:.3f}", flush=True)
    return "E2", rows, peers


# ---------------------------------------------------------------- E3


def markov_mixture_nll(X, transitions, prior_a):
    """NLL per token on ``X`` of the Bayes predictor of a pool with share ``prior_a`` of A.

    An LM trained to convergence on a pool where language A has (weighted) share ``s``
    predicts with the posterior mixture ``sum_k p(k | x_<=t) T_k[x_t, x_t+1]`` with prior
    ``(s, 1 - s)``; this is its validation NLL, the limit of any weighting with that share.
    """
    n, length = X.shape
    log_post = np.log(np.array([prior_a, 1.0 - prior_a]) + 1e-300)[None].repeat(n, 0)
    nll = np.zeros(n)
    for t in range(length - 1):
        a, b = X[:, t], X[:, t + 1]
        logp = np.log(np.stack([transitions[0][a, b], transitions[1][a, b]], 1) + 1e-300)
        mix = log_post + logp
        nll -= np.logaddexp.reduce(mix, 1) - np.logaddexp.reduce(log_post, 1)
        log_post = mix
    return float(nll.mean() / (length - 1))


E3_METHODS = ("uniform", "dwm", "dwm_online", "a_only", "l2rw", "mwn")
# E3 as run for the results file: the schedule of the previous run (600 LM steps, 5 x 60
# DWM updates; the full schedule, 3000 steps and 5 x 100, did not fit the shared
# machine's time) on a pool large enough that sequences are seldom repeated (600 x 64
# draws from 50000 sequences), which the 2000-sequence pool of the previous run was not
E3_FULL = {"n_sequences": 50000, "steps": 600, "stages": 5, "dwm_steps": 60}
E3_SEEDS = [0]
E3_PEER_SEEDS = [0]  # also the seeds of the online variant


def run_e3(seed, method, cfg):
    """One method of E3 on one seed: NLLs, the share of A per stage, CPU s per LM step."""
    warm_up()
    data = make_markov_languages(cfg["n_sequences"], seq_len=32, vocab_size=20,
                                 random_state=seed)
    lang = data.language
    start = time.process_time()
    if method in ("uniform", "dwm", "dwm_online", "a_only"):
        dwm_steps = cfg["dwm_steps"] if method.startswith("dwm") else 0
        rows = lang == 0 if method == "a_only" else np.ones(lang.shape[0], dtype=bool)
        est = DWMCharLM(max_iter=cfg["steps"], n_stages=cfg["stages"], batch_size=64,
                        dwm_steps_per_stage=dwm_steps, online=method == "dwm_online",
                        random_state=seed).fit(data.X[rows], X_val=data.X_val)
        t = (time.process_time() - start) / est.n_iter_
        sums = est.stage_weight_sums_
        shares = [float(sums[k][lang[rows] == 0].sum() / sums[k].sum())
                  for k in range(sums.shape[0])]
        stage_val = [s["val_loss"] for s in est.stage_weight_stats_]
        ess = [s["ess_mean"] for s in est.stage_weight_stats_]
        val, test = -est.score(data.X_val), -est.score(data.X_test)
    else:
        torch.manual_seed(seed)
        module = CharGRUModule(20)
        X = torch.as_tensor(data.X)
        t, sums, _ = peer_train(method, module, sequence_nll, X, X,
                                torch.as_tensor(data.X_val), torch.as_tensor(data.X_val),
                                lr=0.01, steps=cfg["steps"], batch_size=64, seed=seed,
                                optimizer="adam", clock=time.process_time)
        shares = [float(sums[lang == 0].sum() / sums.sum())]
        stage_val, ess = [], []
        with torch.no_grad():
            val = float(sequence_nll(module(torch.as_tensor(data.X_val)),
                                     torch.as_tensor(data.X_val)).mean())
            test = float(sequence_nll(module(torch.as_tensor(data.X_test)),
                                      torch.as_tensor(data.X_test)).mean())
    out = {"seed": seed, "method": method, "val": val, "test": test, "shares": shares,
           "stage_val": stage_val, "ess": ess, "t": t}
    if method == "uniform":
        T = data.transitions
        out["oracle"] = markov_mixture_nll(data.X_val, T, 1.0)
        out["bayes_pool"] = markov_mixture_nll(data.X_val, T, float(np.mean(lang == 0)))
    print(f"E3 seed {seed} {method}: val {val:.4f} shares {np.round(shares, 2)} "
          f"({1e3 * t:.0f} cpu ms/step)", flush=True)
    return "E3", method, out


def gather(results, name):
    """Concatenate the rows and peer records of one experiment's seeds."""
    rows, peers = [], {}
    for exp, r, p in results:
        if exp != name:
            continue
        rows += r
        for k, v in p.items():
            peers.setdefault(k, []).extend(v)
    return rows, peers


# ---------------------------------------------------------------- main


def carried_sections(prefixes):
    """The sections of the existing results file whose headings start with ``prefixes``."""
    path = RESULTS / "data_weighting_model.md"
    if not path.exists():
        return []
    out, current = [], None
    for line in path.read_text().splitlines():
        if line.startswith("## "):
            current = [line[3:], []] if line[3:].startswith(prefixes) else None
            if current is not None:
                out.append(current)
        elif current is not None:
            current[1].append(line)
    return [(h, "\n".join(body).strip()) for h, body in out]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    own = argparse.ArgumentParser(add_help=False)
    own.add_argument("--only", default="E1,E2,E3",
                     help="comma-separated experiments to run; the other experiments' "
                     "sections are carried over from the existing results file")
    own.add_argument("--e3-steps", type=int, default=None,
                     help="E3 LM steps (default: E3_FULL['steps'])")
    own.add_argument("--e3-stages", type=int, default=None,
                     help="E3 stages (default: E3_FULL['stages'])")
    own.add_argument("--e3-dwm-steps", type=int, default=None,
                     help="E3 DWM updates per stage (default: E3_FULL['dwm_steps'])")
    own.add_argument("--e3-pool", type=int, default=None,
                     help="E3 pool size in sequences (default: E3_FULL['n_sequences'])")
    own.add_argument("--e3-seeds", default=None,
                     help="comma-separated E3 seeds (default: E3_SEEDS; the peers and the "
                     "online variant then run on these seeds too)")
    own.add_argument("--e3-methods", default=None,
                     help=f"comma-separated E3 methods out of {','.join(E3_METHODS)} "
                     "(default: all; uniform and dwm are always run)")
    own.add_argument("--e3-append", action="store_true",
                     help="run E3 only and APPEND its tables as a labelled section to the "
                     "existing results file instead of rewriting the file")
    own_args, rest = own.parse_known_args(argv)
    if own_args.e3_append:
        return main_e3_append(own_args, rest)
    only = {e.strip().upper() for e in own_args.only.split(",") if e.strip()}
    args = parse_args(__doc__.splitlines()[0], rest)
    quick = args.quick
    carried = [] if quick else carried_sections(
        tuple(e for e in ("E1", "E2") if e not in only))
    report = Report("data_weighting_model",
                    "Data weighting model (DWM): bi-level per-sample weighting",
                    quick=quick, packages=("numpy", "scikit-learn", "torch", "skorch"))
    seeds = [0] if quick else [0, 1, 2]
    e1_cfg = ({"n_per_source": 300, "steps": 600, "stages": 3, "dwm_steps": 40} if quick
              else {"n_per_source": 1000, "steps": 3000, "stages": 5, "dwm_steps": 100})
    e2_cfg = ({"steps": 500, "stages": 5, "dwm_steps": 40} if quick
              else {"steps": 2000, "stages": 5, "dwm_steps": 100})
    e3_cfg = e3_config(own_args, quick)
    e3_seeds = [0] if quick else E3_SEEDS
    e3_peer_seeds = [0] if quick else E3_PEER_SEEDS
    if own_args.e3_seeds:
        e3_seeds = e3_peer_seeds = [int(v) for v in own_args.e3_seeds.split(",")]
    methods = e3_methods(own_args)
    start = time.perf_counter()
    # one (seed, experiment[, method]) per task, two worker processes of one torch thread;
    # the slowest tasks (E3's peers) first
    tasks = []
    if "E3" in only:
        tasks += e3_tasks(e3_cfg, methods, e3_seeds, e3_peer_seeds)
    if "E1" in only:
        tasks += [delayed(run_e1)(s, e1_cfg, not quick) for s in seeds]
    if "E2" in only:
        tasks += [delayed(run_e2)(s, e2_cfg) for s in seeds]
    results = Parallel(n_jobs=N_JOBS)(tasks)
    e1_e2 = [r for r in results if r[0] in ("E1", "E2")]
    e3 = [r[2] for r in results if r[0] == "E3"]
    for heading, text in carried:
        report.add(heading, text)
    if "E1" in only:
        e1_tables(report, e1_e2, e1_cfg)
    if "E2" in only:
        e2_tables(report, e1_e2, e2_cfg)
    if "E3" in only:
        e3_tables(report, e3, e3_cfg, e3_seeds, e3_peer_seeds)
    ran = ", ".join(e for e in ("E1", "E2", "E3") if e in only)
    kept = ", ".join(h.split(":")[0] for h, _ in carried[:1]) if carried else ""
    report.add(
        "Notes",
        "- Targets of E1/E2 were calibrated before the runs. E3's sizes (pool, steps) "
        "are chosen here (see the E3 notes).\n"
        "- Peers not run: static selectors DSIR / MATES (the paper's "
        "baselines, for LLM pre-training), cleanlab and the `data-selection` package (not "
        "installed).\n"
        + (f"- This run ran {ran} only; the sections of "
           f"{', '.join(sorted({h.split(':')[0].split(' ')[0] for h, _ in carried}))} are "
           "carried over unchanged from the previous full run of this script (same code for "
           "those experiments).\n" if kept else "")
        + f"- torch {package_version('torch')}, skorch {package_version('skorch')}, one "
        f"torch thread. Run time of this run ({ran}) "
        f"{fmt((time.perf_counter() - start) / 60)} min.",
    )
    report.write()


def e3_config(own_args, quick=False):
    """E3's schedule: ``E3_FULL`` (or the --quick sizes) with the --e3-* options applied."""
    cfg = dict({"n_sequences": 2000, "steps": 100, "stages": 5, "dwm_steps": 10} if quick
               else E3_FULL)
    for key, value in (("steps", own_args.e3_steps), ("stages", own_args.e3_stages),
                       ("dwm_steps", own_args.e3_dwm_steps),
                       ("n_sequences", own_args.e3_pool)):
        if value is not None:
            cfg[key] = value
    return cfg


def e3_methods(own_args):
    if not own_args.e3_methods:
        return E3_METHODS
    chosen = {m.strip() for m in own_args.e3_methods.split(",") if m.strip()}
    unknown = chosen - set(E3_METHODS)
    if unknown:
        raise SystemExit(f"--e3-methods: unknown {sorted(unknown)}; expected {E3_METHODS}")
    return tuple(m for m in E3_METHODS if m in chosen | {"uniform", "dwm"})


def e3_tasks(cfg, methods, seeds, peer_seeds):
    """E3's tasks, the slowest first: the peers, then the DWM, uniform, A only, online."""
    tasks = [delayed(run_e3)(s, m, cfg) for m in ("mwn", "l2rw") if m in methods
             for s in peer_seeds]
    tasks += [delayed(run_e3)(s, m, cfg) for m in ("dwm_online", "dwm") if m in methods
              for s in (peer_seeds if m == "dwm_online" else seeds)]
    tasks += [delayed(run_e3)(s, m, cfg) for m in ("uniform", "a_only") if m in methods
              for s in seeds]
    return tasks


class AppendedSection(Report):
    """A Report whose tables go under one labelled ``##`` section APPENDED to the results."""

    def __init__(self, heading, packages):
        super().__init__("data_weighting_model", heading, packages=packages)
        self.sections = [f"## {heading}", "", f"Machine: {machine_info(packages)}", ""]

    def add(self, heading, text):
        self.sections += [f"### {heading}", "", text, ""]
        print(f"\n### {heading}\n{text}", flush=True)

    def write(self):
        path = RESULTS / "data_weighting_model.md"
        old = path.read_text().rstrip("\n") if path.exists() else ""
        path.write_text(old + "\n\n" + "\n".join(self.sections))
        print(f"\nappended to {path}")
        return path


def main_e3_append(own_args, rest):
    """E3 alone at the schedule given by the --e3-* options, appended to the results file."""
    parse_args(__doc__.splitlines()[0], rest)
    cfg = e3_config(own_args)
    seeds = ([int(v) for v in own_args.e3_seeds.split(",")] if own_args.e3_seeds
             else E3_SEEDS)
    methods = e3_methods(own_args)
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    heading = (f"E3 appended run ({stamp}): {cfg['steps']} LM steps, {cfg['stages']} stages "
               f"x {cfg['dwm_steps']} DWM updates, pool {cfg['n_sequences']}, seeds "
               f"{', '.join(map(str, seeds))}")
    report = AppendedSection(heading, ("numpy", "scikit-learn", "torch", "skorch"))
    start = time.perf_counter()
    results = Parallel(n_jobs=N_JOBS)(e3_tasks(cfg, methods, seeds, seeds))
    e3_tables(report, [r[2] for r in results], cfg, seeds, seeds)
    args = " ".join(sys.argv[1:]) if len(sys.argv) > 1 else ""
    report.add(
        "Run",
        f"Command: `python benchmarks/data_weighting_model.py {args}`. Methods: "
        f"{', '.join(methods)}. Wall time {fmt((time.perf_counter() - start) / 60)} min "
        f"({N_JOBS} worker processes of one torch thread, machine shared with other jobs). "
        f"torch {package_version('torch')}, skorch {package_version('skorch')}.",
    )
    report.write()


NAMES = {"uniform": "uniform (DWMRegressor, 0 DWM steps)", "dwm": "DWM",
         "dwm_raw": "DWM, raw loss feature (loss transform ablation)",
         "uniform_loop": "uniform (plain torch loop)",
         "l2rw": "Learning-to-Reweight (torch loop)", "mwn": "Meta-Weight-Net (torch loop)"}


def e1_tables(report, results, e1_cfg):
    rows, p1 = gather(results, "E1")
    report.add_table(
        "E1: mixed-source regression (calibrated targets, all 3 seeds)",
        ["seed", "|beta_A|^2", "uniform MSE", "DWM MSE", "target ratio", "DWM/uniform",
         "target A", "share A", "target C", "share C", "share B", "share D", "pass"],
        rows,
        note=f"Linear learner, SGD lr 0.05, {e1_cfg['steps']} steps, batch 64, "
        f"{e1_cfg['stages']} stages x {e1_cfg['dwm_steps']} DWM steps (Adam 1e-3, T = 1, "
        "batch context, log(1 + loss) feature), 200 validation rows used whole at each DWM "
        "step, test 2000 rows of A. Shares: share of the total weight of the last stage's "
        "learner batches (uniform = 0.25 each). "
        f"All seeds pass: {all(r[-1] for r in rows)}.",
    )
    names = NAMES
    t_skorch = median([r["t"] for r in p1["uniform"]])
    t_loop = median([r["t"] for r in p1["uniform_loop"]])
    prow = []
    for k, recs in p1.items():
        if not recs:
            continue
        ref = t_loop if k in ("uniform_loop", "l2rw", "mwn") else t_skorch
        prow.append([names[k], median([r["mse"] for r in recs]),
                     median([r["ratio"] for r in recs]), max(r["ratio"] for r in recs),
                     median([r["A"] for r in recs]), median([r["C"] for r in recs]),
                     1e3 * median([r["t"] for r in recs]), median([r["t"] for r in recs]) / ref])
    report.add_table(
        "E1 peers (medians over the seeds)",
        ["method", "test MSE", "MSE / uniform", "worst ratio", "share A", "share C",
         "ms / step", "time / uniform of its loop"],
        prow,
        note="L2RW and MWN weights are logged over the last 20 % of the steps. MWN reads "
        "log(1 + loss) here, as the DWM does. Times compare each method with uniform "
        "training in the same framework (skorch net for the DWM, plain torch loop for the "
        f"peers); the DWM's time per step includes its DWM updates ({e1_cfg['stages']} x "
        f"{e1_cfg['dwm_steps']} over {e1_cfg['steps']} learner steps).",
    )


def e2_tables(report, results, e2_cfg):
    names = NAMES
    rows, p2 = gather(results, "E2")
    gains = [r[5] for r in rows]
    n_good = sum(r[-1] for r in rows)
    agg = [["seeds with AUC >= 0.80 and gain >= +0.08", ">= 2 of 3", f"{n_good} of {len(rows)}",
            n_good >= min(2, len(rows))],
           ["mean accuracy gain", ">= +0.04", np.mean(gains), np.mean(gains) >= 0.04],
           ["worst seed gain", ">= -0.10", min(gains), min(gains) >= -0.10]]
    report.add_table(
        "E2: digits with 40 % label noise (per seed)",
        ["seed", "realised noise", "uniform acc", "DWM acc", "target gain", "gain",
         "target AUC", "AUC", "weight share of corrupted rows", "mean ESS / B", "seed ok"],
        rows,
        note=f"MLP(64), SGD lr 0.1, {e2_cfg['steps']} steps, batch 64, {e2_cfg['stages']} "
        f"stages x {e2_cfg['dwm_steps']} DWM steps, raw cross-entropy feature, 100 clean "
        "validation rows (10 per class) used whole. AUC: mean weight of each training row "
        "over the last stage's batches, clean vs corrupted.",
    )
    report.add_table("E2: aggregate targets", ["criterion", "target", "measured", "pass"], agg)
    prow = []
    t_skorch = median([r["t"] for r in p2["uniform"]])
    t_loop = median([r["t"] for r in p2["uniform_loop"]])
    for k, recs in p2.items():
        ref = t_loop if k in ("uniform_loop", "l2rw", "mwn") else t_skorch
        prow.append([names[k].replace("DWMRegressor", "DWMClassifier"),
                     median([r["acc"] for r in recs]), median([r["gain"] for r in recs]),
                     " / ".join(f"{r['gain']:+.3f}" for r in recs),
                     median([r["auc"] for r in recs]), median([r["corrupt"] for r in recs]),
                     1e3 * median([r["t"] for r in recs]), median([r["t"] for r in recs]) / ref])
    report.add_table(
        "E2 peers (medians over the seeds)",
        ["method", "test acc", "gain vs uniform (skorch)", "gain per seed", "AUC",
         "weight share of corrupted", "ms / step", "time / uniform of its loop"],
        prow,
        note="Gains are against the DWMClassifier uniform run of the same seed. L2RW/MWN "
        "AUC and shares use their weights over the last 20 % of the steps.",
    )



def e3_tables(report, records, cfg, seeds, peer_seeds):
    by = {(r["seed"], r["method"]): r for r in records}
    rows = []
    for seed in seeds:
        uni, dwm = by[(seed, "uniform")], by[(seed, "dwm")]
        a_only = by.get((seed, "a_only"))
        diff = uni["val"] - dwm["val"]
        shares = dwm["shares"]
        increasing = all(b >= a - 0.02 for a, b in zip(shares[1:], shares[2:]))
        rows.append([seed, uni["oracle"], uni["bayes_pool"], uni["bayes_pool"] - uni["oracle"],
                     uni["val"], dwm["val"], ">= 0.05", diff, uni["test"] - dwm["test"],
                     uni["val"] - a_only["val"] if a_only else float("nan"),
                     ">= 0.5", shares[-1], " / ".join(f"{v:.2f}" for v in shares),
                     increasing, diff >= 0.05 and shares[-1] >= 0.5 and increasing])
    report.add_table(
        "E3: tiny GRU LM on two Markov languages (per seed)",
        ["seed", "oracle val NLL", "Bayes NLL of the pool mix", "gain ceiling at convergence",
         "uniform val NLL", "DWM val NLL", "target gain", "val NLL gain", "test NLL gain",
         "A-only gain (selection)", "target share A", "share A (last)", "share A per stage",
         "increasing", "pass"],
        rows,
        note=f"Pool {cfg['n_sequences']} sequences of 32 tokens (20 symbols; 30 % A, 70 % B; "
        "transition rows Dirichlet(0.1), language seeds 1 and 2), 200 validation and 500 test "
        "sequences of A. DWMCharLM defaults (embedding 32, GRU 64, Adam lr 0.01, SGD "
        f"look-ahead lr 0.01), {cfg['steps']} LM steps, batch 64, {cfg['stages']} stages x "
        f"{cfg['dwm_steps']} DWM steps (Adam 1e-3, T = 1, raw NLL feature), the 200 "
        "validation sequences used whole. NLL in nats per token. oracle: NLL of A's true "
        "transition matrix. Bayes NLL of the pool mix: NLL of the exact posterior-mixture "
        "predictor of the 30/70 pool, i.e. what uniform training tends to with unlimited "
        "data and steps; 'gain ceiling at convergence' = Bayes pool NLL - oracle, the most "
        "ANY weighting can gain over a converged uniform LM (with all weight on A). A-only "
        "gain: uniform val NLL minus that of the same LM trained on the A rows of the pool "
        "only (perfect selection, a reference). 'increasing': each stage from stage 2 on "
        "is at least the previous one minus 0.02.",
    )
    labels = {"uniform": "uniform (DWMCharLM, 0 DWM steps)", "dwm": "DWM",
              "dwm_online": "DWM, online variant",
              "a_only": "A rows only (perfect selection, reference)",
              "l2rw": "Learning-to-Reweight (torch loop)",
              "mwn": "Meta-Weight-Net (torch loop)"}
    t_ref = median([r["t"] for r in records if r["method"] == "uniform"])
    prow = []
    for method in E3_METHODS:
        recs = [r for r in records if r["method"] == method]
        if not recs:
            continue
        gains = [by[(r["seed"], "uniform")]["val"] - r["val"] for r in recs]
        prow.append([labels[method], ", ".join(str(r["seed"]) for r in recs),
                     median([r["val"] for r in recs]), median([r["test"] for r in recs]),
                     " / ".join(f"{g:+.4f}" for g in gains),
                     median([r["shares"][-1] for r in recs]),
                     1e3 * median([r["t"] for r in recs]),
                     median([r["t"] for r in recs]) / t_ref])
    report.add_table(
        "E3: methods side by side (medians over their seeds)",
        ["method", "seeds", "val NLL", "test NLL", "val NLL gain per seed", "share A (last)",
         "CPU ms / LM step", "time / uniform"],
        prow,
        note="Gains are against the DWMCharLM uniform run of the same seed. L2RW and MWN "
        "(plain torch loop, same GRU, Adam lr 0.01, meta step through an SGD look-ahead of "
        "lr 0.01 on the 200 validation sequences, every step) log their weights over the "
        "last 20 % of the steps. Times are CPU seconds (process time, one torch thread) per "
        "LM step, including the DWM / meta updates, relative to the uniform DWMCharLM; "
        "CPU time rather than wall time because the machine was shared.",
    )
    stage_rows = []
    for seed in seeds:
        for method in ("dwm", "dwm_online"):
            r = by.get((seed, method))
            if not r:
                continue
            sh = r["shares"]
            rising = all(b >= a - 0.02 for a, b in zip(sh[1:], sh[2:]))
            stage_rows.append([seed, labels[method], " / ".join(f"{v:.2f}" for v in sh),
                               rising, " / ".join(f"{v:.2f}" for v in r["ess"])])
    report.add_table(
        "E3: share of A and effective sample size per stage",
        ["seed", "method", "share A per stage", "rising (from stage 2, 0.02 slack)",
         "mean ESS / B per stage"],
        stage_rows,
        note="Share of A: share of the total weight that language A's rows received over "
        "the stage's learner batches (pool share 0.3). ESS / B: (sum w)^2 / sum w^2 over a "
        "batch, divided by the batch size, averaged over the stage's learner batches.",
    )
    curves = []
    for seed in seeds:
        for method in ("uniform", "dwm", "dwm_online", "a_only"):
            r = by.get((seed, method))
            if r and r["stage_val"]:
                curves.append([seed, labels[method]] + list(r["stage_val"]))
    report.add_table(
        "E3: validation NLL at the end of each stage",
        ["seed", "method"] + [f"stage {k + 1}" for k in range(cfg["stages"])],
        curves,
    )


if __name__ == "__main__":
    main()
