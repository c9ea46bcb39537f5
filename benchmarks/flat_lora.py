"""Flat-LoRA benchmark: E1 (noise statistics), E2 (restore), E3 (digits fine-tuning).

Peers side by side in E3: plain LoRA (rho=0), isotropic random weight perturbation (same
rho, no row scaling), LoRA-SAM (two-pass SAM in the A, B space), and Flat-LoRA on peft's
LoRA layers. Wall-time ratios on the E3 MLP and on a wider MLP; peak memory (RSS of a fresh
process) with and without Flat-LoRA.

Run: ``python benchmarks/flat_lora.py [--quick]`` (one torch thread).
"""

import math
import multiprocessing as mp
import os
import resource
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from _harness import Report, median_time, parse_args  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from sklearn_icml.lora import FlatLoRAClassifier, FlatLoRAPerturbation  # noqa: E402
from sklearn_icml.lora._lora_layer import LoRALinear  # noqa: E402

torch.set_num_threads(1)


# E1 / E2
def _layer(m=256, n=1024, r=8, dtype=torch.float32, seed=0):
    torch.manual_seed(seed)
    lin = torch.nn.Linear(n, m, bias=False).to(dtype)
    layer = LoRALinear(lin, rank=r, alpha=2 * r)
    with torch.no_grad():
        layer.lora_B.copy_(torch.randn(m, r, dtype=dtype) * 0.05)
    return torch.nn.Sequential(layer)


def e1():
    model = _layer()
    lay = model[0]
    w0 = lay.weight.clone()
    with torch.no_grad():
        clean = (w0 + lay.delta_weight()).double()
    flat = FlatLoRAPerturbation(rho=0.05, random_state=0).attach(model, total_steps=100)
    start = time.perf_counter()
    flat.perturb(50)
    secs = time.perf_counter() - start
    eps = (lay.weight - w0).double()
    flat.unperturb()
    expected = 0.5 * 0.05 / 32 * clean.norm(dim=1)
    ratio = (eps.std(dim=1) / expected).numpy()
    mean_z = float((eps.mean(dim=1) / (expected / 32)).abs().max())
    return [
        ("median row std ratio", "[0.98, 1.02]", float(np.median(ratio))),
        ("min row std ratio", ">= 0.90", float(ratio.min())),
        ("max row std ratio", "<= 1.10", float(ratio.max())),
        ("max abs row mean (std/sqrt(n))", "<= 4.5", mean_z),
        ("perturb time (s)", "-", secs),
    ]


def _cycles(dtype, restore, n=100):
    model = _layer(dtype=dtype)
    w0 = model[0].weight.clone()
    flat = FlatLoRAPerturbation(rho=0.05, restore=restore, random_state=0)
    flat.attach(model, total_steps=2)
    for _ in range(n):
        flat.perturb(1)
        flat.unperturb()
    return float((model[0].weight - w0).abs().max() / w0.abs().max())


def e2():
    rows = [
        ("float32 regenerate", "<= 1e-5", _cycles(torch.float32, "regenerate")),
        ("float32 copy", "== 0", _cycles(torch.float32, "copy")),
        ("float64 regenerate", "<= 1e-12", _cycles(torch.float64, "regenerate")),
    ]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows.append(("bfloat16 regenerate (info)", "~4e-2 (prototype)",
                     _cycles(torch.bfloat16, "regenerate")))
    return rows


# E3 data and pre-training
def _data():
    X, y = load_digits(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.5, stratify=y, random_state=0)
    rng = np.random.RandomState(1)
    noisy = lambda A, s: ((A + rng.randn(*A.shape) * s) / 16).astype(np.float32)  # noqa: E731
    shifted = np.zeros_like(X_te).reshape(-1, 8, 8)
    shifted[:, :, 1:] = X_te.reshape(-1, 8, 8)[:, :, :-1]
    shifted = shifted.reshape(-1, 64)
    return {
        "clean_train": (X_tr / 16).astype(np.float32), "y_tr": y_tr, "y_te": y_te,
        "train4": noisy(X_tr, 4.0), "test4": noisy(X_te, 4.0), "test6": noisy(X_te, 6.0),
        "shifted": (shifted / 16).astype(np.float32),
        "clean_test": (X_te / 16).astype(np.float32),
    }


