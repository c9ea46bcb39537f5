"""Benchmark of LwI continual learning on digit task streams: E1-E3 and a regime study.

E1: fusing a trained model with a randomly permuted copy of itself returns the copy
(similarity matching everywhere), for several steps; the assignment and POT's exact OT agree.
E2: split digits (5 tasks of 2 classes), TAw and TAg after the last task for joint training,
fine-tuning, LwF and LwI, mean over seeds. E3: naive weight averaging (no alignment) and
similarity-only fusion as ablations. POT's ``ot.emd`` is the peer solver (same run).
Regime study: LwI vs LwF vs fine-tuning vs joint training, 5 seeds, on wider and deeper
networks, a convolutional backbone, 10-task permuted and rotated digits and a larger learning
rate; TAw, TAg and the forgetting of task 1, and whether LwI beats LwF beyond the seed spread.
A figure of the per-task task-agnostic accuracy after each task is written next to the
examples (``examples/lwi_continual_learning_bench.png``, git-ignored).

Run: ``python benchmarks/lwi_continual_learning.py [--quick]``
"""

import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Report, median_time, parse_args, timed_fit  # noqa: E402
from _harness import table as md_table  # noqa: E402

from sklearn_icml.continual import LwIClassifier, fuse_models  # noqa: E402
from sklearn_icml.datasets import (  # noqa: E402
    load_permuted_digits,
    load_rotated_digits,
    load_split_digits,
)

METHODS = {
    "joint training": None,
    "fine-tuning": {"fusion": False, "kd_lambda": 0.0},
    "LwF (fusion=False)": {"fusion": False},
    "LwI": {},
    "naive averaging (solver='identity', step 0.5, n_diverse 0)": {
        "solver": "identity", "step_sim": 0.5, "n_diverse_layers": 0,
    },
    "similarity-only OT fusion (n_diverse_layers=0)": {"n_diverse_layers": 0},
    "LwI, POT exact OT (solver='emd')": {"solver": "emd"},
    "LwF, heads without bias (head_bias=False, as the authors)": {
        "fusion": False, "head_bias": False,
    },
    "LwI, heads without bias (head_bias=False, as the authors)": {"head_bias": False},
}


def run_method(name, kwargs, data, seed, max_epochs, common=None):
    """Train one method on a task stream; return per-task accuracies and time.

    ``kwargs`` None is joint training (one head over all classes, all data at once);
    ``common`` holds the estimator parameters shared by every method of a regime.
    """
    X_tr, X_te, y_tr, y_te, t_tr, t_te = data
    common = common or {}
    n_tasks = int(t_tr.max()) + 1
    after = []  # after[i][j]: task-agnostic accuracy on task j after training task i
    if kwargs is None:
        seconds, clf = timed_fit(
            LwIClassifier(max_epochs=max_epochs, random_state=seed, **common), X_tr, y_tr,
            repeat=1,
        )
        logits = clf.decision_function(X_te)  # one 10-class head, columns = classes 0..9
        taw, tag = [], []
        for j in range(n_tasks):
            rows = t_te == j
            cls = np.unique(y_te[rows])
            cols = np.searchsorted(clf.classes_, cls)
            taw.append(np.mean(cls[logits[rows][:, cols].argmax(1)] == y_te[rows]))
            tag.append(np.mean(clf.classes_[logits[rows].argmax(1)] == y_te[rows]))
        return {"taw": taw, "tag": tag, "seconds": seconds, "after": None}
    clf = LwIClassifier(max_epochs=max_epochs, random_state=seed, **common, **kwargs)

    def learn_stream():
        for i in range(n_tasks):
            clf.partial_fit(X_tr[t_tr == i], y_tr[t_tr == i], task_id=i)
            pred = clf.predict(X_te)
            after.append([np.mean(pred[t_te == j] == y_te[t_te == j]) for j in range(i + 1)])

    seconds, _ = median_time(learn_stream, repeat=1, warmup=0)
    taw_pred = clf.predict(X_te, task_id=t_te)
    taw = [np.mean(taw_pred[t_te == j] == y_te[t_te == j]) for j in range(n_tasks)]
    return {"taw": taw, "tag": after[-1], "seconds": seconds, "after": after}


