"""In-context linear regression with multi-head softmax attention (He et al., ICML 2025).

Run: python benchmarks/icl_multihead_attention.py [--quick]

E1  closed forms: Bayes ridge, plain/debiased GD, the softmax kernel at (+-0.13, +-3.45) and
    at the single-head optimum, on fresh prompts; single_head_optimum, debiased_gd_optimum,
    the asymptotic Bayes risk, the finite-L GD risk, the OLS risk.
E2  train H=2 and H=1 online (Adam 1e-3, batch 256) and compare MSE and the pattern metrics.
E3  length generalisation of the H=2 model (L = 10 .. 100), next to the kernel predictor at
    the learned (omega, mu), debiased GD, Bayes ridge and a trained linear-attention model.
Peers in the same run: sklearn Ridge(alpha=sigma^2 d) and LinearRegression fitted per prompt,
a linear-attention ablation, and a plain-torch training loop (the cost of skorch).

The machine is shared (load ~10 on 2 cores while this ran), so training is scaled down from
the spec's 40,000 steps; see the notes in the results file.
"""

import time

import numpy as np
import torch
from _harness import Report, median_time, parse_args
from sklearn.linear_model import LinearRegression, Ridge

from sklearn_icml.neural import (
    LinearICLTaskSampler,
    MultiHeadAttentionICLModule,
    MultiHeadSoftmaxICLRegressor,
    OnlinePromptLoader,
    bayes_ridge_predict,
    bayes_risk_asymptotic,
    debiased_gd_optimum,
    fit_gd_eta,
    gd_predict,
    gd_risk_finite,
    single_head_optimum,
    softmax_kernel_predict,
)

D, L, S2 = 5, 40, 0.1


def mse(pred, y):
    return float(np.mean((pred - y) ** 2))


def se(pred, y):
    e = (pred - y) ** 2
    return float(e.std() / np.sqrt(e.size))


def inside(value, lo, hi):
    return "yes" if lo <= value <= hi else "NO"


def e1(report, n_prompts):
    X, y = LinearICLTaskSampler(random_state=0).sample(n_prompts)
    Xf, yf = LinearICLTaskSampler(random_state=1).sample(n_prompts)
    eta_gd, risk_gd = gd_risk_finite(D, L, S2)
    eta_dgd_fit = fit_gd_eta(Xf, yf, debiased=True)
    eta_gd_fit = fit_gd_eta(Xf, yf)
    w1, m1, l1 = single_head_optimum(D, L, S2)
    preds = {
        "Bayes ridge (lambda = sigma^2 d)": (bayes_ridge_predict(X, S2), 0.1146, 0.002),
        "OLS (vectorised)": (bayes_ridge_predict(X, 0.0), 0.1147, 0.002),
        f"plain GD, eta* = 1/k = {eta_gd:.4f}": (gd_predict(X, eta_gd), 0.241, 0.006),
        f"plain GD, fitted eta = {eta_gd_fit:.4f}": (gd_predict(X, eta_gd_fit), 0.241, 0.006),
        f"debiased GD, fitted eta = {eta_dgd_fit:.4f}": (
            gd_predict(X, eta_dgd_fit, debiased=True),
            0.244,
            0.006,
        ),
        "softmax kernel (+-0.13, +-3.45)": (softmax_kernel_predict(X), 0.244, 0.006),
        "softmax kernel, H=1 optimum": (softmax_kernel_predict(X, [w1], [m1]), 0.41, 0.01),
    }
    rows = [
        [name, f"{t} +- {tol}", mse(p, y), se(p, y), inside(mse(p, y), t - tol, t + tol)]
        for name, (p, t, tol) in preds.items()
    ]
    report.add_table(
        f"E1a. Closed-form predictors, MSE on {n_prompts:,} fresh prompts (d=5, L=40, "
        "sigma^2=0.1, seed 0)",
        ["predictor", "target", "measured", "se", "within"],
        rows,
    )
    eta_dgd, l_dgd = debiased_gd_optimum(D, L, S2)
    ols_theory = S2 * (1 + D / (L - D - 1))
    rows = [
        ["single_head_optimum omega", 0.44721, w1, inside(abs(w1 - 0.44721), 0, 1e-4)],
        ["single_head_optimum mu", 1.62769, m1, inside(abs(m1 - 1.62769), 0, 1e-4)],
        ["single_head_optimum loss", 0.37207, l1, inside(abs(l1 - 0.37207), 0, 1e-4)],
        ["debiased_gd_optimum eta", 0.87912, eta_dgd, inside(abs(eta_dgd - 0.87912), 0, 1e-4)],
        ["debiased_gd_optimum loss", 0.22088, l_dgd, inside(abs(l_dgd - 0.22088), 0, 1e-4)],
        [
            "bayes_risk_asymptotic(d/L)",
            0.11406,
            bayes_risk_asymptotic(D / L, S2),
            inside(abs(bayes_risk_asymptotic(D / L, S2) - 0.11406), 0, 1e-4),
        ],
        [
            "gd_risk_finite (eta, risk)",
            "0.8602, 0.23978",
            f"{eta_gd:.4f}, {risk_gd:.5f}",
            inside(abs(risk_gd - 0.23978), 0, 1e-4),
        ],
        [
            "OLS theory sigma^2 (1 + d/(L-d-1))",
            0.11471,
            ols_theory,
            inside(abs(ols_theory - 0.11471), 0, 1e-4),
        ],
    ]
    report.add_table("E1b. Closed forms", ["quantity", "target", "measured", "within 1e-4"], rows)

    # peers: sklearn estimators fitted per prompt, agreement and speed
    n_peer = 500
    Xp = X[:n_peer]

    def sk_ridge():
        return np.array(
            [
                Ridge(alpha=S2 * D, fit_intercept=False)
                .fit(p[:-1, :-1], p[:-1, -1])
                .predict(p[-1:, :-1])[0]
                for p in Xp
            ]
        )

    def sk_ols():
        return np.array(
            [
                LinearRegression(fit_intercept=False)
                .fit(p[:-1, :-1], p[:-1, -1])
                .predict(p[-1:, :-1])[0]
                for p in Xp
            ]
        )

    t_ours, ours = median_time(lambda: bayes_ridge_predict(Xp, S2), repeat=3)
    t_ridge, ridge = median_time(sk_ridge, repeat=1, warmup=0)
    t_ols, ols = median_time(sk_ols, repeat=1, warmup=0)
    ours_ols = bayes_ridge_predict(Xp, 0.0)
    rows = [
        ["bayes_ridge_predict (einsum + batched solve)", 1.0, 0.0],
        [
            "sklearn Ridge(alpha=0.5, fit_intercept=False) per prompt",
            t_ridge / t_ours,
            float(np.max(np.abs(ridge - ours))),
        ],
        [
            "sklearn LinearRegression per prompt (vs our OLS)",
            t_ols / t_ours,
            float(np.max(np.abs(ols - ours_ols))),
        ],
    ]
    report.add_table(
        f"E1c. Peers on {n_peer} prompts: time ratio to ours (median) and max |difference|",
        ["method", "time / ours", "max abs diff"],
        rows,
        note=f"ours: {t_ours * 1e3:.2f} ms for {n_peer} prompts.",
    )