def _pretrain(data, epochs):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 10),
    )
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    X = torch.from_numpy(data["clean_train"])
    y = torch.from_numpy(data["y_tr"]).long()
    g = torch.Generator().manual_seed(0)
    for _ in range(epochs):
        perm = torch.randperm(len(X), generator=g)
        for i in range(0, len(X), 64):
            idx = perm[i : i + 64]
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(X[idx]), y[idx]).backward()
            opt.step()
    return model.eval()


def _acc(model, X, y):
    with torch.no_grad():
        return 100.0 * float((model(torch.from_numpy(X)).argmax(1).numpy() == y).mean())


class _IsotropicPerturbation(FlatLoRAPerturbation):
    """Peer: the same rho, one std per layer (``||W'||_F / sqrt(m n)``), no row scaling."""

    def _row_std(self, merged, scale):
        m, n = merged.shape
        std = merged.norm() * scale / math.sqrt(m * n)
        return std.expand(m, 1).clone()


def _sam_net_class(rho_sam):
    import skorch

    class _SAMNet(skorch.NeuralNet):
        """LoRA-SAM: ascend to A, B + rho g/||g||, take the gradient there, step from A, B."""

        def train_step(self, batch, **fit_params):
            params = [p for p in self.module_.parameters() if p.requires_grad]
            self.optimizer_.zero_grad()
            step = self.train_step_single(batch, **fit_params)
            grads = [p.grad.detach().clone() for p in params]
            norm = torch.sqrt(sum((g**2).sum() for g in grads)) + 1e-12
            with torch.no_grad():
                eps = [g * (rho_sam / norm) for g in grads]
                for p, e in zip(params, eps):
                    p.add_(e)
            self.optimizer_.zero_grad()
            self.train_step_single(batch, **fit_params)
            with torch.no_grad():
                for p, e in zip(params, eps):
                    p.sub_(e)
            self.optimizer_.step()
            return step

    return _SAMNet


class _SAMClassifier(FlatLoRAClassifier):
    """Peer: LoRA-SAM, the same fit on a net whose train_step is two-pass SAM."""

    def _net_class(self):
        return _sam_net_class(0.05)


def _finetune(pre, data, seed, rho, epochs, *, backend="own", kind="flat"):
    clf = FlatLoRAClassifier(
        module=pre, lora_rank=4, lora_alpha=8, learning_rate=3e-3, max_epochs=epochs, batch_size=64,
        rho=rho, lora_backend=backend, random_state=seed,
    )
    if kind == "iso":
        import sklearn_icml.lora._flat_lora as fl

        orig = fl.FlatLoRAPerturbation
        fl.FlatLoRAPerturbation = _IsotropicPerturbation
        try:
            clf.fit(data["train4"], data["y_tr"])
        finally:
            fl.FlatLoRAPerturbation = orig
    elif kind == "sam":
        clf = _SAMClassifier(**clf.set_params(rho=0.0).get_params())
        clf.fit(data["train4"], data["y_tr"])
    else:
        clf.fit(data["train4"], data["y_tr"])
    return clf


def _evaluate(clf, data, sharp_draws):
    model = clf.module_.eval()
    y_te = data["y_te"]
    Xtr = torch.from_numpy(data["train4"])
    ytr = torch.from_numpy(data["y_tr"]).long()
    probe = FlatLoRAPerturbation(rho=0.05, random_state=123)
    sharp = probe.expected_sharpness(
        model, torch.nn.functional.cross_entropy, (Xtr, ytr), n_samples=sharp_draws
    )
    with torch.no_grad():
        # "clean" = unperturbed weights, on the (noisy-4) training set
        clean_loss = float(torch.nn.functional.cross_entropy(model(Xtr), ytr))
    return {
        "in": _acc(model, data["test4"], y_te), "n6": _acc(model, data["test6"], y_te),
        "shift": _acc(model, data["shifted"], y_te), "sharp": sharp, "loss": clean_loss,
    }