def experiment_e1(report, quick):
    """Fusion with a permuted copy; naive averaging for illustration; solver timing."""
    X_tr, X_te, y_tr, y_te, _, _ = load_split_digits(n_tasks=5)
    epochs = 10 if quick else 30
    A_clf = LwIClassifier(max_epochs=epochs, random_state=0).fit(X_tr, y_tr)
    acc_A = A_clf.score(X_te, y_te)
    model = A_clf.model_
    order = model.layer_order()
    A = {k: v.clone() for k, v in model.state_dict().items()}  # not views of the model
    rng = np.random.default_rng(0)
    B = {k: v.clone() for k, v in A.items()}
    applied = []
    for i, (w, b) in enumerate(order):
        pi = rng.permutation(B[w].shape[0])
        inv = np.argsort(pi)
        B[w], B[b] = B[w][inv], B[b][inv]
        nxt = order[i + 1][0] if i + 1 < len(order) else "heads.0.weight"
        B[nxt] = B[nxt][:, inv]
        applied.append(inv)
    rows = []
    for step in (0.0, 0.3, 0.5, 0.7, 1.0):
        fused, perms = fuse_models(A, B, layer_order=order, n_diverse_layers=0, step_sim=step)
        err = max(float((fused[k] - B[k]).abs().max()) for k in B)
        rows.append((step, err, perms, fused))
    pred_A = A_clf.predict(X_te)
    table_rows = []
    for step, err, perms, fused in rows:
        model.load_state_dict(fused)
        agree = float(np.mean(A_clf.predict(X_te) == pred_A))
        recovered = all(np.array_equal(p, q) for p, q in zip(perms, applied, strict=True))
        table_rows.append((step, "<= 1e-6", f"{err:.2e}", "100 %", f"{100 * agree:.1f} %",
                           "yes", "yes" if recovered else "no"))
    _, perms_emd = fuse_models(A, B, layer_order=order, n_diverse_layers=0, solver="emd")
    emd_same = all(np.array_equal(p, q) for p, q in zip(perms_emd, applied, strict=True))
    naive, _ = fuse_models(A, B, layer_order=order, n_diverse_layers=0, solver="identity",
                           step_sim=0.5)
    model.load_state_dict(naive)
    acc_naive = A_clf.score(X_te, y_te)
    model.load_state_dict(A)
    report.add_table(
        "E1: fusion of a trained model A with a randomly permuted copy B (n_diverse_layers=0)",
        ["step_sim", "target max abs(fused - B)", "measured", "target agreement with A",
         "measured", "target: permutations recovered", "measured"],
        table_rows,
        note=(
            f"A: 64-256-256-10 MLP, one task of all 10 digits, {epochs} epochs of the default "
            f"SGD recipe, test accuracy {acc_A:.3f}. POT's exact OT "
            f"(`solver='emd'`) recovers the same permutations: {'yes' if emd_same else 'NO'}. "
            f"Naive averaging of A and B (`solver='identity'`, weight 0.5, illustration only, "
            f"no pass bar): accuracy {acc_naive:.3f} vs A's {acc_A:.3f}. The head comes "
            "from B (the new state), see `fuse_models`."
        ),
    )
    # peer timing: one fusion of the 256-wide pair, scipy assignment vs POT exact OT
    times = {}
    for solver in ("assignment", "emd"):
        times[solver], _ = median_time(
            lambda s=solver: fuse_models(A, B, layer_order=order, solver=s), repeat=5
        )
    report.add_table(
        "E1 peers: time of one fusion (2 hidden layers of width 256), median of 5",
        ["solver", "seconds", "ratio to scipy assignment"],
        [("scipy linear_sum_assignment (ours, default)", times["assignment"], 1.0),
         ("POT ot.emd (authors' release)", times["emd"], times["emd"] / times["assignment"])],
    )


def mean(xs):
    return float(np.mean(xs))