def plain_torch_steps(n_heads, n_steps):
    """The same training loop without skorch (cost of the wrapper)."""
    torch.manual_seed(0)
    module = MultiHeadAttentionICLModule(D + 1, n_heads)
    opt = torch.optim.Adam(module.parameters(), lr=1e-3)
    loader = OnlinePromptLoader(None, 256, LinearICLTaskSampler(), steps_per_epoch=n_steps)
    start = time.perf_counter()
    for X, y in loader:
        loss = ((module(X) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return time.perf_counter() - start


def train(n_heads, n_steps, attention="softmax", seed=0):
    model = MultiHeadSoftmaxICLRegressor(
        n_heads=n_heads,
        n_steps=n_steps,
        attention=attention,
        steps_per_epoch=500,
        n_threads=1,
        random_state=seed,
    )
    start = time.perf_counter()
    model.fit()
    return model, time.perf_counter() - start


def e2(report, steps_h2, steps_h1, steps_lin, n_eval):
    torch.set_num_threads(1)
    X, y = LinearICLTaskSampler(random_state=10).sample(n_eval)
    m2, t2 = train(2, steps_h2)
    m1, t1 = train(1, steps_h1)
    mlin, tlin = train(1, steps_lin, attention="linear")
    t_plain = plain_torch_steps(2, 200)
    mse2, mse1 = m2.icl_mse(X, y), m1.icl_mse(X, y)
    p2 = m2.attention_patterns()
    rows = [
        ["H=2 MSE", "[0.235, 0.26]", mse2, inside(mse2, 0.235, 0.26)],
        ["H=1 MSE", "[0.38, 0.44]", mse1, inside(mse1, 0.38, 0.44)],
        ["H=1 - H=2", ">= 0.12", mse1 - mse2, inside(mse1 - mse2, 0.12, np.inf)],
        [
            "H=2 diag ratio (x-block), min over heads",
            ">= 0.98",
            float(p2["diag_ratio"].min()),
            inside(p2["diag_ratio"].min(), 0.98, 1),
        ],
        [
            "H=2 last-entry ratio, min over heads",
            ">= 0.999",
            float(p2["last_entry_ratio"].min()),
            inside(p2["last_entry_ratio"].min(), 0.999, 1),
        ],
        ["H=2 zero-sum", "<= 0.05", p2["zero_sum"], inside(p2["zero_sum"], 0, 0.05)],
        [
            "H=2 eta_eff = 2|omega||mu|",
            "[0.80, 1.00]",
            p2["eta_eff"],
            inside(p2["eta_eff"], 0.8, 1.0),
        ],
        [
            "H=2 omega per head",
            "~ +-0.13 (40k: +0.142/-0.146)",
            " / ".join(f"{v:.3f}" for v in p2["omega"]),
            "info",
        ],
        [
            "H=2 mu per head",
            "~ +-3.45 (40k: +3.07/-3.14)",
            " / ".join(f"{v:.2f}" for v in p2["mu"]),
            "info",
        ],
        [
            "H=2 homogeneity (var of diag)",
            "~2e-6 .. 8e-6",
            " / ".join(f"{v:.1e}" for v in p2["homogeneity"]),
            "info",
        ],
        ["linear attention H=1 MSE (ablation)", "n/a", mlin.icl_mse(X, y), "info"],
    ]
    report.add_table(
        f"E2. Trained models, MSE on {n_eval:,} fresh prompts (H=2: {steps_h2} steps, "
        f"H=1: {steps_h1} steps; spec: 40,000)",
        ["quantity", "target", "measured", "within"],
        rows,
    )
    rows = [
        ["H=2, skorch estimator", t2 / steps_h2 * 1000, "6.0-6.3 (prototype, idle 2 threads)"],
        ["H=1, skorch estimator", t1 / steps_h1 * 1000, "4.4 (prototype, idle 2 threads)"],
        ["H=1 linear attention, skorch", tlin / steps_lin * 1000, "n/a"],
        ["H=2, plain torch loop (200 steps)", t_plain / 200 * 1000, "n/a"],
    ]
    report.add_table(
        "E2b. Training time per 1,000 steps (1 torch thread, shared loaded machine)",
        ["run", "seconds / 1,000 steps", "reference"],
        rows,
    )
    curve = ", ".join(f"{v:.3f}" for v in m2.loss_curve_)
    report.add("E2c. H=2 training loss per 500 steps", curve)
    return m2, mlin


def e3(report, m2, mlin, n_eval):
    p2 = m2.attention_patterns()
    targets = {20: (0.37, 0.015), 100: (0.165, 0.01)}
    rows = []
    model_curve = []
    for i, Lq in enumerate((10, 20, 40, 60, 80, 100)):
        X, y = LinearICLTaskSampler(n_context=Lq, random_state=100 + i).sample(n_eval)
        v = m2.icl_mse(X, y)
        model_curve.append(v)
        t = targets.get(Lq)
        rows.append(
            [
                Lq,
                f"{t[0]} +- {t[1]}" if t else "-",
                v,
                inside(v, t[0] - t[1], t[0] + t[1]) if t else "-",
                mse(softmax_kernel_predict(X, p2["omega"], p2["mu"]), y),
                mse(gd_predict(X, 0.88, debiased=True), y),
                mse(bayes_ridge_predict(X, S2), y),
                mlin.icl_mse(X, y),
            ]
        )
    mono = all(a > b for a, b in zip(model_curve, model_curve[1:], strict=False))
    report.add_table(
        f"E3. Length generalisation of the H=2 model (trained at L=40), MSE on {n_eval:,} "
        "prompts per length",
        [
            "L",
            "target",
            "H=2 model",
            "within",
            "kernel at learned (omega, mu)",
            "debiased GD eta=0.88",
            "Bayes ridge",
            "linear attention (H=1)",
        ],
        rows,
        note=f"Monotone decreasing in L: {'yes' if mono else 'NO'} (target: yes).",
    )


def main():
    args = parse_args(__doc__)
    report = Report(
        "icl_multihead_attention",
        "In-context linear regression with multi-head softmax attention (He et al., ICML 2025)",
        quick=args.quick,
        packages=("numpy", "scikit-learn", "torch", "skorch"),
    )
    if args.quick:
        n_e1, steps, n_eval, n_e3 = 5_000, (300, 200, 200), 5_000, 2_000
    else:
        n_e1, steps, n_eval, n_e3 = 100_000, (4_000, 2_000, 2_000), 50_000, 20_000
    start = time.perf_counter()
    e1(report, n_e1)
    m2, mlin = e2(report, *steps, n_eval)
    e3(report, m2, mlin, n_e3)
    report.add(
        "Notes",
        "Training is scaled down from the spec's 40,000 steps per model (H=2 "
        f"{steps[0]:,}, H=1 {steps[1]:,}, linear attention {steps[2]:,}) because the shared "
        "2-core machine ran at load ~10 (about 40 ms per step instead of the prototype's 6 ms). "
        "The prototype shows the H=2 loss leaves its plateau between steps 4,000 and 7,000 for "
        "its seed and H=1 converges within ~2,000 steps; the pattern metrics keep sharpening "
        "long after, so metrics below their target at this budget are a budget effect, not "
        "tuned away. E3 uses 20,000 prompts per length (spec 50,000). The linear-attention "
        "ablation divides the scores by L (plain GD with a learned step). One seed (0) per model; "
        f"total run time {time.perf_counter() - start:.0f} s.",
    )
    report.write()


if __name__ == "__main__":
    main()