def e3(quick):
    data = _data()
    pre = _pretrain(data, 10 if quick else 50)
    epochs = 10 if quick else 60
    seeds = [0, 1] if quick else [0, 1, 2, 3, 4]
    peer_seeds = seeds[:1] if quick else seeds[:3]
    draws = 16 if quick else 64
    pre_row = {
        "clean": _acc(pre, data["clean_test"], data["y_te"]),
        "n4": _acc(pre, data["test4"], data["y_te"]),
        "n6": _acc(pre, data["test6"], data["y_te"]),
        "shift": _acc(pre, data["shifted"], data["y_te"]),
    }
    configs = [
        ("LoRA (rho 0)", dict(rho=0.0), seeds),
        ("Flat-LoRA rho 0.05", dict(rho=0.05), seeds),
        ("Flat-LoRA rho 0.1", dict(rho=0.1), seeds),
        ("isotropic RWP rho 0.1", dict(rho=0.1, kind="iso"), peer_seeds),
        ("LoRA-SAM rho 0.05", dict(rho=0.0, kind="sam"), peer_seeds),
    ]
    try:
        import peft  # noqa: F401

        configs.append(("peft LoRA + Flat rho 0.05", dict(rho=0.05, backend="peft"),
                        peer_seeds))
    except ImportError:
        pass
    results = {}
    for name, kw, sd in configs:
        runs = []
        for s in sd:
            start = time.perf_counter()
            clf = _finetune(pre, data, s, epochs=epochs, **kw)
            secs = time.perf_counter() - start
            res = _evaluate(clf, data, draws)
            res["time"] = secs
            runs.append(res)
        results[name] = runs
        print(name, {k: round(statistics.mean(r[k] for r in runs), 4) for k in runs[0]},
              flush=True)
    return pre_row, results, seeds, peer_seeds, epochs, draws


# timing and memory
def _wide_fit(rho, hidden, n, batch, epochs, restore="regenerate"):
    rng = np.random.RandomState(0)
    X = rng.randn(n, 64).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64)
    FlatLoRAClassifier(
        hidden_layer_sizes=(hidden, hidden), lora_rank=8, max_epochs=epochs, batch_size=batch,
        rho=rho, restore=restore, random_state=0, learning_rate=1e-3,
    ).fit(X, y)


def _timing(quick, pre_data):
    pre, data = pre_data
    rep = 1 if quick else 3
    ep = 5 if quick else 15

    def run(rho):
        return lambda: _finetune(pre, data, 0, rho, ep)

    t0, _ = median_time(run(0.0), repeat=rep, warmup=0)
    t1, _ = median_time(run(0.05), repeat=rep, warmup=0)
    n = 2048 if quick else 4096
    w0, _ = median_time(lambda: _wide_fit(0.0, 1024, n, 512, 2), repeat=rep, warmup=0)
    w1, _ = median_time(lambda: _wide_fit(0.05, 1024, n, 512, 2), repeat=rep, warmup=0)
    return t0, t1, w0, w1


def _child(args, queue):
    torch.set_num_threads(1)
    _wide_fit(*args)
    queue.put(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0)


def _peak_rss(args):
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(args, q))
    p.start()
    val = q.get()
    p.join()
    return val