def experiment_e2_e3(report, quick):
    data = load_split_digits(n_tasks=5)
    seeds = [0, 1] if quick else [0, 1, 2, 3, 4]
    epochs = 10 if quick else 30
    results = {name: [] for name in METHODS}
    for seed in seeds:
        for name, kwargs in METHODS.items():
            res = run_method(name, kwargs, data, seed, epochs)
            results[name].append(res)
            print(f"seed {seed} {name}: TAw {mean(res['taw']):.3f} TAg {mean(res['tag']):.3f} "
                  f"({res['seconds']:.1f} s)", flush=True)
    summary = {}
    for name, runs in results.items():
        taw = [mean(r["taw"]) for r in runs]
        tag = [mean(r["tag"]) for r in runs]
        secs = [r["seconds"] for r in runs]
        summary[name] = {"taw": mean(taw), "tag": mean(tag), "tag_seeds": tag,
                         "taw_sd": float(np.std(taw)), "tag_sd": float(np.std(tag)),
                         "sec": statistics.median(secs)}
    J, FT, LWF, LWI = (summary[k] for k in ("joint training", "fine-tuning",
                                            "LwF (fusion=False)", "LwI"))
    NAIVE = summary["naive averaging (solver='identity', step 0.5, n_diverse 0)"]

    def ok(flag):
        return "pass" if flag else "FAIL"

    rows = [
        ("joint training", ">= 0.96", J["taw"], ok(J["taw"] >= 0.96), ">= 0.85", J["tag"],
         ok(J["tag"] >= 0.85)),
        ("fine-tuning", ">= 0.93", FT["taw"], ok(FT["taw"] >= 0.93),
         f"0.60 to 0.80 and <= joint - 0.10 ({J['tag'] - 0.10:.3f})", FT["tag"],
         ok(0.60 <= FT["tag"] <= 0.80 and FT["tag"] <= J["tag"] - 0.10)),
        ("LwF", f">= fine-tune - 0.01 ({FT['taw'] - 0.01:.3f})", LWF["taw"],
         ok(LWF["taw"] >= FT["taw"] - 0.01),
         f"fine-tune +- 0.03 ({FT['tag'] - 0.03:.3f} to {FT['tag'] + 0.03:.3f})", LWF["tag"],
         ok(abs(LWF["tag"] - FT["tag"]) <= 0.03)),
        ("LwI", f">= LwF - 0.01 ({LWF['taw'] - 0.01:.3f})", LWI["taw"],
         ok(LWI["taw"] >= LWF["taw"] - 0.01), f">= LwF - 0.03 ({LWF['tag'] - 0.03:.3f})",
         LWI["tag"], ok(LWI["tag"] >= LWF["tag"] - 0.03)),
    ]
    report.add_table(
        f"E2: split digits, 5 tasks, mean over {len(seeds)} seeds (TAw / TAg after the last task)",
        ["method", "target TAw", "measured TAw", "", "target TAg", "measured TAg", ""],
        rows,
        note=(
            f"MLP 64-256-256 + one head per task, SGD lr 1e-3, momentum 0.9, {epochs} epochs "
            "per task, batch 64, old heads frozen; TAw and TAg are means of the five per-task "
            "test accuracies after the last task."
        ),
    )
    gap = LWI["tag"] - NAIVE["tag"]
    per_seed = [a - b for a, b in zip(LWI["tag_seeds"], NAIVE["tag_seeds"], strict=True)]
    report.add_table(
        "E3: ablation, naive averaging without alignment vs LwI",
        ["quantity", "target", "measured", ""],
        [("TAg(LwI) - TAg(naive averaging), mean over seeds", ">= 0.02", gap,
          ok(gap >= 0.02)),
         ("seeds where naive averaging is below LwI", "",
          f"{sum(d > 0 for d in per_seed)} of {len(per_seed)}", "")],
        note="Naive averaging: `solver='identity'`, `step_sim=0.5`, `n_diverse_layers=0` "
        "(weight 0.5 in every layer).",
    )
    ft_sec = FT["sec"]
    report.add_table(
        "All methods side by side (the ablations and the POT peer solver in the same run)",
        ["method", "TAw", "sd", "TAg", "sd", "median s per 5-task run", "time / fine-tune"],
        [(name, s["taw"], s["taw_sd"], s["tag"], s["tag_sd"], s["sec"], s["sec"] / ft_sec)
         for name, s in summary.items()],
        note="sd: standard deviation over seeds. Times are wall seconds on a shared, loaded machine "
        "(compare ratios). avalanche-lib (a PyPI library of EWC/LwF strategies) is not "
        "installed in this environment and is not run; the LwF and fine-tuning baselines "
        "above are options of the same estimator, with the same network and recipe.",
    )
    return results


SEQUENTIAL = {
    "fine-tuning": {"fusion": False, "kd_lambda": 0.0},
    "LwF": {"fusion": False},
    "LwI": {},
}


def _regimes(quick):
    """name -> (data loader, parameters shared by all methods, epochs per task, note)."""
    def split5():
        return load_split_digits(n_tasks=5)

    def permuted():
        return load_permuted_digits(n_tasks=3 if quick else 10)

    def rotated():
        return load_rotated_digits(n_tasks=3 if quick else 10, max_angle=90.0)

    conv = {"conv_channels": (32, 64), "hidden_layer_sizes": (256,), "learning_rate": 0.01}
    return {
        "B. wider and deeper: MLP 64-1024-1024-1024, split digits (5 tasks)":
            (split5, {"hidden_layer_sizes": (1024, 1024, 1024)}, 30),
        "C. conv backbone (conv 32, conv 64, fc 256; lr 0.01), split digits (5 tasks)":
            (split5, conv, 30),
        "D. permuted digits, 10 tasks of 10 classes, MLP 64-256-256, lr 0.01":
            (permuted, {"learning_rate": 0.01}, 10),
        "E. rotated digits (0 to 90 degrees), 10 tasks of 10 classes, MLP 64-256-256, "
        "lr 0.01": (rotated, {"learning_rate": 0.01}, 10),
        "F. rotated digits, 10 tasks, conv backbone (lr 0.01)": (rotated, conv, 10),
        "G. more drift: split digits (5 tasks), MLP 64-256-256, lr 0.01":
            (split5, {"learning_rate": 0.01}, 30),
    }


def _summarise(runs):
    """Means and spreads over seeds of TAw, TAg and the forgetting of task 1."""
    out = {}
    for key in ("taw", "tag", "fgt_taw", "fgt_tag"):
        values = [r[key] for r in runs]
        if any(v is None for v in values):
            out[key] = None
            continue
        out[key] = (float(np.mean(values)), float(np.std(values)), values)
    out["sec"] = statistics.median(r["seconds"] for r in runs)
    return out


def _with_forgetting(res):
    """Add per-run means and the forgetting of task 1 (first task) to ``res``."""
    taw, tag = mean(res["taw"]), mean(res["tag"])
    if res["after"] is None:
        return {**res, "taw": taw, "tag": tag, "fgt_taw": None, "fgt_tag": None}
    first = res["after"][0][0]  # accuracy on task 1 right after learning it (one head)
    return {**res, "taw": taw, "tag": tag, "fgt_taw": first - res["taw"][0],
            "fgt_tag": first - res["after"][-1][0]}


def experiment_regimes(report, quick, base_results):
    """LwI vs LwF vs fine-tuning vs joint training in the regimes where fusion might pay."""
    seeds = [0] if quick else [0, 1, 2, 3, 4]
    table = {}
    names = {"joint training": "joint training", "fine-tuning": "fine-tuning",
             "LwF (fusion=False)": "LwF", "LwI": "LwI"}
    base = "A. base: split digits (5 tasks), MLP 64-256-256 (E2 above)"
    table[base] = {names[k]: _summarise([_with_forgetting(r) for r in base_results[k]])
                   for k in names}
    methods = {"joint training": None, **SEQUENTIAL}
    for regime, (load, common, epochs) in _regimes(quick).items():
        data = load()
        epochs = 2 if quick else epochs
        runs = {name: [] for name in methods}
        for seed in seeds:
            for name, kwargs in methods.items():
                res = _with_forgetting(run_method(name, kwargs, data, seed, epochs, common))
                runs[name].append(res)
                print(f"{regime[:2]} seed {seed} {name}: TAw {res['taw']:.3f} TAg "
                      f"{res['tag']:.3f} ({res['seconds']:.1f} s)", flush=True)
        table[regime] = {name: _summarise(r) for name, r in runs.items()}
        _regime_tables(report, table, len(seeds), final=False)
    return table


def _fmt(stat):
    return "-" if stat is None else f"{stat[0]:.3f} +- {stat[1]:.3f}"