def main(argv=None):
    args = parse_args(__doc__.splitlines()[0], argv)
    quick = args.quick
    rep = Report("flat_lora", "Flat-LoRA (ICML 2025): benchmark", quick=quick,
                 packages=("numpy", "scikit-learn", "torch", "skorch", "peft"))
    rep.add("Scope", (
        "One torch thread; the machine is shared with other jobs, so times are noisy. "
        "E1/E2 at their full sizes. E3 with the target settings (MLP 64-256-256-10, r=4, "
        "alpha=8, AdamW lr 3e-3, 60 epochs, batch 64, 5 seeds, 64 sharpness draws) for LoRA "
        "and Flat-LoRA rho 0.05 / 0.1; REDUCED: the peers (isotropic noise, LoRA-SAM, "
        "peft LoRA + Flat-LoRA) on 3 seeds only; wall-time ratios over 15-epoch fits "
        "(median of 3); peak memory as the RSS of a forked process (includes the parent's "
        "memory at fork time, so only the difference is meaningful)."
        if not quick else "--quick: 2 seeds, 10 epochs, 16 sharpness draws."))
    rep.add_table("E1: noise statistics (m=256, n=1024, c=0.5, rho=0.05)",
                  ["quantity", "target", "measured"], e1())
    rep.add_table("E2: restore error after 100 cycles (max|dW| / max|W|)",
                  ["variant", "target", "measured"], e2())

    pre_row, res, seeds, peer_seeds, epochs, draws = e3(quick)

    def mean_sd(name, key):
        vals = [r[key] for r in res[name]]
        sd = statistics.stdev(vals) if len(vals) > 1 else 0.0
        return f"{statistics.mean(vals):.2f} ({sd:.2f})"

    rows = []
    for name in res:
        rows.append([name, len(res[name]), mean_sd(name, "in"), mean_sd(name, "n6"),
                     mean_sd(name, "shift"),
                     f"{statistics.mean(r['sharp'] for r in res[name]):.2e}",
                     f"{statistics.mean(r['loss'] for r in res[name]):.4f}",
                     f"{statistics.mean(r['time'] for r in res[name]):.2f}"])
    rep.add_table(
        f"E3: digits fine-tuning, {epochs} epochs (accuracy %, mean (sd) over seeds)",
        ["method", "seeds", "noisy-4 (in-domain)", "noisy-6", "shifted",
         f"sharpness rho 0.05 ({draws} draws)", "unperturbed train loss", "fit+eval s"],
        rows,
        note=(f"Pre-trained model: clean {pre_row['clean']:.1f}%, noisy-4 {pre_row['n4']:.1f}%,"
              f" noisy-6 {pre_row['n6']:.1f}%, shifted {pre_row['shift']:.1f}% (prototype: "
              "97.2, 85.3, 72.9, 44.4)."),
    )
    lora = res["LoRA (rho 0)"]
    targets = []
    for rho in ("0.05", "0.1"):
        fl = res[f"Flat-LoRA rho {rho}"]
        ratio = statistics.mean(r["sharp"] for r in fl) / statistics.mean(
            r["sharp"] for r in lora)
        d_in = statistics.mean(a["in"] - b["in"] for a, b in zip(fl, lora))
        d6 = statistics.mean(a["n6"] - b["n6"] for a, b in zip(fl, lora))
        ds = statistics.mean(a["shift"] - b["shift"] for a, b in zip(fl, lora))
        targets += [
            (f"(a) sharpness ratio Flat/LoRA, rho {rho}", "[0.8, 1.2]",
             f"{ratio:.3f}", "0.97" if rho == "0.05" else "1.08"),
            (f"(b) in-domain diff, rho {rho} (points)", ">= -1.0", f"{d_in:+.2f}",
             "+0.40" if rho == "0.05" else "+0.09"),
            (f"(c) noisy-6 diff, rho {rho}", ">= -1.5", f"{d6:+.2f}",
             "0.00" if rho == "0.05" else "-0.29"),
            (f"(c) shifted diff, rho {rho}", ">= -1.5", f"{ds:+.2f}",
             "+0.07" if rho == "0.05" else "+0.31"),
        ]
    higher = sum(a["loss"] > b["loss"] for a, b in zip(res["Flat-LoRA rho 0.1"], lora))
    targets.append(("(a) clean train loss rho 0.1 > LoRA", f">= 4 of {len(seeds)}"
                    if not quick else "(5 seeds)", f"{higher} of {len(seeds)}", "5 of 5"))

    t0, t1, w0, w1 = _timing(quick, (_pretrain(_data(), 1), _data()))
    targets.append(("(d) wall-time ratio Flat/LoRA, E3 MLP (batch 64)", "<= 3.0",
                    f"{t1 / t0:.2f}", "2.0-2.8"))
    targets.append(("wall-time ratio, wide MLP 64-1024-1024-2 (batch 512)", "~1.0-1.1 (paper,"
                    " large models)", f"{w1 / w0:.2f}", "-"))
    rep.add_table("E3 targets", ["target", "expected", "measured", "prototype"], targets)

    if not quick:
        mem = []
        base = _peak_rss((0.0, 1024, 4096, 512, 1))
        flat = _peak_rss((0.05, 1024, 4096, 512, 1))
        copy_ = _peak_rss((0.05, 1024, 4096, 512, 1, "copy"))
        mem = [("LoRA", f"{base:.0f}", "-"), ("Flat-LoRA regenerate", f"{flat:.0f}",
               f"{flat - base:+.0f}"), ("Flat-LoRA copy", f"{copy_:.0f}", f"{copy_ - base:+.0f}")]
        rep.add_table(
            "Peak memory, wide MLP (RSS MiB of a forked child; 1 epoch)",
            ["training", "peak RSS MiB", "vs LoRA"], mem,
            note="Flat-LoRA keeps one seed and O(out_features) floats per layer, plus one "
            "layer-sized noise tensor while drawing (4 MiB for a 1024x1024 float32 layer); "
            "'copy' also keeps a copy of every adapted base weight.")
    rep.write()


if __name__ == "__main__":
    main()