def _regime_tables(report, table, n_seeds, final=True):
    rows, verdicts = [], []
    for regime, methods in table.items():
        for name, st in methods.items():
            rows.append((regime.split(":")[0] if name != "joint training" else regime, name,
                         _fmt(st["taw"]), _fmt(st["tag"]), _fmt(st["fgt_taw"]),
                         _fmt(st["fgt_tag"]), f"{st['sec']:.1f}"))
        lwi, lwf = methods["LwI"], methods["LwF"]
        gaps = []
        for key in ("taw", "tag"):
            diffs = [a - b for a, b in zip(lwi[key][2], lwf[key][2], strict=True)]
            spread = max(lwi[key][1], lwf[key][1])
            gaps.append((float(np.mean(diffs)), float(np.std(diffs)), spread,
                         sum(d > 0 for d in diffs)))
        beats = any(g[0] > g[2] and g[3] == len(lwi["taw"][2]) for g in gaps)
        verdicts.append((regime.split(".")[0], *(f"{g[0]:+.3f}" for g in gaps),
                         *(f"{g[2]:.3f}" for g in gaps),
                         f"{gaps[0][3]} / {gaps[1][3]} of {len(lwi['taw'][2])}",
                         "yes" if beats else "no"))
    if not final:
        print(md_table(['regime', 'method', 'TAw', 'TAg', 'fgt TAw', 'fgt TAg', 's'], rows), flush=True)
        return
    report.add_table(
        f"Regime study: LwI vs LwF vs fine-tuning vs joint training ({n_seeds} seeds)",
        ["regime", "method", "TAw", "TAg", "forgetting of task 1 (TAw)",
         "forgetting of task 1 (TAg)", "median s per run"],
        rows,
        note=(
            "Mean +- standard deviation over seeds, after the last task. TAw: accuracy with "
            "the task id given (argmax in the task's head), TAg: argmax over all heads. "
            "Forgetting of task 1: its accuracy right after it was learned (one head, so TAw "
            "= TAg then) minus its TAw or TAg after the last task. Joint training: one head "
            "over all classes, all tasks at once (no forgetting to measure). Every method of "
            "a regime has the same network, recipe (SGD, momentum 0.9, batch 64, lr 1e-3 "
            "unless stated) and seeds; LwI has its defaults (step 0.70 / 0.93, last layer "
            "dissimilar)."
        ),
    )
    report.add_table(
        "Does LwI beat LwF by more than the seed spread?",
        ["regime", "TAw: LwI - LwF (mean of paired differences)", "TAg: LwI - LwF",
         "seed spread TAw (larger sd of the two)", "seed spread TAg",
         "seeds with LwI > LwF (TAw / TAg)", "LwI beats LwF beyond the spread"],
        verdicts,
        note="'yes' needs a mean paired gain above the larger of the two methods' seed "
        "standard deviations, on TAw or TAg, with LwI ahead on every seed.",
    )


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n in results if results[n][0]["after"] is not None][:5]
    fig, axes = plt.subplots(1, len(names), figsize=(3.2 * len(names), 3.2), sharey=True)
    for ax, name in zip(axes, names, strict=True):
        after = results[name][0]["after"]
        n = len(after)
        for j in range(n):
            ax.plot(range(j, n), [after[i][j] for i in range(j, n)], marker="o",
                    label=f"task {j}")
        ax.set_title(name.split(" (")[0], fontsize=9)
        ax.set_xlabel("after training task")
        ax.set_xticks(range(n))
    axes[0].set_ylabel("task-agnostic accuracy (seed 0)")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print(f"wrote {path}")


NOTES = """\
- E1-E3: 5 seeds, 30 epochs per task, MLP 64-256-256, 70/30 split with random_state=0. The
  E2 targets were set from an earlier two-seed run of the same protocol; the pass/fail
  columns compare with them as written.
- Regime study: the same estimator for every method (LwF is `fusion=False`, fine-tuning
  `fusion=False, kd_lambda=0`, joint training one `fit` over all tasks), 5 seeds; regime A is
  E2's run. The 10-task regimes train 10 epochs per task (1257 training images per task) to
  keep the run affordable on a shared 2-core machine; the regimes with lr 0.01 use it for
  every method (more drift per task, so more to protect).
- The figure of the task-agnostic accuracy of every task after each task (seed 0, one panel
  per sequential method) is written to `examples/lwi_continual_learning_bench.png`.
- Peers: POT's `ot.emd` runs as the alternative solver (same permutations, same accuracy);
  avalanche-lib is not installed here, so its EWC/LwF strategies are not run.
- The machine was shared with other jobs: times are wall seconds, compare ratios.
"""


def main(argv=None):
    args = parse_args(__doc__.splitlines()[0], argv)
    import torch

    torch.set_num_threads(1)
    report = Report("lwi_continual_learning",
                    "LwI continual learning (pathway-protecting model fusion): benchmark",
                    quick=args.quick, packages=("numpy", "scipy", "torch", "pot"))
    experiment_e1(report, args.quick)
    results = experiment_e2_e3(report, args.quick)
    regimes = experiment_regimes(report, args.quick, results)
    _regime_tables(report, regimes, 1 if args.quick else 5)
    root = Path(__file__).resolve().parent.parent / "examples"
    suffix = ".quick.png" if args.quick else ".png"
    plot(results, root / f"lwi_continual_learning_bench{suffix}")
    report.add("Notes", NOTES)
    report.write()


if __name__ == "__main__":
    main()
